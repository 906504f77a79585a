//! What a transaction records about matched rules, and its renderings: the
//! ModSecurity-style error-log line per rule and (in `audit_json`) the JSON audit
//! record.

use std::sync::Arc;

use serde::Serialize;

/// A rule that matched (and is logged), with the data ModSecurity logs.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MatchedRule {
    /// The rule id.
    pub id: u32,
    /// The phase it ran in.
    pub phase: u8,
    /// `msg`, expanded.
    pub msg: String,
    /// `logdata`, expanded.
    pub data: String,
    /// `severity` (0-7), if any.
    pub severity: Option<u8>,
    /// `tag`s.
    pub tags: Arc<[String]>,
    /// `rev`, `ver`, `maturity`, `accuracy` as given.
    pub rev: Arc<str>,
    /// `ver`.
    pub ver: Arc<str>,
    /// `maturity`.
    pub maturity: Arc<str>,
    /// `accuracy`.
    pub accuracy: Arc<str>,
    /// The file and line of the rule.
    pub file: Arc<str>,
    /// The line.
    pub line: u32,
    /// The variable that matched last (`ARGS:id`).
    pub matched_var_name: String,
    /// Its (transformed) value.
    pub matched_var: String,
    /// The operator and argument (`@rx ...`).
    pub operator: Arc<str>,
    /// Whether the rule's disruptive action was applied (engine On).
    pub disruptive: bool,
    /// Whether the match goes to the audit log (`auditlog`/`noauditlog`).
    pub auditlog: bool,
}

/// The parts of a rule's records that do not depend on the request: made once,
/// when the rule is compiled, and shared by every record of it (a logged match
/// copies no tag, file name or operator text; a CRS `@rx` argument is often
/// kilobytes long).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordParts {
    /// `tag`s.
    pub tags: Arc<[String]>,
    /// `rev` (empty when not given).
    pub rev: Arc<str>,
    /// `ver`.
    pub ver: Arc<str>,
    /// `maturity`.
    pub maturity: Arc<str>,
    /// `accuracy`.
    pub accuracy: Arc<str>,
    /// The rule's file.
    pub file: Arc<str>,
    /// The operator and argument as logged (`!@rx ...`).
    pub operator: Arc<str>,
}

impl RecordParts {
    /// The parts of a rule with metadata `meta`, written in `file`, whose
    /// operator is `@name argument` (negated: `!@name argument`).
    pub fn new(
        meta: &crate::rule::Meta,
        file: &str,
        (name, argument, negated): (&str, &str, bool),
    ) -> RecordParts {
        let text = |o: &Option<String>| Arc::from(o.as_deref().unwrap_or_default());
        RecordParts {
            tags: meta.tags.iter().cloned().collect(),
            rev: text(&meta.rev),
            ver: text(&meta.ver),
            maturity: text(&meta.maturity),
            accuracy: text(&meta.accuracy),
            file: Arc::from(file),
            operator: Arc::from(format!(
                "{}@{} {}",
                if negated { "!" } else { "" },
                name,
                argument
            )),
        }
    }
}

/// Severity names by level.
pub const SEVERITY_NAMES: [&str; 8] = [
    "EMERGENCY",
    "ALERT",
    "CRITICAL",
    "ERROR",
    "WARNING",
    "NOTICE",
    "INFO",
    "DEBUG",
];

impl MatchedRule {
    /// The ModSecurity-style message line:
    /// `ModSecurity: Warning. Matched "..." at ARGS:id. [file "..."] [line "..."] [id "942100"] [msg "..."] ...`
    pub fn log_line(&self, unique_id: &str, hostname: &str, uri: &str) -> String {
        let mut s = String::with_capacity(256);
        s.push_str("ModSecurity: Warning. ");
        s.push_str(&format!(
            "Matched \"Operator `{}' against variable `{}' (Value: `{}' )\" ",
            escape(&self.operator),
            escape(&self.matched_var_name),
            escape(&truncate(&self.matched_var, 100))
        ));
        s.push_str(&format!("[file \"{}\"] [line \"{}\"] [id \"{}\"] [rev \"{}\"] [msg \"{}\"] [data \"{}\"] [severity \"{}\"] [ver \"{}\"] [maturity \"{}\"] [accuracy \"{}\"]",
            escape(&self.file), self.line, self.id, escape(&self.rev), escape(&self.msg), escape(&self.data),
            self.severity.map_or(0, u32::from), escape(&self.ver), escape(&self.maturity), escape(&self.accuracy)));
        for t in self.tags.iter() {
            s.push_str(&format!(" [tag \"{}\"]", escape(t)));
        }
        s.push_str(&format!(
            " [hostname \"{}\"] [uri \"{}\"] [unique_id \"{}\"]",
            escape(hostname),
            escape(uri),
            escape(unique_id)
        ));
        s
    }
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The escaping of values in an error-log line: `"` and `\` escaped, control
/// characters as `\xNN` (also used by tools that rebuild such lines).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}
