//! `@streq`: whether the input equals the argument exactly (case-sensitive, bytes).
//!
//! The argument may be empty (`@streq` then matches only the empty value). Nothing is
//! captured, as in libmodsecurity v3.

use super::{Captures, Operator};

/// The `@streq` operator.
#[derive(Debug)]
pub(crate) struct StrEq {
    value: Box<[u8]>,
}

impl StrEq {
    /// Keeps the argument.
    pub(crate) fn new(argument: &str) -> Self {
        StrEq {
            value: argument.as_bytes().into(),
        }
    }
}

impl Operator for StrEq {
    fn required_literals(&self) -> Option<Vec<Vec<u8>>> {
        let lit: &[u8] = &self.value;
        (!lit.is_empty()).then(|| vec![lit.to_vec()])
    }

    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        *input == *self.value
    }
}
