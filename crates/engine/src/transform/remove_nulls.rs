//! `t:removeNulls`: removes every NUL (0x00) byte.

use memchr::memchr;

/// Removes NUL bytes; `false` when there is none.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(first) = memchr(0, input) else {
        return false;
    };
    out.reserve(input.len() - 1);
    out.extend_from_slice(&input[..first]);
    out.extend(input[first..].iter().copied().filter(|&b| b != 0));
    true
}
