//! The `<rule_id>-<test_id>` identity of a test case (go-ftw's `IdString`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Identity of one test case, written `942100-1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CaseId {
    /// The rule the case belongs to.
    pub rule_id: u32,
    /// The case within that rule's file(s).
    pub test_id: u32,
}

impl CaseId {
    /// Builds an id.
    pub fn new(rule_id: u32, test_id: u32) -> Self {
        CaseId { rule_id, test_id }
    }
}

impl fmt::Display for CaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.rule_id, self.test_id)
    }
}

/// Why a string is not a case id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CaseIdError {
    /// Not of the form `<digits>-<digits>`.
    #[error("`{0}` is not a test case id of the form <rule_id>-<test_id>, e.g. 942100-1")]
    Malformed(String),
}

impl FromStr for CaseId {
    type Err = CaseIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let malformed = || CaseIdError::Malformed(s.to_string());
        let (rule, test) = s.split_once('-').ok_or_else(malformed)?;
        let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
        if !digits(rule) || !digits(test) {
            return Err(malformed());
        }
        Ok(CaseId {
            rule_id: rule.parse().map_err(|_| malformed())?,
            test_id: test.parse().map_err(|_| malformed())?,
        })
    }
}

impl Serialize for CaseId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CaseId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    // Tests may unwrap: a panic is the failure report.
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn round_trip() {
        let id: CaseId = "942100-12".parse().unwrap();
        assert_eq!(id, CaseId::new(942100, 12));
        assert_eq!(id.to_string(), "942100-12");
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "942100",
            "942100-",
            "-1",
            "a-1",
            "1-b",
            "1-2-3",
            " 1-2",
            "+1-2",
            "1-99999999999",
        ] {
            assert!(bad.parse::<CaseId>().is_err(), "{bad:?} accepted");
        }
    }
}
