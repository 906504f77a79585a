//! `palisade bench batch`: the same engine benchmark on several git revisions, one
//! CSV row per revision with its commit subject, so a regression is found by commit.
//!
//! Each revision is checked out in a scratch worktree (`git worktree add --detach`
//! under a temporary directory), built with `cargo build --release --bin palisade`
//! (all revisions share one cargo target directory, so later builds are incremental),
//! and its own binary runs `palisade bench engine --json` plus the given arguments,
//! from the directory the batch was started in (so relative paths such as
//! `../shared/crs` mean the same for every revision). The worktree is removed
//! afterwards, whatever happened.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;

/// What to run.
#[derive(Debug, Clone)]
pub struct BatchConfig {
    /// The git repository.
    pub repo: PathBuf,
    /// Revisions, in order.
    pub revisions: Vec<String>,
    /// The build command, run in the worktree with `CARGO_TARGET_DIR` set.
    pub build: Vec<String>,
    /// The benchmark binary, relative to the target directory.
    pub binary: PathBuf,
    /// Arguments of the benchmark binary.
    pub bench_args: Vec<String>,
    /// The shared target directory (default: inside the scratch directory, removed
    /// at the end).
    pub target_dir: Option<PathBuf>,
    /// Where the benchmark runs.
    pub workdir: PathBuf,
}

