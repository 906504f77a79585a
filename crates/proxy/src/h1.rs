//! The HTTP/1.1 server side, written here rather than taken from hyper so that the
//! front-door policy ([`front::check_request`]) sees the request head exactly as the
//! client sent it: hyper's parser silently drops `Content-Length` when
//! `Transfer-Encoding` is present, and a chunked-body error in hyper closes the
//! connection without an answer. Here:
//!
//! - the head is bounded (`limits.max_header_bytes`, `limits.max_headers`: 431), must
//!   use CRLF line ends (a bare LF is 400), and is parsed by `httparse` (obs-fold and
//!   invalid bytes: 400);
//! - [`front::check_request`] refuses CL+TE, differing Content-Lengths, non-final
//!   chunked, missing Host, bad targets: 400 and the connection is closed;
//! - the body is decoded here (strict chunk sizes: 400) and handed to the request flow
//!   as a channel of chunks, read concurrently with the response being written, so
//!   that neither side buffers more than a few chunks;
//! - requests on one connection are answered strictly in order (pipelining is safe:
//!   bytes after a request stay in the buffer for the next one), and a connection whose
//!   request body was not read to its end is closed after the response.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http::{Method, Response, StatusCode, Version};
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use crate::body::{ClientBodyError, ProxyBody};
use smallvec::SmallVec;

use crate::flow::{self, ConnInfo, Framing, HeaderLines, Received, RequestHead, UpgradeTo};
use crate::Shared;

/// Marker extension on a response: close the connection without answering.
#[derive(Debug, Clone, Copy)]
pub struct DropConnection;

const READ_CHUNK: usize = 64 * 1024;
const MAX_CHUNK_LINE: usize = 4096;
const MAX_TRAILERS: usize = 16 * 1024;

struct Reader<R> {
    io: R,
    buf: BytesMut,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    /// Reads more bytes; Ok(0) at end of stream.
    async fn fill(&mut self) -> std::io::Result<usize> {
        self.buf.reserve(READ_CHUNK);
        self.io.read_buf(&mut self.buf).await
    }

    async fn fill_timeout(&mut self, t: Duration) -> Result<usize, ClientBodyError> {
        match tokio::time::timeout(t, self.fill()).await {
            Ok(Ok(n)) => Ok(n),
            _ => Err(ClientBodyError::Io),
        }
    }
}

