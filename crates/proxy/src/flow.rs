//! The request flow: one request context through the SecLang phases.
//!
//! ```text
//! route -> phase 1 (headers) -> request body, buffered only as far as the engine
//! reads it (SecRequestBodyAccess, SecRequestBodyLimit, Reject / ProcessPartial)
//! -> phase 2 -> upstream (round robin, retry on connect failure when the body is
//! replayable) -> phase 3 (response headers) -> phase 4 (response body, for the
//! configured MIME types within SecResponseBodyLimit, else streamed untouched)
//! -> response streamed -> phase 5, audit record, metrics (when the body is done)
//! ```
//!
//! Each phase either continues or answers at once (deny with the configured status
//! and a small body carrying the UNIQUE_ID; redirect; drop closes the connection).
//! Errors say which side failed: the client (400/413), the upstream (502, 504).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use engine::{BodyStatus, Connection, Intervention, Transaction};
use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, Method, Response, StatusCode, Version};
use http_body::Body as _;
use http_body_util::BodyExt;

use crate::body::{BodyRx, ClientBodyError, ClientErrorSlot, Finish, ForwardBody, ProxyBody};
use crate::h1::DropConnection;
use crate::metrics::{Decision, Phase};
use crate::runtime::{Mode, Runtime};
use crate::spill::HeldBody;
use crate::upstream::exchange::{RequestFraming, UpstreamResponse};
use crate::upstream::pool::UpConn;
use crate::Shared;
use smallvec::SmallVec;

/// How a request body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body.
    None,
    /// Exactly this many bytes.
    Length(u64),
    /// HTTP/1.1 chunked.
    Chunked,
    /// A stream of unknown length (HTTP/2 without content-length).
    Stream,
}

/// A parsed, accepted request head.
#[derive(Debug)]
pub struct RequestHead {
    /// Method.
    pub method: Method,
    /// The request target as sent (origin-form or absolute-form).
    pub target: String,
    /// Version.
    pub version: Version,
    /// Header lines: HTTP/1 as received (names in their original case, in order,
    /// `Expect: 100-continue` excluded), which the engine sees as ModSecurity would
    /// and which are forwarded as they came; HTTP/2 as a map (names lower-case on
    /// the wire).
    pub headers: HeaderLines,
    /// Body framing.
    pub framing: Framing,
}

/// Header lines as received: spans into the raw request head (no copy and no
/// reference count per header).
#[derive(Debug, Default)]
pub struct Received {
    raw: Bytes,
    spans: Vec<[u32; 4]>,
}

impl Received {
    /// No lines yet, room for `n`.
    pub fn with_capacity(raw: Bytes, n: usize) -> Self {
        Received {
            raw,
            spans: Vec::with_capacity(n),
        }
    }

    /// Adds a line given as sub-slices of the raw head (skipped if they are not).
    pub fn push(&mut self, name: &[u8], value: &[u8]) {
        let base = self.raw.as_ptr() as usize;
        let len = self.raw.len();
        let span = |s: &[u8]| -> Option<[u32; 2]> {
            let start = (s.as_ptr() as usize).checked_sub(base)?;
            let end = start.checked_add(s.len())?;
            (end <= len).then_some([u32::try_from(start).ok()?, u32::try_from(end).ok()?])
        };
        if let (Some(n), Some(v)) = (span(name), span(value)) {
            self.spans.push([n[0], n[1], v[0], v[1]]);
        }
    }

    /// The lines, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.spans.iter().map(|&[a, b, c, d]| {
            (
                &self.raw[a as usize..b as usize],
                &self.raw[c as usize..d as usize],
            )
        })
    }
}

/// A request's header lines.
#[derive(Debug)]
pub enum HeaderLines {
    /// HTTP/1: spans of the raw head (no map is built for a request forwarded as
    /// it came).
    Raw(Received),
    /// HTTP/2.
    Map(HeaderMap),
}

