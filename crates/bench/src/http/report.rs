//! Recording and reporting a load run: per-task [`Recorder`]s (HdrHistogram of
//! latencies, status and error counts) merged into a [`Report`], rendered as text
//! (like wrk's), JSON or CSV.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::client::ClientError;
use super::LoadConfig;

/// Errors by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Errors {
    /// Connections that could not be opened.
    pub connect: u64,
    /// Requests that could not be written.
    pub write: u64,
    /// Responses that could not be read.
    pub read: u64,
    /// Connections closed before a whole response.
    pub closed: u64,
    /// Invalid responses.
    pub parse: u64,
    /// Requests without a response within the timeout.
    pub timeout: u64,
}

impl Errors {
    /// All errors.
    pub fn total(&self) -> u64 {
        self.connect + self.write + self.read + self.closed + self.parse + self.timeout
    }

    /// Counts one error.
    pub fn count(&mut self, e: &ClientError) {
        match e {
            ClientError::Connect(_) => self.connect += 1,
            ClientError::Write(_) => self.write += 1,
            ClientError::Read(_) => self.read += 1,
            ClientError::Closed => self.closed += 1,
            ClientError::Parse(_) => self.parse += 1,
            ClientError::Timeout => self.timeout += 1,
        }
    }

    fn merge(&mut self, o: &Errors) {
        self.connect += o.connect;
        self.write += o.write;
        self.read += o.read;
        self.closed += o.closed;
        self.parse += o.parse;
        self.timeout += o.timeout;
    }
}

/// What one task (or thread) saw.
#[derive(Debug, Clone)]
pub struct Recorder {
    /// Latencies in nanoseconds.
    pub latency: Histogram<u64>,
    /// Open loop: how late each request was sent after its due time, in nanoseconds:
    /// waiting for a free connection (a slow server) or for the client thread (a busy
    /// client). Small while the server keeps up and the client is not saturated.
    pub send_lag: Histogram<u64>,
    /// Responses by status.
    pub statuses: BTreeMap<u16, u64>,
    /// Errors.
    pub errors: Errors,
    /// Bytes of responses read.
    pub bytes_received: u64,
    /// Connections opened.
    pub connections_opened: u64,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            latency: new_histogram(),
            send_lag: new_histogram(),
            statuses: BTreeMap::new(),
            errors: Errors::default(),
            bytes_received: 0,
            connections_opened: 0,
        }
    }
}

fn new_histogram() -> Histogram<u64> {
    // Auto-resizing with 3 significant digits: valid constants, creation cannot fail.
    Histogram::new(3).expect("3 significant digits is a valid histogram precision")
}

impl Recorder {
    /// Records one response.
    pub fn response(&mut self, status: u16, latency: Duration, bytes: u64) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1);
        let _ = self.latency.record(ns);
        *self.statuses.entry(status).or_default() += 1;
        self.bytes_received += bytes;
    }

    /// Records how late a request was sent after its due time (open loop).
    pub fn lag(&mut self, lag: Duration) {
        let ns = u64::try_from(lag.as_nanos()).unwrap_or(u64::MAX).max(1);
        let _ = self.send_lag.record(ns);
    }

    /// Responses recorded.
    pub fn requests(&self) -> u64 {
        self.statuses.values().sum()
    }

    /// Merges results of connections or threads: one recorder and the latest end
    /// time (`start` when there is none).
    pub fn merge_all<'a>(
        start: std::time::Instant,
        results: impl IntoIterator<Item = &'a (Recorder, std::time::Instant)>,
    ) -> (Recorder, std::time::Instant) {
        let mut rec = Recorder::default();
        let mut end = start;
        for (r, e) in results {
            rec.merge(r);
            end = end.max(*e);
        }
        (rec, end)
    }

    /// Adds another recorder's counts.
    pub fn merge(&mut self, o: &Recorder) {
        let _ = self.latency.add(&o.latency);
        let _ = self.send_lag.add(&o.send_lag);
        for (s, n) in &o.statuses {
            *self.statuses.entry(*s).or_default() += n;
        }
        self.errors.merge(&o.errors);
        self.bytes_received += o.bytes_received;
        self.connections_opened += o.connections_opened;
    }
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Maximum.
    pub max: f64,
}

