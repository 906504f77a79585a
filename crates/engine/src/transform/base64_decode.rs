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

/// Per byte: its 6-bit value in the standard alphabet, [`INVALID`] outside it
/// (one load per byte where a `match` on ranges took several compares).
const SEXTETS: [u8; 256] = {
    let mut t = [INVALID; 256];
    let mut i = 0;
    while i < 26 {
        t[b'A' as usize + i] = i as u8;
        t[b'a' as usize + i] = 26 + i as u8;
        i += 1;
    }
    let mut d = 0;
    while d < 10 {
        t[b'0' as usize + d] = 52 + d as u8;
        d += 1;
    }
    t[b'+' as usize] = 62;
    t[b'/' as usize] = 63;
    t
};

/// [`SEXTETS`]' mark for a byte outside the alphabet.
const INVALID: u8 = 0xff;

/// The 6-bit value of a Base64 character of the standard alphabet.
#[inline]
pub(crate) fn sextet(b: u8) -> Option<u8> {
    let v = SEXTETS[usize::from(b)];
    (v != INVALID).then_some(v)
}

/// The longest result [`apply`] can give for `input`: three bytes per four of
/// its valid prefix (decoding stops at the first byte outside the alphabet).
pub(crate) fn max_len(input: &[u8]) -> usize {
    let valid = input
        .iter()
        .position(|&b| SEXTETS[usize::from(b)] == INVALID)
        .unwrap_or(input.len());
    valid / 4 * 3 + (valid % 4 * 3) / 4
}

/// Whether [`max_len`] of `input` is `n` or more, reading only the bytes that
/// takes: the fewest valid characters decoding to `n` bytes (four per three
/// bytes, then two for one more byte or three for two) must all be in the
/// alphabet.
pub(crate) fn reaches(input: &[u8], n: usize) -> bool {
    let chars = n / 3 * 4 + [0, 2, 3][n % 3];
    input
        .get(..chars)
        .is_some_and(|head| head.iter().all(|&b| SEXTETS[usize::from(b)] != INVALID))
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

#[cfg(test)]
mod tests {
    use super::{apply, max_len, sextet};

    #[test]
    fn every_byte_has_its_alphabet_value_or_none() {
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for b in 0..=255u8 {
            let want = alphabet.iter().position(|&a| a == b).map(|p| p as u8);
            assert_eq!(sextet(b), want, "byte {b:#04x}");
        }
    }

    #[test]
    fn the_valid_prefix_is_decoded_and_bounds_the_length() {
        let mut out = Vec::new();
        for (input, want) in [
            (&b"aGVsbG8="[..], &b"hello"[..]),
            (b"aGVsbG8", b"hello"),
            (b"aGVs bG8=", b"hel"),
            (b"-aGVs", b""),
            (b"QQ", b"A"),
            (b"QUI", b"AB"),
            (b"Q", b""),
        ] {
            apply(input, &mut out);
            assert_eq!(out, want, "{}", String::from_utf8_lossy(input));
            assert!(out.len() <= max_len(input));
        }
        assert_eq!(max_len(b"aGVsbG8="), 5);
        assert_eq!(max_len(b"aGVs bG8="), 3);
    }
}
