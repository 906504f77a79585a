//! `t:trimRight`: removes trailing whitespace (`isspace()` in the C locale).

use super::trim::{keep, trim_end};

/// Trims trailing whitespace; `false` when there is none.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    keep(input, trim_end(input), out)
}
