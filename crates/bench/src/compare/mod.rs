//! `palisade bench compare`: the side-by-side harness of the source documents (the
//! off / no-rules / full-rules comparison of the ModSecurity performance harness, and
//! the httperf rate sweeps with memory curves of "Ways to improve performance").
//!
//! The harness starts one backend and every target itself, in front of that backend,
//! one target at a time ([`targets`]): nginx as a plain reverse proxy, Palisade with
//! the engine Off, Palisade with the CRS at the paranoia levels asked for, nginx +
//! ModSecurity v3 + the CRS, Coraza. A target that is not installed is reported as
//! skipped with the reason, never left out silently and never replaced by another.
//! For each target it measures ([`sweep`]) memory at idle, then an open-loop rate
//! sweep and a closed-loop maximum-throughput run with the load generator of
//! [`crate::http`], sampling CPU and memory of the target's processes from `/proc`
//! ([`sampler`]) during each run. With `--rounds N`, the closed loop of every
//! target is run N times, the targets in turn within each round, and the ratio to
//! the plain proxy is taken within each round ([`Comparison::round_ratios`]) and
//! reported with its [`median`]: on a shared machine the speed drifts between
//! runs minutes apart, and one run per target put that drift into the ratio.
//! Servers and the load generator are pinned to the CPUs given ([`pin`]).
//! [`report`] renders Markdown and [`plot`] the PNG/SVG plots.
//!
//! The backend is nginx returning a fixed 64-byte body (`return 200`) when nginx is
//! installed, else the built-in Rust backend ([`backend`]) answering the same body;
//! both answer every request path, so the corpus's `resp_len` is not honoured.

pub mod backend;
pub mod pin;
pub mod plot;
pub mod report;
pub mod sampler;
pub mod sweep;
pub mod targets;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use sampler::Usage;
use targets::Kind;

/// Why the comparison could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompareError {
    /// A bad option.
    #[error("{0}")]
    Usage(String),
    /// A file or process could not be used.
    #[error("{path}: {source}")]
    Io {
        /// The file or program.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A server did not start.
    #[error("starting {target}: {reason}")]
    Start {
        /// The target id.
        target: String,
        /// What went wrong.
        reason: String,
    },
    /// The load generator failed.
    #[error(transparent)]
    Http(#[from] crate::http::HttpError),
    /// A plot could not be drawn.
    #[error("plot {file}: {reason}")]
    Plot {
        /// The file.
        file: String,
        /// The plotting error.
        reason: String,
    },
}

impl CompareError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> CompareError {
        CompareError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Figures of one load run against one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFigures {
    /// `open` (fixed rate) or `closed` (max throughput).
    pub mode: String,
    /// Offered rate, requests/s (open loop).
    pub offered_rate: Option<f64>,
    /// Connections used.
    pub connections: usize,
    /// Responses received.
    pub requests: u64,
    /// Achieved responses per second.
    pub requests_per_second: f64,
    /// Latency mean, µs (open loop: from the intended send time).
    pub latency_mean_us: f64,
    /// Latency p50, µs.
    pub latency_p50_us: f64,
    /// Latency p90, µs.
    pub latency_p90_us: f64,
    /// Latency p99, µs.
    pub latency_p99_us: f64,
    /// Latency max, µs.
    pub latency_max_us: f64,
    /// 2xx responses.
    pub status_2xx: u64,
    /// 403 responses (blocked by a WAF).
    pub status_403: u64,
    /// Other non-2xx responses.
    pub status_other: u64,
    /// Client errors (connect, read, timeout ...).
    pub errors: u64,
    /// Open loop: scheduled requests never sent.
    pub unsent: u64,
    /// CPU and memory of the target's processes during the run.
    pub usage: Usage,
}

impl RunFigures {
    /// Figures from a load report and the usage sampled during it.
    pub fn from_report(r: &crate::http::report::Report, usage: Usage) -> RunFigures {
        let s2 = r.status_range(200, 299);
        let s403 = r.statuses.get(&403).copied().unwrap_or(0);
        RunFigures {
            mode: r.mode.clone(),
            offered_rate: r.rate,
            connections: r.connections,
            requests: r.requests,
            requests_per_second: r.requests_per_second,
            latency_mean_us: r.latency_us.mean,
            latency_p50_us: r.latency_us.p50,
            latency_p90_us: r.latency_us.p90,
            latency_p99_us: r.latency_us.p99,
            latency_max_us: r.latency_us.max,
            status_2xx: s2,
            status_403: s403,
            status_other: r.requests.saturating_sub(s2 + s403),
            errors: r.errors.total(),
            unsent: r.unsent.unwrap_or(0),
            usage,
        }
    }
}

/// Everything measured for one target (or why it was skipped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetResult {
    /// What the target is.
    pub kind: Kind,
    /// Label for tables and plots.
    pub label: String,
    /// Why it was not measured (not installed, failed to start ...).
    pub skipped: Option<String>,
    /// The command that started it.
    pub command: Option<String>,
    /// Memory after start-up, before any load.
    pub idle: Option<Usage>,
    /// Open-loop runs, one per offered rate.
    pub sweep: Vec<RunFigures>,
    /// The closed-loop max-throughput run.
    pub closed: Option<RunFigures>,
    /// With more than one round (`--rounds`): the closed-loop run of each
    /// round, in order, the first being `closed` (empty with one round, and
    /// without a run where the target did not start in a round).
    #[serde(default)]
    pub rounds: Vec<Option<RunFigures>>,
}

impl TargetResult {
    /// A skipped target.
    pub fn skipped(kind: Kind, reason: impl Into<String>) -> TargetResult {
        TargetResult {
            kind,
            label: kind.label(),
            skipped: Some(reason.into()),
            command: None,
            idle: None,
            sweep: Vec::new(),
            closed: None,
            rounds: Vec::new(),
        }
    }
}

/// The settings of a comparison, repeated in the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// The corpus file.
    pub corpus: String,
    /// Requests in the corpus.
    pub corpus_requests: usize,
    /// Offered rates of the sweep.
    pub rates: Vec<f64>,
    /// Seconds per open-loop run.
    pub sweep_seconds: f64,
    /// Seconds of the closed-loop run.
    pub closed_seconds: f64,
    /// Connections of the closed loop.
    pub closed_connections: usize,
    /// Connection pool of the open loop.
    pub open_connections: usize,
    /// Load generator threads.
    pub client_threads: usize,
    /// CPUs of the targets (empty: not pinned).
    pub server_cpus: Vec<usize>,
    /// CPUs of the load generator (empty: not pinned).
    pub client_cpus: Vec<usize>,
    /// CPUs of the backend (empty: not pinned).
    pub backend_cpus: Vec<usize>,
    /// nginx workers / Palisade threads per target.
    pub server_threads: usize,
    /// The backend used.
    pub backend: String,
    /// Machine: CPU model and count, kernel.
    pub machine: String,
    /// Load average before the runs.
    pub load_before: String,
    /// Load average after the runs.
    pub load_after: String,
    /// Closed-loop rounds (`--rounds`): every target measured once per round,
    /// in turn (1 in reports written before rounds existed).
    #[serde(default = "one")]
    pub rounds: usize,
    /// When the comparison started (UTC, from the system clock).
    pub started: String,
    /// The command line that produced the results (set by the caller).
    #[serde(default)]
    pub command: String,
    /// The source revision of the binary (set by the caller, e.g. `git describe`).
    #[serde(default)]
    pub revision: String,
}

