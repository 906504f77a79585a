//! Building the bytes go-ftw would put on the wire for a stage's input.
//!
//! Behaviour follows go-ftw (`runner/run.go` `getRequestFromTest`,
//! `test/defaults.go`, `test/types.go`, `test/data.go`,
//! `ftwhttp/request.go` `BuildRequest`/`AddStandardHeaders`,
//! `ftwhttp/header.go`), rule by rule:
//!
//! 1. **encoded_request** (non-empty) is base64 (`StdEncoding`: padding
//!    required, CR/LF ignored) of the complete request, sent as-is; no other
//!    field is consulted. It is an error together with non-empty `data`.
//!    The deprecated `raw_request` is sent as-is too (older go-ftw).
//! 2. **Request line** `"{method} {uri} {version}\r\n"`, each verbatim,
//!    with defaults `GET`, `/`, `HTTP/1.1` only when the key is absent (an
//!    explicit `""` stays empty).
//! 3. **Header order**: go-ftw reads `headers` into a Go map and rebuilds
//!    it with the names *sorted* byte-wise (`NewHeaderFromMap`), so the
//!    file order is not kept. `ordered_headers` (schema v3) is sent in list
//!    order. Each header is written `"{name}: {value}\r\n"` verbatim.
//! 4. **Body**: `data` (after the Go template subset of [`crate::template`])
//!    or else base64 `encoded_data`.
//! 5. **autocomplete_headers** (default true; the deprecated `stop_magic`
//!    is its inverse and only counts when `autocomplete_headers` is absent).
//!    When on and the body is non-empty: append
//!    `Content-Type: application/x-www-form-urlencoded` if no Content-Type
//!    header exists, then form-encode the body when a Content-Type value is
//!    exactly that type (see [`crate::form_encoding`]).
//! 6. **Multipart**: when any Content-Type value contains
//!    `multipart/form-data;` (case-insensitive), every LF of the body becomes
//!    CRLF (an existing CRLF becomes CR CR LF, as in go-ftw). This applies
//!    even with autocomplete off.
//! 7. When autocomplete is on: append `Connection: close` unless a
//!    Connection header exists; append `Content-Length: <body length>`
//!    unless one exists, when the body is non-empty or the method matches
//!    go-ftw's regex `^POST|PUT|PATCH|DELETE$` (i.e. starts with `POST`,
//!    contains `PUT` or `PATCH`, or ends with `DELETE`).
//! 8. **No Host** header is ever added (go-ftw only does so through its
//!    `override_empty_host_header` run option). No `Accept`, no
//!    `User-Agent`.
//!
//! "Exists" compares names the way go-ftw does, with Go's
//! `textproto.CanonicalMIMEHeaderKey` (ASCII case-insensitive for token
//! names; names with other bytes only match exactly).

use std::borrow::Cow;

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;

use crate::form_encoding;
use crate::http_head::{self, HeadError, HeaderField, ParsedRequest};
use crate::model::Input;
use crate::template::{self, TemplateError};

/// Default method when `method` is absent.
pub const DEFAULT_METHOD: &str = "GET";
/// Default request target when `uri` is absent.
pub const DEFAULT_URI: &str = "/";
/// Default version when `version` is absent.
pub const DEFAULT_VERSION: &str = "HTTP/1.1";
/// Content type go-ftw adds to bodies without one.
pub const FORM_URLENCODED: &str = "application/x-www-form-urlencoded";

/// Where go-ftw would connect (defaults `localhost`, 80, `http`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// Host name or address.
    pub addr: String,
    /// TCP port.
    pub port: u16,
    /// `http` or `https`.
    pub protocol: String,
}

/// How the bytes of a [`RawRequest`] came about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestKind {
    /// Assembled from method, uri, version, headers and data.
    Built,
    /// Decoded from `encoded_request`.
    Encoded,
    /// Taken from the deprecated `raw_request`.
    Raw,
}

