//! `t:base64Decode`: strict Base64 decoding (RFC 4648 alphabet `A-Z a-z 0-9 + /`).
//!
//! Decoding stops at the first byte outside the alphabet (`=` padding,
//! whitespace, `-`, `_`, NUL, ...): the valid prefix is decoded and the rest is
//! discarded, as the reference manual describes it. A trailing partial group of
//! 2 or 3 characters yields 1 or 2 bytes; a lone trailing character yields
//! nothing. An input that starts with an invalid byte decodes to the empty
//! string.
//!
//! (libmodsecurity itself delegates to mbedTLS, which rejects the whole value
//! on any invalid byte; Palisade decodes the valid prefix instead, which never
//! hides a payload that v3 would have decoded.)

/// The 6-bit value of a Base64 character of the standard alphabet.
pub(crate) fn sextet(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// The longest result [`apply`] can give for `input`: three bytes per four of
/// its valid prefix (decoding stops at the first byte outside the alphabet).
pub(crate) fn max_len(input: &[u8]) -> usize {
    let valid = input
        .iter()
        .position(|&b| sextet(b).is_none())
        .unwrap_or(input.len());
    valid / 4 * 3 + (valid % 4 * 3) / 4
}

/// Base64-decodes the longest valid prefix; `false` only for the empty input.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    if input.is_empty() {
        return false;
    }
    out.reserve(input.len() / 4 * 3 + 2);
    let mut acc: u32 = 0;
    let mut n = 0u32;
    for &b in input {
        let Some(v) = sextet(b) else { break };
        acc = acc << 6 | u32::from(v);
        n += 1;
        if n == 4 {
            out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]);
            acc = 0;
            n = 0;
        }
    }
    match n {
        2 => out.push((acc >> 4) as u8),
        3 => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
        _ => {}
    }
    // The output is always shorter than a non-empty input.
    true
}
