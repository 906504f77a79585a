//! Upstream groups: addresses used in turn (round robin), connect and read timeouts,
//! and passive health (an address that failed to connect is skipped for a while).
//!
//! Connections are pooled per address by `hyper-util`'s client (HTTP/1.1 to the
//! upstream, keep-alive).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::body::ForwardBody;

/// The HTTP client shared by every upstream group of one runtime.
pub type HttpClient = Client<HttpConnector, ForwardBody>;

/// Builds the upstream client with a connect timeout.
pub fn client(connect_timeout: Duration) -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(connect_timeout));
    connector.set_nodelay(true);
    connector.enforce_http(true);
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(256)
        .build(connector)
}

/// One address and its health.
#[derive(Debug)]
pub struct Address {
    /// `host:port`.
    pub authority: String,
    /// Milliseconds since the group's epoch until which the address is skipped.
    down_until_ms: AtomicU64,
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
    /// Time to the response head.
    pub read_timeout: Duration,
    /// How long a failed address is skipped.
    pub fail_timeout: Duration,
    /// The pooled client (one per group, so that each group has its connect timeout).
    pub client: HttpClient,
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
                })
                .collect(),
            next: AtomicUsize::new(0),
            epoch: Instant::now(),
            read_timeout,
            fail_timeout,
            client: client(connect_timeout),
        }
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
