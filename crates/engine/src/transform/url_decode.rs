//! `t:urlDecode`: URL decoding as libmodsecurity's non-strict decoder does it.
//!
//! * `%HH` with two valid hex digits (either case) becomes the byte `0xHH`;
//! * `+` becomes a space;
//! * a `%` not followed by two hex digits (`%zz`, `%4`, a `%` at the very end)
//!   is kept as it is, and decoding resumes right after that `%`;
//! * `%uHHHH` is not special here (see `urlDecodeUni`): `%u` is kept as-is.

use super::util::{is_hex, x2c};
use memchr::memchr2;

/// URL-decodes the input; `false` when there is nothing to decode.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(mut i) = memchr2(b'%', b'+', input) else {
        return false;
    };
    out.reserve(input.len());
    out.extend_from_slice(&input[..i]);
    let mut changed = false;
    while i < input.len() {
        match input[i] {
            b'%' if i + 2 < input.len() && is_hex(input[i + 1]) && is_hex(input[i + 2]) => {
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
                // Copy the run up to the next special byte in one go.
                let next = memchr2(b'%', b'+', &input[i..]).map_or(input.len(), |p| i + p);
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
    fn decodes_and_keeps_invalid() {
        let mut out = Vec::new();
        assert!(apply(b"a%41+%zz%4", &mut out));
        assert_eq!(out, b"aA %zz%4");
        assert!(!apply(b"100%", &mut out));
        assert!(out.is_empty());
    }
}
