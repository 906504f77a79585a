//! Property: printing a configuration and parsing the text again gives the same
//! tree (spans aside), for randomly generated trees covering every node type.

#![allow(clippy::unwrap_used)] // tests fail by panicking

use proptest::prelude::*;
use seclang::directives::{Shape, DIRECTIVES};
use seclang::names::{
    OperatorArg, VariableShape, CTL_OPTIONS, OPERATORS, TRANSFORMATIONS, VARIABLES,
};
use seclang::{
    Action, ActionValue, Config, Ctl, CtlValue, Directive, IdRange, Item, Operator, Rule, RuleKind,
    RuleSelector, Selector, SetVar, SetVarOp, Setting, SettingValue, Span, Target, UpdateTarget,
};

/// Free text that SecLang can quote: printable ASCII, no backslash at the end.
fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[ -~]{{0,{max}}}[!-\\[\\]-~]"))
        .unwrap()
        .prop_filter("no leading blank", |s| !s.starts_with(' '))
}

fn word(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[A-Za-z0-9_-]{{1,{max}}}")).unwrap()
}

fn target() -> impl Strategy<Value = Target> {
    (
        0..VARIABLES.len(),
        any::<bool>(),
        any::<bool>(),
        0..3u8,
        word(8),
        "[a-z0-9^$().|*+]{1,10}",
    )
        .prop_map(|(vi, count, exclude, sel_kind, key, re)| {
            let (variable, shape) = VARIABLES[vi];
            let selector = match (shape, sel_kind) {
                (VariableShape::Scalar, _) | (_, 0) => None,
                (VariableShape::Xml, _) => {
                    Some(Selector::XPath(format!("/{}", key.to_lowercase())))
                }
                (VariableShape::Collection, 1) => Some(Selector::Key(key)),
                (VariableShape::Collection, _) => Some(Selector::Regex(re)),
            };
            let exclude = exclude && selector.is_some();
            Target {
                span: Span::default(),
                exclude,
                count,
                variable,
                selector,
            }
        })
}

fn operator() -> impl Strategy<Value = Operator> {
    (
        0..=OPERATORS.len(),
        any::<bool>(),
        text(20),
        "[a-zA-Z0-9()\\[\\]^$.*+?|]{1,12}",
    )
        .prop_map(|(oi, negated, arg, pattern)| {
            if oi == OPERATORS.len() {
                return Operator {
                    span: Span::default(),
                    negated,
                    name: "rx",
                    argument: pattern,
                    explicit: false,
                };
            }
            let (name, rule) = OPERATORS[oi];
            let argument = match rule {
                OperatorArg::None => String::new(),
                _ => arg,
            };
            Operator {
                span: Span::default(),
                negated,
                name,
                argument,
                explicit: true,
            }
        })
}

fn setvar() -> impl Strategy<Value = SetVar> {
    ("[a-z]{1,5}", "[a-z0-9_.%{}]{1,10}", 0..5u8, text(12)).prop_map(
        |(collection, key, op, value)| {
            let op = [
                SetVarOp::Set,
                SetVarOp::Add,
                SetVarOp::Sub,
                SetVarOp::Unset,
                SetVarOp::Flag,
            ][op as usize];
            let value = match op {
                SetVarOp::Unset | SetVarOp::Flag => String::new(),
                SetVarOp::Set => value.trim().trim_start_matches(['+', '-']).to_string(),
                _ => value.trim().to_string(),
            };
            SetVar {
                collection,
                key,
                op,
                value,
            }
        },
    )
}

fn id_ranges() -> impl Strategy<Value = Vec<IdRange>> {
    proptest::collection::vec((1u32..2_000_000, 0u32..50), 1..4).prop_map(|v| {
        v.into_iter()
            .map(|(s, n)| IdRange {
                start: s,
                end: s + n,
            })
            .collect()
    })
}

fn ctl() -> impl Strategy<Value = Ctl> {
    (
        0..CTL_OPTIONS.len(),
        "[A-Za-z0-9+]{1,8}",
        id_ranges(),
        proptest::collection::vec(target(), 1..3),
        "[a-z/-]{1,10}",
    )
        .prop_map(|(oi, word, ids, targets, tag)| {
            let option = CTL_OPTIONS[oi];
            let value = match option {
                "ruleRemoveById" => CtlValue::Ids(ids),
                "ruleRemoveTargetById" => CtlValue::RemoveTarget(UpdateTarget {
                    selector: RuleSelector::Ids(ids),
                    targets,
                    replaced: None,
                }),
                "ruleRemoveTargetByTag" => CtlValue::RemoveTarget(UpdateTarget {
                    selector: RuleSelector::Tag(tag),
                    targets,
                    replaced: None,
                }),
                "ruleRemoveTargetByMsg" => CtlValue::RemoveTarget(UpdateTarget {
                    selector: RuleSelector::Msg(tag),
                    targets,
                    replaced: None,
                }),
                _ => CtlValue::Text(word),
            };
            Ctl { option, value }
        })
}

