//! `@unconditionalMatch`: always matches (any argument is ignored; nothing is
//! captured).

use super::{Captures, Operator};

/// The `@unconditionalMatch` operator.
#[derive(Debug)]
pub(crate) struct UnconditionalMatch;

impl Operator for UnconditionalMatch {
    fn evaluate(&self, _input: &[u8], _captures: Option<&mut Captures>) -> bool {
        true
    }
}