// A short-lived return value: boxing the head would cost an allocation per request.
#[allow(clippy::large_enum_variant)]
enum Head {
    Request(RequestHead, bool),
    Reject(StatusCode, &'static str),
    Closed,
}

/// Serves one HTTP/1.1 connection until it closes, fails or shutdown is asked.
pub async fn serve<S>(
    stream: S,
    conn: ConnInfo,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (rd, mut wr) = tokio::io::split(stream);
    let mut reader = Reader {
        io: rd,
        buf: BytesMut::with_capacity(8 * 1024),
    };
    loop {
        let limits = shared.runtime.load().limits.clone();
        let head = tokio::select! {
            h = read_head(&mut reader, &limits) => h,
            _ = shutdown.changed() => return,
        };
        let (head, expect_continue) = match head {
            Head::Request(h, e) => (h, e),
            Head::Reject(status, why) => {
                shared.metrics.front_rejected();
                tracing::debug!(peer = %conn.peer, why, "request head refused");
                let _ = write_simple(&mut wr, status, why).await;
                return;
            }
            Head::Closed => return,
        };
        if let Framing::Length(n) = head.framing {
            if limits.max_body_bytes > 0 && n > limits.max_body_bytes {
                let _ =
                    write_simple(&mut wr, StatusCode::PAYLOAD_TOO_LARGE, "body too large").await;
                return;
            }
        }
        if expect_continue
            && head.framing != Framing::None
            && wr
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await
                .is_err()
        {
            return;
        }
        let method = head.method.clone();
        let http10 = head.version == Version::HTTP_10;
        let client_close = wants_close(&head.headers, http10);
        let framing = head.framing;
        // No channel for a request without a body (most of them).
        let (tx, body_rx) = if framing == Framing::None {
            (None, None)
        } else {
            let (tx, rx) = mpsc::channel(4);
            (Some(tx), Some(rx))
        };
        let (written, pumped, upgrade) = {
            let pump = pump_body(&mut reader, framing, tx, &limits);
            tokio::pin!(pump);
            let respond = async {
                let resp = flow::handle(&shared, &conn, head, body_rx).await;
                let closing = *shutdown.borrow();
                (resp, closing)
            };
            tokio::pin!(respond);
            let mut pumped: Option<bool> = if framing == Framing::None {
                Some(true)
            } else {
                None
            };
            let (mut resp, closing) = loop {
                tokio::select! {
                    r = &mut pump, if pumped.is_none() => pumped = Some(r),
                    r = &mut respond => break r,
                }
            };
            if resp.extensions().get::<DropConnection>().is_some() {
                return;
            }
            let upgrade = resp
                .extensions_mut()
                .remove::<UpgradeTo>()
                .and_then(|u| u.0.lock().ok().and_then(|mut g| g.take()));
            // Write the response while still reading the request body (an upstream may
            // answer before it has read all of it).
            let keep_alive_wanted = !client_close && !closing;
            let how = WriteHow {
                http10,
                keep_alive_wanted,
                batch: shared.runtime.load().batch_writes,
            };
            let write = write_response(&mut wr, resp, &method, how);
            tokio::pin!(write);
            let written = loop {
                tokio::select! {
                    r = &mut pump, if pumped.is_none() => pumped = Some(r),
                    r = &mut write => break r,
                }
            };
            (written, pumped, upgrade)
        };
        if let Some(on_upgrade) = upgrade {
            if written.is_ok() {
                splice(reader, wr, on_upgrade).await;
            }
            return;
        }
        match written {
            Ok(true) if pumped == Some(true) => {}
            _ => return,
        }
    }
}

/// Passes bytes both ways between the client and the upgraded upstream connection
/// until either side closes.
async fn splice<S>(
    reader: Reader<tokio::io::ReadHalf<S>>,
    wr: tokio::io::WriteHalf<S>,
    upstream: crate::upstream::pool::UpConn,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let crate::upstream::pool::UpConn {
        io: mut upstream,
        buf: from_upstream,
        ..
    } = upstream;
    let Reader { io, buf } = reader;
    let mut client = io.unsplit(wr);
    if !buf.is_empty() && upstream.write_all(&buf).await.is_err() {
        return;
    }
    if !from_upstream.is_empty() && client.write_all(&from_upstream).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

fn wants_close(headers: &HeaderLines, http10: bool) -> bool {
    let mut close = http10;
    for v in headers.get_all("connection") {
        for t in v.split(|&b| b == b',') {
            let t = t.trim_ascii();
            if t.eq_ignore_ascii_case(b"close") {
                return true;
            }
            if t.eq_ignore_ascii_case(b"keep-alive") {
                close = false;
            }
        }
    }
    close
}

async fn read_head<R: AsyncRead + Unpin>(
    reader: &mut Reader<R>,
    limits: &crate::config::Limits,
) -> Head {
    let mut first = true;
    loop {
        // RFC 9112 §2.2: ignore empty lines before the request line.
        while reader.buf.starts_with(b"\r\n") {
            reader.buf.advance(2);
        }
        if let Some(end) = find_head_end(&reader.buf) {
            if end > limits.max_header_bytes {
                return Head::Reject(
                    StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                    "head too large",
                );
            }
            let head = reader.buf.split_to(end).freeze();
            return parse_head(&head, limits);
        }
        if reader.buf.len() > limits.max_header_bytes {
            return Head::Reject(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "head too large",
            );
        }
        // A bare LF is refused as soon as it arrives (a head with LF line ends would
        // otherwise wait for CRLFCRLF until the timeout).
        if has_bare_lf(&reader.buf) {
            return Head::Reject(StatusCode::BAD_REQUEST, "bare LF in head");
        }
        let wait = if first && reader.buf.is_empty() {
            limits.idle_timeout_ms
        } else {
            limits.header_timeout_ms
        };
        first = false;
        match tokio::time::timeout(Duration::from_millis(wait), reader.fill()).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Head::Closed,
            Ok(Ok(_)) => {}
            Err(_) => {
                if reader.buf.is_empty() {
                    return Head::Closed;
                }
                return Head::Reject(StatusCode::REQUEST_TIMEOUT, "head timeout");
            }
        }
    }
}

fn has_bare_lf(buf: &[u8]) -> bool {
    memchr::memchr_iter(b'\n', buf).any(|i| i == 0 || buf[i - 1] != b'\r')
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    memchr::memmem::find(buf, b"\r\n\r\n").map(|p| p + 4)
}

fn parse_head(raw: &Bytes, limits: &crate::config::Limits) -> Head {
    // Bare LF line ends are a smuggling vector (parsers disagree on them).
    if has_bare_lf(raw) {
        return Head::Reject(StatusCode::BAD_REQUEST, "bare LF in head");
    }
    // The usual limit fits on the stack; a larger configured one uses the heap.
    let mut stack = [httparse::EMPTY_HEADER; 128];
    let mut heap = Vec::new();
    let slots: &mut [httparse::Header<'_>] = if limits.max_headers <= stack.len() {
        &mut stack[..limits.max_headers.max(1)]
    } else {
        heap.resize(limits.max_headers, httparse::EMPTY_HEADER);
        &mut heap
    };
    let mut req = httparse::Request::new(slots);
    match req.parse(raw) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Head::Reject(StatusCode::BAD_REQUEST, "bad head"),
        Err(httparse::Error::TooManyHeaders) => {
            return Head::Reject(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "too many headers",
            )
        }
        Err(_) => return Head::Reject(StatusCode::BAD_REQUEST, "malformed head"),
    }
    let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Head::Reject(StatusCode::BAD_REQUEST, "malformed head");
    };
    let version: &[u8] = if minor == 1 { b"HTTP/1.1" } else { b"HTTP/1.0" };
    let pairs: SmallVec<[(&[u8], &[u8]); 32]> = req
        .headers
        .iter()
        .map(|h| (h.name.as_bytes(), h.value))
        .collect();
    let framing = match front::check_request(method.as_bytes(), target.as_bytes(), version, &pairs)
    {
        Ok(front::BodyFraming::None) => Framing::None,
        Ok(front::BodyFraming::Length(0)) => Framing::None,
        Ok(front::BodyFraming::Length(n)) => Framing::Length(n),
        Ok(front::BodyFraming::Chunked) => Framing::Chunked,
        Err(_) => return Head::Reject(StatusCode::BAD_REQUEST, "refused by the front door"),
    };
    let Ok(method) = Method::from_bytes(method.as_bytes()) else {
        return Head::Reject(StatusCode::BAD_REQUEST, "bad method");
    };
    // Names and values were checked by httparse (token names; values without
    // control characters) and `front`; no map is built (the lines are forwarded as
    // received).
    let mut received = Received::with_capacity(raw.clone(), pairs.len());
    let mut expect_continue = false;
    for &(n, v) in &pairs {
        if n.eq_ignore_ascii_case(b"expect") {
            if v.eq_ignore_ascii_case(b"100-continue") {
                expect_continue = true;
                continue;
            }
            return Head::Reject(StatusCode::EXPECTATION_FAILED, "unsupported expectation");
        }
        received.push(n, v);
    }
    Head::Request(
        RequestHead {
            method,
            target: target.to_string(),
            version: if minor == 1 {
                Version::HTTP_11
            } else {
                Version::HTTP_10
            },
            headers: HeaderLines::Raw(received),
            framing,
        },
        expect_continue,
    )
}

