//! Running a suite (or part of it) against a [`Target`].
//!
//! Per case, stages run in order; a stage whose request cannot be built, or
//! whose outcome fails [`check_stage`], fails the case and the remaining
//! stages are not run (later stages may depend on earlier ones). A failing
//! stage with `retry_once: true` is run once more, as go-ftw does, and its
//! second result counts. Cases excluded by the [`Filter`] are reported as
//! [`CaseStatus::Skipped`], like go-ftw's include/exclude.

use std::path::Path;

use crate::case_id::CaseId;
use crate::check::check_stage;
use crate::load::{Case, Suite};
use crate::request::build_request;
use crate::result::{CaseResult, CaseStatus, StageResult};
use crate::target::{Target, TestRef};

/// Which cases to run: those whose rule is in `rules` or whose id is in
/// `tests`; everything when both are empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// `--rule 942100`: every case of these rules.
    pub rules: Vec<u32>,
    /// `--test 942100-3`: these cases.
    pub tests: Vec<CaseId>,
}

impl Filter {
    /// True when the filter selects nothing in particular (run all).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.tests.is_empty()
    }

    /// True when `id` is selected.
    pub fn matches(&self, id: CaseId) -> bool {
        self.is_empty() || self.rules.contains(&id.rule_id) || self.tests.contains(&id)
    }

    /// Selections that name nothing in `suite` (rules without cases and
    /// unknown case ids), for a "did you mean" style error.
    pub fn unmatched(&self, suite: &Suite) -> Vec<String> {
        let mut out: Vec<String> = self
            .rules
            .iter()
            .filter(|&&r| !suite.cases().any(|(_, c)| c.id.rule_id == r))
            .map(|r| format!("rule {r}"))
            .collect();
        out.extend(
            self.tests
                .iter()
                .filter(|&&t| suite.find(t).is_none())
                .map(|t| format!("test {t}")),
        );
        out
    }
}

/// Progress after one file has been processed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileProgress<'a> {
    /// The file just processed.
    pub path: &'a Path,
    /// 1-based position of the file.
    pub index: usize,
    /// Number of files in the suite.
    pub total: usize,
    /// Cases of this file that passed.
    pub passed: usize,
    /// Cases of this file that failed.
    pub failed: usize,
    /// Cases of this file that were skipped.
    pub skipped: usize,
}

