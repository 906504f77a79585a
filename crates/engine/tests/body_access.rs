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
