//! `@rxGlobal`: like `@rx`, but with `capture` every match is captured.
//!
//! As libmodsecurity v3 (`rx_global.cc`, `Regex::searchGlobal`): the captures of all
//! matches are numbered on consecutively — TX:0 is the first match, then its groups,
//! then the next match and its groups, and so on; Palisade keeps TX:0-9 (ModSecurity
//! would go on to TX:10 and beyond). Without `capture` it matches exactly when `@rx`
//! does. An empty pattern matches everything and captures nothing. After an empty
//! match the search resumes one byte further (ModSecurity first retries a non-empty
//! match at the same position; the two differ only for patterns that can match both
//! empty and non-empty text at one position).

use super::regex::Pattern;
use super::{Captures, Operator, OperatorEnv, OperatorError, RegexEngine};

/// The `@rxGlobal` operator.
#[derive(Debug)]
pub(crate) struct RxGlobal {
    /// `None` for the empty pattern.
    pattern: Option<Pattern>,
}

impl RxGlobal {
    /// Compiles the pattern.
    pub(crate) fn new(argument: &str, env: &OperatorEnv) -> Result<Self, OperatorError> {
        let pattern = if argument.is_empty() {
            None
        } else {
            Some(Pattern::compile(argument, env.match_limit)?)
        };
        Ok(RxGlobal { pattern })
    }
}

impl Operator for RxGlobal {
    fn evaluate(&self, input: &[u8], captures: Option<&mut Captures>) -> bool {
        let Some(pattern) = &self.pattern else {
            return true;
        };
        match captures {
            Some(c) => pattern.captures_all(input, c),
            None => pattern.is_match(input),
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