/// Reads the request body and sends it on `tx`. Returns whether the body was read to
/// its end (so the connection can be reused).
async fn pump_body<R: AsyncRead + Unpin>(
    reader: &mut Reader<R>,
    framing: Framing,
    tx: Option<mpsc::Sender<Result<Bytes, ClientBodyError>>>,
    limits: &crate::config::Limits,
) -> bool {
    let Some(tx) = tx else {
        return true;
    };
    let timeout = Duration::from_millis(limits.idle_timeout_ms);
    let max = limits.max_body_bytes;
    let result = match framing {
        Framing::None | Framing::Stream => return true,
        Framing::Length(n) => pump_length(reader, n, &tx, timeout).await,
        Framing::Chunked => pump_chunked(reader, &tx, timeout, max).await,
    };
    match result {
        Ok(complete) => complete,
        Err(e) => {
            let _ = tx.send(Err(e)).await;
            false
        }
    }
}

/// Ok(false): the receiver went away (the body is not read to its end).
async fn pump_length<R: AsyncRead + Unpin>(
    reader: &mut Reader<R>,
    mut left: u64,
    tx: &mpsc::Sender<Result<Bytes, ClientBodyError>>,
    timeout: Duration,
) -> Result<bool, ClientBodyError> {
    while left > 0 {
        if reader.buf.is_empty() && reader.fill_timeout(timeout).await? == 0 {
            return Err(ClientBodyError::Truncated);
        }
        let take = (reader.buf.len() as u64).min(left) as usize;
        let chunk = reader.buf.split_to(take).freeze();
        left -= take as u64;
        if tx.send(Ok(chunk)).await.is_err() {
            return Ok(left == 0);
        }
    }
    Ok(true)
}