/// The request of one stage: wire bytes plus a parsed view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRequest {
    /// Exactly what go-ftw would send.
    pub bytes: Vec<u8>,
    /// How the bytes were produced.
    pub kind: RequestKind,
    /// Method, target, version, headers and body for in-process use.
    /// For [`RequestKind::Built`] these are the parts as assembled (always
    /// `Ok`, even when they do not form a valid request line, e.g. an empty
    /// version); otherwise the result of [`http_head::parse_request`] on
    /// the bytes. Use [`RawRequest::reparse`] for the strict wire view.
    pub parsed: Result<ParsedRequest, HeadError>,
    /// Where the request would be sent.
    pub destination: Destination,
}

impl RawRequest {
    /// Parses [`RawRequest::bytes`] strictly, whatever the kind.
    pub fn reparse(&self) -> Result<ParsedRequest, HeadError> {
        http_head::parse_request(&self.bytes)
    }
}

/// Why a stage's input cannot be turned into a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// go-ftw's sanity check: both `data` and `encoded_request`.
    #[error("'data' and 'encoded_request' must not be set simultaneously")]
    DataAndEncodedRequest,
    /// Both `encoded_request` and `raw_request`.
    #[error("'encoded_request' and 'raw_request' must not be set simultaneously")]
    EncodedAndRawRequest,
    /// Both `headers` and `ordered_headers`.
    #[error("'headers' and 'ordered_headers' must not be set simultaneously")]
    HeadersAndOrderedHeaders,
    /// A base64 field does not decode.
    #[error("'{field}' is not valid base64: {reason}")]
    Base64 {
        /// `encoded_request` or `encoded_data`.
        field: &'static str,
        /// The decoder's complaint.
        reason: String,
    },
    /// The `data` template cannot be expanded.
    #[error("'data' template: {0}")]
    Template(#[from] TemplateError),
    /// A schema feature this runner does not implement.
    #[error("'{0}' is not supported")]
    Unsupported(&'static str),
}

/// Builds the request of a stage as go-ftw would send it.
pub fn build_request(input: &Input) -> Result<RawRequest, BuildError> {
    let destination = Destination {
        addr: input
            .dest_addr
            .clone()
            .unwrap_or_else(|| "localhost".to_string()),
        port: input.port.unwrap_or(80),
        protocol: input.protocol.clone().unwrap_or_else(|| "http".to_string()),
    };
    if input.uris.is_some() {
        return Err(BuildError::Unsupported("uris"));
    }
    if input.follow_redirect == Some(true) {
        return Err(BuildError::Unsupported("follow_redirect"));
    }
    let encoded = input.encoded_request.as_deref().filter(|s| !s.is_empty());
    let raw = input.raw_request.as_deref().filter(|s| !s.is_empty());
    let has_data = input.data.as_deref().is_some_and(|d| !d.is_empty());
    if has_data && (encoded.is_some() || raw.is_some()) {
        return Err(BuildError::DataAndEncodedRequest);
    }
    match (encoded, raw) {
        (Some(_), Some(_)) => Err(BuildError::EncodedAndRawRequest),
        (Some(b64), None) => {
            let bytes = decode_base64(b64, "encoded_request")?;
            Ok(RawRequest {
                parsed: http_head::parse_request(&bytes),
                bytes,
                kind: RequestKind::Encoded,
                destination,
            })
        }
        (None, Some(text)) => {
            let bytes = text.as_bytes().to_vec();
            Ok(RawRequest {
                parsed: http_head::parse_request(&bytes),
                bytes,
                kind: RequestKind::Raw,
                destination,
            })
        }
        (None, None) => build_from_fields(input, destination),
    }
}

/// The effective autocomplete setting (go-ftw's
/// `postProcessAutocompleteHeaders`).
pub fn autocomplete_headers(input: &Input) -> bool {
    match (input.autocomplete_headers, input.stop_magic) {
        (Some(on), _) => on,
        (None, Some(stop)) => !stop,
        (None, None) => true,
    }
}

fn build_from_fields(input: &Input, destination: Destination) -> Result<RawRequest, BuildError> {
    let method = input.method.as_deref().unwrap_or(DEFAULT_METHOD);
    let uri = input.uri.as_deref().unwrap_or(DEFAULT_URI);
    let version = input.version.as_deref().unwrap_or(DEFAULT_VERSION);
    let autocomplete = autocomplete_headers(input);

    let mut headers: Vec<(String, String)> = match (&input.headers, &input.ordered_headers) {
        (Some(_), Some(_)) => return Err(BuildError::HeadersAndOrderedHeaders),
        (Some(map), None) => {
            let mut sorted = map.0.clone();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            sorted
        }
        (None, Some(list)) => list
            .iter()
            .map(|h| (h.name.clone(), h.value.clone()))
            .collect(),
        (None, None) => Vec::new(),
    };

    let mut body: Vec<u8> = match (&input.data, &input.encoded_data) {
        (Some(data), _) => template::expand(data)?.into_bytes(),
        (None, Some(b64)) => decode_base64(b64, "encoded_data")?,
        (None, None) => Vec::new(),
    };

    if !body.is_empty() && autocomplete {
        if !has_header(&headers, "Content-Type") {
            headers.push(("Content-Type".to_string(), FORM_URLENCODED.to_string()));
        }
        let is_form = headers
            .iter()
            .any(|(n, v)| same_name(n, "Content-Type") && v.eq_ignore_ascii_case(FORM_URLENCODED));
        if is_form {
            body = form_encoding::encode_form_data(&body);
        }
    }

    let multipart = headers.iter().any(|(n, v)| {
        same_name(n, "Content-Type") && v.to_ascii_lowercase().contains("multipart/form-data;")
    });
    if multipart {
        body = lf_to_crlf(&body);
    }

    if autocomplete {
        if !has_header(&headers, "Connection") {
            headers.push(("Connection".to_string(), "close".to_string()));
        }
        if !has_header(&headers, "Content-Length")
            && (!body.is_empty() || method_permits_body(method))
        {
            headers.push(("Content-Length".to_string(), body.len().to_string()));
        }
    }

    let mut bytes = Vec::with_capacity(128 + body.len());
    bytes.extend_from_slice(method.as_bytes());
    bytes.push(b' ');
    bytes.extend_from_slice(uri.as_bytes());
    bytes.push(b' ');
    bytes.extend_from_slice(version.as_bytes());
    bytes.extend_from_slice(b"\r\n");
    for (name, value) in &headers {
        bytes.extend_from_slice(name.as_bytes());
        bytes.extend_from_slice(b": ");
        bytes.extend_from_slice(value.as_bytes());
        bytes.extend_from_slice(b"\r\n");
    }
    bytes.extend_from_slice(b"\r\n");
    bytes.extend_from_slice(&body);

    let parsed = ParsedRequest {
        method: method.as_bytes().to_vec(),
        uri: uri.as_bytes().to_vec(),
        version: version.as_bytes().to_vec(),
        headers: headers
            .into_iter()
            .map(|(n, v)| HeaderField::new(n, v))
            .collect(),
        body,
    };
    Ok(RawRequest {
        bytes,
        kind: RequestKind::Built,
        parsed: Ok(parsed),
        destination,
    })
}

/// go-ftw's `methodsWithBodyRegex` (`^POST|PUT|PATCH|DELETE$`), whose
/// anchors bind to the first and last alternative only.
pub fn method_permits_body(method: &str) -> bool {
    method.starts_with("POST")
        || method.contains("PUT")
        || method.contains("PATCH")
        || method.ends_with("DELETE")
}

fn has_header(headers: &[(String, String)], name: &str) -> bool {
    headers.iter().any(|(n, _)| same_name(n, name))
}

fn same_name(a: &str, b: &str) -> bool {
    canonical_key(a) == canonical_key(b)
}

/// Go's `textproto.CanonicalMIMEHeaderKey`: names made only of token bytes
/// get the first letter and each letter after `-` upper-cased and the rest
/// lower-cased; any other name is returned unchanged.
pub fn canonical_key(name: &str) -> Cow<'_, str> {
    if !name.bytes().all(http_head::is_tchar) {
        return Cow::Borrowed(name);
    }
    let mut upper = true;
    let canonical: String = name
        .chars()
        .map(|c| {
            let out = if upper {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            };
            upper = c == '-';
            out
        })
        .collect();
    Cow::Owned(canonical)
}

