//! URL-encoded arguments: the query string (ARGS_GET) and
//! `application/x-www-form-urlencoded` request bodies (ARGS_POST).
//!
//! # libmodsecurity v3 behaviour reproduced
//!
//! Source: `Transaction::extractArguments` in `src/transaction.cc`,
//! `utils::string::ssplit` / `ssplit_pair` in `src/utils/string.cc` and
//! `utils::urldecode_nonstrict_inplace` in `src/utils/decode.cc`.
//!
//! * The input is split on the argument separator (SecArgumentSeparator, `&` by
//!   default) the way `std::getline` splits a stream: empty pieces in the middle
//!   are **kept** (`a=1&&b=2` yields an argument with an empty name and an empty
//!   value between `a` and `b`; so does a leading separator), but a trailing
//!   separator does not produce a final empty piece (`a=1&` is one argument) and an
//!   empty input produces no argument at all.
//! * Each piece is split on its **first** `=`: `a=b=c` is name `a`, value `b=c`;
//!   a piece without `=` is a name with an empty value (`a` → `a=""`); `=x` is an
//!   empty name with value `x`.
//! * Name and value are then decoded by the non-strict URL decoder: `+` becomes a
//!   space, `%XX` with two hex digits becomes that byte, and a `%` not followed by
//!   two hex digits is kept as is and counted as invalid. Any invalid sequence sets
//!   URLENCODED_ERROR to 1 ([`UrlencodedStatus::invalid_encoding`]). `%00` decodes
//!   to a NUL byte, which is kept.
//! * Nothing else is done: no trimming, no limit on the number of arguments (the
//!   transaction applies SecArgumentsLimit across ARGS_GET and ARGS_POST, skipping
//!   arguments over the limit without raising an error).

use super::Arg;

/// What [`parse_urlencoded`] noticed besides the arguments themselves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UrlencodedStatus {
    /// A `%` not followed by two hexadecimal digits was seen in a name or a value
    /// (libmodsecurity sets URLENCODED_ERROR to 1).
    pub invalid_encoding: bool,
}

/// Splits `input` into arguments the way libmodsecurity v3 does for the query
/// string and for URL-encoded bodies, appending them to `out` in order.
///
/// `separator` is the first byte of SecArgumentSeparator (`b'&'` by default).
/// Linear in the input; never panics.
pub fn parse_urlencoded(input: &[u8], separator: u8, out: &mut Vec<Arg>) -> UrlencodedStatus {
    for_each_urlencoded(input, separator, |name, value| {
        out.push(Arg::new(name, value))
    })
}

/// As [`parse_urlencoded`], calling `f` with each argument's decoded name and
/// value (decoded into two buffers reused from one argument to the next).
pub fn for_each_urlencoded(
    input: &[u8],
    separator: u8,
    mut f: impl FnMut(&[u8], &[u8]),
) -> UrlencodedStatus {
    let mut status = UrlencodedStatus::default();
    // The decoded name, then the value, in one buffer (one allocation per input).
    let mut buf = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        // std::getline semantics: a piece ends at the separator (consumed) or at
        // the end of the input; after the last separator, an empty remainder
        // produces no piece.
        let (piece, next) = match memchr::memchr(separator, rest) {
            Some(pos) => (&rest[..pos], &rest[pos + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        let (name, value) = match memchr::memchr(b'=', piece) {
            Some(pos) => (&piece[..pos], &piece[pos + 1..]),
            None => (piece, &piece[piece.len()..]),
        };
        buf.clear();
        status.invalid_encoding |= urldecode_nonstrict(name, &mut buf);
        let n = buf.len();
        status.invalid_encoding |= urldecode_nonstrict(value, &mut buf);
        let (decoded_name, decoded_value) = buf.split_at(n);
        f(decoded_name, decoded_value);
    }
    status
}

/// libmodsecurity's `urldecode_nonstrict_inplace`: `+` → space, `%XX` → byte,
/// invalid `%` kept. Returns whether an invalid `%` sequence was seen.
pub(crate) fn urldecode_nonstrict(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.reserve(input.len());
    let mut invalid = false;
    let mut i = 0;
    while i < input.len() {
        let c = input[i];
        if c == b'%' {
            let h1 = input.get(i + 1).copied().and_then(hex_value);
            let h2 = input.get(i + 2).copied().and_then(hex_value);
            if let (Some(h1), Some(h2)) = (h1, h2) {
                out.push((h1 << 4) | h2);
                i += 3;
                continue;
            }
            invalid = true;
            out.push(c);
        } else if c == b'+' {
            out.push(b' ');
        } else {
            out.push(c);
        }
        i += 1;
    }
    invalid
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn never_panics_and_counts_pieces(input in proptest::collection::vec(any::<u8>(), 0..512), sep in any::<u8>()) {
            let mut out = Vec::new();
            let st = parse_urlencoded(&input, sep, &mut out);
            // getline semantics: one argument per separator, plus one for a
            // non-empty tail.
            let seps = input.iter().filter(|&&b| b == sep).count();
            let tail = input.last().is_some_and(|&b| b != sep);
            prop_assert_eq!(out.len(), seps + usize::from(tail));
            if !input.contains(&b'%') {
                prop_assert!(!st.invalid_encoding);
            }
        }
    }
}
