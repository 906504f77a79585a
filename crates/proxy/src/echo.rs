//! The built-in echo backend of `palisade demo` (and of the tests): a small hyper
//! HTTP/1.1 server.
//!
//! - a request with a body gets it back byte for byte, streamed
//!   (`application/octet-stream`, Content-Length when the request had one);
//! - `GET /bytes/N` answers N bytes of a fixed pattern with Content-Length,
//!   `GET /chunked/N` the same without a length (chunked);
//! - `GET /status/N` answers status N; `GET /slow/MS` answers after MS milliseconds;
//! - `GET /say/TEXT` answers TEXT as `text/html` (for response-body rules);
//! - a request with `Upgrade` (WebSocket) is switched (101) and its bytes echoed;
//! - anything else: a `text/plain` summary of the request (method, target, headers).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The byte at offset `i` of the `/bytes` and `/chunked` pattern.
pub fn pattern_byte(i: u64) -> u8 {
    (i.wrapping_mul(31).wrapping_add(i >> 8) % 251) as u8
}

/// A generated body: `len` bytes of the pattern, with or without a known length.
#[derive(Debug)]
pub struct Pattern {
    pos: u64,
    len: u64,
    known: bool,
}

impl Body for Pattern {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.pos >= self.len {
            return Poll::Ready(None);
        }
        let n = (self.len - self.pos).min(64 * 1024);
        let start = self.pos;
        let chunk: Vec<u8> = (start..start + n).map(pattern_byte).collect();
        self.pos += n;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(chunk)))))
    }

    fn is_end_stream(&self) -> bool {
        self.pos >= self.len
    }

    fn size_hint(&self) -> SizeHint {
        if self.known {
            SizeHint::with_exact(self.len - self.pos)
        } else {
            SizeHint::default()
        }
    }
}

type EchoBody =
    http_body_util::combinators::BoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

fn boxed<B>(b: B) -> EchoBody
where
    B: Body<Data = Bytes> + Send + Sync + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    use http_body_util::BodyExt;
    b.map_err(Into::into).boxed()
}

fn text(status: StatusCode, ctype: &'static str, s: String) -> Response<EchoBody> {
    let mut r = Response::new(boxed(http_body_util::Full::new(Bytes::from(s))));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(ctype),
    );
    r
}

async fn answer(mut req: Request<Incoming>) -> Result<Response<EchoBody>, Infallible> {
    let path = req.uri().path().to_string();
    if let Some(proto) = req.headers().get(http::header::UPGRADE).cloned() {
        // Upgrade (e.g. WebSocket): switch, then echo the raw bytes back.
        let on = hyper::upgrade::on(&mut req);
        tokio::spawn(async move {
            if let Ok(up) = on.await {
                let io = TokioIo::new(up);
                let (mut r, mut w) = tokio::io::split(io);
                let _ = tokio::io::copy(&mut r, &mut w).await;
            }
        });
        let mut r = Response::new(boxed(http_body_util::Empty::<Bytes>::new()));
        *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        r.headers_mut().insert(http::header::UPGRADE, proto);
        r.headers_mut().insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("upgrade"),
        );
        return Ok(r);
    }
    let has_body = !req.body().is_end_stream();
    if has_body {
        let mut r = Response::new(boxed(req.into_body()));
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/octet-stream"),
        );
        return Ok(r);
    }
    // The marker may follow a route prefix (`/off/bytes/10`).
    let arg = |marker: &str| {
        path.find(marker)
            .map(|i| path[i + marker.len()..].to_string())
    };
    if let Some(n) = arg("/bytes/").and_then(|n| n.parse().ok()) {
        let mut r = Response::new(boxed(Pattern {
            pos: 0,
            len: n,
            known: true,
        }));
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/octet-stream"),
        );
        return Ok(r);
    }
    if let Some(n) = arg("/chunked/").and_then(|n| n.parse().ok()) {
        let mut r = Response::new(boxed(Pattern {
            pos: 0,
            len: n,
            known: false,
        }));
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/octet-stream"),
        );
        return Ok(r);
    }
    if let Some(code) = arg("/status/").and_then(|n| n.parse::<u16>().ok()) {
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
        return Ok(text(status, "text/plain", format!("status {code}\n")));
    }
    if let Some(ms) = arg("/slow/").and_then(|n| n.parse::<u64>().ok()) {
        tokio::time::sleep(Duration::from_millis(ms.min(60_000))).await;
        return Ok(text(
            StatusCode::OK,
            "text/plain",
            format!("slept {ms} ms\n"),
        ));
    }
    if let Some(t) = arg("/say/") {
        return Ok(text(StatusCode::OK, "text/html", t));
    }
    let mut s = format!(
        "palisade echo backend\n{} {} {:?}\n",
        req.method(),
        req.uri(),
        req.version()
    );
    for (n, v) in req.headers() {
        s.push_str(&format!(
            "{}: {}\n",
            n,
            String::from_utf8_lossy(v.as_bytes())
        ));
    }
    Ok(text(StatusCode::OK, "text/plain; charset=utf-8", s))
}

/// Starts the echo backend on `addr` (port 0 for any); returns the bound address and
/// the accept task.
pub async fn start(addr: SocketAddr) -> std::io::Result<(SocketAddr, JoinHandle<()>)> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service_fn(answer))
                    .with_upgrades()
                    .await;
            });
        }
    });
    Ok((bound, task))
}
