//! The in-process target: every stage's request is evaluated by the engine directly
//! (no sockets), with a built-in backend that answers like the CRS suite's test
//! backend (`/reflect` returns the status, headers and body given in its JSON
//! request; other paths answer 200 with an empty body).

use std::sync::Arc;

use base64::Engine as _;
use engine::{Connection, Program, Transaction};

use crate::chunked::decode_chunked;
use crate::model::Stage;
use crate::request::RawRequest;
use crate::target::{StageOutcome, Target, TestRef};

/// Runs stages through an engine program in-process.
#[derive(Debug, Clone)]
pub struct EngineTarget {
    program: Arc<Program>,
}

impl EngineTarget {
    /// A target over a compiled program.
    pub fn new(program: Arc<Program>) -> Self {
        EngineTarget { program }
    }
}

/// A response the built-in backend gives (also served over sockets by
/// [`crate::reflect_backend`]).
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(Vec<u8>, Vec<u8>)>,
    pub(crate) body: Vec<u8>,
}

/// The CRS test backend's answer for a request path and body.
pub(crate) fn backend(path: &[u8], body: &[u8]) -> Reply {
    let mut reply = Reply {
        status: 200,
        headers: Vec::new(),
        body: Vec::new(),
    };
    if path.starts_with(b"/reflect") {
        if let Ok(serde_json::Value::Object(spec)) =
            serde_json::from_slice::<serde_json::Value>(body)
        {
            if let Some(s) = spec.get("status").and_then(serde_json::Value::as_u64) {
                reply.status = u16::try_from(s).unwrap_or(200);
            }
            if let Some(serde_json::Value::Object(h)) = spec.get("headers") {
                for (k, v) in h {
                    if let Some(v) = v.as_str() {
                        reply
                            .headers
                            .push((k.as_bytes().to_vec(), v.as_bytes().to_vec()));
                    }
                }
            }
            if let Some(b) = spec.get("body").and_then(serde_json::Value::as_str) {
                reply.body = b.as_bytes().to_vec();
            }
            if let Some(b) = spec.get("encodedBody").and_then(serde_json::Value::as_str) {
                if let Ok(d) = base64::engine::general_purpose::STANDARD.decode(b) {
                    reply.body = d;
                }
            }
        }
    }
    if !reply
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case(b"content-type"))
    {
        let sniffed: &[u8] = if reply.body.is_empty() {
            b"text/plain; charset=utf-8"
        } else {
            sniff(&reply.body)
        };
        reply
            .headers
            .push((b"Content-Type".to_vec(), sniffed.to_vec()));
    }
    reply
}

/// A small content sniffer (as Go's net/http does for the test backend).
fn sniff(body: &[u8]) -> &'static [u8] {
    let start = body
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(0);
    let head = body[start..]
        .iter()
        .take(14)
        .map(u8::to_ascii_lowercase)
        .collect::<Vec<u8>>();
    let html = [
        &b"<!doctype html"[..],
        b"<html",
        b"<head",
        b"<script",
        b"<iframe",
        b"<h1",
        b"<div",
        b"<font",
        b"<table",
        b"<a",
        b"<style",
        b"<title",
        b"<b",
        b"<body",
        b"<br",
        b"<p",
        b"<!--",
    ];
    if html
        .iter()
        .any(|t| head.starts_with(t) && head.get(t.len()).is_none_or(|c| *c == b' ' || *c == b'>'))
    {
        return b"text/html; charset=utf-8";
    }
    if head.starts_with(b"<?xml") {
        return b"text/xml; charset=utf-8";
    }
    if body
        .iter()
        .any(|&b| b < 0x09 || (0x0e..0x20).contains(&b) && b != 0x1b)
    {
        return b"application/octet-stream";
    }
    b"text/plain; charset=utf-8"
}

impl Target for EngineTarget {
    fn run(&mut self, _test: &TestRef<'_>, _stage: &Stage, req: &RawRequest) -> StageOutcome {
        let parsed = match &req.parsed {
            Ok(p) => p,
            Err(e) => {
                // A server rejects a malformed request before any rule runs.
                return StageOutcome {
                    status: Some(400),
                    error: None,
                    log: format!("request rejected by the HTTP parser: {e}"),
                    ..StageOutcome::default()
                };
            }
        };
        // The front door: what Palisade's server refuses before any rule runs.
        let head: Vec<(&[u8], &[u8])> = parsed
            .headers
            .iter()
            .map(|h| (h.name.as_slice(), h.value.as_slice()))
            .collect();
        let framing =
            match front::check_request(&parsed.method, &parsed.uri, &parsed.version, &head) {
                Ok(f) => f,
                Err(e) => {
                    return StageOutcome {
                        status: Some(400),
                        log: format!("request refused by the front door: {e}"),
                        ..StageOutcome::default()
                    };
                }
            };
        let mut tx = Transaction::new(Arc::clone(&self.program), &Connection::default());
        let uri = String::from_utf8_lossy(&parsed.uri).into_owned();
        let method = String::from_utf8_lossy(&parsed.method).into_owned();
        let version = String::from_utf8_lossy(&parsed.version).into_owned();
        tx.process_uri(&uri, &method, &version);
        for h in &parsed.headers {
            tx.add_request_header(&h.name, &h.value);
        }
        let mut status = None;
        tx.process_request_headers();
        let body = match framing {
            front::BodyFraming::Chunked => match decode_chunked(&parsed.body) {
                Ok(b) => b,
                Err(e) => {
                    return StageOutcome {
                        status: Some(400),
                        log: format!("invalid chunked body: {e}"),
                        ..StageOutcome::default()
                    };
                }
            },
            front::BodyFraming::Length(n) => {
                parsed.body[..(n as usize).min(parsed.body.len())].to_vec()
            }
            // Without Content-Length or Transfer-Encoding, HTTP/1.1 has no body.
            front::BodyFraming::None => Vec::new(),
        };
        tx.append_request_body(&body);
        tx.process_request_body();
        if let Some(i) = tx.intervention() {
            status = Some(i.status());
        }
        if status.is_none() {
            let path = uri.split('?').next().unwrap_or("").as_bytes().to_vec();
            let reply = backend(&path, &body);
            for (k, v) in &reply.headers {
                tx.add_response_header(k, v);
            }
            tx.process_response_headers(reply.status, "HTTP/1.1");
            tx.append_response_body(&reply.body);
            tx.process_response_body();
            status = Some(tx.intervention().map_or(reply.status, |i| i.status()));
        }
        tx.process_logging();
        let host = parsed
            .header("host")
            .map(|h| String::from_utf8_lossy(h).into_owned())
            .unwrap_or_default();
        let mut log = String::new();
        for m in tx.matched_rules() {
            log.push_str(&m.log_line(tx.unique_id(), &host, &uri));
            log.push('\n');
        }
        StageOutcome {
            status,
            matched_ids: tx.matched_rules().iter().map(|m| m.id).collect(),
            log,
            error: None,
            response: None,
        }
    }
}
