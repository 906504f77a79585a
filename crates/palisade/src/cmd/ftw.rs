//! `palisade ftw`: the CRS regression suite (go-ftw YAML files) run in-process
//! against the engine.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use ftw::load::load_file;
use ftw::{
    load_overrides, load_suite, run_suite, verdict, CaseId, EngineTarget, Filter, Report, Suite,
    Summary,
};

/// Arguments of `palisade ftw`.
#[derive(clap::Args)]
pub struct Args {
    /// The CRS directory (rules/, crs-setup.conf.example, tests/).
    #[arg(long, default_value = "../shared/crs")]
    pub crs: PathBuf,
    /// Test files or directories (default: CRS/tests/regression/tests).
    pub tests: Vec<PathBuf>,
    /// Overrides file: cases expected to fail, each with a reason.
    #[arg(long)]
    pub overrides: Option<PathBuf>,
    /// Only cases of these rule ids (repeatable).
    #[arg(long = "rule")]
    pub rules: Vec<u32>,
    /// Only these cases, as RULE-TEST (repeatable), e.g. 942100-3.
    #[arg(long = "test")]
    pub test_ids: Vec<String>,
    /// Print a JSON report instead of text.
    #[arg(long)]
    pub json: bool,
    /// Print every failure's reason and log (text mode).
    #[arg(long, short)]
    pub verbose: bool,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<ExitCode> {
    let text = ftw::crs_config::test_config(&args.crs)
        .with_context(|| format!("reading the CRS at {}", args.crs.display()))?;
    let program =
        engine::Program::from_str("crs-test.conf", &text).map_err(|e| anyhow::anyhow!("{e}"))?;
    let paths = if args.tests.is_empty() {
        vec![args.crs.join("tests/regression/tests")]
    } else {
        args.tests.clone()
    };
    let mut files = Vec::new();
    for p in &paths {
        if p.is_file() {
            files.push(load_file(p)?);
        } else {
            files.extend(load_suite(p)?.files);
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let suite = Suite {
        root: paths[0].clone(),
        files,
    };
    let mut tests = Vec::new();
    for t in &args.test_ids {
        tests.push(
            t.parse::<CaseId>()
                .map_err(|e| anyhow::anyhow!("--test {t}: {e}"))?,
        );
    }
    let filter = Filter {
        rules: args.rules.clone(),
        tests,
    };
    let mut target = EngineTarget::new(Arc::clone(&program));
    let quiet = args.json;
    let results = run_suite(&suite, &filter, &mut target, &mut |p| {
        if !quiet {
            let mut err = std::io::stderr();
            let _ = writeln!(
                err,
                "[{}/{}] {} {} passed, {} failed",
                p.index,
                p.total,
                p.path
                    .file_name()
                    .map(|f| f.to_string_lossy())
                    .unwrap_or_default(),
                p.passed,
                p.failed
            );
        }
    });
    let summary = Summary::of(&results);
    let v = match &args.overrides {
        Some(path) => {
            let o = load_overrides(path)?;
            Some(verdict(results.iter().map(|r| (r.id, r.status)), &o))
        }
        None => None,
    };
    let ok = v.as_ref().map_or(summary.failed == 0, ftw::Verdict::is_ok);
    if args.json {
        println!("{}", Report::new(results, v).to_json());
    } else {
        let report = Report::new(results, v);
        if args.verbose {
            for line in report.failure_lines() {
                println!("{line}");
            }
        }
        println!("{summary}");
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
