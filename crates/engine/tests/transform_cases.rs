//! Data-driven behaviour tests for the SecLang transformations.
//!
//! Every file `tests/data/transform/<name>.txt` holds the cases of the
//! transformation `<name>` (its canonical spelling). A case is three lines:
//!
//! ```text
//! case: a short unique name
//! in: the input
//! out: the expected output
//! ```
//!
//! Lines starting with `#` and blank lines are ignored. After `in:` / `out:`
//! comes either nothing (the empty string) or one space and the value, written
//! with these escapes: `\\` (backslash), `\xHH` (any byte), `\n`, `\r`, `\t`,
//! `\0`. A line may not end with a space or a tab (write `\x20` / `\t`), so that
//! editors cannot silently change a case. One generic test runs every case and
//! reports every failure by file and case name.

use engine::transform::Transformation;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Minimum number of cases per transformation.
const MIN_CASES: usize = 6;

/// One named case.
struct Case {
    name: String,
    line: usize,
    input: Vec<u8>,
    expected: Vec<u8>,
}

/// Decodes the escaped form of a value.
fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut v = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            v.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'\\') => v.push(b'\\'),
            Some(b'n') => v.push(b'\n'),
            Some(b'r') => v.push(b'\r'),
            Some(b't') => v.push(b'\t'),
            Some(b'0') => v.push(0),
            Some(b'x') => {
                let hex = s.get(i + 2..i + 4).ok_or("truncated \\x escape")?;
                let byte = u8::from_str_radix(hex, 16)
                    .map_err(|_| format!("bad \\x escape `\\x{hex}`"))?;
                v.push(byte);
                i += 4;
                continue;
            }
            _ => return Err(format!("unknown escape at byte {i} of `{s}`")),
        }
        i += 2;
    }
    Ok(v)
}

/// Escapes bytes for failure messages (the same scheme as the data files).
fn escape(bytes: &[u8]) -> String {
    let mut s = String::new();
    let last = bytes.len().saturating_sub(1);
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            // Spaces at either end would be invisible in a failure message.
            b' ' if i == 0 || i == last => s.push_str("\\x20"),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            0x20..=0x7e => s.push(char::from(b)),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s
}

/// The value after `key:` on a line, if the line has that key.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(key)?.strip_prefix(':')?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

/// Parses one data file.
fn parse(text: &str) -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    let mut lines = text.lines().enumerate().map(|(n, l)| (n + 1, l));
    while let Some((n, line)) = lines.next() {
        if line.ends_with(' ') || line.ends_with('\t') {
            return Err(format!("line {n}: trailing whitespace (use \\x20 or \\t)"));
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name = field(line, "case").ok_or(format!("line {n}: expected `case:`"))?;
        let mut value = |key: &str| -> Result<Vec<u8>, String> {
            let (m, l) = lines
                .next()
                .ok_or(format!("line {n}: case `{name}` lacks `{key}:`"))?;
            if l.ends_with(' ') || l.ends_with('\t') {
                return Err(format!("line {m}: trailing whitespace (use \\x20 or \\t)"));
            }
            let raw = field(l, key).ok_or(format!("line {m}: expected `{key}:`"))?;
            unescape(raw).map_err(|e| format!("line {m}: {e}"))
        };
        let input = value("in")?;
        let expected = value("out")?;
        cases.push(Case {
            name: name.to_owned(),
            line: n,
            input,
            expected,
        });
    }
    Ok(cases)
}

/// The data directory.
fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/transform")
}

#[test]
fn transformation_cases_from_data_files() {
    let mut failures = Vec::new();
    let mut covered = Vec::new();
    let mut total = 0;
    let mut files: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "txt"));
    files.sort();
    for path in &files {
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = path
            .file_stem()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(t) = Transformation::from_name(&stem) else {
            failures.push(format!("{file}: `{stem}` is not a transformation"));
            continue;
        };
        if t.name() != stem {
            failures.push(format!(
                "{file}: name the file after the canonical `{}`",
                t.name()
            ));
        }
        covered.push(t);
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                failures.push(format!("{file}: {e}"));
                continue;
            }
        };
        let cases = match parse(&text) {
            Ok(cases) => cases,
            Err(e) => {
                failures.push(format!("{file}: {e}"));
                continue;
            }
        };
        if cases.len() < MIN_CASES {
            failures.push(format!(
                "{file}: only {} cases, want at least {MIN_CASES}",
                cases.len()
            ));
        }
        let mut names = std::collections::HashSet::new();
        for case in &cases {
            total += 1;
            let id = format!("{file}:{} [{}]", case.line, case.name);
            if !names.insert(case.name.as_str()) {
                failures.push(format!("{id}: duplicate case name"));
            }
            let mut out = b"stale buffer content".to_vec();
            let changed = t.apply(&case.input, &mut out);
            let actual: &[u8] = if changed { &out } else { &case.input };
            if actual != case.expected.as_slice() {
                failures.push(format!(
                    "{id}: t:{t}\n      in:       {}\n      expected: {}\n      actual:   {}",
                    escape(&case.input),
                    escape(&case.expected),
                    escape(actual)
                ));
            }
            if changed && out == case.input {
                failures.push(format!("{id}: apply returned true for an unchanged value"));
            }
            if !changed && !out.is_empty() {
                failures.push(format!("{id}: apply returned false but left output"));
            }
        }
    }
    for &t in Transformation::ALL {
        if !covered.contains(&t) {
            failures.push(format!(
                "no data file for t:{t} (expected {}.txt)",
                t.name()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} transformation cases failed:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
    assert!(total > 0, "no cases found in {}", data_dir().display());
}

#[test]
fn data_format_round_trips_escapes() {
    let all: Vec<u8> = (0..=255).collect();
    assert_eq!(unescape(&escape(&all)).ok(), Some(all));
    assert!(
        parse("case: x\nin: a \nout: a").is_err(),
        "trailing space must be rejected"
    );
    assert!(
        parse("case: x\nin: a").is_err(),
        "missing out must be rejected"
    );
    assert!(unescape("\\q").is_err());
    let cases = parse("# comment\n\ncase: empty\nin:\nout: \\x20\n").unwrap_or_default();
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0].input, b"");
    assert_eq!(cases[0].expected, b" ");
}
