//! Open loop, like httperf `--rate` and wrk2: request `i` is due at
//! `start + i / rate`; a pool of connections takes the next due request, waits for
//! its time, sends it and records the latency from the *intended* send time. When
//! the server stalls, the connections are busy, due requests wait, and their waiting
//! counts in their latency (no coordinated omission).
//!
//! Every request due within the duration is sent (the run drains after the
//! duration), unless the hard end — duration plus the request timeout — comes first;
//! those are reported as never sent.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use super::client::{Client, Prepared};
use super::report::{Recorder, Report, RunInfo};
use super::{join_merged, on_threads, HttpError, LoadConfig, Progress};

/// How close to its due time a request is sent by yielding rather than sleeping
/// (tokio's timer has millisecond resolution).
const SPIN: Duration = Duration::from_millis(1);

/// Runs the open loop at `rate` requests/s.
pub fn run(cfg: &LoadConfig, requests: Arc<Vec<Prepared>>, rate: f64) -> Result<Report, HttpError> {
    let rate = if rate.is_finite() && rate > 0.0 {
        rate
    } else {
        1.0
    };
    let scheduled = (cfg.duration.as_secs_f64() * rate).floor() as u64;
    let info = RunInfo::open(cfg, rate, scheduled);
    let (connections, threads) = (info.connections, info.threads);
    let progress = Progress::start(cfg.progress, cfg.duration, format!("{rate:.0}/s"));
    let done = Arc::clone(&progress.done);
    let next = Arc::new(AtomicU64::new(0));
    // A little head room so that every thread is up before the first due time.
    let start = Instant::now() + Duration::from_millis(20);
    let hard_end = start + cfg.duration + cfg.timeout;
    let (addr, keep_alive, timeout) = (cfg.target.addr, cfg.keep_alive, cfg.timeout);
    let results = on_threads(threads, move |t| {
        let requests = Arc::clone(&requests);
        let done = Arc::clone(&done);
        let next = Arc::clone(&next);
        async move {
            let mut set = JoinSet::new();
            for _ in (t..connections).step_by(threads) {
                let requests = Arc::clone(&requests);
                let done = Arc::clone(&done);
                let next = Arc::clone(&next);
                set.spawn(async move {
                    let sched = Schedule {
                        start,
                        rate,
                        scheduled,
                        hard_end,
                    };
                    connection(addr, &requests, &next, sched, keep_alive, timeout, &done).await
                });
            }
            join_merged(start, set).await
        }
    })?;
    progress.finish();
    let (rec, end) = Recorder::merge_all(start, &results);
    Ok(Report::new(
        info,
        &rec,
        end.saturating_duration_since(start),
    ))
}

#[derive(Clone, Copy)]
struct Schedule {
    start: Instant,
    rate: f64,
    scheduled: u64,
    hard_end: Instant,
}

impl Schedule {
    fn due(&self, i: u64) -> Instant {
        self.start + Duration::from_secs_f64(i as f64 / self.rate)
    }
}

async fn wait_until(t: Instant) {
    let now = Instant::now();
    if t > now + SPIN {
        tokio::time::sleep_until((t - SPIN).into()).await;
    }
    while Instant::now() < t {
        tokio::task::yield_now().await;
    }
}

async fn connection(
    addr: std::net::SocketAddr,
    requests: &[Prepared],
    next: &AtomicU64,
    sched: Schedule,
    keep_alive: bool,
    timeout: Duration,
    done: &AtomicU64,
) -> (Recorder, Instant) {
    let mut rec = Recorder::default();
    let mut client = Client::new(addr, keep_alive);
    let mut last = sched.start;
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= sched.scheduled {
            break;
        }
        let due = sched.due(i);
        wait_until(due).await;
        let now = Instant::now();
        if now >= sched.hard_end {
            break;
        }
        rec.lag(now.saturating_duration_since(due));
        let req = &requests[(i % requests.len() as u64) as usize];
        match client.request(req, sched.hard_end.min(now + timeout)).await {
            Ok(resp) => {
                let now = Instant::now();
                rec.response(resp.status, now.saturating_duration_since(due), resp.bytes);
                last = now;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => rec.errors.count(&e),
        }
    }
    rec.connections_opened = client.opened;
    (rec, last)
}
