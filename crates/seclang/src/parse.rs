//! Parser: lexed directive lines -> AST items. Each directive is parsed on its own,
//! so one error never hides the next.

use crate::actions::{parse_actions, parse_id_list};
use crate::ast::{
    Directive, IdRange, Item, Operator, Rule, RuleKind, RuleSelector, Setting, SettingValue,
    UpdateTarget,
};
use crate::cursor::{Ctx, Loc};
use crate::diagnostic::{Diagnostic, ErrorKind};
use crate::directives::{self, Shape, DIRECTIVES};
use crate::lexer::{self, Line, Token};
use crate::names;
use crate::operator::parse_operator;
use crate::source::{FileId, SourceFile, Span};
use crate::targets::parse_targets;

/// A parsed directive, or an `Include` still to be expanded by the loader.
#[derive(Debug, Clone)]
pub(crate) enum Parsed {
    Item(Item),
    Include { pattern: String, span: Span },
}

/// Parses one file's text (without following includes).
pub(crate) fn parse_file(
    file: &SourceFile,
    id: FileId,
    errors: &mut Vec<Diagnostic>,
) -> Vec<Parsed> {
    let lines = lexer::lex(file, id, errors);
    let mut ctx = Ctx { file, id, errors };
    let mut out = Vec::with_capacity(lines.len());
    for line in &lines {
        if let Some(p) = parse_line(&mut ctx, line) {
            out.push(p);
        }
    }
    out
}

