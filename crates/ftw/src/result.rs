//! Per-case results of a run.

use std::path::PathBuf;

use serde::Serialize;

use crate::case_id::CaseId;
use crate::target::StageOutcome;

/// The result of one test case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CaseStatus {
    /// Every stage met its expectations.
    Passed,
    /// A stage did not meet its expectations, or could not be run.
    Failed,
    /// Not run (filtered out).
    Skipped,
}

/// One case's result with enough detail to debug it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseResult {
    /// `<rule_id>-<test_id>`.
    pub id: CaseId,
    /// The file the case came from.
    pub file: PathBuf,
    /// Passed, failed or skipped.
    pub status: CaseStatus,
    /// Why it failed (`stage N: ...`), absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The stages that were run, in order (empty when skipped).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageResult>,
}

/// One stage's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StageResult {
    /// 0-based stage index.
    pub index: usize,
    /// Whether the stage met its expectations.
    pub passed: bool,
    /// True when the stage failed once and was retried (`retry_once`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub retried: bool,
    /// Why it failed, absent when it passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the target observed (absent when no request could be built).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<StageOutcome>,
}