/// The result of one run (one closed-loop run, or one rate of a sweep).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// `closed` or `open`.
    pub mode: String,
    /// The target URL.
    pub target: String,
    /// Connections (closed loop: concurrent requests; open loop: the pool size).
    pub connections: usize,
    /// Client threads.
    pub threads: usize,
    /// Keep-alive on.
    pub keep_alive: bool,
    /// Open loop: the intended rate (requests/s).
    pub rate: Option<f64>,
    /// Open loop: requests scheduled in the duration.
    pub scheduled: Option<u64>,
    /// Open loop: scheduled requests never sent (the run's hard end came first).
    pub unsent: Option<u64>,
    /// Wall-clock seconds from the start to the last response.
    pub duration_s: f64,
    /// Responses received.
    pub requests: u64,
    /// Responses per second.
    pub requests_per_second: f64,
    /// Responses by status code.
    pub statuses: BTreeMap<u16, u64>,
    /// Errors by kind.
    pub errors: Errors,
    /// Latency in µs: closed loop from the send, open loop from the intended send
    /// time (so queueing in the client counts: no coordinated omission).
    pub latency_us: Latency,
    /// Open loop: how late requests were sent after their due time, in µs (waiting for
    /// a connection or for the client thread; included in `latency_us`).
    pub send_lag_us: Option<Latency>,
    /// Bytes of responses read.
    pub bytes_received: u64,
    /// Connections opened.
    pub connections_opened: u64,
}

fn percentiles(h: &Histogram<u64>) -> Latency {
    let us = |ns: u64| ns as f64 / 1000.0;
    if h.is_empty() {
        return Latency::default();
    }
    Latency {
        mean: h.mean() / 1000.0,
        p50: us(h.value_at_quantile(0.5)),
        p90: us(h.value_at_quantile(0.9)),
        p99: us(h.value_at_quantile(0.99)),
        p999: us(h.value_at_quantile(0.999)),
        max: us(h.max()),
    }
}

/// The run's parameters that the report repeats.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// `closed` or `open`.
    pub mode: &'static str,
    /// The target URL.
    pub target: String,
    /// Connections.
    pub connections: usize,
    /// Client threads.
    pub threads: usize,
    /// Keep-alive.
    pub keep_alive: bool,
    /// Intended rate (open loop).
    pub rate: Option<f64>,
    /// Scheduled requests (open loop).
    pub scheduled: Option<u64>,
}

impl RunInfo {
    /// A closed-loop run of `cfg`.
    pub fn closed(cfg: &LoadConfig) -> RunInfo {
        RunInfo::of(cfg, "closed", None, None)
    }

    /// An open-loop run of `cfg` at `rate` requests/s, `scheduled` requests in all.
    pub fn open(cfg: &LoadConfig, rate: f64, scheduled: u64) -> RunInfo {
        RunInfo::of(cfg, "open", Some(rate), Some(scheduled))
    }

    /// The connections (at least one) and client threads (at least one, at most one
    /// per connection) that a run of `cfg` uses.
    fn of(
        cfg: &LoadConfig,
        mode: &'static str,
        rate: Option<f64>,
        scheduled: Option<u64>,
    ) -> RunInfo {
        let connections = cfg.connections.max(1);
        RunInfo {
            mode,
            target: cfg.target.url.clone(),
            connections,
            threads: cfg.threads.max(1).min(connections),
            keep_alive: cfg.keep_alive,
            rate,
            scheduled,
        }
    }
}

impl Report {
    /// Builds the report of a run from its merged recorder.
    pub fn new(info: RunInfo, rec: &Recorder, elapsed: Duration) -> Report {
        let latency = percentiles(&rec.latency);
        let requests = rec.requests();
        let secs = elapsed.as_secs_f64();
        Report {
            mode: info.mode.to_string(),
            target: info.target,
            connections: info.connections,
            threads: info.threads,
            keep_alive: info.keep_alive,
            rate: info.rate,
            scheduled: info.scheduled,
            unsent: info
                .scheduled
                .map(|s| s.saturating_sub(requests + rec.errors.total())),
            duration_s: secs,
            requests,
            requests_per_second: if secs > 0.0 {
                requests as f64 / secs
            } else {
                0.0
            },
            statuses: rec.statuses.clone(),
            errors: rec.errors,
            latency_us: latency,
            send_lag_us: info.rate.map(|_| percentiles(&rec.send_lag)),
            bytes_received: rec.bytes_received,
            connections_opened: rec.connections_opened,
        }
    }

