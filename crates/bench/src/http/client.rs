//! A lean HTTP/1.1 client over tokio's `TcpStream`, made for load generation.
//!
//! Each corpus request is serialised once ([`prepare`]); a [`Conn`] writes those
//! bytes and reads one response with `httparse`, skipping the body by
//! `Content-Length`, chunked framing or end of stream, in one reusable buffer. No
//! per-request allocation, no header map, no body copy: the point is to spend the
//! machine's time in the server, not in the client.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::corpus::Request;

/// A request serialised once, ready to be written.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The bytes on the wire.
    pub bytes: Vec<u8>,
    /// The method is HEAD (the response has no body).
    pub head: bool,
}

/// Serialises `req`: the request line and headers as given, minus any `Connection`
/// header; `Host: authority` when it has none; `Content-Length` when it has a body
/// and neither framing header; `Connection: close` when `keep_alive` is off (or
/// `keep-alive` for HTTP/1.0 requests when on).
pub fn prepare(req: &Request, authority: &str, keep_alive: bool) -> Prepared {
    let mut b = Vec::with_capacity(256 + req.body.len());
    b.extend_from_slice(req.method.as_bytes());
    b.push(b' ');
    b.extend_from_slice(req.target.as_bytes());
    b.push(b' ');
    b.extend_from_slice(req.version.as_bytes());
    b.extend_from_slice(b"\r\n");
    let has = |n: &str| req.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
    if !has("host") {
        b.extend_from_slice(b"Host: ");
        b.extend_from_slice(authority.as_bytes());
        b.extend_from_slice(b"\r\n");
    }
    for (k, v) in &req.headers {
        if k.eq_ignore_ascii_case("connection") {
            continue;
        }
        b.extend_from_slice(k.as_bytes());
        b.extend_from_slice(b": ");
        b.extend_from_slice(v.as_bytes());
        b.extend_from_slice(b"\r\n");
    }
    if !req.body.is_empty() && !has("content-length") && !has("transfer-encoding") {
        b.extend_from_slice(format!("Content-Length: {}\r\n", req.body.len()).as_bytes());
    }
    if !keep_alive {
        b.extend_from_slice(b"Connection: close\r\n");
    } else if req.version == "HTTP/1.0" {
        b.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    b.extend_from_slice(b"\r\n");
    b.extend_from_slice(req.body.as_bytes());
    Prepared {
        bytes: b,
        head: req.method.eq_ignore_ascii_case("HEAD"),
    }
}

/// The request exactly as written in the corpus, as raw HTTP/1.1 (request line,
/// headers, blank line, body), e.g. for `palisade eval`.
pub fn raw(req: &Request) -> Vec<u8> {
    let mut b = Vec::with_capacity(256 + req.body.len());
    b.extend_from_slice(format!("{} {} {}\r\n", req.method, req.target, req.version).as_bytes());
    for (k, v) in &req.headers {
        b.extend_from_slice(k.as_bytes());
        b.extend_from_slice(b": ");
        b.extend_from_slice(v.as_bytes());
        b.extend_from_slice(b"\r\n");
    }
    b.extend_from_slice(b"\r\n");
    b.extend_from_slice(req.body.as_bytes());
    b
}

/// A per-connection timeout that touches tokio's timer wheel about once per timeout
/// period instead of once per request: it sleeps until the earliest deadline it was
/// given and, when it fires early for the current request, re-arms itself for that
/// request's deadline.
#[derive(Debug)]
pub struct Watchdog {
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl Default for Watchdog {
    fn default() -> Self {
        Watchdog {
            sleep: Box::pin(tokio::time::sleep(std::time::Duration::from_secs(86_400))),
        }
    }
}

impl Watchdog {
    /// Runs `fut` until it completes (`Some`) or `deadline` passes (`None`).
    pub async fn run<F: std::future::Future>(
        &mut self,
        deadline: std::time::Instant,
        fut: F,
    ) -> Option<F::Output> {
        let deadline = tokio::time::Instant::from_std(deadline);
        if self.sleep.deadline() > deadline {
            self.sleep.as_mut().reset(deadline);
        }
        tokio::pin!(fut);
        loop {
            tokio::select! {
                biased;
                out = &mut fut => return Some(out),
                () = &mut self.sleep => {
                    if tokio::time::Instant::now() >= deadline {
                        return None;
                    }
                    self.sleep.as_mut().reset(deadline);
                }
            }
        }
    }
}

/// One client connection slot: connects when needed, reconnects after a close or an
/// error, reuses its read buffer across connections and times requests out with a
/// [`Watchdog`].
#[derive(Debug)]
pub struct Client {
    addr: SocketAddr,
    conn: Option<Conn>,
    spare: Vec<u8>,
    watchdog: Watchdog,
    keep_alive: bool,
    /// Connections opened so far.
    pub opened: u64,
}

impl Client {
    /// A slot for `addr`; with `keep_alive` off every request gets a new connection.
    pub fn new(addr: SocketAddr, keep_alive: bool) -> Self {
        Client {
            addr,
            conn: None,
            spare: Vec::new(),
            watchdog: Watchdog::default(),
            keep_alive,
            opened: 0,
        }
    }

    /// Sends `req` (connecting first when needed) and reads the response, or fails
    /// by `deadline`. The connection is closed after an error, a response that
    /// closes it, or any response when keep-alive is off.
    pub async fn request(
        &mut self,
        req: &Prepared,
        deadline: std::time::Instant,
    ) -> Result<Response, ClientError> {
        let conn = match self.conn.as_mut() {
            Some(c) => c,
            None => {
                let buf = std::mem::take(&mut self.spare);
                let c = self
                    .watchdog
                    .run(deadline, Conn::connect_with(self.addr, buf))
                    .await
                    .unwrap_or(Err(ClientError::Timeout))?;
                self.opened += 1;
                self.conn.insert(c)
            }
        };
        let result = self
            .watchdog
            .run(deadline, conn.round_trip(req))
            .await
            .unwrap_or(Err(ClientError::Timeout));
        match &result {
            Ok(r) if !r.close && self.keep_alive => {}
            Ok(_) => {
                if let Some(c) = self.conn.take() {
                    self.spare = c.into_buffer();
                }
            }
            Err(_) => self.conn = None,
        }
        result
    }
}

/// What went wrong with one request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// Could not connect.
    #[error("connect: {0}")]
    Connect(std::io::Error),
    /// Writing the request failed.
    #[error("write: {0}")]
    Write(std::io::Error),
    /// Reading the response failed.
    #[error("read: {0}")]
    Read(std::io::Error),
    /// The server closed the connection before a whole response.
    #[error("connection closed before a complete response")]
    Closed,
    /// The response is not valid HTTP/1.1.
    #[error("invalid response: {0}")]
    Parse(&'static str),
    /// No response within the timeout.
    #[error("timeout")]
    Timeout,
}

/// One response, as far as a load generator cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The connection cannot be reused.
    pub close: bool,
    /// Bytes read for this response (head and body).
    pub bytes: u64,
}

const BUF: usize = 64 * 1024;
const MAX_HEAD: usize = 1024 * 1024;

/// A client connection with its read buffer.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

enum Framing {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

impl Conn {
    /// Connects (with `TCP_NODELAY`).
    pub async fn connect(addr: SocketAddr) -> Result<Conn, ClientError> {
        Self::connect_with(addr, Vec::new()).await
    }

    /// Connects, reusing the buffer of an earlier connection (see
    /// [`Conn::into_buffer`]), so that a connection per request costs no allocation.
    pub async fn connect_with(addr: SocketAddr, mut buf: Vec<u8>) -> Result<Conn, ClientError> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(ClientError::Connect)?;
        stream.set_nodelay(true).map_err(ClientError::Connect)?;
        if buf.len() < BUF {
            buf.resize(BUF, 0);
        }
        Ok(Conn {
            stream,
            buf,
            start: 0,
            end: 0,
        })
    }

    /// Closes the connection and returns its buffer for the next one.
    pub fn into_buffer(self) -> Vec<u8> {
        self.buf
    }

    /// Reads more bytes into the buffer; `Ok(0)` at end of stream.
    async fn fill(&mut self) -> Result<usize, ClientError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.buf.len() < MAX_HEAD {
                let n = self.buf.len() * 2;
                self.buf.resize(n, 0);
            } else {
                return Err(ClientError::Parse("response head too large"));
            }
        }
        let n = self
            .stream
            .read(&mut self.buf[self.end..])
            .await
            .map_err(ClientError::Read)?;
        self.end += n;
        Ok(n)
    }

    /// Sends `req` and reads its response.
    pub async fn round_trip(&mut self, req: &Prepared) -> Result<Response, ClientError> {
        self.stream
            .write_all(&req.bytes)
            .await
            .map_err(ClientError::Write)?;
        self.read_response(req.head).await
    }

    async fn read_response(&mut self, head_request: bool) -> Result<Response, ClientError> {
        let mut total = 0u64;
        loop {
            let (status, framing, close, used) = loop {
                let mut headers = [httparse::EMPTY_HEADER; 64];
                let mut resp = httparse::Response::new(&mut headers);
                match resp.parse(&self.buf[self.start..self.end]) {
                    Ok(httparse::Status::Complete(n)) => {
                        let status = resp.code.unwrap_or(0);
                        let http10 = resp.version == Some(0);
                        let mut length = None;
                        let mut chunked = false;
                        let mut close = http10;
                        for h in resp.headers.iter() {
                            if h.name.eq_ignore_ascii_case("content-length") {
                                let v = std::str::from_utf8(h.value)
                                    .ok()
                                    .and_then(|s| s.trim().parse::<u64>().ok())
                                    .ok_or(ClientError::Parse("bad Content-Length"))?;
                                length = Some(v);
                            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                                chunked = h.value.to_ascii_lowercase().ends_with(b"chunked");
                            } else if h.name.eq_ignore_ascii_case("connection") {
                                let v = h.value.to_ascii_lowercase();
                                if v.windows(5).any(|w| w == b"close") {
                                    close = true;
                                } else if v.windows(10).any(|w| w == b"keep-alive") {
                                    close = false;
                                }
                            }
                        }
                        let framing = if head_request
                            || status == 204
                            || status == 304
                            || (100..200).contains(&status)
                        {
                            Framing::None
                        } else if chunked {
                            Framing::Chunked
                        } else if let Some(n) = length {
                            Framing::Length(n)
                        } else {
                            Framing::UntilClose
                        };
                        break (status, framing, close, n);
                    }
                    Ok(httparse::Status::Partial) => {
                        if self.fill().await? == 0 {
                            return Err(ClientError::Closed);
                        }
                    }
                    Err(_) => return Err(ClientError::Parse("bad response head")),
                }
            };
            self.start += used;
            total += used as u64;
            if (100..200).contains(&status) {
                // An interim response (100 Continue): the real one follows.
                continue;
            }
            let close = match framing {
                Framing::None => close,
                Framing::Length(n) => {
                    total += n;
                    self.skip(n).await?;
                    close
                }
                Framing::Chunked => {
                    total += self.skip_chunked().await?;
                    close
                }
                Framing::UntilClose => {
                    total += (self.end - self.start) as u64;
                    self.start = self.end;
                    loop {
                        let n = self.fill().await?;
                        if n == 0 {
                            break;
                        }
                        total += n as u64;
                        self.start = self.end;
                    }
                    true
                }
            };
            return Ok(Response {
                status,
                close,
                bytes: total,
            });
        }
    }

    /// Skips `n` body bytes.
    async fn skip(&mut self, mut n: u64) -> Result<(), ClientError> {
        loop {
            let avail = (self.end - self.start) as u64;
            if avail >= n {
                self.start += n as usize;
                return Ok(());
            }
            n -= avail;
            self.start = self.end;
            if self.fill().await? == 0 {
                return Err(ClientError::Closed);
            }
        }
    }

    /// Skips a chunked body (chunks and trailers); returns the bytes consumed.
    async fn skip_chunked(&mut self) -> Result<u64, ClientError> {
        let mut total = 0u64;
        loop {
            let parsed = httparse::parse_chunk_size(&self.buf[self.start..self.end]);
            match parsed {
                Ok(httparse::Status::Complete((used, size))) => {
                    self.start += used;
                    total += used as u64;
                    if size == 0 {
                        break;
                    }
                    self.skip(size + 2).await?;
                    total += size + 2;
                }
                Ok(httparse::Status::Partial) => {
                    if self.fill().await? == 0 {
                        return Err(ClientError::Closed);
                    }
                }
                Err(_) => return Err(ClientError::Parse("bad chunk size")),
            }
        }
        // Trailers, then the empty line.
        loop {
            let window = &self.buf[self.start..self.end];
            match window.windows(2).position(|w| w == b"\r\n") {
                Some(0) => {
                    self.start += 2;
                    total += 2;
                    return Ok(total);
                }
                Some(i) => {
                    self.start += i + 2;
                    total += i as u64 + 2;
                }
                None => {
                    if self.fill().await? == 0 {
                        return Err(ClientError::Closed);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn req(method: &str, headers: &[(&str, &str)], body: &str) -> Request {
        Request {
            name: String::new(),
            method: method.into(),
            target: "/x?a=1".into(),
            version: "HTTP/1.1".into(),
            headers: headers
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            body: body.into(),
            resp_len: 64,
        }
    }

    #[test]
    fn prepare_adds_host_length_and_connection() {
        let p = prepare(
            &req("POST", &[("Connection", "close")], "a=b"),
            "h:1",
            false,
        );
        assert_eq!(
            String::from_utf8(p.bytes).unwrap(),
            "POST /x?a=1 HTTP/1.1\r\nHost: h:1\r\nContent-Length: 3\r\nConnection: close\r\n\r\na=b"
        );
        let p = prepare(&req("HEAD", &[("Host", "x")], ""), "h:1", true);
        assert_eq!(
            String::from_utf8(p.bytes).unwrap(),
            "HEAD /x?a=1 HTTP/1.1\r\nHost: x\r\n\r\n"
        );
        assert!(p.head);
    }

    #[test]
    fn raw_is_the_request_as_written() {
        let r = req("POST", &[("Host", "x"), ("Content-Length", "3")], "a=b");
        assert_eq!(
            String::from_utf8(raw(&r)).unwrap(),
            "POST /x?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\na=b"
        );
        let parsed = ftw::parse_request(&raw(&r)).unwrap();
        assert_eq!(parsed.body, b"a=b");
    }

    async fn serve_once(responses: &'static [u8]) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await.unwrap();
            s.write_all(responses).await.unwrap();
        });
        addr
    }

    #[test]
    fn reads_length_chunked_and_close_delimited_bodies() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let wire: &'static [u8] = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\nHTTP/1.0 404 Not Found\r\n\r\nrest of it";
            let addr = serve_once(wire).await;
            let mut c = Conn::connect(addr).await.unwrap();
            let get = prepare(&req("GET", &[], ""), "h", true);
            let r1 = c.round_trip(&get).await.unwrap();
            assert_eq!((r1.status, r1.close), (200, false));
            let r2 = c.read_response(false).await.unwrap();
            assert_eq!((r2.status, r2.close), (403, false));
            let r3 = c.read_response(false).await.unwrap();
            assert_eq!((r3.status, r3.close), (404, true));
            assert_eq!(r3.bytes, 26 + 10);
            assert!(matches!(c.read_response(false).await, Err(ClientError::Closed)));
        });
    }
}
