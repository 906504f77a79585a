//! Fuzz target: a whole transaction through the OWASP CRS (paranoia level 2, engine
//! On), built once from `../shared/crs` with `ftw::crs_config::crs_config`.
//!
//! Input format (so that seeds are plain HTTP requests):
//!
//! ```text
//! byte 0    flags: bits 0-2 Content-Type override (0 = as in the headers,
//!           1 urlencoded, 2 multipart with a boundary, 3 application/json,
//!           4 text/xml, 5 application/soap+xml, 6 text/plain,
//!           7 application/octet-stream); bits 3-4 number of body chunks - 1
//!           (1-3); bit 5 no Content-Length added; bit 6 keep going after an
//!           intervention (as a careless embedder would)
//! byte 1    where the body is split into chunks
//! byte 2    response: bits 0-2 status, bits 3-5 Content-Type
//! rest      "METHOD URI VERSION\nName: value\n...\n\nbody" (CRLF or LF), parsed
//!           leniently: missing parts get defaults, lines without a colon are
//!           headers with an empty value
//! ```
//!
//! For the multipart override the boundary is the body's first line without its
//! leading `--` (so a valid multipart seed stays valid), or `fuzzboundary`.
//! The transaction runs phases 1-5 like the proxy: request headers, the body fed in
//! 1-3 chunks, response headers, a small response body (with a reflection of the
//! request body, as a vulnerable application would), logging; then every matched
//! rule's log line is rendered.
#![no_main]

use std::path::Path;
use std::sync::{Arc, OnceLock};

use engine::{Connection, Program, Transaction};
use libfuzzer_sys::fuzz_target;

fn program() -> &'static Arc<Program> {
    static PROGRAM: OnceLock<Arc<Program>> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let crs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/crs");
        let text = ftw::crs_config::crs_config(&crs, 2, false)
            .unwrap_or_else(|e| panic!("reading the CRS at {}: {e}", crs.display()));
        Program::from_str("crs.conf", &text).unwrap_or_else(|e| panic!("compiling the CRS: {e}"))
    })
}

const CONTENT_TYPES: [&str; 8] = [
    "",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=",
    "application/json",
    "text/xml",
    "application/soap+xml; charset=utf-8",
    "text/plain",
    "application/octet-stream",
];

const STATUSES: [u16; 8] = [200, 201, 204, 302, 403, 404, 500, 503];

const RESPONSE_TYPES: [&str; 8] = [
    "text/html",
    "text/plain",
    "text/xml",
    "application/json",
    "text/html; charset=utf-8",
    "",
    "image/png",
    "TEXT/HTML",
];

struct Request<'a> {
    method: String,
    uri: String,
    version: String,
    headers: Vec<(&'a [u8], &'a [u8])>,
    body: &'a [u8],
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'\r'] = s {
        s = rest;
    }
    s
}

fn parse(data: &[u8]) -> Request<'_> {
    // Head and body split at the first empty line.
    let mut head_end = data.len();
    let mut body_start = data.len();
    let mut i = 0;
    while i < data.len() {
        if data[i] == b'\n' {
            let next = &data[i + 1..];
            if next.starts_with(b"\n") {
                head_end = i;
                body_start = i + 2;
                break;
            }
            if next.starts_with(b"\r\n") {
                head_end = i;
                body_start = i + 3;
                break;
            }
        }
        i += 1;
    }
    let head = &data[..head_end];
    let body = &data[body_start.min(data.len())..];
    let mut lines = head.split(|&b| b == b'\n');
    let request_line = lines.next().unwrap_or_default();
    let mut parts = trim(request_line).splitn(3, |&b| b == b' ');
    let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let method = parts
        .next()
        .filter(|m| !m.is_empty())
        .map_or("GET".into(), lossy);
    let uri = parts
        .next()
        .filter(|u| !u.is_empty())
        .map_or("/".into(), lossy);
    let version = parts.next().map_or("HTTP/1.1".into(), lossy);
    let headers = lines
        .map(trim)
        .filter(|l| !l.is_empty())
        .map(|l| match l.iter().position(|&b| b == b':') {
            Some(c) => (trim(&l[..c]), trim(&l[c + 1..])),
            None => (l, &l[l.len()..]),
        })
        .collect();
    Request {
        method,
        uri,
        version,
        headers,
        body,
    }
}

fuzz_target!(|data: &[u8]| {
    let [flags, split, response, rest @ ..] = data else {
        return;
    };
    let req = parse(rest);
    let program = program();
    let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
    tx.process_uri(&req.uri, &req.method, &req.version);

    let override_ct = usize::from(flags & 7);
    let mut content_type = CONTENT_TYPES[override_ct].as_bytes().to_vec();
    if override_ct == 2 {
        let first = req.body.split(|&b| b == b'\n').next().unwrap_or_default();
        let first = first.strip_suffix(b"\r").unwrap_or(first);
        match first.strip_prefix(b"--") {
            Some(b) if !b.is_empty() => content_type.extend_from_slice(b),
            _ => content_type.extend_from_slice(b"fuzzboundary"),
        }
    }
    let mut has_length = false;
    for (name, value) in &req.headers {
        if override_ct != 0 && name.eq_ignore_ascii_case(b"content-type") {
            continue;
        }
        has_length |= name.eq_ignore_ascii_case(b"content-length");
        tx.add_request_header(name, value);
    }
    if override_ct != 0 {
        tx.add_request_header(b"Content-Type", &content_type);
    }
    if !has_length && flags & 0x20 == 0 && !req.body.is_empty() {
        tx.add_request_header(b"Content-Length", req.body.len().to_string().as_bytes());
    }
    let keep_going = flags & 0x40 != 0;

    let mut blocked = tx.process_request_headers().is_some();
    if !blocked || keep_going {
        // 1-3 chunks, split at positions derived from `split`.
        let chunks = usize::from((flags >> 3) & 3).min(2) + 1;
        let len = req.body.len();
        let a = if len == 0 {
            0
        } else {
            usize::from(*split) % (len + 1)
        };
        let b = if chunks == 3 { a + (len - a) / 2 } else { len };
        let pieces: [&[u8]; 3] = match chunks {
            1 => [req.body, &[], &[]],
            2 => [&req.body[..a], &req.body[a..], &[]],
            _ => [&req.body[..a], &req.body[a..b], &req.body[b..]],
        };
        for piece in pieces.iter().take(chunks) {
            let _ = tx.append_request_body(piece);
        }
        blocked = tx.process_request_body().is_some();
    }
    if !blocked || keep_going {
        let status = STATUSES[usize::from(response & 7)];
        let ct = RESPONSE_TYPES[usize::from((response >> 3) & 7)];
        if !ct.is_empty() {
            tx.add_response_header(b"Content-Type", ct.as_bytes());
        }
        tx.add_response_header(b"Server", b"fuzz");
        blocked = tx.process_response_headers(status, "HTTP/1.1").is_some();
        if !blocked || keep_going {
            let mut body = b"<html><body>Hello ".to_vec();
            body.extend_from_slice(&req.body[..req.body.len().min(256)]);
            body.extend_from_slice(b"</body></html>");
            if tx.wants_response_body() {
                let _ = tx.append_response_body(&body);
            }
            let _ = tx.process_response_body();
        }
    }
    tx.process_logging();
    let _ = tx.audit_relevant();
    let _ = tx.audit_parts();
    let _ = tx.intervention().map(|i| i.status());
    for m in tx.matched_rules() {
        let _ = m.log_line(tx.unique_id(), "localhost", tx.uri());
    }
});
