//! The admin listener (a separate address): Prometheus `GET /metrics`, `GET /healthz`
//! (the process is up), `GET /readyz` (a routing table is loaded) and `POST /reload`
//! (re-read and compile the configuration file; 200 with a summary, or 500 with the
//! located error while the running configuration stays).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::Shared;

fn text(status: StatusCode, body: String, ctype: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(ctype),
    );
    r
}

async fn route(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let plain = "text/plain; charset=utf-8";
    Ok(match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => text(
            StatusCode::OK,
            shared.metrics.render(),
            "text/plain; version=0.0.4; charset=utf-8",
        ),
        (&Method::GET, "/healthz") => text(StatusCode::OK, "ok\n".into(), plain),
        (&Method::GET, "/readyz") => {
            if shared.runtime.load().routes.is_empty() {
                text(StatusCode::SERVICE_UNAVAILABLE, "no routes\n".into(), plain)
            } else {
                text(StatusCode::OK, "ready\n".into(), plain)
            }
        }
        (&Method::POST, "/reload") => match shared.reload().await {
            Ok(r) => text(
                StatusCode::OK,
                format!(
                    "reloaded: {} routes, {} rules in {} ms\n",
                    r.routes,
                    r.rules,
                    r.took.as_millis()
                ),
                plain,
            ),
            Err(e) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("reload failed, the running configuration stays: {e}\n"),
                plain,
            ),
        },
        (_, "/metrics" | "/healthz" | "/readyz" | "/reload") => text(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed\n".into(),
            plain,
        ),
        _ => text(StatusCode::NOT_FOUND, "not found\n".into(), plain),
    })
}

/// Serves the admin listener until shutdown.
pub async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => return,
        };
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| route(shared.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

/// Asks a running proxy to reload through its admin listener (`palisade reload`).
/// Returns the status and the answer's text.
pub async fn request_reload(addr: std::net::SocketAddr) -> std::io::Result<(u16, String)> {
    let mut s = tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))??;
    s.write_all(
        format!("POST /reload HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .await?;
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(120), s.read_to_end(&mut out))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "reload timed out"))??;
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Ok((status, body))
}
