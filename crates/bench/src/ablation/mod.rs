//! The ablation behind `palisade bench ablation`: the engine benchmark with the
//! optimisations switched on one after another, in the RuleCache paper's order
//! (baseline; + pre-pruning; + transformation memo; + prefilter; + result cache;
//! + ordering; all), for each paranoia level and corpus.
//!
//! Every run is a separate `palisade bench engine --json` process (fresh caches and
//! allocator), so a step measures what a deployment with that set of optimisations
//! would. A step whose optimisation the engine does not know (`--optimizations`
//! rejects its name) is skipped and reported as such; later steps then go on
//! without it.
//!
//! [`report`] renders the Markdown table (mean and p50 µs per request, speedup over
//! the baseline) and [`plot`] the charts.

pub mod plot;
pub mod report;

use std::path::PathBuf;
use std::process::Command;

use serde::{Deserialize, Serialize};

/// One step of the ablation: a label and the optimisation it adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Short label (`+prune`).
    pub label: &'static str,
    /// The name given to `--optimizations` (`none` for the baseline, `all` for the
    /// last step).
    pub name: &'static str,
}

/// The steps, cumulative, in the paper's order.
pub const STEPS: [Step; 7] = [
    Step {
        label: "baseline",
        name: "none",
    },
    Step {
        label: "+prune",
        name: "prune",
    },
    Step {
        label: "+memo",
        name: "memo",
    },
    Step {
        label: "+prefilter",
        name: "prefilter",
    },
    Step {
        label: "+cache",
        name: "cache",
    },
    Step {
        label: "+order",
        name: "order",
    },
    Step {
        label: "all",
        name: "all",
    },
];

/// A step as planned: the `--optimizations` list, or why it is skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// The step.
    pub step: Step,
    /// The cumulative list, or the reason the step is skipped.
    pub optimizations: Result<String, String>,
}

/// The cumulative `--optimizations` list of every step; `accepts(name)` says
/// whether `--optimizations` knows a name (steps it refuses are skipped and left
/// out of the later lists).
pub fn plan(accepts: &dyn Fn(&str) -> bool) -> Vec<Planned> {
    let mut on: Vec<&str> = Vec::new();
    STEPS
        .iter()
        .map(|&step| {
            let optimizations = match step.name {
                "none" | "all" => Ok(step.name.to_string()),
                name if accepts(name) => {
                    on.push(name);
                    Ok(on.join(","))
                }
                name => Err(format!("--optimizations does not accept `{name}`")),
            };
            Planned {
                step,
                optimizations,
            }
        })
        .collect()
}

/// What to run.
#[derive(Debug, Clone)]
pub struct AblationConfig {
    /// The `palisade` binary.
    pub palisade: PathBuf,
    /// The CRS directory.
    pub crs: PathBuf,
    /// Corpora: (name, file).
    pub corpora: Vec<(String, PathBuf)>,
    /// Paranoia levels.
    pub paranoia: Vec<u8>,
    /// `--iterations` of each run (after its warm-up pass).
    pub iterations: usize,
    /// Pin each run to these CPUs.
    pub cpus: Option<Vec<usize>>,
}

/// One measured (or skipped) run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Run {
    /// Paranoia level.
    pub paranoia: u8,
    /// Corpus name.
    pub corpus: String,
    /// Step label.
    pub step: String,
    /// The `--optimizations` list (empty when skipped).
    pub optimizations: String,
    /// Requests timed.
    pub requests: u64,
    /// Mean µs per request.
    pub us_mean: f64,
    /// Median µs per request.
    pub us_p50: f64,
    /// 99th percentile µs per request.
    pub us_p99: f64,
    /// Requests blocked.
    pub blocked: u64,
    /// Why there are no figures (step skipped, run failed).
    pub skipped: Option<String>,
}

/// The whole ablation, as written to `results.json`.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Ablation {
    /// The command that produced it.
    pub command: String,
    /// `git describe` of the working tree.
    pub revision: String,
    /// Corpora: name and file.
    pub corpora: Vec<(String, String)>,
    /// `--iterations` of each run.
    pub iterations: usize,
    /// Notes for the report (how the corpora were made, the machine ...).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Every run, by paranoia level, corpus, step.
    pub runs: Vec<Run>,
}

