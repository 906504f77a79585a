//! `@detectSQLi`: libinjection's SQL-injection detection (the `injection` crate).
//!
//! As libmodsecurity v3 (`detect_sqli.cc`): with `capture`, TX:0 is set to the
//! libinjection fingerprint (e.g. `s&sos`), not to the input.

use super::{Captures, Operator};

/// The `@detectSQLi` operator.
#[derive(Debug)]
pub(crate) struct DetectSqli;

impl Operator for DetectSqli {
    fn evaluate(&self, input: &[u8], captures: Option<&mut Captures>) -> bool {
        let result = injection::detect_sqli(input);
        if !result.is_sqli {
            return false;
        }
        if let Some(c) = captures {
            c.clear();
            c.set(0, result.fingerprint.as_str().as_bytes());
        }
        true
    }
}
