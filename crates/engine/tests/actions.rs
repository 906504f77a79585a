//! Every SecLang action (and the directives and variables they depend on), as data:
//! one generic runner over the case files in `tests/data/actions/*.cases`. Every
//! failing case is reported by name, with all its failed expectations.
//!
//! # Case format
//!
//! Blocks of `key: value` lines; a line starting with `#` outside a configuration is
//! a comment, blank lines are ignored.
//!
//! ```text
//! case: deny_with_status           the name (unique across all files); starts a case
//! conf:                            the SecLang configuration: every following line
//! SecRuleEngine On                 verbatim, up to a line that is exactly `end`
//! SecRule ARGS "@rx a" "id:1,deny,status:401"
//! end
//! error: text                      the configuration must be refused, the message
//!                                  containing this text (no requests then)
//! xfail: reason                    a known engine gap: the case states v3's
//!                                  behaviour and must currently FAIL (a passing
//!                                  xfail case fails the run, so it is removed once
//!                                  the gap is closed); reported by name with reason
//! request: GET /path?a=1 HTTP/1.1  starts a request (method, URI, version); all the
//!                                  requests of a case share one persistent store
//! client: 192.0.2.7                the client address (default 127.0.0.1)
//! header: Name: value              a request header (repeatable)
//! body: bytes                      request body (repeatable: lines are concatenated)
//! response: 200                    response status for phases 3-4 (default 200)
//! rheader: Name: value             a response header (repeatable)
//! rbody: bytes                     response body (repeatable, concatenated)
//! expect: none | deny STATUS | drop | redirect STATUS LOCATION
//! ids: 1 2 3                       logged matched rule ids in order (may be empty)
//! tx: key=value                    TX:key must have this value after the request
//! notx: key                        TX:key must not exist
//! col: ip/127.0.0.1 key=value      a persistent record in the store after logging
//! nocol: ip/127.0.0.1 key          the record must not have that key
//! mode: On | DetectionOnly | Off   the engine mode after the request
//! rule: ID field=value             a field of the matched rule ID: msg, data,
//!                                  severity, tags (comma separated), rev, ver,
//!                                  maturity, accuracy, phase, var (matched var name),
//!                                  value (matched value), disruptive
//! audit: yes | no                  whether the transaction is audit-relevant
//! parts: ABCZ                      the audit log parts in effect
//! auditjson: text                  the JSON audit record contains this text
//! noauditjson: text                the JSON audit record does not contain it
//! ```
//!
//! Every value after `: ` (and after `=` in `tx`, `col`, `rule`) takes escapes:
//! `\xHH` (any byte), `\n`, `\r`, `\t`, `\s` (a space), `\\`. The request line and
//! header names do too. The configuration is verbatim.
//!
//! Each request runs all five phases in order (`process_request_headers`, body,
//! `process_request_body`, response headers, response body, `process_logging`), as a
//! connector does; the engine itself skips the rest once an intervention is pending.

#![allow(clippy::unwrap_used)] // tests fail by panicking

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use engine::collection::{CollectionStore, MemoryStore};
use engine::{Connection, EngineMode, Intervention, Program, Transaction};

fn data_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/actions"))
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

