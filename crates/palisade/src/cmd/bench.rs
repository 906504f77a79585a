//! `palisade bench`: benchmarks.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Subcommand;

/// `palisade bench` subcommands.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Replay a corpus through the engine in-process and report µs per request.
    ///
    /// Every request runs through all five phases of a fresh transaction (with a
    /// 200 text/html response of the request's `resp_len` bytes). Reports mean,
    /// median and p99 µs per request and requests/s per core, overall and per
    /// request name or class.
    Engine(EngineArgs),
    /// Load an HTTP target with a corpus: closed loop (like wrk) or open loop at
    /// fixed rates (like httperf --rate), HdrHistogram latency percentiles.
    ///
    /// Closed loop (--connections N): each connection sends its next request when
    /// the previous response is read. Open loop (--rate R[,R...]): request i is due
    /// at start + i/R and latency is measured from that intended time, so queueing
    /// behind a stalled server counts (no coordinated omission); several rates run
    /// one after another (a sweep). Prints a summary, JSON (--json) or CSV (--csv).
    Http(HttpArgs),
    /// Build each git revision in a scratch worktree and run the same engine
    /// benchmark on each: one CSV row per revision with its commit subject.
    ///
    /// Arguments after `--` go to `palisade bench engine --json` of every revision.
    Batch(BatchArgs),
    /// Side-by-side comparison: the same corpus and load against targets the tool
    /// starts itself (nginx plain proxy, Palisade engine Off, Palisade + CRS,
    /// nginx + ModSecurity v3 + CRS, Coraza), each in front of the same backend.
    ///
    /// For each target: idle memory, an open-loop rate sweep (--rates) and a
    /// closed-loop maximum-throughput run, with CPU and memory (RSS, PSS summed over
    /// the target's processes) sampled from /proc. Writes report.md, results.json and
    /// PNG/SVG plots to --out. Targets that are not installed are reported as skipped.
    Compare(Box<CompareArgs>),
    /// The ablation: `palisade bench engine --json` per paranoia level, corpus and
    /// cumulative step (baseline; +prune; +memo; +prefilter; +cache; +order; all),
    /// each in its own process. Steps `--optimizations` does not accept are skipped
    /// and listed. Writes report.md (mean and p50 µs per request, speedup over the
    /// baseline), results.json and PNG/SVG bar charts to --out.
    Ablation(AblationArgs),
}

/// Arguments of `palisade bench ablation`.
#[derive(clap::Args)]
pub struct AblationArgs {
    /// Corpora as NAME=FILE (repeatable), e.g. benign=/tmp/benign.jsonl.
    #[arg(long = "corpus", value_name = "NAME=FILE")]
    pub corpora: Vec<String>,
    /// Paranoia levels.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub paranoia: Vec<u8>,
    /// The CRS directory.
    #[arg(long, default_value = "../shared/crs")]
    pub crs: PathBuf,
    /// Passes over each corpus per run (after one warm-up pass).
    #[arg(long, default_value_t = 3)]
    pub iterations: usize,
    /// Pin every run to these CPUs (e.g. 0).
    #[arg(long)]
    pub cpus: Option<String>,
    /// Output directory (report.md, results.json, plots).
    #[arg(long, default_value = "ablation-report")]
    pub out: PathBuf,
    /// Re-render the report and plots from a results.json instead of measuring.
    #[arg(long)]
    pub from_json: Option<PathBuf>,
    /// A line for the report's notes (how the corpora were made, the machine ...);
    /// repeatable.
    #[arg(long = "note")]
    pub notes: Vec<String>,
}

