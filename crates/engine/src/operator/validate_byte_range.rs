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

use super::{number, Captures, Operator, OperatorError};

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
}