fn unescape_str(s: &str) -> Result<String, String> {
    unescape(s).map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn show(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        match c {
            b'\\' => s.push_str("\\\\"),
            b' '..=b'~' => s.push(c as char),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    None,
    Deny(u16),
    Drop,
    Redirect(u16, String),
}

#[derive(Debug, Default)]
struct Request {
    method: String,
    client: Option<String>,
    uri: String,
    version: String,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    body: Vec<u8>,
    status: u16,
    rheaders: Vec<(Vec<u8>, Vec<u8>)>,
    rbody: Vec<u8>,
    expect: Option<Expect>,
    ids: Option<Vec<u32>>,
    tx: Vec<(String, Vec<u8>)>,
    notx: Vec<String>,
    col: Vec<(String, String, String, Vec<u8>)>,
    nocol: Vec<(String, String, String)>,
    mode: Option<EngineMode>,
    rule: Vec<(u32, String, String)>,
    audit: Option<bool>,
    parts: Option<String>,
    auditjson: Vec<(bool, String)>,
}

#[derive(Debug, Default)]
struct Case {
    file: String,
    line: usize,
    name: String,
    conf: String,
    error: Option<String>,
    xfail: Option<String>,
    requests: Vec<Request>,
}

fn split_kv(s: &str) -> Result<(&str, &str), String> {
    s.split_once('=')
        .ok_or_else(|| format!("`{s}` needs key=value"))
}

fn parse_header(v: &str) -> Result<(Vec<u8>, Vec<u8>), String> {
    let (n, val) = v
        .split_once(':')
        .ok_or_else(|| format!("header `{v}` needs `Name: value`"))?;
    Ok((unescape(n.trim())?, unescape(val.trim_start())?))
}

fn parse_file(file: &str, text: &str) -> Result<Vec<Case>, String> {
    let mut cases: Vec<Case> = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let at = || format!("{file}:{}", n + 1);
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = match line.split_once(':') {
            Some((k, v)) => (k.trim(), v.strip_prefix(' ').unwrap_or(v)),
            None => return Err(format!("{}: `{line}` is not `key: value`", at())),
        };
        if key == "case" {
            cases.push(Case {
                file: file.to_string(),
                line: n + 1,
                name: value.trim().to_string(),
                ..Case::default()
            });
            continue;
        }
        let case = cases
            .last_mut()
            .ok_or_else(|| format!("{}: `{key}` before any `case:`", at()))?;
        let err = |e: String| format!("{}: {e}", at());
        if key == "conf" {
            let mut conf = String::new();
            loop {
                let Some((_, l)) = lines.next() else {
                    return Err(format!("{}: `conf:` without `end`", at()));
                };
                if l == "end" {
                    break;
                }
                conf.push_str(l);
                conf.push('\n');
            }
            case.conf = conf;
            continue;
        }
        if key == "error" {
            case.error = Some(value.to_string());
            continue;
        }
        if key == "xfail" {
            case.xfail = Some(value.to_string());
            continue;
        }
        if key == "request" {
            let parts: Vec<&str> = value.split(' ').collect();
            let [method, uri, version] = parts[..] else {
                return Err(format!("{}: request needs METHOD URI VERSION", at()));
            };
            case.requests.push(Request {
                method: method.to_string(),
                uri: unescape_str(uri).map_err(err)?,
                version: version.to_string(),
                status: 200,
                ..Request::default()
            });
            continue;
        }
        let req = case
            .requests
            .last_mut()
            .ok_or_else(|| format!("{}: `{key}` before any `request:`", at()))?;
        match key {
            "client" => req.client = Some(value.trim().to_string()),
            "header" => req.headers.push(parse_header(value).map_err(err)?),
            "body" => req.body.extend(unescape(value).map_err(err)?),
            "response" => {
                req.status = value
                    .trim()
                    .parse()
                    .map_err(|e| err(format!("status: {e}")))?
            }
            "rheader" => req.rheaders.push(parse_header(value).map_err(err)?),
            "rbody" => req.rbody.extend(unescape(value).map_err(err)?),
            "expect" => {
                let w: Vec<&str> = value.split_whitespace().collect();
                let num = |s: Option<&&str>| -> Result<u16, String> {
                    s.ok_or_else(|| err("missing status".into()))?
                        .parse()
                        .map_err(|e| err(format!("status: {e}")))
                };
                req.expect = Some(match w.first().copied() {
                    Some("none") => Expect::None,
                    Some("deny") => Expect::Deny(num(w.get(1))?),
                    Some("drop") => Expect::Drop,
                    Some("redirect") => Expect::Redirect(
                        num(w.get(1))?,
                        unescape_str(w.get(2).copied().unwrap_or("")).map_err(err)?,
                    ),
                    _ => return Err(err(format!("bad expect `{value}`"))),
                });
            }
            "ids" => {
                let mut ids = Vec::new();
                for w in value.split_whitespace() {
                    ids.push(w.parse().map_err(|e| err(format!("id `{w}`: {e}")))?);
                }
                req.ids = Some(ids);
            }
            "tx" => {
                let (k, v) = split_kv(value).map_err(err)?;
                req.tx.push((k.to_string(), unescape(v).map_err(err)?));
            }
            "notx" => req.notx.push(value.trim().to_string()),
            "col" | "nocol" => {
                let (record, rest) = value
                    .split_once(' ')
                    .ok_or_else(|| err("needs `col/key member...`".into()))?;
                let (c, k) = record
                    .split_once('/')
                    .ok_or_else(|| err("record needs collection/key".into()))?;
                if key == "col" {
                    let (m, v) = split_kv(rest).map_err(err)?;
                    req.col.push((
                        c.to_string(),
                        k.to_string(),
                        m.to_string(),
                        unescape(v).map_err(err)?,
                    ));
                } else {
                    req.nocol
                        .push((c.to_string(), k.to_string(), rest.trim().to_string()));
                }
            }
            "mode" => {
                req.mode = Some(
                    EngineMode::parse(value.trim())
                        .ok_or_else(|| err(format!("bad mode `{value}`")))?,
                )
            }
            "rule" => {
                let (id, rest) = value
                    .split_once(' ')
                    .ok_or_else(|| err("rule needs `ID field=value`".into()))?;
                let id: u32 = id.parse().map_err(|e| err(format!("id: {e}")))?;
                let (f, v) = split_kv(rest).map_err(err)?;
                req.rule
                    .push((id, f.to_string(), unescape_str(v).map_err(err)?));
            }
            "audit" => req.audit = Some(value.trim() == "yes"),
            "parts" => req.parts = Some(value.trim().to_string()),
            "auditjson" | "noauditjson" => req
                .auditjson
                .push((key == "auditjson", unescape_str(value).map_err(err)?)),
            other => return Err(err(format!("unknown key `{other}`"))),
        }
    }
    Ok(cases)
}

fn intervention_of(i: Option<&Intervention>) -> Expect {
    match i {
        None => Expect::None,
        Some(Intervention::Deny { status, .. }) => Expect::Deny(*status),
        Some(Intervention::Drop { .. }) => Expect::Drop,
        Some(Intervention::Redirect {
            status, location, ..
        }) => Expect::Redirect(*status, location.clone()),
    }
}

/// Runs one case; returns its failed expectations.
fn run_case(case: &Case) -> Vec<String> {
    let mut fails = Vec::new();
    let program = Program::from_str(&format!("{}.conf", case.name), &case.conf);
    if let Some(want) = &case.error {
        match program {
            Ok(_) => fails.push(format!(
                "configuration loaded; expected an error with `{want}`"
            )),
            Err(e) if !e.message.contains(want.as_str()) => {
                fails.push(format!("error `{}` does not contain `{want}`", e.message))
            }
            Err(_) => {}
        }
        return fails;
    }
    let program = match program {
        Ok(p) => p,
        Err(e) => return vec![format!("configuration refused: {}", e.message)],
    };
    let store = Arc::new(MemoryStore::default());
    for (n, r) in case.requests.iter().enumerate() {
        let req = format!("request {}", n + 1);
        let dyn_store: Arc<dyn CollectionStore> = store.clone();
        let mut conn = Connection::default();
        if let Some(ip) = &r.client {
            conn.client_ip = ip.clone().into();
        }
        let mut tx = Transaction::with_store(Arc::clone(&program), &conn, Some(dyn_store));
        tx.process_uri(&r.uri, &r.method, &r.version);
        for (k, v) in &r.headers {
            tx.add_request_header(k, v);
        }
        tx.process_request_headers();
        tx.append_request_body(&r.body);
        tx.process_request_body();
        for (k, v) in &r.rheaders {
            tx.add_response_header(k, v);
        }
        tx.process_response_headers(r.status, "HTTP/1.1");
        tx.append_response_body(&r.rbody);
        tx.process_response_body();
        tx.process_logging();

        let got = intervention_of(tx.intervention());
        let want = r.expect.clone().unwrap_or(Expect::None);
        if got != want {
            fails.push(format!("{req}: intervention {got:?}, expected {want:?}"));
        }
        let ids: Vec<u32> = tx.matched_rules().iter().map(|m| m.id).collect();
        if let Some(want) = &r.ids {
            if &ids != want {
                fails.push(format!("{req}: matched ids {ids:?}, expected {want:?}"));
            }
        }
        for (k, v) in &r.tx {
            match tx.tx(k) {
                Some(got) if got == v.as_slice() => {}
                Some(got) => fails.push(format!(
                    "{req}: TX:{k} = `{}`, expected `{}`",
                    show(got),
                    show(v)
                )),
                None => fails.push(format!("{req}: TX:{k} unset, expected `{}`", show(v))),
            }
        }
        for k in &r.notx {
            if let Some(got) = tx.tx(k) {
                fails.push(format!("{req}: TX:{k} = `{}`, expected unset", show(got)));
            }
        }
        for (c, key, m, v) in &r.col {
            let rec = store.load(c, key);
            match rec.get(m) {
                Some(got) if got == v.as_slice() => {}
                got => fails.push(format!(
                    "{req}: {c}/{key} {m} = {:?}, expected `{}`",
                    got.map(show),
                    show(v)
                )),
            }
        }
        for (c, key, m) in &r.nocol {
            if let Some(got) = store.load(c, key).get(m) {
                fails.push(format!(
                    "{req}: {c}/{key} {m} = `{}`, expected unset",
                    show(got)
                ));
            }
        }
        if let Some(m) = r.mode {
            if tx.mode() != m {
                fails.push(format!("{req}: mode {:?}, expected {m:?}", tx.mode()));
            }
        }
        for (id, field, want) in &r.rule {
            let Some(m) = tx.matched_rules().iter().find(|m| m.id == *id) else {
                fails.push(format!("{req}: rule {id} not logged (for {field})"));
                continue;
            };
            let got = match field.as_str() {
                "msg" => m.msg.clone(),
                "data" => m.data.clone(),
                "severity" => m.severity.map(|s| s.to_string()).unwrap_or_default(),
                "tags" => m.tags.join(","),
                "rev" => m.rev.to_string(),
                "ver" => m.ver.to_string(),
                "maturity" => m.maturity.to_string(),
                "accuracy" => m.accuracy.to_string(),
                "phase" => m.phase.to_string(),
                "var" => m.matched_var_name.clone(),
                "value" => m.matched_var.clone(),
                "disruptive" => m.disruptive.to_string(),
                other => {
                    fails.push(format!("{req}: unknown rule field `{other}`"));
                    continue;
                }
            };
            if &got != want {
                fails.push(format!(
                    "{req}: rule {id} {field} = `{got}`, expected `{want}`"
                ));
            }
        }
        if let Some(a) = r.audit {
            if tx.audit_relevant() != a {
                fails.push(format!(
                    "{req}: audit relevant {}, expected {a}",
                    tx.audit_relevant()
                ));
            }
        }
        if !r.auditjson.is_empty() {
            let record = tx.audit_json();
            for (want, text) in &r.auditjson {
                if record.contains(text.as_str()) != *want {
                    fails.push(format!(
                        "{req}: the audit record {} `{text}`: {record}",
                        if *want { "lacks" } else { "contains" }
                    ));
                }
            }
        }
        if let Some(p) = &r.parts {
            if tx.audit_parts() != p {
                fails.push(format!(
                    "{req}: audit parts `{}`, expected `{p}`",
                    tx.audit_parts()
                ));
            }
        }
    }
    fails
}

fn load_cases() -> Vec<Case> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cases"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no case files in {}",
        data_dir().display()
    );
    let mut cases = Vec::new();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&f).unwrap();
        cases.extend(parse_file(&name, &text).unwrap_or_else(|e| panic!("{e}")));
    }
    cases
}