impl HeaderLines {
    /// Every line, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let (raw, map) = match self {
            HeaderLines::Raw(r) => (Some(r.iter()), None),
            HeaderLines::Map(m) => (None, Some(m.iter())),
        };
        raw.into_iter().flatten().chain(
            map.into_iter()
                .flatten()
                .map(|(n, v)| (n.as_str().as_bytes(), v.as_bytes())),
        )
    }

    /// The values of `name` (ASCII case-insensitive), in order.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| v)
    }

    /// The first value of `name`.
    pub fn get<'a>(&'a self, name: &'a str) -> Option<&'a [u8]> {
        self.get_all(name).next()
    }

    /// Number of lines.
    pub fn len(&self) -> usize {
        match self {
            HeaderLines::Raw(r) => r.spans.len(),
            HeaderLines::Map(m) => m.len(),
        }
    }

    /// Whether there are no lines.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The tokens of every `Connection` value.
    fn connection_tokens(&self) -> impl Iterator<Item = &[u8]> {
        self.get_all("connection")
            .flat_map(|v| v.split(|&b| b == b','))
            .map(<[u8]>::trim_ascii)
            .filter(|t| !t.is_empty())
    }
}

/// Facts about the client connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnInfo {
    /// The peer.
    pub peer: SocketAddr,
    /// Our address.
    pub local: SocketAddr,
    /// Whether the connection is TLS.
    pub tls: bool,
    /// The peer's address as text (REMOTE_ADDR, X-Forwarded-For) ...
    pub peer_ip: IpText,
    /// ... and ours (SERVER_ADDR), written once per connection.
    pub local_ip: IpText,
}

/// An IP address as text, in place (the longest, an IPv6 address with an
/// embedded IPv4 one, has 45 bytes).
#[derive(Clone, Copy)]
pub struct IpText {
    buf: [u8; 48],
    len: u8,
}

impl IpText {
    /// `ip` written as `Display` writes it.
    pub fn new(ip: IpAddr) -> IpText {
        use std::io::Write as _;
        let mut t = IpText {
            buf: [0; 48],
            len: 0,
        };
        let mut w = &mut t.buf[..];
        if write!(w, "{ip}").is_ok() {
            let left = w.len();
            t.len = (48 - left) as u8;
        }
        t
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl std::fmt::Debug for IpText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::TRANSFER_ENCODING,
    header::TE,
    header::TRAILER,
    header::UPGRADE,
    header::PROXY_AUTHENTICATE,
];

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        .filter_map(|t| HeaderName::from_bytes(t.trim_ascii()).ok())
        .collect();
    for n in named.iter().chain(HOP_BY_HOP.iter()) {
        headers.remove(n);
    }
}

/// Host (without port), path, and path with query of a request, borrowed from
/// its head (no string built per request).
fn host_and_path(head: &RequestHead) -> (&str, &str, &str) {
    let target = head.target.as_str();
    let (authority, path_query) = if target.starts_with('/') || target == "*" {
        (None, target)
    } else if let Some(rest) = target.split_once("://").map(|(_, r)| r) {
        match rest.find('/') {
            Some(p) => (Some(&rest[..p]), &rest[p..]),
            None => (Some(rest), "/"),
        }
    } else {
        (None, target)
    };
    let authority = authority
        .or_else(|| {
            head.headers
                .get("host")
                .and_then(|h| std::str::from_utf8(h).ok())
        })
        .unwrap_or_default();
    let host = if authority.starts_with('[') {
        authority
            .split_once(']')
            .map_or(authority, |(h, _)| h)
            .trim_start_matches('[')
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    let path = path_query.split_once('?').map_or(path_query, |(p, _)| p);
    (host, path, path_query)
}

/// The client address: the peer, or, when the peer is a trusted proxy, the last
/// address in `X-Forwarded-For` that is not a trusted proxy.
fn client_ip(rt: &Runtime, peer: IpAddr, headers: &HeaderLines) -> IpAddr {
    if rt.trusted.is_empty() || !rt.trusted.iter().any(|c| c.contains(peer)) {
        return peer;
    }
    let mut chain: Vec<IpAddr> = Vec::new();
    for v in headers.get_all("x-forwarded-for") {
        let Ok(s) = std::str::from_utf8(v) else {
            return peer;
        };
        for part in s.split(',') {
            match part.trim().parse::<IpAddr>() {
                Ok(ip) => chain.push(ip),
                Err(_) => return peer,
            }
        }
    }
    for ip in chain.iter().rev() {
        if !rt.trusted.iter().any(|c| c.contains(*ip)) {
            return *ip;
        }
    }
    chain.first().copied().unwrap_or(peer)
}

/// Whether a response's media type (`Content-Type` up to `;`, compared ignoring
/// case) is one of `types`: equal to an entry, or starting with an entry that ends
/// in `/` (`image/` covers every image type).
fn bypassed_media_type(types: &[String], headers: &HeaderMap) -> bool {
    if types.is_empty() {
        return false;
    }
    let Some(ct) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let media = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    !media.is_empty()
        && types.iter().any(|t| {
            if t.ends_with('/') {
                media.starts_with(t.as_str())
            } else {
                media == *t
            }
        })
}

fn method_class(m: &Method) -> &'static str {
    match *m {
        Method::GET | Method::HEAD | Method::OPTIONS => "read",
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE => "write",
        _ => "other",
    }
}

