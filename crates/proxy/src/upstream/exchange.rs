//! One HTTP/1.1 exchange with an upstream address, in the task of the client's
//! request: the request head and body written while the response head is awaited
//! (an upstream may answer before reading the whole body), the response head parsed
//! with `httparse`, and the response body read by [`UpstreamBody`] as the client
//! takes it, the connection going back to its pool when the body ended cleanly.
//!
//! A request body is written by a future of its own (owning the socket's write half)
//! while the response head is read; when the response comes first, that future goes
//! on in a task of its own and the connection is closed after the response.
//!
//! Doing this in the request's own task (rather than through a pooled client with a
//! task per connection) saves the channel hops and task wake-ups per request that
//! dominated an engine-Off proxy's user-space time.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Version};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use super::chunked::{ChunkDecoder, Step};
use super::pool::{Pool, UpConn};
use crate::body::ForwardBody;

/// Largest response head accepted from an upstream.
const MAX_HEAD: usize = 64 * 1024;
/// Most response header lines accepted.
const MAX_HEADERS: usize = 128;
/// Read size for response bytes.
const READ_CHUNK: usize = 16 * 1024;

/// Why an exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// No connection could be opened.
    #[error("connect: {0}")]
    Connect(io::Error),
    /// The connection failed or closed before a complete response head.
    #[error("{0}")]
    Io(io::Error),
    /// The request body from the client failed (its error is in the flow's slot).
    #[error("client request body failed")]
    ClientBody,
    /// The upstream sent something that is not a valid HTTP/1.x response head.
    #[error("invalid response: {0}")]
    Invalid(&'static str),
}

impl ExchangeError {
    /// Whether the address could not be reached (it is then marked failed).
    pub fn is_connect(&self) -> bool {
        matches!(self, ExchangeError::Connect(_))
    }
}

/// How the request body is framed upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestFraming {
    /// No body (or `Content-Length` in the head and the bytes follow as they are).
    AsIs,
    /// Unknown length: chunked coding (the head carries `Transfer-Encoding:
    /// chunked`).
    Chunked,
}

/// A response head and its body.
#[derive(Debug)]
pub struct UpstreamResponse {
    /// Status.
    pub status: StatusCode,
    /// Version the upstream answered with.
    pub version: Version,
    /// Headers (values share the head's buffer).
    pub headers: HeaderMap,
    /// The body.
    pub body: UpstreamBody,
    /// For 101 Switching Protocols: the connection, now carrying another protocol
    /// (with any bytes already read after the head).
    pub upgraded: Option<UpConn>,
}

/// Sends `head` and `body` on `conn` and reads the response head.
///
/// `head_request`: the method was HEAD (the response has no body whatever it says).
/// The connection returns to `pool` once the body was read to its end, when both
/// sides allow keep-alive. The error carries whether the connection was reused and
/// failed before any response byte (the upstream closed it while idle).
pub async fn exchange(
    mut conn: UpConn,
    pool: &Arc<Pool>,
    head: &[u8],
    body: ForwardBody,
    framing: RequestFraming,
    head_request: bool,
) -> Result<UpstreamResponse, (ExchangeError, bool)> {
    let reused = conn.reused;
    let fail = |e: ExchangeError, got_bytes: bool| (e, reused && !got_bytes);
    if body.is_end_stream() {
        // The common case: the head alone, then the response.
        if let Err(e) = conn.io.write_all(head).await {
            return Err(fail(ExchangeError::Io(e), false));
        }
        let parsed = read_head(&mut conn.io, &mut conn.buf, head_request)
            .await
            .map_err(|(e, got)| fail(e, got))?;
        return Ok(respond(Source::Conn(conn), parsed, true, pool));
    }
    let UpConn { io, mut buf, .. } = conn;
    let (mut rd, mut wr) = io.into_split();
    if let Err(e) = wr.write_all(head).await {
        return Err(fail(ExchangeError::Io(e), false));
    }
    // The body is written while the response head is awaited: an upstream may
    // answer first (and keep reading, as an echo does, or stop, as a 413 does).
    let mut write = Box::pin(write_body(wr, body, framing));
    let (parsed, finished) = {
        let read = read_head(&mut rd, &mut buf, head_request);
        tokio::pin!(read);
        let mut finished = None;
        let parsed = loop {
            // The body first: a client body that already failed answers 400, not
            // a response that then breaks off.
            tokio::select! {
                biased;
                w = &mut write, if finished.is_none() => finished = Some(w),
                r = &mut read => break r,
            }
        };
        if finished.is_none() {
            // One more look, without waiting: the body may have failed meanwhile.
            tokio::select! {
                biased;
                w = &mut write => finished = Some(w),
                () = std::future::ready(()) => {}
            }
        }
        (parsed, finished)
    };
    let write_error = match &finished {
        Some((_, Err(ExchangeError::ClientBody))) => {
            return Err(fail(ExchangeError::ClientBody, true));
        }
        Some((_, Err(_))) => true,
        _ => false,
    };
    let parsed = match parsed {
        Ok(p) => p,
        Err((e, got)) => {
            let e = match (e, finished) {
                (ExchangeError::Io(_), Some((_, Err(w)))) => w,
                (e, _) => e,
            };
            return Err(fail(e, got));
        }
    };
    match finished {
        Some((wr, Ok(()))) => match rd.reunite(wr) {
            Ok(io) => {
                let conn = UpConn { io, buf, reused };
                Ok(respond(Source::Conn(conn), parsed, true, pool))
            }
            Err(_) => Err(fail(
                ExchangeError::Invalid("connection halves differ"),
                true,
            )),
        },
        Some((_, Err(_))) | None => {
            // The rest of the body goes on in the background; the connection is
            // closed after this response (its state is unknown).
            if !write_error {
                tokio::spawn(async move {
                    // Dropping a write half would shut the upstream's read side
                    // down, which servers may take as the client going away before
                    // they sent the response; the socket closes with the read half.
                    // (On a failure the write side is shut down instead, so that
                    // the upstream stops waiting for the rest of the body.)
                    let (wr, result) = write.await;
                    if result.is_ok() {
                        wr.forget();
                    }
                });
            }
            if parsed.status == StatusCode::SWITCHING_PROTOCOLS {
                return Err(fail(
                    ExchangeError::Invalid("101 before the request body was sent"),
                    true,
                ));
            }
            Ok(respond(Source::Half(rd, buf), parsed, false, pool))
        }
    }
}

