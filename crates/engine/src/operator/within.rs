//! `@within`: whether the input occurs inside the argument (the argument is the
//! haystack, e.g. `@within GET POST HEAD` on `REQUEST_METHOD`).
//!
//! As libmodsecurity v3 (`within.cc`): an empty input always matches, and the search
//! is a plain substring search, so `@within GET POST` also matches `ET P`. Nothing is
//! captured.

use memchr::memmem;

use super::{Captures, Operator};

/// The `@within` operator.
#[derive(Debug)]
pub(crate) struct Within {
    haystack: Box<[u8]>,
}

impl Within {
    /// Keeps the argument.
    pub(crate) fn new(argument: &str) -> Self {
        Within {
            haystack: argument.as_bytes().into(),
        }
    }
}

impl Operator for Within {
    fn evaluate(&self, input: &[u8], _captures: Option<&mut Captures>) -> bool {
        if input.is_empty() {
            return true;
        }
        // CRS lists (methods, headers, extensions) are short: a plain scan is
        // cheaper than building a searcher for each input.
        if self.haystack.len() <= 512 {
            let first = input[0];
            return self
                .haystack
                .windows(input.len())
                .any(|w| w[0] == first && w == input);
        }
        memmem::find(&self.haystack, input).is_some()
    }
}