/// Runs the ablation, calling `log` with a line per run.
pub fn run(cfg: &AblationConfig, accepts: &dyn Fn(&str) -> bool, log: &dyn Fn(&str)) -> Ablation {
    let planned = plan(accepts);
    for p in &planned {
        if let Err(why) = &p.optimizations {
            log(&format!("skipping step {}: {why}", p.step.label));
        }
    }
    let mut runs = Vec::new();
    for &paranoia in &cfg.paranoia {
        for (name, file) in &cfg.corpora {
            for p in &planned {
                let mut r = Run {
                    paranoia,
                    corpus: name.clone(),
                    step: p.step.label.to_string(),
                    optimizations: String::new(),
                    requests: 0,
                    us_mean: 0.0,
                    us_p50: 0.0,
                    us_p99: 0.0,
                    blocked: 0,
                    skipped: None,
                };
                match &p.optimizations {
                    Err(why) => r.skipped = Some(why.clone()),
                    Ok(list) => {
                        r.optimizations = list.clone();
                        if let Err(e) = measure(cfg, paranoia, file, list, &mut r) {
                            r.skipped = Some(e);
                        }
                        log(&match &r.skipped {
                            None => format!(
                                "PL{paranoia} {name} {:<10} {:<40} mean {:8.1} µs  p50 {:8.1} µs",
                                r.step, list, r.us_mean, r.us_p50
                            ),
                            Some(e) => format!("PL{paranoia} {name} {}: failed: {e}", r.step),
                        });
                    }
                }
                runs.push(r);
            }
        }
    }
    Ablation {
        command: String::new(),
        revision: String::new(),
        corpora: cfg
            .corpora
            .iter()
            .map(|(n, f)| (n.clone(), f.display().to_string()))
            .collect(),
        iterations: cfg.iterations,
        notes: Vec::new(),
        runs,
    }
}

/// One `palisade bench engine --json` run into `r`.
fn measure(
    cfg: &AblationConfig,
    paranoia: u8,
    corpus: &std::path::Path,
    optimizations: &str,
    r: &mut Run,
) -> Result<(), String> {
    let mut cmd = Command::new(&cfg.palisade);
    cmd.arg("bench")
        .arg("engine")
        .arg("--crs")
        .arg(&cfg.crs)
        .arg("--corpus")
        .arg(corpus)
        .arg("--paranoia")
        .arg(paranoia.to_string())
        .arg("--optimizations")
        .arg(optimizations)
        .arg("--iterations")
        .arg(cfg.iterations.to_string())
        .arg("--json");
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", cfg.palisade.display()))?;
    if let Some(cpus) = &cfg.cpus {
        // Best effort: an unpinned run is still a measurement.
        let _ = crate::compare::pin::pin_pid(child.id(), cpus);
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "exit {}: {}",
            out.status,
            err.lines().last().unwrap_or_default()
        ));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("reading its JSON: {e}"))?;
    let num = |k: &str| v.get(k).and_then(serde_json::Value::as_f64);
    r.us_mean = num("us_per_request_mean").ok_or("no us_per_request_mean")?;
    r.us_p50 = num("us_per_request_p50").ok_or("no us_per_request_p50")?;
    r.us_p99 = num("us_per_request_p99").unwrap_or(0.0);
    r.requests = num("requests").unwrap_or(0.0) as u64;
    r.blocked = num("blocked").unwrap_or(0.0) as u64;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_accumulate_and_skip_unknown_names() {
        let known = ["prefilter", "prune", "cache"];
        let p = plan(&|n| known.contains(&n));
        let lists: Vec<Result<String, String>> =
            p.iter().map(|p| p.optimizations.clone()).collect();
        assert_eq!(lists[0], Ok("none".into()));
        assert_eq!(lists[1], Ok("prune".into()));
        assert!(lists[2].as_ref().is_err_and(|e| e.contains("`memo`")));
        assert_eq!(lists[3], Ok("prune,prefilter".into()));
        assert_eq!(lists[4], Ok("prune,prefilter,cache".into()));
        assert!(lists[5].is_err());
        assert_eq!(lists[6], Ok("all".into()));
        let all = plan(&|_| true);
        assert_eq!(
            all[5].optimizations,
            Ok("prune,memo,prefilter,cache,order".into())
        );
    }
}
