//! The small subset of Go `text/template` (+ sprig) that go-ftw applies to
//! a stage's `data` before sending it.
//!
//! go-ftw parses every `data` value as a Go template with the sprig function
//! map (`test/data.go`, `parseData`). The CRS suite uses exactly one form,
//! `{{ "1" | repeat 64200 }}` (920400), to build large bodies. Supported
//! here: string literals (double-quoted with Go escapes, or back-quoted),
//! integer literals, `repeat COUNT STRING`, pipelines `X | f ARGS`
//! (X becomes the last argument), `{{-`/`-}}` whitespace trimming and
//! `{{/* comments */}}`. Anything else is an error instead of a silent
//! difference; go-ftw itself turns a template error into an empty body.

/// Upper bound on the size of an expanded body (64 MiB).
pub const MAX_EXPANDED_LEN: usize = 64 << 20;

/// Why a `data` template could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// `{{` without a matching `}}`.
    #[error("unclosed template action starting at byte {0}")]
    Unclosed(usize),
    /// An action this subset does not implement.
    #[error("unsupported template action `{{{{{0}}}}}`")]
    Unsupported(String),
    /// The expansion would exceed [`MAX_EXPANDED_LEN`].
    #[error("template expands to more than {MAX_EXPANDED_LEN} bytes")]
    TooLarge,
}

