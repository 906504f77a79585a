//! The measurement loop: backend up, then for each target in turn: start it, read
//! its idle memory, run the open-loop rate sweep and the closed-loop run while
//! sampling its processes, stop it. With more than one round (`--rounds`), the
//! targets are then measured again in turn, the closed loop alone, once per
//! further round: the ratio to the plain proxy is taken within each round.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::sampler::{Sampler, Usage};
use super::targets::{self, Env, Kind, Running};
use super::{pin, CompareError, Comparison, RunFigures, Settings, TargetResult};
use crate::corpus::Request;
use crate::http::{self, LoadConfig, Target};

/// Which backend serves the targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    /// nginx when installed, else the built-in one.
    Auto,
    /// nginx (an error when not installed).
    Nginx,
    /// The built-in Rust backend.
    Builtin,
}

/// What to compare and how.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// The `palisade` binary (for `palisade serve`).
    pub palisade: PathBuf,
    /// The CRS directory.
    pub crs: PathBuf,
    /// The corpus file name (for the report).
    pub corpus_name: String,
    /// The targets, in order.
    pub targets: Vec<Kind>,
    /// Offered rates of the sweep (empty: no sweep).
    pub rates: Vec<f64>,
    /// Duration of each open-loop run.
    pub sweep_duration: Duration,
    /// Duration of the closed-loop run (zero: none).
    pub closed_duration: Duration,
    /// Closed-loop rounds: every target's closed loop is run once per round,
    /// the targets in turn within a round (1: the one run of each target).
    pub rounds: usize,
    /// Closed-loop connections.
    pub closed_connections: usize,
    /// Open-loop connection pool.
    pub open_connections: usize,
    /// Load generator threads.
    pub client_threads: usize,
    /// Per-request timeout.
    pub timeout: Duration,
    /// CPUs for the targets.
    pub server_cpus: Option<Vec<usize>>,
    /// CPUs for the load generator.
    pub client_cpus: Option<Vec<usize>>,
    /// CPUs for the backend.
    pub backend_cpus: Option<Vec<usize>>,
    /// nginx workers / Palisade threads per target.
    pub server_threads: usize,
    /// The backend.
    pub backend: BackendChoice,
    /// Scratch directory for configurations and logs.
    pub work_dir: PathBuf,
    /// Sampling interval of CPU and memory.
    pub sample_interval: Duration,
}

type Log<'a> = &'a (dyn Fn(&str) + Sync);

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{model}, {cpus} CPUs, Linux {}", kernel.trim())
}

fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = secs / 86400;
    let rem = secs % 86400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

