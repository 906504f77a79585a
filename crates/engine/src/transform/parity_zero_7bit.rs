//! `t:parityZero7bit`: clears bit 7 of every byte.

use super::parity_even_7bit::map_bytes;

/// Clears the high bit of every byte; `false` when no byte has it set.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    map_bytes(input, out, |b| b & 0x7f)
}
