//! `@verifyCPF`: finds Brazilian CPF numbers — a regular expression finds candidates,
//! the CPF check digits confirm them.
//!
//! As libmodsecurity v3 (`verify_cpf.cc`): for every start offset `i` (up to the
//! next-to-last byte) every match in the substring from `i` is checked; a candidate's
//! first 11 digits are used (other bytes are skipped, a NUL byte ends it), fewer than
//! 11 digits fail, the 11 repeated-digit numbers and `01234567890` are rejected, and
//! the two check digits must be right. With `capture`, TX:0 is the accepted match.
//! An empty pattern never matches. Quadratic in the worst case, like ModSecurity.

use super::verified::Verified;
use super::{OperatorEnv, OperatorError};

/// ModSecurity's `VerifyCPF::verify`.
pub(crate) fn verify(candidate: &[u8]) -> bool {
    let end = memchr::memchr(0, candidate).unwrap_or(candidate.len());
    let mut cpf = [0u32; 11];
    let mut n = 0;
    for &b in &candidate[..end] {
        if n < 11 && b.is_ascii_digit() {
            cpf[n] = u32::from(b - b'0');
            n += 1;
        }
    }
    if n != 11 {
        return false;
    }
    let all_same = cpf.iter().all(|&d| d == cpf[0]);
    if all_same || cpf == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0] {
        return false;
    }
    let check = |len: usize, digits: &[u32; 11]| {
        let sum: u32 = (0..len)
            .map(|i| digits[i] * (u32::try_from(len - i).unwrap_or(0) + 1))
            .sum();
        let f = sum % 11;
        if f < 2 {
            0
        } else {
            11 - f
        }
    };
    let (part1, part2) = (cpf[9], cpf[10]);
    let mut work = cpf;
    work[9] = check(9, &work);
    work[10] = check(10, &work);
    part1 == work[9] && part2 == work[10]
}

/// Builds the operator: the candidate pattern with this file's check.
pub(crate) fn new(argument: &str, env: &OperatorEnv) -> Result<Verified, OperatorError> {
    Verified::new(argument, env, verify)
}
