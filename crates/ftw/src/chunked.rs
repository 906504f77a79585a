//! Decoding a `Transfer-Encoding: chunked` body, for in-process targets that
//! receive a raw request (several CRS cases, e.g. 920171, send chunked
//! bodies through `encoded_request`).
//!
//! Grammar (RFC 9112 section 7.1): `chunk-size [; ext] CRLF data CRLF`
//! repeated, then `0 [; ext] CRLF`, optional trailer fields and a final
//! CRLF. Extensions and trailers are ignored; a bare LF is accepted where
//! CRLF is expected, as in the head parser. Never panics.

use crate::http_head::ParsedRequest;

/// Why a chunked body cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChunkError {
    /// A chunk-size line is not hexadecimal, or too large.
    #[error("invalid chunk size at byte {0}")]
    Size(usize),
    /// The body ends before the last chunk or its terminating line.
    #[error("chunked body is truncated")]
    Truncated,
    /// Chunk data is not followed by a line ending.
    #[error("missing line ending after chunk data at byte {0}")]
    MissingLineEnd(usize),
}

/// Decodes a chunked body, returning the concatenated chunk data.
pub fn decode_chunked(body: &[u8]) -> Result<Vec<u8>, ChunkError> {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        let (line, next) = read_line(body, pos).ok_or(ChunkError::Truncated)?;
        let size_text = line.split(|&b| b == b';').next().unwrap_or_default();
        let size_text = trim_spaces(size_text);
        if size_text.is_empty()
            || size_text.len() > 15
            || !size_text.iter().all(u8::is_ascii_hexdigit)
        {
            return Err(ChunkError::Size(pos));
        }
        let size = size_text
            .iter()
            .try_fold(0usize, |acc, &b| {
                let digit = usize::try_from(char::from(b).to_digit(16)?).ok()?;
                acc.checked_mul(16)?.checked_add(digit)
            })
            .ok_or(ChunkError::Size(pos))?;
        pos = next;
        if size == 0 {
            // Trailer fields, up to and including the empty line.
            loop {
                let (line, next) = read_line(body, pos).ok_or(ChunkError::Truncated)?;
                pos = next;
                if line.is_empty() {
                    return Ok(out);
                }
            }
        }
        let end = pos.checked_add(size).ok_or(ChunkError::Size(pos))?;
        let data = body.get(pos..end).ok_or(ChunkError::Truncated)?;
        out.extend_from_slice(data);
        pos = end;
        let rest = body.get(pos..).unwrap_or_default();
        if rest.starts_with(b"\r\n") {
            pos += 2;
        } else if rest.starts_with(b"\n") {
            pos += 1;
        } else if rest.is_empty() || rest == b"\r" {
            return Err(ChunkError::Truncated);
        } else {
            return Err(ChunkError::MissingLineEnd(pos));
        }
    }
}

/// True when the last `Transfer-Encoding` coding of `request` is `chunked`.
pub fn is_chunked(request: &ParsedRequest) -> bool {
    request
        .header_values("Transfer-Encoding")
        .flat_map(|v| v.split(|&b| b == b','))
        .map(trim_spaces)
        .filter(|c| !c.is_empty())
        .last()
        .is_some_and(|c| c.eq_ignore_ascii_case(b"chunked"))
}

fn read_line(bytes: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let rest = bytes.get(pos..)?;
    let lf = rest.iter().position(|&b| b == b'\n')?;
    let line = &rest[..lf];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    Some((line, pos + lf + 1))
}

fn trim_spaces(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

#[cfg(test)]
mod tests {
    // Tests may unwrap: a panic is the failure report.
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::http_head::parse_request;
    use proptest::prelude::*;

    #[test]
    fn decodes_the_920171_body() {
        assert_eq!(
            decode_chunked(b"3\r\nHi \r\n3\r\nCRS\r\n0\r\n\r\n").unwrap(),
            b"Hi CRS"
        );
    }

    #[test]
    fn extensions_trailers_and_bare_lf() {
        assert_eq!(
            decode_chunked(b"A;name=v\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n").unwrap(),
            b"0123456789"
        );
        assert_eq!(decode_chunked(b"1\na\n0\n\n").unwrap(), b"a");
    }

    #[test]
    fn errors() {
        assert_eq!(decode_chunked(b""), Err(ChunkError::Truncated));
        assert_eq!(decode_chunked(b"z\r\n"), Err(ChunkError::Size(0)));
        assert_eq!(decode_chunked(b"5\r\nab"), Err(ChunkError::Truncated));
        assert_eq!(
            decode_chunked(b"1\r\nabc\r\n"),
            Err(ChunkError::MissingLineEnd(4))
        );
        assert_eq!(decode_chunked(b"0\r\n"), Err(ChunkError::Truncated));
        assert_eq!(
            decode_chunked(b"fffffffffffffffff\r\n"),
            Err(ChunkError::Size(0))
        );
    }

    #[test]
    fn detects_chunked_transfer_encoding() {
        let req = |te: &str| {
            parse_request(format!("POST / HTTP/1.1\r\nTransfer-Encoding: {te}\r\n\r\n").as_bytes())
                .unwrap()
        };
        assert!(is_chunked(&req("chunked")));
        assert!(is_chunked(&req("gzip, Chunked")));
        assert!(!is_chunked(&req("chunked, gzip")));
        assert!(!is_chunked(
            &parse_request(b"GET / HTTP/1.1\r\n\r\n").unwrap()
        ));
    }

    proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_chunked(&bytes);
        }

        #[test]
        fn round_trips(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..40), 0..6)) {
            let mut wire = Vec::new();
            for c in &chunks {
                wire.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
                wire.extend_from_slice(c);
                wire.extend_from_slice(b"\r\n");
            }
            wire.extend_from_slice(b"0\r\n\r\n");
            prop_assert_eq!(decode_chunked(&wire).unwrap(), chunks.concat());
        }
    }
}
