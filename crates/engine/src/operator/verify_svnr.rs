//! `@verifySVNR`: finds Austrian social insurance numbers (Sozialversicherungsnummer)
//! — a regular expression finds candidates, the check digit confirms them.
//!
//! As libmodsecurity v3 (`verify_svnr.cc`): for every start offset `i` (up to the
//! next-to-last byte) every match in the substring from `i` is checked; a candidate's
//! first 10 digits are used (other bytes are skipped, a NUL byte ends it), fewer than
//! 10 fail, and the 4th digit must equal (3·d1 + 7·d2 + 9·d3 + 5·d5 + 8·d6 + 4·d7 +
//! 2·d8 + 1·d9 + 6·d10) mod 11, with 10 counting as 0. ModSecurity rejects ten
//! "bad" numbers but, through an off-by-two in its loop, only checks the first ten
//! entries of its twelve: `0000000000`, `0123456789`, `1234567890` and `1111111111` to
//! `7777777777`; `8888888888` and `9999999999` are left to the checksum, as here.
//! With `capture`, TX:0 is the accepted match. An empty pattern never matches.
//! Quadratic in the worst case, like ModSecurity.

use super::verified::Verified;
use super::{OperatorEnv, OperatorError};

/// ModSecurity's `VerifySVNR::verify`.
pub(crate) fn verify(candidate: &[u8]) -> bool {
    let end = memchr::memchr(0, candidate).unwrap_or(candidate.len());
    let mut d = [0u32; 10];
    let mut n = 0;
    for &b in &candidate[..end] {
        if n < 10 && b.is_ascii_digit() {
            d[n] = u32::from(b - b'0');
            n += 1;
        }
    }
    if n != 10 {
        return false;
    }
    let all_same = d.iter().all(|&x| x == d[0]);
    if (all_same && d[0] <= 7)
        || d == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
        || d == [1, 2, 3, 4, 5, 6, 7, 8, 9, 0]
    {
        return false;
    }
    let sum = d[0] * 3
        + d[1] * 7
        + d[2] * 9
        + d[4] * 5
        + d[5] * 8
        + d[6] * 4
        + d[7] * 2
        + d[8]
        + d[9] * 6;
    let check = match sum % 11 {
        10 => 0,
        x => x,
    };
    check == d[3]
}

/// Builds the operator: the candidate pattern with this file's check.
pub(crate) fn new(argument: &str, env: &OperatorEnv) -> Result<Verified, OperatorError> {
    Verified::new(argument, env, verify)
}