/// Writes the request body (chunk-coded when asked) and hands the write half back.
async fn write_body(
    mut wr: OwnedWriteHalf,
    mut body: ForwardBody,
    framing: RequestFraming,
) -> (OwnedWriteHalf, Result<(), ExchangeError>) {
    let result = async {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| ExchangeError::ClientBody)?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if data.is_empty() {
                continue;
            }
            if framing == RequestFraming::Chunked {
                let size = format!("{:x}\r\n", data.len());
                wr.write_all(size.as_bytes())
                    .await
                    .map_err(ExchangeError::Io)?;
                wr.write_all(&data).await.map_err(ExchangeError::Io)?;
                wr.write_all(b"\r\n").await.map_err(ExchangeError::Io)?;
            } else {
                wr.write_all(&data).await.map_err(ExchangeError::Io)?;
            }
        }
        if framing == RequestFraming::Chunked {
            wr.write_all(b"0\r\n\r\n")
                .await
                .map_err(ExchangeError::Io)?;
        }
        Ok(())
    }
    .await;
    (wr, result)
}

/// The response for a parsed head, its body read from `source`.
fn respond(
    source: Source,
    parsed: ParsedHead,
    reusable: bool,
    pool: &Arc<Pool>,
) -> UpstreamResponse {
    if parsed.status == StatusCode::SWITCHING_PROTOCOLS {
        if let Source::Conn(conn) = source {
            return UpstreamResponse {
                status: parsed.status,
                version: parsed.version,
                headers: parsed.headers,
                body: UpstreamBody::empty(),
                upgraded: Some(conn),
            };
        }
    }
    let (mode, exact) = match parsed.framing {
        ResponseFraming::Empty => (Mode::Length(0), Some(0)),
        ResponseFraming::Length(n) => (Mode::Length(n), Some(n)),
        ResponseFraming::Chunked => (Mode::Chunked(ChunkDecoder::default()), None),
        ResponseFraming::Close => (Mode::Close, None),
    };
    let keep_alive = reusable && parsed.keep_alive && matches!(source, Source::Conn(_));
    let mut body = UpstreamBody {
        source: Some(source),
        mode,
        pool: keep_alive.then(|| pool.clone()),
        exact,
    };
    if exact == Some(0) {
        body.release();
    }
    UpstreamResponse {
        status: parsed.status,
        version: parsed.version,
        headers: parsed.headers,
        body,
        upgraded: None,
    }
}

/// Where a response body is read from.
#[derive(Debug)]
enum Source {
    /// The whole connection (it may go back to the pool).
    Conn(UpConn),
    /// The read half, while the request body is still being written.
    Half(OwnedReadHalf, BytesMut),
}

