//! Palisade's HTTP front door: the request heads it refuses with `400 Bad Request`
//! before any rule runs. The proxy applies this policy to every HTTP/1.x request it
//! parses, and the in-process CRS runner applies the same policy, so that both see
//! exactly what a client on a raw socket would get.
//!
//! The policy follows RFC 9110/9112 where a server MUST or SHOULD reject, and closes
//! request-smuggling vectors:
//! - the method is a token; the version is `HTTP/1.0` or `HTTP/1.1`;
//! - the request target is origin-form (`/path?query`), absolute-form
//!   (`scheme://...`), `*` (OPTIONS only) or, for CONNECT, authority-form with a port;
//!   it holds no blank, control byte or fragment (`#`);
//! - header names are tokens; values hold no CR, LF or NUL (no obs-fold);
//! - `Content-Length` is digits only, and repeated values agree;
//! - `Content-Length` together with `Transfer-Encoding` is refused, and the only
//!   transfer coding accepted is `chunked` (last);
//! - HTTP/1.1 requests carry exactly one `Host`.
//!
//! ```
//! let headers = [(&b"Host"[..], &b"example.com"[..])];
//! assert!(front::check_request(b"GET", b"/index.html?q=1", b"HTTP/1.1", &headers).is_ok());
//! assert!(front::check_request(b"GET", b"/#frag", b"HTTP/1.1", &headers).is_err());
//! ```
#![deny(missing_docs)]

use std::fmt;

/// Why a request head is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rejection {
    /// The method is not a token.
    InvalidMethod,
    /// The version is not HTTP/1.0 or HTTP/1.1.
    UnsupportedVersion,
    /// The request target is malformed.
    InvalidTarget,
    /// A header name is not a token, or a value holds CR, LF or NUL.
    InvalidHeader,
    /// `Content-Length` is not a number, or repeated values differ.
    InvalidContentLength,
    /// Both `Content-Length` and `Transfer-Encoding` are present.
    ContentLengthWithTransferEncoding,
    /// A transfer coding other than a final `chunked`.
    UnsupportedTransferEncoding,
    /// HTTP/1.1 without exactly one Host header.
    InvalidHost,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rejection::InvalidMethod => "invalid method",
            Rejection::UnsupportedVersion => "unsupported HTTP version",
            Rejection::InvalidTarget => "invalid request target",
            Rejection::InvalidHeader => "invalid header",
            Rejection::InvalidContentLength => "invalid Content-Length",
            Rejection::ContentLengthWithTransferEncoding => {
                "both Content-Length and Transfer-Encoding"
            }
            Rejection::UnsupportedTransferEncoding => "unsupported Transfer-Encoding",
            Rejection::InvalidHost => "missing or repeated Host",
        })
    }
}

impl std::error::Error for Rejection {}

/// RFC 9110 `tchar`.
pub fn is_tchar(b: u8) -> bool {
    TCHAR[usize::from(b)]
}

/// [`is_tchar`] as a table (checked on every header name of every request).
static TCHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0usize;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    t
};

fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// How the body of an accepted request is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    /// No body (no Content-Length, no Transfer-Encoding).
    None,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
}

