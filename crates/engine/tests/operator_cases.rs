//! Operator behaviour as data, plus whole-CRS checks and a no-panic property.
//!
//! - `tests/data/operator/*.cases`: named cases run by one generic test that reports
//!   every failing case by name. Format: blocks separated by blank lines, one
//!   `key: value` per line (`#` lines are comments):
//!   - `case:` name (required, unique), `op:` operator name, `arg:` the argument
//!     verbatim (absent: empty) or `argx:` the argument with the escapes below,
//!     `input:` the value (with escapes);
//!   - `match: true|false`, or `error: invalid|unsupported|unknown` (the build must
//!     fail that way; `input`/`match` are then not used);
//!   - `cap0:` .. `cap9:` expected captures (evaluation then runs with captures),
//!     `ncaps: N` the expected number of captures (0: none), `dir: crs` to resolve
//!     data files in the CRS rules directory instead of the test data directory,
//!     `match_limit: N` for `SecPcreMatchLimit`.
//!
//!   Values are taken verbatim after `: ` (`arg` stays verbatim), with escapes: `\xHH` (any byte), `\n`,
//!   `\r`, `\t`, `\\`, `\s` (a space, for leading/trailing spaces).
//! - Every `@rx` pattern of CRS compiles with the linear engine (no fallback), every
//!   `@pmFromFile` of CRS loads, and every operator of CRS builds.
//! - No operator panics on arbitrary input.

#![allow(clippy::unwrap_used)] // tests fail by panicking

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use engine::operator::{build, Captures, OperatorEnv, OperatorError, RegexEngine};
use proptest::prelude::*;

fn data_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/operator"))
}

fn crs_dir() -> PathBuf {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/crs"));
    assert!(
        dir.join("rules").is_dir(),
        "the CRS test data is missing: expected {} (../shared beside the repository)",
        dir.display()
    );
    dir
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
        match b.get(i + 1) {
            Some(b'x') => {
                let hex = s
                    .get(i + 2..i + 4)
                    .ok_or_else(|| format!("short \\x escape in `{s}`"))?;
                out.push(u8::from_str_radix(hex, 16).map_err(|e| format!("`{s}`: {e}"))?);
                i += 4;
                continue;
            }
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b't') => out.push(b'\t'),
            Some(b's') => out.push(b' '),
            Some(b'\\') => out.push(b'\\'),
            _ => return Err(format!("unknown escape in `{s}`")),
        }
        i += 2;
    }
    Ok(out)
}

#[derive(Debug, Default)]
struct Case {
    file: String,
    fields: BTreeMap<String, String>,
}

impl Case {
    fn name(&self) -> String {
        format!(
            "{}:{}",
            self.file,
            self.fields.get("case").map_or("<unnamed>", String::as_str)
        )
    }
}

fn load_cases() -> Vec<Case> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cases"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let file = f.file_name().unwrap().to_string_lossy().into_owned();
        let mut cur = Case {
            file: file.clone(),
            ..Case::default()
        };
        for line in text.lines().chain(std::iter::once("")) {
            if line.starts_with('#') {
                continue;
            }
            if line.trim().is_empty() {
                if !cur.fields.is_empty() {
                    cases.push(std::mem::replace(
                        &mut cur,
                        Case {
                            file: file.clone(),
                            ..Case::default()
                        },
                    ));
                }
                continue;
            }
            let (k, v) = match line.split_once(": ") {
                Some((k, v)) => (k, v),
                None => (line.trim_end_matches(':'), ""),
            };
            let prev = cur.fields.insert(k.to_string(), v.to_string());
            assert!(prev.is_none(), "{file}: duplicate key `{k}` in a case");
        }
    }
    cases
}

