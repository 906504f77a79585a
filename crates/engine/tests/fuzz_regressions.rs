//! Regression tests for bugs found by fuzzing (`fuzz/`, see `fuzz/README.md`): the
//! fuzz binaries run on large inputs (a small unit repeated), since libFuzzer's small
//! `-max_len` hides super-linear costs.
//!
//! Each test is named after its bug and builds the exact input from its unit. The
//! bugs are running times or memory far out of proportion to request bodies that fit
//! well within the CRS configuration's `SecRequestBodyLimit` (13107200 bytes; note that
//! `SecRequestBodyNoFilesLimit` is not enforced by the transaction either). Each test
//! asserts what the fix guarantees (an error, a bound on the output).

use engine::body::{parse_json, parse_multipart, parse_xml, MultipartLimits};
use engine::{Connection, Program, Transaction};

/// Runs one fuzz finding. These tests assert outcomes (errors, bounds), never
/// times: with the fixes each input takes milliseconds, and a return of the
/// super-linear behaviour shows as a test run that takes minutes.
fn run_input<T>(_what: &str, f: impl FnOnce() -> T) -> T {
    f()
}

fn repeat(prefix: &[u8], unit: impl Fn(usize) -> Vec<u8>, n: usize, suffix: &[u8]) -> Vec<u8> {
    let mut out = prefix.to_vec();
    for i in 0..n {
        out.extend_from_slice(&unit(i));
    }
    out.extend_from_slice(suffix);
    out
}

/// Multipart: a part header folded over many lines.
///
/// Unit: `" folded\r\n"` after `--B\r\nContent-Disposition: form-data; name=a\r\n`,
/// 200000 times (1800045 bytes), Content-Type `multipart/form-data; boundary=B`.
///
/// Root cause (`crates/engine/src/body/multipart.rs`, `Parser::part_header_line`,
/// header-folding branch, around lines 800-816): every folded line copies the whole
/// accumulated header value (`std::mem::take` + `extend` + `*value = folded.clone()` +
/// a fresh `line` with the whole value for `last_header_line`), and the
/// `folded.len() > MULTIPART_BUF_SIZE` check only records "Part header too long."
/// without stopping the parser, so the value keeps growing: O(n^2) in the number
/// of folded lines (20 s for 900 KB in a release build, 75 s for these 1.8 MB in a
/// debug build).
#[test]
fn multipart_folded_header_quadratic() {
    let body = repeat(
        b"--B\r\nContent-Disposition: form-data; name=a\r\n",
        |_| b" folded\r\n".to_vec(),
        200_000,
        b"",
    );
    assert_eq!(body.len(), 1_800_045);
    let result = run_input("folded multipart header", move || {
        parse_multipart(
            &body,
            b"multipart/form-data; boundary=B",
            &MultipartLimits::default(),
        )
    });
    assert!(result.flags.header_folding);
    assert!(result.error.is_some());
}

/// Multipart: one part with many distinct headers.
///
/// Unit: `"X{i}: y\r\n"` for i in 0..40000 after
/// `--B\r\nContent-Disposition: form-data; name=a\r\n`, then `\r\nv\r\n--B--\r\n`
/// (428947 bytes), Content-Type `multipart/form-data; boundary=B`.
///
/// Root cause (`crates/engine/src/body/multipart.rs`, `Parser::part_header_line`,
/// `if mpp.header(&name).is_some()` around line 848, with `Part::header` at line
/// 340): the duplicate-header check is a linear scan over the part's headers, so
/// a part with n distinct header names costs O(n^2) (v3 keeps them in a map).
#[test]
fn multipart_distinct_part_headers_quadratic() {
    let body = repeat(
        b"--B\r\nContent-Disposition: form-data; name=a\r\n",
        |i| format!("X{i}: y\r\n").into_bytes(),
        40_000,
        b"\r\nv\r\n--B--\r\n",
    );
    assert_eq!(body.len(), 428_947);
    let result = run_input("many distinct multipart part headers", move || {
        parse_multipart(
            &body,
            b"multipart/form-data; boundary=B",
            &MultipartLimits::default(),
        )
    });
    assert_eq!(result.args.len(), 1);
}

