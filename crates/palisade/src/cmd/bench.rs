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
}

/// Runs `palisade bench ...`.
pub fn run(cmd: &BenchCommand) -> Result<ExitCode> {
    match cmd {
        BenchCommand::Engine(args) => engine(args),
    }
}

fn engine(args: &EngineArgs) -> Result<ExitCode> {
    let corpus = bench::corpus::load(&args.corpus)?;
    let program = if args.rules.is_empty() {
        let text = ftw::crs_config::crs_config(&args.crs, args.paranoia, false)
            .with_context(|| format!("reading the CRS at {}", args.crs.display()))?;
        engine::Program::from_str("crs.conf", &text)
    } else {
        engine::Program::from_paths(&args.rules)
    }
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let threads = args.threads.max(1);
    let start = std::time::Instant::now();
    let reports: Vec<bench::engine_bench::Report> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let p = Arc::clone(&program);
                let c = &corpus;
                s.spawn(move || bench::engine_bench::run(&p, c, args.iterations))
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let wall = start.elapsed().as_secs_f64();
    let Some(first) = reports.first() else {
        anyhow::bail!("no benchmark thread finished");
    };
    let total: u64 = reports.iter().map(|r| r.all.requests).sum();
    if args.json {
        let mut v = serde_json::to_value(first)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("threads".into(), threads.into());
            o.insert("paranoia".into(), args.paranoia.into());
            o.insert(
                "aggregate_requests_per_second".into(),
                (total as f64 / wall).into(),
            );
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "{} requests x {} passes, {} thread(s), paranoia {}, {} rules",
            corpus.len(),
            args.iterations,
            threads,
            args.paranoia,
            program.rule_count()
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
    }
    Ok(ExitCode::SUCCESS)
}