/// Arguments of `palisade bench engine`.
#[derive(clap::Args)]
pub struct EngineArgs {
    /// The CRS directory.
    #[arg(long, default_value = "../shared/crs")]
    pub crs: PathBuf,
    /// Rule files instead of the CRS (files, directories, globs).
    #[arg(long = "rules", num_args = 1..)]
    pub rules: Vec<PathBuf>,
    /// The corpus: JSON array (standard requests) or JSON Lines.
    #[arg(long, default_value = "../shared/bench/standard-requests.json")]
    pub corpus: PathBuf,
    /// CRS blocking paranoia level (1-4).
    #[arg(long, default_value_t = 1)]
    pub paranoia: u8,
    /// Worker threads (each replays the whole corpus).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Passes over the corpus (after one warm-up pass).
    #[arg(long, default_value_t = 200)]
    pub iterations: usize,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Replay each request `--iterations` times in a row (as when one kind of
    /// request is replayed alone) instead of interleaving the corpus.
    #[arg(long)]
    pub separate: bool,
    /// Transactions open at once: with N > 1 the requests go in batches of N, the
    /// request phases (1-2) of all N and then the response phases (3-5) of each, as
    /// a proxy runs N requests waiting on its upstream (each counted at the batch's
    /// time / N; no per-rule profile).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub in_flight: usize,
    /// Between requests (not timed), write over a buffer of this many KiB, one
    /// byte per cache line, so that each request finds the engine's working set
    /// gone from the core's private caches, as a proxy's network path leaves it
    /// (0: off; use more than the L2 cache, 4096 here).
    #[arg(long, value_name = "KIB", default_value_t = 0,
        value_parser = clap::value_parser!(u32).range(0..=1_048_576))]
    pub evict_kib: u32,
    /// Optimisations on (comma-separated): all, none, prune, memo, prefilter,
    /// cache, order (learned from one profiled pass over the corpus), early_exit
    /// (opt-in: anomaly mode stops a phase once the threshold is reached; not in
    /// `all`).
    #[arg(long, default_value = "all")]
    pub optimizations: String,
    /// Instead of timing: the equivalence check. Evaluates the corpus with the
    /// chosen optimisations (--verify-passes times, in order) and with none, compares
    /// decisions, matched rules, anomaly scores, TX variables and audit records
    /// request by request, prints the first differences and a summary, and exits 1
    /// on any difference. With `early_exit` in --optimizations, matched rules may
    /// lack those early exit skips.
    #[arg(long, conflicts_with_all = ["verify_inline", "separate", "threads", "profile_every", "in_flight"])]
    pub verify: bool,
    /// Passes of the optimised program over the corpus in --verify (the second and
    /// later run on a warm value cache).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub verify_passes: usize,
    /// Differences printed in full by --verify.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub verify_show: usize,
    /// Time the run with the engine checking every optimisation inline against
    /// plain evaluation (`engine::Options::verify`: slow; a difference panics).
    #[arg(long)]
    pub verify_inline: bool,
    /// Rebuild the result cache's table on the benchmark thread (instead of a
    /// thread of its own), so that which values it holds depends on the corpus
    /// alone: for reproducible instruction counts (scripts/instructions-steady.sh).
    #[arg(long, hide = true)]
    pub synchronous_cache: bool,
    /// Profile every Nth request per rule and print the costliest rules (0: off).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub profile_every: usize,
    /// Rules listed in the profile tables.
    #[arg(long, default_value_t = 20)]
    pub profile_top: usize,
}

/// Runs `palisade bench ...`.
pub fn run(cmd: &BenchCommand) -> Result<ExitCode> {
    match cmd {
        BenchCommand::Engine(args) => engine(args),
        BenchCommand::Http(args) => http(args),
        BenchCommand::Batch(args) => batch(args),
        BenchCommand::Compare(args) => compare(args),
        BenchCommand::Ablation(args) => ablation(args),
    }
}

/// The program of `--rules` or of the CRS at `--paranoia`, with `options`.
fn engine_program(args: &EngineArgs, options: &engine::Options) -> Result<Arc<engine::Program>> {
    if args.rules.is_empty() {
        let text = ftw::crs_config::crs_config(&args.crs, args.paranoia, false)
            .with_context(|| format!("reading the CRS at {}", args.crs.display()))?;
        engine::Program::from_str_with("crs.conf", &text, options)
    } else {
        engine::Program::from_paths_with(&args.rules, options)
    }
    .map_err(|e| anyhow::anyhow!("{e}"))
}

