//! `@contains`: whether the argument occurs anywhere in the input (case-sensitive,
//! bytes).
//!
//! As libmodsecurity v3 (`contains.cc`): an empty argument matches every input, and
//! nothing is captured (ModSecurity v2 set TX:0 to the argument; v3 does not).

use memchr::memmem::Finder;

use super::{Captures, Operator};

/// The `@contains` operator.
#[derive(Debug)]
pub(crate) struct Contains {
    finder: Finder<'static>,
}

impl Contains {
    /// Builds the substring searcher.
    pub(crate) fn new(argument: &str) -> Self {
        Contains {
            finder: Finder::new(argument.as_bytes()).into_owned(),
        }
    }
}

impl Operator for Contains {
    fn required_literals(&self) -> Option<Vec<Vec<u8>>> {
        let lit: &[u8] = self.finder.needle();
        (!lit.is_empty()).then(|| vec![lit.to_vec()])
    }

    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        self.finder.find(input).is_some()
    }
}
