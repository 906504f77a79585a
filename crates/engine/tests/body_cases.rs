//! Data-driven tests of the request-data parsers in `engine::body`.
//!
//! Every `*.cases` file under `tests/data/body/` holds named cases for the parser
//! its stem names (`urlencoded`, `cookies`, `multipart`, `json`, `xml`). One test
//! runs them all and reports every failing case by file and name.
//!
//! # Case format
//!
//! ```text
//! # a comment
//! === case name
//! key: value
//! ```
//!
//! Values use escapes: `\r`, `\n`, `\t`, `\0`, `\s` (a space, handy at the end of
//! a line), `\xHH` and `\\`. Input keys (repeatable, concatenated in order):
//! `in:` (value as is), `line:` (value + CRLF), `lfline:` (value + LF).
//! For cookies, the byte `\x01` separates several Cookie headers.
//! Parameters: `sep:` (urlencoded separator), `ct:` (multipart Content-Type),
//! `extract:`, `file_limit:`, `max_parts:`, `max_file_content:`, `allow_partial:`
//! (multipart), `depth:`, `max_args:` (json).
//! Expectations:
//! * `arg: NAME => VALUE` (repeatable; the exact, ordered list of arguments /
//!   cookies) or `no_args:` for none;
//! * `invalid: true|false` (urlencoded: URLENCODED_ERROR);
//! * `error: TEXT` / `error: none` (exact processor error) or `error_contains: TEXT`;
//! * multipart: `flags: f1 f2 …` (the exact set of true flags, empty for none),
//!   `unmatched: N`, `strict: 0|1`, `file: FIELD => FILENAME => SIZE => CONTENT`
//!   (exact list), `header: PART => LINE` (exact list), `mname: V` and
//!   `mfilename: V` (exact lists of MULTIPART_NAME / MULTIPART_FILENAME values);
//! * xml: `xpath: EXPR` followed by `value: V` lines (exact result list),
//!   `bad_xpath: EXPR` (must be rejected when compiled with the case's bindings,
//!   and by `validate_xpath` and `select`); `xmlns: PREFIX=URI` (repeatable) binds
//!   a namespace prefix for every expression of the case, as the `xmlns` action.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use engine::body::{self, Arg, MultipartLimits};

#[derive(Debug, Default)]
struct Case {
    file: String,
    name: String,
    input: Vec<u8>,
    params: BTreeMap<String, String>,
    args: Option<Vec<(Vec<u8>, Vec<u8>)>>,
    /// Other expectations, in order: (key, raw value).
    expect: Vec<(String, String)>,
}

fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let e = *b.get(i + 1).ok_or("dangling backslash")?;
        i += 2;
        match e {
            b'r' => out.push(b'\r'),
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'0' => out.push(0),
            b's' => out.push(b' '),
            b'\\' => out.push(b'\\'),
            b'x' => {
                let hex = s.get(i..i + 2).ok_or("short \\x escape")?;
                out.push(u8::from_str_radix(hex, 16).map_err(|e| e.to_string())?);
                i += 2;
            }
            other => return Err(format!("unknown escape \\{}", other as char)),
        }
    }
    Ok(out)
}

fn show(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        match c {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(c as char),
            _ => {
                let _ = write!(s, "\\x{c:02x}");
            }
        }
    }
    s
}

