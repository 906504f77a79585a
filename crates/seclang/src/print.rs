//! Printing an AST back as SecLang text. Parsing the printed text gives the same AST
//! (spans aside), which the round-trip property test checks.
//!
//! One limit is inherent in SecLang quoting: a value cannot end in a backslash when
//! it must be quoted, since `\"` would escape the closing quote.

use std::fmt::{self, Write as _};

use crate::ast::{
    Action, ActionValue, Config, Ctl, CtlValue, Directive, IdRange, Item, Operator, Rule, RuleKind,
    RuleSelector, Selector, SetVar, SetVarOp, Setting, SettingValue, Target, UpdateTarget,
};

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for item in &self.items {
            writeln!(f, "{item}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.directive {
            Directive::Rule(rule) => write!(f, "{rule}"),
            Directive::Marker(m) => write!(f, "SecMarker {}", quote(m)),
            Directive::DefaultAction(actions) => {
                write!(f, "SecDefaultAction {}", quote(&actions_text(actions)))
            }
            Directive::RemoveById(ids) => write!(f, "SecRuleRemoveById {}", ids_text(ids, " ")),
            Directive::RemoveByTag(t) => write!(f, "SecRuleRemoveByTag {}", quote(t)),
            Directive::RemoveByMsg(t) => write!(f, "SecRuleRemoveByMsg {}", quote(t)),
            Directive::UpdateTarget(u) => {
                let (name, sel) = match &u.selector {
                    RuleSelector::Ids(ids) => ("SecRuleUpdateTargetById", ids_text(ids, ",")),
                    RuleSelector::Tag(t) => ("SecRuleUpdateTargetByTag", t.clone()),
                    RuleSelector::Msg(t) => ("SecRuleUpdateTargetByMsg", t.clone()),
                };
                write!(
                    f,
                    "{name} {} {}",
                    quote(&sel),
                    quote(&targets_text(&u.targets))
                )?;
                if let Some(r) = &u.replaced {
                    write!(f, " {}", quote(&target_text(r)))?;
                }
                Ok(())
            }
            Directive::UpdateActionById {
                id,
                chain_offset,
                actions,
            } => {
                write!(f, "SecRuleUpdateActionById {id}")?;
                if let Some(o) = chain_offset {
                    write!(f, ":{o}")?;
                }
                write!(f, " {}", quote(&actions_text(actions)))
            }
            Directive::Setting(s) => write!(f, "{s}"),
        }
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)?;
        match &self.value {
            SettingValue::None => Ok(()),
            SettingValue::Flag(b) => f.write_str(if *b { " On" } else { " Off" }),
            SettingValue::Word(w) => write!(f, " {w}"),
            SettingValue::Number(n) => write!(f, " {n}"),
            SettingValue::Text(t) => write!(f, " {}", quote(t)),
            SettingValue::List(l) => {
                for a in l {
                    write!(f, " {}", quote(a))?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            RuleKind::SecAction => write!(f, "SecAction {}", quote(&actions_text(&self.actions))),
            RuleKind::SecRule => {
                write!(
                    f,
                    "SecRule {} {}",
                    quote(&targets_text(&self.targets)),
                    quote(&operator_text(&self.operator))
                )?;
                if !self.actions.is_empty() {
                    write!(f, " {}", quote(&actions_text(&self.actions)))?;
                }
                Ok(())
            }
        }
    }
}

/// Always double-quotes, escaping `"`.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c == '"' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn ids_text(ids: &[IdRange], sep: &str) -> String {
    ids.iter()
        .map(|r| {
            if r.start == r.end {
                r.start.to_string()
            } else {
                format!("{}-{}", r.start, r.end)
            }
        })
        .collect::<Vec<_>>()
        .join(sep)
}

/// `ARGS|!ARGS:foo|&TX:x`.
pub fn targets_text(targets: &[Target]) -> String {
    targets
        .iter()
        .map(target_text)
        .collect::<Vec<_>>()
        .join("|")
}

/// One target as SecLang.
pub fn target_text(t: &Target) -> String {
    let mut s = String::new();
    if t.exclude {
        s.push('!');
    }
    if t.count {
        s.push('&');
    }
    s.push_str(t.variable);
    match &t.selector {
        None => {}
        Some(Selector::Key(k)) => {
            if k.starts_with(['/', '\'']) || k.contains('|') || k.trim() != k {
                let _ = write!(s, ":'{k}'");
            } else {
                let _ = write!(s, ":{k}");
            }
        }
        Some(Selector::Regex(r)) => {
            let _ = write!(s, ":/{r}/");
        }
        Some(Selector::XPath(x)) => {
            let _ = write!(s, ":{x}");
        }
    }
    s
}

/// `!@rx pattern`, or the bare pattern for an implicit `@rx`.
pub fn operator_text(op: &Operator) -> String {
    let mut s = String::new();
    if op.negated {
        s.push('!');
    }
    if op.explicit {
        s.push('@');
        s.push_str(op.name);
        if !op.argument.is_empty() {
            s.push(' ');
            s.push_str(&op.argument);
        }
    } else {
        s.push_str(&op.argument);
    }
    s
}

/// `id:1,phase:2,msg:'...'`.
pub fn actions_text(actions: &[Action]) -> String {
    actions
        .iter()
        .map(action_text)
        .collect::<Vec<_>>()
        .join(",")
}

fn quote_value(v: &str) -> String {
    let needs = v.is_empty() || v.contains([',', '\'']) || v.trim() != v || v.starts_with(':');
    if !needs {
        return v.to_string();
    }
    format!("'{}'", v.replace('\'', "\\'"))
}

/// One action as SecLang.
pub fn action_text(a: &Action) -> String {
    let value = match &a.value {
        ActionValue::None => return a.name.to_string(),
        ActionValue::Text(t) => quote_value(t),
        ActionValue::Id(n) => n.to_string(),
        ActionValue::Skip(n) => n.to_string(),
        ActionValue::Phase(n) => n.to_string(),
        ActionValue::Severity(n) => n.to_string(),
        ActionValue::Status(n) => n.to_string(),
        ActionValue::Transformation(t) => (*t).to_string(),
        ActionValue::SetVar(sv) => quote_value(&setvar_text(sv)),
        ActionValue::Ctl(c) => quote_value(&ctl_text(c)),
    };
    format!("{}:{value}", a.name)
}

/// `tx.score=+5`, `!tx.x`.
pub fn setvar_text(sv: &SetVar) -> String {
    match sv.op {
        SetVarOp::Unset => format!("!{}.{}", sv.collection, sv.key),
        SetVarOp::Flag => format!("{}.{}", sv.collection, sv.key),
        SetVarOp::Set => format!("{}.{}={}", sv.collection, sv.key, sv.value),
        SetVarOp::Add => format!("{}.{}=+{}", sv.collection, sv.key, sv.value),
        SetVarOp::Sub => format!("{}.{}=-{}", sv.collection, sv.key, sv.value),
    }
}

/// `ruleRemoveTargetById=942100;ARGS:foo`.
pub fn ctl_text(c: &Ctl) -> String {
    let v = match &c.value {
        CtlValue::Text(t) => t.clone(),
        CtlValue::Ids(ids) => ids_text(ids, " "),
        CtlValue::RemoveTarget(UpdateTarget {
            selector, targets, ..
        }) => {
            let sel = match selector {
                RuleSelector::Ids(ids) => ids_text(ids, ","),
                RuleSelector::Tag(t) | RuleSelector::Msg(t) => t.clone(),
            };
            format!("{sel};{}", targets_text(targets))
        }
    };
    format!("{}={v}", c.option)
}
