//! `@validateByteRange`: matches when the input contains a byte outside the allowed
//! ranges.
//!
//! The argument is a comma-separated list of byte values and inclusive ranges
//! (`9,10,13,32-126,128-255`). Each number is read as C++ `std::stoi` reads it (leading
//! whitespace, optional sign, digits, anything after is ignored), as in
//! libmodsecurity v3 (`validate_byte_range.cc`); a part without a number, a value
//! outside 0-255 or a reversed range is an invalid argument (ModSecurity rejects the
//! rule too, except that it does not check single values, which here are checked).
//! An empty part (`1,,2`) is invalid as in ModSecurity. An empty input never
//! matches.
//!
//! Every input it matches holds a byte outside the ranges: that set is its
//! prefilter byte requirement, so a value without such a byte (most values, for
//! CRS 920270's `1-255`) is ruled out by its presence set alone.

use super::{number, Captures, Operator, OperatorError};
use crate::prefilter::bytes::{ByteReq, ByteSet};

/// The `@validateByteRange` operator.
#[derive(Debug)]
pub(crate) struct ValidateByteRange {
    allowed: [bool; 256],
}

fn value(text: &str, whole: &str) -> Result<u8, OperatorError> {
    let t = text.as_bytes();
    let trimmed = t
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r'))
        .map_or(&t[t.len()..], |p| &t[p..]);
    let has_digit = match trimmed {
        [b'+' | b'-', d, ..] | [d, ..] => d.is_ascii_digit(),
        [] => false,
    };
    if !has_digit {
        return Err(OperatorError::InvalidArgument(format!(
            "@validateByteRange `{whole}`: `{text}` is not a number"
        )));
    }
    let v = number::atoll(t);
    u8::try_from(v).map_err(|_| {
        OperatorError::InvalidArgument(format!(
            "@validateByteRange `{whole}`: {v} is not a byte value (0-255)"
        ))
    })
}

impl ValidateByteRange {
    /// Parses the list of ranges.
    pub(crate) fn new(argument: &str) -> Result<Self, OperatorError> {
        let mut allowed = [false; 256];
        for part in argument.split(',') {
            let (lo, hi) = match part.split_once('-') {
                // A leading '-' would be a sign: ModSecurity splits at the first '-'
                // anyway, so "-5" is an empty start.
                Some((a, b)) => (value(a, argument)?, value(b, argument)?),
                None => {
                    let v = value(part, argument)?;
                    (v, v)
                }
            };
            if lo > hi {
                return Err(OperatorError::InvalidArgument(format!(
                    "@validateByteRange `{argument}`: invalid range {lo}-{hi}"
                )));
            }
            for b in lo..=hi {
                allowed[usize::from(b)] = true;
            }
        }
        Ok(ValidateByteRange { allowed })
    }
}

impl Operator for ValidateByteRange {
    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        input.iter().any(|&b| !self.allowed[usize::from(b)])
    }

    fn required_bytes(&self) -> Option<ByteReq> {
        // `insert` folds letters to lower case as presence sets do: a value with
        // `A` outside the ranges has `a` in its presence, which the set then holds.
        let mut outside = ByteSet::default();
        for (b, &ok) in (0..=255u8).zip(&self.allowed) {
            if !ok {
                outside.insert(b);
            }
        }
        // No byte outside (`0-255`): it never matches; the empty set admits no value.
        if outside.is_empty() {
            return Some(ByteReq::never());
        }
        ByteReq::new(vec![outside])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn presence(v: &[u8]) -> [u64; 4] {
        let mut p = [0u64; 4];
        crate::prefilter::bytes::presence(v, &mut p);
        p
    }

    #[test]
    fn requires_a_byte_outside_the_ranges() {
        let op = ValidateByteRange::new("1-255").expect("valid");
        let req = op.required_bytes().expect("a requirement");
        assert!(!req.admits(&presence(b"GET /index.html?a=1")));
        assert!(req.admits(&presence(b"a\0b")));
        // Upper-case letters outside the ranges: presence folds them, so does the set.
        let op = ValidateByteRange::new("0-64,66-255").expect("valid");
        let req = op.required_bytes().expect("a requirement");
        assert!(op.evaluate(b"bAc", None));
        assert!(req.admits(&presence(b"bAc")));
        assert!(!req.admits(&presence(b"bBc")));
        // CRS 920271's ranges (PL2): the control bytes and DEL.
        let op = ValidateByteRange::new("9,10,13,32-126,128-255").expect("valid");
        let req = op.required_bytes().expect("a requirement");
        assert!(!req.admits(&presence(b"a b\tc")));
        assert!(req.admits(&presence(b"a\x7fb")));
        // A set too common to rule much out (every letter) is not kept.
        let op = ValidateByteRange::new("0-64,91-255").expect("valid");
        assert!(op.required_bytes().is_none());
        // Nothing outside: never matches, admits nothing.
        let op = ValidateByteRange::new("0-255").expect("valid");
        let req = op.required_bytes().expect("a requirement");
        assert!(!op.evaluate(b"\0\xff", None));
        assert!(!req.admits(&presence(b"\0\xff")));
    }

    proptest! {
        /// The requirement never rules out a value the operator matches.
        #[test]
        fn every_match_is_admitted(
            ranges in prop::collection::vec((any::<u8>(), any::<u8>()), 1..4),
            value in prop::collection::vec(any::<u8>(), 0..12),
        ) {
            let arg = ranges
                .iter()
                .map(|&(a, b)| format!("{}-{}", a.min(b), a.max(b)))
                .collect::<Vec<_>>()
                .join(",");
            let op = ValidateByteRange::new(&arg).expect("valid");
            if let (true, Some(req)) = (op.evaluate(&value, None), op.required_bytes()) {
                prop_assert!(req.admits(&presence(&value)), "{} on {:?}", arg, value);
            }
        }
    }
}
