//! Serde model of the go-ftw test file format (ftw-tests-schema v2, plus
//! the few v3 input fields that are cheap to accept).
//!
//! The types mirror the YAML one to one and are deliberately dumb: defaults
//! (`GET`, `/`, `HTTP/1.1`, autocomplete on, ...) are applied by
//! [`crate::request`], and id fallbacks by [`crate::load`]. Unknown keys are
//! rejected so that a typo such as `expect_id:` fails loudly instead of
//! silently testing nothing, and so are duplicate mapping keys (the YAML
//! parser's default).

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// One YAML test file: metadata, the rule it targets and its test cases.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestFile {
    /// File metadata (author, description, ...); `meta:` with no value
    /// (null) is accepted as empty, as Go's YAML decoders do.
    #[serde(default)]
    pub meta: Option<Meta>,
    /// A top-level `author:` (a mis-indented `meta.author`, as in CRS's
    /// 932271.yaml). go-ftw ignores unknown keys; this one key is accepted
    /// so that every other unknown key can still be rejected.
    #[serde(default)]
    pub author: Option<String>,
    /// The rule the tests target; go-ftw falls back to the first number in
    /// the file name when absent (see [`crate::load`]).
    #[serde(default)]
    pub rule_id: Option<u32>,
    /// The test cases, in file order.
    #[serde(default)]
    pub tests: Vec<TestCase>,
}

/// File-level metadata.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// Authors of the file.
    #[serde(default)]
    pub author: Option<String>,
    /// Deprecated in the schema and ignored by go-ftw; kept for fidelity.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Name of the test file.
    #[serde(default)]
    pub name: Option<String>,
    /// Free-text description.
    #[serde(default)]
    pub description: Option<String>,
    /// Schema version string.
    #[serde(default)]
    pub version: Option<String>,
    /// Arbitrary grouping tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// One test case: an id and one or more stages run in order.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestCase {
    /// Id of the test relative to the file's `rule_id`; go-ftw uses the
    /// 1-based position when it is absent or zero.
    #[serde(default)]
    pub test_id: Option<u32>,
    /// Deprecated free-form title.
    #[serde(default)]
    pub test_title: Option<String>,
    /// What this test is about.
    #[serde(default)]
    pub desc: Option<String>,
    /// Arbitrary grouping tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The request/expectation pairs, run in order.
    #[serde(default)]
    pub stages: Vec<Stage>,
}

/// One request and the expectations on its outcome.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// Optional description of the stage.
    #[serde(default)]
    pub description: Option<String>,
    /// The request to send.
    pub input: Input,
    /// What must be observed.
    pub output: Output,
}

/// The request half of a stage.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Address to connect to (go-ftw default `localhost`); unused in-process.
    #[serde(default)]
    pub dest_addr: Option<String>,
    /// Port to connect to (go-ftw default 80); unused in-process.
    #[serde(default)]
    pub port: Option<u16>,
    /// `http` or `https` (go-ftw default `http`).
    #[serde(default)]
    pub protocol: Option<String>,
    /// Request target, sent verbatim (default `/`).
    #[serde(default)]
    pub uri: Option<String>,
    /// Several request targets for the same stage (schema v2.1); not used
    /// by the CRS suite and rejected by the request builder.
    #[serde(default)]
    pub uris: Option<Vec<String>>,
    /// Follow the redirect of the previous stage; rejected by the builder.
    #[serde(default)]
    pub follow_redirect: Option<bool>,
    /// HTTP version token, sent verbatim (default `HTTP/1.1`).
    #[serde(default)]
    pub version: Option<String>,
    /// Request method, sent verbatim (default `GET`).
    #[serde(default)]
    pub method: Option<String>,
    /// Headers as a YAML mapping, kept in file order. Values may be any
    /// scalar (`Content-Length: 22`); their source text is kept, `~` is "".
    #[serde(default)]
    pub headers: Option<HeaderList>,
    /// Headers as an explicit ordered list (schema v3 `ordered_headers`).
    #[serde(default)]
    pub ordered_headers: Option<Vec<HeaderTuple>>,
    /// Request body; may contain a Go template (see [`crate::template`]).
    #[serde(default)]
    pub data: Option<String>,
    /// Request body as base64.
    #[serde(default)]
    pub encoded_data: Option<String>,
    /// Carry cookies between stages; go-ftw does not implement it either.
    #[serde(default)]
    pub save_cookie: Option<bool>,
    /// Deprecated inverse of `autocomplete_headers`.
    #[serde(default)]
    pub stop_magic: Option<bool>,
    /// Let the framework add `Connection`, `Content-Type`, `Content-Length`
    /// and form-encode the body (default true).
    #[serde(default)]
    pub autocomplete_headers: Option<bool>,
    /// Base64 of the complete request, sent as-is; overrides other fields.
    #[serde(default)]
    pub encoded_request: Option<String>,
    /// Deprecated: the complete request as plain text, sent as-is.
    #[serde(default)]
    pub raw_request: Option<String>,
    /// Response the backend should send (Albedo); kept for fidelity.
    #[serde(default)]
    pub response: Option<ResponseSpec>,
    /// Use the test's `Host` header for go-ftw's marker requests.
    #[serde(default)]
    pub virtual_host_mode: Option<bool>,
}

