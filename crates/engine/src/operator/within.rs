//! `@within`: whether the input occurs inside the argument (the argument is the
//! haystack, e.g. `@within GET POST HEAD` on `REQUEST_METHOD`).
//!
//! As libmodsecurity v3 (`within.cc`): an empty input always matches, and the search
//! is a plain substring search, so `@within GET POST` also matches `ET P`. Nothing is
//! captured.
//!
//! The haystack is fixed and the input changes, so the haystack is indexed once:
//! its positions grouped by the byte there. An input is compared only where the
//! haystack holds its first byte (CRS lists wrap each name in `/`, which leaves a
//! few dozen places to compare `/name/` at).

use super::{Captures, Operator};

/// The `@within` operator.
#[derive(Debug)]
pub(crate) struct Within {
    haystack: Box<[u8]>,
    /// `positions[starts[b]..starts[b + 1]]`: where byte `b` occurs, in order.
    starts: Box<[u32]>,
    positions: Box<[u32]>,
}

impl Within {
    /// Keeps and indexes the argument.
    pub(crate) fn new(argument: &str) -> Self {
        let haystack: Box<[u8]> = argument.as_bytes().into();
        let mut counts = [0u32; 257];
        for &b in haystack.iter() {
            counts[usize::from(b) + 1] += 1;
        }
        let mut total = 0;
        for c in counts.iter_mut() {
            total += *c;
            *c = total;
        }
        let starts: Box<[u32]> = counts.into();
        let mut next = counts;
        let mut positions = vec![0u32; haystack.len()];
        for (p, &b) in haystack.iter().enumerate() {
            let slot = &mut next[usize::from(b)];
            positions[*slot as usize] = p as u32;
            *slot += 1;
        }
        Within {
            haystack,
            starts,
            positions: positions.into(),
        }
    }
}

impl Operator for Within {
    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        let Some(&first) = input.first() else {
            return true;
        };
        let b = usize::from(first);
        let (from, to) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        // The second byte is tested before the whole input is compared: with every
        // name of a CRS list starting at a `/`, it rejects nearly every place.
        let second = input.get(1);
        self.positions[from..to].iter().any(|&p| {
            let p = p as usize;
            (second.is_none() || self.haystack.get(p + 1) == second)
                && self
                    .haystack
                    .get(p..)
                    .is_some_and(|rest| rest.starts_with(input))
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
}