fn action() -> impl Strategy<Value = Action> {
    let value_text = "[ -\\[\\]-~]{0,16}[!-\\[\\]-~]";
    prop_oneof![
        (1u8..=5).prop_map(|p| ("phase", ActionValue::Phase(p))),
        (0u8..=7).prop_map(|p| ("severity", ActionValue::Severity(p))),
        (1u32..100).prop_map(|p| ("skip", ActionValue::Skip(p))),
        (100u16..600).prop_map(|p| ("status", ActionValue::Status(p))),
        (0..TRANSFORMATIONS.len())
            .prop_map(|t| ("t", ActionValue::Transformation(TRANSFORMATIONS[t]))),
        proptest::string::string_regex(value_text)
            .unwrap()
            .prop_map(|m| ("msg", ActionValue::Text(m))),
        proptest::string::string_regex(value_text)
            .unwrap()
            .prop_map(|m| ("tag", ActionValue::Text(m))),
        proptest::string::string_regex(value_text)
            .unwrap()
            .prop_map(|m| ("logdata", ActionValue::Text(m))),
        setvar().prop_map(|s| ("setvar", ActionValue::SetVar(s))),
        ctl().prop_map(|c| ("ctl", ActionValue::Ctl(c))),
        Just(("deny", ActionValue::None)),
        Just(("capture", ActionValue::None)),
        Just(("nolog", ActionValue::None)),
        Just(("allow", ActionValue::Text("phase".into()))),
    ]
    .prop_map(|(name, value)| Action {
        span: Span::default(),
        name,
        value,
    })
}

fn setting() -> impl Strategy<Value = Setting> {
    let settings: Vec<(&'static str, Shape)> = DIRECTIVES
        .iter()
        .copied()
        .filter(|(_, s)| {
            matches!(
                s,
                Shape::OnOff
                    | Shape::Word(_)
                    | Shape::Number
                    | Shape::Text
                    | Shape::List
                    | Shape::NoArg
            )
        })
        .collect();
    (
        0..settings.len(),
        any::<bool>(),
        any::<u64>(),
        text(16),
        proptest::collection::vec(text(8), 1..4),
    )
        .prop_map(move |(i, b, n, t, list)| {
            let (name, shape) = settings[i];
            let value = match shape {
                Shape::OnOff => SettingValue::Flag(b),
                Shape::Word(words) => SettingValue::Word(words[(n as usize) % words.len()]),
                Shape::Number => SettingValue::Number(n),
                Shape::Text => SettingValue::Text(t),
                Shape::List => SettingValue::List(list),
                _ => SettingValue::None,
            };
            Setting { name, value }
        })
}

fn directive(id: u32) -> impl Strategy<Value = Directive> {
    prop_oneof![
        (
            proptest::collection::vec(target(), 1..4),
            operator(),
            proptest::collection::vec(action(), 0..6)
        )
            .prop_map(move |(targets, operator, mut actions)| {
                actions.insert(
                    0,
                    Action {
                        span: Span::default(),
                        name: "id",
                        value: ActionValue::Id(id),
                    },
                );
                Directive::Rule(Rule {
                    kind: RuleKind::SecRule,
                    targets,
                    operator,
                    actions,
                })
            }),
        proptest::collection::vec(action(), 0..6).prop_map(move |mut actions| {
            actions.insert(
                0,
                Action {
                    span: Span::default(),
                    name: "id",
                    value: ActionValue::Id(id),
                },
            );
            Directive::Rule(Rule {
                kind: RuleKind::SecAction,
                targets: Vec::new(),
                operator: Operator {
                    span: Span::default(),
                    negated: false,
                    name: "unconditionalMatch",
                    argument: String::new(),
                    explicit: true,
                },
                actions,
            })
        }),
        word(12).prop_map(Directive::Marker),
        id_ranges().prop_map(Directive::RemoveById),
        text(12).prop_map(Directive::RemoveByTag),
        text(12).prop_map(Directive::RemoveByMsg),
        (
            id_ranges(),
            proptest::collection::vec(target(), 1..3),
            proptest::option::of(target())
        )
            .prop_map(
                |(ids, targets, replaced)| Directive::UpdateTarget(UpdateTarget {
                    selector: RuleSelector::Ids(ids),
                    targets,
                    replaced,
                })
            ),
        (
            1u32..1000,
            proptest::option::of(1u32..5),
            proptest::collection::vec(action(), 1..4)
        )
            .prop_map(|(id, chain_offset, actions)| Directive::UpdateActionById {
                id,
                chain_offset,
                actions
            }),
        setting().prop_map(Directive::Setting),
    ]
}

fn config() -> impl Strategy<Value = Config> {
    (1usize..12).prop_flat_map(|n| {
        let dirs: Vec<_> = (0..n).map(|i| directive(i as u32 + 1)).collect();
        dirs.prop_map(|ds| Config {
            items: ds
                .into_iter()
                .map(|directive| Item {
                    span: Span::default(),
                    directive,
                })
                .collect(),
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn print_then_parse_gives_the_same_tree(config in config()) {
        let printed = config.to_string();
        let mut reparsed = seclang::parse_str("printed.conf", &printed);
        let errors: Vec<_> = reparsed.errors.iter().map(|e| e.render(&reparsed.sources)).collect();
        prop_assert!(errors.is_empty(), "{}\n{}", printed, errors.join(""));
        reparsed.config.clear_spans();
        prop_assert_eq!(&reparsed.config, &config, "printed:\n{}", printed);
    }
}
