//! `t:removeWhitespace`: removes every whitespace byte: `isspace()` in the C
//! locale (space, `\t`, `\n`, `\v`, `\f`, `\r`) plus the two bytes of the UTF-8
//! encoded NBSP, 0xC2 and 0xA0, each removed wherever it appears, as
//! libmodsecurity 3.0.12+ does.

use super::util::is_c_space;

/// Whether libmodsecurity's `removeWhitespace` removes this byte.
fn is_removed(b: u8) -> bool {
    is_c_space(b) || b == 0xa0 || b == 0xc2
}

/// 1 for the bytes kept, by byte value.
static KEPT: [u8; 256] = {
    let mut t = [1u8; 256];
    let removed = [b' ', b'\t', b'\n', 0x0b, 0x0c, b'\r', 0xa0, 0xc2];
    let mut i = 0;
    while i < removed.len() {
        t[removed[i] as usize] = 0;
        i += 1;
    }
    t
};

/// The bytes it removes.
pub(crate) fn removed() -> super::triggers::ByteMask {
    let mut m = [0u64; 4];
    for (b, &kept) in KEPT.iter().enumerate() {
        if kept == 0 {
            m[b >> 6] |= 1 << (b & 63);
        }
    }
    m
}

/// Removes whitespace; `false` when there is none.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(first) = input.iter().position(|&b| is_removed(b)) else {
        return false;
    };
    // Every byte is written and the length advances past the kept ones: no
    // branch per byte (long values such as response bodies are mostly text).
    out.extend_from_slice(input);
    let mut n = first;
    for &b in &input[first..] {
        out[n] = b;
        n += usize::from(KEPT[usize::from(b)]);
    }
    out.truncate(n);
    true
}

#[cfg(test)]
mod tests {
    use super::{apply, is_removed, KEPT};

    #[test]
    fn the_table_and_the_predicate_agree_and_apply_filters() {
        for b in 0..=255u8 {
            assert_eq!(KEPT[usize::from(b)] == 0, is_removed(b), "{b:#x}");
        }
        let input: Vec<u8> = (0..3000u32).map(|i| (i * 37 % 256) as u8).collect();
        let mut out = Vec::new();
        assert!(apply(&input, &mut out));
        let expected: Vec<u8> = input.iter().copied().filter(|&b| !is_removed(b)).collect();
        assert_eq!(out, expected);
        assert!(!apply(b"nothing_to_remove", &mut out));
        assert!(apply(b" a b ", &mut out));
        assert_eq!(out, b"ab");
    }
}
