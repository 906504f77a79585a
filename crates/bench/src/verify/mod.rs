//! The equivalence check behind `palisade bench engine --verify`: the same corpus
//! through a program with the chosen optimisations and through one with every
//! optimisation off (plain sequential evaluation, the reference of the design's
//! correctness model), compared request by request.
//!
//! Each request runs in a fresh transaction through all five phases, with the
//! response the engine benchmark uses. Compared per request ([`diff::compare`]): the
//! decision (intervention and phase), the matched rules (ids in order, messages,
//! data, matched variables), the TX anomaly scores, the other TX variables and the
//! JSON audit record (with the unique id and time stamp normalised: the engine draws
//! them from a counter and the clock, with no hook to fix them).
//!
//! The optimised program keeps results across transactions (the value cache), so it
//! replays the whole corpus in order, `passes` times, as production would; the
//! second and later passes run on a warm cache. The reference has no state across
//! transactions: it is evaluated once per request, and later passes compare the
//! optimised outcome with the reference's digest (re-evaluating the reference only
//! to describe a difference).
//!
//! ```no_run
//! use bench::verify::{verify, VerifyConfig};
//! use engine::{Options, Program};
//!
//! let conf = "SecRuleEngine On\nSecRule ARGS \"@rx evil\" \"id:1,phase:1,deny\"\n";
//! let optimised = Program::from_str_with("c", conf, &Options::default()).unwrap();
//! let reference = Program::from_str_with("c", conf, &Options::none()).unwrap();
//! let corpus = bench::corpus::load(std::path::Path::new("corpus.jsonl")).unwrap();
//! let report = verify(&optimised, &reference, &corpus, &VerifyConfig::default());
//! assert_eq!(report.differences, 0, "{}", report.render());
//! ```

pub mod diff;
pub mod outcome;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use engine::Program;
use serde::Serialize;

use crate::corpus::Request;
use crate::engine_bench::response_body;
pub use diff::{Finding, Kind, Mode};
pub use outcome::Outcome;

/// How to run the check.
#[derive(Debug, Clone)]
pub struct VerifyConfig {
    /// Passes of the optimised program over the corpus (at least 1; 2 exercises
    /// the value cache's hits).
    pub passes: usize,
    /// Differences kept for the report (all are counted).
    pub keep: usize,
    /// Exact comparison, or the early-exit rule.
    pub mode: Mode,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            passes: 2,
            keep: 10,
            mode: Mode::Exact,
        }
    }
}

impl VerifyConfig {
    /// The comparison mode for an `--optimizations` list: early exit when it names
    /// `early_exit` (reordered when it also names `order` or `all`).
    pub fn mode_for(optimizations: &str) -> Mode {
        let names: Vec<&str> = optimizations.split(',').map(str::trim).collect();
        if names.contains(&"early_exit") {
            Mode::EarlyExit {
                reordered: names.iter().any(|n| *n == "order" || *n == "all"),
            }
        } else {
            Mode::Exact
        }
    }
}

/// A request whose optimised outcome differs from the reference's.
#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    /// 0-based index in the corpus.
    pub index: usize,
    /// 1-based pass.
    pub pass: usize,
    /// The request's name or class.
    pub name: String,
    /// `METHOD target`.
    pub request: String,
    /// What differs.
    pub findings: Vec<Finding>,
}

/// The result of a check.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyReport {
    /// Requests in the corpus.
    pub corpus_requests: usize,
    /// Passes of the optimised program.
    pub passes: usize,
    /// Optimised evaluations compared (corpus × passes).
    pub requests_checked: u64,
    /// Requests the reference blocked.
    pub reference_blocked: u64,
    /// Requests on which the reference matched (and logged) at least one rule.
    pub reference_matched: u64,
    /// Evaluations with at least one difference.
    pub differences: u64,
    /// Evaluations with a difference, per pass.
    pub differences_by_pass: Vec<u64>,
    /// Differences counted by kind (one evaluation may count under several).
    pub by_kind: BTreeMap<Kind, u64>,
    /// Rules named by differences, with counts.
    pub by_rule: BTreeMap<u32, u64>,
    /// The first differences, in corpus order.
    pub first: Vec<Difference>,
}

