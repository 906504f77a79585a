//! Upstream groups: addresses used in turn (round robin), connect and read timeouts,
//! and passive health (an address that failed to connect is skipped for a while).
//!
//! Each address keeps a pool of keep-alive HTTP/1.1 connections ([`pool`]); a
//! request is exchanged on one of them in the request's own task ([`exchange`]),
//! the response body read as the client takes it ([`chunked`] decodes chunked
//! bodies).

pub mod chunked;
pub mod exchange;
pub mod pool;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::body::ForwardBody;
use exchange::{ExchangeError, RequestFraming, UpstreamResponse};
use pool::{Pool, UpConn};

/// Idle connections kept per address.
const MAX_IDLE: usize = 256;
/// How long an idle connection is kept (below the usual upstream keep-alive
/// timeouts, 60-75 s, so that the upstream rarely closes one first).
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// One address, its health and its idle connections.
#[derive(Debug)]
pub struct Address {
    /// `host:port`.
    pub authority: String,
    /// Milliseconds since the group's epoch until which the address is skipped.
    down_until_ms: AtomicU64,
    /// Idle keep-alive connections.
    pub pool: Arc<Pool>,
}

/// An upstream group.
#[derive(Debug)]
pub struct Upstream {
    /// Its name.
    pub name: String,
    /// Addresses, in configuration order.
    pub addresses: Vec<Address>,
    next: AtomicUsize,
    epoch: Instant,
    /// Time to open a connection.
    pub connect_timeout: Duration,
    /// Time to the response head.
    pub read_timeout: Duration,
    /// How long a failed address is skipped.
    pub fail_timeout: Duration,
}

impl Upstream {
    /// A group over `addresses`.
    pub fn new(
        name: String,
        addresses: Vec<String>,
        connect_timeout: Duration,
        read_timeout: Duration,
        fail_timeout: Duration,
    ) -> Self {
        Upstream {
            name,
            addresses: addresses
                .into_iter()
                .map(|authority| Address {
                    authority,
                    down_until_ms: AtomicU64::new(0),
                    pool: Arc::new(Pool::new(MAX_IDLE, IDLE_TIMEOUT)),
                })
                .collect(),
            next: AtomicUsize::new(0),
            epoch: Instant::now(),
            connect_timeout,
            read_timeout,
            fail_timeout,
        }
    }

    /// Sends a request (its serialized head and its body) to address `idx` and
    /// reads the response head: on an idle pooled connection when there is one,
    /// otherwise on a new one. A pooled connection that fails before any response
    /// byte (the upstream closed it while idle) is replaced by a new one when the
    /// request is `idempotent` and its body is held in memory.
    ///
    /// Errors: [`ExchangeError::Connect`] when no connection could be opened; the
    /// others when the exchange failed.
    pub async fn send(
        &self,
        idx: usize,
        head: &[u8],
        mut body: ForwardBody,
        framing: RequestFraming,
        head_request: bool,
        idempotent: bool,
    ) -> Result<UpstreamResponse, ExchangeError> {
        let Some(addr) = self.addresses.get(idx) else {
            return Err(ExchangeError::Invalid("no upstream address"));
        };
        if let Some(conn) = addr.pool.take() {
            let retry = if idempotent { body.try_clone() } else { None };
            match exchange::exchange(conn, &addr.pool, head, body, framing, head_request).await {
                Ok(r) => return Ok(r),
                Err((e, stale)) => match retry {
                    Some(b) if stale => {
                        tracing::debug!(address = %addr.authority, error = %e, "pooled upstream connection was closed; retrying on a new one");
                        body = b;
                    }
                    _ => return Err(e),
                },
            }
        }
        let conn = UpConn::connect(&addr.authority, self.connect_timeout)
            .await
            .map_err(ExchangeError::Connect)?;
        exchange::exchange(conn, &addr.pool, head, body, framing, head_request)
            .await
            .map_err(|(e, _)| e)
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// The next address in turn that is not marked down; when all are down, the next
    /// one anyway (better a try than a certain failure).
    pub fn pick(&self) -> usize {
        let n = self.addresses.len().max(1);
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let now = self.now_ms();
        for i in 0..n {
            let idx = (start + i) % n;
            if let Some(a) = self.addresses.get(idx) {
                if a.down_until_ms.load(Ordering::Relaxed) <= now {
                    return idx;
                }
            }
        }
        start % n
    }

    /// Marks an address as failed: it is skipped for `fail_timeout`.
    pub fn mark_failed(&self, idx: usize) {
        if let Some(a) = self.addresses.get(idx) {
            let until = self.now_ms() + self.fail_timeout.as_millis() as u64;
            a.down_until_ms.store(until, Ordering::Relaxed);
        }
    }

    /// Whether an address is currently marked down.
    pub fn is_down(&self, idx: usize) -> bool {
        self.addresses
            .get(idx)
            .is_some_and(|a| a.down_until_ms.load(Ordering::Relaxed) > self.now_ms())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Reads one request head (no body) from `s`.
    async fn read_request(s: &mut tokio::net::TcpStream) -> bool {
        let mut got = Vec::new();
        let mut b = [0u8; 1024];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut b).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => got.extend_from_slice(&b[..n]),
            }
        }
        true
    }

    #[tokio::test]
    async fn keep_alive_reuse_and_a_pooled_connection_closed_by_the_upstream() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = l.local_addr().expect("addr").to_string();
        // First connection: answers one request, then reads the next and closes
        // without answering (as a server whose keep-alive timeout just ran out).
        // Second connection: answers everything.
        let server = tokio::spawn(async move {
            let (mut a, _) = l.accept().await.expect("accept");
            assert!(read_request(&mut a).await);
            a.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst")
                .await
                .expect("write");
            assert!(read_request(&mut a).await);
            drop(a);
            let (mut b, _) = l.accept().await.expect("accept");
            while read_request(&mut b).await {
                b.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nsecond\r\n0\r\n\r\n")
                    .await
                    .expect("write");
            }
        });
        let up = Upstream::new(
            "u".into(),
            vec![addr],
            Duration::from_secs(1),
            Duration::from_secs(1),
            Duration::from_secs(1),
        );
        let head = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n";
        let mut texts = Vec::new();
        for _ in 0..3 {
            let r = up
                .send(
                    0,
                    head,
                    ForwardBody::empty(),
                    RequestFraming::AsIs,
                    false,
                    true,
                )
                .await
                .expect("response");
            assert_eq!(r.status, http::StatusCode::OK);
            let body = r.body.collect().await.expect("body").to_bytes();
            texts.push(String::from_utf8_lossy(&body).to_string());
        }
        assert_eq!(texts, ["first", "second", "second"]);
        // The second connection is back in the pool after its chunked response.
        assert_eq!(up.addresses[0].pool.idle(), 1);
        server.abort();
    }

    #[tokio::test]
    async fn round_robin_skips_failed_addresses() {
        let up = Upstream::new(
            "u".into(),
            vec!["a:1".into(), "b:1".into(), "c:1".into()],
            Duration::from_secs(1),
            Duration::from_secs(1),
            Duration::from_secs(60),
        );
        let picks: Vec<usize> = (0..6).map(|_| up.pick()).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2]);
        up.mark_failed(1);
        assert!(up.is_down(1));
        let picks: Vec<usize> = (0..4).map(|_| up.pick()).collect();
        assert!(!picks.contains(&1), "{picks:?}");
        up.mark_failed(0);
        up.mark_failed(2);
        // All down: still answers something.
        assert!(up.pick() < 3);
    }
}