fn run_case(case: &Case) -> Result<(), String> {
    let f = &case.fields;
    let op = f.get("op").ok_or("no `op`")?;
    let arg = match (f.get("arg"), f.get("argx")) {
        (Some(_), Some(_)) => return Err("both `arg` and `argx`".to_string()),
        (Some(a), None) => a.clone(),
        (None, Some(a)) => {
            String::from_utf8(unescape(a)?).map_err(|_| "the argument must be UTF-8".to_string())?
        }
        (None, None) => String::new(),
    };
    let mut env = OperatorEnv {
        rule_dir: data_dir(),
        ..OperatorEnv::default()
    };
    if f.get("dir").is_some_and(|d| d == "crs") {
        env.rule_dir = crs_dir().join("rules");
    }
    if let Some(l) = f.get("match_limit") {
        env.match_limit = l.parse().map_err(|e| format!("match_limit: {e}"))?;
    }
    let built = build(op, &arg, &env);
    // Built without libxml2, the XML validators are refused at load time, whatever
    // the case expects of them.
    if !cfg!(feature = "xml-validation") && matches!(op.as_str(), "validateDTD" | "validateSchema")
    {
        return match &built {
            Err(OperatorError::Unsupported(m)) if m.contains("xml-validation") => Ok(()),
            other => Err(format!(
                "without the xml-validation feature: expected an `unsupported` error, got {:?}",
                other.as_ref().err()
            )),
        };
    }
    if let Some(kind) = f.get("error") {
        return match (kind.as_str(), &built) {
            ("invalid", Err(OperatorError::InvalidArgument(m)))
            | ("unsupported", Err(OperatorError::Unsupported(m)))
            | ("unknown", Err(OperatorError::Unknown(m))) => {
                if m.is_empty() {
                    Err("empty error message".to_string())
                } else {
                    Ok(())
                }
            }
            (_, Err(e)) => Err(format!("expected a `{kind}` error, got {e:?}")),
            (_, Ok(o)) => Err(format!("expected a `{kind}` error, built {o:?}")),
        };
    }
    let op = built.map_err(|e| format!("build failed: {e}"))?;
    let input = unescape(f.get("input").ok_or("no `input`")?)?;
    let expected = match f.get("match").map(String::as_str) {
        Some("true") => true,
        Some("false") => false,
        other => return Err(format!("`match` must be true or false, not {other:?}")),
    };
    let want_caps = f.keys().any(|k| k.starts_with("cap") || k == "ncaps");
    let mut caps = Captures::default();
    let got = if want_caps {
        op.evaluate(&input, Some(&mut caps))
    } else {
        op.evaluate(&input, None)
    };
    if got != expected {
        return Err(format!("expected match={expected}, got {got}"));
    }
    // The result must not depend on whether captures are requested.
    let other = if want_caps {
        op.evaluate(&input, None)
    } else {
        op.evaluate(&input, Some(&mut Captures::default()))
    };
    if other != got {
        return Err("the result differs with and without captures".to_string());
    }
    for i in 0..10 {
        if let Some(v) = f.get(&format!("cap{i}")) {
            let want = unescape(v)?;
            match caps.get(i) {
                Some(g) if g == want.as_slice() => {}
                g => {
                    return Err(format!(
                        "cap{i}: expected {:?}, got {:?}",
                        String::from_utf8_lossy(&want),
                        g.map(String::from_utf8_lossy)
                    ))
                }
            }
        }
    }
    if let Some(n) = f.get("ncaps") {
        let n: usize = n.parse().map_err(|e| format!("ncaps: {e}"))?;
        if caps.len() != n {
            return Err(format!("expected {n} captures, got {}", caps.len()));
        }
    }
    Ok(())
}

