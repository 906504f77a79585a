//! Following a server's log file as go-ftw does, and turning its lines into what
//! [`crate::check`] looks at.
//!
//! Two formats are understood, line by line:
//!
//! * Palisade's (ModSecurity's) JSON audit log, one record per line: each entry of
//!   `transaction.messages` becomes one ModSecurity-style error-log line
//!   (`ModSecurity: Warning. Matched "..." [file "..."] [line "..."] [id "942100"]
//!   [msg "..."] [data "..."] ...`, the layout of the engine's own log line), so
//!   that `match_regex` patterns written for Apache's error log apply;
//! * any text log (ModSecurity's error log from Apache or nginx): kept as it is,
//!   rule ids taken from `[id "N"]`.
//!
//! [`LogTail`] reads what was appended since the last read and finds marker lines
//! (a line containing a marker's unique token).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

/// Longest line kept; longer lines are cut (a record with a huge body).
const MAX_LINE: usize = 4 * 1024 * 1024;

/// Reads a growing log file from where it last stopped.
#[derive(Debug)]
pub struct LogTail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

impl LogTail {
    /// Follows `path` from its current end (the file may not exist yet: then from
    /// its start once it appears).
    pub fn at_end(path: &Path) -> LogTail {
        let offset = std::fs::metadata(path).map_or(0, |m| m.len());
        LogTail {
            path: path.to_path_buf(),
            offset,
            partial: Vec::new(),
        }
    }

    /// The complete lines appended since the last call. A file that shrank
    /// (rotated or truncated) is read again from its start.
    pub fn read_lines(&mut self) -> io::Result<Vec<String>> {
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        if len < self.offset {
            self.offset = 0;
            self.partial.clear();
        }
        if len == self.offset {
            return Ok(Vec::new());
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut fresh = Vec::new();
        (&mut file)
            .take(len - self.offset)
            .read_to_end(&mut fresh)?;
        self.offset += fresh.len() as u64;
        self.partial.extend_from_slice(&fresh);
        let mut lines = Vec::new();
        let mut start = 0;
        while let Some(i) = self.partial[start..].iter().position(|&b| b == b'\n') {
            let end = start + i;
            let line = &self.partial[start..end.min(start + MAX_LINE)];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            lines.push(String::from_utf8_lossy(line).into_owned());
            start = end + 1;
        }
        self.partial.drain(..start);
        if self.partial.len() > MAX_LINE {
            // A line without end that keeps growing: keep only its start.
            self.partial.truncate(MAX_LINE);
        }
        Ok(lines)
    }
}

/// The rule ids and error-log style lines of some raw log lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogEntries {
    /// Rule ids in log order (duplicates kept).
    pub ids: Vec<u32>,
    /// One line per message.
    pub lines: Vec<String>,
}

impl LogEntries {
    /// Adds one raw line of the log (a JSON audit record or a text line).
    pub fn push_raw(&mut self, raw: &str) {
        if raw.trim_start().starts_with('{') {
            if let Ok(v) = serde_json::from_str::<Value>(raw) {
                if let Some(tx) = v.get("transaction") {
                    self.push_record(tx);
                    return;
                }
            }
        }
        self.ids.extend(ids_in_text(raw));
        self.lines.push(raw.to_string());
    }

