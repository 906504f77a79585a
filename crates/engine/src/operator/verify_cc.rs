//! `@verifyCC`: finds credit card numbers — a regular expression finds candidates,
//! the Luhn checksum confirms them.
//!
//! As libmodsecurity v3 (`verify_cc.cc`): the pattern is searched from every start
//! offset of the input (with the whole input as context), and each leftmost match is
//! checked with the Luhn algorithm over the digits it contains (other bytes are
//! skipped; a match without digits fails). The first match that passes makes the
//! operator match; with `capture`, TX:0 is that match. An empty input never matches.

use super::regex::Pattern;
use super::{Captures, Operator, OperatorEnv, OperatorError, RegexEngine};

/// The `@verifyCC` operator.
#[derive(Debug)]
pub(crate) struct VerifyCc {
    pattern: Pattern,
}

/// ModSecurity's `luhnVerify`.
pub(crate) fn luhn(number: &[u8]) -> bool {
    const DOUBLED: [u32; 10] = [0, 2, 4, 6, 8, 1, 3, 5, 7, 9];
    let mut sum = [0u32; 2];
    let mut odd = 0usize;
    let mut digits = 0usize;
    for &b in number {
        if b.is_ascii_digit() {
            let d = u32::from(b - b'0');
            let w = DOUBLED[usize::from(b - b'0')];
            if odd == 0 {
                sum[0] += w;
                sum[1] += d;
            } else {
                sum[0] += d;
                sum[1] += w;
            }
            odd = 1 - odd;
            digits += 1;
        }
    }
    digits > 0 && sum[odd] % 10 == 0
}

impl VerifyCc {
    /// Compiles the candidate pattern.
    pub(crate) fn new(argument: &str, env: &OperatorEnv) -> Result<Self, OperatorError> {
        Ok(VerifyCc {
            pattern: Pattern::compile(argument, env.match_limit)?,
        })
    }
}

impl Operator for VerifyCc {
    fn evaluate(&self, input: &[u8], captures: Option<&mut Captures>) -> bool {
        let mut offset = 0;
        while offset < input.len() {
            let Some((s, e)) = self.pattern.find_at(input, offset) else {
                return false;
            };
            if luhn(&input[s..e]) {
                if let Some(c) = captures {
                    c.clear();
                    c.set(0, &input[s..e]);
                }
                return true;
            }
            // ModSecurity retries from every next offset; the leftmost match from any
            // offset up to `s` is this same one.
            offset = offset.max(s) + 1;
        }
        false
    }

    fn regex_engine(&self) -> Option<RegexEngine> {
        Some(self.pattern.engine())
    }
}
