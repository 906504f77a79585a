//! `@detectXSS`: libinjection's XSS detection (the `injection` crate).
//!
//! As libmodsecurity v3 (`detect_xss.cc`): with `capture`, TX:0 is set to the whole
//! input.

use super::{Captures, Operator};

/// The `@detectXSS` operator.
#[derive(Debug)]
pub(crate) struct DetectXss;

impl Operator for DetectXss {
    fn evaluate(&self, input: &[u8], captures: Option<&mut Captures>) -> bool {
        if !injection::detect_xss(input) {
            return false;
        }
        if let Some(c) = captures {
            c.clear();
            c.set(0, input);
        }
        true
    }
}