#[test]
fn operator_cases() {
    let cases = load_cases();
    let mut failures = Vec::new();
    let mut names = BTreeSet::new();
    let mut per_op: BTreeMap<String, usize> = BTreeMap::new();
    for case in &cases {
        if !names.insert(case.name()) {
            failures.push(format!("{}: duplicate case name", case.name()));
        }
        if let Some(op) = case.fields.get("op") {
            *per_op.entry(op.to_ascii_lowercase()).or_default() += 1;
        }
        if let Err(e) = run_case(case) {
            failures.push(format!("{}: {e}", case.name()));
        }
    }
    // Every operator of the names table has cases; implemented ones at least five.
    for (name, _) in seclang::names::OPERATORS {
        let n = per_op.get(&name.to_ascii_lowercase()).copied().unwrap_or(0);
        let needed = match build(name, "x", &OperatorEnv::default()) {
            Err(OperatorError::Unsupported(_)) => 1,
            _ => 5,
        };
        if n < needed {
            failures.push(format!(
                "operator `{name}`: {n} cases, at least {needed} needed"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} operator cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    eprintln!("{} operator cases passed", cases.len());
}

/// Every operator of every CRS rule (rules/*.conf), with its rule file's directory.
fn crs_operators() -> Vec<(String, String, PathBuf, Option<u32>)> {
    let dir = crs_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("rules"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "conf"))
        .collect();
    files.sort();
    let loaded = seclang::load_paths(&files);
    assert!(loaded.is_ok(), "{}", loaded.render_errors());
    let mut out = Vec::new();
    for item in &loaded.config.items {
        if let seclang::Directive::Rule(rule) = &item.directive {
            let file = loaded.sources.path(rule.operator.span.file);
            let rule_dir = file.parent().unwrap().to_path_buf();
            out.push((
                rule.operator.name.to_string(),
                rule.operator.argument.clone(),
                rule_dir,
                rule.id(),
            ));
        }
    }
    out
}

#[test]
fn every_crs_regex_compiles_with_the_linear_engine() {
    let mut count = 0;
    let mut problems = Vec::new();
    for (name, arg, dir, id) in crs_operators() {
        if name != "rx" || arg.contains("%{") {
            continue;
        }
        count += 1;
        let env = OperatorEnv {
            rule_dir: dir,
            ..OperatorEnv::default()
        };
        match build("rx", &arg, &env) {
            Ok(op) => {
                if op.regex_engine() != Some(RegexEngine::Linear) {
                    problems.push(format!(
                        "rule {id:?}: needs the fallback ({:?}): {arg}",
                        op.regex_engine()
                    ));
                }
            }
            Err(e) => problems.push(format!("rule {id:?}: {e}")),
        }
    }
    assert!(count > 250, "only {count} @rx patterns found in CRS");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    eprintln!("{count} CRS @rx patterns compile with the linear engine");
}

#[test]
fn every_crs_operator_builds_and_pm_from_file_loads() {
    let mut pmf = 0;
    let mut problems = Vec::new();
    for (name, arg, dir, id) in crs_operators() {
        if arg.contains("%{") {
            continue;
        }
        let env = OperatorEnv {
            rule_dir: dir,
            ..OperatorEnv::default()
        };
        match build(&name, &arg, &env) {
            Ok(op) => {
                if name == "pmFromFile" {
                    pmf += 1;
                    // Every data file has phrases that match themselves.
                    let data = std::fs::read_to_string(env.resolve(&arg)).unwrap();
                    let phrase = data
                        .lines()
                        .find(|l| !l.is_empty() && !l.starts_with('#') && l.is_ascii())
                        .unwrap();
                    if !op.evaluate(phrase.as_bytes(), None) {
                        problems.push(format!("rule {id:?}: `{phrase}` does not match {arg}"));
                    }
                }
            }
            Err(e) => problems.push(format!("rule {id:?} @{name} {arg}: {e}")),
        }
    }
    assert!(pmf >= 20, "only {pmf} @pmFromFile operators found in CRS");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Operators built once for the property test.
fn fuzz_operators() -> Vec<Box<dyn engine::operator::Operator>> {
    let env = OperatorEnv {
        rule_dir: data_dir(),
        ..OperatorEnv::default()
    };
    let specs: &[(&str, &str)] = &[
        ("rx", r"(?i)(a|b)+c?$"),
        ("rx", r"^(\d+)(?:x(\w*))?"),
        ("rx", r"(a)(?=b)"),
        ("rx", r"(\w)\1"),
        ("rxGlobal", r"(\d)"),
        ("pm", "abc bcd ( ) ?>"),
        ("pmFromFile", "phrases.data"),
        ("strmatch", "ab"),
        ("streq", "ab"),
        ("contains", "ab"),
        ("containsWord", "ab"),
        ("beginsWith", "ab"),
        ("endsWith", "ab"),
        ("within", "GET POST"),
        ("eq", "5"),
        ("ge", "-5"),
        ("gt", "5"),
        ("le", "5"),
        ("lt", "5"),
        ("ipMatch", "10.0.0.0/8,::1,2001:db8::/32"),
        ("ipMatchFromFile", "ips.data"),
        ("validateByteRange", "32-126"),
        ("validateUrlEncoding", ""),
        ("validateUtf8Encoding", ""),
        ("detectSQLi", ""),
        ("detectXSS", ""),
        ("unconditionalMatch", ""),
        ("noMatch", ""),
        ("verifyCC", r"\d{13,16}"),
        ("verifyCPF", r"\d{3}\.?\d{3}\.?\d{3}-?\d{2}"),
        ("verifySSN", r"\d{3}-?\d{2}-?\d{4}"),
        ("verifySVNR", r"\d{4} ?\d{6}"),
        ("rbl", "bl.example.org"),
    ];
    specs
        .iter()
        .map(|(n, a)| build(n, a, &env).unwrap_or_else(|e| panic!("@{n} {a}: {e}")))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_operator_panics(input in proptest::collection::vec(any::<u8>(), 0..200)) {
        thread_local! {
            static OPS: Vec<Box<dyn engine::operator::Operator>> = fuzz_operators();
        }
        OPS.with(|ops| {
            let mut caps = Captures::default();
            for op in ops {
                let a = op.evaluate(&input, None);
                let b = op.evaluate(&input, Some(&mut caps));
                assert_eq!(a, b, "{op:?}");
                assert!(caps.len() <= 10);
            }
        });
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Building `@rx`, `@pm` and `@validateByteRange` from arbitrary text never panics
    /// (it compiles or reports an error), and the result evaluates without panicking.
    #[test]
    fn building_from_arbitrary_arguments_never_panics(
        arg in "[a-c0-9\\\\()\\[\\]{}?*+|^$.:<>=!#'PQEgkxoubBdDwWsShHvVRNzZAG,\\- é|\"]{0,24}",
        input in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let env = OperatorEnv::default();
        for name in ["rx", "rxGlobal", "pm", "validateByteRange", "ipMatch", "verifyCC"] {
            if let Ok(op) = build(name, &arg, &env) {
                let mut caps = Captures::default();
                let a = op.evaluate(&input, None);
                let b = op.evaluate(&input, Some(&mut caps));
                prop_assert_eq!(a, b, "@{} {}", name, arg);
            }
        }
    }
}
