//! `@noMatch`: never matches (any argument is ignored).

use super::{Captures, Operator};

/// The `@noMatch` operator.
#[derive(Debug)]
pub(crate) struct NoMatch;

impl Operator for NoMatch {
    fn evaluate(&self, _input: &[u8], _captures: Option<&mut Captures>) -> bool {
        false
    }
}