fn lf_to_crlf(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + body.len() / 16);
    for &b in body {
        if b == b'\n' {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

fn decode_base64(text: &str, field: &'static str) -> Result<Vec<u8>, BuildError> {
    // Go's StdEncoding skips CR and LF anywhere and requires padding; it
    // does not insist on zero trailing bits.
    const GO_STD: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
    );
    let cleaned: Vec<u8> = text.bytes().filter(|&b| b != b'\r' && b != b'\n').collect();
    GO_STD.decode(cleaned).map_err(|e| BuildError::Base64 {
        field,
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    // Tests may unwrap: a panic is the failure report.
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::model::{HeaderList, HeaderTuple};

    fn input(yaml: &str) -> Input {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn wire(yaml: &str) -> String {
        String::from_utf8(build_request(&input(yaml)).unwrap().bytes).unwrap()
    }

    #[test]
    fn defaults_get_slash_http11_and_connection_close() {
        assert_eq!(wire("{}"), "GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    }

    #[test]
    fn explicit_empty_fields_stay_empty() {
        assert_eq!(
            wire("version: \"\"\nautocomplete_headers: false"),
            "GET / \r\n\r\n"
        );
    }

    #[test]
    fn map_headers_are_sorted_like_go_ftw() {
        let got = wire("headers:\n  User-Agent: ua\n  Host: localhost\n  Accept: '*/*'\n  accept-language: en\n");
        assert_eq!(
            got,
            "GET / HTTP/1.1\r\nAccept: */*\r\nHost: localhost\r\nUser-Agent: ua\r\naccept-language: en\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn ordered_headers_keep_list_order() {
        let mut i = Input {
            ordered_headers: Some(vec![
                HeaderTuple {
                    name: "Z".into(),
                    value: "1".into(),
                },
                HeaderTuple {
                    name: "A".into(),
                    value: "2".into(),
                },
            ]),
            autocomplete_headers: Some(false),
            ..Input::default()
        };
        let got = build_request(&i).unwrap().bytes;
        assert_eq!(got, b"GET / HTTP/1.1\r\nZ: 1\r\nA: 2\r\n\r\n");
        i.headers = Some(HeaderList::default());
        assert_eq!(build_request(&i), Err(BuildError::HeadersAndOrderedHeaders));
    }

    #[test]
    fn body_gets_content_type_form_encoding_and_length() {
        let got = wire("method: POST\ndata: \"a=<b>&c=d e\"");
        assert_eq!(
            got,
            "POST / HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nConnection: close\r\nContent-Length: 15\r\n\r\na=%3Cb%3E&c=d+e"
        );
    }

    #[test]
    fn existing_content_type_is_kept_and_not_form_encoded() {
        let got = wire(
            "method: POST\nheaders:\n  content-type: application/json\ndata: '{\"a\": \"<b>\"}'",
        );
        assert_eq!(
            got,
            "POST / HTTP/1.1\r\ncontent-type: application/json\r\nConnection: close\r\nContent-Length: 12\r\n\r\n{\"a\": \"<b>\"}"
        );
    }

    #[test]
    fn form_content_type_match_is_case_insensitive_and_exact() {
        let enc = wire("headers:\n  Content-Type: Application/X-WWW-Form-Urlencoded\ndata: a=<");
        assert!(enc.ends_with("\r\n\r\na=%3C"), "{enc}");
        let not = wire(
            "headers:\n  Content-Type: application/x-www-form-urlencoded; charset=utf-8\ndata: a=<",
        );
        assert!(not.ends_with("\r\n\r\na=<"), "{not}");
    }

    #[test]
    fn already_encoded_form_data_is_untouched() {
        let got = wire("data: a=%3Cb%3E+c");
        assert!(
            got.ends_with("Content-Length: 11\r\n\r\na=%3Cb%3E+c"),
            "{got}"
        );
    }

    #[test]
    fn existing_connection_and_content_length_are_kept() {
        let got =
            wire("method: POST\nheaders:\n  connection: keep-alive\n  CONTENT-LENGTH: 99\ndata: x");
        assert_eq!(
            got,
            "POST / HTTP/1.1\r\nCONTENT-LENGTH: 99\r\nconnection: keep-alive\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\nx"
        );
    }

    #[test]
    fn content_length_zero_for_body_methods_without_body() {
        for (method, expect) in [
            ("POST", true),
            ("POSTX", true),
            ("XPUTX", true),
            ("PATCH", true),
            ("DELETE", true),
            ("XDELETE", true),
            ("DELETEX", false),
            ("GET", false),
            ("OPTIONS", false),
        ] {
            let got = wire(&format!("method: {method}"));
            assert_eq!(
                got.contains("Content-Length: 0\r\n"),
                expect,
                "{method}: {got}"
            );
        }
    }

    #[test]
    fn get_with_body_gets_content_length() {
        let got = wire("data: x");
        assert!(got.contains("Content-Length: 1\r\n"), "{got}");
    }

    #[test]
    fn autocomplete_false_adds_nothing_and_does_not_encode() {
        let got = wire("method: POST\nautocomplete_headers: false\nheaders:\n  Content-Length: 22\ndata: 'file=cat+/etc/<x>'");
        assert_eq!(
            got,
            "POST / HTTP/1.1\r\nContent-Length: 22\r\n\r\nfile=cat+/etc/<x>"
        );
    }

    #[test]
    fn stop_magic_is_inverse_autocomplete() {
        assert!(!autocomplete_headers(&input("stop_magic: true")));
        assert!(autocomplete_headers(&input("stop_magic: false")));
        assert!(autocomplete_headers(&input(
            "stop_magic: true\nautocomplete_headers: true"
        )));
        assert!(autocomplete_headers(&input("{}")));
    }

    #[test]
    fn multipart_lf_becomes_crlf_even_without_autocomplete() {
        let got = wire("method: POST\nautocomplete_headers: false\nheaders:\n  Content-Type: Multipart/Form-Data; boundary=b\ndata: \"--b\\nx\\r\\n--b--\\n\"");
        assert!(got.ends_with("\r\n\r\n--b\r\nx\r\r\n--b--\r\n"), "{got:?}");
        // Without the ';' go-ftw does not recognise it.
        let got = wire("autocomplete_headers: false\nheaders:\n  Content-Type: multipart/form-data\ndata: \"a\\nb\"");
        assert!(got.ends_with("\r\n\r\na\nb"), "{got:?}");
    }

    #[test]
    fn multipart_content_length_counts_crlf() {
        let got = wire("method: POST\nheaders:\n  Content-Type: multipart/form-data; boundary=b\ndata: |\n  --b\n  --b--\n");
        assert!(
            got.ends_with("Content-Length: 12\r\n\r\n--b\r\n--b--\r\n"),
            "{got:?}"
        );
    }

    #[test]
    fn data_template_is_expanded() {
        let got = wire("autocomplete_headers: false\ndata: '{{ \"1\" | repeat 3 }}'");
        assert!(got.ends_with("\r\n\r\n111"), "{got:?}");
    }

    #[test]
    fn encoded_data_is_the_body() {
        let got = build_request(&input("autocomplete_headers: false\nencoded_data: AAEC")).unwrap();
        assert!(got.bytes.ends_with(b"\r\n\r\n\x00\x01\x02"));
    }

    #[test]
    fn no_host_header_is_added() {
        assert!(!wire("method: POST\ndata: a")
            .to_ascii_lowercase()
            .contains("host"));
    }

    #[test]
    fn encoded_request_is_sent_verbatim() {
        // "GET / HTTP/1.0\r\nHost:\r\n\r\n" split over lines, as CRS does.
        let r = build_request(&input(
            "encoded_request: \"R0VUIC8gSFRUUC8xLjANCkhv\\nc3Q6DQoNCg==\"\nheaders:\n  Ignored: x\nuri: /ignored",
        ))
        .unwrap();
        assert_eq!(r.kind, RequestKind::Encoded);
        assert_eq!(r.bytes, b"GET / HTTP/1.0\r\nHost:\r\n\r\n");
        let p = r.parsed.unwrap();
        assert_eq!(p.header("host"), Some(&b""[..]));
    }

    #[test]
    fn encoded_request_errors() {
        assert!(matches!(
            build_request(&input("encoded_request: '!!'")),
            Err(BuildError::Base64 {
                field: "encoded_request",
                ..
            })
        ));
        // Go's StdEncoding requires padding.
        assert!(build_request(&input("encoded_request: 'R0VU'")).is_ok());
        assert!(build_request(&input("encoded_request: 'R0VUIA'")).is_err());
        assert_eq!(
            build_request(&input("encoded_request: 'R0VU'\ndata: x")),
            Err(BuildError::DataAndEncodedRequest)
        );
        // An empty encoded_request counts as absent.
        assert!(wire("encoded_request: ''").starts_with("GET / HTTP/1.1\r\n"));
    }

    #[test]
    fn unparsable_encoded_request_is_reported_not_fatal() {
        let r = build_request(&input("encoded_request: 'R0VU'")).unwrap();
        assert_eq!(r.bytes, b"GET");
        assert!(r.parsed.is_err());
    }

    #[test]
    fn destination_defaults() {
        let r = build_request(&input("{}")).unwrap();
        assert_eq!(r.destination.addr, "localhost");
        assert_eq!(r.destination.port, 80);
        assert_eq!(r.destination.protocol, "http");
    }

    #[test]
    fn unsupported_fields_are_errors() {
        assert_eq!(
            build_request(&input("uris: [/a, /b]")),
            Err(BuildError::Unsupported("uris"))
        );
        assert_eq!(
            build_request(&input("follow_redirect: true")),
            Err(BuildError::Unsupported("follow_redirect"))
        );
    }

    proptest::proptest! {
        #[test]
        fn building_never_panics(
            method in proptest::option::of(".{0,8}"),
            uri in proptest::option::of(".{0,16}"),
            version in proptest::option::of(".{0,10}"),
            headers in proptest::collection::vec((".{0,8}", ".{0,12}"), 0..5),
            data in proptest::option::of(".{0,40}"),
            encoded in proptest::option::of("[A-Za-z0-9+/=\\n]{0,24}"),
            autocomplete in proptest::option::of(proptest::bool::ANY),
        ) {
            let input = Input {
                method,
                uri,
                version,
                headers: Some(HeaderList(headers)),
                data,
                encoded_request: encoded,
                autocomplete_headers: autocomplete,
                ..Input::default()
            };
            if let Ok(req) = build_request(&input) {
                if req.kind == RequestKind::Built {
                    let body = &req.parsed.as_ref().unwrap().body;
                    proptest::prop_assert!(req.bytes.ends_with(body));
                }
            }
        }
    }

    #[test]
    fn canonical_key_matches_go() {
        assert_eq!(canonical_key("content-type"), "Content-Type");
        assert_eq!(canonical_key("CONTENT-LENGTH"), "Content-Length");
        assert_eq!(canonical_key("x-1a"), "X-1a");
        assert_eq!(canonical_key("bad name"), "bad name");
        assert!(!same_name("content type", "Content Type"));
    }

    #[test]
    fn built_parsed_view_matches_fields() {
        let r = build_request(&input("method: PUT\nuri: /x\nheaders:\n  A: b\ndata: z")).unwrap();
        let p = r.parsed.clone().unwrap();
        assert_eq!(p.method, b"PUT");
        assert_eq!(p.uri, b"/x");
        assert_eq!(p.body, b"z");
        assert_eq!(r.reparse().unwrap(), p);
    }
}