impl VerifyReport {
    /// Whether the optimised run was equivalent.
    pub fn ok(&self) -> bool {
        self.differences == 0
    }

    fn add(&mut self, d: Difference, keep: usize) {
        self.differences += 1;
        if self.differences_by_pass.len() < d.pass {
            self.differences_by_pass.resize(d.pass, 0);
        }
        self.differences_by_pass[d.pass - 1] += 1;
        for f in &d.findings {
            *self.by_kind.entry(f.kind).or_default() += 1;
            for id in &f.rule_ids {
                *self.by_rule.entry(*id).or_default() += 1;
            }
        }
        if self.first.len() < keep {
            self.first.push(d);
        }
    }

    /// The report as text: the first differences, then the summary.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for d in &self.first {
            let _ = writeln!(
                s,
                "difference: request #{} ({}, {}), pass {}",
                d.index, d.name, d.request, d.pass
            );
            for f in &d.findings {
                let ids = if f.rule_ids.is_empty() {
                    String::new()
                } else {
                    format!(" (rules {:?})", f.rule_ids)
                };
                let _ = writeln!(s, "  {}{ids}:", f.kind);
                for line in f.detail.lines() {
                    let _ = writeln!(s, "    {line}");
                }
            }
        }
        let _ = writeln!(
            s,
            "checked {} evaluations ({} requests x {} passes), reference blocked {} and matched rules on {} per pass",
            self.requests_checked,
            self.corpus_requests,
            self.passes,
            self.reference_blocked,
            self.reference_matched
        );
        if self.ok() {
            let _ = writeln!(s, "no differences");
        } else {
            let kinds: Vec<String> = self
                .by_kind
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            let _ = writeln!(
                s,
                "{} evaluations differ (per pass: {:?}): {}",
                self.differences,
                self.differences_by_pass,
                kinds.join(", ")
            );
            let mut rules: Vec<(&u32, &u64)> = self.by_rule.iter().collect();
            rules.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let top: Vec<String> = rules
                .iter()
                .take(20)
                .map(|(id, n)| format!("{id} ({n})"))
                .collect();
            if !top.is_empty() {
                let _ = writeln!(s, "rules involved: {}", top.join(", "));
            }
        }
        s
    }
}

/// Replays `corpus` through `optimised` (`config.passes` times, in order) and
/// through `reference` (once), and compares every optimised evaluation with the
/// reference's.
pub fn verify(
    optimised: &Arc<Program>,
    reference: &Arc<Program>,
    corpus: &[Request],
    config: &VerifyConfig,
) -> VerifyReport {
    verify_with_progress(optimised, reference, corpus, config, &mut |_, _| {})
}

/// [`verify`], calling `progress(pass, index)` after each request.
pub fn verify_with_progress(
    optimised: &Arc<Program>,
    reference: &Arc<Program>,
    corpus: &[Request],
    config: &VerifyConfig,
    progress: &mut dyn FnMut(usize, usize),
) -> VerifyReport {
    let passes = config.passes.max(1);
    let mut report = VerifyReport {
        corpus_requests: corpus.len(),
        passes,
        ..VerifyReport::default()
    };
    let mut digests = Vec::with_capacity(corpus.len());
    for pass in 1..=passes {
        for (index, req) in corpus.iter().enumerate() {
            let body = response_body(req.resp_len);
            let got = Outcome::observe(optimised, req, &body);
            let want = if pass == 1 {
                let want = Outcome::observe(reference, req, &body);
                digests.push(want.digest());
                report.reference_blocked += u64::from(want.decision.is_some());
                report.reference_matched += u64::from(!want.matched.is_empty());
                Some(want)
            } else if digests[index] != got.digest() {
                Some(Outcome::observe(reference, req, &body))
            } else {
                None
            };
            report.requests_checked += 1;
            if let Some(want) = want {
                let findings = diff::compare(&want, &got, config.mode);
                if !findings.is_empty() {
                    let d = Difference {
                        index,
                        pass,
                        name: req.name.clone(),
                        request: format!("{} {}", req.method, req.target),
                        findings,
                    };
                    report.add(d, config.keep);
                }
            }
            progress(pass, index);
        }
    }
    report
}
