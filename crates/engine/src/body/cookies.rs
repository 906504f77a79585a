//! The `Cookie` request header (REQUEST_COOKIES and REQUEST_COOKIES_NAMES).
//!
//! # libmodsecurity v3 behaviour reproduced
//!
//! Source: `Transaction::addRequestHeader` in `src/transaction.cc` (the `cookie`
//! branch) and `utils::string::ssplit` in `src/utils/string.cc`.
//!
//! * Every `Cookie` header is parsed on its own, when it is added: several Cookie
//!   headers simply contribute their cookies one after the other (call
//!   [`parse_cookies`] once per header, in header order). SecCookieFormat and
//!   SecCookieV0Separator are not consulted by v3: the separator is always `;`.
//! * The header value is split on `;` with `std::getline` semantics (a trailing
//!   `;` produces no empty final piece). Whitespace (C `isspace`) at the end of the
//!   **last** piece is removed.
//! * Empty pieces are skipped (`;;a=1`).
//! * A piece is split on its first `=`: `a=b=c` is cookie `a` with value `b=c`; a
//!   piece without `=` is a cookie with an empty value.
//! * Leading whitespace is removed from the name only; the value is kept exactly
//!   as sent (no trimming, no URL-decoding, quotes kept: `a="x y"` has the value
//!   `"x y"`). Whitespace before `=` stays part of the name (`a =1` is cookie `a `).
//! * A piece whose name is empty after trimming (`=x`, `  =x`) is skipped.

use super::{c_isspace, Arg};

/// Parses one `Cookie` header value the way libmodsecurity v3 does, appending
/// the cookies to `out` in order. Linear; never panics.
pub fn parse_cookies(header_value: &[u8], out: &mut Vec<Arg>) {
    for_each_cookie(header_value, |name, value| out.push(Arg::new(name, value)));
}

/// As [`parse_cookies`], calling `f` with each cookie's name and value, borrowed
/// from `header_value` (nothing is allocated). Linear; never panics.
pub fn for_each_cookie(header_value: &[u8], mut f: impl FnMut(&[u8], &[u8])) {
    let mut rest = header_value;
    while !rest.is_empty() {
        let piece = match memchr::memchr(b';', rest) {
            Some(pos) => {
                let piece = &rest[..pos];
                rest = &rest[pos + 1..];
                piece
            }
            None => std::mem::take(&mut rest),
        };
        // The last piece (nothing, or only a `;`, followed it) loses its
        // trailing whitespace.
        let piece = if rest.is_empty() {
            let end = piece
                .iter()
                .rposition(|&c| !c_isspace(c))
                .map_or(0, |p| p + 1);
            &piece[..end]
        } else {
            piece
        };
        if let Some((name, value)) = cookie_of(piece) {
            f(name, value);
        }
    }
}

/// A piece's cookie: split on its first `=`, leading whitespace off the name;
/// `None` when the name is empty then.
fn cookie_of(piece: &[u8]) -> Option<(&[u8], &[u8])> {
    let (name, value) = match memchr::memchr(b'=', piece) {
        Some(pos) => (&piece[..pos], &piece[pos + 1..]),
        None => (piece, &piece[piece.len()..]),
    };
    let start = name.iter().position(|&c| !c_isspace(c))?;
    Some((&name[start..], value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The splitting into pieces as first written (pieces collected, then the
    /// last one trimmed): the model the streaming parser is checked against.
    fn model(header_value: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut pieces: Vec<&[u8]> = Vec::new();
        let mut rest = header_value;
        while !rest.is_empty() {
            match rest.iter().position(|&b| b == b';') {
                Some(pos) => {
                    pieces.push(&rest[..pos]);
                    rest = &rest[pos + 1..];
                }
                None => {
                    pieces.push(rest);
                    rest = &rest[rest.len()..];
                }
            }
        }
        if let Some(last) = pieces.last_mut() {
            let mut end = last.len();
            while end > 0 && c_isspace(last[end - 1]) {
                end -= 1;
            }
            *last = &last[..end];
        }
        // (Each piece's own split is the parser's: what changed is the splitting
        // into pieces and the trimming of the last.)
        pieces
            .into_iter()
            .filter_map(cookie_of)
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect()
    }

    #[test]
    fn last_piece_alone_is_trimmed() {
        let mut out = Vec::new();
        parse_cookies(b" a=1 ; b=2 \t;", &mut out);
        let got: Vec<_> = out.iter().map(|a| (&a.name[..], &a.value[..])).collect();
        assert_eq!(got, vec![(&b"a"[..], &b"1 "[..]), (b"b", b"2")]);
        out.clear();
        parse_cookies(b"a=1; ", &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].value, b"1");
    }

    proptest! {
        #[test]
        fn streaming_equals_the_model(
            input in proptest::collection::vec(
                proptest::sample::select(vec![b'a', b'b', b'=', b';', b' ', b'\t', b'\n', 0xff]),
                0..64,
            )
        ) {
            let mut out = Vec::new();
            parse_cookies(&input, &mut out);
            let got: Vec<_> = out.into_iter().map(|a| (a.name, a.value)).collect();
            prop_assert_eq!(got, model(&input));
        }

        #[test]
        fn never_panics(input in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut out = Vec::new();
            parse_cookies(&input, &mut out);
            for a in &out {
                prop_assert!(!a.name.is_empty());
                prop_assert!(!a.name.contains(&b';'));
                prop_assert!(!c_isspace(a.name[0]));
            }
        }
    }
}
