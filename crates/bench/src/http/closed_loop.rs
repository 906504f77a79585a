//! Closed loop, like wrk: N connections, each sending its next request as soon as the
//! previous response is read, until the duration is over. A request in flight at the
//! end is completed and counted (so the server's count and ours agree).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use super::client::{Client, ClientError, Prepared};
use super::report::{Recorder, Report, RunInfo};
use super::{join_merged, on_threads, HttpError, LoadConfig, Progress};

/// Requests a task counts before publishing them to the progress bar.
const BATCH: u64 = 64;

/// Runs the closed loop over `requests`.
pub fn run(cfg: &LoadConfig, requests: Arc<Vec<Prepared>>) -> Result<Report, HttpError> {
    let info = RunInfo::closed(cfg);
    let (connections, threads) = (info.connections, info.threads);
    let progress = Progress::start(
        cfg.progress,
        cfg.duration,
        format!("{connections} connections"),
    );
    let done = Arc::clone(&progress.done);
    let start = Instant::now();
    let deadline = start + cfg.duration;
    let (addr, keep_alive, timeout) = (cfg.target.addr, cfg.keep_alive, cfg.timeout);
    let budget = cfg.requests.map(|n| Arc::new(AtomicU64::new(n)));
    let results = on_threads(threads, move |t| {
        let requests = Arc::clone(&requests);
        let done = Arc::clone(&done);
        let budget = budget.clone();
        async move {
            let mut set = JoinSet::new();
            for c in (t..connections).step_by(threads) {
                let requests = Arc::clone(&requests);
                let done = Arc::clone(&done);
                let budget = budget.clone();
                let offset = c * requests.len() / connections;
                let limits = Limits {
                    deadline,
                    budget,
                    timeout,
                };
                set.spawn(async move {
                    connection(addr, &requests, offset, limits, keep_alive, &done).await
                });
            }
            join_merged(start, set).await
        }
    })?;
    progress.finish();
    let (rec, end) = Recorder::merge_all(start, &results);
    Ok(Report::new(info, &rec, end - start))
}

/// When a connection stops sending.
struct Limits {
    deadline: Instant,
    /// Requests left to send over all connections (`--requests`).
    budget: Option<Arc<AtomicU64>>,
    timeout: Duration,
}

impl Limits {
    /// Takes one request from the budget; false when none is left.
    fn take(&self) -> bool {
        self.budget.as_ref().is_none_or(|b| {
            b.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok()
        })
    }
}

async fn connection(
    addr: std::net::SocketAddr,
    requests: &[Prepared],
    offset: usize,
    limits: Limits,
    keep_alive: bool,
    done: &AtomicU64,
) -> (Recorder, Instant) {
    let Limits {
        deadline, timeout, ..
    } = limits;
    let mut rec = Recorder::default();
    let mut client = Client::new(addr, keep_alive);
    let mut i = offset;
    let mut unpublished = 0u64;
    loop {
        let sent = Instant::now();
        if sent >= deadline || !limits.take() {
            break;
        }
        let req = &requests[i % requests.len()];
        i += 1;
        match client.request(req, sent + timeout).await {
            Ok(resp) => {
                rec.response(resp.status, sent.elapsed(), resp.bytes);
                unpublished += 1;
                if unpublished == BATCH {
                    done.fetch_add(unpublished, Ordering::Relaxed);
                    unpublished = 0;
                }
            }
            Err(e) => {
                rec.errors.count(&e);
                if matches!(e, ClientError::Connect(_)) {
                    // Nothing listening (yet): do not spin.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    }
    done.fetch_add(unpublished, Ordering::Relaxed);
    rec.connections_opened = client.opened;
    (rec, Instant::now())
}
