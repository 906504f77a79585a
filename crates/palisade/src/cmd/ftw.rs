//! `palisade ftw`: the CRS regression suite (go-ftw YAML files) run in-process
//! against the engine, or with `--target URL --log FILE` over the network against
//! a running server (marker requests delimit each stage's lines in its log, as
//! go-ftw does); `--backend ADDR` runs the CRS test backend (`/reflect`) for such a
//! server to forward to.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use ftw::load::load_file;
use ftw::{
    load_overrides, load_suite, run_suite, verdict, CaseId, EngineTarget, Filter, HttpTarget,
    HttpTargetConfig, Report, Suite, Summary, Target,
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
    /// Send the requests to this server (`http://host:port`) instead of running
    /// them in-process; needs `--log`.
    #[arg(long, requires = "log")]
    pub target: Option<String>,
    /// The server's audit log (JSON, one record per line) or ModSecurity error log,
    /// read for the rule ids of each stage (with `--target`).
    #[arg(long, requires = "target")]
    pub log: Option<PathBuf>,
    /// Marker request header; the server must log it (see
    /// `ftw::http_target::marker_rule`).
    #[arg(long, default_value = ftw::http_target::DEFAULT_MARKER_HEADER)]
    pub marker_header: String,
    /// How long to wait for a marker to appear in the log, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub marker_timeout_ms: u64,
    /// How long one request may take (connect, send, response), in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub request_timeout_ms: u64,
    /// Run only the CRS test backend on this address (`/reflect` answers with the
    /// status, headers and body its JSON body gives; everything else 200), until
    /// killed: the upstream for a `palisade serve` tested with `--target`.
    #[arg(long, conflicts_with_all = ["target", "log"])]
    pub backend: Option<String>,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<ExitCode> {
    if let Some(addr) = &args.backend {
        let backend = ftw::reflect_backend::ReflectBackend::start(addr.as_str())
            .with_context(|| format!("cannot listen on {addr}"))?;
        eprintln!(
            "palisade ftw: CRS test backend on http://{}",
            backend.addr()
        );
        backend.wait();
        return Ok(ExitCode::SUCCESS);
    }
    let mut target: Box<dyn Target> = match (&args.target, &args.log) {
        (Some(url), Some(log)) => {
            let mut config = HttpTargetConfig::new(url.clone(), log.clone());
            config.marker_header = args.marker_header.clone();
            config.marker_timeout = Duration::from_millis(args.marker_timeout_ms);
            config.request_timeout = Duration::from_millis(args.request_timeout_ms);
            let mut t = HttpTarget::new(&config)?;
            t.check_markers()?;
            Box::new(t)
        }
        _ => {
            let text = ftw::crs_config::test_config(&args.crs)
                .with_context(|| format!("reading the CRS at {}", args.crs.display()))?;
            let program = engine::Program::from_str("crs-test.conf", &text)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            Box::new(EngineTarget::new(program))
        }
    };
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
    let quiet = args.json;
    let results = run_suite(&suite, &filter, &mut *target, &mut |p| {
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
