//! The operator argument of `SecRule`: `[!]@name argument`, or a bare pattern for the
//! implicit `@rx`.

use crate::ast::Operator;
use crate::cursor::{Ctx, Loc};
use crate::diagnostic::{Diagnostic, ErrorKind};
use crate::names::{self, OperatorArg, OPERATORS};

/// Parses an operator string. Returns `None` (after recording an error) when the
/// operator is unknown or its argument is wrong.
pub(crate) fn parse_operator(ctx: &mut Ctx<'_>, text: &str, loc: Loc<'_>) -> Option<Operator> {
    let whole = loc.span(ctx, 0, text.len());
    let lead = text.len() - text.trim_start().len();
    let mut rest = &text[lead..];
    let mut pos = lead;
    let negated = rest.starts_with('!');
    if negated {
        rest = &rest[1..];
        pos += 1;
    }
    let Some(after_at) = rest.strip_prefix('@') else {
        return Some(Operator {
            span: whole,
            negated,
            name: "rx",
            argument: rest.to_string(),
            explicit: false,
        });
    };
    pos += 1;
    let name_len = after_at
        .find(|c: char| c.is_ascii_whitespace())
        .unwrap_or(after_at.len());
    let name = &after_at[..name_len];
    let argument = after_at[name_len..].trim_start_matches([' ', '\t']);
    let Some(&(canonical, arg_rule)) = OPERATORS.iter().find(|o| o.0.eq_ignore_ascii_case(name))
    else {
        ctx.errors.push(
            Diagnostic::new(
                ErrorKind::UnknownOperator,
                loc.span(ctx, pos - 1, pos + name_len),
                format!("unknown operator `@{name}`"),
            )
            .with_suggestion(names::suggest(OPERATORS.iter().map(|o| o.0), name)),
        );
        return None;
    };
    match arg_rule {
        OperatorArg::Required if argument.is_empty() => {
            ctx.errors.push(Diagnostic::new(
                ErrorKind::MissingArgument,
                loc.span(ctx, pos - 1, pos + name_len),
                format!("operator `@{canonical}` needs an argument"),
            ));
            return None;
        }
        OperatorArg::None if !argument.trim().is_empty() => {
            let arg_at = text.len() - argument.len();
            ctx.errors.push(Diagnostic::new(
                ErrorKind::UnexpectedArgument,
                loc.span(ctx, arg_at, text.len()),
                format!("operator `@{canonical}` takes no argument"),
            ));
            return None;
        }
        _ => {}
    }
    Some(Operator {
        span: whole,
        negated,
        name: canonical,
        argument: argument.to_string(),
        explicit: true,
    })
}
