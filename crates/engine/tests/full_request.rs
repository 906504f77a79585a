//! FULL_REQUEST and FULL_REQUEST_LENGTH: the request headers and body as
//! ModSecurity composes them, present once the request body was processed (and
//! composed only when read).

use engine::{Connection, Program, Transaction};

const RULES: &str = r#"
SecRuleEngine On
SecRequestBodyAccess On
SecRule FULL_REQUEST "@rx ^$" "id:1,phase:1,pass,nolog,setvar:'tx.phase1_empty=1'"
SecRule FULL_REQUEST "@contains X-Probe: yes" "id:2,phase:2,pass,nolog,setvar:'tx.full=%{FULL_REQUEST}',setvar:'tx.len=%{FULL_REQUEST_LENGTH}'"
SecRule &FULL_REQUEST "@eq 1" "id:3,phase:2,pass,nolog,setvar:'tx.count=1'"
SecRule FULL_REQUEST_LENGTH "@gt 10" "id:4,phase:2,pass,nolog,setvar:'tx.long=1'"
"#;

fn run(body: &[u8]) -> Transaction {
    let program = Program::from_str("t.conf", RULES).unwrap_or_else(|e| panic!("{e}"));
    let mut tx = Transaction::new(program, &Connection::default());
    tx.process_uri("/", "POST", "1.1");
    tx.add_request_header(b"Host", b"example.com");
    tx.add_request_header(b"X-Probe", b"yes");
    tx.process_request_headers();
    tx.append_request_body(body);
    tx.process_request_body();
    tx
}

#[test]
fn composed_from_headers_and_body_after_the_body_phase() {
    let tx = run(b"a=1&b=2");
    let want = b"Host: example.com\nX-Probe: yes\n\n\na=1&b=2";
    assert_eq!(tx.tx("phase1_empty"), Some(&b"1"[..]));
    assert_eq!(tx.tx("full"), Some(&want[..]));
    assert_eq!(tx.tx("len"), Some(want.len().to_string().as_bytes()));
    assert_eq!(tx.tx("count"), Some(&b"1"[..]));
    assert_eq!(tx.tx("long"), Some(&b"1"[..]));
}

#[test]
fn bytes_appended_after_the_body_phase_are_not_part_of_it() {
    let mut tx = run(b"a=1");
    tx.append_request_body(b"&late=1");
    tx.process_response_headers(200, "HTTP/1.1");
    assert_eq!(
        tx.tx("full"),
        Some(&b"Host: example.com\nX-Probe: yes\n\n\na=1"[..])
    );
}
