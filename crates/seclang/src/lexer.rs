//! Lexer: file text -> logical lines (continuations joined, comments dropped) ->
//! whitespace-separated arguments with quotes removed.
//!
//! ModSecurity's reading rules, as implemented here:
//! - a line ending in `\` continues on the next physical line (the backslash and the
//!   line break are removed; the next line's indentation is kept);
//! - a line whose first non-blank character is `#` is a comment; comments do not
//!   continue (as in libmodsecurity v3);
//! - an argument is either bare (up to the next blank) or quoted with `"` or `'`;
//!   inside quotes, a backslash before the quote character escapes it and is removed.
//!   Every other backslash is kept, so regular expressions are passed on unchanged.
//!
//! Every argument keeps a map from its (unescaped) text back to source offsets, so
//! later stages can point at any byte of it.

use std::rc::Rc;

use crate::diagnostic::{Diagnostic, ErrorKind};
use crate::source::{FileId, SourceFile, Span};

/// Maps offsets in derived text back to offsets in another text: a sorted list of
/// `(derived, original)` points; between points the mapping is the identity shift.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OffsetMap {
    points: Vec<(u32, u32)>,
}

impl OffsetMap {
    fn push(&mut self, derived: u32, original: u32) {
        if let Some(last) = self.points.last_mut() {
            if last.0 == derived {
                last.1 = original;
                return;
            }
            if original.wrapping_sub(last.1) == derived - last.0 {
                return;
            }
        }
        self.points.push((derived, original));
    }

    fn map(&self, derived: u32) -> u32 {
        let idx = match self.points.binary_search_by_key(&derived, |p| p.0) {
            Ok(i) => i,
            Err(0) => return derived,
            Err(i) => i - 1,
        };
        let (d, o) = self.points[idx];
        o + (derived - d)
    }
}

/// One argument of a directive line, quotes removed.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    /// The text, without quotes and with escaped quotes resolved.
    pub text: String,
    /// Source offset of the token's first character (the opening quote if quoted).
    pub src_start: u32,
    /// Source offset one past the token's last character.
    pub src_end: u32,
    text_to_line: OffsetMap,
    line_to_src: Rc<OffsetMap>,
}

impl Token {
    /// The source offset of byte `offset` of `text`.
    pub fn src_offset(&self, offset: usize) -> u32 {
        let logical = self.text_to_line.map(offset as u32);
        self.line_to_src.map(logical)
    }

    /// A span covering `start..end` of `text`.
    pub fn span_of(&self, file: &SourceFile, id: FileId, start: usize, end: usize) -> Span {
        let s = self.src_offset(start);
        let e = if end > start {
            self.src_offset(end - 1) + 1
        } else {
            s
        };
        file.span(id, s, e.max(s))
    }

    /// A span covering the whole token, quotes included.
    pub fn span(&self, file: &SourceFile, id: FileId) -> Span {
        file.span(id, self.src_start, self.src_end)
    }
}

/// A directive: its arguments (the first is the directive name).
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub tokens: Vec<Token>,
    /// Source offset of the first character of the directive.
    pub src_start: u32,
    /// Source offset of the end of the logical line.
    pub src_end: u32,
}

/// Splits a file into directive lines. Errors (unterminated quotes) are pushed to
/// `errors`; the line is still returned with what could be read.
pub(crate) fn lex(file: &SourceFile, id: FileId, errors: &mut Vec<Diagnostic>) -> Vec<Line> {
    let text = file.text.as_str();
    let mut lines = Vec::new();
    let mut logical = String::new();
    let mut map = OffsetMap::default();
    let mut in_continuation = false;
    let mut line_start = 0u32;
    let mut pos = 0usize;
    while pos < text.len() {
        let end = text[pos..].find('\n').map_or(text.len(), |e| pos + e);
        let next = (end + 1).min(text.len()).max(end);
        let mut physical = &text[pos..end];
        if let Some(stripped) = physical.strip_suffix('\r') {
            physical = stripped;
        }
        if !in_continuation {
            let trimmed = physical.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                pos = next;
                continue;
            }
            logical.clear();
            map = OffsetMap::default();
            line_start = (pos + (physical.len() - trimmed.len())) as u32;
        }
        let (content, continues) = match physical.strip_suffix('\\') {
            Some(c) => (c, true),
            None => (physical, false),
        };
        map.push(logical.len() as u32, pos as u32);
        logical.push_str(content);
        if continues && next < text.len() {
            in_continuation = true;
        } else {
            in_continuation = false;
            let src_end = (pos + content.len()) as u32;
            let tokens = tokenize(
                &logical,
                Rc::new(std::mem::take(&mut map)),
                file,
                id,
                errors,
            );
            if !tokens.is_empty() {
                lines.push(Line {
                    tokens,
                    src_start: line_start,
                    src_end,
                });
            }
        }
        pos = next;
        if pos == end {
            break;
        }
    }
    lines
}

