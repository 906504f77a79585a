//! The CRS test backend over real sockets: a small blocking HTTP/1.1 server that
//! answers exactly like the in-process target's built-in backend
//! ([`crate::engine_target`]): `POST /reflect` with a JSON body
//! `{"status": N, "headers": {...}, "body": "..."}` (or `"encodedBody"`, base64)
//! answers with that status, those headers and that body; every other request gets
//! 200 with an empty body. Response `Content-Type` is sniffed from the body when the
//! JSON gives none, as Go's `net/http` does for CRS's own backend.
//!
//! It is what `palisade serve` forwards to when the suite runs over the network
//! (`palisade ftw --target`): one thread per connection, keep-alive, request bodies
//! with `Content-Length` or chunked framing. Framing headers in a reflected header
//! set (`Content-Length`, `Transfer-Encoding`, `Connection`) are not copied: the
//! backend frames its responses itself.
//!
//! ```no_run
//! let backend = ftw::reflect_backend::ReflectBackend::start("127.0.0.1:0")?;
//! println!("backend on {}", backend.addr());
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::chunked::{decode_chunked, ChunkError};
use crate::engine_target::backend;

/// Largest request head the backend reads.
const MAX_HEAD: usize = 1024 * 1024;
/// Largest request body the backend reads.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// How long a connection may stay idle.
const IDLE: Duration = Duration::from_secs(60);

