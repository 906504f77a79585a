//! `t:escapeSeqDecode`: ANSI C escape sequences, as libmodsecurity decodes them.
//!
//! * `\a \b \f \n \r \t \v \\ \? \' \"`: the usual bytes;
//! * `\xHH` / `\XHH` with two hex digits: the byte `0xHH`;
//! * `\O`, `\OO`, `\OOO`: octal, at most three digits; unlike `jsDecode` there is
//!   no `\377` cap, the value is simply truncated to a byte (`\777` is 0xFF);
//! * any other `\C` (including `\xZZ`, `\x4`, `\8`) becomes `C`: the backslash is
//!   dropped and the following bytes are copied;
//! * a backslash at the very end is kept.

use super::util::{is_hex, is_odigit, x2c};
use memchr::memchr;

/// Decodes an escape at `i` (`input[i] == b'\\'`, `i + 1 < input.len()`),
/// returning the byte and the number of input bytes consumed.
fn escape_at(input: &[u8], i: usize) -> (u8, usize) {
    let len = input.len();
    let simple = match input[i + 1] {
        b'a' => Some(0x07),
        b'b' => Some(0x08),
        b'f' => Some(0x0c),
        b'n' => Some(b'\n'),
        b'r' => Some(b'\r'),
        b't' => Some(b'\t'),
        b'v' => Some(0x0b),
        b'\\' => Some(b'\\'),
        b'?' => Some(b'?'),
        b'\'' => Some(b'\''),
        b'"' => Some(b'"'),
        _ => None,
    };
    if let Some(c) = simple {
        return (c, 2);
    }
    match input[i + 1] {
        b'x' | b'X' if i + 3 < len && is_hex(input[i + 2]) && is_hex(input[i + 3]) => {
            (x2c(input[i + 2], input[i + 3]), 4)
        }
        d if is_odigit(d) => {
            let mut j = 1;
            while j < 3 && i + 1 + j < len && is_odigit(input[i + 1 + j]) {
                j += 1;
            }
            let value = input[i + 1..i + 1 + j]
                .iter()
                .fold(0u32, |v, &d| v * 8 + u32::from(d - b'0'));
            ((value & 0xff) as u8, 1 + j)
        }
        other => (other, 2),
    }
}

/// Decodes escape sequences; `false` when there is none.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let len = input.len();
    match memchr(b'\\', input) {
        Some(p) if p + 1 < len => {}
        _ => return false,
    }
    out.reserve(len);
    let mut i = 0;
    while i < len {
        let Some(p) = memchr(b'\\', &input[i..]) else {
            out.extend_from_slice(&input[i..]);
            break;
        };
        out.extend_from_slice(&input[i..i + p]);
        i += p;
        if i + 1 >= len {
            out.push(b'\\');
            break;
        }
        let (b, used) = escape_at(input, i);
        out.push(b);
        i += used;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::apply;

    #[test]
    fn escapes() {
        let mut out = Vec::new();
        assert!(apply(b"\\x41\\X42\\101\\777\\xZZ\\8\\\"\\", &mut out));
        assert_eq!(out, b"ABA\xffxZZ8\"\\");
    }
}
