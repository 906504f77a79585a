//! `t:cssDecode`: CSS 2 escapes (<https://www.w3.org/TR/CSS2/syndata.html#escaped-characters>),
//! as libmodsecurity decodes them.
//!
//! * `\` followed by 1 to 6 hex digits: one byte, made of the last two digits
//!   (one digit: its value). With exactly 4 digits, or 5 starting with `0`, or 6
//!   starting with `00`, the full-width ASCII rule applies (`\ff01` is `!`);
//!   otherwise the low byte is used as-is (`\10041` is `A`);
//! * one whitespace byte right after a hex escape is swallowed;
//! * `\` followed by a newline: both are removed (line continuation);
//! * `\` followed by any other byte: that byte, without the backslash;
//! * a `\` at the very end is removed.

use super::util::{is_c_space, is_hex, x2c, xsingle2c};
use memchr::memchr;

/// Decodes CSS escapes; `false` when there is no backslash.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let len = input.len();
    let Some(first) = memchr(b'\\', input) else {
        return false;
    };
    out.reserve(len);
    out.extend_from_slice(&input[..first]);
    let mut i = first;
    while i < len {
        if input[i] != b'\\' {
            let next = memchr(b'\\', &input[i..]).map_or(len, |p| i + p);
            out.extend_from_slice(&input[i..next]);
            i = next;
            continue;
        }
        // Skip the backslash.
        i += 1;
        if i >= len {
            // Continuation to nothing: the backslash is dropped.
            break;
        }
        let mut j = 0;
        while j < 6 && i + j < len && is_hex(input[i + j]) {
            j += 1;
        }
        if j > 0 {
            let low = if j == 1 {
                xsingle2c(input[i])
            } else {
                x2c(input[i + j - 2], input[i + j - 1])
            };
            let full_check = match j {
                4 => true,
                5 => input[i] == b'0',
                6 => input[i] == b'0' && input[i + 1] == b'0',
                _ => false,
            };
            let full_width = full_check
                && low > 0x00
                && low < 0x5f
                && matches!(input[i + j - 3], b'f' | b'F')
                && matches!(input[i + j - 4], b'f' | b'F');
            out.push(if full_width { low + 0x20 } else { low });
            // A single whitespace after a hex escape is part of the escape.
            if i + j < len && is_c_space(input[i + j]) {
                j += 1;
            }
            i += j;
        } else if input[i] == b'\n' {
            i += 1;
        } else {
            out.push(input[i]);
            i += 1;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::apply;

    #[test]
    fn escapes() {
        let mut out = Vec::new();
        assert!(apply(b"\\41 b\\ff01\\10041\\\nx\\zy\\", &mut out));
        assert_eq!(out, b"Ab!Axzy");
    }
}