/// XML: one element with many attributes.
///
/// Unit: `"a{i}='1' "` for i in 0..50000 inside `<a ` ... `/>` (538895 bytes).
///
/// Root cause: `engine::body::xml::parse_xml` (`crates/engine/src/body/xml.rs`,
/// `try_parse`, `roxmltree::Document::parse_with_options` around line 123) hands
/// the body to roxmltree 0.21, whose duplicate-attribute check
/// (`resolve_attributes` in roxmltree's `src/parse.rs`) compares every attribute
/// with all previous ones of the element: O(k^2) for k attributes (71 s for a
/// 1 MB body with 100000 attributes in a release build), repeated up to 9 times by
/// the undeclared-prefix retry loop.
#[test]
fn xml_many_attributes_quadratic() {
    let body = repeat(b"<a ", |i| format!("a{i}='1' ").into_bytes(), 50_000, b"/>");
    assert_eq!(body.len(), 538_895);
    let parsed = run_input("element with many attributes", move || parse_xml(&body));
    assert!(parsed.is_err(), "refused by the shape limit");
}

/// The JSON body settings of the CRS base configuration (`ftw::crs_config`) and one
/// few CRS-like rules over ARGS_NAMES and ARGS (CRS has dozens: 942xxx, 941xxx,
/// 932xxx...).
const JSON_CONF: &str = r#"
SecRuleEngine On
SecRequestBodyAccess On
SecRequestBodyLimit 13107200
SecRequestBodyNoFilesLimit 131072
SecRequestBodyJsonDepthLimit 512
SecArgumentsLimit 1000
SecRule REQUEST_HEADERS:Content-Type "@rx ^application/json" "id:1,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=JSON"
SecRule ARGS_NAMES|ARGS "@rx (?i)union\s+select" "id:2,phase:2,t:none,t:urlDecodeUni,t:lowercase,pass,log"
SecRule ARGS_NAMES|ARGS "@rx <script" "id:3,phase:2,t:none,t:utf8toUnicode,t:urlDecodeUni,t:htmlEntityDecode,t:jsDecode,t:cssDecode,t:removeNulls,pass,log"
SecRule ARGS_NAMES|ARGS "@rx (?:;|\|)\s*cat\b" "id:4,phase:2,t:none,t:cmdLine,pass,log"
SecRule ARGS_NAMES|ARGS "@rx /etc/passwd" "id:5,phase:2,t:none,t:utf8toUnicode,t:urlDecodeUni,t:normalizePathWin,pass,log"
SecRule ARGS_NAMES|ARGS "@detectSQLi" "id:6,phase:2,t:none,t:utf8toUnicode,t:urlDecodeUni,t:removeNulls,pass,log"
SecRule ARGS_NAMES|ARGS "@detectXSS" "id:7,phase:2,t:none,t:utf8toUnicode,t:urlDecodeUni,t:htmlEntityDecode,t:jsDecode,t:cssDecode,t:removeNulls,pass,log"
SecRule ARGS_NAMES|ARGS "@pm select union sleep benchmark" "id:8,phase:2,t:none,t:replaceComments,t:compressWhitespace,t:lowercase,pass,log"
"#;

