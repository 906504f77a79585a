//! `@validateUtf8Encoding`: matches when the input is not valid UTF-8 by
//! ModSecurity's rules.
//!
//! As libmodsecurity v3 (`validate_utf8_encoding.cc`), a value is invalid when a
//! sequence is truncated ("not enough bytes"), a lead byte is `0x80-0xBF` or
//! `0xF8-0xFF`, a continuation byte is not `10xxxxxx`, a form is overlong (2 bytes
//! below U+0080, 3 below U+0800, 4 below U+10000), or it encodes a surrogate
//! (U+D800-U+DFFF), or uses a lead byte of `0xF5` or above (beyond U+10FFFF, which
//! current ModSecurity restricts; CRS test 920250-3 expects it). Kept quirk: 4-byte
//! forms with lead byte `0xF4` above U+10FFFF (`0xF4 0x90..`) are accepted, as
//! ModSecurity checks only the lead byte. An empty input never matches.

use super::{Captures, Operator};

/// The `@validateUtf8Encoding` operator.
#[derive(Debug)]
pub(crate) struct ValidateUtf8Encoding;

/// Length of the valid sequence at the start of `s` (non-empty), or `None`.
fn sequence(s: &[u8]) -> Option<usize> {
    let c = s[0];
    let (len, init) = match c {
        0x00..=0x7F => return Some(1),
        0xC0..=0xDF => (2, u32::from(c & 0x1F)),
        0xE0..=0xEF => (3, u32::from(c & 0x0F)),
        // Lead bytes 0xF5-0xF7 would encode above U+10FFFF: restricted.
        0xF0..=0xF4 => (4, u32::from(c & 0x07)),
        _ => return None,
    };
    let tail = s.get(1..len)?;
    let mut d = init;
    for &b in tail {
        if b & 0xC0 != 0x80 {
            return None;
        }
        d = (d << 6) | u32::from(b & 0x3F);
    }
    if (0xD800..=0xDFFF).contains(&d) {
        return None;
    }
    let min = match len {
        2 => 0x80,
        3 => 0x800,
        _ => 0x1_0000,
    };
    (d >= min).then_some(len)
}

impl Operator for ValidateUtf8Encoding {
    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        // ASCII alone is valid: most values are told in one word-at-a-time pass.
        if input.is_ascii() {
            return false;
        }
        let mut i = 0;
        while i < input.len() {
            if input[i] < 0x80 {
                i += 1;
                continue;
            }
            match sequence(&input[i..]) {
                Some(n) => i += n,
                None => return true,
            }
        }
        false
    }
}
