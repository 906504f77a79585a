//! Lean rules (see `engine::lean`): rules over one arena list, a count or one TX
//! member are evaluated without the general target resolution, with the same
//! values in the same order, the same MATCHED_VAR(S) names and values, the same
//! effects and the same result-cache behaviour as plain evaluation; `ctl`
//! target removals send the rules they apply to back to the general path.

use std::sync::Arc;

use engine::{Connection, Options, Program, Transaction};

/// Every rule logs what it matched: `id name=value|...` (MATCHED_VARS in order).
const RULES: &str = "SecRuleEngine On\n\
SecRequestBodyAccess On\n\
SecResponseBodyAccess On\n\
SecResponseBodyMimeType text/html\n\
SecRule REQUEST_METHOD \"@rx ^(?:GET|HEAD)$\" \"id:1,phase:1,pass,log,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule REQUEST_HEADERS:X-Dup \"@rx .\" \"id:2,phase:1,pass,log,t:lowercase,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}',setvar:tx.n=+1\"\n\
SecRule &REQUEST_HEADERS:X-Dup \"@eq 2\" \"id:3,phase:1,pass,log,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule &REQUEST_HEADERS:Missing \"!@eq 1\" \"id:4,phase:1,pass,log,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule TX:n \"@ge 2\" \"id:5,phase:1,pass,log,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule &TX:n|&TX:absent \"@eq 1\" \"id:6,phase:1,pass,log,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule TX:N \"@rx ^0*2$\" \"id:7,phase:1,pass,log,t:length,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule REQUEST_BODY_LENGTH \"@eq 0\" \"id:8,phase:1,pass,log,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule REMOTE_USER \"@rx ^$\" \"id:9,phase:1,pass,log,msg:'unset %{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule REQUEST_HEADERS|REQUEST_URI \"@contains e\" \"id:10,phase:1,pass,log,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}',setvar:'tx.last=%{MATCHED_VARS}'\"\n\
SecRule REQUEST_HEADERS:User-Agent \"!@rx bot\" \"id:11,phase:1,pass,log,t:lowercase,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule REQUEST_URI \"@contains /x\" \"id:12,phase:1,pass,nolog,ctl:ruleRemoveTargetById=13;REQUEST_HEADERS:X-Dup\"\n\
SecRule REQUEST_HEADERS:X-Dup \"@rx .\" \"id:13,phase:2,pass,log,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule ARGS_POST:a \"@streq 1\" \"id:14,phase:2,pass,log,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule RESPONSE_BODY \"@contains secret\" \"id:15,phase:4,pass,log,msg:'%{MATCHED_VAR_NAME} found'\"\n\
SecRule RESPONSE_BODY \"!@contains secret\" \"id:16,phase:4,pass,log,msg:'%{MATCHED_VAR_NAME} clean'\"\n\
SecRule TX:n \"@gt 1\" \"id:17,phase:2,deny,status:403,log,msg:'deny %{MATCHED_VAR}'\"\n";

