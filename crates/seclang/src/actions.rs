//! Action lists: `"id:1,phase:2,t:none,t:lowercase,msg:'a, b',setvar:tx.x=+%{tx.y}"`.
//!
//! Actions are separated by commas. A value written in single quotes may contain
//! commas; inside it, `\'` stands for a quote. Names are matched case-insensitively
//! and stored in their canonical spelling; values with a fixed form (ids, phases,
//! severities, transformations, `setvar`, `ctl`) are typed here so mistakes are
//! found at load time.

use crate::ast::UpdateTarget;
use crate::ast::{Action, ActionValue, Ctl, CtlValue, IdRange, RuleSelector, SetVar, SetVarOp};
use crate::cursor::{Ctx, Loc};
use crate::diagnostic::{Diagnostic, ErrorKind};
use crate::names::{self, ActionArg, ACTIONS, CTL_OPTIONS, TRANSFORMATIONS};
use crate::targets::parse_targets;

/// Severity names, index = level.
pub const SEVERITIES: [&str; 8] = [
    "EMERGENCY",
    "ALERT",
    "CRITICAL",
    "ERROR",
    "WARNING",
    "NOTICE",
    "INFO",
    "DEBUG",
];

/// Parses an action list. Invalid actions are reported and left out.
pub(crate) fn parse_actions(ctx: &mut Ctx<'_>, text: &str, loc: Loc<'_>) -> Vec<Action> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0usize;
    while i < bytes.len() {
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b',' | b'\r' | b'\n') {
            i += 1;
        }
        if i >= bytes.len() {
            break;
        }
        let start = i;
        while i < bytes.len() && bytes[i] != b':' && bytes[i] != b',' {
            i += 1;
        }
        let name = text[start..i].trim_end();
        let name_end = start + name.len();
        let mut value: Option<(String, usize)> = None;
        if i < bytes.len() && bytes[i] == b':' {
            i += 1;
            while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
                i += 1;
            }
            let vstart = i;
            if bytes.get(i) == Some(&b'\'') {
                i += 1;
                let mut v = String::new();
                let mut seg = i;
                let mut closed = false;
                while i < bytes.len() {
                    if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'\'') {
                        v.push_str(&text[seg..i]);
                        v.push('\'');
                        i += 2;
                        seg = i;
                        continue;
                    }
                    if bytes[i] == b'\'' {
                        closed = true;
                        break;
                    }
                    i += 1;
                }
                v.push_str(&text[seg..i]);
                if !closed {
                    ctx.errors.push(Diagnostic::new(
                        ErrorKind::UnterminatedQuote,
                        loc.span(ctx, vstart, vstart + 1),
                        format!("the value of action `{name}` opens a quote that is never closed"),
                    ));
                    return out;
                }
                i += 1;
                let after = i;
                while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
                    i += 1;
                }
                if i < bytes.len() && bytes[i] != b',' {
                    let bad = i;
                    while i < bytes.len() && bytes[i] != b',' {
                        i += 1;
                    }
                    ctx.errors.push(Diagnostic::new(
                        ErrorKind::InvalidValue,
                        loc.span(ctx, bad, i),
                        format!("unexpected text after the quoted value of `{name}`"),
                    ));
                    let _ = after;
                    continue;
                }
                value = Some((v, vstart + 1));
            } else {
                while i < bytes.len() && bytes[i] != b',' {
                    i += 1;
                }
                value = Some((text[vstart..i].trim_end().to_string(), vstart));
            }
        }
        let end = i;
        if let Some(action) = build_action(ctx, loc, name, start, name_end, end, value) {
            out.push(action);
        }
    }
    out
}

fn build_action(
    ctx: &mut Ctx<'_>,
    loc: Loc<'_>,
    name: &str,
    start: usize,
    name_end: usize,
    end: usize,
    value: Option<(String, usize)>,
) -> Option<Action> {
    let span = loc.span(ctx, start, end);
    let name_span = loc.span(ctx, start, name_end.max(start + 1));
    let Some(&(canonical, _, arg)) = ACTIONS.iter().find(|a| a.0.eq_ignore_ascii_case(name)) else {
        ctx.errors.push(
            Diagnostic::new(
                ErrorKind::UnknownAction,
                name_span,
                format!("unknown action `{name}`"),
            )
            .with_suggestion(names::suggest(ACTIONS.iter().map(|a| a.0), name)),
        );
        return None;
    };
    let value = match (arg, value) {
        (ActionArg::Required, None) => {
            ctx.errors.push(Diagnostic::new(
                ErrorKind::MissingArgument,
                name_span,
                format!("action `{canonical}` needs a value (`{canonical}:...`)"),
            ));
            return None;
        }
        (ActionArg::Required, Some((v, _))) if v.is_empty() && canonical != "logdata" => {
            ctx.errors.push(Diagnostic::new(
                ErrorKind::MissingArgument,
                name_span,
                format!("action `{canonical}` has an empty value"),
            ));
            return None;
        }
        (ActionArg::None, Some(_)) => {
            ctx.errors.push(Diagnostic::new(
                ErrorKind::UnexpectedArgument,
                span,
                format!("action `{canonical}` takes no value"),
            ));
            return None;
        }
        (_, None) => ActionValue::None,
        (_, Some((v, vstart))) => {
            let vspan = loc.span(ctx, vstart, end);
            typed_value(ctx, loc.shift(vstart), canonical, v, vspan)?
        }
    };
    Some(Action {
        span,
        name: canonical,
        value,
    })
}

