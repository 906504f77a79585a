//! `@beginsWith`: whether the input starts with the argument (case-sensitive, bytes).
//!
//! As libmodsecurity v3: an empty argument matches every input; nothing is captured.

use super::{Captures, Operator};

/// The `@beginsWith` operator.
#[derive(Debug)]
pub(crate) struct BeginsWith {
    prefix: Box<[u8]>,
}

impl BeginsWith {
    /// Keeps the argument.
    pub(crate) fn new(argument: &str) -> Self {
        BeginsWith {
            prefix: argument.as_bytes().into(),
        }
    }
}

impl Operator for BeginsWith {
    fn required_literals(&self) -> Option<Vec<Vec<u8>>> {
        let lit: &[u8] = &self.prefix;
        (!lit.is_empty()).then(|| vec![lit.to_vec()])
    }

    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        input.starts_with(&self.prefix)
    }
}
