//! `t:hexDecode`: decodes pairs of hexadecimal digits into bytes.
//!
//! Like libmodsecurity, the input is not validated: every pair of bytes is
//! converted with ModSecurity's `x2c()` arithmetic (so a non-hex byte gives a
//! deterministic but meaningless value) and a trailing odd byte is dropped.

use super::util::x2c;

/// Hex-decodes the input; `false` only for the empty input.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    if input.is_empty() {
        return false;
    }
    out.reserve(input.len() / 2);
    out.extend(input.chunks_exact(2).map(|p| x2c(p[0], p[1])));
    true
}
