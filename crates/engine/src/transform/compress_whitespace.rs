//! `t:compressWhitespace`: replaces each run of whitespace with a single space.
//! Whitespace is `isspace()` in the C locale (space, `\t`, `\n`, `\v`, `\f`,
//! `\r`); libmodsecurity v3 does not treat NBSP (0xA0) as whitespace here.

use super::util::is_c_space;

/// Compresses whitespace; `false` when there is no run to compress and no
/// whitespace other than single spaces.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    // The first position where the output differs: a whitespace byte that is not
    // a space, or a whitespace byte following another one.
    let first = input
        .iter()
        .enumerate()
        .position(|(i, &b)| is_c_space(b) && (b != b' ' || (i > 0 && is_c_space(input[i - 1]))));
    let Some(first) = first else {
        return false;
    };
    out.reserve(input.len());
    out.extend_from_slice(&input[..first]);
    let mut in_space = first > 0 && is_c_space(input[first - 1]);
    for &b in &input[first..] {
        if is_c_space(b) {
            if !in_space {
                out.push(b' ');
                in_space = true;
            }
        } else {
            out.push(b);
            in_space = false;
        }
    }
    true
}
