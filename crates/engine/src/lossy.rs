//! Bytes as text, invalid UTF-8 sequences replaced by U+FFFD (as
//! [`String::from_utf8_lossy`] gives), validated with `std::str::from_utf8`,
//! whose ASCII fast path reads a word at a time where the lossy iterator goes
//! byte by byte: log messages, matched values and audit records are mostly
//! ASCII.

/// `b` as a `String`.
pub fn lossy(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(b).into_owned(),
    }
}

/// `b` as a `String`, reusing its buffer when it is valid UTF-8.
pub fn lossy_owned(b: Vec<u8>) -> String {
    match String::from_utf8(b) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_gives_what_from_utf8_lossy_gives() {
        let cases: [&[u8]; 7] = [
            b"",
            b"plain ascii with spaces",
            "caf\u{e9} \u{1f600}".as_bytes(),
            b"bad \xff byte",
            b"cut \xe2\x82",
            b"\xc0\xaf overlong",
            b"\xed\xa0\x80 surrogate",
        ];
        for c in cases {
            let want = String::from_utf8_lossy(c).into_owned();
            assert_eq!(lossy(c), want, "{c:?}");
            assert_eq!(lossy_owned(c.to_vec()), want, "{c:?}");
        }
    }
}
