//! A minimal, strict HTTP/1.x request-head parser for turning raw bytes
//! (an `encoded_request`) back into method, target, version, headers and
//! body for in-process evaluation.
//!
//! Grammar accepted (RFC 9112, with the leniencies noted):
//! * request line `method SP request-target SP HTTP/d.d`, single spaces;
//!   method is a token; the target is any run of bytes other than
//!   controls, space and DEL (bytes >= 0x80 are let through, as servers do);
//! * lines end in CRLF; a bare LF is accepted too (RFC 9112 section 2.2);
//!   a CR not followed by LF is an error;
//! * header field `token ":" OWS value OWS`; no whitespace before the colon;
//!   the value may hold HTAB, SP, visible ASCII and obs-text (>= 0x80) but
//!   no other control byte; obsolete line folding is rejected;
//! * the head ends at the first empty line; everything after it is the body,
//!   returned as sent (no de-chunking, no Content-Length truncation).
//!
//! The parser works on any byte slice and never panics (see the proptest).

/// One header field as it appeared on the wire (value without the
/// surrounding optional whitespace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderField {
    /// Field name, case preserved.
    pub name: Vec<u8>,
    /// Field value, bytes preserved.
    pub value: Vec<u8>,
}

impl HeaderField {
    /// Builds a field from text.
    pub fn new(name: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Self {
        HeaderField {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// A request split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedRequest {
    /// Method, e.g. `GET`.
    pub method: Vec<u8>,
    /// Request target, e.g. `/get?a=1`.
    pub uri: Vec<u8>,
    /// Protocol version, e.g. `HTTP/1.1`.
    pub version: Vec<u8>,
    /// Header fields in wire order, duplicates kept.
    pub headers: Vec<HeaderField>,
    /// Everything after the empty line that ends the head.
    pub body: Vec<u8>,
}

impl ParsedRequest {
    /// All values of the headers named `name` (ASCII case-insensitive),
    /// in order.
    pub fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name.as_bytes()))
            .map(|h| h.value.as_slice())
    }

    /// The first value of the header named `name`, if any.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name.as_bytes()))
            .map(|h| h.value.as_slice())
    }
}

/// Why bytes are not a request head this parser accepts. Offsets are
/// byte positions in the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeadError {
    /// No empty line ends the head.
    #[error("request head is not terminated by an empty line")]
    Incomplete,
    /// A CR that is not followed by LF.
    #[error("bare CR at byte {0}")]
    BareCr(usize),
    /// The request line is not `method SP target SP version`.
    #[error("malformed request line")]
    RequestLine,
    /// The method is empty or not a token.
    #[error("invalid method")]
    Method,
    /// The request target is empty or holds a forbidden byte.
    #[error("invalid request target")]
    Target,
    /// The version is not `HTTP/<digit>.<digit>`.
    #[error("invalid HTTP version")]
    Version,
    /// A header line starts with whitespace (obsolete line folding).
    #[error("obsolete line folding in header line {0}")]
    ObsFold(usize),
    /// A header line has no colon, or its name is not a token.
    #[error("invalid header name in header line {0}")]
    HeaderName(usize),
    /// A header value holds a forbidden control byte.
    #[error("invalid byte in header value in header line {0}")]
    HeaderValue(usize),
}

/// Splits raw request bytes into a [`ParsedRequest`].
pub fn parse_request(bytes: &[u8]) -> Result<ParsedRequest, HeadError> {
    let mut lines = Lines { bytes, pos: 0 };
    let request_line = lines.next_line()?.ok_or(HeadError::Incomplete)?;
    let (method, uri, version) = parse_request_line(request_line)?;
    let mut headers = Vec::new();
    let mut index = 0;
    loop {
        let line = lines.next_line()?.ok_or(HeadError::Incomplete)?;
        if line.is_empty() {
            break;
        }
        index += 1;
        headers.push(parse_header_line(line, index)?);
    }
    Ok(ParsedRequest {
        method: method.to_vec(),
        uri: uri.to_vec(),
        version: version.to_vec(),
        headers,
        body: bytes.get(lines.pos..).unwrap_or_default().to_vec(),
    })
}

struct Lines<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Lines<'a> {
    /// The next line without its terminator, `None` when no terminator
    /// remains.
    fn next_line(&mut self) -> Result<Option<&'a [u8]>, HeadError> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let Some(lf) = rest.iter().position(|&b| b == b'\n') else {
            return Ok(None);
        };
        let mut line = &rest[..lf];
        if let Some(stripped) = line.strip_suffix(b"\r") {
            line = stripped;
        }
        if let Some(cr) = line.iter().position(|&b| b == b'\r') {
            return Err(HeadError::BareCr(self.pos + cr));
        }
        self.pos += lf + 1;
        Ok(Some(line))
    }
}

