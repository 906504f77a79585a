//! `@rx`: regular expression match, with ModSecurity v3's PCRE semantics.
//!
//! The pattern is compiled once (see [`super::regex`]): `.` matches any byte including
//! newlines, `^`/`$` match at line boundaries (`PCRE_DOTALL | PCRE_MULTILINE`), and
//! matching is on bytes with ASCII-only classes and case folding (no UTF mode). With
//! `capture`, the first match fills TX:0 (whole match) and TX:1-9 (groups that took
//! part in the match). An empty pattern matches everything and captures nothing, as in
//! libmodsecurity.

use super::regex::Pattern;
use super::{Captures, Operator, OperatorEnv, OperatorError, RegexEngine};
use crate::prefilter::bytes::ByteReq;

/// The `@rx` operator.
#[derive(Debug)]
pub(crate) struct Rx {
    /// `None` for the empty pattern.
    pattern: Option<Pattern>,
    /// Literals every match contains, unless it holds an escape byte (for the
    /// prefilter).
    literals: Option<crate::prefilter::RequiredLiterals>,
    /// Bytes every match contains (for the prefilter).
    bytes: Option<ByteReq>,
    /// The shortest match's length in bytes (0: unknown).
    min_len: usize,
}

impl Rx {
    /// Compiles the pattern.
    pub(crate) fn new(argument: &str, env: &OperatorEnv) -> Result<Self, OperatorError> {
        let pattern = if argument.is_empty() {
            None
        } else {
            Some(Pattern::compile(argument, env.match_limit)?)
        };
        let (literals, bytes, min_len) =
            match super::pcre::translate(argument, super::pcre::Dialect::Bytes) {
                super::pcre::Translation::Pattern(p) if !argument.is_empty() => (
                    crate::prefilter::regex_required(&p),
                    crate::prefilter::bytes::regex_bytes(&p),
                    crate::prefilter::regex_min_len(&p),
                ),
                _ => (None, None, 0),
            };
        Ok(Rx {
            pattern,
            literals,
            bytes,
            min_len,
        })
    }
}

impl Operator for Rx {
    fn evaluate(&self, input: &[u8], captures: Option<&mut Captures>) -> bool {
        let Some(pattern) = &self.pattern else {
            return true;
        };
        // Most values do not match: decide with the fast (DFA) search first and run
        // the slower capturing search only for a match.
        if !pattern.is_match(input) {
            return false;
        }
        match captures {
            Some(c) => pattern.captures_first(input, c),
            None => true,
        }
    }

    fn required_literals(&self) -> Option<Vec<Vec<u8>>> {
        self.literals.as_ref().map(|r| r.literals.clone())
    }

    fn escape_bytes(&self) -> Option<crate::transform::triggers::ByteMask> {
        self.literals.as_ref()?.escape
    }

    fn required_bytes(&self) -> Option<ByteReq> {
        self.bytes.clone()
    }

    fn min_match_len(&self) -> usize {
        self.min_len
    }

    fn regex_engine(&self) -> Option<RegexEngine> {
        Some(
            self.pattern
                .as_ref()
                .map_or(RegexEngine::Linear, Pattern::engine),
        )
    }
}