async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut Reader<R>,
    timeout: Duration,
    max: usize,
) -> Result<Bytes, ClientBodyError> {
    loop {
        if let Some(p) = reader.buf.windows(2).position(|w| w == b"\r\n") {
            let line = reader.buf.split_to(p).freeze();
            reader.buf.advance(2);
            return Ok(line);
        }
        if reader.buf.len() > max {
            return Err(ClientBodyError::BadChunk);
        }
        if reader.fill_timeout(timeout).await? == 0 {
            return Err(ClientBodyError::Truncated);
        }
    }
}

/// Parses a chunk-size line: 1 to 16 hex digits, then optional `;ext` (no bare LF,
/// no spaces before the size, no sign, no `0x`).
pub fn parse_chunk_size(line: &[u8]) -> Option<u64> {
    let end = line.iter().position(|&b| b == b';').unwrap_or(line.len());
    let digits = &line[..end];
    // Whitespace before ';' is allowed by RFC 9112 (BWS); trailing only.
    let digits = {
        let t = digits
            .iter()
            .rposition(|&b| b != b' ' && b != b'\t')
            .map_or(0, |p| p + 1);
        &digits[..t]
    };
    if digits.is_empty() || digits.len() > 16 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    if line[end..]
        .iter()
        .any(|&b| b < b' ' && b != b'\t' || b == 0x7f)
    {
        return None;
    }
    let s = std::str::from_utf8(digits).ok()?;
    u64::from_str_radix(s, 16).ok()
}

async fn pump_chunked<R: AsyncRead + Unpin>(
    reader: &mut Reader<R>,
    tx: &mpsc::Sender<Result<Bytes, ClientBodyError>>,
    timeout: Duration,
    max: u64,
) -> Result<bool, ClientBodyError> {
    let mut total: u64 = 0;
    let mut receiver_gone = false;
    loop {
        let line = read_line(reader, timeout, MAX_CHUNK_LINE).await?;
        let size = parse_chunk_size(&line).ok_or(ClientBodyError::BadChunk)?;
        if size == 0 {
            break;
        }
        total = total.saturating_add(size);
        if max > 0 && total > max {
            return Err(ClientBodyError::TooLarge);
        }
        let mut left = size;
        while left > 0 {
            if reader.buf.is_empty() && reader.fill_timeout(timeout).await? == 0 {
                return Err(ClientBodyError::Truncated);
            }
            let take = (reader.buf.len() as u64).min(left) as usize;
            let chunk = reader.buf.split_to(take).freeze();
            left -= take as u64;
            if !receiver_gone && tx.send(Ok(chunk)).await.is_err() {
                receiver_gone = true;
            }
        }
        while reader.buf.len() < 2 {
            if reader.fill_timeout(timeout).await? == 0 {
                return Err(ClientBodyError::Truncated);
            }
        }
        if &reader.buf[..2] != b"\r\n" {
            return Err(ClientBodyError::BadChunk);
        }
        reader.buf.advance(2);
    }
    // Trailer section: lines until an empty one (dropped, bounded).
    let mut trailer_bytes = 0;
    loop {
        let line = read_line(reader, timeout, MAX_TRAILERS).await?;
        if line.is_empty() {
            break;
        }
        trailer_bytes += line.len() + 2;
        if trailer_bytes > MAX_TRAILERS || line.contains(&b'\n') {
            return Err(ClientBodyError::BadChunk);
        }
    }
    Ok(true)
}

/// Writes a small response and asks the connection to close.
async fn write_simple<W: AsyncWrite + Unpin>(
    wr: &mut W,
    status: StatusCode,
    text: &str,
) -> std::io::Result<()> {
    let body = format!("{} {}\n", status.as_u16(), text);
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    );
    wr.write_all(head.as_bytes()).await?;
    wr.write_all(body.as_bytes()).await?;
    wr.flush().await
}

const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-authenticate",
];

/// Appends `n` in decimal (written into the buffer: a response head allocates
/// only its buffer).
fn push_decimal(out: &mut Vec<u8>, n: u64) {
    use std::io::Write;
    // Writing into a `Vec` cannot fail.
    let _ = write!(out, "{n}");
}