impl Source {
    fn buf(&mut self) -> &mut BytesMut {
        match self {
            Source::Conn(c) => &mut c.buf,
            Source::Half(_, b) => b,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ResponseFraming {
    Empty,
    Length(u64),
    Chunked,
    Close,
}

#[derive(Debug)]
struct ParsedHead {
    status: StatusCode,
    version: Version,
    headers: HeaderMap,
    framing: ResponseFraming,
    keep_alive: bool,
}

/// Reads up to and including the final response head (interim 1xx heads other
/// than 101 are skipped). The error carries whether any byte arrived.
async fn read_head<R: tokio::io::AsyncRead + Unpin>(
    rd: &mut R,
    buf: &mut BytesMut,
    head_request: bool,
) -> Result<ParsedHead, (ExchangeError, bool)> {
    use tokio::io::AsyncReadExt;
    let mut got_bytes = !buf.is_empty();
    loop {
        if let Some(end) = memchr::memmem::find(buf, b"\r\n\r\n").map(|p| p + 4) {
            let raw = buf.split_to(end).freeze();
            let parsed = parse_head(&raw, head_request).map_err(|e| (e, true))?;
            if parsed.status.is_informational() && parsed.status != StatusCode::SWITCHING_PROTOCOLS
            {
                continue;
            }
            return Ok(parsed);
        }
        if buf.len() > MAX_HEAD {
            return Err((ExchangeError::Invalid("response head too large"), true));
        }
        buf.reserve(READ_CHUNK);
        match rd.read_buf(buf).await {
            Ok(0) => {
                return Err((
                    ExchangeError::Io(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "connection closed before a response",
                    )),
                    got_bytes,
                ))
            }
            Ok(_) => got_bytes = true,
            Err(e) => return Err((ExchangeError::Io(e), got_bytes)),
        }
    }
}

fn parse_head(raw: &Bytes, head_request: bool) -> Result<ParsedHead, ExchangeError> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut slots);
    match resp.parse(raw) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(ExchangeError::Invalid("incomplete head")),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(ExchangeError::Invalid("too many headers"))
        }
        Err(_) => return Err(ExchangeError::Invalid("malformed head")),
    }
    let (Some(code), Some(minor)) = (resp.code, resp.version) else {
        return Err(ExchangeError::Invalid("malformed status line"));
    };
    let status = StatusCode::from_u16(code).map_err(|_| ExchangeError::Invalid("bad status"))?;
    let version = if minor == 1 {
        Version::HTTP_11
    } else {
        Version::HTTP_10
    };
    let mut headers = HeaderMap::with_capacity(resp.headers.len());
    let mut keep_alive = minor == 1;
    let mut chunked = false;
    let mut transfer_coded = false;
    let mut length: Option<u64> = None;
    for h in resp.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes())
            .map_err(|_| ExchangeError::Invalid("bad header"))?;
        let value = HeaderValue::from_maybe_shared(raw.slice_ref(h.value))
            .map_err(|_| ExchangeError::Invalid("bad header value"))?;
        if name == http::header::CONNECTION {
            for t in h.value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                if t.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if t.eq_ignore_ascii_case(b"keep-alive") && minor == 0 {
                    keep_alive = true;
                }
            }
        } else if name == http::header::TRANSFER_ENCODING {
            transfer_coded = true;
            // Only a final `chunked` coding delimits the body; anything else reads
            // to the end of the connection.
            chunked = h
                .value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if name == http::header::CONTENT_LENGTH {
            for part in h.value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                let n = std::str::from_utf8(part)
                    .ok()
                    .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|s| s.parse::<u64>().ok())
                    .ok_or(ExchangeError::Invalid("bad content-length"))?;
                if length.is_some_and(|l| l != n) {
                    return Err(ExchangeError::Invalid("conflicting content-length"));
                }
                length = Some(n);
            }
        }
        headers.append(name, value);
    }
    let no_body = head_request
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    let framing = if no_body {
        ResponseFraming::Empty
    } else if transfer_coded {
        // Transfer-Encoding overrides Content-Length (RFC 9112 §6.3); such a
        // message must not be reused.
        if length.is_some() {
            keep_alive = false;
        }
        if chunked {
            ResponseFraming::Chunked
        } else {
            ResponseFraming::Close
        }
    } else if let Some(n) = length {
        ResponseFraming::Length(n)
    } else {
        ResponseFraming::Close
    };
    if framing == ResponseFraming::Close {
        keep_alive = false;
    }
    Ok(ParsedHead {
        status,
        version,
        headers,
        framing,
        keep_alive,
    })
}

#[derive(Debug)]
enum Mode {
    Length(u64),
    Chunked(ChunkDecoder),
    Close,
}

