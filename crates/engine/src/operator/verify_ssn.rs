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

use super::verified::Verified;
use super::{OperatorEnv, OperatorError};

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

/// Builds the operator: the candidate pattern with this file's check.
pub(crate) fn new(argument: &str, env: &OperatorEnv) -> Result<Verified, OperatorError> {
    Verified::new(argument, env, verify)
}
