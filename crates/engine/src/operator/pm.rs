//! `@pm`: whether any of the space-separated phrases occurs in the input (ASCII
//! case-insensitive). With `capture`, TX:0 is the phrase found.
//!
//! The argument is read as libmodsecurity v3 reads it (`Pm::init`,
//! `parse_pm_content`), quirks included:
//!
//! - Leading spaces/tabs are skipped; if the rest starts and ends with `"`, the quotes
//!   are removed.
//! - `\` escapes `:`, `;`, `\` and `"`; any other escape makes the whole processing
//!   fail, and the argument is then used unprocessed.
//! - `|...|` toggles hex mode, in which pairs of hex *letters* (`a-f`, `A-F`) give a
//!   byte, while decimal digits and other bytes are dropped (ModSecurity compares them
//!   with the values 0-9 instead of the characters `'0'-'9'`).
//! - Processing writes over the argument in place without ending it, so when bytes
//!   were consumed (escapes, `|`) the unconsumed tail of the original stays at the
//!   end.
//! - The result is split on C whitespace into phrases.
//!
//! Matching is ModSecurity's `acmp` automaton: see [`super::acmp`].

use super::acmp::Acmp;
use super::{Captures, Operator};

/// The `@pm` operator.
#[derive(Debug)]
pub(crate) struct Pm {
    phrases: Acmp,
    literals: Vec<Vec<u8>>,
}

/// C `isspace` in the C locale.
pub(crate) fn c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r')
}

/// C `strtol(pair, NULL, 16) & 0xFF` on a two-byte string.
fn strtol_hex(pair: [u8; 2]) -> u8 {
    let mut s = &pair[..];
    while let Some((&c, rest)) = s.split_first() {
        if c_space(c) {
            s = rest;
        } else {
            break;
        }
    }
    let mut v: u32 = 0;
    for &c in s {
        match char::from(c).to_digit(16) {
            Some(d) => v = v * 16 + d,
            None => break,
        }
    }
    (v & 0xFF) as u8
}

/// `parse_pm_content`: `None` when ModSecurity's processing fails (then the raw
/// argument is used).
fn parse_pm_content(param: &[u8]) -> Option<Vec<u8>> {
    let content = &param[..memchr::memchr(0, param).unwrap_or(param.len())];
    let offset = content
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(content.len());
    let rest = &content[offset..];
    let parm: &[u8] = if rest.len() >= 2 && rest[0] == b'"' && rest[rest.len() - 1] == b'"' {
        &rest[1..rest.len() - 1]
    } else if rest == b"\"" {
        // A lone quote: ModSecurity's arithmetic ends the string before it starts.
        &[]
    } else {
        rest
    };
    if parm.is_empty() {
        return None;
    }
    let mut out = parm.to_vec();
    let mut x = 0;
    let (mut bin, mut esc) = (false, false);
    let mut pair = [0u8; 2];
    let mut half = 0;
    for &c in parm {
        if c == b'|' {
            bin = !bin;
        } else if !esc && c == b'\\' {
            esc = true;
        } else if bin {
            if c <= 9 || matches!(c, b'a'..=b'f' | b'A'..=b'F') {
                pair[half] = c;
                half += 1;
                if half == 2 {
                    half = 0;
                    out[x] = strtol_hex(pair);
                    x += 1;
                }
            }
        } else if esc {
            if matches!(c, b':' | b';' | b'\\' | b'"') {
                out[x] = c;
                x += 1;
            } else {
                return None;
            }
            esc = false;
        } else {
            out[x] = c;
            x += 1;
        }
    }
    // `strdup` of the buffer: it ends at the first NUL.
    let end = memchr::memchr(0, &out).unwrap_or(out.len());
    out.truncate(end);
    Some(out)
}

/// The phrases of a `@pm` argument, in order.
pub(crate) fn phrases(argument: &str) -> Vec<Vec<u8>> {
    let raw = argument.as_bytes();
    let content = parse_pm_content(raw).unwrap_or_else(|| raw.to_vec());
    content
        .split(|&b| c_space(b))
        .filter(|p| !p.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

impl Pm {
    /// Parses the phrases and builds the automaton.
    pub(crate) fn new(argument: &str) -> Self {
        let literals = phrases(argument);
        Pm {
            phrases: Acmp::new(literals.clone()),
            literals,
        }
    }
}

impl Operator for Pm {
    fn required_literals(&self) -> Option<Vec<Vec<u8>>> {
        Some(self.literals.clone())
    }

    fn evaluate(&self, input: &[u8], captures: Option<&mut Captures>) -> bool {
        self.phrases.matches(input, captures)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Vec<String> {
        phrases(s)
            .into_iter()
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .collect()
    }

    #[test]
    fn argument_processing_matches_modsecurity() {
        assert_eq!(p("a b  c"), ["a", "b", "c"]);
        assert_eq!(p("\"a b\""), ["a", "b"]);
        assert_eq!(p("a\\:b"), ["a:bb"]);
        assert_eq!(p("a\\x"), ["a\\x"]);
        assert_eq!(p("x|41|y"), ["xy41|y"]);
    }
}
