//! `@strmatch`: whether the argument occurs anywhere in the input (case-sensitive,
//! bytes; ModSecurity uses Boyer-Moore-Horspool, here a SIMD substring search).
//!
//! As libmodsecurity v3, nothing is captured.

use memchr::memmem::Finder;

use super::{Captures, Operator};

/// The `@strmatch` operator.
#[derive(Debug)]
pub(crate) struct StrMatch {
    finder: Finder<'static>,
}

impl StrMatch {
    /// Builds the substring searcher.
    pub(crate) fn new(argument: &str) -> Self {
        StrMatch {
            finder: Finder::new(argument.as_bytes()).into_owned(),
        }
    }
}

impl Operator for StrMatch {
    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        self.finder.find(input).is_some()
    }
}
