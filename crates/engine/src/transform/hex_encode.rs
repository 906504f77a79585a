//! `t:hexEncode`: encodes every byte as two lowercase hexadecimal digits.

use super::util::HEX_LOWER;

/// Hex-encodes the input; `false` only for the empty input.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    if input.is_empty() {
        return false;
    }
    out.reserve(input.len() * 2);
    for &b in input {
        out.push(HEX_LOWER[usize::from(b >> 4)]);
        out.push(HEX_LOWER[usize::from(b & 0x0f)]);
    }
    true
}
