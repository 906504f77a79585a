//! `@gt`: whether the input, read as an integer, is greater than the argument.
//!
//! As libmodsecurity v3: C `atoll` on both sides, see [`super::number`]. Text that does not start with
//! a number counts as 0, so `@gt 0` on an empty or non-numeric value compares 0.
//! The argument is parsed once at load time (arguments with macros are expanded and
//! rebuilt by the engine).

use super::{number, Captures, Operator};

/// The `@gt` operator.
#[derive(Debug)]
pub(crate) struct Gt {
    value: i64,
}

impl Gt {
    /// Parses the argument.
    pub(crate) fn new(argument: &str) -> Self {
        Gt {
            value: number::atoll(argument.as_bytes()),
        }
    }
}

impl Operator for Gt {
    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        number::atoll(input) > self.value
    }
}