/// Expands the Go template subset in `data`. Text without `{{` is returned
/// unchanged.
pub fn expand(data: &str) -> Result<String, TemplateError> {
    if !data.contains("{{") {
        return Ok(data.to_string());
    }
    let mut out = String::with_capacity(data.len());
    let mut rest = data;
    let mut offset = 0;
    while let Some(open) = rest.find("{{") {
        let mut text = &rest[..open];
        let after_open = &rest[open + 2..];
        let close = after_open
            .find("}}")
            .ok_or(TemplateError::Unclosed(offset + open))?;
        let mut action = &after_open[..close];
        // `{{- ` trims the whitespace before the action.
        if let Some(a) = action.strip_prefix("- ").or_else(|| strip_dash_ws(action)) {
            text = text.trim_end();
            action = a;
        }
        let mut trim_after = false;
        if let Some(a) = action.strip_suffix(" -").or_else(|| strip_ws_dash(action)) {
            trim_after = true;
            action = a;
        }
        out.push_str(text);
        let value = eval_action(action.trim())?;
        if out.len() + value.len() > MAX_EXPANDED_LEN {
            return Err(TemplateError::TooLarge);
        }
        out.push_str(&value);
        let consumed = open + 2 + close + 2;
        offset += consumed;
        rest = &rest[consumed..];
        if trim_after {
            let trimmed = rest.trim_start();
            offset += rest.len() - trimmed.len();
            rest = trimmed;
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn strip_dash_ws(action: &str) -> Option<&str> {
    let a = action.strip_prefix('-')?;
    a.starts_with(|c: char| c.is_ascii_whitespace())
        .then_some(a)
}

fn strip_ws_dash(action: &str) -> Option<&str> {
    let a = action.strip_suffix('-')?;
    a.ends_with(|c: char| c.is_ascii_whitespace()).then_some(a)
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Str(String),
    Int(i64),
}

fn eval_action(action: &str) -> Result<String, TemplateError> {
    let unsupported = || TemplateError::Unsupported(action.to_string());
    if action.starts_with("/*") && action.ends_with("*/") {
        return Ok(String::new());
    }
    let tokens = tokenize(action).ok_or_else(unsupported)?;
    let mut piped: Option<Value> = None;
    for command in tokens.split(|t| *t == Token::Pipe) {
        let value = eval_command(command, piped.take()).ok_or_else(unsupported)??;
        piped = Some(value);
    }
    match piped {
        Some(Value::Str(s)) => Ok(s),
        Some(Value::Int(i)) => Ok(i.to_string()),
        None => Err(unsupported()),
    }
}

fn eval_command(command: &[Token], piped: Option<Value>) -> Option<Result<Value, TemplateError>> {
    let (first, args) = command.split_first()?;
    let mut args: Vec<Value> = args.iter().map(Token::literal).collect::<Option<_>>()?;
    if let Some(p) = piped {
        args.push(p);
    }
    match first {
        Token::Ident(name) if name == "repeat" => match args.as_slice() {
            [Value::Int(count), Value::Str(s)] => {
                let count = usize::try_from(*count).unwrap_or(0);
                if s.len().saturating_mul(count) > MAX_EXPANDED_LEN {
                    return Some(Err(TemplateError::TooLarge));
                }
                Some(Ok(Value::Str(s.repeat(count))))
            }
            _ => None,
        },
        Token::Ident(_) | Token::Pipe => None,
        literal => (args.is_empty())
            .then(|| literal.literal())
            .flatten()
            .map(Ok),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Str(String),
    Int(i64),
    Ident(String),
    Pipe,
}

impl Token {
    fn literal(&self) -> Option<Value> {
        match self {
            Token::Str(s) => Some(Value::Str(s.clone())),
            Token::Int(i) => Some(Value::Int(*i)),
            Token::Ident(_) | Token::Pipe => None,
        }
    }
}

fn tokenize(action: &str) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut chars = action.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        match c {
            c if c.is_ascii_whitespace() => {
                chars.next();
            }
            '|' => {
                chars.next();
                tokens.push(Token::Pipe);
            }
            '"' => {
                chars.next();
                let mut s = String::new();
                loop {
                    let (_, c) = chars.next()?;
                    match c {
                        '"' => break,
                        '\\' => {
                            let (_, e) = chars.next()?;
                            s.push(match e {
                                'n' => '\n',
                                't' => '\t',
                                'r' => '\r',
                                '\\' => '\\',
                                '"' => '"',
                                _ => return None,
                            });
                        }
                        c => s.push(c),
                    }
                }
                tokens.push(Token::Str(s));
            }
            '`' => {
                chars.next();
                let mut s = String::new();
                loop {
                    let (_, c) = chars.next()?;
                    if c == '`' {
                        break;
                    }
                    s.push(c);
                }
                tokens.push(Token::Str(s));
            }
            c if c.is_ascii_digit() || c == '-' => {
                let mut end = i;
                while let Some(&(j, d)) = chars.peek() {
                    if d.is_ascii_digit() || (j == i && d == '-') {
                        end = j + d.len_utf8();
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push(Token::Int(action[i..end].parse().ok()?));
            }
            c if c.is_ascii_alphabetic() => {
                let mut end = i;
                while let Some(&(j, d)) = chars.peek() {
                    if d.is_ascii_alphanumeric() || d == '_' {
                        end = j + d.len_utf8();
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push(Token::Ident(action[i..end].to_string()));
            }
            _ => return None,
        }
    }
    Some(tokens)
}

#[cfg(test)]
mod tests {
    // Tests may unwrap: a panic is the failure report.
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn plain_text_is_unchanged() {
        assert_eq!(expand("a=b&c={d}").unwrap(), "a=b&c={d}");
    }

    #[test]
    fn repeat_pipeline_as_in_920400() {
        let got = expand("x\n{{ \"1\" | repeat 5 }}\ny").unwrap();
        assert_eq!(got, "x\n11111\ny");
    }

    #[test]
    fn repeat_direct_call_and_literals() {
        assert_eq!(expand("{{repeat 3 `ab`}}").unwrap(), "ababab");
        assert_eq!(expand("{{ \"q\\\"\" }}").unwrap(), "q\"");
        assert_eq!(expand("{{ 42 }}").unwrap(), "42");
        assert_eq!(expand("[{{/* c */}}]").unwrap(), "[]");
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "(\\{\\{|\\}\\}|[-| \"`a-z0-9]|.){0,40}") {
            let _ = expand(&s);
        }
    }

    #[test]
    fn trim_markers() {
        assert_eq!(expand("a  {{- \"b\" -}}  c").unwrap(), "abc");
    }

    #[test]
    fn unsupported_and_unclosed_are_errors() {
        assert!(matches!(
            expand("{{constructor.constructor('alert(1)')()}}"),
            Err(TemplateError::Unsupported(_))
        ));
        assert!(matches!(
            expand("{{ .Foo }}"),
            Err(TemplateError::Unsupported(_))
        ));
        assert!(matches!(
            expand("a {{ \"b\""),
            Err(TemplateError::Unclosed(2))
        ));
        assert!(matches!(
            expand("{{ \"ab\" | repeat 999999999999 }}"),
            Err(TemplateError::TooLarge)
        ));
    }
}
