//! `t:utf8toUnicode`: replaces multi-byte UTF-8 sequences with `%uHHHH`
//! (lowercase hex, at least four digits: `é` is `%u00e9`, U+1F600 is
//! `%u1f600`), as libmodsecurity does. Its validation quirks are kept:
//!
//! * ASCII bytes are copied, except NUL: a NUL byte is dropped unless it is the
//!   last byte of the value;
//! * a lead byte (0xC0-0xF4) whose continuation bytes are missing or invalid is
//!   dropped, and the following bytes are examined on their own (a stray
//!   continuation byte 0x80-0xBF is copied as-is);
//! * lead bytes 0xF5-0xF7 are copied as-is, and also decoded when followed by
//!   three continuation bytes; bytes 0xF8-0xFF are copied as-is;
//! * an overlong form (`C0 80`) or a surrogate (`ED A0 80`) is decoded and then
//!   followed by a copy of its lead byte.

use super::util::{finish, HEX_LOWER};

/// Appends `%u` and the hex digits of `d`, zero-padded to four digits.
fn push_unicode(out: &mut Vec<u8>, d: u32) {
    out.extend_from_slice(b"%u");
    let digits = (32 - d.leading_zeros()).div_ceil(4).max(4);
    for k in (0..digits).rev() {
        out.push(HEX_LOWER[((d >> (4 * k)) & 0xf) as usize]);
    }
}

/// Converts; `false` when the value has no byte at or above 0x80 and no NUL
/// before its last byte.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let len = input.len();
    // Fast path: pure ASCII without an embedded NUL is never changed.
    if input.is_ascii() && memchr::memchr(0, &input[..len.saturating_sub(1)]).is_none() {
        return false;
    }
    let trigger = input
        .iter()
        .enumerate()
        .position(|(i, &b)| b >= 0x80 || (b == 0 && i + 1 < len));
    let Some(first) = trigger else {
        return false;
    };
    out.reserve(len + len / 2);
    out.extend_from_slice(&input[..first]);
    // The byte at `k`, or the string's NUL terminator past the end.
    let at = |k: usize| input.get(k).copied().unwrap_or(0);
    let is_cont = |k: usize| at(k) & 0xc0 == 0x80;
    let mut i = first;
    while i < len {
        let c = input[i];
        let mut seq_len = 0usize;
        let mut d: u32 = 0;
        if c & 0x80 == 0 {
            if c != 0 || i + 1 >= len {
                out.push(c);
            }
        } else if c & 0xe0 == 0xc0 {
            if is_cont(i + 1) {
                seq_len = 2;
                d = u32::from(c & 0x1f) << 6 | u32::from(at(i + 1) & 0x3f);
                push_unicode(out, d);
            }
        } else if c & 0xf0 == 0xe0 {
            if is_cont(i + 1) && is_cont(i + 2) {
                seq_len = 3;
                d = u32::from(c & 0x0f) << 12
                    | u32::from(at(i + 1) & 0x3f) << 6
                    | u32::from(at(i + 2) & 0x3f);
                push_unicode(out, d);
            }
        } else if c & 0xf8 == 0xf0 {
            if c >= 0xf5 {
                out.push(c);
            }
            if is_cont(i + 1) && is_cont(i + 2) && is_cont(i + 3) {
                seq_len = 4;
                d = u32::from(c & 0x07) << 18
                    | u32::from(at(i + 1) & 0x3f) << 12
                    | u32::from(at(i + 2) & 0x3f) << 6
                    | u32::from(at(i + 3) & 0x3f);
                push_unicode(out, d);
            }
        } else {
            out.push(c);
        }
        // Surrogates and overlong forms are followed by their lead byte.
        if (0xd800..=0xdfff).contains(&d) {
            out.push(c);
        }
        let overlong = match seq_len {
            4 => d < 0x1_0000,
            3 => d < 0x800,
            2 => d < 0x80,
            _ => false,
        };
        if overlong {
            out.push(c);
        }
        i += seq_len.max(1);
    }
    finish(input, out)
}

#[cfg(test)]
mod tests {
    use super::apply;

    #[test]
    fn converts() {
        let mut out = Vec::new();
        assert!(apply("aé€😀".as_bytes(), &mut out));
        assert_eq!(out, b"a%u00e9%u20ac%u1f600");
        assert!(apply(b"a\xc3(b", &mut out));
        assert_eq!(out, b"a(b");
        assert!(apply(b"\xc0\x80", &mut out));
        assert_eq!(out, b"%u0000\xc0");
        assert!(!apply(b"ascii only\0", &mut out));
    }
}
