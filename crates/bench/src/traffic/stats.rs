//! Measuring a corpus as the RuleCache paper's Table IV does: for each target, the
//! share of its occurrences covered by its `top` most frequent values.
//!
//! ARGS are the query-string arguments, urlencoded body fields and JSON body leaves
//! (strings as they are, numbers and booleans as their JSON text); COOKIES are the
//! values of the `Cookie` header's pairs; "whole requests" compares method, target,
//! headers and body.

use std::collections::HashMap;

use serde::Serialize;

use crate::corpus::Request;

/// The share of one target.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TargetShare {
    /// The target (`ARGS`, `ARGS_NAMES`, `COOKIES`, `COOKIES_NAMES`, `User-Agent`,
    /// `whole requests`).
    pub target: String,
    /// Occurrences of the target in the corpus.
    pub occurrences: u64,
    /// Distinct values.
    pub distinct: u64,
    /// Share of occurrences covered by the top values (0..=1).
    pub top_share: f64,
}

/// Counts values of the targets, request by request.
#[derive(Debug, Default)]
pub struct Counter {
    targets: [HashMap<String, u64>; 6],
}

const NAMES: [&str; 6] = [
    "ARGS",
    "ARGS_NAMES",
    "COOKIES",
    "COOKIES_NAMES",
    "User-Agent",
    "whole requests",
];

fn url_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Counter {
    /// A counter with no requests.
    pub fn new() -> Self {
        Self::default()
    }

    fn add(&mut self, target: usize, value: String) {
        *self.targets[target].entry(value).or_default() += 1;
    }

    fn add_form(&mut self, text: &str) {
        for pair in text.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            self.add(0, url_decode(v));
            self.add(1, url_decode(k));
        }
    }

    fn add_json(&mut self, name: &str, v: &serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    self.add_json(&format!("{name}.{k}"), v);
                }
            }
            serde_json::Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    self.add_json(&format!("{name}.array_{i}"), v);
                }
            }
            serde_json::Value::String(s) => {
                self.add(0, s.clone());
                self.add(1, name.to_string());
            }
            serde_json::Value::Null => {}
            other => {
                self.add(0, other.to_string());
                self.add(1, name.to_string());
            }
        }
    }

    /// Counts one request.
    pub fn add_request(&mut self, r: &Request) {
        if let Some((_, q)) = r.target.split_once('?') {
            self.add_form(q);
        }
        let ctype = r
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.to_ascii_lowercase())
            .unwrap_or_default();
        if ctype.starts_with("application/x-www-form-urlencoded") {
            self.add_form(&r.body);
        } else if ctype.starts_with("application/json") {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&r.body) {
                self.add_json("json", &v);
            }
        }
        for (k, v) in &r.headers {
            if k.eq_ignore_ascii_case("cookie") {
                for pair in v.split(';') {
                    let pair = pair.trim();
                    if pair.is_empty() {
                        continue;
                    }
                    let (n, val) = pair.split_once('=').unwrap_or((pair, ""));
                    self.add(2, val.to_string());
                    self.add(3, n.to_string());
                }
            } else if k.eq_ignore_ascii_case("user-agent") {
                self.add(4, v.clone());
            }
        }
        let mut whole = format!("{} {} {}\n", r.method, r.target, r.version);
        for (k, v) in &r.headers {
            whole.push_str(k);
            whole.push_str(": ");
            whole.push_str(v);
            whole.push('\n');
        }
        whole.push_str(&r.body);
        self.add(5, whole);
    }

    /// The `k` most frequent values of `target` (one of the names of
    /// [`Counter::shares`]) with their counts, most frequent first.
    pub fn top_values(&self, target: &str, k: usize) -> Vec<(String, u64)> {
        let Some(i) = NAMES.iter().position(|n| *n == target) else {
            return Vec::new();
        };
        let mut v: Vec<(String, u64)> = self.targets[i]
            .iter()
            .map(|(s, n)| (s.clone(), *n))
            .collect();
        v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v.truncate(k);
        v
    }

    /// The share covered by the `top` most frequent values of each target.
    pub fn shares(&self, top: usize) -> Vec<TargetShare> {
        NAMES
            .iter()
            .zip(&self.targets)
            .map(|(name, map)| {
                let occurrences: u64 = map.values().sum();
                let mut counts: Vec<u64> = map.values().copied().collect();
                counts.sort_unstable_by(|a, b| b.cmp(a));
                let covered: u64 = counts.iter().take(top).sum();
                TargetShare {
                    target: (*name).to_string(),
                    occurrences,
                    distinct: map.len() as u64,
                    top_share: if occurrences == 0 {
                        0.0
                    } else {
                        covered as f64 / occurrences as f64
                    },
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn req(target: &str, headers: &[(&str, &str)], body: &str) -> Request {
        Request {
            name: String::new(),
            method: "POST".into(),
            target: target.into(),
            version: "HTTP/1.1".into(),
            headers: headers
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            body: body.into(),
            resp_len: 64,
        }
    }

    #[test]
    fn counts_every_source() {
        let mut c = Counter::new();
        c.add_request(&req(
            "/x?a=1&b=hello+world%21",
            &[
                ("Content-Type", "application/json"),
                ("Cookie", "s=1; t=2"),
                ("User-Agent", "ua"),
            ],
            r#"{"n": 1, "o": {"p": "hello world!"}, "l": [true]}"#,
        ));
        c.add_request(&req("/y?a=2", &[("User-Agent", "ua")], ""));
        let s = c.shares(1);
        assert_eq!(s[0].target, "ARGS");
        // 1, "hello world!" (twice), 1 (JSON), true, 2
        assert_eq!(s[0].occurrences, 6);
        assert_eq!(s[0].distinct, 4);
        assert!((s[0].top_share - 2.0 / 6.0).abs() < 1e-9);
        assert_eq!(s[2].occurrences, 2);
        assert_eq!(s[4].occurrences, 2);
        assert!((s[4].top_share - 1.0).abs() < 1e-9);
        assert_eq!(s[5].distinct, 2);
    }

    #[test]
    fn decoding() {
        assert_eq!(url_decode("a+b%41%zz%"), "a bA%zz%");
    }
}