fn one() -> usize {
    1
}

/// A whole comparison: settings and per-target results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Settings.
    pub settings: Settings,
    /// Results in target order.
    pub targets: Vec<TargetResult>,
}

impl Comparison {
    /// Closed-loop runs of one target per round: the rounds when there were
    /// more than one, else its one run.
    fn closed_runs(t: &TargetResult) -> Vec<Option<&RunFigures>> {
        if t.rounds.is_empty() {
            vec![t.closed.as_ref()]
        } else {
            t.rounds.iter().map(Option::as_ref).collect()
        }
    }

    /// The ratio of target `t`'s closed-loop requests/s to the plain proxy's in
    /// each round where both were measured (one ratio per round; a round where
    /// either has no run gives none). Targets of a round run one after the
    /// other, minutes apart at most, so a change of the machine's speed between
    /// rounds moves both sides of a round's ratio.
    pub fn round_ratios(&self, t: &TargetResult) -> Vec<f64> {
        let Some(nginx) = self.targets.iter().find(|t| t.kind == Kind::Nginx) else {
            return Vec::new();
        };
        Self::closed_runs(t)
            .into_iter()
            .zip(Self::closed_runs(nginx))
            .filter_map(|(f, b)| match (f, b) {
                (Some(f), Some(b)) if b.requests_per_second > 0.0 => {
                    Some(f.requests_per_second / b.requests_per_second)
                }
                _ => None,
            })
            .collect()
    }

    /// The plain proxy's closed-loop requests/s (the ratios' baseline).
    pub fn baseline_rps(&self) -> Option<f64> {
        self.targets
            .iter()
            .find(|t| t.kind == Kind::Nginx)
            .and_then(|t| t.closed.as_ref())
            .map(|c| c.requests_per_second)
            .filter(|r| *r > 0.0)
    }
}

/// The median of `values` (the mean of the middle two for an even count);
/// `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

pub use sweep::{run, CompareConfig};