fn parse_line(ctx: &mut Ctx<'_>, line: &Line) -> Option<Parsed> {
    let name_tok = &line.tokens[0];
    let args = &line.tokens[1..];
    let span = ctx.file.span(ctx.id, line.src_start, line.src_end);
    let Some((name, shape)) = directives::lookup(&name_tok.text) else {
        ctx.errors.push(
            Diagnostic::new(
                ErrorKind::UnknownDirective,
                name_tok.span(ctx.file, ctx.id),
                format!("unknown directive `{}`", name_tok.text),
            )
            .with_suggestion(names::suggest(
                DIRECTIVES.iter().map(|d| d.0),
                &name_tok.text,
            )),
        );
        return None;
    };
    let item = |directive| Some(Parsed::Item(Item { span, directive }));
    match shape {
        Shape::Include => {
            let tok = exactly(ctx, name, name_tok, args, 1)?;
            Some(Parsed::Include {
                pattern: tok[0].text.clone(),
                span: tok[0].span(ctx.file, ctx.id),
            })
        }
        Shape::Rule => {
            if args.len() < 2 {
                return missing(ctx, name, name_tok, "targets and an operator");
            }
            if args.len() > 3 {
                return unexpected(ctx, name, &args[3]);
            }
            let before = ctx.errors.len();
            let targets = parse_targets(ctx, &args[0].text, Loc::of(&args[0]));
            let operator = parse_operator(ctx, &args[1].text, Loc::of(&args[1]));
            let actions = match args.get(2) {
                Some(a) => parse_actions(ctx, &a.text, Loc::of(a)),
                None => Vec::new(),
            };
            if ctx.errors.len() > before {
                return None;
            }
            item(Directive::Rule(Rule {
                kind: RuleKind::SecRule,
                targets,
                operator: operator?,
                actions,
            }))
        }
        Shape::Action => {
            let tok = exactly(ctx, name, name_tok, args, 1)?;
            let before = ctx.errors.len();
            let actions = parse_actions(ctx, &tok[0].text, Loc::of(&tok[0]));
            if ctx.errors.len() > before {
                return None;
            }
            item(Directive::Rule(Rule {
                kind: RuleKind::SecAction,
                targets: Vec::new(),
                operator: Operator {
                    span: tok[0].span(ctx.file, ctx.id),
                    negated: false,
                    name: "unconditionalMatch",
                    argument: String::new(),
                    explicit: true,
                },
                actions,
            }))
        }
        Shape::Marker => {
            let tok = exactly(ctx, name, name_tok, args, 1)?;
            item(Directive::Marker(tok[0].text.clone()))
        }
        Shape::DefaultAction => {
            let tok = exactly(ctx, name, name_tok, args, 1)?;
            let before = ctx.errors.len();
            let actions = parse_actions(ctx, &tok[0].text, Loc::of(&tok[0]));
            if ctx.errors.len() > before {
                return None;
            }
            item(Directive::DefaultAction(actions))
        }
        Shape::RemoveById => {
            if args.is_empty() {
                return missing(ctx, name, name_tok, "rule ids");
            }
            let mut ids: Vec<IdRange> = Vec::new();
            for a in args {
                match parse_id_list(&a.text) {
                    Ok(mut r) => ids.append(&mut r),
                    Err(e) => {
                        ctx.errors.push(Diagnostic::new(
                            ErrorKind::InvalidValue,
                            a.span(ctx.file, ctx.id),
                            e,
                        ));
                        return None;
                    }
                }
            }
            item(Directive::RemoveById(ids))
        }
        Shape::RemoveByText => {
            let tok = exactly(ctx, name, name_tok, args, 1)?;
            let text = tok[0].text.clone();
            item(if name == "SecRuleRemoveByTag" {
                Directive::RemoveByTag(text)
            } else {
                Directive::RemoveByMsg(text)
            })
        }
        Shape::UpdateTarget => {
            if args.len() < 2 {
                return missing(ctx, name, name_tok, "a rule selector and targets");
            }
            if args.len() > 3 {
                return unexpected(ctx, name, &args[3]);
            }
            let selector = match name {
                "SecRuleUpdateTargetById" => match parse_id_list(&args[0].text) {
                    Ok(ids) => RuleSelector::Ids(ids),
                    Err(e) => {
                        ctx.errors.push(Diagnostic::new(
                            ErrorKind::InvalidValue,
                            args[0].span(ctx.file, ctx.id),
                            e,
                        ));
                        return None;
                    }
                },
                "SecRuleUpdateTargetByTag" => RuleSelector::Tag(args[0].text.clone()),
                _ => RuleSelector::Msg(args[0].text.clone()),
            };
            let before = ctx.errors.len();
            let targets = parse_targets(ctx, &args[1].text, Loc::of(&args[1]));
            let replaced = args.get(2).map(|a| parse_targets(ctx, &a.text, Loc::of(a)));
            if ctx.errors.len() > before {
                return None;
            }
            let replaced = match replaced {
                Some(mut r) if r.len() == 1 => r.pop(),
                Some(_) => {
                    ctx.errors.push(Diagnostic::new(
                        ErrorKind::InvalidSelector,
                        args[2].span(ctx.file, ctx.id),
                        "the replaced target must be a single variable",
                    ));
                    return None;
                }
                None => None,
            };
            item(Directive::UpdateTarget(UpdateTarget {
                selector,
                targets,
                replaced,
            }))
        }
        Shape::UpdateAction => {
            let tok = exactly(ctx, name, name_tok, args, 2)?;
            let (id_text, offset_text) = match tok[0].text.split_once(':') {
                Some((a, b)) => (a, Some(b)),
                None => (tok[0].text.as_str(), None),
            };
            let id = id_text.trim().parse::<u32>().ok().filter(|i| *i > 0);
            let chain_offset = offset_text.map(|o| o.trim().parse::<u32>().ok());
            let (Some(id), None | Some(Some(_))) = (id, chain_offset) else {
                ctx.errors.push(Diagnostic::new(
                    ErrorKind::InvalidValue,
                    tok[0].span(ctx.file, ctx.id),
                    format!(
                        "`{}` is not a rule id (optionally `ID:CHAIN-OFFSET`)",
                        tok[0].text
                    ),
                ));
                return None;
            };
            let before = ctx.errors.len();
            let actions = parse_actions(ctx, &tok[1].text, Loc::of(&tok[1]));
            if ctx.errors.len() > before {
                return None;
            }
            item(Directive::UpdateActionById {
                id,
                chain_offset: chain_offset.flatten(),
                actions,
            })
        }
        Shape::Remote => {
            ctx.errors.push(
                Diagnostic::new(
                    ErrorKind::RemoteRulesRefused,
                    name_tok.span(ctx.file, ctx.id),
                    "SecRemoteRules is refused: Palisade never downloads rules at run time",
                )
                .with_help("download the rules once and load them with Include"),
            );
            None
        }
        Shape::Refused(reason) => {
            ctx.errors.push(Diagnostic::new(
                ErrorKind::Unsupported,
                name_tok.span(ctx.file, ctx.id),
                reason,
            ));
            None
        }
        Shape::OnOff => {
            let tok = exactly(ctx, name, name_tok, args, 1)?;
            let v = &tok[0].text;
            let flag = if v.eq_ignore_ascii_case("on") {
                true
            } else if v.eq_ignore_ascii_case("off") {
                false
            } else {
                return bad_value(ctx, name, &tok[0], "On or Off");
            };
            setting(span, name, SettingValue::Flag(flag))
        }
        Shape::Word(words) => {
            let tok = exactly(ctx, name, name_tok, args, 1)?;
            match names::canonical(words.iter().copied(), &tok[0].text) {
                Some(w) => setting(span, name, SettingValue::Word(w)),
                None => bad_value(ctx, name, &tok[0], &words.join(", ")),
            }
        }
        Shape::Number => {
            let tok = exactly(ctx, name, name_tok, args, 1)?;
            match tok[0].text.trim().parse::<u64>() {
                Ok(n) => setting(span, name, SettingValue::Number(n)),
                Err(_) => bad_value(ctx, name, &tok[0], "a non-negative integer"),
            }
        }
        Shape::Text => {
            let tok = exactly(ctx, name, name_tok, args, 1)?;
            setting(span, name, SettingValue::Text(tok[0].text.clone()))
        }
        Shape::List => {
            if args.is_empty() {
                return missing(ctx, name, name_tok, "at least one argument");
            }
            let list = args.iter().map(|a| a.text.clone()).collect();
            setting(span, name, SettingValue::List(list))
        }
        Shape::NoArg => {
            if let Some(a) = args.first() {
                return unexpected(ctx, name, a);
            }
            setting(span, name, SettingValue::None)
        }
    }
}

