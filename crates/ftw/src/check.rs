//! Comparing a [`StageOutcome`] with a stage's expected [`Output`].
//!
//! Semantics follow go-ftw's `checkResult` and `check/*.go`:
//! * `expect_error: true` passes exactly when the target reported an error,
//!   and then no other expectation is looked at (go-ftw returns early);
//! * an error that was not expected fails the stage;
//! * `status` (one code or a list, `0` = any) must contain the status;
//! * `response_contains` must be a substring of the full response;
//! * `log.match_regex` must match some log line, `log.no_match_regex` none
//!   (Go RE2 syntax, evaluated with the `regex` crate, which shares it);
//! * every `log.expect_ids` entry must be among the matched ids and no
//!   `log.no_expect_ids` entry may be;
//! * `isolated` requires exactly one `expect_ids` entry and exactly one
//!   distinct matched id.
//!
//! Differences, chosen to be stricter rather than silent: the deprecated
//! `log_contains`/`no_log_contains` are checked as extra regexes (go-ftw
//! drops them when `expect_ids`/`match_regex` are also set), and `isolated`
//! is checked in addition to, not instead of, the other log expectations.
//! All failing expectations are reported, not just the first.

use std::fmt;

use regex::Regex;

use crate::model::Output;
use crate::target::StageOutcome;

/// Why a stage did not meet its expectations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFailure {
    /// One human-readable line per unmet expectation.
    pub reasons: Vec<String>,
}

impl fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reasons.join("; "))
    }
}

impl std::error::Error for CheckFailure {}

/// Checks `outcome` against `expected`; `Ok(())` means the stage passed.
pub fn check_stage(expected: &Output, outcome: &StageOutcome) -> Result<(), CheckFailure> {
    let mut reasons = Vec::new();
    let log = &expected.log;

    if expected.isolated == Some(true) && log.expect_ids.len() != 1 {
        reasons.push(format!(
            "invalid test: 'isolated' needs exactly one expect_ids entry, found {}",
            log.expect_ids.len()
        ));
        return Err(CheckFailure { reasons });
    }

    if expected.expect_error == Some(true) {
        return match &outcome.error {
            Some(_) => Ok(()),
            None => Err(CheckFailure {
                reasons: vec![format!(
                    "expected an error, but got a response (status {})",
                    fmt_status(outcome.status)
                )],
            }),
        };
    }
    if let Some(error) = &outcome.error {
        return Err(CheckFailure {
            reasons: vec![format!("unexpected error: {error}")],
        });
    }

    if let Some(status) = expected.status.as_ref().filter(|s| s.is_constraining()) {
        let ok = outcome
            .status
            .is_some_and(|got| status.codes().any(|c| c == got));
        if !ok {
            let want: Vec<String> = status.codes().map(|c| c.to_string()).collect();
            reasons.push(format!(
                "expected status {}, got {}",
                want.join(" or "),
                fmt_status(outcome.status)
            ));
        }
    }

    if let Some(needle) = expected
        .response_contains
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        match &outcome.response {
            Some(response) if response.contains(needle) => {}
            Some(_) => reasons.push(format!("response does not contain {needle:?}")),
            None => reasons.push(format!(
                "response_contains {needle:?} set, but the target reports no response"
            )),
        }
    }

    let must_match = [
        ("match_regex", log.match_regex.as_deref()),
        ("log_contains", expected.log_contains.as_deref()),
    ];
    for (field, pattern) in must_match {
        let Some(pattern) = pattern.filter(|p| !p.is_empty()) else {
            continue;
        };
        match Regex::new(pattern) {
            Ok(re) if outcome.log.lines().any(|l| re.is_match(l)) => {}
            Ok(_) => reasons.push(format!("{field} {pattern:?} matches no log line")),
            Err(e) => reasons.push(format!("invalid {field} {pattern:?}: {e}")),
        }
    }
    let must_not_match = [
        ("no_match_regex", log.no_match_regex.as_deref()),
        ("no_log_contains", expected.no_log_contains.as_deref()),
    ];
    for (field, pattern) in must_not_match {
        let Some(pattern) = pattern.filter(|p| !p.is_empty()) else {
            continue;
        };
        match Regex::new(pattern) {
            Ok(re) => {
                if let Some(line) = outcome.log.lines().find(|l| re.is_match(l)) {
                    reasons.push(format!("{field} {pattern:?} matches log line {line:?}"));
                }
            }
            Err(e) => reasons.push(format!("invalid {field} {pattern:?}: {e}")),
        }
    }

    let missing: Vec<u32> = log
        .expect_ids
        .iter()
        .copied()
        .filter(|id| !outcome.matched_ids.contains(id))
        .collect();
    if !missing.is_empty() {
        reasons.push(format!(
            "expected rule(s) {} to match; matched: {}",
            fmt_ids(&missing),
            fmt_ids(&outcome.matched_ids)
        ));
    }
    let unexpected: Vec<u32> = log
        .no_expect_ids
        .iter()
        .copied()
        .filter(|id| outcome.matched_ids.contains(id))
        .collect();
    if !unexpected.is_empty() {
        reasons.push(format!(
            "rule(s) {} matched but must not",
            fmt_ids(&unexpected)
        ));
    }
    if expected.isolated == Some(true) {
        let mut distinct = outcome.matched_ids.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() != 1 {
            reasons.push(format!(
                "isolated test: exactly one rule may match; matched: {}",
                fmt_ids(&distinct)
            ));
        }
    }

    if reasons.is_empty() {
        Ok(())
    } else {
        Err(CheckFailure { reasons })
    }
}