/// Checks a request head; on success, says how its body is framed.
pub fn check_request(
    method: &[u8],
    target: &[u8],
    version: &[u8],
    headers: &[(&[u8], &[u8])],
) -> Result<BodyFraming, Rejection> {
    if !is_token(method) {
        return Err(Rejection::InvalidMethod);
    }
    let http11 = match version {
        b"HTTP/1.1" => true,
        b"HTTP/1.0" => false,
        _ => return Err(Rejection::UnsupportedVersion),
    };
    check_target(method, target)?;
    let mut length: Option<u64> = None;
    let mut transfer_encoding = false;
    let mut chunked_last = false;
    let mut hosts = 0;
    for (name, value) in headers {
        if !is_token(name) || memchr::memchr3(b'\r', b'\n', 0, value).is_some() {
            return Err(Rejection::InvalidHeader);
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            for part in value.split(|&b| b == b',') {
                let part = trim(part);
                if part.is_empty() || !part.iter().all(u8::is_ascii_digit) || part.len() > 19 {
                    return Err(Rejection::InvalidContentLength);
                }
                let n: u64 = std::str::from_utf8(part)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or(Rejection::InvalidContentLength)?;
                if length.is_some_and(|l| l != n) {
                    return Err(Rejection::InvalidContentLength);
                }
                length = Some(n);
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            transfer_encoding = true;
            for coding in value.split(|&b| b == b',') {
                let c = trim(coding);
                if c.is_empty() {
                    continue;
                }
                chunked_last = c.eq_ignore_ascii_case(b"chunked");
            }
        } else if name.eq_ignore_ascii_case(b"host") {
            hosts += 1;
        }
    }
    if http11 && hosts != 1 || hosts > 1 {
        return Err(Rejection::InvalidHost);
    }
    if transfer_encoding {
        if length.is_some() {
            return Err(Rejection::ContentLengthWithTransferEncoding);
        }
        if !chunked_last {
            return Err(Rejection::UnsupportedTransferEncoding);
        }
        return Ok(BodyFraming::Chunked);
    }
    Ok(length.map_or(BodyFraming::None, BodyFraming::Length))
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

fn check_target(method: &[u8], target: &[u8]) -> Result<(), Rejection> {
    if target.is_empty() || target.iter().any(|&b| b <= b' ' || b == 0x7f || b == b'#') {
        return Err(Rejection::InvalidTarget);
    }
    if method == b"CONNECT" {
        // authority-form: host ":" port (RFC 9110 §9.3.6: the port is required).
        let port = target.rsplit(|&b| b == b':').next().unwrap_or_default();
        let has_colon = target.contains(&b':');
        if !has_colon || port.is_empty() || !port.iter().all(u8::is_ascii_digit) {
            return Err(Rejection::InvalidTarget);
        }
        return Ok(());
    }
    if target == b"*" {
        return if method == b"OPTIONS" {
            Ok(())
        } else {
            Err(Rejection::InvalidTarget)
        };
    }
    if target[0] == b'/' {
        return Ok(());
    }
    // absolute-form: scheme ":" "//" ...
    let scheme_end = target.iter().position(|&b| b == b':');
    match scheme_end {
        Some(e)
            if e > 0
                && target[0].is_ascii_alphabetic()
                && target[..e]
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
                && target[e + 1..].starts_with(b"//") =>
        {
            Ok(())
        }
        _ => Err(Rejection::InvalidTarget),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: (&[u8], &[u8]) = (b"Host", b"localhost");

    #[test]
    fn accepts_ordinary_requests() {
        assert_eq!(
            check_request(b"GET", b"/a?b=c", b"HTTP/1.1", &[HOST]),
            Ok(BodyFraming::None)
        );
        assert_eq!(
            check_request(
                b"POST",
                b"/",
                b"HTTP/1.1",
                &[HOST, (b"Content-Length", b"12")]
            ),
            Ok(BodyFraming::Length(12))
        );
        assert_eq!(
            check_request(
                b"POST",
                b"/",
                b"HTTP/1.1",
                &[HOST, (b"Transfer-Encoding", b"gzip, chunked")]
            ),
            Ok(BodyFraming::Chunked)
        );
        assert!(check_request(b"GET", b"http://example.com/x", b"HTTP/1.0", &[]).is_ok());
        assert!(check_request(b"CONNECT", b"example.com:443", b"HTTP/1.1", &[HOST]).is_ok());
        assert!(check_request(b"OPTIONS", b"*", b"HTTP/1.1", &[HOST]).is_ok());
        assert!(check_request(b"GET", b"/<script>alert(1)</script>", b"HTTP/1.1", &[HOST]).is_ok());
    }

    #[test]
    fn refuses_what_the_policy_names() {
        type Case<'a> = (
            &'a [u8],
            &'a [u8],
            &'a [u8],
            Vec<(&'a [u8], &'a [u8])>,
            Rejection,
        );
        let cases: &[Case<'_>] = &[
            (
                b"\tGET",
                b"/",
                b"HTTP/1.1",
                vec![HOST],
                Rejection::InvalidMethod,
            ),
            (
                b"GET",
                b"/",
                b"HTTP/0.9",
                vec![HOST],
                Rejection::UnsupportedVersion,
            ),
            (
                b"GET",
                b"/",
                b"HTTP\\1.0",
                vec![HOST],
                Rejection::UnsupportedVersion,
            ),
            (
                b"GET",
                b"/#frag",
                b"HTTP/1.1",
                vec![HOST],
                Rejection::InvalidTarget,
            ),
            (
                b"GET",
                b"\\",
                b"HTTP/1.1",
                vec![HOST],
                Rejection::InvalidTarget,
            ),
            (
                b"CONNECT",
                b"example.com",
                b"HTTP/1.1",
                vec![HOST],
                Rejection::InvalidTarget,
            ),
            (
                b"GET",
                b"/",
                b"HTTP/1.1",
                vec![HOST, (b"X", b"a\rb")],
                Rejection::InvalidHeader,
            ),
            (
                b"GET",
                b"/",
                b"HTTP/1.1",
                vec![HOST, (b"Bad Name", b"v")],
                Rejection::InvalidHeader,
            ),
            (
                b"POST",
                b"/",
                b"HTTP/1.1",
                vec![HOST, (b"Content-Length", b"3;")],
                Rejection::InvalidContentLength,
            ),
            (
                b"POST",
                b"/",
                b"HTTP/1.1",
                vec![HOST, (b"Content-Length", b"1"), (b"Content-Length", b"2")],
                Rejection::InvalidContentLength,
            ),
            (
                b"POST",
                b"/",
                b"HTTP/1.1",
                vec![
                    HOST,
                    (b"Content-Length", b"7"),
                    (b"Transfer-Encoding", b"chunked"),
                ],
                Rejection::ContentLengthWithTransferEncoding,
            ),
            (
                b"POST",
                b"/",
                b"HTTP/1.1",
                vec![HOST, (b"Transfer-Encoding", b"chunked, gzip")],
                Rejection::UnsupportedTransferEncoding,
            ),
            (b"GET", b"/", b"HTTP/1.1", vec![], Rejection::InvalidHost),
            (
                b"GET",
                b"/",
                b"HTTP/1.1",
                vec![HOST, HOST],
                Rejection::InvalidHost,
            ),
        ];
        for (m, t, v, h, want) in cases {
            assert_eq!(
                check_request(m, t, v, h),
                Err(*want),
                "{:?} {:?}",
                String::from_utf8_lossy(m),
                String::from_utf8_lossy(t)
            );
        }
    }
}
