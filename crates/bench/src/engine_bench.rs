//! The in-process engine benchmark: every request of a corpus through all five
//! phases of a fresh transaction, timed per request, reported per request name.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use engine::profile::Profile;
use engine::{Connection, Program, Transaction};
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::corpus::Request;

/// Statistics of one group of requests.
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    /// The group (request name or class; `all` for everything).
    pub name: String,
    /// Requests evaluated.
    pub requests: u64,
    /// Mean µs per request.
    pub us_per_request_mean: f64,
    /// Median µs per request.
    pub us_per_request_p50: f64,
    /// 99th percentile µs per request.
    pub us_per_request_p99: f64,
    /// Requests per second on one thread (1e6 / mean).
    pub requests_per_second: f64,
    /// Requests that got an intervention.
    pub blocked: u64,
}

/// The outcome of a run: overall and per group.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// All requests.
    #[serde(flatten)]
    pub all: Stats,
    /// Per request name or class, in name order.
    pub groups: Vec<Stats>,
    /// The rule cost profile of the sampled requests (when sampling was on).
    #[serde(skip)]
    pub profile: Option<Profile>,
}

/// One rule's line in a cost profile report.
#[derive(Debug, Clone, Serialize)]
pub struct RuleLine {
    /// Rule id.
    pub id: u32,
    /// Phase.
    pub phase: u8,
    /// Evaluations per sampled request.
    pub evaluations_per_request: f64,
    /// Share of evaluations that matched.
    pub hit_ratio: f64,
    /// Mean ns per evaluation.
    pub ns_per_evaluation: f64,
    /// Share of all rule time.
    pub time_share: f64,
}

/// The `n` costliest rules (by total time) and the `n` most often matching ones.
pub fn top_rules(program: &Program, profile: &Profile, n: usize) -> (Vec<RuleLine>, Vec<RuleLine>) {
    let total: u64 = profile.rules.iter().map(|c| c.nanos).sum::<u64>().max(1);
    let reqs = profile.transactions.max(1) as f64;
    let line = |i: usize| {
        let c = &profile.rules[i];
        let r = &program.rules[i];
        RuleLine {
            id: r.id,
            phase: r.phase,
            evaluations_per_request: c.evaluations as f64 / reqs,
            hit_ratio: c.matches as f64 / c.evaluations.max(1) as f64,
            ns_per_evaluation: c.nanos as f64 / c.evaluations.max(1) as f64,
            time_share: c.nanos as f64 / total as f64,
        }
    };
    let by_time = profile
        .top_by(|c| c.nanos)
        .into_iter()
        .take(n)
        .map(line)
        .collect();
    let by_hits = profile
        .top_by(|c| c.matches)
        .into_iter()
        .filter(|&i| profile.rules[i].matches > 0)
        .take(n)
        .map(line)
        .collect();
    (by_time, by_hits)
}

/// Runs one request through every phase; returns whether it was blocked.
pub fn run_one(program: &Arc<Program>, req: &Request, response_body: &[u8]) -> bool {
    run_one_profiled(program, req, response_body, None)
}

/// [`run_one`], merging the rule cost profile into `profile` when given.
pub fn run_one_profiled(
    program: &Arc<Program>,
    req: &Request,
    response_body: &[u8],
    profile: Option<&mut Profile>,
) -> bool {
    let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
    if profile.is_some() {
        tx.enable_profile();
    }
    let blocked = drive(&mut tx, req, response_body).is_some();
    if let (Some(acc), Some(p)) = (profile, tx.profile()) {
        acc.merge(p);
    }
    blocked
}

/// Runs `req` through every phase of `tx`, answering with a 200 text/html response
/// of `response_body`; returns the phase (1-4) whose processing ended with an
/// intervention, if any. Phase 5 (logging) always runs.
pub fn drive(tx: &mut Transaction, req: &Request, response_body: &[u8]) -> Option<u8> {
    let decided = drive_request(tx, req);
    drive_response(tx, decided, response_body)
}

/// The request half of [`drive`]: the request line and headers, phase 1, the body
/// and phase 2 (which a proxy runs before it waits for the upstream). Returns the
/// phase that ended with an intervention, if any.
///
/// Never inlined: the profiling scripts count instructions inside it and
/// [`drive_response`] (callgrind's `--toggle-collect`), which an inlined copy
/// would hide.
#[inline(never)]
pub fn drive_request(tx: &mut Transaction, req: &Request) -> Option<u8> {
    tx.process_uri(&req.target, &req.method, &req.version);
    for (k, v) in &req.headers {
        tx.add_request_header(k.as_bytes(), v.as_bytes());
    }
    let mut decided = tx.process_request_headers().is_some().then_some(1);
    if decided.is_none() {
        tx.append_request_body(req.body.as_bytes());
        decided = tx.process_request_body().is_some().then_some(2);
    }
    decided
}

