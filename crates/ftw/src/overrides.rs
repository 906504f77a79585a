//! The known-failures file (`tests/crs-overrides.yaml`) and the run verdict.
//!
//! Format: a YAML list; each entry names one case and says why it is
//! expected to fail. `reason` is mandatory and must not be blank; a case may
//! be listed once; no other keys are allowed. An empty file (or one with
//! only comments) lists nothing.
//!
//! ```yaml
//! # Cases Palisade is known to fail, with the reason.
//! - test: "920100-4"
//!   reason: "Apache rejects the request line with 400 before the WAF runs."
//! - test: "942100-3"
//!   reason: "libinjection fingerprint differs; tracked in #12."
//! ```
//!
//! Unlike CRS's per-platform files (`nginx-overrides.yaml`, which replace a
//! case's expected output with the platform's), an entry here does not
//! change what is checked: the case is still run and checked as written,
//! and the entry only records that it fails. The run fails when
//! * a case fails that is not listed (a regression), or
//! * a listed case passes (a stale entry: delete it), or
//! * a listed case does not exist in the suite (a typo or a removed test).
//!
//! Listed cases that were skipped by a filter are neither.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};

use crate::case_id::CaseId;
use crate::result::CaseStatus;

/// One known failure.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OverrideEntry {
    /// The case, `<rule_id>-<test_id>`.
    pub test: CaseId,
    /// Why the case fails; never blank.
    #[serde(deserialize_with = "non_blank")]
    pub reason: String,
}

/// All entries of an overrides file, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Overrides {
    /// The entries; case ids are unique.
    pub entries: Vec<OverrideEntry>,
}

impl Overrides {
    /// The entry for `id`, if listed.
    pub fn get(&self, id: CaseId) -> Option<&OverrideEntry> {
        self.entries.iter().find(|e| e.test == id)
    }
}

/// Why an overrides file was rejected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OverridesError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Malformed YAML, a bad case id, a blank reason or an unknown key.
    #[error("{}:{}: {message}", path.display(), line.map_or_else(|| "?".to_string(), |l| l.to_string()))]
    Invalid {
        /// The file (as given to [`parse_overrides`]).
        path: PathBuf,
        /// 1-based line, when known.
        line: Option<u64>,
        /// What is wrong.
        message: String,
    },
    /// A case is listed twice.
    #[error("{}: test {test} is listed more than once", path.display())]
    Duplicate {
        /// The file.
        path: PathBuf,
        /// The repeated case.
        test: CaseId,
    },
}

fn non_blank<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let reason = String::deserialize(deserializer)?;
    if reason.trim().is_empty() {
        return Err(serde::de::Error::custom(
            "reason must not be empty: say why the case fails",
        ));
    }
    Ok(reason)
}

/// Reads an overrides file.
pub fn load_overrides(path: &Path) -> Result<Overrides, OverridesError> {
    let text = std::fs::read_to_string(path).map_err(|source| OverridesError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_overrides(path, &text)
}

/// Parses the text of an overrides file; `path` is for messages only.
pub fn parse_overrides(path: &Path, text: &str) -> Result<Overrides, OverridesError> {
    let entries: Option<Vec<OverrideEntry>> =
        serde_saphyr::from_str(text).map_err(|e| OverridesError::Invalid {
            path: path.to_path_buf(),
            line: e.location().map(|l| l.line()),
            message: e.to_string(),
        })?;
    let entries = entries.unwrap_or_default();
    let mut seen = HashSet::new();
    for entry in &entries {
        if !seen.insert(entry.test) {
            return Err(OverridesError::Duplicate {
                path: path.to_path_buf(),
                test: entry.test,
            });
        }
    }
    Ok(Overrides { entries })
}

/// The outcome of a run once known failures are taken into account.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Failed and not listed: regressions.
    pub unexpected_failures: Vec<CaseId>,
    /// Listed and passed: entries to delete.
    pub stale_overrides: Vec<CaseId>,
    /// Listed but not a case of the suite.
    pub unknown_overrides: Vec<CaseId>,
    /// Listed and failed, as recorded.
    pub expected_failures: Vec<CaseId>,
}

impl Verdict {
    /// True when the run is acceptable.
    pub fn is_ok(&self) -> bool {
        self.unexpected_failures.is_empty()
            && self.stale_overrides.is_empty()
            && self.unknown_overrides.is_empty()
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for id in &self.unexpected_failures {
            writeln!(
                f,
                "unexpected failure: {id} (fix it, or list it in the overrides file with a reason)"
            )?;
        }
        for id in &self.stale_overrides {
            writeln!(
                f,
                "stale override: {id} passes now; remove it from the overrides file"
            )?;
        }
        for id in &self.unknown_overrides {
            writeln!(f, "unknown override: {id} is not a test case of the suite")?;
        }
        write!(
            f,
            "verdict: {} ({} known failures, {} unexpected failures, {} stale overrides, {} unknown overrides)",
            if self.is_ok() { "ok" } else { "FAILED" },
            self.expected_failures.len(),
            self.unexpected_failures.len(),
            self.stale_overrides.len(),
            self.unknown_overrides.len()
        )
    }
}