fn version_str(v: Version) -> &'static str {
    match v {
        Version::HTTP_10 => "1.0",
        Version::HTTP_2 => "2.0",
        _ => "1.1",
    }
}

/// On a `101 Switching Protocols` response: the upstream side of the upgraded
/// connection, for the HTTP/1 server to splice with the client.
#[derive(Clone)]
pub struct UpgradeTo(pub Arc<std::sync::Mutex<Option<UpConn>>>);

impl std::fmt::Debug for UpgradeTo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UpgradeTo")
    }
}

/// The `Upgrade` value of an HTTP/1.1 request that asks for one (`Connection:
/// upgrade`), e.g. a WebSocket handshake.
fn upgrade_requested(headers: &HeaderLines, version: Version) -> Option<&[u8]> {
    if version != Version::HTTP_11 {
        return None;
    }
    if !headers
        .connection_tokens()
        .any(|t| t.eq_ignore_ascii_case(b"upgrade"))
    {
        return None;
    }
    headers.get("upgrade")
}

/// A small text response.
pub fn simple(status: StatusCode, text: &str) -> Response<ProxyBody> {
    let mut r = Response::new(ProxyBody::full(format!("{} {}\n", status.as_u16(), text)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// What happens when a response is finished: phase 5, audit, metrics.
struct Done {
    shared: Arc<Shared>,
    route: Arc<str>,
    method_class: &'static str,
    decision: Decision,
    start: Instant,
    txn: Option<Box<Transaction>>,
}

impl Finish for Done {
    fn finish(&mut self, _complete: bool) {
        if let Some(t) = &mut self.txn {
            let s = Instant::now();
            t.process_logging();
            self.shared.metrics.phase(Phase::Logging, s.elapsed());
            if let Some(p) = t.profile() {
                self.shared.learner.record(t.program(), p);
            }
            if self.decision == Decision::Pass && !t.matched_rules().is_empty() {
                self.decision = Decision::Detected;
            }
            if t.audit_relevant() {
                if let Some(audit) = &self.shared.audit {
                    audit.log(t.audit_json());
                }
            }
        }
        self.shared.metrics.request(
            &self.route,
            self.method_class,
            self.decision,
            self.start.elapsed(),
        );
    }
}

struct Ctx {
    shared: Arc<Shared>,
    route: Arc<str>,
    method_class: &'static str,
    start: Instant,
    /// Boxed: a transaction is about 1.7 KB, and it moves from the handler's
    /// context into the response's finisher.
    txn: Option<Box<Transaction>>,
    /// Forwarded without inspection (static-content bypass): counted as such.
    bypassed: bool,
}

impl Ctx {
    fn finish(self, resp: Response<ProxyBody>, decision: Decision) -> Response<ProxyBody> {
        let decision = match decision {
            Decision::Pass if self.bypassed => Decision::Bypassed,
            d => d,
        };
        let done = Done {
            shared: self.shared,
            route: self.route,
            method_class: self.method_class,
            decision,
            start: self.start,
            txn: self.txn,
        };
        let (parts, body) = resp.into_parts();
        Response::from_parts(parts, body.on_finish(Box::new(done)))
    }

    fn phase<T>(&mut self, phase: Phase, f: impl FnOnce(&mut Transaction) -> T) -> Option<T> {
        let t = self.txn.as_deref_mut()?;
        let s = Instant::now();
        let r = f(t);
        self.shared.metrics.phase(phase, s.elapsed());
        Some(r)
    }

    /// The intervention in force, as a response.
    fn intervene(self, i: Intervention) -> Response<ProxyBody> {
        let id = self
            .txn
            .as_ref()
            .map(|t| t.unique_id().to_string())
            .unwrap_or_default();
        let rule = match &i {
            Intervention::Deny { rule_id, .. }
            | Intervention::Drop { rule_id }
            | Intervention::Redirect { rule_id, .. } => *rule_id,
        };
        self.shared.metrics.blocked(rule);
        let resp = match i {
            Intervention::Deny { status, .. } => {
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN);
                let mut r = Response::new(ProxyBody::full(format!(
                    "{} {}\nThis request was blocked by Palisade. Reference: {id}\n",
                    status.as_u16(),
                    status.canonical_reason().unwrap_or("")
                )));
                *r.status_mut() = status;
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                );
                r
            }
            Intervention::Redirect {
                status, location, ..
            } => {
                let mut r = Response::new(ProxyBody::full(Bytes::new()));
                *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::FOUND);
                if let Ok(v) = HeaderValue::from_str(&location) {
                    r.headers_mut().insert(header::LOCATION, v);
                }
                r
            }
            Intervention::Drop { .. } => {
                let mut r = simple(StatusCode::FORBIDDEN, "Forbidden");
                r.extensions_mut().insert(DropConnection);
                r
            }
        };
        let mut this = self;
        if resp.extensions().get::<DropConnection>().is_none() {
            // With an intervention set the engine runs no rule in phases 1-4; this
            // only records RESPONSE_STATUS for the audit log's relevance filter.
            let status = resp.status().as_u16();
            if let Some(t) = this.txn.as_mut() {
                t.process_response_headers(status, "HTTP/1.1");
            }
        }
        let ctx = this;
        if let Ok(v) = HeaderValue::from_str(&id) {
            let mut resp = resp;
            resp.headers_mut().insert("x-unique-id", v);
            return ctx.finish(resp, Decision::Blocked);
        }
        ctx.finish(resp, Decision::Blocked)
    }

    fn error(self, status: StatusCode, why: &str, decision: Decision) -> Response<ProxyBody> {
        self.finish(simple(status, why), decision)
    }

    fn pending(&self) -> Option<Intervention> {
        self.txn.as_ref().and_then(|t| t.intervention().cloned())
    }
}

