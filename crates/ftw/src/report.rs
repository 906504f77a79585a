//! Summaries and the JSON report of a run.

use std::fmt;

use serde::Serialize;

use crate::overrides::Verdict;
use crate::result::{CaseResult, CaseStatus};

/// Counts of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed (known failures included).
    pub failed: usize,
    /// Cases not run.
    pub skipped: usize,
}

impl Summary {
    /// Counts `results`.
    pub fn of(results: &[CaseResult]) -> Self {
        let mut s = Summary::default();
        for r in results {
            match r.status {
                CaseStatus::Passed => s.passed += 1,
                CaseStatus::Failed => s.failed += 1,
                CaseStatus::Skipped => s.skipped += 1,
            }
        }
        s
    }
}

/// `N passed, N failed, N skipped`.
impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        )
    }
}

/// Everything about a run, for `--json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The counts.
    pub summary: Summary,
    /// The verdict against the overrides file, when one was used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// One entry per case, in suite order.
    pub cases: Vec<CaseResult>,
}

impl Report {
    /// Builds a report from results and an optional verdict.
    pub fn new(cases: Vec<CaseResult>, verdict: Option<Verdict>) -> Self {
        Report {
            summary: Summary::of(&cases),
            verdict,
            cases,
        }
    }

    /// The report as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        // Serializing plain structs, strings and integers cannot fail; the
        // fallback keeps the output valid JSON all the same.
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()))
    }

    /// One line per failed case: `942100-1 (path): reason`.
    pub fn failure_lines(&self) -> Vec<String> {
        self.cases
            .iter()
            .filter(|c| c.status == CaseStatus::Failed)
            .map(|c| {
                format!(
                    "{} ({}): {}",
                    c.id,
                    c.file.display(),
                    c.reason.as_deref().unwrap_or("failed")
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    // Tests may unwrap: a panic is the failure report.
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::result::StageResult;
    use crate::target::StageOutcome;

    fn case(id: &str, status: CaseStatus) -> CaseResult {
        CaseResult {
            id: id.parse().unwrap(),
            file: "t/x.yaml".into(),
            status,
            reason: (status == CaseStatus::Failed).then(|| "expected status 403, got 200".into()),
            stages: vec![StageResult {
                index: 0,
                passed: status == CaseStatus::Passed,
                retried: false,
                reason: None,
                outcome: Some(StageOutcome {
                    status: Some(200),
                    matched_ids: vec![942100],
                    ..StageOutcome::default()
                }),
            }],
        }
    }

    #[test]
    fn summary_line_is_exact() {
        let results = vec![
            case("1-1", CaseStatus::Passed),
            case("1-2", CaseStatus::Failed),
            case("1-3", CaseStatus::Skipped),
            case("1-4", CaseStatus::Passed),
        ];
        assert_eq!(
            Summary::of(&results).to_string(),
            "2 passed, 1 failed, 1 skipped"
        );
        assert_eq!(
            Summary::default().to_string(),
            "0 passed, 0 failed, 0 skipped"
        );
    }

    #[test]
    fn json_report_has_per_case_results() {
        let report = Report::new(
            vec![
                case("942100-1", CaseStatus::Passed),
                case("942100-2", CaseStatus::Failed),
            ],
            None,
        );
        let v: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(v["summary"]["passed"], 1);
        assert_eq!(v["summary"]["failed"], 1);
        assert_eq!(v["cases"][1]["id"], "942100-2");
        assert_eq!(v["cases"][1]["status"], "failed");
        assert_eq!(v["cases"][1]["reason"], "expected status 403, got 200");
        assert_eq!(
            v["cases"][0]["stages"][0]["outcome"]["matched_ids"][0],
            942100
        );
        assert!(v.get("verdict").is_none());
        assert_eq!(
            report.failure_lines(),
            ["942100-2 (t/x.yaml): expected status 403, got 200"]
        );
    }
}