/// Method, target and version of a request line.
type RequestLine<'a> = (&'a [u8], &'a [u8], &'a [u8]);

fn parse_request_line(line: &[u8]) -> Result<RequestLine<'_>, HeadError> {
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(uri), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::RequestLine);
    };
    if method.is_empty() || !method.iter().all(|&b| is_tchar(b)) {
        return Err(HeadError::Method);
    }
    if uri.is_empty() || !uri.iter().all(|&b| b > b' ' && b != 0x7f) {
        return Err(HeadError::Target);
    }
    match version {
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() => {}
        _ => return Err(HeadError::Version),
    }
    Ok((method, uri, version))
}

fn parse_header_line(line: &[u8], index: usize) -> Result<HeaderField, HeadError> {
    if line.first().is_some_and(|&b| b == b' ' || b == b'\t') {
        return Err(HeadError::ObsFold(index));
    }
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or(HeadError::HeaderName(index))?;
    let name = &line[..colon];
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
        return Err(HeadError::HeaderName(index));
    }
    let value = trim_ows(&line[colon + 1..]);
    if !value
        .iter()
        .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80)
    {
        return Err(HeadError::HeaderValue(index));
    }
    Ok(HeaderField::new(name, value))
}

fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// RFC 9110 `tchar`.
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    // Tests may unwrap: a panic is the failure report.
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_a_simple_request() {
        let r =
            parse_request(b"POST /p?q=1 HTTP/1.1\r\nHost: x\r\nA:  b c \t\r\nA: 2\r\n\r\nbody\r\n")
                .unwrap();
        assert_eq!(r.method, b"POST");
        assert_eq!(r.uri, b"/p?q=1");
        assert_eq!(r.version, b"HTTP/1.1");
        assert_eq!(r.headers.len(), 3);
        assert_eq!(r.header("a"), Some(&b"b c"[..]));
        assert_eq!(r.header_values("A").count(), 2);
        assert_eq!(r.body, b"body\r\n");
    }

    #[test]
    fn empty_value_and_bare_lf_are_accepted() {
        let r = parse_request(b"GET / HTTP/1.0\nHost:\n\n").unwrap();
        assert_eq!(r.header("host"), Some(&b""[..]));
        assert!(r.body.is_empty());
    }

    #[test]
    fn rejections() {
        let cases: &[(&[u8], HeadError)] = &[
            (b"GET / HTTP/1.1\r\nHost: x\r\n", HeadError::Incomplete),
            (b"GET /\r\n\r\n", HeadError::RequestLine),
            (b"GET  / HTTP/1.1\r\n\r\n", HeadError::RequestLine),
            (b"GET / HTTP/1.1 \r\n\r\n", HeadError::RequestLine),
            (b"G(T / HTTP/1.1\r\n\r\n", HeadError::Method),
            (b"GET /\x01 HTTP/1.1\r\n\r\n", HeadError::Target),
            (b"GET / HTTP/1.10\r\n\r\n", HeadError::Version),
            (b"GET / JUNK/1.0\r\n\r\n", HeadError::Version),
            (b"GET / HTTP/1.1\r\n folded\r\n\r\n", HeadError::ObsFold(1)),
            (
                b"GET / HTTP/1.1\r\nNoColon\r\n\r\n",
                HeadError::HeaderName(1),
            ),
            (
                b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
                HeadError::HeaderName(1),
            ),
            (
                b"GET / HTTP/1.1\r\nA: x\x00y\r\n\r\n",
                HeadError::HeaderValue(1),
            ),
            (b"GET / HTTP/1.1\r\nA: x\ry\r\n\r\n", HeadError::BareCr(20)),
        ];
        for (input, want) in cases {
            assert_eq!(
                parse_request(input).as_ref().err(),
                Some(want),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }

    proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse_request(&bytes);
        }

        #[test]
        fn never_panics_on_near_valid_input(
            line in "[A-Z]{1,6} /[ -~]{0,20} HTTP/1\\.[01]",
            headers in proptest::collection::vec("[!-~]{0,10}:[\\x00-\\xff]{0,12}", 0..6),
            body in proptest::collection::vec(any::<u8>(), 0..32),
        ) {
            let mut raw = line.into_bytes();
            for h in headers {
                raw.extend_from_slice(b"\r\n");
                raw.extend_from_slice(h.as_bytes());
            }
            raw.extend_from_slice(b"\r\n\r\n");
            raw.extend_from_slice(&body);
            if let Ok(parsed) = parse_request(&raw) {
                prop_assert!(raw.ends_with(&parsed.body));
            }
        }
    }
}