/// A running backend; dropping it stops accepting (open connections end on their
/// own when the peer closes or idles out).
#[derive(Debug)]
pub struct ReflectBackend {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl ReflectBackend {
    /// Binds `addr` (port 0: any free port) and starts accepting on a thread.
    pub fn start(addr: impl ToSocketAddrs) -> io::Result<ReflectBackend> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let accept = std::thread::Builder::new()
            .name("ftw-reflect-accept".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    let Ok(stream) = conn else {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    };
                    let _ = std::thread::Builder::new()
                        .name("ftw-reflect-conn".into())
                        .spawn(move || {
                            let _ = serve_connection(stream);
                        });
                }
            })?;
        Ok(ReflectBackend {
            addr,
            stop,
            accept: Some(accept),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Blocks until the accept thread ends (it does not on its own: this is for a
    /// foreground `palisade ftw --backend`).
    pub fn wait(mut self) {
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

impl Drop for ReflectBackend {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// One parsed request: what the backend needs of it.
struct Request {
    method: Vec<u8>,
    path: Vec<u8>,
    body: Vec<u8>,
    close: bool,
}

fn serve_connection(mut stream: TcpStream) -> io::Result<()> {
    stream.set_read_timeout(Some(IDLE))?;
    stream.set_write_timeout(Some(IDLE))?;
    let _ = stream.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let Some(req) = read_request(&mut stream, &mut buf)? else {
            return Ok(());
        };
        let reply = backend(&req.path, &req.body);
        let mut out = Vec::with_capacity(256 + reply.body.len());
        out.extend_from_slice(
            format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status)).as_bytes(),
        );
        for (k, v) in &reply.headers {
            let framing = [&b"content-length"[..], b"transfer-encoding", b"connection"]
                .iter()
                .any(|f| k.eq_ignore_ascii_case(f));
            let unsafe_bytes = k.iter().chain(v.iter()).any(|&b| b == b'\r' || b == b'\n');
            if framing || unsafe_bytes || k.is_empty() {
                continue;
            }
            out.extend_from_slice(k);
            out.extend_from_slice(b": ");
            out.extend_from_slice(v);
            out.extend_from_slice(b"\r\n");
        }
        let bodyless = req.method.eq_ignore_ascii_case(b"HEAD")
            || reply.status < 200
            || reply.status == 204
            || reply.status == 304;
        if !(reply.status < 200 || reply.status == 204) {
            out.extend_from_slice(format!("Content-Length: {}\r\n", reply.body.len()).as_bytes());
        }
        if req.close {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        if !bodyless {
            out.extend_from_slice(&reply.body);
        }
        stream.write_all(&out)?;
        stream.flush()?;
        if req.close {
            return Ok(());
        }
    }
}

/// Reads one request from `stream` (bytes after it stay in `buf`); `None` at a clean
/// end of the connection or on a request the backend cannot frame.
fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<Option<Request>> {
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > MAX_HEAD || !fill(stream, buf)? {
            return Ok(None);
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let method = parts.next().unwrap_or_default().as_bytes().to_vec();
    let target = parts.next().unwrap_or_default();
    let version = parts.next().unwrap_or_default();
    let path = target
        .split('?')
        .next()
        .unwrap_or_default()
        .as_bytes()
        .to_vec();
    let mut length: Option<usize> = None;
    let mut chunked = false;
    let mut close = version.eq_ignore_ascii_case("HTTP/1.0");
    for l in lines {
        let Some((name, value)) = l.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().ok();
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        } else if name.eq_ignore_ascii_case("connection") {
            let v = value.to_ascii_lowercase();
            if v.contains("close") {
                close = true;
            } else if v.contains("keep-alive") {
                close = false;
            }
        }
    }
    buf.drain(..head_end);
    let body = if chunked {
        loop {
            match decode_chunked(buf) {
                Ok(b) => {
                    // The framing was consumed up to the end of the buffer at best;
                    // the proxy sends one request at a time, so nothing follows.
                    buf.clear();
                    break b;
                }
                Err(ChunkError::Truncated) if buf.len() <= MAX_BODY => {
                    if !fill(stream, buf)? {
                        return Ok(None);
                    }
                }
                Err(_) => return Ok(None),
            }
        }
    } else {
        let n = length.unwrap_or(0);
        if n > MAX_BODY {
            return Ok(None);
        }
        while buf.len() < n {
            if !fill(stream, buf)? {
                return Ok(None);
            }
        }
        buf.drain(..n).collect()
    };
    Ok(Some(Request {
        method,
        path,
        body,
        close,
    }))
}

/// Reads more bytes into `buf`; false at end of stream.
fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<bool> {
    let mut chunk = [0u8; 16 * 1024];
    let n = stream.read(&mut chunk)?;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n > 0)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    // Tests may unwrap: a panic is the failure report.
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn exchange(addr: SocketAddr, req: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(req).unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn reflects_status_headers_and_body() {
        let b = ReflectBackend::start("127.0.0.1:0").unwrap();
        let json = r#"{"status": 503, "headers": {"X-A": "1", "Content-Length": "9"}, "body": "<html>hi</html>"}"#;
        let req = format!(
            "POST /reflect HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
            json.len()
        );
        let r = exchange(b.addr(), req.as_bytes());
        assert!(r.starts_with("HTTP/1.1 503 "), "{r}");
        assert!(r.contains("X-A: 1\r\n"), "{r}");
        assert!(
            r.contains("Content-Type: text/html; charset=utf-8\r\n"),
            "{r}"
        );
        assert!(r.contains("Content-Length: 15\r\n"), "{r}");
        assert!(r.ends_with("\r\n\r\n<html>hi</html>"), "{r}");
    }

    #[test]
    fn chunked_body_keep_alive_and_plain_paths() {
        let b = ReflectBackend::start("127.0.0.1:0").unwrap();
        let json = r#"{"body":"ok"}"#;
        let chunked = format!(
            "POST /reflect HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{json}\r\n0\r\n\r\n",
            json.len()
        );
        let r = exchange(b.addr(), chunked.as_bytes());
        assert!(
            r.contains("Content-Length: 2\r\nConnection: close\r\n\r\nok"),
            "{r}"
        );
        let two = format!(
            "POST /reflect HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{json}GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            json.len()
        );
        let r = exchange(b.addr(), two.as_bytes());
        assert_eq!(r.matches("HTTP/1.1 200 OK").count(), 2, "{r}");
        assert!(r.contains("Content-Length: 2\r\n\r\nok"), "{r}");
        assert!(
            r.ends_with("Content-Length: 0\r\nConnection: close\r\n\r\n"),
            "{r}"
        );
    }
}
