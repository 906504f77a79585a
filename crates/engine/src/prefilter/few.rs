//! A handful of literals searched for directly in a value less some deleted bytes:
//! the long-value scan under a chain that only deletes bytes, when the rules read
//! through that chain have few literals (CRS: one, 955300's `<title>punkholicshell`
//! under `t:removeWhitespace,t:lowercase`).
//!
//! The long-value automaton costs one table lookup per byte of the response body
//! whatever the literals; a literal whose first byte is rare in the body (`<` in
//! HTML) is found by jumping between that byte's occurrences (`memchr`, many bytes
//! per instruction) and comparing the bytes that follow, deleted bytes skipped.
//! A candidate compares at most the literal's length in kept bytes, and a byte is
//! walked over only by the candidates among the [`crate::prefilter::PREFIX_MAX`]
//! kept bytes before it: linear in the value.
//!
//! The result is the automaton's on the same literals: an ASCII-case-insensitive
//! occurrence in the value without its deleted bytes.

/// Most literals searched this way; more go through the automaton.
pub(crate) const FEW_MAX: usize = 4;

/// Lower-cased literals, each with the rule bits it sets.
#[derive(Debug, Clone)]
pub(crate) struct FewLiterals {
    literals: Vec<(Vec<u8>, Vec<u32>)>,
}

impl FewLiterals {
    /// The search for `literals` (lower-cased, with their rules' bits); `None` for
    /// more than [`FEW_MAX`].
    pub fn build(literals: Vec<Vec<u8>>, literal_rules: Vec<Vec<u32>>) -> Option<FewLiterals> {
        (literals.len() <= FEW_MAX).then(|| FewLiterals {
            literals: literals.into_iter().zip(literal_rules).collect(),
        })
    }

    /// Sets in `scan` the bits of every literal occurring in `value` without the
    /// bytes `deleted` marks (a set without letters).
    pub fn scan_into(&self, value: &[u8], deleted: &[bool; 256], scan: &mut [u64]) {
        for (lit, bits) in &self.literals {
            if occurs_without(value, lit, deleted) {
                for &r in bits {
                    if let Some(w) = scan.get_mut((r / 64) as usize) {
                        *w |= 1 << (r % 64);
                    }
                }
            }
        }
    }
}

/// Whether lower-cased `lit` occurs, ASCII case-insensitively, in `value` with the
/// bytes `deleted` marks taken out.
pub(crate) fn occurs_without(value: &[u8], lit: &[u8], deleted: &[bool; 256]) -> bool {
    let Some((&first, rest)) = lit.split_first() else {
        // The empty literal occurs in every value.
        return true;
    };
    // The value left has no deleted byte (none is a letter, so case is no matter).
    if lit.iter().any(|&b| deleted[usize::from(b)]) {
        return false;
    }
    let (lower, upper) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    let follows = |i: usize| {
        let mut want = rest.iter();
        let mut next = want.next();
        for &b in value.get(i + 1..).unwrap_or_default() {
            let Some(&w) = next else { break };
            if deleted[usize::from(b)] {
                continue;
            }
            if b.to_ascii_lowercase() != w {
                return false;
            }
            next = want.next();
        }
        next.is_none()
    };
    // A first byte without case (`<`) is one byte to search for, which memchr
    // finds with fewer instructions per call than either of two.
    if lower == upper {
        memchr::memchr_iter(lower, value).any(follows)
    } else {
        memchr::memchr2_iter(lower, upper, value).any(follows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn whitespace() -> [bool; 256] {
        let mut d = [false; 256];
        for b in [b' ', b'\t', b'\n', b'\r', 0x0b, 0x0c] {
            d[usize::from(b)] = true;
        }
        d
    }

    /// The reference: the value without its deleted bytes, lower-cased, searched.
    fn reference(value: &[u8], lit: &[u8], deleted: &[bool; 256]) -> bool {
        let left: Vec<u8> = value
            .iter()
            .filter(|&&b| !deleted[usize::from(b)])
            .map(u8::to_ascii_lowercase)
            .collect();
        lit.is_empty() || left.windows(lit.len()).any(|w| w == lit)
    }

    #[test]
    fn finds_literals_spread_by_deleted_bytes_in_any_case() {
        let d = whitespace();
        let lit = b"<title>p";
        for (value, expected) in [
            (&b"<html><TITLE>PunkHolic"[..], true),
            (b"< t i t l e >\n\tp", true),
            (b"<title >x<title>p", true),
            (b"<titl", false),
            (b"title>p", false),
            (b"<<title>p", true),
            (b"<title-p", false),
            (b"", false),
        ] {
            assert_eq!(occurs_without(value, lit, &d), expected, "{value:?}");
            assert_eq!(reference(value, lit, &d), expected, "{value:?}");
        }
        // A literal holding a deleted byte never occurs; the empty one always does.
        assert!(!occurs_without(b"a b", b"a b", &d));
        assert!(occurs_without(b"", b"", &d));
        // Only the bits of the literals found are set.
        let few = FewLiterals::build(
            vec![b"<title>p".to_vec(), b"zz".to_vec()],
            vec![vec![0, 65], vec![1]],
        )
        .unwrap_or_else(|| panic!("few"));
        let mut scan = [0u64; 2];
        few.scan_into(b"< TITLE >p z", &d, &mut scan);
        assert_eq!(scan, [1, 2]);
        assert!(
            FewLiterals::build(vec![Vec::new(); FEW_MAX + 1], vec![Vec::new(); FEW_MAX + 1])
                .is_none()
        );
    }

    proptest! {
        #[test]
        fn agrees_with_searching_the_value_left(
            value in proptest::collection::vec(
                prop_oneof![Just(b' '), Just(b'\t'), Just(b'a'), Just(b'A'), Just(b'b'), Just(b'<'), any::<u8>()],
                0..64,
            ),
            lit in proptest::collection::vec(
                prop_oneof![Just(b'a'), Just(b'b'), Just(b'<'), Just(b' ')],
                0..4,
            ),
        ) {
            let d = whitespace();
            prop_assert_eq!(occurs_without(&value, &lit, &d), reference(&value, &lit, &d));
        }
    }
}