fn engine(args: &EngineArgs) -> Result<ExitCode> {
    let corpus = bench::corpus::load(&args.corpus)?;
    let mut options = engine::Options::parse(&args.optimizations).map_err(anyhow::Error::msg)?;
    if args.verify {
        return verify(args, &options, &corpus);
    }
    options.verify = args.verify_inline;
    let mut program = engine_program(args, &options)?;
    // (Before the ordering's profiled pass too, which runs on this program: its
    // cache's rebuilds would otherwise run on a thread of their own, and what
    // the pass does, and counts of it, would depend on their timing.)
    program.caches.set_synchronous(args.synchronous_cache);
    if options.order {
        // Learn the order from one profiled pass over the corpus, then apply it to
        // a fresh compile (value caches empty, as for the other runs).
        let plan = bench::engine_bench::learn_order(&program, &corpus);
        let (ordered, moved) = engine::Program::reordered(engine_program(args, &options)?, &plan)
            .map_err(anyhow::Error::msg)?;
        if !args.json {
            eprintln!(
                "order: {moved} rule(s) moved in {} segment(s), expected gain {:.0} ns per request",
                plan.segments.len(),
                plan.expected_gain()
            );
        }
        program = ordered;
    }
    program.caches.set_synchronous(args.synchronous_cache);
    let threads = args.threads.max(1);
    let start = std::time::Instant::now();
    let reports: Vec<bench::engine_bench::Report> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let p = Arc::clone(&program);
                let c = &corpus;
                s.spawn(move || {
                    bench::engine_bench::run_ordered(
                        &p,
                        c,
                        &bench::engine_bench::Replay {
                            iterations: args.iterations,
                            profile_every: args.profile_every,
                            separate: args.separate,
                            in_flight: args.in_flight,
                            evict_bytes: args.evict_kib as usize * 1024,
                        },
                    )
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let wall = start.elapsed().as_secs_f64();
    let Some(first) = reports.first() else {
        anyhow::bail!("no benchmark thread finished");
    };
    let total: u64 = reports.iter().map(|r| r.all.requests).sum();
    let mut profile: Option<engine::profile::Profile> = None;
    for p in reports.iter().filter_map(|r| r.profile.as_ref()) {
        match profile.as_mut() {
            Some(acc) => acc.merge(p),
            None => profile = Some(p.clone()),
        }
    }
    let top = profile
        .as_ref()
        .map(|p| bench::engine_bench::top_rules(&program, p, args.profile_top));
    if args.json {
        let mut v = serde_json::to_value(first)?;
        if let Some(o) = v.as_object_mut() {
            if let (Some((by_time, by_hits)), Some(p)) = (&top, &profile) {
                o.insert("profiled_requests".into(), p.transactions.into());
                o.insert(
                    "phase_us_per_request".into(),
                    p.phase_nanos
                        .iter()
                        .map(|n| *n as f64 / 1000.0 / p.transactions.max(1) as f64)
                        .collect::<Vec<f64>>()
                        .into(),
                );
                o.insert("rules_by_time".into(), serde_json::to_value(by_time)?);
                o.insert("rules_by_hits".into(), serde_json::to_value(by_hits)?);
            }
            o.insert("threads".into(), threads.into());
            o.insert("optimizations".into(), args.optimizations.clone().into());
            o.insert("paranoia".into(), args.paranoia.into());
            o.insert(
                "aggregate_requests_per_second".into(),
                (total as f64 / wall).into(),
            );
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "{} requests x {} passes, {} thread(s), paranoia {}, {} rules, optimizations {}{}",
            corpus.len(),
            args.iterations,
            threads,
            args.paranoia,
            program.rule_count(),
            args.optimizations,
            if args.verify_inline {
                " (verified inline)"
            } else {
                ""
            }
        );
        println!(
            "{:<12} {:>10} {:>10} {:>10} {:>12} {:>8}",
            "request", "mean µs", "p50 µs", "p99 µs", "req/s/core", "blocked"
        );
        for g in first.groups.iter().chain(std::iter::once(&first.all)) {
            println!(
                "{:<12} {:>10.1} {:>10.1} {:>10.1} {:>12.0} {:>8}",
                g.name,
                g.us_per_request_mean,
                g.us_per_request_p50,
                g.us_per_request_p99,
                g.requests_per_second,
                g.blocked
            );
        }
        if threads > 1 {
            println!(
                "aggregate: {:.0} requests/s over {threads} threads",
                total as f64 / wall
            );
        }
        if let (Some((by_time, by_hits)), Some(p)) = (&top, &profile) {
            print_profile(p, by_time, by_hits);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `palisade bench engine --verify`: the differential equivalence check.
fn verify(
    args: &EngineArgs,
    options: &engine::Options,
    corpus: &[bench::corpus::Request],
) -> Result<ExitCode> {
    use bench::verify::{self as v, VerifyConfig};
    let start = std::time::Instant::now();
    let optimised = engine_program(args, options)?;
    let reference = engine_program(args, &engine::Options::none())?;
    let config = VerifyConfig {
        passes: args.verify_passes.max(1),
        keep: args.verify_show,
        mode: VerifyConfig::mode_for(&args.optimizations),
    };
    let total = corpus.len() * config.passes;
    let bar = indicatif::ProgressBar::new(total as u64);
    if args.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let mut done = 0u64;
    let report = v::verify_with_progress(&optimised, &reference, corpus, &config, &mut |_, _| {
        done += 1;
        if done.is_multiple_of(256) {
            bar.set_position(done);
        }
    });
    bar.finish_and_clear();
    let secs = start.elapsed().as_secs_f64();
    if args.json {
        let mut val = serde_json::to_value(&report)?;
        if let Some(o) = val.as_object_mut() {
            o.insert("corpus".into(), args.corpus.display().to_string().into());
            o.insert("optimizations".into(), args.optimizations.clone().into());
            o.insert("paranoia".into(), args.paranoia.into());
            o.insert("seconds".into(), secs.into());
        }
        println!("{}", serde_json::to_string_pretty(&val)?);
    } else {
        println!(
            "verify {}: optimizations {} against none, paranoia {}, {} rules{}",
            args.corpus.display(),
            args.optimizations,
            args.paranoia,
            optimised.rule_count(),
            match config.mode {
                v::Mode::Exact => String::new(),
                v::Mode::EarlyExit { reordered } => format!(
                    " (early exit: matched rules compared by the early-exit rule{})",
                    if reordered { ", reordered" } else { "" }
                ),
            }
        );
        print!("{}", report.render());
        println!("{secs:.1} s");
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_profile(
    p: &engine::profile::Profile,
    by_time: &[bench::engine_bench::RuleLine],
    by_hits: &[bench::engine_bench::RuleLine],
) {
    let n = p.transactions.max(1) as f64;
    println!();
    println!("rule cost profile over {} sampled requests", p.transactions);
    let phases: Vec<String> = p
        .phase_nanos
        .iter()
        .enumerate()
        .map(|(i, ns)| format!("phase {} {:.1} µs", i + 1, *ns as f64 / 1000.0 / n))
        .collect();
    println!("per request: {}", phases.join(", "));
    let table = |title: &str, lines: &[bench::engine_bench::RuleLine]| {
        println!();
        println!("{title}");
        println!(
            "{:>8} {:>5} {:>10} {:>8} {:>10} {:>7}",
            "rule", "phase", "evals/req", "hit %", "ns/eval", "time %"
        );
        for l in lines {
            println!(
                "{:>8} {:>5} {:>10.2} {:>8.1} {:>10.0} {:>7.1}",
                l.id,
                l.phase,
                l.evaluations_per_request,
                l.hit_ratio * 100.0,
                l.ns_per_evaluation,
                l.time_share * 100.0
            );
        }
    };
    table("costliest rules (total time)", by_time);
    table("most matching rules", by_hits);
}

/// Arguments of `palisade bench http`.
#[derive(clap::Args)]
pub struct HttpArgs {
    /// The target, http://host[:port][/path] (the corpus gives each request's path).
    #[arg(long)]
    pub target: String,
    /// The corpus: JSON Lines or the standard requests' JSON array.
    #[arg(long, default_value = "../shared/bench/standard-requests.json")]
    pub corpus: PathBuf,
    /// Connections: the closed loop's concurrency, or the open loop's pool size
    /// (default 32 closed, 64 open).
    #[arg(long)]
    pub connections: Option<usize>,
    /// Open loop at these rates (requests/s), one run each: --rate 1000,2000,5000.
    #[arg(long, value_delimiter = ',')]
    pub rate: Vec<f64>,
    /// How long each run sends (500ms, 10s, 1m).
    #[arg(long, default_value = "10s")]
    pub duration: String,
    /// Client threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Open a new connection for every request.
    #[arg(long)]
    pub no_keep_alive: bool,
    /// Per-request timeout.
    #[arg(long, default_value = "10s")]
    pub timeout: String,
    /// Closed loop: stop after exactly this many requests (--duration still caps
    /// the run; give a long one).
    #[arg(long, conflicts_with = "rate")]
    pub requests: Option<u64>,
    /// Print JSON (one object; {"runs": [...]} for several rates).
    #[arg(long)]
    pub json: bool,
    /// Print CSV (a header and one row per run).
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Also write the CSV to this file.
    #[arg(long)]
    pub csv_out: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

fn http(args: &HttpArgs) -> Result<ExitCode> {
    use bench::http::{self as h, report};
    let corpus = bench::corpus::load(&args.corpus)?;
    let target = h::Target::parse(&args.target)?;
    let keep_alive = !args.no_keep_alive;
    let requests = h::prepare_corpus(&corpus, &target, keep_alive)?;
    let open = !args.rate.is_empty();
    let cfg = h::LoadConfig {
        target,
        connections: args
            .connections
            .unwrap_or(if open { 64 } else { 32 })
            .max(1),
        threads: args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1),
        duration: h::parse_duration(&args.duration)?,
        keep_alive,
        timeout: h::parse_duration(&args.timeout)?,
        progress: !args.quiet,
        requests: args.requests,
    };
    let mut reports = Vec::new();
    if open {
        for &rate in &args.rate {
            if !(rate.is_finite() && rate > 0.0) {
                anyhow::bail!("--rate must be positive, got {rate}");
            }
            let r = h::open_loop::run(&cfg, Arc::clone(&requests), rate)?;
            if !args.json && !args.csv {
                print!("{}", r.render_text());
            }
            reports.push(r);
        }
    } else {
        let r = h::closed_loop::run(&cfg, requests)?;
        if !args.json && !args.csv {
            print!("{}", r.render_text());
        }
        reports.push(r);
    }
    if args.json {
        let v = if reports.len() == 1 {
            serde_json::to_value(&reports[0])?
        } else {
            serde_json::json!({ "runs": reports })
        };
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else if args.csv {
        print!("{}", report::render_csv(&reports));
    }
    if let Some(path) = &args.csv_out {
        std::fs::write(path, report::render_csv(&reports))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `palisade bench batch`.
#[derive(clap::Args)]
pub struct BatchArgs {
    /// Git revisions to benchmark, in order.
    #[arg(required = true)]
    pub revisions: Vec<String>,
    /// The repository (default: the current directory's).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Cargo target directory shared by the builds (default: a temporary one,
    /// removed at the end).
    #[arg(long)]
    pub target_dir: Option<PathBuf>,
    /// Also write the CSV to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Arguments for `palisade bench engine --json` (after `--`).
    #[arg(last = true)]
    pub bench_args: Vec<String>,
}

fn batch(args: &BatchArgs) -> Result<ExitCode> {
    use bench::batch;
    let mut cfg =
        batch::BatchConfig::new(args.repo.clone(), args.revisions.clone(), &args.bench_args);
    cfg.target_dir = args
        .target_dir
        .as_ref()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()));
    println!("{}", batch::CSV_HEADER);
    let rows = batch::run(&cfg, &mut |row| println!("{}", batch::csv_row(row)))?;
    if let Some(path) = &args.out {
        let mut text = format!("{}\n", batch::CSV_HEADER);
        for r in &rows {
            text.push_str(&batch::csv_row(r));
            text.push('\n');
        }
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let failed = rows.iter().filter(|r| r.error.is_some()).count();
    if failed > 0 {
        eprintln!("palisade: {failed} revision(s) without figures (see the error column)");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `palisade bench compare`.
#[derive(clap::Args)]
pub struct CompareArgs {
    /// Targets: nginx, palisade-off, palisade-crs, modsecurity, coraza, or all.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub targets: Vec<String>,
    /// Paranoia levels for the CRS targets (palisade-crs, modsecurity): 1,2,3,4.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub paranoia: Vec<u8>,
    /// The CRS directory.
    #[arg(long, default_value = "../shared/crs")]
    pub crs: PathBuf,
    /// The corpus: JSON Lines or the standard requests' JSON array.
    #[arg(long, default_value = "../shared/bench/standard-requests.json")]
    pub corpus: PathBuf,
    /// Offered rates of the open-loop sweep (requests/s); empty string: no sweep.
    #[arg(long, value_delimiter = ',', default_value = "500,1000,2000,4000,8000")]
    pub rates: Vec<String>,
    /// Duration of each sweep run.
    #[arg(long, default_value = "5s")]
    pub sweep_duration: String,
    /// Duration of the closed-loop run (0s: none).
    #[arg(long, default_value = "10s")]
    pub duration: String,
    /// Closed-loop rounds: after the first (sweep and closed loop of each
    /// target), every target's closed loop is run again, the targets in turn,
    /// once per further round; the report gives the ratio to the plain proxy in
    /// each round and their median, which a change of the machine's speed
    /// during the comparison moves far less than a single run's ratio.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=50))]
    pub rounds: u16,
    /// Closed-loop connections.
    #[arg(long, default_value_t = 32)]
    pub connections: usize,
    /// Open-loop connection pool.
    #[arg(long, default_value_t = 64)]
    pub open_connections: usize,
    /// Load generator threads.
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,
    /// nginx workers / Palisade threads per target.
    #[arg(long, default_value_t = 1)]
    pub server_threads: usize,
    /// CPUs for the targets (e.g. 0 or 0-1).
    #[arg(long)]
    pub server_cpus: Option<String>,
    /// CPUs for the load generator.
    #[arg(long)]
    pub client_cpus: Option<String>,
    /// CPUs for the backend.
    #[arg(long)]
    pub backend_cpus: Option<String>,
    /// Backend: auto (nginx when installed, else built-in), nginx, builtin.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Per-request timeout.
    #[arg(long, default_value = "10s")]
    pub timeout: String,
    /// CPU and memory sampling interval.
    #[arg(long, default_value = "250ms")]
    pub sample_interval: String,
    /// Output directory (report.md, results.json, plots).
    #[arg(long, default_value = "compare-report")]
    pub out: PathBuf,
    /// Scratch directory for the targets' configurations and logs (default: a new
    /// directory under the system's temporary directory).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Re-render the report and plots from a results.json instead of measuring.
    #[arg(long)]
    pub from_json: Option<PathBuf>,
}

fn compare(args: &CompareArgs) -> Result<ExitCode> {
    use bench::compare::{self as c, pin, sweep::BackendChoice};
    let comparison = if let Some(path) = &args.from_json {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str::<c::Comparison>(&text)
            .with_context(|| format!("parsing {}", path.display()))?
    } else {
        let cpus = |s: &Option<String>| -> Result<Option<Vec<usize>>> {
            s.as_deref()
                .map(pin::parse_cpus)
                .transpose()
                .map_err(|e| anyhow::anyhow!(e))
        };
        let mut rates = Vec::new();
        for r in args
            .rates
            .iter()
            .map(|r| r.trim())
            .filter(|r| !r.is_empty())
        {
            let v: f64 = r
                .parse()
                .with_context(|| format!("--rates: '{r}' is not a number"))?;
            if !(v.is_finite() && v > 0.0) {
                anyhow::bail!("--rates must be positive, got {r}");
            }
            rates.push(v);
        }
        let backend = match args.backend.as_str() {
            "auto" => BackendChoice::Auto,
            "nginx" => BackendChoice::Nginx,
            "builtin" => BackendChoice::Builtin,
            b => anyhow::bail!("--backend {b}: expected auto, nginx or builtin"),
        };
        let corpus = bench::corpus::load(&args.corpus)?;
        let cfg = c::CompareConfig {
            palisade: std::env::current_exe().context("locating the palisade binary")?,
            crs: std::path::absolute(&args.crs).unwrap_or_else(|_| args.crs.clone()),
            corpus_name: args.corpus.display().to_string(),
            targets: c::targets::parse_targets(&args.targets, &args.paranoia)?,
            rates,
            sweep_duration: bench::http::parse_duration(&args.sweep_duration)?,
            closed_duration: bench::http::parse_duration(&args.duration)?,
            rounds: usize::from(args.rounds),
            closed_connections: args.connections.max(1),
            open_connections: args.open_connections.max(1),
            client_threads: args.client_threads.max(1),
            timeout: bench::http::parse_duration(&args.timeout)?,
            server_cpus: cpus(&args.server_cpus)?,
            client_cpus: cpus(&args.client_cpus)?,
            backend_cpus: cpus(&args.backend_cpus)?,
            server_threads: args.server_threads.max(1),
            backend,
            work_dir: match &args.work_dir {
                Some(d) => std::path::absolute(d).unwrap_or_else(|_| d.clone()),
                None => {
                    std::env::temp_dir().join(format!("palisade-compare-{}", std::process::id()))
                }
            },
            sample_interval: bench::http::parse_duration(&args.sample_interval)?,
        };
        let log = |m: &str| eprintln!("compare: {m}");
        let mut result = c::run(&cfg, &corpus, &log)?;
        result.settings.command = command_line();
        result.settings.revision = git_revision();
        result
    };
    write_report(
        &args.out,
        args.from_json.as_deref(),
        &comparison,
        c::plot::write_all,
        c::report::render,
    )
}

fn ablation(args: &AblationArgs) -> Result<ExitCode> {
    use bench::ablation::{self as a, AblationConfig};
    let result = if let Some(path) = &args.from_json {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str::<a::Ablation>(&text)
            .with_context(|| format!("parsing {}", path.display()))?
    } else {
        let mut corpora = Vec::new();
        for c in &args.corpora {
            let Some((name, file)) = c.split_once('=') else {
                anyhow::bail!("--corpus {c}: expected NAME=FILE");
            };
            if !std::path::Path::new(file).is_file() {
                anyhow::bail!("--corpus {c}: no such file");
            }
            corpora.push((name.to_string(), PathBuf::from(file)));
        }
        if corpora.is_empty() {
            anyhow::bail!("give at least one --corpus NAME=FILE");
        }
        let cfg = AblationConfig {
            palisade: std::env::current_exe().context("locating the palisade binary")?,
            crs: args.crs.clone(),
            corpora,
            paranoia: args.paranoia.clone(),
            iterations: args.iterations.max(1),
            cpus: args
                .cpus
                .as_deref()
                .map(bench::compare::pin::parse_cpus)
                .transpose()
                .map_err(|e| anyhow::anyhow!(e))?,
        };
        // The steps this binary's --optimizations accepts.
        let accepts = |name: &str| engine::Options::parse(name).is_ok();
        let mut result = a::run(&cfg, &accepts, &|m| eprintln!("ablation: {m}"));
        result.command = command_line();
        result.revision = git_revision();
        result.notes.clone_from(&args.notes);
        result
    };
    write_report(
        &args.out,
        args.from_json.as_deref(),
        &result,
        a::plot::write_all,
        a::report::render,
    )
}

/// Writes a report directory: `results.json` (unless the result was read from
/// it), the plots (a plot failure is reported and the report written without
/// them) and `report.md`, whose path is printed.
fn write_report<T: serde::Serialize, P, E: std::fmt::Display>(
    out: &std::path::Path,
    from_json: Option<&std::path::Path>,
    result: &T,
    plot: impl FnOnce(&T, &std::path::Path) -> Result<Vec<P>, E>,
    render: impl FnOnce(&T, &[P]) -> String,
) -> Result<ExitCode> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let json = out.join("results.json");
    if from_json != Some(json.as_path()) {
        std::fs::write(&json, serde_json::to_string_pretty(result)?)
            .with_context(|| format!("writing {}", json.display()))?;
    }
    let plots = match plot(result, out) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("palisade: no plots: {e}");
            Vec::new()
        }
    };
    let md = out.join("report.md");
    std::fs::write(&md, render(result, &plots))
        .with_context(|| format!("writing {}", md.display()))?;
    println!("{}", md.display());
    Ok(ExitCode::SUCCESS)
}

/// This process's command line, quoted for a shell.
fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if a.contains([' ', '\'', '"']) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `git describe --always --dirty` of the current directory, or empty.
fn git_revision() -> String {
    std::process::Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}
