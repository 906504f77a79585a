//! `@eq`: whether the input, read as an integer, equals the argument.
//!
//! As libmodsecurity v3: `std::stoi` on both sides (out-of-`int`-range values count as 0), see [`super::number`]. Text that does not start with
//! a number counts as 0, so `@eq 0` on an empty or non-numeric value compares 0.
//! The argument is parsed once at load time (arguments with macros are expanded and
//! rebuilt by the engine).

use super::{number, Captures, Operator};

/// The `@eq` operator.
#[derive(Debug)]
pub(crate) struct Eq {
    value: i64,
}

impl Eq {
    /// Parses the argument.
    pub(crate) fn new(argument: &str) -> Self {
        Eq {
            value: number::stoi(argument.as_bytes()),
        }
    }
}

impl Operator for Eq {
    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        number::stoi(input) == self.value
    }
}
