//! The built-in backend, used when nginx is not installed: a minimal HTTP/1.1 server
//! on its own thread (a current-thread tokio runtime) answering every request with
//! `200` and a fixed 64-byte `text/plain` body, keep-alive, request bodies read by
//! `Content-Length` (a chunked request body gets the answer and the connection closed).

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The 64-byte body every backend (this one and the nginx backend) answers.
pub const BODY: &str = "palisade bench compare backend: a 64-byte static response body.\n";

/// A running built-in backend.
#[derive(Debug)]
pub struct Builtin {
    /// Where it listens.
    pub addr: SocketAddr,
}

/// Starts the backend on `127.0.0.1:0` in a new thread, pinned to `cpus` when given.
pub fn start(cpus: Option<Vec<usize>>) -> std::io::Result<Builtin> {
    let std_listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    std_listener.set_nonblocking(true)?;
    let addr = std_listener.local_addr()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("compare-backend".into())
        .spawn(move || {
            if let Some(c) = &cpus {
                let _ = super::pin::pin_current(c);
            }
            rt.block_on(async move {
                let Ok(listener) = TcpListener::from_std(std_listener) else {
                    return;
                };
                while let Ok((s, _)) = listener.accept().await {
                    tokio::spawn(serve(s));
                }
            });
        })?;
    Ok(Builtin { addr })
}

async fn serve(mut s: TcpStream) {
    let _ = s.set_nodelay(true);
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{}",
        BODY.len(),
        BODY
    );
    let mut buf = vec![0u8; 64 * 1024];
    let mut end = 0usize;
    loop {
        // Parse a head from buf[..end].
        let parsed = {
            let mut headers = [httparse::EMPTY_HEADER; 128];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(&buf[..end]) {
                Ok(httparse::Status::Complete(n)) => {
                    let mut len = 0usize;
                    let mut chunked = false;
                    let mut close = false;
                    for h in req.headers.iter() {
                        if h.name.eq_ignore_ascii_case("content-length") {
                            len = std::str::from_utf8(h.value)
                                .ok()
                                .and_then(|v| v.trim().parse().ok())
                                .unwrap_or(0);
                        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                            chunked = true;
                        } else if h.name.eq_ignore_ascii_case("connection") {
                            close = h.value.eq_ignore_ascii_case(b"close");
                        }
                    }
                    Some((n, len, chunked || close))
                }
                Ok(httparse::Status::Partial) => None,
                Err(_) => return,
            }
        };
        match parsed {
            Some((head, body, close)) => {
                let have = end - head;
                if have >= body {
                    buf.copy_within(head + body..end, 0);
                    end = have - body;
                } else {
                    // Read and drop the rest of the body; keep what follows it.
                    let mut remaining = body - have;
                    end = 0;
                    while remaining > 0 {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) if n <= remaining => remaining -= n,
                            Ok(n) => {
                                buf.copy_within(remaining..n, 0);
                                end = n - remaining;
                                remaining = 0;
                            }
                        }
                    }
                }
                if s.write_all(response.as_bytes()).await.is_err() || close {
                    return;
                }
            }
            None => {
                if end == buf.len() {
                    return;
                }
                match s.read(&mut buf[end..]).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => end += n,
                }
            }
        }
    }
}
