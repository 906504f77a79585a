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
    let mut pieces: Vec<&[u8]> = Vec::new();
    let mut rest = header_value;
    while !rest.is_empty() {
        match memchr::memchr(b';', rest) {
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
    for piece in pieces {
        if piece.is_empty() {
            continue;
        }
        let (name, value) = match memchr::memchr(b'=', piece) {
            Some(pos) => (&piece[..pos], &piece[pos + 1..]),
            None => (piece, &piece[piece.len()..]),
        };
        let start = name
            .iter()
            .position(|&c| !c_isspace(c))
            .unwrap_or(name.len());
        let name = &name[start..];
        if name.is_empty() {
            continue;
        }
        out.push(Arg::new(name, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
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