impl BatchConfig {
    /// The default build (`cargo build --release --bin palisade`) and benchmark
    /// (`palisade bench engine --json` then `extra`).
    pub fn new(repo: PathBuf, revisions: Vec<String>, extra: &[String]) -> Self {
        let mut bench_args: Vec<String> = ["bench", "engine", "--json"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        bench_args.extend(extra.iter().cloned());
        BatchConfig {
            repo,
            revisions,
            build: ["cargo", "build", "--release", "--bin", "palisade"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            binary: PathBuf::from("release/palisade"),
            bench_args,
            target_dir: None,
            workdir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        }
    }
}

/// One revision's result.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Row {
    /// The revision as given.
    pub revision: String,
    /// The full commit id.
    pub commit: String,
    /// The commit subject.
    pub subject: String,
    /// Requests measured.
    pub requests: Option<u64>,
    /// Requests per second (one thread).
    pub requests_per_second: Option<f64>,
    /// Mean µs per request.
    pub us_per_request_mean: Option<f64>,
    /// Median µs per request.
    pub us_per_request_p50: Option<f64>,
    /// 99th percentile µs per request.
    pub us_per_request_p99: Option<f64>,
    /// Why there are no figures.
    pub error: Option<String>,
}

/// Why the batch could not run at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    /// A git command failed.
    #[error("git {args}: {message}")]
    Git {
        /// The arguments.
        args: String,
        /// Its error output.
        message: String,
    },
    /// A process could not be started or a directory created.
    #[error("{what}: {source}")]
    Io {
        /// What was attempted.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BatchError {
    let what = what.into();
    move |source| BatchError::Io { what, source }
}

fn git(repo: &Path, args: &[&str]) -> Result<String, BatchError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(io("running git"))?;
    if !out.status.success() {
        return Err(BatchError::Git {
            args: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The CSV header matching [`csv_row`].
pub const CSV_HEADER: &str = "revision,commit,subject,requests,requests_per_second,us_per_request_mean,us_per_request_p50,us_per_request_p99,error";

/// One CSV row.
pub fn csv_row(r: &Row) -> String {
    let f = |v: Option<f64>| v.map(|x| format!("{x:.1}")).unwrap_or_default();
    format!(
        "{},{},{},{},{},{},{},{},{}",
        crate::http::report::csv_field(&r.revision),
        r.commit,
        crate::http::report::csv_field(&r.subject),
        r.requests.map(|n| n.to_string()).unwrap_or_default(),
        f(r.requests_per_second),
        f(r.us_per_request_mean),
        f(r.us_per_request_p50),
        f(r.us_per_request_p99),
        crate::http::report::csv_field(r.error.as_deref().unwrap_or("")),
    )
}

/// Reads the figures from `palisade bench engine --json` output.
pub fn parse_bench_json(stdout: &str, row: &mut Row) -> Result<(), String> {
    let start = stdout.find('{').ok_or("no JSON object in the output")?;
    let v: serde_json::Value =
        serde_json::from_str(&stdout[start..]).map_err(|e| format!("bad JSON: {e}"))?;
    let num = |k: &str| v.get(k).and_then(serde_json::Value::as_f64);
    row.requests = v.get("requests").and_then(serde_json::Value::as_u64);
    row.requests_per_second = num("requests_per_second");
    row.us_per_request_mean = num("us_per_request_mean");
    row.us_per_request_p50 = num("us_per_request_p50");
    row.us_per_request_p99 = num("us_per_request_p99");
    if row.requests.is_none() || row.requests_per_second.is_none() {
        return Err("the JSON lacks requests / requests_per_second".into());
    }
    Ok(())
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Builds and benchmarks every revision; `on_row` sees each row as it is done.
pub fn run(cfg: &BatchConfig, on_row: &mut dyn FnMut(&Row)) -> Result<Vec<Row>, BatchError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let scratch = Scratch(
        std::env::temp_dir().join(format!("palisade-batch-{}-{nanos}", std::process::id())),
    );
    std::fs::create_dir_all(&scratch.0).map_err(io(format!("creating {}", scratch.0.display())))?;
    let target_dir = cfg
        .target_dir
        .clone()
        .unwrap_or_else(|| scratch.0.join("target"));
    // Resolve every revision first: a typo fails before any build.
    let mut resolved = Vec::new();
    for rev in &cfg.revisions {
        let commit = git(
            &cfg.repo,
            &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
        )?;
        let subject = git(&cfg.repo, &["log", "-1", "--format=%s", &commit])?;
        resolved.push((rev.clone(), commit, subject));
    }
    let mut rows = Vec::new();
    for (i, (revision, commit, subject)) in resolved.into_iter().enumerate() {
        let mut row = Row {
            revision,
            commit: commit.clone(),
            subject,
            ..Row::default()
        };
        let tree = scratch.0.join(format!("worktree-{i}"));
        let tree_s = tree.to_string_lossy().into_owned();
        git(
            &cfg.repo,
            &["worktree", "add", "--detach", &tree_s, &commit],
        )?;
        let result = build_and_bench(cfg, &tree, &target_dir, &mut row);
        let removed = git(&cfg.repo, &["worktree", "remove", "--force", &tree_s]);
        let _ = git(&cfg.repo, &["worktree", "prune"]);
        if let Err(e) = result {
            row.error = Some(e);
        }
        removed?;
        on_row(&row);
        rows.push(row);
    }
    Ok(rows)
}

fn build_and_bench(
    cfg: &BatchConfig,
    tree: &Path,
    target_dir: &Path,
    row: &mut Row,
) -> Result<(), String> {
    let (prog, args) = cfg.build.split_first().ok_or("empty build command")?;
    let status = Command::new(prog)
        .args(args)
        .current_dir(tree)
        .env("CARGO_TARGET_DIR", target_dir)
        .stdin(Stdio::null())
        // Build output goes to our stderr; stdout is kept for the CSV.
        .stdout(Stdio::from(std::io::stderr()))
        .status()
        .map_err(|e| format!("running {prog}: {e}"))?;
    if !status.success() {
        return Err(format!("build failed ({status})"));
    }
    let binary = target_dir.join(&cfg.binary);
    let out = Command::new(&binary)
        .args(&cfg.bench_args)
        .current_dir(&cfg.workdir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running {}: {e}", binary.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "benchmark failed ({}): {}",
            out.status,
            err.lines().last().unwrap_or("")
        ));
    }
    parse_bench_json(&String::from_utf8_lossy(&out.stdout), row)
}