/// Runs the comparison with `corpus`, reporting progress through `log`.
pub fn run(cfg: &CompareConfig, corpus: &[Request], log: Log) -> Result<Comparison, CompareError> {
    if corpus.is_empty() {
        return Err(http::HttpError::EmptyCorpus.into());
    }
    std::fs::create_dir_all(&cfg.work_dir).map_err(|e| CompareError::io(&cfg.work_dir, e))?;
    let mut env = Env::detect(cfg.palisade.clone(), cfg.crs.clone(), cfg.work_dir.clone());
    env.server_cpus = cfg.server_cpus.clone();
    env.server_threads = cfg.server_threads.max(1);
    let load_before = load_average();
    let started = now_utc();

    // The backend, started before this thread is pinned to the client CPUs.
    let use_nginx = match cfg.backend {
        BackendChoice::Auto => env.nginx.is_some(),
        BackendChoice::Nginx => true,
        BackendChoice::Builtin => false,
    };
    let (backend_addr, backend_proc, backend_desc) = if use_nginx {
        let r = targets::start_nginx_backend(&env, cfg.backend_cpus.as_deref())?;
        let desc = format!(
            "nginx, 1 worker, `return 200` with a fixed 64-byte text/plain body ({})",
            r.command
        );
        (r.addr, Some(r), desc)
    } else {
        let b = super::backend::start(cfg.backend_cpus.clone())
            .map_err(|e| CompareError::io(&cfg.work_dir, e))?;
        (
            b.addr,
            None,
            "built-in Rust backend (one thread in the harness process), fixed 64-byte text/plain body".into(),
        )
    };
    log(&format!("backend on {backend_addr}: {backend_desc}"));

    let cfg2 = cfg.clone();
    let env2 = env.clone();
    let corpus2: Vec<Request> = corpus.to_vec();
    // The measurement runs on its own thread pinned to the client CPUs; the load
    // generator's threads are spawned from it and inherit the pinning.
    let results = std::thread::scope(|s| {
        s.spawn(|| -> Result<Vec<TargetResult>, CompareError> {
            if let Some(c) = &cfg2.client_cpus {
                pin::pin_current(c).map_err(|e| {
                    CompareError::Usage(format!(
                        "cannot pin the load generator to CPUs {}: {e}",
                        pin::format_cpus(c)
                    ))
                })?;
            }
            let mut out = Vec::new();
            for &kind in &cfg2.targets {
                out.push(measure(&cfg2, &env2, kind, backend_addr, &corpus2, log)?);
            }
            if cfg2.rounds > 1 && !cfg2.closed_duration.is_zero() {
                for t in out.iter_mut().filter(|t| t.skipped.is_none()) {
                    t.rounds.push(t.closed.clone());
                }
                for round in 2..=cfg2.rounds {
                    log(&format!("round {round} of {}", cfg2.rounds));
                    for t in out.iter_mut().filter(|t| t.skipped.is_none()) {
                        let f = measure_closed(&cfg2, &env2, t.kind, backend_addr, &corpus2, log)?;
                        t.rounds.push(f);
                    }
                }
            }
            Ok(out)
        })
        .join()
        .unwrap_or_else(|_| {
            Err(CompareError::Usage(
                "the measurement thread panicked".into(),
            ))
        })
    });
    if let Some(b) = backend_proc {
        b.stop();
    }
    let results = results?;
    Ok(Comparison {
        settings: Settings {
            corpus: cfg.corpus_name.clone(),
            corpus_requests: corpus.len(),
            rates: cfg.rates.clone(),
            sweep_seconds: cfg.sweep_duration.as_secs_f64(),
            closed_seconds: cfg.closed_duration.as_secs_f64(),
            rounds: if cfg.closed_duration.is_zero() {
                1
            } else {
                cfg.rounds.max(1)
            },
            closed_connections: cfg.closed_connections,
            open_connections: cfg.open_connections,
            client_threads: cfg.client_threads,
            server_cpus: cfg.server_cpus.clone().unwrap_or_default(),
            client_cpus: cfg.client_cpus.clone().unwrap_or_default(),
            backend_cpus: cfg.backend_cpus.clone().unwrap_or_default(),
            server_threads: cfg.server_threads.max(1),
            backend: backend_desc,
            machine: machine(),
            load_before,
            load_after: load_average(),
            started,
            command: String::new(),
            revision: String::new(),
        },
        targets: results,
    })
}

fn idle_usage(pid: u32, interval: Duration) -> Usage {
    let sampler = Sampler::start(pid, interval);
    std::thread::sleep(Duration::from_secs(1));
    sampler.finish()
}

/// Measures one target: started, idle memory, sweep, closed loop, stopped. A target
/// that is missing or does not start is returned as skipped.
pub fn measure(
    cfg: &CompareConfig,
    env: &Env,
    kind: Kind,
    backend: SocketAddr,
    corpus: &[Request],
    log: Log,
) -> Result<TargetResult, CompareError> {
    if let Some(reason) = env.missing(kind) {
        log(&format!("{}: skipped: {reason}", kind.id()));
        return Ok(TargetResult::skipped(kind, reason));
    }
    log(&format!("{}: starting", kind.id()));
    let running = match targets::start(env, kind, backend) {
        Ok(r) => r,
        Err(e) => {
            log(&format!("{}: skipped: {e}", kind.id()));
            return Ok(TargetResult::skipped(kind, format!("did not start: {e}")));
        }
    };
    let result = load_target(cfg, kind, &running, corpus, log);
    let command = running.command.clone();
    running.stop();
    let (idle, sweep, closed) = result?;
    Ok(TargetResult {
        kind,
        label: kind.label(),
        skipped: None,
        command: Some(command),
        idle: Some(idle),
        sweep,
        closed,
        rounds: Vec::new(),
    })
}

