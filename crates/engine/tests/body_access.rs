//! `Transaction::wants_request_body` follows `SecRequestBodyAccess`, the engine mode
//! and `ctl:requestBodyAccess` as in force after phase 1.

use engine::{Connection, Program, Transaction};

fn after_phase_1(conf: &str, uri: &str) -> bool {
    let program = Program::from_str("t.conf", conf).unwrap_or_else(|e| panic!("{e}"));
    let mut tx = Transaction::new(program, &Connection::default());
    tx.process_uri(uri, "POST", "1.1");
    tx.add_request_header(b"Host", b"example.com");
    tx.process_request_headers();
    tx.wants_request_body()
}

#[test]
fn follows_configuration_mode_and_ctl() {
    assert!(after_phase_1(
        "SecRuleEngine On\nSecRequestBodyAccess On\n",
        "/"
    ));
    assert!(!after_phase_1(
        "SecRuleEngine On\nSecRequestBodyAccess Off\n",
        "/"
    ));
    assert!(!after_phase_1(
        "SecRuleEngine Off\nSecRequestBodyAccess On\n",
        "/"
    ));
    let ctl = "SecRuleEngine On\nSecRequestBodyAccess Off\n\
        SecRule ARGS:inspect \"@streq yes\" \"id:1,phase:1,pass,nolog,ctl:requestBodyAccess=On\"\n";
    assert!(after_phase_1(ctl, "/?inspect=yes"));
    assert!(!after_phase_1(ctl, "/?inspect=no"));
}

fn wants_response(conf: &str, content_type: &[u8]) -> bool {
    let program = Program::from_str("t.conf", conf).unwrap_or_else(|e| panic!("{e}"));
    let mut tx = Transaction::new(program, &Connection::default());
    tx.process_uri("/", "GET", "1.1");
    tx.add_request_header(b"Host", b"example.com");
    tx.process_request_headers();
    tx.add_response_header(b"Content-Type", content_type);
    tx.process_response_headers(200, "HTTP/1.1");
    tx.wants_response_body()
}

#[test]
fn response_body_follows_the_mime_types_up_to_case_and_spaces() {
    let conf = "SecRuleEngine On\nSecResponseBodyAccess On\n\
        SecResponseBodyMimeType text/plain Application/JSON\n";
    // The type before `;`, trimmed and lower-cased, is one of the listed types
    // (which are lower-cased when read).
    assert!(wants_response(conf, b"text/html; charset=utf-8"));
    assert!(wants_response(conf, b" Application/Json ; charset=utf-8"));
    assert!(wants_response(conf, b"TEXT/PLAIN"));
    assert!(!wants_response(conf, b"text/css"));
    assert!(!wants_response(conf, b"text/plainx"));
    assert!(!wants_response(conf, b""));
    // A type that is not ASCII is decoded and trimmed of Unicode white space
    // (U+00A0 here), as before the ASCII fast path.
    assert!(wants_response(conf, "text/plain\u{a0}".as_bytes()));
    assert!(!wants_response(conf, b"text/plain\xff"));
    assert!(!wants_response(
        "SecRuleEngine On\nSecResponseBodyAccess Off\n",
        b"text/html"
    ));
}

/// Phase 4 moves the response body into RESPONSE_BODY (no copy): the body is
/// still what `Transaction::response_body` and the audit record's part E give,
/// and bytes appended after it are added to the same body, which a second phase 4
/// inspects whole.
#[test]
fn the_response_body_is_kept_whole_through_phase_4() {
    let conf = "SecRuleEngine On\nSecResponseBodyAccess On\n\
        SecResponseBodyMimeType text/plain\nSecAuditLogParts ABEFHZ\n\
        SecRule RESPONSE_BODY \"@contains secret\" \"id:1,phase:4,pass,log\"\n\
        SecRule RESPONSE_BODY \"@contains second\" \"id:2,phase:4,pass,log\"\n\
        SecRule RESPONSE_CONTENT_LENGTH \"@eq 17\" \"id:3,phase:4,pass,log\"\n";
    let program = Program::from_str("t.conf", conf).unwrap_or_else(|e| panic!("{e}"));
    let mut tx = Transaction::new(program, &Connection::default());
    tx.process_uri("/", "GET", "1.1");
    tx.add_request_header(b"Host", b"example.com");
    tx.process_request_headers();
    tx.process_request_body();
    tx.add_response_header(b"Content-Type", b"text/plain");
    tx.process_response_headers(200, "HTTP/1.1");
    tx.append_response_body(b"the ");
    tx.append_response_body(b"secret");
    tx.process_response_body();
    let ids = |tx: &Transaction| tx.matched_rules().iter().map(|m| m.id).collect::<Vec<_>>();
    assert_eq!(ids(&tx), [1]);
    assert_eq!(tx.response_body(), b"the secret");
    let record = engine::audit_json::render_value(&tx);
    assert_eq!(record["transaction"]["response"]["body"], "the secret");
    // More bytes after phase 4, then phase 4 again: the whole body.
    tx.append_response_body(b" second");
    assert_eq!(tx.response_body(), b"the secret second");
    tx.process_response_body();
    assert_eq!(tx.response_body(), b"the secret second");
    assert_eq!(ids(&tx), [1, 1, 2, 3]);
}
