//! HTML character-reference decoding as libinjection does it when comparing
//! URL schemes (`html_decode_char_at`, `htmlencode_startswith`).

/// Reads the byte at `i`, or 0 past the end of the input (the C library
/// reads the terminating NUL there).
fn byte_at(input: &[u8], i: usize) -> u8 {
    input.get(i).copied().unwrap_or(0)
}

fn hex_value(b: u8) -> Option<u32> {
    match b {
        b'0'..=b'9' => Some(u32::from(b - b'0')),
        b'a'..=b'f' => Some(u32::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u32::from(b - b'A' + 10)),
        _ => None,
    }
}

/// Largest code point accepted before giving up on a numeric reference.
const MAX_CODE: u32 = 0x0010_00FF;

/// Decodes one character at `input[start..start + len]`: a plain byte, or a
/// numeric reference `&#123;` / `&#x7B;` (the `;` is optional). Returns the
/// decoded value and the number of bytes consumed.
///
/// Like the C code, it may look at the bytes just past `len` (within the
/// input) while checking the reference's first characters.
pub(crate) fn decode_char_at(input: &[u8], start: usize, len: usize) -> (u32, usize) {
    if len == 0 {
        return (u32::MAX, 0);
    }
    let at = |i: usize| byte_at(input, start + i);
    let first = at(0);
    if first != b'&' || len < 2 {
        return (u32::from(first), 1);
    }
    if at(1) != b'#' {
        // named entities are not decoded
        return (u32::from(b'&'), 1);
    }
    if at(2) == b'x' || at(2) == b'X' {
        let Some(mut val) = hex_value(at(3)) else {
            return (u32::from(b'&'), 1);
        };
        let mut i = 4;
        while i < len {
            let ch = at(i);
            if ch == b';' {
                return (val, i + 1);
            }
            let Some(d) = hex_value(ch) else {
                return (val, i);
            };
            val = val * 16 + d;
            if val > MAX_CODE {
                return (u32::from(b'&'), 1);
            }
            i += 1;
        }
        (val, i)
    } else {
        let ch = at(2);
        if !ch.is_ascii_digit() {
            return (u32::from(b'&'), 1);
        }
        let mut val = u32::from(ch - b'0');
        let mut i = 3;
        while i < len {
            let ch = at(i);
            if ch == b';' {
                return (val, i + 1);
            }
            if !ch.is_ascii_digit() {
                return (val, i);
            }
            val = val * 10 + u32::from(ch - b'0');
            if val > MAX_CODE {
                return (u32::from(b'&'), 1);
            }
            i += 1;
        }
        (val, i)
    }
}

/// Whether the HTML-encoded `input[start..start + len]` starts with the
/// upper-case ASCII `prefix`, case-insensitively, ignoring leading whitespace
/// and control characters, and NUL and newline bytes anywhere.
pub(crate) fn html_encoded_starts_with(
    prefix: &[u8],
    input: &[u8],
    start: usize,
    len: usize,
) -> bool {
    let mut a = 0usize;
    let mut b = start;
    let mut n = len;
    let mut first = true;
    while n > 0 {
        if a >= prefix.len() {
            return true;
        }
        let (cb, consumed) = decode_char_at(input, b, n);
        b += consumed;
        n = n.saturating_sub(consumed);

        if first && cb <= 32 {
            continue;
        }
        first = false;
        if cb == 0 || cb == 10 {
            continue;
        }
        let cb = if (u32::from(b'a')..=u32::from(b'z')).contains(&cb) {
            cb - 0x20
        } else {
            cb
        };
        // C compares with `(char) cb`: only the low byte counts
        if prefix[a] != (cb & 0xff) as u8 {
            return false;
        }
        a += 1;
    }
    a >= prefix.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_references() {
        assert_eq!(decode_char_at(b"abc", 0, 3), (u32::from(b'a'), 1));
        assert_eq!(decode_char_at(b"&#106;x", 0, 7), (106, 6));
        assert_eq!(decode_char_at(b"&#x6A;x", 0, 7), (0x6a, 6));
        assert_eq!(decode_char_at(b"&#x6Ax", 0, 6), (0x6a, 5));
        assert_eq!(decode_char_at(b"&amp;", 0, 5), (u32::from(b'&'), 1));
        assert_eq!(decode_char_at(b"&#", 0, 2), (u32::from(b'&'), 1));
    }

    #[test]
    fn encoded_prefix() {
        let s = b" &#106;ava&#x53;cript:alert(1)";
        assert!(html_encoded_starts_with(b"JAVA", s, 0, s.len()));
        assert!(!html_encoded_starts_with(b"DATA", s, 0, s.len()));
        assert!(html_encoded_starts_with(b"JAVA", b"j\0a\nva", 0, 6));
        assert!(!html_encoded_starts_with(b"JAVA", b"jav", 0, 3));
    }
}
