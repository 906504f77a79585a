//! `t:removeWhitespace`: removes every whitespace byte: `isspace()` in the C
//! locale (space, `\t`, `\n`, `\v`, `\f`, `\r`) plus the two bytes of the UTF-8
//! encoded NBSP, 0xC2 and 0xA0, each removed wherever it appears, as
//! libmodsecurity 3.0.12+ does.

use super::util::is_c_space;

/// Whether libmodsecurity's `removeWhitespace` removes this byte.
fn is_removed(b: u8) -> bool {
    is_c_space(b) || b == 0xa0 || b == 0xc2
}

/// Removes whitespace; `false` when there is none.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(first) = input.iter().position(|&b| is_removed(b)) else {
        return false;
    };
    out.reserve(input.len() - 1);
    out.extend_from_slice(&input[..first]);
    out.extend(input[first..].iter().copied().filter(|&b| !is_removed(b)));
    true
}