    /// Responses whose status is in `lo..=hi`.
    pub fn status_range(&self, lo: u16, hi: u16) -> u64 {
        self.statuses.range(lo..=hi).map(|(_, n)| n).sum()
    }

    /// A human-readable summary.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        let mode = match self.rate {
            Some(r) => format!("open loop at {r:.0} requests/s"),
            None => format!(
                "closed loop, {} connections{}",
                self.connections,
                if self.keep_alive {
                    ""
                } else {
                    ", keep-alive off"
                }
            ),
        };
        let _ = writeln!(s, "{} — {mode}, {} threads", self.target, self.threads);
        let l = &self.latency_us;
        let _ = writeln!(
            s,
            "  latency µs   mean {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
            l.mean, l.p50, l.p90, l.p99, l.p999, l.max
        );
        if let Some(g) = &self.send_lag_us {
            let _ = writeln!(
                s,
                "  send lag µs  p50 {:.1}  p99 {:.1}  max {:.1} (sent after the due time)",
                g.p50, g.p99, g.max
            );
        }
        let _ = writeln!(
            s,
            "  {} requests in {:.2} s, {:.1} MB read",
            self.requests,
            self.duration_s,
            self.bytes_received as f64 / 1e6
        );
        let statuses: Vec<String> = self
            .statuses
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        let _ = writeln!(s, "  statuses     {}", statuses.join(", "));
        let e = &self.errors;
        if e.total() > 0 {
            let _ = writeln!(
                s,
                "  errors       connect {}, write {}, read {}, closed {}, parse {}, timeout {}",
                e.connect, e.write, e.read, e.closed, e.parse, e.timeout
            );
        }
        if let (Some(sched), Some(unsent)) = (self.scheduled, self.unsent) {
            let _ = writeln!(s, "  scheduled    {sched}, never sent {unsent}");
        }
        let _ = writeln!(s, "Requests/sec: {:.2}", self.requests_per_second);
        s
    }

    /// The CSV header matching [`Report::csv_row`].
    pub fn csv_header() -> &'static str {
        "mode,target,connections,threads,keep_alive,rate,duration_s,requests,requests_per_second,status_2xx,status_3xx,status_4xx,status_5xx,errors,unsent,latency_mean_us,latency_p50_us,latency_p90_us,latency_p99_us,latency_p999_us,latency_max_us,send_lag_p50_us,send_lag_p99_us"
    }

    /// One CSV row.
    pub fn csv_row(&self) -> String {
        let l = &self.latency_us;
        format!(
            "{},{},{},{},{},{},{:.3},{},{:.1},{},{},{},{},{},{},{:.1},{:.1},{:.1},{:.1},{:.1},{:.1},{},{}",
            self.mode,
            csv_field(&self.target),
            self.connections,
            self.threads,
            self.keep_alive,
            self.rate.map(|r| format!("{r}")).unwrap_or_default(),
            self.duration_s,
            self.requests,
            self.requests_per_second,
            self.status_range(200, 299),
            self.status_range(300, 399),
            self.status_range(400, 499),
            self.status_range(500, 599),
            self.errors.total(),
            self.unsent.map(|u| u.to_string()).unwrap_or_default(),
            l.mean,
            l.p50,
            l.p90,
            l.p99,
            l.p999,
            l.max,
            self.send_lag_us
                .map(|g| format!("{:.1}", g.p50))
                .unwrap_or_default(),
            self.send_lag_us
                .map(|g| format!("{:.1}", g.p99))
                .unwrap_or_default()
        )
    }
}

/// Quotes a CSV field when needed.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV of several reports (header and one row each).
pub fn render_csv(reports: &[Report]) -> String {
    let mut s = String::from(Report::csv_header());
    s.push('\n');
    for r in reports {
        s.push_str(&r.csv_row());
        s.push('\n');
    }
    s
}