fn invalid(
    ctx: &mut Ctx<'_>,
    kind: ErrorKind,
    span: crate::Span,
    msg: String,
) -> Option<ActionValue> {
    ctx.errors.push(Diagnostic::new(kind, span, msg));
    None
}

fn typed_value(
    ctx: &mut Ctx<'_>,
    vloc: Loc<'_>,
    name: &'static str,
    v: String,
    vspan: crate::Span,
) -> Option<ActionValue> {
    match name {
        "id" => match v.trim().parse::<u32>() {
            Ok(id) if id > 0 => Some(ActionValue::Id(id)),
            _ => invalid(
                ctx,
                ErrorKind::InvalidValue,
                vspan,
                format!("rule id `{v}` is not a number from 1 to 4294967295"),
            ),
        },
        "phase" => match parse_phase(&v) {
            Some(p) => Some(ActionValue::Phase(p)),
            None => invalid(
                ctx,
                ErrorKind::PhaseOutOfRange,
                vspan,
                format!("phase `{v}` is out of range: use 1-5, request, response or logging"),
            ),
        },
        "severity" => {
            let t = v.trim();
            let level = t.parse::<u8>().ok().filter(|n| *n <= 7).or_else(|| {
                SEVERITIES
                    .iter()
                    .position(|s| s.eq_ignore_ascii_case(t))
                    .map(|p| p as u8)
            });
            match level {
                Some(l) => Some(ActionValue::Severity(l)),
                None => invalid(
                    ctx,
                    ErrorKind::InvalidValue,
                    vspan,
                    format!(
                        "severity `{v}` is not 0-7 or a severity name (CRITICAL, WARNING, ...)"
                    ),
                ),
            }
        }
        "skip" => match v.trim().parse::<u32>() {
            Ok(n) if n > 0 => Some(ActionValue::Skip(n)),
            _ => invalid(
                ctx,
                ErrorKind::InvalidValue,
                vspan,
                format!("skip needs a positive number of rules, not `{v}`"),
            ),
        },
        "status" => match v.trim().parse::<u16>() {
            Ok(n) if (100..=999).contains(&n) => Some(ActionValue::Status(n)),
            _ => invalid(
                ctx,
                ErrorKind::InvalidValue,
                vspan,
                format!("status `{v}` is not an HTTP status code"),
            ),
        },
        "t" => match names::canonical(TRANSFORMATIONS.iter().copied(), v.trim()) {
            Some(t) => Some(ActionValue::Transformation(t)),
            None => {
                ctx.errors.push(
                    Diagnostic::new(
                        ErrorKind::UnknownTransformation,
                        vspan,
                        format!("unknown transformation `{v}`"),
                    )
                    .with_suggestion(names::suggest(TRANSFORMATIONS.iter().copied(), &v)),
                );
                None
            }
        },
        "setvar" => parse_setvar(ctx, &v, vspan).map(ActionValue::SetVar),
        "ctl" => parse_ctl(ctx, &v, vloc, vspan).map(ActionValue::Ctl),
        "allow" => {
            let t = v.trim();
            if ["phase", "request"]
                .iter()
                .any(|w| w.eq_ignore_ascii_case(t))
            {
                Some(ActionValue::Text(t.to_ascii_lowercase()))
            } else {
                invalid(
                    ctx,
                    ErrorKind::InvalidValue,
                    vspan,
                    format!("allow takes `phase` or `request`, not `{v}`"),
                )
            }
        }
        _ => Some(ActionValue::Text(v)),
    }
}

/// `1`-`5`, or the names ModSecurity accepts.
pub fn parse_phase(v: &str) -> Option<u8> {
    let t = v.trim();
    match t.parse::<u8>() {
        Ok(n @ 1..=5) => Some(n),
        Ok(_) => None,
        Err(_) => match t.to_ascii_lowercase().as_str() {
            "request" => Some(2),
            "response" => Some(4),
            "logging" => Some(5),
            _ => None,
        },
    }
}

