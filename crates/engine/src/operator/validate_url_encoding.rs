//! `@validateUrlEncoding`: matches when the input is not valid URL encoding.
//!
//! As libmodsecurity v3 (`validate_url_encoding.cc`): every `%` must be followed by two
//! hexadecimal digits; a `%` with fewer than two bytes after it ("not enough
//! characters") or with a non-hex byte after it ("non-hexadecimal") is invalid. An
//! empty input never matches. Other bytes (including non-ASCII and `+`) are not
//! checked.

use super::{Captures, Operator};

/// The `@validateUrlEncoding` operator.
#[derive(Debug)]
pub(crate) struct ValidateUrlEncoding;

impl Operator for ValidateUrlEncoding {
    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        let mut i = 0;
        while let Some(p) = memchr::memchr(b'%', &input[i..]) {
            let at = i + p;
            match (input.get(at + 1), input.get(at + 2)) {
                (Some(a), Some(b)) if a.is_ascii_hexdigit() && b.is_ascii_hexdigit() => {
                    i = at + 3;
                }
                _ => return true,
            }
        }
        false
    }
}
