//! `@endsWith`: whether the input ends with the argument (case-sensitive, bytes).
//!
//! As libmodsecurity v3: an empty argument matches every input; nothing is captured.

use super::{Captures, Operator};

/// The `@endsWith` operator.
#[derive(Debug)]
pub(crate) struct EndsWith {
    suffix: Box<[u8]>,
}

impl EndsWith {
    /// Keeps the argument.
    pub(crate) fn new(argument: &str) -> Self {
        EndsWith {
            suffix: argument.as_bytes().into(),
        }
    }
}

impl Operator for EndsWith {
    fn required_literals(&self) -> Option<Vec<Vec<u8>>> {
        let lit: &[u8] = &self.suffix;
        (!lit.is_empty()).then(|| vec![lit.to_vec()])
    }

    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        input.ends_with(&self.suffix)
    }
}