/// The response half of [`drive`], after [`drive_request`] returned `decided`:
/// phases 3 and 4 unless the request was stopped, then phase 5 (never inlined,
/// as [`drive_request`]).
#[inline(never)]
pub fn drive_response(
    tx: &mut Transaction,
    mut decided: Option<u8>,
    response_body: &[u8],
) -> Option<u8> {
    if decided.is_none() {
        tx.add_response_header(b"Content-Type", b"text/html; charset=utf-8");
        tx.add_response_header(
            b"Content-Length",
            response_body.len().to_string().as_bytes(),
        );
        decided = tx
            .process_response_headers(200, "HTTP/1.1")
            .is_some()
            .then_some(3);
        if decided.is_none() {
            tx.append_response_body(response_body);
            decided = tx.process_response_body().is_some().then_some(4);
        }
    }
    tx.process_logging();
    decided
}

/// Learns a rule order from one profiled pass over `corpus` (the RuleCache
/// analyzer's time window, offline): every request is profiled and
/// [`engine::ordering::plan`] orders each segment by the measured statistics.
pub fn learn_order(program: &Arc<Program>, corpus: &[Request]) -> engine::ordering::OrderPlan {
    let mut profile = Profile::new(program.rules.len());
    for r in corpus {
        let body = response_body(r.resp_len);
        run_one_profiled(program, r, &body, Some(&mut profile));
    }
    engine::ordering::plan(program, &profile)
}

/// A response body of `n` bytes of plain HTML.
pub fn response_body(n: usize) -> Vec<u8> {
    let unit = b"<p>Palisade benchmark response body.</p>\n";
    unit.iter().copied().cycle().take(n).collect()
}

/// Replays `corpus` `iterations` times (after one warm-up pass) on this thread.
/// With `profile_every` = N > 0, every Nth request is profiled per rule (its time
/// then includes the profiling cost).
pub fn run(
    program: &Arc<Program>,
    corpus: &[Request],
    iterations: usize,
    profile_every: usize,
) -> Report {
    run_ordered(
        program,
        corpus,
        &Replay {
            iterations,
            profile_every,
            ..Replay::default()
        },
    )
}

/// How [`run_ordered`] replays a corpus.
#[derive(Debug, Clone, Copy)]
pub struct Replay {
    /// Passes over the corpus (or times each request is replayed, `separate`).
    pub iterations: usize,
    /// Every Nth request is profiled per rule (0: none).
    pub profile_every: usize,
    /// Each request `iterations` times in a row (see [`order`]).
    pub separate: bool,
    /// Transactions open at once (see [`run_ordered`]).
    pub in_flight: usize,
    /// Bytes written over between requests, outside the timed part, to evict
    /// the engine's working set from the CPU caches as a proxy's network path
    /// does between its requests (0: none; see [`Evictor`]).
    pub evict_bytes: usize,
}

impl Default for Replay {
    fn default() -> Self {
        Replay {
            iterations: 1,
            profile_every: 0,
            separate: false,
            in_flight: 1,
            evict_bytes: 0,
        }
    }
}

/// A buffer written over, one byte per cache line, between timed requests: what
/// the engine kept in the CPU caches from the last request is then mostly gone
/// (the buffer should exceed the core's private caches), as it is when a proxy's
/// kernel network path and HTTP code run between two requests' phases.
pub struct Evictor {
    buf: Vec<u8>,
    round: u8,
}

impl Evictor {
    /// A buffer of `bytes` (none for 0).
    pub fn new(bytes: usize) -> Self {
        Evictor {
            buf: vec![0; bytes],
            round: 0,
        }
    }

    /// Writes one byte of every 64-byte line of the buffer.
    pub fn evict(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        self.round = self.round.wrapping_add(1);
        for b in self.buf.iter_mut().step_by(64) {
            *b = b.wrapping_add(self.round);
        }
        std::hint::black_box(&self.buf);
    }
}

/// The order of the `run` index sequence: `iterations` passes over the corpus
/// (interleaved), or each request `iterations` times in a row (`separate`), as
/// when one kind of request is replayed alone: its rules, regex caches and values
/// stay warm in the CPU caches.
pub fn order(n: usize, iterations: usize, separate: bool) -> Vec<usize> {
    let iterations = iterations.max(1);
    if separate {
        (0..n)
            .flat_map(|i| std::iter::repeat_n(i, iterations))
            .collect()
    } else {
        (0..iterations).flat_map(|_| 0..n).collect()
    }
}