/// A response body read from the upstream connection as it is polled.
#[derive(Debug)]
pub struct UpstreamBody {
    source: Option<Source>,
    mode: Mode,
    /// Where the connection goes when the body ended cleanly (`None`: closed).
    pool: Option<Arc<Pool>>,
    exact: Option<u64>,
}

impl UpstreamBody {
    /// A body with nothing in it.
    pub fn empty() -> Self {
        UpstreamBody {
            source: None,
            mode: Mode::Length(0),
            pool: None,
            exact: Some(0),
        }
    }

    /// The body ended: the connection goes back to its pool (or is closed).
    fn release(&mut self) {
        if let (Some(Source::Conn(conn)), Some(pool)) = (self.source.take(), self.pool.take()) {
            pool.put(conn);
        }
    }

    /// Reads more bytes into the connection's buffer; Ok(0) at end of stream.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        match self.source.as_mut() {
            None => Poll::Ready(Ok(0)),
            Some(Source::Conn(c)) => {
                c.buf.reserve(READ_CHUNK);
                tokio_util::io::poll_read_buf(Pin::new(&mut c.io), cx, &mut c.buf)
            }
            Some(Source::Half(rd, buf)) => {
                buf.reserve(READ_CHUNK);
                tokio_util::io::poll_read_buf(Pin::new(rd), cx, buf)
            }
        }
    }
}

fn unexpected_eof() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "upstream closed the connection mid-body",
    )
}

impl Body for UpstreamBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = &mut *self;
        loop {
            let Some(source) = this.source.as_mut() else {
                return Poll::Ready(None);
            };
            let buf = source.buf();
            match &mut this.mode {
                Mode::Length(0) => {
                    this.release();
                    return Poll::Ready(None);
                }
                Mode::Length(left) => {
                    if !buf.is_empty() {
                        let n = usize::try_from(*left).unwrap_or(usize::MAX).min(buf.len());
                        let data = buf.split_to(n).freeze();
                        *left -= n as u64;
                        if *left == 0 {
                            this.release();
                        }
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                }
                Mode::Chunked(dec) => match dec.decode(buf) {
                    Ok(Step::Data(d)) => return Poll::Ready(Some(Ok(Frame::data(d)))),
                    Ok(Step::Done) => {
                        this.release();
                        return Poll::Ready(None);
                    }
                    Ok(Step::NeedMore) => {}
                    Err(why) => {
                        this.source = None;
                        return Poll::Ready(Some(Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            why,
                        ))));
                    }
                },
                Mode::Close => {
                    if !buf.is_empty() {
                        let data = buf.split().freeze();
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                }
            }
            match this.poll_fill(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) => {
                    this.source = None;
                    return match this.mode {
                        Mode::Close => Poll::Ready(None),
                        _ => Poll::Ready(Some(Err(unexpected_eof()))),
                    };
                }
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => {
                    this.source = None;
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.source.is_none() || matches!(self.mode, Mode::Length(0))
    }

    fn size_hint(&self) -> SizeHint {
        match self.exact {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &[u8]) -> Result<ParsedHead, ExchangeError> {
        parse_head(&Bytes::copy_from_slice(raw), false)
    }

    #[test]
    fn framing_follows_rfc_9112() {
        let p = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n").expect("ok");
        assert_eq!(
            (p.framing, p.keep_alive),
            (ResponseFraming::Length(5), true)
        );
        let p = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").expect("ok");
        assert_eq!((p.framing, p.keep_alive), (ResponseFraming::Chunked, true));
        let p =
            parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n")
                .expect("ok");
        assert_eq!((p.framing, p.keep_alive), (ResponseFraming::Chunked, false));
        let p = parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n").expect("ok");
        assert_eq!((p.framing, p.keep_alive), (ResponseFraming::Close, false));
        let p = parse(b"HTTP/1.1 200 OK\r\n\r\n").expect("ok");
        assert_eq!((p.framing, p.keep_alive), (ResponseFraming::Close, false));
        let p = parse(b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n").expect("ok");
        assert_eq!(p.framing, ResponseFraming::Empty);
        let p = parse_head(
            &Bytes::from_static(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"),
            true,
        )
        .expect("ok");
        assert_eq!(p.framing, ResponseFraming::Empty);
        let p = parse(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n").expect("ok");
        assert!(!p.keep_alive);
        let p = parse(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n")
            .expect("ok");
        assert!(p.keep_alive);
        let p = parse(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n")
            .expect("ok");
        assert!(!p.keep_alive);
        let p = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\n").expect("ok");
        assert_eq!(p.framing, ResponseFraming::Length(3));
    }

    #[test]
    fn invalid_heads_are_refused() {
        for bad in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
            b"HTTP/2 200 OK\r\n\r\n",
            b"garbage\r\n\r\n",
        ] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
