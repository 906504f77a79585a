//! `t:trimLeft`: removes leading whitespace (`isspace()` in the C locale).

use super::trim::{keep, trim_start};

/// Trims leading whitespace; `false` when there is none.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    keep(input, trim_start(input), out)
}
