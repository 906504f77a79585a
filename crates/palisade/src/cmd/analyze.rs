//! `palisade analyze`: the offline analyzer (see `bench::analyze`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

/// Arguments of `palisade analyze`.
#[derive(clap::Args)]
pub struct Args {
    /// The traffic: a corpus (JSON array or JSON Lines) or a JSON audit log (one
    /// record per line, as `palisade serve` writes).
    pub traffic: PathBuf,
    /// The CRS directory.
    #[arg(long, default_value = "../shared/crs")]
    pub crs: PathBuf,
    /// Rule files instead of the CRS (files, directories, globs).
    #[arg(long = "rules", num_args = 1..)]
    pub rules: Vec<PathBuf>,
    /// CRS blocking paranoia level (1-4).
    #[arg(long, default_value_t = 1)]
    pub paranoia: u8,
    /// Optimisations the engine runs with (as `bench engine`); with `early_exit`
    /// the order is planned for early exit in anomaly mode.
    #[arg(long, default_value = "all")]
    pub optimizations: String,
    /// Rows per table.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Runs `palisade analyze`.
pub fn run(args: &Args) -> Result<ExitCode> {
    let traffic = bench::analyze::load_traffic(&args.traffic)?;
    let options = engine::Options::parse(&args.optimizations).map_err(anyhow::Error::msg)?;
    let program = if args.rules.is_empty() {
        let text = ftw::crs_config::crs_config(&args.crs, args.paranoia, false)
            .with_context(|| format!("reading the CRS at {}", args.crs.display()))?;
        engine::Program::from_str_with("crs.conf", &text, &options)
    } else {
        engine::Program::from_paths_with(&args.rules, &options)
    }
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let analysis = bench::analyze::analyze(&program, &traffic, args.top);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&analysis)?);
    } else {
        print!("{}", bench::analyze::render(&analysis));
    }
    Ok(ExitCode::SUCCESS)
}
