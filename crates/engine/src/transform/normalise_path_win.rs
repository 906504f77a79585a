//! `t:normalisePathWin` (alias `normalizePathWin`): like `normalisePath`, after
//! converting every backslash to a forward slash (so the result only contains
//! `/` separators: `C:\a\..\b` is `C:/b`).

use super::normalise_path::{may_change, normalize_into};
use super::util::finish;
use memchr::memchr;

/// Normalises a Windows path; `false` when it is already normal.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(first) = memchr(b'\\', input) else {
        return super::normalise_path::apply(input, out);
    };
    let mut slashed = input.to_vec();
    for b in &mut slashed[first..] {
        if *b == b'\\' {
            *b = b'/';
        }
    }
    if may_change(&slashed) {
        normalize_into(&slashed, out);
    } else {
        *out = slashed;
    }
    finish(input, out)
}