/// How [`write_response`] writes.
#[derive(Debug, Clone, Copy)]
struct WriteHow {
    /// The request was HTTP/1.0.
    http10: bool,
    /// Neither side asked to close.
    keep_alive_wanted: bool,
    /// The last write (the whole response when it fits in one) waits for the
    /// end of the scheduler's round first (see
    /// [`crate::runtime::Runtime::batch_writes`]).
    batch: bool,
}

/// Writes a response; returns Ok(keep_alive).
async fn write_response<W>(
    wr: &mut W,
    resp: Response<ProxyBody>,
    method: &Method,
    how: WriteHow,
) -> std::io::Result<bool>
where
    W: AsyncWrite + Unpin,
{
    let WriteHow {
        http10,
        keep_alive_wanted,
        batch,
    } = how;
    let (parts, mut body) = resp.into_parts();
    let status = parts.status.as_u16();
    let no_body =
        *method == Method::HEAD || (100..200).contains(&status) || status == 204 || status == 304;
    let exact = http_body::Body::size_hint(&body).exact();
    enum Mode {
        None,
        Length,
        Chunked,
        Close,
    }
    let mode = if no_body {
        Mode::None
    } else if exact.is_some() {
        Mode::Length
    } else if !http10 {
        Mode::Chunked
    } else {
        Mode::Close
    };
    // (A request body the flow did not read to its end also closes the connection
    // after this response; the caller decides that.)
    let mut keep_alive = keep_alive_wanted && !matches!(mode, Mode::Close);
    let mut head = Vec::with_capacity(512);
    head.extend_from_slice(if http10 { b"HTTP/1.0 " } else { b"HTTP/1.1 " });
    head.extend_from_slice(parts.status.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(
        parts
            .status
            .canonical_reason()
            .unwrap_or("Unknown")
            .as_bytes(),
    );
    head.extend_from_slice(b"\r\n");
    let switching = status == 101;
    for (name, value) in &parts.headers {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n) && !(switching && n == "upgrade") {
            continue;
        }
        if n == "content-length" && !no_body {
            continue;
        }
        head.extend_from_slice(n.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    match mode {
        Mode::Length => {
            head.extend_from_slice(b"content-length: ");
            push_decimal(&mut head, exact.unwrap_or(0));
            head.extend_from_slice(b"\r\n");
        }
        Mode::Chunked => head.extend_from_slice(b"transfer-encoding: chunked\r\n"),
        Mode::None | Mode::Close => {}
    }
    if switching {
        head.extend_from_slice(b"connection: upgrade\r\n");
    } else if !keep_alive {
        head.extend_from_slice(b"connection: close\r\n");
    } else if http10 {
        head.extend_from_slice(b"connection: keep-alive\r\n");
    }
    head.extend_from_slice(b"\r\n");
    if no_body {
        // The transaction ends (phase 5, audit record) before the client can see the
        // response: a client that sends its next request on another connection as
        // soon as this head arrives finds this request's audit record before that
        // one's (the body case finishes when the body's end is read, also before
        // the last write).
        drop(body);
        crate::runtime::batch_point(batch).await;
        wr.write_all(&head).await?;
        wr.flush().await?;
        return Ok(keep_alive);
    }
    let mut pending = head;
    let mut written: u64 = 0;
    loop {
        let frame = match body.frame().await {
            Some(Ok(f)) => f,
            Some(Err(_)) => {
                // The upstream failed mid-body: the client cannot be told; close.
                wr.write_all(&pending).await?;
                return Ok(false);
            }
            None => break,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if data.is_empty() {
            continue;
        }
        written += data.len() as u64;
        match mode {
            Mode::Chunked => {
                pending.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
                if data.len() <= 16 * 1024 {
                    pending.extend_from_slice(&data);
                    pending.extend_from_slice(b"\r\n");
                } else {
                    wr.write_all(&pending).await?;
                    pending.clear();
                    wr.write_all(&data).await?;
                    pending.extend_from_slice(b"\r\n");
                }
            }
            _ => {
                if let (Mode::Length, Some(n)) = (&mode, exact) {
                    if written > n {
                        return Ok(false);
                    }
                }
                if data.len() <= 16 * 1024 {
                    pending.extend_from_slice(&data);
                } else {
                    wr.write_all(&pending).await?;
                    pending.clear();
                    wr.write_all(&data).await?;
                }
            }
        }
        // Small frames are coalesced with what follows only when the body is
        // already at its end; otherwise they go out at once (streaming).
        if !pending.is_empty() && !http_body::Body::is_end_stream(&body) {
            wr.write_all(&pending).await?;
            pending.clear();
        }
    }
    if let Mode::Chunked = mode {
        pending.extend_from_slice(b"0\r\n\r\n");
    }
    if let (Mode::Length, Some(n)) = (&mode, exact) {
        if written != n {
            keep_alive = false;
        }
    }
    crate::runtime::batch_point(batch).await;
    wr.write_all(&pending).await?;
    wr.flush().await?;
    if matches!(mode, Mode::Close) {
        let _ = wr.shutdown().await;
    }
    Ok(keep_alive)
}

/// Connection facts for a new HTTP/1 or HTTP/2 connection.
pub fn conn_info(peer: SocketAddr, local: SocketAddr, tls: bool) -> ConnInfo {
    ConnInfo {
        peer,
        local,
        tls,
        peer_ip: crate::flow::IpText::new(peer.ip()),
        local_ip: crate::flow::IpText::new(local.ip()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_written_as_display_writes_them() {
        for n in [0, 7, 10, 64, 999, 1_000_000, u64::MAX] {
            let mut out = b"x".to_vec();
            push_decimal(&mut out, n);
            assert_eq!(out, format!("x{n}").into_bytes());
        }
    }

    #[test]
    fn chunk_sizes() {
        assert_eq!(parse_chunk_size(b"1a"), Some(26));
        assert_eq!(parse_chunk_size(b"0"), Some(0));
        assert_eq!(parse_chunk_size(b"5;name=value"), Some(5));
        assert_eq!(parse_chunk_size(b"5 ;x"), Some(5));
        assert_eq!(parse_chunk_size(b""), None);
        assert_eq!(parse_chunk_size(b"-5"), None);
        assert_eq!(parse_chunk_size(b"0x5"), None);
        assert_eq!(parse_chunk_size(b" 5"), None);
        assert_eq!(parse_chunk_size(b"fffffffffffffffff"), None);
        assert_eq!(parse_chunk_size(b"zz"), None);
        assert_eq!(parse_chunk_size(b"5;\x01"), None);
    }

    fn limits(max_headers: usize) -> crate::config::Limits {
        crate::config::Limits {
            max_headers,
            ..Default::default()
        }
    }

    #[test]
    fn heads_parse_with_empty_values_and_respect_the_header_limit() {
        let raw =
            Bytes::from_static(b"GET /a?b HTTP/1.1\r\nHost: x\r\nX-Empty:\r\nX-V: 1 2\r\n\r\n");
        let Head::Request(h, expect) = parse_head(&raw, &limits(100)) else {
            panic!("accepted");
        };
        assert!(!expect);
        assert_eq!(h.target, "/a?b");
        assert_eq!(h.headers.get("x-empty"), Some(&b""[..]));
        assert_eq!(h.headers.get("X-V"), Some(&b"1 2"[..]));
        // Lines keep their case and order.
        let lines: Vec<_> = h.headers.iter().map(|(n, _)| n.to_vec()).collect();
        assert_eq!(lines, [&b"Host"[..], b"X-Empty", b"X-V"]);
        assert!(matches!(
            parse_head(&raw, &limits(2)),
            Head::Reject(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, _)
        ));
        // More slots than fit on the stack.
        let mut many = b"GET / HTTP/1.1\r\nHost: x\r\n".to_vec();
        for i in 0..200 {
            many.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        let many = Bytes::from(many);
        assert!(matches!(parse_head(&many, &limits(300)), Head::Request(..)));
        assert!(matches!(
            parse_head(&many, &limits(150)),
            Head::Reject(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, _)
        ));
    }

    #[test]
    fn close_tokens() {
        let mut h = http::HeaderMap::new();
        assert!(!wants_close(&HeaderLines::Map(h.clone()), false));
        assert!(wants_close(&HeaderLines::Map(h.clone()), true));
        h.insert("connection", http::HeaderValue::from_static("Keep-Alive"));
        assert!(!wants_close(&HeaderLines::Map(h.clone()), true));
        h.insert("connection", http::HeaderValue::from_static("foo, close"));
        assert!(wants_close(&HeaderLines::Map(h), false));
    }
}