fn run(program: &Arc<Program>, uri: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<String> {
    let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
    tx.process_uri(uri, "GET", "1.1");
    tx.add_request_header(b"Host", b"example.com");
    tx.add_request_header(b"Content-Type", b"application/x-www-form-urlencoded");
    for (k, v) in headers {
        tx.add_request_header(k.as_bytes(), v.as_bytes());
    }
    let mut out = Vec::new();
    let mut done = tx.process_request_headers().is_some();
    if !done {
        let _ = tx.append_request_body(body);
        done = tx.process_request_body().is_some();
    }
    if !done {
        tx.add_response_header(b"Content-Type", b"text/html");
        let _ = tx.process_response_headers(200, "HTTP/1.1");
        let _ = tx.append_response_body(b"<html>a secret page</html>");
        let _ = tx.process_response_body();
    }
    tx.process_logging();
    for m in tx.matched_rules() {
        out.push(format!("{} {}", m.id, m.msg));
    }
    out.push(format!("intervention {:?}", tx.intervention()));
    out.push(format!(
        "last {:?}",
        tx.tx("last")
            .map(|v| String::from_utf8_lossy(v).into_owned())
    ));
    out
}

/// A request: URI, headers after Host and Content-Type, body.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [u8]);

fn programs() -> (Arc<Program>, Arc<Program>) {
    let all = Program::from_str_with("t.conf", RULES, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let none =
        Program::from_str_with("t.conf", RULES, &Options::none()).unwrap_or_else(|e| panic!("{e}"));
    (all, none)
}

/// The ids of a program's lean rules, in order (a chain link's id is 0).
fn lean_ids(program: &Program) -> Vec<u32> {
    program
        .rules
        .iter()
        .filter(|r| r.lean.is_some())
        .map(|r| r.id)
        .collect()
}

#[test]
fn lean_rules_give_the_plain_results() {
    let (all, none) = programs();
    // Every rule here is lean (setvars and ctls are effects, not targets); in
    // the plain program none is.
    let lean = lean_ids(&all);
    assert_eq!(
        lean,
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]
    );
    assert!(none.rules.iter().all(|r| r.lean.is_none()));
    let cases: [Case; 5] = [
        (
            "/",
            &[
                ("X-Dup", "One"),
                ("X-Dup", "TWO"),
                ("User-Agent", "Mozilla"),
            ],
            b"a=1",
        ),
        ("/x", &[("X-Dup", "One"), ("X-Dup", "TWO")], b"a=2"),
        ("/y", &[("X-Dup", "one")], b""),
        ("/", &[("User-Agent", "GoodBot")], b"a=1&a=1"),
        ("/e", &[], b""),
    ];
    // Twice: the second time the result cache has seen the values.
    for round in 0..2 {
        for (uri, headers, body) in cases {
            assert_eq!(
                run(&all, uri, headers, body),
                run(&none, uri, headers, body),
                "round {round}: {uri} {headers:?} {body:?}"
            );
        }
    }
    let m = run(
        &all,
        "/",
        &[
            ("X-Dup", "One"),
            ("X-Dup", "TWO"),
            ("User-Agent", "Mozilla"),
        ],
        b"a=1",
    );
    assert_eq!(
        m,
        [
            "1 REQUEST_METHOD=GET",
            // The last of the two values (MATCHED_VAR), lower-cased.
            "2 REQUEST_HEADERS:X-Dup=two",
            "3 &REQUEST_HEADERS=2",
            "4 &REQUEST_HEADERS=0",
            "5 TX:n=2",
            // &TX:n is 1, &TX:absent 0 (no match).
            "6 &TX=1",
            // (7: the length of TX:n's "2" is 1.)
            // Unset in phase 1: an empty value, which @eq reads as 0.
            "8 REQUEST_BODY_LENGTH=",
            "9 unset REMOTE_USER=",
            // Host, Content-Type and the first X-Dup hold an `e`: the last is named.
            "10 REQUEST_HEADERS:X-Dup=One",
            "11 REQUEST_HEADERS:User-Agent=mozilla",
            "13 REQUEST_HEADERS:X-Dup=TWO",
            "14 ARGS_POST:a=1",
            "17 deny 2",
            "intervention Some(Deny { status: 403, rule_id: Some(17) })",
            "last Some(\"\")",
        ]
    );
}

/// Rules over TX members selected by a key regex or all of TX, as CRS 920450's
/// chain reads the `tx.header_name_920450_*` members its first rule wrote.
const TX_RULES: &str = "SecRuleEngine On\n\
SecRule REQUEST_HEADERS_NAMES \"@rx ^(x-.*)$\" \"id:1,phase:1,pass,nolog,capture,t:lowercase,setvar:'tx.hn_%{tx.1}=/%{tx.1}/'\"\n\
SecRule TX:/^hn_/ \"@within /x-dup/ /x-other/\" \"id:2,phase:1,pass,log,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}',setvar:'tx.hn_zz=/x-dup/'\"\n\
SecRule TX:/^hn_/ \"!@rx dup\" \"id:3,phase:1,pass,log,t:uppercase,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule TX \"@streq /x-other/\" \"id:4,phase:1,pass,log,msg:'%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule REQUEST_HEADERS_NAMES \"@rx ^.*$\" \"id:5,phase:1,pass,log,capture,t:lowercase,msg:'restricted %{MATCHED_VAR}',setvar:'tx.rh_%{tx.0}=/%{tx.0}/',chain\"\n\
    SecRule TX:/^rh_/ \"@within /x-dup/\" \"setvar:tx.score=+5\"\n\
SecRule TX:score \"@ge 5\" \"id:6,phase:1,pass,log,msg:'score %{MATCHED_VAR}'\"\n";

fn run_tx(program: &Arc<Program>, headers: &[(&str, &str)]) -> Vec<String> {
    let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
    tx.process_uri("/", "GET", "1.1");
    for (k, v) in headers {
        tx.add_request_header(k.as_bytes(), v.as_bytes());
    }
    let _ = tx.process_request_headers();
    tx.process_logging();
    let mut out: Vec<String> = tx
        .matched_rules()
        .iter()
        .map(|m| format!("{} {}", m.id, m.msg))
        .collect();
    out.push(format!(
        "score {:?}",
        tx.tx("score")
            .map(|v| String::from_utf8_lossy(v).into_owned())
    ));
    out
}

#[test]
fn lean_tx_selections_give_the_plain_results() {
    let all = Program::from_str_with("t.conf", TX_RULES, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let none = Program::from_str_with("t.conf", TX_RULES, &Options::none())
        .unwrap_or_else(|e| panic!("{e}"));
    let lean = lean_ids(&all);
    // 2-4, 5's chained link (a link's id is 0) and 6; not 1 and 5 (capture).
    assert_eq!(lean, [2, 3, 4, 0, 6]);
    let cases: [&[(&str, &str)]; 3] = [
        &[
            ("Host", "a"),
            ("X-Dup", "1"),
            ("X-Other", "2"),
            ("X-Dup", "3"),
        ],
        &[("Host", "a"), ("X-Third", "1")],
        &[("Host", "a")],
    ];
    for round in 0..2 {
        for headers in cases {
            assert_eq!(
                run_tx(&all, headers),
                run_tx(&none, headers),
                "round {round}: {headers:?}"
            );
        }
    }
    assert_eq!(
        run_tx(&all, cases[0]),
        [
            // The members as they were when the rule started: not the hn_zz
            // its own first match added.
            "2 TX:hn_x-other=/x-other/",
            "3 TX:hn_zz=/X-DUP/",
            "4 TX:hn_x-other=/x-other/",
            "5 restricted /x-dup/",
            "6 score 5",
            "score Some(\"5\")",
        ]
    );
}