/// Computes the verdict. `results` must hold every case of the suite,
/// with filtered-out cases as [`CaseStatus::Skipped`], so that unknown
/// entries can be told from skipped ones.
pub fn verdict<I>(results: I, overrides: &Overrides) -> Verdict
where
    I: IntoIterator<Item = (CaseId, CaseStatus)>,
{
    let listed: HashMap<CaseId, &OverrideEntry> =
        overrides.entries.iter().map(|e| (e.test, e)).collect();
    let mut seen = HashSet::new();
    let mut v = Verdict::default();
    for (id, status) in results {
        seen.insert(id);
        match (status, listed.contains_key(&id)) {
            (CaseStatus::Failed, false) => v.unexpected_failures.push(id),
            (CaseStatus::Failed, true) => v.expected_failures.push(id),
            (CaseStatus::Passed, true) => v.stale_overrides.push(id),
            (CaseStatus::Passed, false) | (CaseStatus::Skipped, _) => {}
        }
    }
    v.unknown_overrides = overrides
        .entries
        .iter()
        .map(|e| e.test)
        .filter(|id| !seen.contains(id))
        .collect();
    v.unexpected_failures.sort();
    v.stale_overrides.sort();
    v.expected_failures.sort();
    v.unknown_overrides.sort();
    v
}

#[cfg(test)]
mod tests {
    // Tests may unwrap: a panic is the failure report.
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(text: &str) -> Result<Overrides, OverridesError> {
        parse_overrides(Path::new("tests/crs-overrides.yaml"), text)
    }

    fn id(s: &str) -> CaseId {
        s.parse().unwrap()
    }

    #[test]
    fn parses_entries() {
        let o = parse("# known\n- test: \"942100-1\"\n  reason: libinjection differs\n- test: 920100-4\n  reason: |\n    multi\n    line\n").unwrap();
        assert_eq!(o.entries.len(), 2);
        assert_eq!(o.entries[1].test, id("920100-4"));
        assert_eq!(
            o.get(id("942100-1")).unwrap().reason,
            "libinjection differs"
        );
    }

    #[test]
    fn empty_file_lists_nothing() {
        assert!(parse("# nothing yet\n").unwrap().entries.is_empty());
        assert!(parse("[]\n").unwrap().entries.is_empty());
    }

    #[test]
    fn reason_is_mandatory_and_non_blank() {
        for text in [
            "- test: 942100-1\n",
            "- test: 942100-1\n  reason: \"\"\n",
            "- test: 942100-1\n  reason: \"  \"\n",
            "- test: 942100-1\n  reason: ~\n",
        ] {
            let err = parse(text).unwrap_err();
            assert!(
                matches!(err, OverridesError::Invalid { .. }),
                "{text}: {err}"
            );
        }
        let err =
            parse("- test: 1-1\n  reason: x\n- test: 942100-1\n  reason: \"\"\n").unwrap_err();
        assert!(
            err.to_string().starts_with("tests/crs-overrides.yaml:4: "),
            "{err}"
        );
    }

    #[test]
    fn bad_ids_unknown_keys_and_duplicates_are_rejected() {
        assert!(parse("- test: 942100\n  reason: x\n").is_err());
        assert!(parse("- test: 942100-1\n  reason: x\n  stage: 1\n").is_err());
        assert!(parse("test: 942100-1\nreason: x\n").is_err());
        assert!(matches!(
            parse("- test: 1-1\n  reason: a\n- test: 1-1\n  reason: b\n"),
            Err(OverridesError::Duplicate { .. })
        ));
    }

    fn overrides(ids: &[&str]) -> Overrides {
        Overrides {
            entries: ids
                .iter()
                .map(|s| OverrideEntry {
                    test: id(s),
                    reason: "r".into(),
                })
                .collect(),
        }
    }

    #[test]
    fn verdict_classifies_every_case() {
        let results = vec![
            (id("1-1"), CaseStatus::Passed),
            (id("1-2"), CaseStatus::Failed),
            (id("1-3"), CaseStatus::Failed),
            (id("1-4"), CaseStatus::Passed),
            (id("1-5"), CaseStatus::Skipped),
        ];
        let v = verdict(results, &overrides(&["1-3", "1-4", "1-5", "9-9"]));
        assert_eq!(v.unexpected_failures, vec![id("1-2")]);
        assert_eq!(v.expected_failures, vec![id("1-3")]);
        assert_eq!(v.stale_overrides, vec![id("1-4")]);
        assert_eq!(v.unknown_overrides, vec![id("9-9")]);
        assert!(!v.is_ok());
        let text = v.to_string();
        assert!(text.contains("unexpected failure: 1-2"), "{text}");
        assert!(text.contains("stale override: 1-4"), "{text}");
        assert!(text.ends_with("verdict: FAILED (1 known failures, 1 unexpected failures, 1 stale overrides, 1 unknown overrides)"), "{text}");
    }

    #[test]
    fn verdict_ok_when_failures_are_all_listed() {
        let results = vec![
            (id("1-1"), CaseStatus::Passed),
            (id("1-2"), CaseStatus::Failed),
        ];
        assert!(verdict(results.clone(), &overrides(&["1-2"])).is_ok());
        assert!(!verdict(results, &overrides(&[])).is_ok());
    }

    #[test]
    fn listed_but_skipped_is_neither_stale_nor_unknown() {
        let v = verdict(vec![(id("1-1"), CaseStatus::Skipped)], &overrides(&["1-1"]));
        assert!(v.is_ok());
        assert!(v.expected_failures.is_empty());
    }
}
