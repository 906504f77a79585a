//! `t:jsDecode`: JavaScript escape sequences, as libmodsecurity decodes them.
//!
//! * `\uHHHH` (lowercase `u`, four hex digits): the low byte `0xHH`, except that
//!   full-width ASCII U+FF01..U+FF5E becomes ASCII 0x21..0x7E;
//! * `\xHH` (lowercase `x`, two hex digits): the byte `0xHH`;
//! * `\O`, `\OO`, `\OOO` (octal, at most three digits and at most `\377`: a
//!   three-digit sequence starting with 4-7 only uses two digits);
//! * `\a \b \f \n \r \t \v`: the control characters; any other `\C` (including
//!   an invalid `\u12` or `\x4`) becomes `C`, the backslash being dropped;
//! * a backslash at the very end is kept.

use super::url_decode_uni::unicode_low_byte;
use super::util::{is_hex, is_odigit, x2c};
use memchr::memchr;

/// Decodes an escape at `i` (`input[i] == b'\\'`, `i + 1 < input.len()`),
/// returning the byte and the number of input bytes consumed.
fn escape_at(input: &[u8], i: usize) -> (u8, usize) {
    let len = input.len();
    let hex = |from: usize, n: usize| input[from..from + n].iter().all(|&b| is_hex(b));
    if i + 5 < len && input[i + 1] == b'u' && hex(i + 2, 4) {
        let b = unicode_low_byte(input[i + 2], input[i + 3], input[i + 4], input[i + 5]);
        return (b, 6);
    }
    if i + 3 < len && input[i + 1] == b'x' && hex(i + 2, 2) {
        return (x2c(input[i + 2], input[i + 3]), 4);
    }
    if is_odigit(input[i + 1]) {
        let mut j = 1;
        while j < 3 && i + 1 + j < len && is_odigit(input[i + 1 + j]) {
            j += 1;
        }
        if j == 3 && input[i + 1] > b'3' {
            j = 2;
        }
        let value = input[i + 1..i + 1 + j]
            .iter()
            .fold(0u32, |v, &d| v * 8 + u32::from(d - b'0'));
        return ((value & 0xff) as u8, 1 + j);
    }
    let c = match input[i + 1] {
        b'a' => 0x07,
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'v' => 0x0b,
        other => other,
    };
    (c, 2)
}

/// Decodes JavaScript escapes; `false` when there is none.
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
        assert!(apply(b"\\x41\\u0042\\uff01\\101\\477\\n\\q\\", &mut out));
        assert_eq!(out, b"AB!A'7\nq\\");
    }
}