fn parse_cases(file: &str, text: &str) -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    let mut cur: Option<Case> = None;
    for (lineno, line) in text.lines().enumerate() {
        let ctx = |e: String| format!("{file}:{}: {e}", lineno + 1);
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix("=== ") {
            if let Some(c) = cur.take() {
                cases.push(c);
            }
            cur = Some(Case {
                file: file.to_string(),
                name: name.trim().to_string(),
                ..Case::default()
            });
            continue;
        }
        let c = cur
            .as_mut()
            .ok_or_else(|| ctx("line outside a case".into()))?;
        let (key, value) = line
            .split_once(':')
            .ok_or_else(|| ctx(format!("expected `key: value`, got {line:?}")))?;
        let value = value.strip_prefix(' ').unwrap_or(value);
        match key {
            "in" => c.input.extend(unescape(value).map_err(ctx)?),
            "line" => {
                c.input.extend(unescape(value).map_err(ctx)?);
                c.input.extend_from_slice(b"\r\n");
            }
            "lfline" => {
                c.input.extend(unescape(value).map_err(ctx)?);
                c.input.push(b'\n');
            }
            "sep" | "ct" | "extract" | "file_limit" | "max_parts" | "max_file_content"
            | "allow_partial" | "depth" | "max_args" => {
                c.params.insert(key.to_string(), value.to_string());
            }
            "arg" => {
                let (n, v) = value
                    .split_once(" => ")
                    .ok_or_else(|| ctx("arg needs `NAME => VALUE`".into()))?;
                let pair = (unescape(n).map_err(ctx)?, unescape(v).map_err(ctx)?);
                c.args.get_or_insert_with(Vec::new).push(pair);
            }
            "no_args" => {
                c.args.get_or_insert_with(Vec::new);
            }
            "invalid" | "error" | "error_contains" | "flags" | "unmatched" | "strict" | "file"
            | "header" | "mname" | "mfilename" | "xpath" | "value" | "bad_xpath" | "xmlns" => {
                c.expect.push((key.to_string(), value.to_string()));
            }
            other => return Err(ctx(format!("unknown key {other:?}"))),
        }
    }
    if let Some(c) = cur.take() {
        cases.push(c);
    }
    Ok(cases)
}

