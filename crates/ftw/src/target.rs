//! The seam between the runner and whatever evaluates requests: an
//! in-process engine today, an HTTP endpoint plus its error log later.

use std::path::Path;

use serde::Serialize;

use crate::case_id::CaseId;
use crate::model::Stage;
use crate::request::RawRequest;

/// Which stage of which test is being run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestRef<'a> {
    /// `<rule_id>-<test_id>`.
    pub id: CaseId,
    /// 0-based index of the stage within the case.
    pub stage_index: usize,
    /// Number of stages in the case (targets that keep state across
    /// stages, e.g. cookies, can reset after the last one).
    pub stage_count: usize,
    /// The file the case was loaded from.
    pub file: &'a Path,
}

/// What a target observed for one request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StageOutcome {
    /// HTTP status of the response, `None` when there was none.
    pub status: Option<u16>,
    /// Ids of the rules that matched, in any order, duplicates allowed.
    pub matched_ids: Vec<u32>,
    /// Error-log lines for this request (one per line), checked by
    /// `match_regex`/`no_match_regex`/`log_contains`/`no_log_contains`.
    pub log: String,
    /// Transport or protocol failure instead of a response (what
    /// `expect_error` expects), e.g. a request the server could not parse.
    pub error: Option<String>,
    /// The full raw response, when the target has one; only
    /// `response_contains` needs it.
    pub response: Option<String>,
}

/// Something that can evaluate a stage's request.
pub trait Target {
    /// Sends (or evaluates) `req` for `stage` of `test` and reports what
    /// happened. Must not panic; failures go into [`StageOutcome::error`].
    fn run(&mut self, test: &TestRef<'_>, stage: &Stage, req: &RawRequest) -> StageOutcome;
}

impl<T: Target + ?Sized> Target for &mut T {
    fn run(&mut self, test: &TestRef<'_>, stage: &Stage, req: &RawRequest) -> StageOutcome {
        (**self).run(test, stage, req)
    }
}
