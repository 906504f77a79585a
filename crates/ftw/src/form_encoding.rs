//! go-ftw's "best effort" URL-encoding of form bodies
//! (`ftwhttp/request.go`, `encodeDataParameters`).
//!
//! When autocomplete is on, the body is non-empty and a `Content-Type`
//! header equals (ASCII case-insensitively) `application/x-www-form-urlencoded`,
//! go-ftw checks whether `url.QueryUnescape(data)` changes the data. If it
//! does not (no `+`, no `%`), CRS-style `key=value&...` data is taken to be
//! unencoded and every key and value is escaped with Go's `url.QueryEscape`.
//! Otherwise (already encoded, or an invalid `%` escape) the data is sent
//! unchanged.

/// True when Go's `url.QueryUnescape(data)` would return `data` itself
/// without error, i.e. go-ftw considers the data "not yet escaped".
pub fn is_unescaped(data: &[u8]) -> bool {
    // QueryUnescape turns '+' into ' ' and decodes (or rejects) every '%':
    // both change the result or fail, so the data is returned unchanged
    // exactly when neither byte occurs.
    !data.iter().any(|&b| b == b'+' || b == b'%')
}

/// Go's `url.QueryEscape`, appending to `out`: keeps `A-Z a-z 0-9 - _ . ~`, turns space into
/// `+` and percent-encodes every other byte with upper-case hex.
pub fn query_escape(s: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in s {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b),
            b' ' => out.push(b'+'),
            _ => {
                out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0x0f)]])
            }
        }
    }
}

/// Applies go-ftw's form encoding to `data`: unchanged when
/// [`is_unescaped`] is false; otherwise split on `&`, split each token at
/// its first `=`, escape both sides (or the whole token when it has no
/// `=`), and re-join. Like go-ftw, one trailing `&` is dropped.
pub fn encode_form_data(data: &[u8]) -> Vec<u8> {
    if data.is_empty() || !is_unescaped(data) {
        return data.to_vec();
    }
    let mut out = Vec::with_capacity(data.len() + data.len() / 2);
    let mut remaining = data;
    while !remaining.is_empty() {
        let (token, rest) = split_once(remaining, b'&').unwrap_or((remaining, &[]));
        remaining = rest;
        match split_once(token, b'=') {
            Some((key, value)) => {
                query_escape(key, &mut out);
                out.push(b'=');
                query_escape(value, &mut out);
            }
            None => query_escape(token, &mut out),
        }
        out.push(b'&');
    }
    out.pop();
    out
}

fn split_once(s: &[u8], sep: u8) -> Option<(&[u8], &[u8])> {
    let i = s.iter().position(|&b| b == sep)?;
    Some((&s[..i], &s[i + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(s: &str) -> String {
        String::from_utf8_lossy(&encode_form_data(s.as_bytes())).into_owned()
    }

    #[test]
    fn plain_pairs_stay_readable() {
        assert_eq!(enc("hello=world"), "hello=world");
        assert_eq!(enc("name=panda&food=bamboo"), "name=panda&food=bamboo");
    }

    #[test]
    fn specials_are_escaped_per_key_and_value() {
        assert_eq!(
            enc("var=<script>alert(1)</script>"),
            "var=%3Cscript%3Ealert%281%29%3C%2Fscript%3E"
        );
        // Only the first '=' splits; later ones are escaped.
        assert_eq!(enc("a=b=c;d"), "a=b%3Dc%3Bd");
        assert_eq!(enc("foo bar"), "foo+bar");
        assert_eq!(enc("x=\u{e9}"), "x=%C3%A9");
    }

    #[test]
    fn already_encoded_or_invalid_is_untouched() {
        assert_eq!(enc("foo+bar"), "foo+bar");
        assert_eq!(enc("a=%3C<"), "a=%3C<");
        assert_eq!(enc("a=%zz<"), "a=%zz<");
        assert_eq!(enc("file=cat+/etc/\\passw\\d"), "file=cat+/etc/\\passw\\d");
    }

    /// Go's `url.QueryUnescape`, for the round-trip property.
    fn query_unescape(s: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < s.len() {
            match s[i] {
                b'%' => {
                    let hex = std::str::from_utf8(s.get(i + 1..i + 3)?).ok()?;
                    out.push(u8::from_str_radix(hex, 16).ok()?);
                    i += 3;
                }
                b'+' => {
                    out.push(b' ');
                    i += 1;
                }
                b => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        Some(out)
    }

    proptest::proptest! {
        #[test]
        fn escape_round_trips(s in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let mut escaped = Vec::new();
            query_escape(&s, &mut escaped);
            proptest::prop_assert_eq!(query_unescape(&escaped), Some(s));
        }

        #[test]
        fn encoding_keeps_pair_structure(key in "[^&=+%]{0,8}", value in "[^&+%]{0,8}") {
            let encoded = encode_form_data(format!("{key}={value}").as_bytes());
            let text = String::from_utf8(encoded).unwrap_or_default();
            let (k, v) = text.split_once('=').unwrap_or_default();
            proptest::prop_assert_eq!(query_unescape(k.as_bytes()), Some(key.into_bytes()));
            proptest::prop_assert_eq!(query_unescape(v.as_bytes()), Some(value.into_bytes()));
        }
    }

    #[test]
    fn ampersand_edge_cases_match_go() {
        assert_eq!(enc("a=1&"), "a=1");
        assert_eq!(enc("a=1&&b=2"), "a=1&&b=2");
        assert_eq!(enc("&"), "");
        assert_eq!(enc("=x"), "=x");
    }
}