/// A `{name, value}` entry of `ordered_headers`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderTuple {
    /// Header name, sent verbatim.
    pub name: String,
    /// Header value, sent verbatim.
    #[serde(deserialize_with = "scalar_text")]
    pub value: String,
}

/// Backend response description (schema v2.1 `response`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseSpec {
    /// Response headers.
    #[serde(default)]
    pub headers: Option<HeaderList>,
    /// Response status.
    #[serde(default)]
    pub status: Option<u16>,
    /// Plain body.
    #[serde(default)]
    pub body: Option<String>,
    /// Base64 body.
    #[serde(default)]
    pub encoded_body: Option<String>,
    /// Message for the backend's log.
    #[serde(default)]
    pub log_message: Option<String>,
}

/// The expectation half of a stage.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// Expected HTTP status: a single code (schema v2) or a list of
    /// acceptable codes (schema v1). `0` or absent means "any".
    #[serde(default)]
    pub status: Option<StatusExpectation>,
    /// Text that must occur in the full response.
    #[serde(default)]
    pub response_contains: Option<String>,
    /// Deprecated: regex that must match a log line.
    #[serde(default)]
    pub log_contains: Option<String>,
    /// Deprecated: regex that must not match any log line.
    #[serde(default)]
    pub no_log_contains: Option<String>,
    /// Expectations on the WAF log.
    #[serde(default)]
    pub log: LogExpectations,
    /// The request is expected to fail (no HTTP response).
    #[serde(default)]
    pub expect_error: Option<bool>,
    /// Retry the stage once when it fails (phase 5 log race in go-ftw).
    #[serde(default)]
    pub retry_once: Option<bool>,
    /// Exactly one rule (the single `expect_ids` entry) may match.
    #[serde(default)]
    pub isolated: Option<bool>,
}

/// Expectations on the WAF error log of one stage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogExpectations {
    /// All of these rule ids must have matched.
    #[serde(default)]
    pub expect_ids: Vec<u32>,
    /// None of these rule ids may have matched.
    #[serde(default)]
    pub no_expect_ids: Vec<u32>,
    /// This regex must match at least one log line.
    #[serde(default)]
    pub match_regex: Option<String>,
    /// This regex must not match any log line.
    #[serde(default)]
    pub no_match_regex: Option<String>,
}

/// Expected status: `status: 403` or `status: [200, 404]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusExpectation(pub Vec<u16>);

impl StatusExpectation {
    /// The acceptable codes, with go-ftw's "0 means no expectation" applied.
    pub fn codes(&self) -> impl Iterator<Item = u16> + '_ {
        self.0.iter().copied().filter(|&c| c != 0)
    }

    /// True when at least one non-zero code is expected.
    pub fn is_constraining(&self) -> bool {
        self.codes().next().is_some()
    }
}