/// One more round of a target: started, the closed loop, stopped. `None` when
/// it did not start this time (logged).
fn measure_closed(
    cfg: &CompareConfig,
    env: &Env,
    kind: Kind,
    backend: SocketAddr,
    corpus: &[Request],
    log: Log,
) -> Result<Option<RunFigures>, CompareError> {
    let running = match targets::start(env, kind, backend) {
        Ok(r) => r,
        Err(e) => {
            log(&format!("{}: did not start for this round: {e}", kind.id()));
            return Ok(None);
        }
    };
    let result = load_for(cfg, &running, corpus)
        .and_then(|(base, requests)| closed_run(cfg, kind, running.pid(), &base, requests, log));
    running.stop();
    result.map(Some)
}

/// The load generator's open-loop settings against a started target (the closed
/// loop changes the connections and the duration) and the corpus serialised for it.
fn load_for(
    cfg: &CompareConfig,
    running: &Running,
    corpus: &[Request],
) -> Result<(LoadConfig, Arc<Vec<http::client::Prepared>>), CompareError> {
    let target = Target::parse(&format!("http://{}/", running.addr))?;
    let requests = http::prepare_corpus(corpus, &target, true)?;
    let base = LoadConfig {
        target,
        connections: cfg.open_connections.max(1),
        threads: cfg.client_threads.max(1),
        duration: cfg.sweep_duration,
        keep_alive: true,
        timeout: cfg.timeout,
        progress: false,
        requests: None,
    };
    Ok((base, requests))
}

/// The closed-loop run against a started target, its processes sampled.
fn closed_run(
    cfg: &CompareConfig,
    kind: Kind,
    pid: u32,
    base: &LoadConfig,
    requests: Arc<Vec<http::client::Prepared>>,
    log: Log,
) -> Result<RunFigures, CompareError> {
    let c = LoadConfig {
        connections: cfg.closed_connections.max(1),
        duration: cfg.closed_duration,
        ..base.clone()
    };
    let sampler = Sampler::start(pid, cfg.sample_interval);
    let report = http::closed_loop::run(&c, requests)?;
    let usage = sampler.finish();
    let f = RunFigures::from_report(&report, usage);
    log(&format!(
        "{}: closed loop, {} connections: {:.0} req/s, p50 {:.0} µs, p99 {:.0} µs, PSS {} KiB, CPU {:.0}%",
        kind.id(),
        c.connections,
        f.requests_per_second,
        f.latency_p50_us,
        f.latency_p99_us,
        f.usage.pss_kb_max,
        f.usage.cpu_percent
    ));
    Ok(f)
}

type Loaded = (Usage, Vec<RunFigures>, Option<RunFigures>);

fn load_target(
    cfg: &CompareConfig,
    kind: Kind,
    running: &Running,
    corpus: &[Request],
    log: Log,
) -> Result<Loaded, CompareError> {
    let pid = running.pid();
    let idle = idle_usage(pid, cfg.sample_interval);
    log(&format!(
        "{}: idle RSS {} KiB, PSS {} KiB over {} process(es)",
        kind.id(),
        idle.rss_kb_max,
        idle.pss_kb_max,
        idle.processes
    ));
    let (base, requests) = load_for(cfg, running, corpus)?;
    let mut sweep = Vec::new();
    for &rate in &cfg.rates {
        let sampler = Sampler::start(pid, cfg.sample_interval);
        let report = http::open_loop::run(&base, Arc::clone(&requests), rate)?;
        let usage = sampler.finish();
        let f = RunFigures::from_report(&report, usage);
        log(&format!(
            "{}: rate {rate}/s: {:.0} req/s, p50 {:.0} µs, p99 {:.0} µs, PSS {} KiB, CPU {:.0}%",
            kind.id(),
            f.requests_per_second,
            f.latency_p50_us,
            f.latency_p99_us,
            f.usage.pss_kb_max,
            f.usage.cpu_percent
        ));
        sweep.push(f);
        std::thread::sleep(Duration::from_millis(500));
    }
    let closed = if cfg.closed_duration.is_zero() {
        None
    } else {
        Some(closed_run(cfg, kind, pid, &base, requests, log)?)
    };
    Ok((idle, sweep, closed))
}