    fn push_record(&mut self, tx: &Value) {
        let text = |v: Option<&Value>| -> String {
            match v {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            }
        };
        let uri = text(tx.pointer("/request/uri"));
        let host = tx
            .pointer("/request/headers")
            .and_then(Value::as_object)
            .and_then(|h| {
                h.iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("host"))
                    .map(|(_, v)| text(Some(v)))
            })
            .unwrap_or_default();
        let unique_id = text(tx.get("unique_id"));
        let messages = tx
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for m in messages {
            let d = m.get("details").unwrap_or(&Value::Null);
            let id_text = text(d.get("ruleId"));
            if let Ok(id) = id_text.trim().parse::<u32>() {
                self.ids.push(id);
            }
            let mut line = String::from("ModSecurity: Warning. ");
            let matched = text(d.get("match"));
            if !matched.is_empty() {
                // As the engine's line: the `Matched "..."` text as it is (only
                // control characters escaped, so one message stays one line).
                line.push_str(&escape_controls(&matched));
                line.push_str("\" ");
            }
            let field = |line: &mut String, name: &str, value: &str| {
                line.push_str(&format!("[{name} \"{}\"] ", engine::audit::escape(value)));
            };
            field(&mut line, "file", &text(d.get("file")));
            field(&mut line, "line", &text(d.get("lineNumber")));
            field(&mut line, "id", &id_text);
            field(&mut line, "rev", &text(d.get("rev")));
            field(&mut line, "msg", &text(m.get("message")));
            field(&mut line, "data", &text(d.get("data")));
            field(&mut line, "severity", &text(d.get("severity")));
            field(&mut line, "ver", &text(d.get("ver")));
            field(&mut line, "maturity", &text(d.get("maturity")));
            field(&mut line, "accuracy", &text(d.get("accuracy")));
            if let Some(tags) = d.get("tags").and_then(Value::as_array) {
                for t in tags {
                    field(&mut line, "tag", &text(Some(t)));
                }
            }
            field(&mut line, "hostname", &host);
            field(&mut line, "uri", &uri);
            field(&mut line, "unique_id", &unique_id);
            line.truncate(line.trim_end().len());
            self.lines.push(line);
        }
    }
}

/// Control characters as `\xNN`, everything else as it is.
fn escape_controls(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                format!("\\x{:02x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Rule ids named `[id "N"]` in a text line.
pub fn ids_in_text(line: &str) -> Vec<u32> {
    static ID: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(re) = ID
        .get_or_init(|| Regex::new(r#"\[id "(\d+)"\]"#).ok())
        .as_ref()
    else {
        return Vec::new();
    };
    re.captures_iter(line)
        .filter_map(|c| c.get(1).and_then(|m| m.as_str().parse().ok()))
        .collect()
}

#[cfg(test)]
mod tests {
    // Tests may unwrap: a panic is the failure report.
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::Write;

    #[test]
    fn json_records_become_error_log_lines() {
        let rec = r#"{"transaction":{"unique_id":"U1","request":{"uri":"/?a=b","headers":{"Host":"localhost"}},"messages":[{"message":"Inbound Anomaly Score Exceeded (Total Score: 5)","details":{"match":"Matched \"Operator `Ge' with parameter `5' against variable `TX:BLOCKING_INBOUND_ANOMALY_SCORE' (Value: `5' )","ruleId":"949110","file":"REQUEST-949.conf","lineNumber":"222","data":"","severity":"0","ver":"OWASP_CRS/4","rev":"","tags":["anomaly-evaluation"],"maturity":"0","accuracy":"0"}}]}}"#;
        let mut e = LogEntries::default();
        e.push_raw(rec);
        e.push_raw(r#"[client 1] ModSecurity: Warning. [id "920350"] [msg "x"]"#);
        e.push_raw("{not json");
        assert_eq!(e.ids, [949110, 920350]);
        assert_eq!(e.lines.len(), 3);
        let l = &e.lines[0];
        assert!(
            l.starts_with("ModSecurity: Warning. Matched \"Operator `Ge'"),
            "{l}"
        );
        assert!(l.contains("(Value: `5' )\" [file"), "{l}");
        assert!(l.contains("[id \"949110\"] "), "{l}");
        assert!(
            l.contains("[msg \"Inbound Anomaly Score Exceeded (Total Score: 5)\"]"),
            "{l}"
        );
        assert!(l.contains("[tag \"anomaly-evaluation\"]"), "{l}");
        assert!(l.ends_with("[hostname \"localhost\"] [uri \"/?a=b\"] [unique_id \"U1\"]"));
    }

    #[test]
    fn tail_reads_only_complete_new_lines() {
        let dir = std::env::temp_dir().join(format!("ftw-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.log");
        std::fs::write(&path, "old\n").unwrap();
        let mut t = LogTail::at_end(&path);
        assert!(t.read_lines().unwrap().is_empty());
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"one\ntw").unwrap();
        assert_eq!(t.read_lines().unwrap(), ["one"]);
        f.write_all(b"o\r\n").unwrap();
        assert_eq!(t.read_lines().unwrap(), ["two"]);
        // Truncated: read again from the start.
        std::fs::write(&path, "x\n").unwrap();
        assert_eq!(t.read_lines().unwrap(), ["x"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