fn parse_setvar(ctx: &mut Ctx<'_>, v: &str, span: crate::Span) -> Option<SetVar> {
    let mut t = v.trim();
    let unset = t.starts_with('!');
    if unset {
        t = &t[1..];
    }
    let (lhs, rhs) = match t.find('=') {
        Some(eq) => (&t[..eq], Some(&t[eq + 1..])),
        None => (t, None),
    };
    let Some(dot) = lhs.find('.') else {
        ctx.errors.push(
            Diagnostic::new(
                ErrorKind::InvalidSetVar,
                span,
                format!("setvar `{v}` needs a collection and a key, as in `tx.score=5`"),
            )
            .with_help("the form is setvar:[!]collection.key[=[+|-]value]"),
        );
        return None;
    };
    let collection = lhs[..dot].trim();
    let key = lhs[dot + 1..].trim();
    if collection.is_empty()
        || key.is_empty()
        || !collection
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        ctx.errors.push(Diagnostic::new(
            ErrorKind::InvalidSetVar,
            span,
            format!("setvar `{v}` has an empty or invalid collection or key"),
        ));
        return None;
    }
    let (op, value) = match (unset, rhs) {
        (true, Some(_)) => {
            ctx.errors.push(Diagnostic::new(
                ErrorKind::InvalidSetVar,
                span,
                format!("setvar `{v}` both removes (`!`) and assigns (`=`)"),
            ));
            return None;
        }
        (true, None) => (SetVarOp::Unset, String::new()),
        (false, None) => (SetVarOp::Flag, String::new()),
        (false, Some(r)) => match r.as_bytes().first() {
            Some(b'+') => (SetVarOp::Add, r[1..].to_string()),
            Some(b'-') => (SetVarOp::Sub, r[1..].to_string()),
            _ => (SetVarOp::Set, r.to_string()),
        },
    };
    Some(SetVar {
        collection: collection.to_ascii_lowercase(),
        key: key.to_string(),
        op,
        value,
    })
}

/// Parses an id list: ids and ranges separated by blanks or commas.
pub(crate) fn parse_id_list(text: &str) -> Result<Vec<IdRange>, String> {
    let mut out = Vec::new();
    for part in text.split([' ', '\t', ',']).filter(|p| !p.is_empty()) {
        let range = match part.split_once('-') {
            Some((a, b)) => {
                let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) else {
                    return Err(format!("`{part}` is not an id range like `100-199`"));
                };
                if a > b {
                    return Err(format!("id range `{part}` runs backwards"));
                }
                IdRange { start: a, end: b }
            }
            None => {
                let Ok(id) = part.parse::<u32>() else {
                    return Err(format!("`{part}` is not a rule id"));
                };
                IdRange { start: id, end: id }
            }
        };
        out.push(range);
    }
    if out.is_empty() {
        return Err("expected at least one rule id".into());
    }
    Ok(out)
}

fn parse_ctl(ctx: &mut Ctx<'_>, v: &str, vloc: Loc<'_>, span: crate::Span) -> Option<Ctl> {
    let Some(eq) = v.find('=') else {
        ctx.errors.push(Diagnostic::new(
            ErrorKind::InvalidValue,
            span,
            format!("ctl `{v}` needs the form option=value"),
        ));
        return None;
    };
    let opt = v[..eq].trim();
    let val = v[eq + 1..].trim();
    let Some(option) = names::canonical(CTL_OPTIONS.iter().copied(), opt) else {
        ctx.errors.push(
            Diagnostic::new(
                ErrorKind::UnknownCtlOption,
                span,
                format!("unknown ctl option `{opt}`"),
            )
            .with_suggestion(names::suggest(CTL_OPTIONS.iter().copied(), opt)),
        );
        return None;
    };
    let value = match option {
        "ruleRemoveById" => match parse_id_list(val) {
            Ok(ids) => CtlValue::Ids(ids),
            Err(e) => {
                ctx.errors.push(Diagnostic::new(
                    ErrorKind::InvalidValue,
                    span,
                    format!("ctl:{option}: {e}"),
                ));
                return None;
            }
        },
        "ruleRemoveTargetById" | "ruleRemoveTargetByTag" | "ruleRemoveTargetByMsg" => {
            let Some(semi) = val.find(';') else {
                ctx.errors.push(Diagnostic::new(
                    ErrorKind::InvalidValue,
                    span,
                    format!("ctl:{option} needs `SELECTOR;TARGETS`, as in `942100;ARGS:foo`"),
                ));
                return None;
            };
            let sel = val[..semi].trim();
            let selector = match option {
                "ruleRemoveTargetById" => match parse_id_list(sel) {
                    Ok(ids) => RuleSelector::Ids(ids),
                    Err(e) => {
                        ctx.errors.push(Diagnostic::new(
                            ErrorKind::InvalidValue,
                            span,
                            format!("ctl:{option}: {e}"),
                        ));
                        return None;
                    }
                },
                "ruleRemoveTargetByTag" => RuleSelector::Tag(sel.to_string()),
                _ => RuleSelector::Msg(sel.to_string()),
            };
            let targets_text = &val[semi + 1..];
            let offset = v.len() - v[eq + 1..].trim_start().len() + semi + 1;
            let before = ctx.errors.len();
            let targets = parse_targets(ctx, targets_text, vloc.shift(offset));
            if ctx.errors.len() > before {
                return None;
            }
            CtlValue::RemoveTarget(UpdateTarget {
                selector,
                targets,
                replaced: None,
            })
        }
        _ => CtlValue::Text(val.to_string()),
    };
    Some(Ctl { option, value })
}
