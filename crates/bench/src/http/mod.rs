//! The HTTP load generator behind `palisade bench http`.
//!
//! Two ways to load a server, both replaying a corpus whose requests are serialised
//! once ([`client::prepare`]):
//!
//! * **closed loop** ([`closed_loop`], like wrk): N connections, each sending its
//!   next request as soon as the previous response is read; keep-alive on or off.
//!   Latency runs from the send to the end of the response.
//! * **open loop** ([`open_loop`], like httperf `--rate` and wrk2): requests are
//!   scheduled at a fixed rate, request `i` at `start + i / rate`, and a pool of
//!   connections sends them; latency runs from the *intended* send time, so a stalled
//!   server's queue shows up in the percentiles instead of being hidden by the client
//!   waiting (no coordinated omission). A sweep runs several rates one after another.
//!
//! Each client thread runs its own single-threaded tokio runtime with its share of
//! the connections (as wrk runs one event loop per thread), and records into its own
//! HdrHistogram; the histograms are merged at the end. A live progress bar (indicatif,
//! on stderr, hidden when stderr is not a terminal) is fed from one atomic counter.

pub mod client;
pub mod closed_loop;
pub mod open_loop;
pub mod report;

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::task::JoinSet;

use crate::corpus::Request;
use client::Prepared;
use report::Recorder;

/// Why a load run could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The target URL is not `http://host[:port][/...]`.
    #[error("target '{0}': expected http://host[:port][/path] (https is not supported)")]
    Url(String),
    /// The host name does not resolve.
    #[error("target '{url}': {source}")]
    Resolve {
        /// The URL.
        url: String,
        /// The resolver's error.
        source: std::io::Error,
    },
    /// The corpus is empty.
    #[error("the corpus holds no request")]
    EmptyCorpus,
    /// A duration could not be read.
    #[error("duration '{0}': expected a number with ms, s, m or h (e.g. 10s)")]
    Duration(String),
    /// The tokio runtime could not be built.
    #[error("starting the client runtime: {0}")]
    Runtime(std::io::Error),
}

/// A target: where to connect and the authority for `Host`.
#[derive(Debug, Clone)]
pub struct Target {
    /// The URL as given.
    pub url: String,
    /// `host[:port]` for the Host header.
    pub authority: String,
    /// The resolved address.
    pub addr: SocketAddr,
}

impl Target {
    /// Parses and resolves `http://host[:port][/path]`.
    pub fn parse(url: &str) -> Result<Target, HttpError> {
        let (authority, with_port) =
            ftw::http_target::http_authority(url).map_err(|_| HttpError::Url(url.to_string()))?;
        let addr = with_port
            .to_socket_addrs()
            .map_err(|source| HttpError::Resolve {
                url: url.to_string(),
                source,
            })?
            .next()
            .ok_or_else(|| HttpError::Url(url.to_string()))?;
        Ok(Target {
            url: url.to_string(),
            authority: authority.to_string(),
            addr,
        })
    }
}

/// Parses `500ms`, `10s`, `2m`, `1h` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, HttpError> {
    let err = || HttpError::Duration(s.to_string());
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| err())?;
    if !v.is_finite() || v < 0.0 {
        return Err(err());
    }
    Ok(Duration::from_secs_f64(v * mult))
}

/// Settings shared by both loops.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Where to send.
    pub target: Target,
    /// Connections (closed loop: concurrency; open loop: pool size).
    pub connections: usize,
    /// Client threads (each with its own runtime).
    pub threads: usize,
    /// How long to send (open loop: how long to schedule).
    pub duration: Duration,
    /// Reuse connections.
    pub keep_alive: bool,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Show a progress bar on stderr (when it is a terminal).
    pub progress: bool,
    /// Closed loop: stop after exactly this many requests (the duration still caps
    /// the run).
    pub requests: Option<u64>,
}

/// Serialises every corpus request for `target`.
pub fn prepare_corpus(
    corpus: &[Request],
    target: &Target,
    keep_alive: bool,
) -> Result<Arc<Vec<Prepared>>, HttpError> {
    if corpus.is_empty() {
        return Err(HttpError::EmptyCorpus);
    }
    Ok(Arc::new(
        corpus
            .iter()
            .map(|r| client::prepare(r, &target.authority, keep_alive))
            .collect(),
    ))
}

/// A progress bar fed from a counter by its own thread; hidden off-TTY.
pub(crate) struct Progress {
    /// Completed requests (tasks add in batches).
    pub done: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    pub(crate) fn start(enabled: bool, duration: Duration, label: String) -> Progress {
        let done = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let target = if enabled {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let millis = u64::try_from(duration.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let bar = ProgressBar::with_draw_target(Some(millis), target);
        if let Ok(style) =
            ProgressStyle::with_template("{prefix} [{bar:30}] {elapsed_precise} {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(label);
        let handle = if bar.is_hidden() {
            None
        } else {
            let (d, s) = (Arc::clone(&done), Arc::clone(&stop));
            Some(std::thread::spawn(move || {
                let start = std::time::Instant::now();
                while !s.load(Ordering::Relaxed) {
                    let el = start.elapsed();
                    let n = d.load(Ordering::Relaxed);
                    bar.set_position(u64::try_from(el.as_millis()).unwrap_or(0).min(millis));
                    let rps = n as f64 / el.as_secs_f64().max(1e-3);
                    bar.set_message(format!("{n} requests, {rps:.0}/s"));
                    std::thread::sleep(Duration::from_millis(100));
                }
                bar.finish_and_clear();
            }))
        };
        Progress { done, stop, handle }
    }

    pub(crate) fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Waits for every connection task of a thread and merges what they recorded (a
/// task that panicked or was cancelled is left out).
pub(crate) async fn join_merged(
    start: Instant,
    mut set: JoinSet<(Recorder, Instant)>,
) -> (Recorder, Instant) {
    let mut parts = Vec::new();
    while let Some(r) = set.join_next().await {
        if let Ok(part) = r {
            parts.push(part);
        }
    }
    Recorder::merge_all(start, &parts)
}

/// Runs one closure per thread, each on its own single-threaded runtime, and
/// collects their results.
pub(crate) fn on_threads<T, F, Fut>(threads: usize, f: F) -> Result<Vec<T>, HttpError>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = T>,
{
    let f = Arc::new(f);
    let mut runtimes = Vec::with_capacity(threads);
    for _ in 0..threads.max(1) {
        runtimes.push(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(HttpError::Runtime)?,
        );
    }
    let handles: Vec<_> = runtimes
        .into_iter()
        .enumerate()
        .map(|(t, rt)| {
            let f = Arc::clone(&f);
            std::thread::spawn(move || rt.block_on(f(t)))
        })
        .collect();
    // A panicking client thread is a bug: pass it on rather than report partial counts.
    Ok(handles
        .into_iter()
        .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
        .collect())
}