impl<'de> Deserialize<'de> for StatusExpectation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StatusVisitor;
        impl<'de> Visitor<'de> for StatusVisitor {
            type Value = StatusExpectation;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an HTTP status code or a list of status codes")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                status_code(v).map(|c| StatusExpectation(vec![c]))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                let v = u64::try_from(v).map_err(|_| E::custom("status must not be negative"))?;
                self.visit_u64(v)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut codes = Vec::new();
                while let Some(code) = seq.next_element::<u64>()? {
                    codes.push(status_code(code)?);
                }
                Ok(StatusExpectation(codes))
            }
        }
        deserializer.deserialize_any(StatusVisitor)
    }
}

fn status_code<E: de::Error>(v: u64) -> Result<u16, E> {
    match u16::try_from(v) {
        Ok(c) if c <= 999 => Ok(c),
        _ => Err(E::custom(format!("status {v} is not an HTTP status code"))),
    }
}

/// Headers given as a YAML mapping, in file order.
///
/// go-ftw reads this mapping into a Go map and therefore loses the order;
/// it then sorts the names (see [`crate::request`]). The order is kept here
/// anyway so that tools can show the file as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderList(pub Vec<(String, String)>);

impl<'de> Deserialize<'de> for HeaderList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = HeaderList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of header names to values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(name) = map.next_key::<ScalarText>()? {
                    let value = map.next_value::<ScalarText>()?;
                    entries.push((name.0, value.0));
                }
                Ok(HeaderList(entries))
            }
        }
        deserializer.deserialize_map(ListVisitor)
    }
}

/// A scalar read as its text: strings as-is, numbers and booleans as the
/// YAML source spells them (serde-saphyr hands plain scalars to
/// `deserialize_string` verbatim), and null as "" (Go's zero value).
struct ScalarText(String);

impl<'de> Deserialize<'de> for ScalarText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text: Option<String> = Option::deserialize(deserializer)?;
        Ok(ScalarText(text.unwrap_or_default()))
    }
}

fn scalar_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    ScalarText::deserialize(deserializer).map(|s| s.0)
}

#[cfg(test)]
mod tests {
    // Tests may unwrap: a panic is the failure report.
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn output(yaml: &str) -> Output {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn status_single_and_list() {
        assert_eq!(
            output("status: 403").status,
            Some(StatusExpectation(vec![403]))
        );
        assert_eq!(
            output("status: [200, 404]").status,
            Some(StatusExpectation(vec![200, 404]))
        );
        assert!(!StatusExpectation(vec![0]).is_constraining());
        assert!(serde_saphyr::from_str::<Output>("status: 70000").is_err());
        assert!(serde_saphyr::from_str::<Output>("status: -1").is_err());
    }

    #[test]
    fn header_values_keep_source_text_and_order() {
        let input: Input = serde_saphyr::from_str(
            "headers:\n  Zeta: 1\n  Content-Length: 022\n  X: 1.10\n  Y: true\n  E: ~\n  F: \"\"\n",
        )
        .unwrap();
        let got = input.headers.unwrap().0;
        let want: Vec<(String, String)> = [
            ("Zeta", "1"),
            ("Content-Length", "022"),
            ("X", "1.10"),
            ("Y", "true"),
            ("E", ""),
            ("F", ""),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn unknown_keys_are_rejected() {
        assert!(serde_saphyr::from_str::<Output>("log:\n  expect_id: 1\n").is_err());
        assert!(serde_saphyr::from_str::<Input>("uri: /\nbogus: 1\n").is_err());
    }

    #[test]
    fn ordered_headers_parse() {
        let input: Input = serde_saphyr::from_str(
            "ordered_headers:\n  - name: A\n    value: 1\n  - name: A\n    value: x\n",
        )
        .unwrap();
        let h = input.ordered_headers.unwrap();
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].value, "1");
    }
}