fn tokenize(
    line: &str,
    map: Rc<OffsetMap>,
    file: &SourceFile,
    id: FileId,
    errors: &mut Vec<Diagnostic>,
) -> Vec<Token> {
    let bytes = line.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0usize;
    while i < bytes.len() {
        if bytes[i] == b' ' || bytes[i] == b'\t' || bytes[i] == b'\r' {
            i += 1;
            continue;
        }
        let start = i;
        let mut text = String::new();
        let mut text_map = OffsetMap::default();
        let quote = match bytes[i] {
            q @ (b'"' | b'\'') => Some(q),
            _ => None,
        };
        if let Some(q) = quote {
            i += 1;
            text_map.push(0, i as u32);
            let mut closed = false;
            let mut seg_start = i;
            while i < bytes.len() {
                if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&q) {
                    text.push_str(&line[seg_start..i]);
                    text_map.push(text.len() as u32, (i + 1) as u32);
                    text.push(q as char);
                    i += 2;
                    seg_start = i;
                    continue;
                }
                if bytes[i] == q {
                    closed = true;
                    break;
                }
                i += 1;
            }
            text.push_str(&line[seg_start..i]);
            if closed {
                i += 1;
            } else {
                let s = map.map(start as u32);
                errors.push(
                    Diagnostic::new(
                        ErrorKind::UnterminatedQuote,
                        file.span(id, s, s + 1),
                        format!("this {} quote is never closed", q as char),
                    )
                    .with_help("close the quote before the end of the directive"),
                );
            }
        } else {
            text_map.push(0, i as u32);
            while i < bytes.len() && !matches!(bytes[i], b' ' | b'\t' | b'\r') {
                i += 1;
            }
            text.push_str(&line[start..i]);
        }
        tokens.push(Token {
            text,
            src_start: map.map(start as u32),
            src_end: map.map(i.saturating_sub(1) as u32) + u32::from(i > start),
            text_to_line: text_map,
            line_to_src: Rc::clone(&map),
        });
    }
    tokens
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may panic on a failed expectation

    use super::*;

    fn lex_str(text: &str) -> (SourceFile, Vec<Line>, Vec<Diagnostic>) {
        let file = SourceFile::new("t.conf", text.to_string());
        let mut errors = Vec::new();
        let lines = lex(&file, 0, &mut errors);
        (file, lines, errors)
    }

    fn texts(line: &Line) -> Vec<&str> {
        line.tokens.iter().map(|t| t.text.as_str()).collect()
    }

    #[test]
    fn continuation_comments_and_quotes() {
        let (_, lines, errors) = lex_str(
            "# comment \\\nSecRule ARGS \"@rx a\\\"b\" \\\n    \"id:1,\\\n    deny\"\n\n  SecMarker 'END X'\n",
        );
        assert!(errors.is_empty());
        assert_eq!(lines.len(), 2);
        assert_eq!(
            texts(&lines[0]),
            ["SecRule", "ARGS", "@rx a\"b", "id:1,    deny"]
        );
        assert_eq!(texts(&lines[1]), ["SecMarker", "END X"]);
    }

    #[test]
    fn offsets_map_back_through_escapes_and_continuations() {
        let src = "SecRule ARGS \"a\\\"b\" \\\n  \"id:1,\\\n  deny\"";
        let (file, lines, _) = lex_str(src);
        let tok = &lines[0].tokens[2];
        assert_eq!(tok.text, "a\"b");
        // 'b' is after the escaped quote
        let b = tok.src_offset(2) as usize;
        assert_eq!(&src[b..b + 1], "b");
        let act = &lines[0].tokens[3];
        let d = act.text.find("deny").unwrap();
        let off = act.src_offset(d);
        assert_eq!(&src[off as usize..off as usize + 4], "deny");
        assert_eq!(file.line_col(off), (3, 3));
    }

    #[test]
    fn unterminated_quote_is_reported() {
        let (_, lines, errors) = lex_str("SecRule ARGS \"@rx x");
        assert_eq!(lines.len(), 1);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].kind, ErrorKind::UnterminatedQuote);
        assert_eq!(errors[0].span.unwrap().col, 14);
    }
}