/// [`run`], interleaved or each request in a row (see [`order`]), with
/// `in_flight` transactions open at once.
///
/// With `in_flight` = N > 1 the requests go in batches of N, as a proxy with N
/// requests waiting on its upstream runs them: the request phases (1 and 2) of all
/// N, then the response phases (3 to 5) of each, so every transaction's phases find
/// the CPU caches filled by the others'. Each request of a batch is counted at the
/// batch's time divided by N; no request is profiled.
pub fn run_ordered(program: &Arc<Program>, corpus: &[Request], replay: &Replay) -> Report {
    let Replay {
        iterations,
        profile_every,
        separate,
        in_flight,
        evict_bytes,
    } = *replay;
    let mut evictor = Evictor::new(evict_bytes);
    let mut profile = (profile_every > 0).then(|| Profile::new(program.rules.len()));
    let bodies: Vec<Vec<u8>> = corpus.iter().map(|r| response_body(r.resp_len)).collect();
    for (r, b) in corpus.iter().zip(&bodies) {
        run_one(program, r, b);
    }
    let mut tally = Tally::default();
    let sequence = order(corpus.len(), iterations, separate);
    if in_flight > 1 {
        let mut open = Vec::with_capacity(in_flight);
        for batch in sequence.chunks(in_flight) {
            evictor.evict();
            let start = Instant::now();
            for &i in batch {
                let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
                let decided = drive_request(&mut tx, &corpus[i]);
                open.push((tx, decided));
            }
            let mut blocked = Vec::with_capacity(batch.len());
            for (&i, (mut tx, decided)) in batch.iter().zip(open.drain(..)) {
                blocked.push(drive_response(&mut tx, decided, &bodies[i]).is_some());
            }
            let ns = start.elapsed().as_nanos() as u64 / batch.len() as u64;
            for (&i, blocked) in batch.iter().zip(blocked) {
                tally.record(&corpus[i].name, ns, blocked);
            }
        }
    } else {
        for (count, i) in sequence.into_iter().enumerate() {
            let (r, b) = (&corpus[i], &bodies[i]);
            let sample = match profile.as_mut() {
                Some(p) if (count + 1).is_multiple_of(profile_every) => Some(p),
                _ => None,
            };
            evictor.evict();
            let start = Instant::now();
            let blocked = run_one_profiled(program, r, b, sample);
            tally.record(&r.name, start.elapsed().as_nanos() as u64, blocked);
        }
    }
    let Tally {
        all,
        groups,
        blocked_all,
        total_ns,
    } = tally;
    let stats = |name: &str, h: &Histogram<u64>, blocked: u64, sum_ns: f64| {
        let n = h.len().max(1);
        let mean = sum_ns / n as f64 / 1000.0;
        Stats {
            name: name.to_string(),
            requests: h.len(),
            us_per_request_mean: mean,
            us_per_request_p50: h.value_at_quantile(0.5) as f64 / 1000.0,
            us_per_request_p99: h.value_at_quantile(0.99) as f64 / 1000.0,
            requests_per_second: if mean > 0.0 { 1e6 / mean } else { 0.0 },
            blocked,
        }
    };
    Report {
        all: stats("all", &all, blocked_all, total_ns),
        groups: groups
            .iter()
            .map(|(name, (h, b, s))| stats(name, h, *b, *s))
            .collect(),
        profile,
    }
}

/// The timings of a run: over all requests and per request name (histogram,
/// requests blocked, total ns).
struct Tally {
    all: Histogram<u64>,
    groups: BTreeMap<String, (Histogram<u64>, u64, f64)>,
    blocked_all: u64,
    total_ns: f64,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            all: new_hist(),
            groups: BTreeMap::new(),
            blocked_all: 0,
            total_ns: 0.0,
        }
    }
}

impl Tally {
    /// One request of `name` that took `ns`.
    fn record(&mut self, name: &str, ns: u64, blocked: bool) {
        self.total_ns += ns as f64;
        let _ = self.all.record(ns.max(1));
        let g = self
            .groups
            .entry(name.to_string())
            .or_insert_with(|| (new_hist(), 0, 0.0));
        let _ = g.0.record(ns.max(1));
        g.2 += ns as f64;
        if blocked {
            g.1 += 1;
            self.blocked_all += 1;
        }
    }
}

fn new_hist() -> Histogram<u64> {
    // Auto-resizing, 3 significant digits: valid constants, so creation cannot fail.
    Histogram::new(3).expect("3 significant digits is a valid histogram precision")
}

#[cfg(test)]
mod order_tests {
    #[test]
    fn interleaved_and_separate_orders_visit_every_request_equally() {
        assert_eq!(super::order(3, 2, false), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(super::order(3, 2, true), vec![0, 0, 1, 1, 2, 2]);
    }
}

#[cfg(test)]
mod evictor_tests {
    use super::Evictor;

    #[test]
    fn every_cache_line_of_the_buffer_is_written_at_each_eviction() {
        let mut e = Evictor::new(64 * 10 + 5);
        for round in 1..=3u8 {
            e.evict();
            // One byte per 64-byte line (eleven lines, the last one partial),
            // the others untouched.
            for (i, &b) in e.buf.iter().enumerate() {
                let expected = if i % 64 == 0 {
                    (1..=round).sum::<u8>()
                } else {
                    0
                };
                assert_eq!(b, expected, "byte {i} after round {round}");
            }
        }
        // None: nothing to write.
        let mut none = Evictor::new(0);
        none.evict();
        assert!(none.buf.is_empty());
    }
}