/// JSON: one long key over an array of 1000 numbers.
///
/// Input: `{"` + 100000 × `A` + `":[` + 999 × `1,` + `1]}` (102006 bytes), sent with
/// `Content-Type: application/json` (found by running the `transaction` fuzz binary on
/// large hand-made inputs: any key is repeated into many leaf names).
///
/// Root cause: `engine::body::json::parse_json` (`crates/engine/src/body/json.rs`,
/// `JsonParser::add_argument`, `let mut name = self.prefix.clone()` at line 508)
/// names every leaf with the full path of its parents' keys (`json.<key>.array_N`, as
/// v3), so one long key is copied into each of up to SecArgumentsLimit
/// argument names: the output is O(body length × SecArgumentsLimit) bytes (100 MB of
/// names here; 1 GB for a 1 MB body). The transaction then copies every name twice
/// more (`Transaction::add_args` into ARGS_POST and ARGS_POST_NAMES, name as key and
/// value, `crates/engine/src/transaction/mod.rs:359`) and every rule over ARGS / ARGS_NAMES
/// transforms and scans all of it: with the CRS (paranoia 2, release build) a 52 KB body
/// takes 6.7 s and 320 MB, a 12 KB body 1.3 s.
#[test]
fn json_long_key_amplified_into_every_argument_name() {
    let program = match Program::from_str("fuzz.conf", JSON_CONF) {
        Ok(p) => p,
        Err(e) => panic!("config: {e}"),
    };
    let body = repeat(b"{\"", |_| b"A".to_vec(), 100_000, b"\":[");
    let body = repeat(&body, |_| b"1,".to_vec(), 999, b"1]}");
    assert_eq!(body.len(), 102_006);
    let matched = run_input("JSON body with a long key", move || {
        let mut tx = Transaction::new(program, &Connection::default());
        tx.process_uri("/", "POST", "1.1");
        tx.add_request_header(b"Host", b"localhost");
        tx.add_request_header(b"Content-Type", b"application/json");
        tx.add_request_header(b"Content-Length", body.len().to_string().as_bytes());
        tx.process_request_headers();
        tx.append_request_body(&body);
        tx.process_request_body();
        tx.matched_rules().len()
    });
    assert_eq!(matched, 0);
}

/// JSON: the same amplification below a per-name length limit.
///
/// Input: `{"` + 8000 × `A` + `":[` + 999 × `1,` + `1]}` (10006 bytes), depth limit
/// 512, SecArgumentsLimit 1000 (the CRS base configuration).
///
/// Root cause: as [`json_long_key_amplified_into_every_argument_name`]; a limit on
/// the length of one name (8192 bytes) still lets a 10 KB body produce 8 MB of
/// argument names (1.35 s through the CRS, release build, before any fix). The
/// total size of the names has to be bounded relative to the body (here: at most
/// 16 times the body plus 64 KiB), or the body refused.
#[test]
fn json_argument_names_amplify_body() {
    let body = repeat(b"{\"", |_| b"A".to_vec(), 8000, b"\":[");
    let body = repeat(&body, |_| b"1,".to_vec(), 999, b"1]}");
    assert_eq!(body.len(), 10_006);
    let mut args = Vec::new();
    let _ = parse_json(&body, 512, 1000, &mut args);
    let names: usize = args.iter().map(|a| a.name.len()).sum();
    assert!(
        names <= 16 * body.len() + 65_536,
        "{} arguments with {names} bytes of names from a {}-byte body",
        args.len(),
        body.len()
    );
}

/// SecArgumentsLimit and the rule that reports going over it.
const ARGS_LIMIT_CONF: &str = r#"
SecRuleEngine On
SecRequestBodyAccess On
SecArgumentsLimit 1000
SecRule &ARGS_GET "@gt 1000" "id:1,phase:1,deny,status:403,msg:'ARGS_GET over SecArgumentsLimit'"
SecRule &ARGS "@gt 1000" "id:2,phase:2,deny,status:403,msg:'ARGS over SecArgumentsLimit'"
"#;

