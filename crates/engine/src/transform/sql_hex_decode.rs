//! `t:sqlHexDecode`: decodes SQL hexadecimal literals.
//!
//! `0x` or `0X` followed by at least one pair of hex digits is replaced by the
//! decoded bytes (`0x414243` is `ABC`); decoding takes as many complete pairs as
//! follow, so an odd trailing digit is kept (`0x4142a` is `ABa`). A `0x` with
//! fewer than two hex digits after it is copied unchanged. The literal may
//! appear anywhere, even inside a word (`a0x41` is `aA`).

use super::util::{is_hex, x2c};

/// Decodes `0xHH..` literals; `false` when there is none.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let len = input.len();
    let starts_literal = |i: usize| {
        i + 3 < len
            && input[i] == b'0'
            && matches!(input[i + 1], b'x' | b'X')
            && is_hex(input[i + 2])
            && is_hex(input[i + 3])
    };
    let Some(first) = memchr::memchr_iter(b'0', input).find(|&i| starts_literal(i)) else {
        return false;
    };
    out.reserve(len);
    out.extend_from_slice(&input[..first]);
    let mut i = first;
    while i < len {
        if starts_literal(i) {
            i += 2;
            loop {
                out.push(x2c(input[i], input[i + 1]));
                i += 2;
                if !(i + 1 < len && is_hex(input[i]) && is_hex(input[i + 1])) {
                    break;
                }
            }
        } else {
            out.push(input[i]);
            i += 1;
        }
    }
    true
}
