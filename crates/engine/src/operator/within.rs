//! `@within`: whether the input occurs inside the argument (the argument is the
//! haystack, e.g. `@within GET POST HEAD` on `REQUEST_METHOD`).
//!
//! As libmodsecurity v3 (`within.cc`): an empty input always matches, and the search
//! is a plain substring search, so `@within GET POST` also matches `ET P`. Nothing is
//! captured.
//!
//! The haystack is fixed and the input changes, so the haystack is indexed once:
//! its positions grouped by the two bytes there. An input is compared only where
//! the haystack holds its first two bytes (CRS lists wrap each name in `/`, which
//! leaves one or a few places to compare `/name/` at); a one-byte input is one
//! byte search.

use rustc_hash::FxHashMap;

use super::{Captures, Operator};

/// The `@within` operator.
#[derive(Debug)]
pub(crate) struct Within {
    haystack: Box<[u8]>,
    /// Per pair of bytes (first byte low): the range of `positions` where the
    /// pair starts.
    pairs: FxHashMap<u16, (u32, u32)>,
    /// Positions grouped by the pair starting there, each group in order.
    positions: Box<[u32]>,
}

/// The key of a pair of bytes.
#[inline]
fn pair(a: u8, b: u8) -> u16 {
    u16::from_le_bytes([a, b])
}

impl Within {
    /// Keeps and indexes the argument.
    pub(crate) fn new(argument: &str) -> Self {
        let haystack: Box<[u8]> = argument.as_bytes().into();
        let mut at: Vec<(u16, u32)> = haystack
            .windows(2)
            .enumerate()
            .map(|(p, w)| (pair(w[0], w[1]), p as u32))
            .collect();
        at.sort_unstable();
        let mut pairs = FxHashMap::default();
        let mut from = 0u32;
        for group in at.chunk_by(|a, b| a.0 == b.0) {
            let to = from + group.len() as u32;
            pairs.insert(group[0].0, (from, to));
            from = to;
        }
        Within {
            haystack,
            pairs,
            positions: at.into_iter().map(|(_, p)| p).collect(),
        }
    }
}

impl Operator for Within {
    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        let (first, rest) = match input {
            [] => return true,
            [b] => return memchr::memchr(*b, &self.haystack).is_some(),
            [a, b, rest @ ..] => (pair(*a, *b), rest),
        };
        let Some(&(from, to)) = self.pairs.get(&first) else {
            return false;
        };
        self.positions
            .get(from as usize..to as usize)
            .unwrap_or_default()
            .iter()
            .any(|&p| {
                self.haystack
                    .get(p as usize + 2..)
                    .is_some_and(|h| h.starts_with(rest))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_exactly_the_substrings_of_the_argument() {
        let list = "/content-encoding/ /proxy/ /lock-token/ /content-range/ /if/ ";
        let w = Within::new(list);
        let subs = |n: &[u8]| list.as_bytes().windows(n.len()).any(|x| x == n);
        for input in [
            &b"/proxy/"[..],
            b"/if/",
            b"/range/",
            b"/content-",
            b"n-range/ /if/ ",
            b"/if/ x",
            b"proxy",
            b"/",
            b" ",
            b"/PROXY/",
            b"\xff",
        ] {
            assert_eq!(w.evaluate(input, None), subs(input), "{input:?}");
        }
        // Every substring is found; each with one byte changed is found exactly
        // when it is still a substring.
        let bytes = list.as_bytes();
        for i in 0..bytes.len() {
            for j in i + 1..=bytes.len().min(i + 12) {
                let sub = &bytes[i..j];
                assert!(w.evaluate(sub, None), "{sub:?}");
                for k in 0..sub.len() {
                    let mut m = sub.to_vec();
                    m[k] = if m[k] == b'/' { b'-' } else { b'/' };
                    assert_eq!(w.evaluate(&m, None), subs(&m), "{m:?}");
                }
            }
        }
        assert!(w.evaluate(b"", None));
        assert!(Within::new("").evaluate(b"", None));
        assert!(!Within::new("").evaluate(b"a", None));
        assert!(Within::new("GET POST").evaluate(b"ET P", None));
    }

    proptest::proptest! {
        /// On any haystack and input over a small alphabet (so that pairs
        /// repeat), the indexed search agrees with a plain substring search.
        #[test]
        fn agrees_with_a_plain_substring_search(
            haystack in "[ab/ ]{0,40}",
            input in proptest::collection::vec(proptest::sample::select(b"ab/ x".to_vec()), 0..6),
        ) {
            let w = Within::new(&haystack);
            let plain = input.is_empty()
                || haystack.as_bytes().windows(input.len()).any(|x| x == input.as_slice());
            proptest::prop_assert_eq!(w.evaluate(&input, None), plain);
        }
    }
}
