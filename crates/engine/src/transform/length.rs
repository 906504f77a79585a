//! `t:length`: replaces the value with its length in bytes, in decimal.

use super::util::finish;
use std::io::Write;

/// Writes the decimal length; `false` only when the input already is its own
/// length (the single byte `1`).
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{}", input.len());
    finish(input, out)
}
