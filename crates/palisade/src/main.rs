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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => cmd::check::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("palisade: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
