//! Operators that find candidates with a pattern and accept one that passes a
//! checksum (`@verifyCPF`, `@verifySSN`, `@verifySVNR`): like ModSecurity, every
//! suffix of the input is searched for a candidate, and the first that passes the
//! check matches (group 0 captures it).

use super::regex::Pattern;
use super::{Captures, Operator, OperatorEnv, OperatorError, RegexEngine};

/// A candidate pattern and the check a candidate must pass.
#[derive(Debug)]
pub(crate) struct Verified {
    /// `None` for the empty pattern (never matches).
    pattern: Option<Pattern>,
    check: fn(&[u8]) -> bool,
}

impl Verified {
    /// Compiles the candidate pattern.
    pub(crate) fn new(
        argument: &str,
        env: &OperatorEnv,
        check: fn(&[u8]) -> bool,
    ) -> Result<Self, OperatorError> {
        let pattern = if argument.is_empty() {
            None
        } else {
            Some(Pattern::compile(argument, env.match_limit)?)
        };
        Ok(Verified { pattern, check })
    }
}

impl Operator for Verified {
    fn evaluate(&self, input: &[u8], captures: Option<&mut Captures>) -> bool {
        let Some(pattern) = &self.pattern else {
            return false;
        };
        match pattern.scan_suffixes(input, self.check) {
            Some((s, e)) => {
                if let Some(c) = captures {
                    c.clear();
                    c.set(0, &input[s..e]);
                }
                true
            }
            None => false,
        }
    }

    fn regex_engine(&self) -> Option<RegexEngine> {
        Some(
            self.pattern
                .as_ref()
                .map_or(RegexEngine::Linear, Pattern::engine),
        )
    }
}
