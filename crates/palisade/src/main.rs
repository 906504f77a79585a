//! `palisade`: the one binary of the Palisade web application firewall.

mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc: the proxy allocates and frees small objects per request on every
/// thread; glibc's allocator spent about 10% of an engine-Off proxy's CPU time on
/// them (perf), mimalloc's per-thread free lists a fraction of it. Built without
/// transparent huge pages (`no_thp`): with them a CRS proxy's idle RSS grew from
/// 138 to 180 MB, and its PSS under R2 load from 72 to 97 MB for no measurable
/// gain in requests per second (docs/PERFORMANCE.md, session 47).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Palisade: a web application firewall that runs ModSecurity SecLang rule sets
/// (above all the OWASP Core Rule Set) unchanged, at a fraction of their usual cost.
#[derive(Parser)]
#[command(name = "palisade", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a SecLang configuration and summarise it.
    ///
    /// Loads every path given (files, directories of *.conf files, or globs),
    /// following Include directives, and checks every directive, variable, operator,
    /// action and transformation. Prints a summary (files, rules, chain links,
    /// markers, operator/variable/transformation histograms, parse time), or every
    /// error with file:line:column. Exits 0 when the configuration is valid, 1 when
    /// it is not.
    Check(cmd::check::Args),
    /// Run the OWASP CRS regression suite (go-ftw YAML tests) in-process.
    ///
    /// Configures the engine as the CRS suite requires (DetectionOnly, blocking
    /// paranoia level 4, rule 900005), builds every stage's request as go-ftw does,
    /// and checks expect_ids / no_expect_ids / status / log expectations. Prints
    /// progress per file and `N passed, N failed, N skipped`; with --overrides,
    /// exits non-zero on any unlisted failure or listed pass.
    Ftw(cmd::ftw::Args),
    /// Run one raw HTTP request through the engine and explain the decision.
    ///
    /// Prints the decision, every matched rule with the variable, its transformed
    /// value, the logged data and the operator, and the anomaly scores. Rules default
    /// to the CRS at the given paranoia level, with the engine On.
    Eval(cmd::eval::Args),
    /// Run the reverse proxy with the WAF inline (`--config palisade.toml`).
    ///
    /// Listeners (HTTP/1.1; TLS with HTTP/2 by ALPN), upstreams, routes with their
    /// rules, limits, audit log and admin listener come from one TOML file. SIGHUP
    /// reloads it; SIGTERM/SIGINT drain in-flight requests and stop.
    Serve(cmd::serve::Args),
    /// Start a built-in echo backend with the WAF (CRS PL1) in front, to try it.
    Demo(cmd::demo::Args),
    /// Ask a running `palisade serve` to reload its configuration (admin listener).
    Reload(cmd::reload::Args),
    /// Benchmarks (engine in-process).
    #[command(subcommand)]
    Bench(cmd::bench::BenchCommand),
    /// Analyse traffic offline: per-rule cost and hit tables, the proposed rule
    /// order and its expected gain, and the values that repeat.
    ///
    /// Replays a corpus or a JSON audit log (requests rebuilt from each record)
    /// through the engine with every request profiled.
    Analyze(cmd::analyze::Args),
    /// Request corpora modelled on real web traffic (generate, stats, raw).
    #[command(subcommand)]
    Traffic(cmd::traffic::TrafficCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => cmd::check::run(&args),
        Command::Ftw(args) => cmd::ftw::run(&args),
        Command::Eval(args) => cmd::eval::run(&args),
        Command::Serve(args) => cmd::serve::run(&args),
        Command::Demo(args) => cmd::demo::run(&args),
        Command::Reload(args) => cmd::reload::run(&args),
        Command::Bench(cmd) => cmd::bench::run(&cmd),
        Command::Traffic(cmd) => cmd::traffic::run(&cmd),
        Command::Analyze(args) => cmd::analyze::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("palisade: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
