//! `@verifySSN`: finds US social security numbers — a regular expression finds
//! candidates, ModSecurity's SSN rules confirm them.
//!
//! As libmodsecurity v3 (`verify_ssn.cc`): for every start offset `i` (up to the
//! next-to-last byte) every match in the substring from `i` is checked; a candidate
//! must contain exactly 9 digits (other bytes are skipped), not all 9 in ascending
//! sequence or all equal, with area (first 3), group (next 2) and serial (last 4)
//! all non-zero, and an area below 740 and not 666. With `capture`, TX:0 is the
//! accepted match. An empty pattern never matches. Quadratic in the worst case, like
//! ModSecurity.

use super::regex::Pattern;
use super::{Captures, Operator, OperatorEnv, OperatorError, RegexEngine};

/// The `@verifySSN` operator.
#[derive(Debug)]
pub(crate) struct VerifySsn {
    /// `None` for the empty pattern.
    pattern: Option<Pattern>,
}

/// ModSecurity's `VerifySSN::verify`.
pub(crate) fn verify(candidate: &[u8]) -> bool {
    let mut num = [0u32; 9];
    let mut digits = 0usize;
    for &b in candidate {
        if b.is_ascii_digit() {
            if digits < 9 {
                num[digits] = u32::from(b - b'0');
            }
            digits += 1;
        }
    }
    if digits != 9 {
        return false;
    }
    let sequential = num.windows(2).filter(|w| w[0] + 1 == w[1]).count();
    let repeated = num.windows(2).filter(|w| w[0] == w[1]).count();
    if sequential == 8 || repeated == 8 {
        return false;
    }
    let area = num[0] * 100 + num[1] * 10 + num[2];
    let group = num[3] * 10 + num[4];
    let serial = num[5] * 1000 + num[6] * 100 + num[7] * 10 + num[8];
    !(area == 0 || group == 0 || serial == 0 || area >= 740 || area == 666)
}

impl VerifySsn {
    /// Compiles the candidate pattern.
    pub(crate) fn new(argument: &str, env: &OperatorEnv) -> Result<Self, OperatorError> {
        let pattern = if argument.is_empty() {
            None
        } else {
            Some(Pattern::compile(argument, env.match_limit)?)
        };
        Ok(VerifySsn { pattern })
    }
}

impl Operator for VerifySsn {
    fn evaluate(&self, input: &[u8], captures: Option<&mut Captures>) -> bool {
        let Some(pattern) = &self.pattern else {
            return false;
        };
        match pattern.scan_suffixes(input, verify) {
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
