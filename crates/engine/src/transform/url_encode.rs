//! `t:urlEncode`: libmodsecurity's URL encoder. Only `*`, `0-9`, `A-Z` and `a-z`
//! are kept as they are; a space becomes `+`; every other byte (including
//! `-`, `.`, `_` and `~`) becomes `%hh` with lowercase hex digits.

use super::util::HEX_LOWER;

/// Whether the byte is copied unencoded.
fn is_kept(b: u8) -> bool {
    b == b'*' || b.is_ascii_alphanumeric()
}

/// URL-encodes the input; `false` when every byte is kept as it is.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(first) = input.iter().position(|&b| !is_kept(b)) else {
        return false;
    };
    out.reserve(input.len() + 2 * (input.len() - first));
    out.extend_from_slice(&input[..first]);
    for &b in &input[first..] {
        if is_kept(b) {
            out.push(b);
        } else if b == b' ' {
            out.push(b'+');
        } else {
            out.extend_from_slice(&[
                b'%',
                HEX_LOWER[usize::from(b >> 4)],
                HEX_LOWER[usize::from(b & 0x0f)],
            ]);
        }
    }
    true
}
