//! `t:base64DecodeExt`: libmodsecurity's forgiving Base64 decoder.
//!
//! * both alphabets are accepted (`+` or `-` for 62, `/` or `_` for 63);
//! * any other byte (whitespace, `.`, `%`, NUL, high bytes, ...) is skipped;
//! * a trailing partial group of 2 or 3 characters yields 1 or 2 bytes, a lone
//!   trailing character yields nothing;
//! * `=` is skipped too, except that a `=` not followed by another `=` right
//!   after a lone character of a group (`QUJDR=`, `Q=`) makes the whole result
//!   empty, and so does ending right after such a lone character when the last
//!   byte seen was `=` (`Q==`);
//! * quirk kept from libmodsecurity (and PHP, where the code comes from): the
//!   end-of-input padding check compares the last decoded *value* with `'='`,
//!   and `9` decodes to 61, the code of `=`: so a value whose last significant
//!   character is a `9` that starts a new group (`QUJD9`) decodes to nothing.

/// The 6-bit value of a character of either Base64 alphabet.
fn sextet(b: u8) -> Option<u8> {
    match b {
        b'-' => Some(62),
        b'_' => Some(63),
        _ => super::base64_decode::sextet(b),
    }
}

/// Decodes; `false` only for the empty input.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    if input.is_empty() {
        return false;
    }
    out.reserve(input.len() / 4 * 3 + 2);
    // `groups` counts decoded characters (`i` in libmodsecurity), `pending` holds
    // the bits of the byte being assembled, `last` mirrors the C variable `ch`:
    // the last byte's decoded value, -1 for a skipped byte, or 61 for `=`.
    let mut count = 0usize;
    let mut pending: u8 = 0;
    let mut last: i32 = 0;
    for (idx, &b) in input.iter().enumerate() {
        if b == b'=' {
            let next = input.get(idx + 1).copied().unwrap_or(0);
            if next != b'=' && count % 4 == 1 {
                out.clear();
                return true;
            }
            last = i32::from(b'=');
            continue;
        }
        let Some(v) = sextet(b) else {
            last = -1;
            continue;
        };
        last = i32::from(v);
        match count % 4 {
            0 => pending = v << 2,
            1 => {
                out.push(pending | v >> 4);
                pending = (v & 0x0f) << 4;
            }
            2 => {
                out.push(pending | v >> 2);
                pending = (v & 0x03) << 6;
            }
            _ => out.push(pending | v),
        }
        count += 1;
    }
    if last == i32::from(b'=') && count % 4 == 1 {
        out.clear();
    }
    // The output is always shorter than a non-empty input.
    true
}

#[cfg(test)]
mod tests {
    use super::apply;

    #[test]
    fn forgiving() {
        let mut out = Vec::new();
        assert!(apply(b"VG.Vz\ndA==", &mut out));
        assert_eq!(out, b"Test");
        assert!(apply(b"QUJD9", &mut out));
        assert_eq!(out, b"");
        assert!(apply(b"QUJDQ", &mut out));
        assert_eq!(out, b"ABC");
    }
}