fn client_body_status(e: ClientBodyError) -> (StatusCode, &'static str) {
    match e {
        ClientBodyError::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "request body too large"),
        ClientBodyError::BadChunk => (StatusCode::BAD_REQUEST, "malformed chunked body"),
        ClientBodyError::Truncated | ClientBodyError::Io => {
            (StatusCode::BAD_REQUEST, "incomplete request body")
        }
    }
}

/// Handles one request: the phases, the upstream exchange, the response.
pub async fn handle(
    shared: &Arc<Shared>,
    conn: &ConnInfo,
    head: RequestHead,
    body: Option<BodyRx>,
) -> Response<ProxyBody> {
    let start = Instant::now();
    let rt = shared.runtime.load_full();
    let (host, path, path_query) = host_and_path(&head);
    let Some(route) = rt.route(host, path) else {
        shared.metrics.request(
            "none",
            method_class(&head.method),
            Decision::NoRoute,
            start.elapsed(),
        );
        return simple(StatusCode::NOT_FOUND, "no route");
    };
    let ip = client_ip(&rt, conn.peer.ip(), &head.headers);
    let bypass = !route.bypass_extensions.is_empty() && {
        let last = path.rsplit('/').next().unwrap_or_default();
        last.rsplit_once('.').is_some_and(|(_, ext)| {
            route
                .bypass_extensions
                .iter()
                .any(|e| e.eq_ignore_ascii_case(ext))
        })
    };
    let txn = match (&route.program, bypass) {
        (Some(p), false) if route.mode != Mode::Off => {
            let mut t = Transaction::new(
                p.clone(),
                &Connection {
                    client_ip: if ip == conn.peer.ip() {
                        Cow::Borrowed(conn.peer_ip.as_str())
                    } else {
                        Cow::Owned(ip.to_string())
                    },
                    client_port: conn.peer.port(),
                    server_ip: Cow::Borrowed(conn.local_ip.as_str()),
                    server_port: conn.local.port(),
                },
            );
            // The order learner's sample: one transaction in N per worker thread
            // (in DetectionOnly no rule ends a phase, so no order is cheaper).
            if rt.learning.order
                && route.mode == Mode::On
                && shared.learner.sample(rt.learning.sample_every)
            {
                t.enable_profile();
                shared.metrics.order_sampled();
            }
            Some(Box::new(t))
        }
        _ => None,
    };
    let mut ctx = Ctx {
        shared: shared.clone(),
        route: route.name.clone(),
        method_class: method_class(&head.method),
        start,
        txn,
        bypassed: bypass,
    };
    // Phase 1.
    let target = head.target.as_str();
    let method = head.method.clone();
    let version = version_str(head.version);
    let h2_host =
        (head.version == Version::HTTP_2 && head.headers.get("host").is_none()).then_some(host);
    ctx.phase(Phase::RequestHeaders, |t| {
        t.process_uri(target, method.as_str(), version);
        if let Some(h) = &h2_host {
            t.add_request_header(b"host", h.as_bytes());
        }
        for (n, v) in head.headers.iter() {
            t.add_request_header(n, v);
        }
        t.process_request_headers();
    });
    if let Some(i) = ctx.pending() {
        return ctx.intervene(i);
    }
    // Request body, as far as the engine reads it.
    let mut held = HeldBody::new(&rt.spill);
    let mut rest = body;
    // Body access as in force after phase 1 (`ctl:requestBodyAccess` included).
    let body_access = ctx.txn.as_ref().is_some_and(|t| t.wants_request_body());
    if body_access && rest.is_some() {
        // The body may be slow to come: the engine's caches go to other requests
        // meanwhile.
        if let Some(t) = ctx.txn.as_mut() {
            t.park();
        }
    }
    if body_access {
        if let Some(rx) = rest.as_mut() {
            loop {
                match rx.recv().await {
                    Some(Ok(chunk)) => {
                        let status = ctx
                            .phase(Phase::RequestBody, |t| t.append_request_body(&chunk))
                            .unwrap_or(BodyStatus::Continue);
                        if let Err(e) = held.push(chunk).await {
                            tracing::error!(
                                "holding a request body in {}: {e}",
                                rt.spill.dir.display()
                            );
                            return ctx.error(
                                StatusCode::INTERNAL_SERVER_ERROR,
                                "request body could not be held",
                                Decision::UpstreamError,
                            );
                        }
                        match status {
                            BodyStatus::Continue => {}
                            BodyStatus::Partial => break,
                            BodyStatus::Reject => {
                                if let Some(i) = ctx.pending() {
                                    return ctx.intervene(i);
                                }
                                break;
                            }
                        }
                    }
                    Some(Err(e)) => {
                        let (s, why) = client_body_status(e);
                        return ctx.error(s, why, Decision::ClientError);
                    }
                    None => {
                        rest = None;
                        break;
                    }
                }
            }
        }
    }
    if held.spilled() {
        shared.metrics.body_spilled();
    }
    // Phase 2.
    ctx.phase(Phase::RequestBody, |t| {
        t.process_request_body();
    });
    if let Some(i) = ctx.pending() {
        return ctx.intervene(i);
    }
    // Upstream.
    let upstream = route.upstream.clone();
    let length = match head.framing {
        Framing::None => Some(0),
        Framing::Length(n) => Some(n),
        Framing::Chunked | Framing::Stream => None,
    };
    let error_slot = ClientErrorSlot::default();
    let (buffered, spilled) = match held.finish().await {
        Ok(parts) => parts,
        Err(e) => {
            tracing::error!("reading back a spilled request body: {e}");
            return ctx.error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "request body could not be held",
                Decision::UpstreamError,
            );
        }
    };
    let mut fbody = ForwardBody::new(buffered, spilled, rest, length, error_slot.clone());
    // The request head as sent upstream (the same for every address tried): the
    // client's lines in their order and case, less hop-by-hop ones (and those
    // `Connection` names) and the ones set here, then the ones set here.
    let upgrade = upgrade_requested(&head.headers, head.version);
    let nominated: SmallVec<[&[u8]; 4]> = head.headers.connection_tokens().collect();
    let had_length = head.headers.get("content-length").is_some();
    let prior_xff = head
        .headers
        .get("x-forwarded-for")
        .filter(|v| !v.is_empty());
    let prior_via = head.headers.get("via");
    let replaced = |n: &[u8]| {
        HOP_BY_HOP
            .iter()
            .any(|h| n.eq_ignore_ascii_case(h.as_str().as_bytes()))
            || nominated.iter().any(|t| n.eq_ignore_ascii_case(t))
            || n.eq_ignore_ascii_case(b"content-length")
            || (h2_host.is_some() && n.eq_ignore_ascii_case(b"host"))
            || (rt.x_forwarded
                && (n.eq_ignore_ascii_case(b"x-forwarded-for")
                    || n.eq_ignore_ascii_case(b"x-forwarded-proto")
                    || (!host.is_empty() && n.eq_ignore_ascii_case(b"x-forwarded-host"))))
            || (rt.via && n.eq_ignore_ascii_case(b"via"))
    };
    let chunked_upstream = length.is_none();
    let mut wire = Vec::with_capacity(384 + path_query.len() + 64 * head.headers.len());
    wire.extend_from_slice(method.as_str().as_bytes());
    wire.push(b' ');
    wire.extend_from_slice(path_query.as_bytes());
    wire.extend_from_slice(b" HTTP/1.1\r\n");
    let mut line = |n: &[u8], v: &[u8]| {
        wire.extend_from_slice(n);
        wire.extend_from_slice(b": ");
        wire.extend_from_slice(v);
        wire.extend_from_slice(b"\r\n");
    };
    for (n, v) in head.headers.iter() {
        if !replaced(n) {
            line(n, v);
        }
    }
    if let Some(u) = upgrade {
        line(b"connection", b"upgrade");
        line(b"upgrade", u);
    }
    match length {
        Some(n) if n > 0 || had_length => line(b"content-length", n.to_string().as_bytes()),
        _ => {}
    }
    if h2_host.is_some() {
        line(b"host", host.as_bytes());
    }
    if rt.x_forwarded {
        let peer = conn.peer_ip.as_str();
        match prior_xff {
            Some(p) => {
                let mut v = p.to_vec();
                v.extend_from_slice(b", ");
                v.extend_from_slice(peer.as_bytes());
                line(b"x-forwarded-for", &v);
            }
            None => line(b"x-forwarded-for", peer.as_bytes()),
        }
        line(
            b"x-forwarded-proto",
            if conn.tls { b"https" } else { b"http" },
        );
        if !host.is_empty() {
            line(b"x-forwarded-host", host.as_bytes());
        }
    }
    if rt.via {
        let mut v = prior_via.map(|p| [p, b", "].concat()).unwrap_or_default();
        v.extend_from_slice(version.as_bytes());
        v.extend_from_slice(b" palisade");
        line(b"via", &v);
    }
    if chunked_upstream {
        line(b"transfer-encoding", b"chunked");
    }
    wire.extend_from_slice(b"\r\n");
    let upgrade = upgrade.is_some();
    let framing = if chunked_upstream {
        RequestFraming::Chunked
    } else {
        RequestFraming::AsIs
    };
    let idempotent = matches!(
        method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::PUT | Method::DELETE | Method::TRACE
    );
    crate::runtime::batch_point(rt.batch_writes).await;
    let upstream_start = Instant::now();
    let mut attempts = upstream.addresses.len().max(1);
    let response = loop {
        attempts -= 1;
        let idx = upstream.pick();
        let Some(addr) = upstream.addresses.get(idx) else {
            return ctx.error(
                StatusCode::BAD_GATEWAY,
                "no upstream address",
                Decision::UpstreamError,
            );
        };
        let retry_body = if attempts > 0 {
            fbody.try_clone()
        } else {
            None
        };
        let send = upstream.send(
            idx,
            &wire,
            fbody,
            framing,
            method == Method::HEAD,
            idempotent,
        );
        match tokio::time::timeout(upstream.read_timeout, send).await {
            Err(_) => {
                tracing::warn!(upstream = %upstream.name, address = %addr.authority, "upstream timed out");
                return ctx.error(
                    StatusCode::GATEWAY_TIMEOUT,
                    "upstream timed out",
                    Decision::UpstreamError,
                );
            }
            Ok(Ok(r)) => break r,
            Ok(Err(e)) => {
                if let Some(ce) = error_slot.get() {
                    let (s, why) = client_body_status(*ce);
                    return ctx.error(s, why, Decision::ClientError);
                }
                if e.is_connect() {
                    upstream.mark_failed(idx);
                    tracing::warn!(upstream = %upstream.name, address = %addr.authority, error = %e, "upstream connect failed");
                    if let Some(b) = retry_body {
                        fbody = b;
                        continue;
                    }
                } else {
                    tracing::warn!(upstream = %upstream.name, address = %addr.authority, error = %e, "upstream request failed");
                }
                return ctx.error(
                    StatusCode::BAD_GATEWAY,
                    "upstream failed",
                    Decision::UpstreamError,
                );
            }
        }
    };
    shared.metrics.upstream(upstream_start.elapsed());
    let UpstreamResponse {
        status: up_status,
        version: _,
        headers: up_headers,
        body: incoming,
        upgraded,
    } = response;
    let mut parts = Response::new(()).into_parts().0;
    parts.status = up_status;
    parts.headers = up_headers;
    let on_upgrade = upgraded.filter(|_| upgrade);
    // Phase 3, unless the response's media type is one the route passes without
    // response inspection (static content; the request was inspected).
    let status = parts.status.as_u16();
    let skip_response =
        ctx.txn.is_some() && bypassed_media_type(&route.bypass_content_types, &parts.headers);
    if skip_response {
        shared.metrics.response_bypassed();
    } else {
        ctx.phase(Phase::ResponseHeaders, |t| {
            for (n, v) in &parts.headers {
                t.add_response_header(n.as_str().as_bytes(), v.as_bytes());
            }
            t.process_response_headers(status, "HTTP/1.1");
        });
    }
    if let Some(i) = ctx.pending() {
        return ctx.intervene(i);
    }
    let upstream_upgrade = parts.headers.get(header::UPGRADE).cloned();
    strip_hop_by_hop(&mut parts.headers);
    if let Some(on_upgrade) = on_upgrade {
        // The handshake was inspected (phases 1-3); the connection now carries
        // another protocol, passed through untouched.
        if let Some(u) = upstream_upgrade {
            parts.headers.insert(header::UPGRADE, u);
        }
        let mut resp = Response::from_parts(parts, ProxyBody::full(Bytes::new()));
        resp.extensions_mut()
            .insert(UpgradeTo(Arc::new(std::sync::Mutex::new(Some(on_upgrade)))));
        return ctx.finish(resp, Decision::Pass);
    }
    let head_only = method == Method::HEAD || status == 204 || status == 304;
    if !head_only {
        parts.headers.remove(header::CONTENT_LENGTH);
    }
    let exact = incoming.size_hint().exact();
    // Phase 4.
    let wants =
        !head_only && !skip_response && ctx.txn.as_ref().is_some_and(|t| t.wants_response_body());
    let mut out: VecDeque<Bytes> = VecDeque::new();
    let mut rest = Some(incoming);
    if wants {
        if let Some(inc) = rest.as_mut() {
            loop {
                match inc.frame().await {
                    Some(Ok(f)) => {
                        let Ok(d) = f.into_data() else { continue };
                        let st = ctx
                            .phase(Phase::ResponseBody, |t| t.append_response_body(&d))
                            .unwrap_or(BodyStatus::Continue);
                        out.push_back(d);
                        if st != BodyStatus::Continue {
                            break;
                        }
                    }
                    Some(Err(e)) => {
                        tracing::warn!(upstream = %upstream.name, error = %e, "upstream body failed");
                        return ctx.error(
                            StatusCode::BAD_GATEWAY,
                            "upstream body failed",
                            Decision::UpstreamError,
                        );
                    }
                    None => {
                        rest = None;
                        break;
                    }
                }
            }
        }
    }
    if !skip_response {
        ctx.phase(Phase::ResponseBody, |t| {
            t.process_response_body();
        });
    }
    if let Some(i) = ctx.pending() {
        return ctx.intervene(i);
    }
    let exact = if head_only { Some(0) } else { exact };
    let body = ProxyBody::streamed(out, if head_only { None } else { rest }, exact);
    let resp = Response::from_parts(parts, body);
    ctx.finish(resp, Decision::Pass)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_written_as_display_writes_them() {
        for ip in [
            "127.0.0.1",
            "255.255.255.255",
            "::1",
            "2001:db8::8a2e:370:7334",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "::ffff:255.255.255.255",
            "1111:2222:3333:4444:5555:6666:255.255.255.255",
        ] {
            let ip: IpAddr = ip.parse().expect("address");
            assert_eq!(IpText::new(ip).as_str(), ip.to_string());
        }
    }

    fn head(target: &str, host: Option<&str>) -> RequestHead {
        let mut headers = HeaderMap::new();
        if let Some(h) = host {
            headers.insert(header::HOST, HeaderValue::from_str(h).expect("host"));
        }
        RequestHead {
            method: Method::GET,
            target: target.into(),
            version: Version::HTTP_11,
            headers: HeaderLines::Map(headers),
            framing: Framing::None,
        }
    }

    #[test]
    fn host_and_path_forms() {
        let origin = head("/a/b?c=d", Some("Example.com:8080"));
        assert_eq!(host_and_path(&origin), ("Example.com", "/a/b", "/a/b?c=d"));
        let absolute = head("http://x.org:1/q?z", Some("ignored"));
        assert_eq!(host_and_path(&absolute), ("x.org", "/q", "/q?z"));
        let bare = head("http://x.org", None);
        assert_eq!(host_and_path(&bare), ("x.org", "/", "/"));
        let v6 = head("/", Some("[::1]:80"));
        assert_eq!(host_and_path(&v6).0, "::1");
        let none = head("/p", None);
        assert_eq!(host_and_path(&none), ("", "/p", "/p"));
    }

    #[test]
    fn hop_by_hop_headers_are_removed() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("close, x-secret"),
        );
        h.insert("x-secret", HeaderValue::from_static("1"));
        h.insert("keep-alive", HeaderValue::from_static("5"));
        h.insert("x-kept", HeaderValue::from_static("1"));
        strip_hop_by_hop(&mut h);
        assert_eq!(h.len(), 1);
        assert!(h.contains_key("x-kept"));
    }
}
