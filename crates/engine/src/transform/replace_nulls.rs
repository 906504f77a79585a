//! `t:replaceNulls`: replaces every NUL (0x00) byte with a space (0x20).

use memchr::memchr;

/// Replaces NUL bytes with spaces; `false` when there is none.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(first) = memchr(0, input) else {
        return false;
    };
    out.extend_from_slice(input);
    for b in &mut out[first..] {
        if *b == 0 {
            *b = b' ';
        }
    }
    true
}
