//! HTTP/2 (over TLS, ALPN `h2`) with hyper's server. HTTP/2 framing leaves no room
//! for the HTTP/1 smuggling vectors; hyper and `h2` validate pseudo-headers and
//! refuse connection-specific headers. Each request goes through [`flow::handle`]
//! like an HTTP/1.1 one.

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};

use crate::body::{BoxError, ClientBodyError, ProxyBody};
use crate::flow::{self, ConnInfo, Framing, RequestHead};
use crate::h1::DropConnection;
use crate::Shared;

/// A dropped stream (drop intervention) is reset.
#[derive(Debug, thiserror::Error)]
#[error("stream dropped by rule")]
struct Dropped;

async fn serve_request(
    shared: Arc<Shared>,
    conn: ConnInfo,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, BoxError> {
    let (parts, body) = req.into_parts();
    let max = shared.runtime.load().limits.max_body_bytes;
    let framing = if http_body::Body::is_end_stream(&body) {
        Framing::None
    } else if let Some(n) = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.parse::<u64>().ok())
    {
        Framing::Length(n)
    } else {
        Framing::Stream
    };
    if let Framing::Length(n) = framing {
        if max > 0 && n > max {
            return Ok(flow::simple(
                http::StatusCode::PAYLOAD_TOO_LARGE,
                "body too large",
            ));
        }
    }
    let target = parts
        .uri
        .path_and_query()
        .map_or_else(|| "/".to_string(), |p| p.as_str().to_string());
    let mut headers = parts.headers;
    if !headers.contains_key(http::header::HOST) {
        if let Some(a) = parts.uri.authority() {
            if let Ok(v) = http::HeaderValue::from_str(a.as_str()) {
                headers.insert(http::header::HOST, v);
            }
        }
    }
    let head = RequestHead {
        method: parts.method,
        target,
        version: http::Version::HTTP_2,
        headers: crate::flow::HeaderLines::Map(headers),
        framing,
    };
    let rx = if framing == Framing::None {
        None
    } else {
        let (tx, rx) = mpsc::channel(4);
        tokio::spawn(pump(body, tx, max));
        Some(rx)
    };
    let resp = flow::handle(&shared, &conn, head, rx).await;
    if resp.extensions().get::<DropConnection>().is_some() {
        return Err(Box::new(Dropped));
    }
    Ok(resp)
}

async fn pump(mut body: Incoming, tx: mpsc::Sender<Result<Bytes, ClientBodyError>>, max: u64) {
    let mut total: u64 = 0;
    loop {
        match body.frame().await {
            Some(Ok(f)) => {
                let Ok(d) = f.into_data() else { continue };
                total += d.len() as u64;
                if max > 0 && total > max {
                    let _ = tx.send(Err(ClientBodyError::TooLarge)).await;
                    return;
                }
                if tx.send(Ok(d)).await.is_err() {
                    return;
                }
            }
            Some(Err(_)) => {
                let _ = tx.send(Err(ClientBodyError::Io)).await;
                return;
            }
            None => return,
        }
    }
}

/// Serves one HTTP/2 connection.
pub async fn serve<S>(
    stream: S,
    conn: ConnInfo,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let limits = shared.runtime.load().limits.clone();
    let svc = {
        let shared = shared.clone();
        service_fn(move |req| serve_request(shared.clone(), conn, req))
    };
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .max_header_list_size(limits.max_header_bytes.min(u32::MAX as usize) as u32)
        .max_concurrent_streams(256);
    let c = builder.serve_connection(TokioIo::new(stream), svc);
    tokio::pin!(c);
    tokio::select! {
        _ = c.as_mut() => {}
        _ = shutdown.changed() => {
            c.as_mut().graceful_shutdown();
            let _ = c.await;
        }
    }
}