fn fmt_status(status: Option<u16>) -> String {
    status.map_or_else(|| "no status".to_string(), |s| s.to_string())
}

fn fmt_ids(ids: &[u32]) -> String {
    if ids.is_empty() {
        return "none".to_string();
    }
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let parts: Vec<String> = sorted.iter().map(u32::to_string).collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    // Tests may unwrap: a panic is the failure report.
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn output(yaml: &str) -> Output {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn outcome(status: Option<u16>, ids: &[u32], log: &str) -> StageOutcome {
        StageOutcome {
            status,
            matched_ids: ids.to_vec(),
            log: log.to_string(),
            ..StageOutcome::default()
        }
    }

    fn reasons(expected: &str, got: &StageOutcome) -> String {
        check_stage(&output(expected), got).unwrap_err().to_string()
    }

    #[test]
    fn expect_ids_all_required() {
        let exp = "log:\n  expect_ids: [942100, 949110]";
        assert!(check_stage(&output(exp), &outcome(Some(200), &[949110, 942100, 1], "")).is_ok());
        let r = reasons(exp, &outcome(Some(200), &[942100], ""));
        assert_eq!(r, "expected rule(s) 949110 to match; matched: 942100");
    }

    #[test]
    fn no_expect_ids_none_allowed() {
        let exp = "log:\n  no_expect_ids: [920100]";
        assert!(check_stage(&output(exp), &outcome(Some(200), &[], "")).is_ok());
        assert_eq!(
            reasons(exp, &outcome(Some(200), &[920100, 920100], "")),
            "rule(s) 920100 matched but must not"
        );
    }

    #[test]
    fn status_single_list_and_zero() {
        assert!(check_stage(&output("status: 403"), &outcome(Some(403), &[], "")).is_ok());
        assert_eq!(
            reasons("status: 403", &outcome(Some(200), &[], "")),
            "expected status 403, got 200"
        );
        assert!(check_stage(&output("status: [200, 404]"), &outcome(Some(404), &[], "")).is_ok());
        assert_eq!(
            reasons("status: [200, 404]", &outcome(None, &[], "")),
            "expected status 200 or 404, got no status"
        );
        assert!(check_stage(&output("status: 0"), &outcome(Some(500), &[], "")).is_ok());
    }

    #[test]
    fn match_regex_is_per_line() {
        let log = "[id \"942100\"] first\nOutbound Anomaly Score Exceeded (Total Score: 5)";
        let exp = "log:\n  match_regex: 'Outbound Anomaly Score Exceeded \\(Total Score: '";
        assert!(check_stage(&output(exp), &outcome(Some(200), &[], log)).is_ok());
        // `^` anchors at each line, as go-ftw matches line by line.
        assert!(check_stage(
            &output("log:\n  match_regex: '^Outbound'"),
            &outcome(Some(200), &[], log)
        )
        .is_ok());
        assert!(reasons(exp, &outcome(Some(200), &[], "nothing")).contains("matches no log line"));
    }

    #[test]
    fn no_match_regex_reports_the_line() {
        let exp = "log:\n  no_match_regex: '\\[id \"\\d+\"\\]'";
        assert!(check_stage(&output(exp), &outcome(Some(200), &[], "clean\n")).is_ok());
        let r = reasons(exp, &outcome(Some(200), &[], "a\n[id \"1\"] x\n"));
        assert!(r.contains("[id \\\"1\\\"] x"), "{r}");
    }

    #[test]
    fn deprecated_log_contains_are_regexes() {
        let got = outcome(Some(200), &[], "id 920100 here");
        assert!(check_stage(&output("log_contains: 'id 9201\\d+'"), &got).is_ok());
        assert!(check_stage(&output("no_log_contains: 'id 9201\\d+'"), &got).is_err());
    }

    #[test]
    fn invalid_regex_fails_loudly() {
        let r = reasons("log:\n  match_regex: '('", &outcome(Some(200), &[], ""));
        assert!(r.starts_with("invalid match_regex"), "{r}");
    }

    #[test]
    fn expect_error_passes_only_on_error_and_skips_the_rest() {
        let exp = "expect_error: true\nlog:\n  expect_ids: [920430]";
        let mut got = outcome(None, &[], "");
        got.error = Some("connection reset".into());
        assert!(check_stage(&output(exp), &got).is_ok());
        assert_eq!(
            reasons(exp, &outcome(Some(400), &[920430], "")),
            "expected an error, but got a response (status 400)"
        );
    }

    #[test]
    fn unexpected_error_fails() {
        let mut got = outcome(None, &[], "");
        got.error = Some("boom".into());
        assert_eq!(reasons("{}", &got), "unexpected error: boom");
    }

    #[test]
    fn response_contains() {
        let mut got = outcome(Some(200), &[], "");
        assert!(reasons("response_contains: hi", &got).contains("no response"));
        got.response = Some("HTTP/1.1 200 OK\r\n\r\nhi there".into());
        assert!(check_stage(&output("response_contains: hi"), &got).is_ok());
        assert!(check_stage(&output("response_contains: bye"), &got).is_err());
    }

    #[test]
    fn isolated() {
        let exp = "isolated: true\nlog:\n  expect_ids: [934170]";
        assert!(check_stage(&output(exp), &outcome(Some(200), &[934170, 934170], "")).is_ok());
        assert!(
            reasons(exp, &outcome(Some(200), &[934170, 949110], "")).contains("exactly one rule")
        );
        let bad = "isolated: true\nlog:\n  expect_ids: [1, 2]";
        assert!(reasons(bad, &outcome(Some(200), &[1, 2], "")).starts_with("invalid test"));
    }

    #[test]
    fn all_failures_are_reported() {
        let exp = "status: 403\nlog:\n  expect_ids: [1]\n  no_expect_ids: [2]";
        let r = check_stage(&output(exp), &outcome(Some(200), &[2], "")).unwrap_err();
        assert_eq!(r.reasons.len(), 3, "{r}");
    }

    #[test]
    fn empty_expectations_pass() {
        assert!(check_stage(&output("{}"), &outcome(None, &[], "")).is_ok());
    }
}
