//! `t:trim`: removes leading and trailing whitespace, where whitespace is
//! `isspace()` in the C locale (space, `\t`, `\n`, `\v`, `\f`, `\r`; not NBSP).

use super::util::is_c_space;

/// The input without its leading whitespace.
pub(crate) fn trim_start(input: &[u8]) -> &[u8] {
    let start = input
        .iter()
        .position(|&b| !is_c_space(b))
        .unwrap_or(input.len());
    &input[start..]
}

/// The input without its trailing whitespace.
pub(crate) fn trim_end(input: &[u8]) -> &[u8] {
    let end = input
        .iter()
        .rposition(|&b| !is_c_space(b))
        .map_or(0, |p| p + 1);
    &input[..end]
}

/// Writes `kept` (a sub-slice of `input`) as the result.
pub(crate) fn keep(input: &[u8], kept: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    if kept.len() == input.len() {
        return false;
    }
    out.extend_from_slice(kept);
    true
}

/// Trims whitespace on both sides; `false` when there is none to trim.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    keep(input, trim_start(trim_end(input)), out)
}