/// URL-encoded arguments: SecArgumentsLimit is not applied.
///
/// Input: a query string and an `application/x-www-form-urlencoded` body of
/// `a0=1&a1=1&...&a4999=1` (5000 arguments each). Found with the `transaction`
/// target's binary on large inputs: 100000 body arguments (889 KB) take 14 s and
/// 975 MB through the CRS (release build), although the CRS base configuration sets
/// `SecArgumentsLimit 1000` (1000 arguments: 62 ms).
///
/// Root cause: `Transaction::add_args` (`crates/engine/src/transaction/mod.rs`, called
/// from `process_uri` for ARGS_GET and from `parse_request_body` for URLENCODED and
/// MULTIPART ARGS_POST) pushes every argument; only the JSON processor receives the
/// limit. libmodsecurity v3 (`Transaction::addArgument`) skips, without an error,
/// every argument once ARGS holds SecArgumentsLimit of them, as the module docs of
/// `body::urlencoded` say the transaction does.
#[test]
fn arguments_limit_not_applied_to_urlencoded_args() {
    let program = match Program::from_str("fuzz.conf", ARGS_LIMIT_CONF) {
        Ok(p) => p,
        Err(e) => panic!("config: {e}"),
    };
    let args: Vec<String> = (0..5000).map(|i| format!("a{i}=1")).collect();
    let args = args.join("&");
    let mut tx = Transaction::new(program, &Connection::default());
    tx.process_uri(&format!("/?{args}"), "GET", "1.1");
    tx.add_request_header(b"Host", b"localhost");
    assert_eq!(
        tx.process_request_headers().cloned(),
        None,
        "phase 1: ARGS_GET holds more than SecArgumentsLimit arguments"
    );

    let program = match Program::from_str("fuzz.conf", ARGS_LIMIT_CONF) {
        Ok(p) => p,
        Err(e) => panic!("config: {e}"),
    };
    let mut tx = Transaction::new(program, &Connection::default());
    tx.process_uri("/", "POST", "1.1");
    tx.add_request_header(b"Host", b"localhost");
    tx.add_request_header(b"Content-Type", b"application/x-www-form-urlencoded");
    tx.process_request_headers();
    tx.append_request_body(args.as_bytes());
    assert_eq!(
        tx.process_request_body().cloned(),
        None,
        "phase 2: ARGS holds more than SecArgumentsLimit arguments"
    );
}

/// XML: nested elements, each declaring a namespace prefix.
///
/// Input: `<a xmlns:p{i}='u'>` for i in 0..3000, then 3000 × `</a>` (67890 bytes).
///
/// Root cause: as for [`xml_many_attributes_quadratic`], inside roxmltree 0.21
/// (`process_element` in its `src/parse.rs`, reached from `try_parse` in
/// `crates/engine/src/body/xml.rs`): every element copies the namespaces in scope from
/// its parent and checks each new one against all of them, so n nested declarations
/// cost O(n^3) (release build: 22 KB 0.3 s, 45 KB 1.7 s, 91 KB 13.5 s). Many
/// declarations on one element (`<a xmlns:p0='u0' xmlns:p1='u1' ...>`) are quadratic.
#[test]
fn xml_nested_namespace_declarations_cubic() {
    let mut body = repeat(
        b"",
        |i| format!("<a xmlns:p{i}='u'>").into_bytes(),
        3000,
        b"",
    );
    body = repeat(&body, |_| b"</a>".to_vec(), 3000, b"");
    assert_eq!(body.len(), 67_890);
    let parsed = run_input("nested namespace declarations", move || parse_xml(&body));
    assert!(parsed.is_err(), "refused by the shape limit");
}

/// XML: the nested namespace declarations of
/// [`xml_nested_namespace_declarations_cubic`], encoded as UTF-16LE with a BOM.
///
/// Input: `FF FE` + the UTF-16LE encoding of `<a xmlns:p{i}='u'>` for i in 0..3000
/// and 3000 × `</a>` (135782 bytes).
///
/// Root cause: `parse_xml` (`crates/engine/src/body/xml.rs`) runs the `check_shape`
/// pre-scan on the raw body, before `decode`; in UTF-16 every other byte is NUL, so
/// attribute names never read `xmlns` and the namespace limit is never reached, and
/// roxmltree's cubic namespace handling runs again (over 60 s). Fix: run the pre-scan
/// on the decoded text (`check_shape(text.as_bytes())` after `decode`).
#[test]
fn xml_utf16_bypasses_shape_check() {
    let mut text = String::new();
    for i in 0..3000 {
        text.push_str(&format!("<a xmlns:p{i}='u'>"));
    }
    text.push_str(&"</a>".repeat(3000));
    let mut body = vec![0xFF, 0xFE];
    for unit in text.encode_utf16() {
        body.extend_from_slice(&unit.to_le_bytes());
    }
    assert_eq!(body.len(), 135_782);
    let parsed = run_input("UTF-16 nested namespace declarations", move || {
        parse_xml(&body)
    });
    assert!(parsed.is_err(), "refused by the shape limit after decoding");
}
