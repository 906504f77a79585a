//! `palisade`: the one binary of the Palisade web application firewall.

mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    /// Benchmarks (engine in-process).
    #[command(subcommand)]
    Bench(cmd::bench::BenchCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => cmd::check::run(&args),
        Command::Ftw(args) => cmd::ftw::run(&args),
        Command::Eval(args) => cmd::eval::run(&args),
        Command::Bench(cmd) => cmd::bench::run(&cmd),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("palisade: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