fn setting(span: Span, name: &'static str, value: SettingValue) -> Option<Parsed> {
    Some(Parsed::Item(Item {
        span,
        directive: Directive::Setting(Setting { name, value }),
    }))
}

fn exactly<'t>(
    ctx: &mut Ctx<'_>,
    name: &str,
    name_tok: &Token,
    args: &'t [Token],
    n: usize,
) -> Option<&'t [Token]> {
    if args.len() < n {
        let what = if n == 1 {
            "an argument".to_string()
        } else {
            format!("{n} arguments")
        };
        missing::<()>(ctx, name, name_tok, &what);
        return None;
    }
    if args.len() > n {
        unexpected::<()>(ctx, name, &args[n]);
        return None;
    }
    Some(args)
}

fn missing<T>(ctx: &mut Ctx<'_>, name: &str, name_tok: &Token, what: &str) -> Option<T> {
    ctx.errors.push(Diagnostic::new(
        ErrorKind::MissingArgument,
        name_tok.span(ctx.file, ctx.id),
        format!("`{name}` needs {what}"),
    ));
    None
}

fn unexpected<T>(ctx: &mut Ctx<'_>, name: &str, extra: &Token) -> Option<T> {
    ctx.errors.push(
        Diagnostic::new(
            ErrorKind::UnexpectedArgument,
            extra.span(ctx.file, ctx.id),
            format!("`{name}` has too many arguments"),
        )
        .with_help("quote an argument that contains blanks"),
    );
    None
}

fn bad_value<T>(ctx: &mut Ctx<'_>, name: &str, tok: &Token, expected: &str) -> Option<T> {
    ctx.errors.push(Diagnostic::new(
        ErrorKind::InvalidValue,
        tok.span(ctx.file, ctx.id),
        format!("`{name}` expects {expected}, not `{}`", tok.text),
    ));
    None
}