/// Runs every case of `suite` selected by `filter` against `target`,
/// calling `progress` after each file. Returns one result per case of the
/// suite, in suite order (skipped ones included).
pub fn run_suite(
    suite: &Suite,
    filter: &Filter,
    target: &mut dyn Target,
    progress: &mut dyn FnMut(&FileProgress<'_>),
) -> Vec<CaseResult> {
    let mut results = Vec::with_capacity(suite.case_count());
    let total = suite.files.len();
    for (i, file) in suite.files.iter().enumerate() {
        let (mut passed, mut failed, mut skipped) = (0, 0, 0);
        for case in &file.cases {
            let result = if filter.matches(case.id) {
                run_case(&file.path, case, target)
            } else {
                CaseResult {
                    id: case.id,
                    file: file.path.clone(),
                    status: CaseStatus::Skipped,
                    reason: None,
                    stages: Vec::new(),
                }
            };
            match result.status {
                CaseStatus::Passed => passed += 1,
                CaseStatus::Failed => failed += 1,
                CaseStatus::Skipped => skipped += 1,
            }
            results.push(result);
        }
        progress(&FileProgress {
            path: &file.path,
            index: i + 1,
            total,
            passed,
            failed,
            skipped,
        });
    }
    results
}

/// Runs all stages of one case.
pub fn run_case(file: &Path, case: &Case, target: &mut dyn Target) -> CaseResult {
    let stage_count = case.stages.len();
    let mut stages = Vec::with_capacity(stage_count);
    let mut reason = None;
    for (index, stage) in case.stages.iter().enumerate() {
        let label = if stage_count > 1 {
            format!("stage {}/{}: ", index + 1, stage_count)
        } else {
            String::new()
        };
        let request = match build_request(&stage.input) {
            Ok(r) => r,
            Err(e) => {
                let why = format!("bad test input: {e}");
                reason = Some(format!("{label}{why}"));
                stages.push(StageResult {
                    index,
                    passed: false,
                    retried: false,
                    reason: Some(why),
                    outcome: None,
                });
                break;
            }
        };
        let test = TestRef {
            id: case.id,
            stage_index: index,
            stage_count,
            file,
        };
        let mut outcome = target.run(&test, stage, &request);
        let mut checked = check_stage(&stage.output, &outcome);
        let mut retried = false;
        if checked.is_err() && stage.output.retry_once == Some(true) {
            retried = true;
            outcome = target.run(&test, stage, &request);
            checked = check_stage(&stage.output, &outcome);
        }
        let failure = checked.err().map(|f| f.to_string());
        let passed = failure.is_none();
        if let Some(why) = &failure {
            reason = Some(format!("{label}{why}"));
        }
        stages.push(StageResult {
            index,
            passed,
            retried,
            reason: failure,
            outcome: Some(outcome),
        });
        if !passed {
            break;
        }
    }
    if stage_count == 0 {
        reason = Some("test case has no stages".to_string());
    }
    CaseResult {
        id: case.id,
        file: file.to_path_buf(),
        status: if reason.is_none() {
            CaseStatus::Passed
        } else {
            CaseStatus::Failed
        },
        reason,
        stages,
    }
}

#[cfg(test)]
mod tests {
    // Tests may unwrap: a panic is the failure report.
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::load::parse_file;
    use crate::model::Stage;
    use crate::request::RawRequest;
    use crate::target::StageOutcome;

    const FILE: &str = "rule_id: 942100\ntests:\n  - test_id: 1\n    stages:\n      - input: {uri: /a}\n        output: {log: {expect_ids: [942100]}}\n  - test_id: 2\n    stages:\n      - input: {uri: /b}\n        output: {log: {no_expect_ids: [942100]}}\n      - input: {uri: /a}\n        output: {log: {no_expect_ids: [942100]}}\n  - test_id: 3\n    stages:\n      - input: {uri: /a}\n        output: {retry_once: true, log: {expect_ids: [1]}}\n  - test_id: 4\n    stages:\n      - input: {data: x, encoded_request: R0VU}\n        output: {}\n";

    /// Matches 942100 when the uri is /a; matches 1 only on odd-numbered calls.
    #[derive(Default)]
    struct Fake {
        calls: Vec<String>,
    }

    impl Target for Fake {
        fn run(&mut self, test: &TestRef<'_>, _: &Stage, req: &RawRequest) -> StageOutcome {
            let uri = String::from_utf8(req.parsed.as_ref().unwrap().uri.clone()).unwrap();
            self.calls
                .push(format!("{}#{} {uri}", test.id, test.stage_index));
            let mut ids = Vec::new();
            if uri == "/a" {
                ids.push(942100);
            }
            if test.id.test_id == 3 && self.calls.len() % 2 == 1 {
                ids.push(1);
            }
            StageOutcome {
                status: Some(200),
                matched_ids: ids,
                ..StageOutcome::default()
            }
        }
    }

    fn suite() -> Suite {
        Suite {
            root: "t".into(),
            files: vec![parse_file(Path::new("t/942100.yaml"), FILE).unwrap()],
        }
    }

    #[test]
    fn runs_stages_retries_and_reports() {
        let mut fake = Fake::default();
        let mut progress = Vec::new();
        let results = run_suite(&suite(), &Filter::default(), &mut fake, &mut |p| {
            progress.push((p.index, p.total, p.passed, p.failed, p.skipped));
        });
        let status: Vec<(String, CaseStatus)> = results
            .iter()
            .map(|r| (r.id.to_string(), r.status))
            .collect();
        assert_eq!(
            status,
            vec![
                ("942100-1".to_string(), CaseStatus::Passed),
                ("942100-2".to_string(), CaseStatus::Failed),
                ("942100-3".to_string(), CaseStatus::Passed),
                ("942100-4".to_string(), CaseStatus::Failed),
            ]
        );
        assert_eq!(
            results[1].reason.as_deref(),
            Some("stage 2/2: rule(s) 942100 matched but must not")
        );
        assert!(results[2].stages[0].retried);
        assert!(results[3]
            .reason
            .as_deref()
            .unwrap()
            .starts_with("bad test input:"));
        assert_eq!(progress, vec![(1, 1, 2, 2, 0)]);
        // test 3 ran twice (retry), test 4 never reached the target.
        assert_eq!(fake.calls.len(), 5);
    }

    #[test]
    fn filter_by_rule_and_test() {
        let mut fake = Fake::default();
        let filter = Filter {
            rules: vec![],
            tests: vec!["942100-2".parse().unwrap()],
        };
        let results = run_suite(&suite(), &filter, &mut fake, &mut |_| {});
        let ran: Vec<String> = results
            .iter()
            .filter(|r| r.status != CaseStatus::Skipped)
            .map(|r| r.id.to_string())
            .collect();
        assert_eq!(ran, ["942100-2"]);
        let by_rule = Filter {
            rules: vec![942100],
            tests: vec![],
        };
        assert!(by_rule.matches("942100-9".parse().unwrap()));
        assert!(!by_rule.matches("942101-1".parse().unwrap()));
        let unknown = Filter {
            rules: vec![1],
            tests: vec!["942100-99".parse().unwrap()],
        };
        assert_eq!(unknown.unmatched(&suite()), ["rule 1", "test 942100-99"]);
    }
}
