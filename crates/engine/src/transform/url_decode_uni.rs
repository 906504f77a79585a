//! `t:urlDecodeUni`: `urlDecode` plus the IIS-specific `%uHHHH` form.
//!
//! * `%uHHHH` / `%UHHHH` with four valid hex digits becomes one byte: the low
//!   byte `0xHH` of the code point, except that the full-width ASCII range
//!   U+FF01..U+FF5E is mapped to ASCII 0x21..0x7E (low byte + 0x20), as
//!   libmodsecurity does when no `SecUnicodeMapFile` is configured (Palisade
//!   does not support unicode map files);
//! * `%u` not followed by four hex digits is copied as-is (`%u` both bytes) and
//!   decoding resumes after them;
//! * `%HH`, `+` and invalid `%` escapes behave as in `urlDecode`.

use super::util::{is_hex, x2c};
use memchr::memchr2;

/// Decodes `%uHHHH`'s value to one byte as libmodsecurity does without a map.
pub(crate) fn unicode_low_byte(h1: u8, h2: u8, h3: u8, h4: u8) -> u8 {
    let low = x2c(h3, h4);
    let full_width = matches!(h1, b'f' | b'F') && matches!(h2, b'f' | b'F');
    if full_width && low > 0x00 && low < 0x5f {
        low + 0x20
    } else {
        low
    }
}

/// Decodes the input; `false` when there is nothing to decode.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(mut i) = memchr2(b'%', b'+', input) else {
        return false;
    };
    let len = input.len();
    out.reserve(len);
    out.extend_from_slice(&input[..i]);
    let mut changed = false;
    while i < len {
        match input[i] {
            b'%' if i + 1 < len && matches!(input[i + 1], b'u' | b'U') => {
                if i + 5 < len && input[i + 2..i + 6].iter().all(|&b| is_hex(b)) {
                    out.push(unicode_low_byte(
                        input[i + 2],
                        input[i + 3],
                        input[i + 4],
                        input[i + 5],
                    ));
                    i += 6;
                    changed = true;
                } else {
                    out.extend_from_slice(&input[i..i + 2]);
                    i += 2;
                }
            }
            b'%' if i + 2 < len && is_hex(input[i + 1]) && is_hex(input[i + 2]) => {
                out.push(x2c(input[i + 1], input[i + 2]));
                i += 3;
                changed = true;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
                changed = true;
            }
            b => {
                out.push(b);
                i += 1;
                let next = memchr2(b'%', b'+', &input[i..]).map_or(len, |p| i + p);
                out.extend_from_slice(&input[i..next]);
                i = next;
            }
        }
    }
    if !changed {
        out.clear();
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::apply;

    #[test]
    fn unicode_forms() {
        let mut out = Vec::new();
        assert!(apply(b"%u0041%uFF1C%u4e2d%u12", &mut out));
        assert_eq!(out, b"A<\x2d%u12");
    }
}
