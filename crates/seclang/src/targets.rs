//! Rule targets: `ARGS|!ARGS:foo|&TX:x|ARGS:/re/|XML:/xpath|REQUEST_HEADERS:'User-Agent'`.

use crate::ast::{Selector, Target};
use crate::cursor::{Ctx, Loc};
use crate::diagnostic::{Diagnostic, ErrorKind};
use crate::names::{self, VariableShape, VARIABLES};

/// Parses a `|`-separated target list. Errors are recorded; valid targets returned.
pub(crate) fn parse_targets(ctx: &mut Ctx<'_>, text: &str, loc: Loc<'_>) -> Vec<Target> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0usize;
    if text.trim().is_empty() {
        ctx.errors.push(Diagnostic::new(
            ErrorKind::UnknownVariable,
            loc.span(ctx, 0, text.len()),
            "a rule needs at least one target variable",
        ));
        return out;
    }
    while i < bytes.len() {
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
            i += 1;
        }
        let start = i;
        let mut exclude = false;
        let mut count = false;
        while i < bytes.len() && matches!(bytes[i], b'!' | b'&') {
            if bytes[i] == b'!' {
                exclude = true;
            } else {
                count = true;
            }
            i += 1;
        }
        let name_start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        let name = &text[name_start..i];
        let found = VARIABLES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .copied();
        let mut selector = None;
        let mut ok = true;
        if found.is_none() {
            ok = false;
            let msg = if name.is_empty() {
                "expected a variable name".to_string()
            } else {
                format!("unknown variable `{name}`")
            };
            ctx.errors.push(
                Diagnostic::new(
                    ErrorKind::UnknownVariable,
                    loc.span(ctx, name_start, i.max(name_start + 1)),
                    msg,
                )
                .with_suggestion(names::suggest(VARIABLES.iter().map(|v| v.0), name)),
            );
        }
        if i < bytes.len() && bytes[i] == b':' {
            i += 1;
            let sel_start = i;
            let shape = found.map(|f| f.1);
            match parse_selector(text, &mut i, shape) {
                Ok(sel) => selector = Some(sel),
                Err(msg) => {
                    ok = false;
                    ctx.errors.push(Diagnostic::new(
                        ErrorKind::InvalidSelector,
                        loc.span(ctx, sel_start, i.max(sel_start + 1)),
                        msg,
                    ));
                }
            }
            if let (Some((vname, VariableShape::Scalar)), true) = (found, ok) {
                ok = false;
                ctx.errors.push(
                    Diagnostic::new(
                        ErrorKind::InvalidSelector,
                        loc.span(ctx, sel_start.saturating_sub(1), i),
                        format!("`{vname}` is a single value and takes no selector"),
                    )
                    .with_help(format!("write `{vname}` alone")),
                );
            }
        }
        if ok && exclude && selector.is_none() {
            ok = false;
            ctx.errors.push(Diagnostic::new(
                ErrorKind::InvalidSelector,
                loc.span(ctx, start, i),
                "an exclusion (`!`) needs a selector, as in `!ARGS:name`",
            ));
        }
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
            i += 1;
        }
        if i < bytes.len() {
            if bytes[i] == b'|' {
                i += 1;
            } else {
                let bad = i;
                while i < bytes.len() && bytes[i] != b'|' {
                    i += 1;
                }
                ctx.errors.push(Diagnostic::new(
                    ErrorKind::InvalidSelector,
                    loc.span(ctx, bad, i),
                    format!("unexpected `{}` after a target", &text[bad..i]),
                ));
                ok = false;
                i = (i + 1).min(bytes.len());
            }
        }
        if let (true, Some((variable, _))) = (ok, found) {
            out.push(Target {
                span: loc.span(ctx, start, i.min(text.len())),
                exclude,
                count,
                variable,
                selector,
            });
        }
    }
    out
}

/// Reads a selector starting at `*i` (after the `:`), leaving `*i` on the `|` or end.
fn parse_selector(
    text: &str,
    i: &mut usize,
    shape: Option<VariableShape>,
) -> Result<Selector, String> {
    let bytes = text.as_bytes();
    let start = *i;
    if shape == Some(VariableShape::Xml) {
        while *i < bytes.len() && bytes[*i] != b'|' {
            *i += 1;
        }
        let xpath = text[start..*i].trim();
        if xpath.is_empty() {
            return Err("empty XPath selector".into());
        }
        return Ok(Selector::XPath(xpath.to_string()));
    }
    match bytes.get(start) {
        Some(b'/') => {
            // A regex runs to the last `/` before the next `|` that follows a `/`.
            let mut j = start + 1;
            let mut close = None;
            while j < bytes.len() {
                match bytes[j] {
                    b'\\' => j += 1,
                    b'/' => {
                        let rest = &text[j + 1..];
                        if rest.trim_start().is_empty() || rest.trim_start().starts_with('|') {
                            close = Some(j);
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            match close {
                Some(c) => {
                    *i = c + 1;
                    let re = &text[start + 1..c];
                    if re.is_empty() {
                        return Err("empty regular expression selector".into());
                    }
                    Ok(Selector::Regex(re.to_string()))
                }
                None => {
                    *i = bytes.len();
                    Err("unterminated regular expression selector: expected a closing `/`".into())
                }
            }
        }
        Some(b'\'') => match text[start + 1..].find('\'') {
            Some(end) => {
                *i = start + 1 + end + 1;
                let key = &text[start + 1..start + 1 + end];
                if key.is_empty() {
                    return Err("empty selector".into());
                }
                Ok(Selector::Key(key.to_string()))
            }
            None => {
                *i = bytes.len();
                Err("unterminated quoted selector".into())
            }
        },
        _ => {
            while *i < bytes.len() && bytes[*i] != b'|' {
                *i += 1;
            }
            let key = text[start..*i].trim();
            if key.is_empty() {
                return Err("empty selector after `:`".into());
            }
            Ok(Selector::Key(key.to_string()))
        }
    }
}