fn param<T: std::str::FromStr>(c: &Case, key: &str, default: T) -> T {
    c.params
        .get(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn check_args(c: &Case, got: &[Arg], errs: &mut Vec<String>) {
    let Some(want) = &c.args else {
        return;
    };
    let got: Vec<(Vec<u8>, Vec<u8>)> = got
        .iter()
        .map(|a| (a.name.clone(), a.value.clone()))
        .collect();
    if &got != want {
        let fmt = |v: &[(Vec<u8>, Vec<u8>)]| {
            v.iter()
                .map(|(n, v)| format!("{} => {}", show(n), show(v)))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        errs.push(format!("args: want [{}], got [{}]", fmt(want), fmt(&got)));
    }
}

fn check_error(c: &Case, got: Option<&str>, errs: &mut Vec<String>) {
    for (k, v) in &c.expect {
        match k.as_str() {
            "error" => {
                let want = if v == "none" {
                    None
                } else {
                    Some(String::from_utf8_lossy(&unescape(v).unwrap_or_default()).into_owned())
                };
                if want.as_deref() != got {
                    errs.push(format!("error: want {want:?}, got {got:?}"));
                }
            }
            "error_contains" => {
                let want = String::from_utf8_lossy(&unescape(v).unwrap_or_default()).into_owned();
                if !got.is_some_and(|g| g.contains(&want)) {
                    errs.push(format!("error: want one containing {want:?}, got {got:?}"));
                }
            }
            _ => {}
        }
    }
}

fn run_urlencoded(c: &Case, errs: &mut Vec<String>) {
    let sep = c
        .params
        .get("sep")
        .and_then(|s| s.bytes().next())
        .unwrap_or(b'&');
    let mut out = Vec::new();
    let st = body::parse_urlencoded(&c.input, sep, &mut out);
    check_args(c, &out, errs);
    for (k, v) in &c.expect {
        if k == "invalid" && (v == "true") != st.invalid_encoding {
            errs.push(format!("invalid: want {v}, got {}", st.invalid_encoding));
        }
    }
}

fn run_cookies(c: &Case, errs: &mut Vec<String>) {
    // Several Cookie headers in one case are separated by the byte 0x01 (`\x01`),
    // each one parsed by its own call, as v3 does per header.
    let mut out = Vec::new();
    for header in c.input.split(|&b| b == 0x01) {
        body::parse_cookies(header, &mut out);
    }
    check_args(c, &out, errs);
}

fn run_json(c: &Case, errs: &mut Vec<String>) {
    let depth = param(c, "depth", body::JSON_DEPTH_LIMIT_DEFAULT);
    let max_args = param(c, "max_args", usize::MAX);
    let mut out = Vec::new();
    let r = body::parse_json(&c.input, depth, max_args, &mut out);
    check_args(c, &out, errs);
    check_error(c, r.err().as_deref(), errs);
}

fn run_multipart(c: &Case, errs: &mut Vec<String>) {
    let defaults = MultipartLimits::default();
    let limits = MultipartLimits {
        max_parts: param(c, "max_parts", defaults.max_parts),
        max_file_content: param(c, "max_file_content", defaults.max_file_content),
        file_limit: param(c, "file_limit", defaults.file_limit),
        extract_files: param(c, "extract", false),
        allow_partial: param(c, "allow_partial", false),
    };
    let ct = unescape(c.params.get("ct").map(String::as_str).unwrap_or("")).unwrap_or_default();
    let r = body::parse_multipart(&c.input, &ct, &limits);
    check_args(c, &r.args, errs);
    check_error(c, r.error.as_deref(), errs);
    let f = &r.flags;
    let all = [
        ("boundary_quoted", f.boundary_quoted),
        ("boundary_whitespace", f.boundary_whitespace),
        ("data_before", f.data_before),
        ("data_after", f.data_after),
        ("header_folding", f.header_folding),
        ("lf_line", f.lf_line),
        ("crlf_lf_lines", f.crlf_lf_lines),
        ("missing_semicolon", f.missing_semicolon),
        ("invalid_quoting", f.invalid_quoting),
        ("invalid_part", f.invalid_part),
        ("invalid_header_folding", f.invalid_header_folding),
        ("file_limit_exceeded", f.file_limit_exceeded),
        ("internal_error", f.internal_error),
    ];
    let got_flags: Vec<&str> = all.iter().filter(|(_, b)| *b).map(|(n, _)| *n).collect();
    let mut files_want = Vec::new();
    let mut headers_want = Vec::new();
    let mut names_want = Vec::new();
    let mut filenames_want = Vec::new();
    let (mut saw_files, mut saw_headers, mut saw_names, mut saw_filenames) =
        (false, false, false, false);
    for (k, v) in &c.expect {
        match k.as_str() {
            "flags" => {
                let mut want: Vec<&str> = v.split_whitespace().collect();
                want.sort_unstable();
                let mut got = got_flags.clone();
                got.sort_unstable();
                if want != got {
                    errs.push(format!("flags: want {want:?}, got {got:?}"));
                }
            }
            "unmatched" if v.parse::<u8>().ok() != Some(r.unmatched_boundary) => {
                errs.push(format!("unmatched: want {v}, got {}", r.unmatched_boundary));
            }
            "strict" if (v == "1") != r.strict_error() => {
                errs.push(format!("strict: want {v}, got {}", r.strict_error()));
            }
            "file" => {
                saw_files = true;
                files_want.push(v.clone());
            }
            "header" => {
                saw_headers = true;
                headers_want.push(v.clone());
            }
            "mname" => {
                saw_names = true;
                names_want.push(v.clone());
            }
            "mfilename" => {
                saw_filenames = true;
                filenames_want.push(v.clone());
            }
            _ => {}
        }
    }
    if saw_files {
        let got: Vec<String> = r
            .files
            .iter()
            .map(|f| {
                format!(
                    "{} => {} => {} => {}",
                    show(&f.field_name),
                    show(&f.filename),
                    f.size,
                    show(&f.content)
                )
            })
            .collect();
        let want: Vec<String> = files_want
            .iter()
            .map(|w| show(&unescape(w).unwrap_or_default()))
            .collect();
        if got != want {
            errs.push(format!("files: want {want:?}, got {got:?}"));
        }
    }
    if saw_headers {
        let got: Vec<String> = r
            .part_headers
            .iter()
            .map(|(n, l)| format!("{} => {}", show(n), show(l)))
            .collect();
        let want: Vec<String> = headers_want
            .iter()
            .map(|w| show(&unescape(w).unwrap_or_default()))
            .collect();
        if got != want {
            errs.push(format!("part headers: want {want:?}, got {got:?}"));
        }
    }
    for (saw, want, got, what) in [
        (saw_names, &names_want, &r.names, "MULTIPART_NAME"),
        (
            saw_filenames,
            &filenames_want,
            &r.filenames,
            "MULTIPART_FILENAME",
        ),
    ] {
        if saw {
            let got: Vec<String> = got.iter().map(|v| show(v)).collect();
            let want: Vec<String> = want
                .iter()
                .map(|w| show(&unescape(w).unwrap_or_default()))
                .collect();
            if got != want {
                errs.push(format!("{what}: want {want:?}, got {got:?}"));
            }
        }
    }
}

fn run_xml(c: &Case, errs: &mut Vec<String>) {
    let parsed = body::parse_xml(&c.input);
    check_error(c, parsed.as_ref().err().map(String::as_str), errs);
    let mut namespaces: Vec<(String, String)> = Vec::new();
    for (k, v) in &c.expect {
        if k == "xmlns" {
            match v.split_once('=') {
                Some((p, u)) => namespaces.push((p.to_string(), u.to_string())),
                None => errs.push(format!("`xmlns: {v}` needs PREFIX=URI")),
            }
        }
    }
    // Group `xpath:` with the `value:` lines that follow it.
    let mut groups: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
    for (k, v) in &c.expect {
        match k.as_str() {
            "xpath" => groups.push((v.clone(), Vec::new())),
            "value" => {
                if let Some(g) = groups.last_mut() {
                    g.1.push(unescape(v).unwrap_or_default());
                } else {
                    errs.push("`value:` before any `xpath:`".into());
                }
            }
            "bad_xpath" => {
                if body::XPath::compile(v, &namespaces).is_ok() {
                    errs.push(format!(
                        "XPath::compile({v:?}) accepted an unsupported expression"
                    ));
                }
                if body::validate_xpath(v).is_ok() {
                    errs.push(format!(
                        "validate_xpath({v:?}) accepted an unsupported expression"
                    ));
                }
                if let Ok(doc) = &parsed {
                    if doc.select(v, &mut Vec::new()).is_ok() {
                        errs.push(format!("select({v:?}) accepted an unsupported expression"));
                    }
                }
            }
            _ => {}
        }
    }
    for (xpath, want) in groups {
        let path = match body::XPath::compile(&xpath, &namespaces) {
            Ok(p) => p,
            Err(e) => {
                errs.push(format!("xpath {xpath:?}: {e}"));
                continue;
            }
        };
        let Ok(doc) = &parsed else {
            errs.push(format!("xpath {xpath:?}: no document"));
            continue;
        };
        let mut got = Vec::new();
        doc.evaluate(&path, &mut got);
        if namespaces.is_empty() {
            // Without bindings, the string API must agree.
            let mut again = Vec::new();
            if let Err(e) = doc.select(&xpath, &mut again) {
                errs.push(format!("select({xpath:?}): {e}"));
            } else if again != got {
                errs.push(format!("select({xpath:?}) differs from evaluate"));
            }
        }
        if got != want {
            let fmt = |v: &[Vec<u8>]| v.iter().map(|x| show(x)).collect::<Vec<_>>();
            errs.push(format!(
                "xpath {xpath:?}: want {:?}, got {:?}",
                fmt(&want),
                fmt(&got)
            ));
        }
    }
}

#[test]
fn body_parser_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/body");
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cases"))
        .collect();
    entries.sort();
    let mut failures = Vec::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for path in entries {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("")
            .to_string();
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let cases = match parse_cases(&stem, &text) {
            Ok(c) => c,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        for c in &cases {
            let mut errs = Vec::new();
            match stem.as_str() {
                "urlencoded" => run_urlencoded(c, &mut errs),
                "cookies" => run_cookies(c, &mut errs),
                "json" => run_json(c, &mut errs),
                "multipart" => run_multipart(c, &mut errs),
                "xml" => run_xml(c, &mut errs),
                other => errs.push(format!("no runner for {other}.cases")),
            }
            *counts.entry(stem.clone()).or_default() += 1;
            for e in errs {
                failures.push(format!("{}::{}: {e}", c.file, c.name));
            }
        }
    }
    for (parser, min) in [
        ("multipart", 10),
        ("json", 8),
        ("urlencoded", 8),
        ("cookies", 6),
        ("xml", 6),
    ] {
        let n = counts.get(parser).copied().unwrap_or(0);
        if n < min {
            failures.push(format!("{parser}: only {n} cases, want at least {min}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("body cases: {counts:?}");
}
