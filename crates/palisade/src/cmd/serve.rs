//! `palisade serve --config FILE`: the reverse proxy with the WAF inline.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

/// Arguments of `palisade serve`.
#[derive(clap::Args)]
pub struct Args {
    /// The TOML configuration (listeners, upstreams, routes, limits, audit, admin).
    #[arg(long, short)]
    pub config: PathBuf,
    /// Worker threads (default: one per CPU). 1 runs everything on one thread
    /// (tokio's current-thread runtime), the fastest setting for one core.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Log level for the proxy's own log on standard error (error, warn, info, debug).
    #[arg(long, default_value = "info")]
    pub log_level: String,
}

/// Builds the tokio runtime for the proxy: with one thread, tokio's current-thread
/// runtime (everything on the calling thread, no cross-thread wake-ups); otherwise the
/// multi-thread one.
pub fn runtime(threads: Option<usize>) -> Result<tokio::runtime::Runtime> {
    let mut b = match threads {
        Some(n) if n <= 1 => tokio::runtime::Builder::new_current_thread(),
        Some(n) => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            b
        }
        None => tokio::runtime::Builder::new_multi_thread(),
    };
    b.enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Sends the proxy's log (tracing events) to standard error.
pub fn init_log(level: &str) {
    let level = level
        .parse::<tracing::Level>()
        .unwrap_or(tracing::Level::INFO);
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// Runs the command.
pub fn run(args: &Args) -> Result<ExitCode> {
    init_log(&args.log_level);
    let rt = runtime(args.threads)?;
    rt.block_on(async {
        let server = proxy::Server::start(&args.config)
            .await
            .with_context(|| format!("cannot start from {}", args.config.display()))?;
        for a in server.addrs() {
            eprintln!("palisade: listening on {a}");
        }
        if let Some(a) = server.admin_addr() {
            eprintln!("palisade: admin on http://{a} (/metrics, /healthz, /readyz, POST /reload)");
        }
        let clean = server.run_until_signal().await;
        Ok(if clean {
            ExitCode::SUCCESS
        } else {
            eprintln!("palisade: some connections were still open at the shutdown timeout");
            ExitCode::from(1)
        })
    })
}
