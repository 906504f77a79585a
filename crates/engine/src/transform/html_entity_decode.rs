//! `t:htmlEntityDecode`: HTML character references, as libmodsecurity decodes them.
//!
//! * `&#DDD` (decimal) and `&#xHHH` / `&#XHHH` (hex), with any number of digits
//!   and an optional `;`: the value is parsed like `strtol()` (saturating at
//!   `i64::MAX` on overflow) and only its low byte is kept, so `&#x41;` and
//!   `&#x141;` are both `A`, leading zeros are fine (`&#0000123;` is `{`) and an
//!   overflowing value gives 0xFF;
//! * the named entities `quot`, `amp`, `lt`, `gt` and `nbsp` (NBSP is the byte
//!   0xA0), matched case-insensitively against the whole alphanumeric name
//!   (`&LT;` decodes, `&ltx;` does not), with or without the `;`;
//! * anything else is copied as-is: `&`, `&#`, `&#x` without digits, unknown
//!   names (`&apos;` stays `&apos;`).

/// Named entities known to libmodsecurity and their byte.
const NAMED: &[(&[u8], u8)] = &[
    (b"quot", b'"'),
    (b"amp", b'&'),
    (b"lt", b'<'),
    (b"gt", b'>'),
    (b"nbsp", 0xa0),
];

/// `(unsigned char) strtol(digits, NULL, radix)` for a run of valid digits.
fn strtol_low_byte(digits: &[u8], radix: u32) -> u8 {
    let mut value: i64 = 0;
    for &d in digits {
        let digit = char::from(d).to_digit(radix).map_or(0, i64::from);
        match value
            .checked_mul(i64::from(radix))
            .and_then(|v| v.checked_add(digit))
        {
            Some(v) => value = v,
            // strtol saturates at LONG_MAX, whose low byte is 0xFF.
            None => return 0xff,
        }
    }
    (value & 0xff) as u8
}

/// Position just past an optional `;` at `j`.
fn skip_semicolon(input: &[u8], j: usize) -> usize {
    if input.get(j) == Some(&b';') {
        j + 1
    } else {
        j
    }
}

/// Tries to decode an entity at `i` (where `input[i] == b'&'`). Returns the
/// decoded byte and the position after the entity, or the number of bytes to
/// copy unchanged.
fn entity_at(input: &[u8], i: usize) -> Result<(u8, usize), usize> {
    let len = input.len();
    if i + 1 >= len {
        return Err(1);
    }
    let mut j = i + 1;
    if input[j] == b'#' {
        if j + 1 >= len {
            return Err(2);
        }
        j += 1;
        if matches!(input[j], b'x' | b'X') {
            if j + 1 >= len {
                return Err(3);
            }
            j += 1;
            let k = j;
            while j < len && input[j].is_ascii_hexdigit() {
                j += 1;
            }
            if j == k {
                return Err(3);
            }
            Ok((strtol_low_byte(&input[k..j], 16), skip_semicolon(input, j)))
        } else {
            let k = j;
            while j < len && input[j].is_ascii_digit() {
                j += 1;
            }
            if j == k {
                return Err(2);
            }
            Ok((strtol_low_byte(&input[k..j], 10), skip_semicolon(input, j)))
        }
    } else {
        let k = j;
        while j < len && input[j].is_ascii_alphanumeric() {
            j += 1;
        }
        if j == k {
            return Err(1);
        }
        let name = &input[k..j];
        match NAMED.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            Some(&(_, b)) => Ok((b, skip_semicolon(input, j))),
            None => Err(j - k + 1),
        }
    }
}

/// Decodes HTML entities; `false` when there is none to decode.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(mut i) = memchr::memchr(b'&', input) else {
        return false;
    };
    out.reserve(input.len());
    out.extend_from_slice(&input[..i]);
    let mut changed = false;
    while i < input.len() {
        if input[i] != b'&' {
            let next = memchr::memchr(b'&', &input[i..]).map_or(input.len(), |p| i + p);
            out.extend_from_slice(&input[i..next]);
            i = next;
            continue;
        }
        match entity_at(input, i) {
            Ok((b, next)) => {
                out.push(b);
                i = next;
                changed = true;
            }
            Err(copy) => {
                out.extend_from_slice(&input[i..i + copy]);
                i += copy;
            }
        }
    }
    if !changed {
        out.clear();
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::apply;

    #[test]
    fn numeric_and_named() {
        let mut out = Vec::new();
        assert!(apply(b"&#x3c;&#62&LT&quot;&nbsp;&foo;&#;", &mut out));
        assert_eq!(out, b"<><\"\xa0&foo;&#;");
    }

    #[test]
    fn overflow_saturates() {
        let mut out = Vec::new();
        assert!(apply(b"&#99999999999999999999999;", &mut out));
        assert_eq!(out, b"\xff");
    }
}