#[test]
fn action_cases() {
    let cases = load_cases();
    let mut names = BTreeSet::new();
    for c in &cases {
        assert!(
            names.insert(c.name.clone()),
            "duplicate case name `{}` ({}:{})",
            c.name,
            c.file,
            c.line
        );
        assert!(
            c.error.is_some() || !c.requests.is_empty(),
            "case `{}` ({}:{}) has no request and no expected error",
            c.name,
            c.file,
            c.line
        );
    }
    let mut failed = Vec::new();
    let mut xfailed = 0;
    for c in &cases {
        let fails = run_case(c);
        match (&c.xfail, fails.is_empty()) {
            (None, true) => {}
            (None, false) => failed.push(format!(
                "FAIL {} ({}:{}):\n    {}",
                c.name,
                c.file,
                c.line,
                fails.join("\n    ")
            )),
            (Some(reason), false) => {
                xfailed += 1;
                println!(
                    "expected failure {} ({}:{}): {reason}\n    {}",
                    c.name,
                    c.file,
                    c.line,
                    fails.join("\n    ")
                );
            }
            (Some(reason), true) => failed.push(format!(
                "FAIL {} ({}:{}): passes but is marked xfail ({reason}); remove the xfail",
                c.name, c.file, c.line
            )),
        }
    }
    println!(
        "action cases: {} passed, {} failed, {xfailed} expected failures",
        cases.len() - failed.len() - xfailed,
        failed.len()
    );
    assert!(
        failed.is_empty(),
        "{} of {} action cases failed:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
}

#[test]
fn the_format_reads_escapes_and_multiline_configurations() {
    let text = "case: a\nconf:\nSecRuleEngine On\nSecAction \"id:1\"\nend\nrequest: GET /%41 HTTP/1.1\nheader: X-A: \\x00b\\s\nbody: x\\ny\nids: 1\n";
    let cases = parse_file("t", text).unwrap();
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0].conf, "SecRuleEngine On\nSecAction \"id:1\"\n");
    let r = &cases[0].requests[0];
    assert_eq!(r.headers[0], (b"X-A".to_vec(), b"\x00b ".to_vec()));
    assert_eq!(r.body, b"x\ny");
    assert_eq!(r.ids, Some(vec![1]));
    assert!(parse_file("t", "case: b\nconf:\nno end\n").is_err());
}

/// Every action and every `ctl` option SecLang knows has at least one case.
#[test]
fn every_action_and_ctl_option_has_a_case() {
    let cases = load_cases();
    let confs: String = cases.iter().map(|c| c.conf.as_str()).collect();
    let mentioned = |needle: &str| {
        confs.match_indices(needle).any(|(at, _)| {
            let before = confs[..at].chars().next_back();
            let after = confs[at + needle.len()..].chars().next();
            matches!(before, Some('"' | ',' | '!')) && matches!(after, Some(':' | ',' | '"' | '='))
        })
    };
    let mut missing = Vec::new();
    for (name, _, _) in seclang::names::ACTIONS {
        if !mentioned(name) {
            missing.push(format!("action `{name}`"));
        }
    }
    for option in seclang::names::CTL_OPTIONS {
        if !confs.contains(&format!("ctl:{option}=")) {
            missing.push(format!("ctl option `{option}`"));
        }
    }
    assert!(missing.is_empty(), "no case uses: {}", missing.join(", "));
}
