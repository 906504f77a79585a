//! Log messages composed when the records are read (`deferred_log`): the text is
//! the one the match would have written, read after every phase, between phases
//! or twice, and the same as with every optimisation off.

use std::sync::Arc;

use engine::{Connection, Options, Program, Transaction};

/// Rule 10's message reads members written before it (and one written only by a
/// rule that did not run); rule 11's reads one that phase 5 changes after it, so
/// it is composed at its match; rule 20 (phase 5) is the last to run.
const RULES: &str = "SecRuleEngine On\n\
SecAction \"id:1,phase:1,pass,nolog,setvar:tx.score=0,setvar:tx.later=1\"\n\
SecRule ARGS \"@contains evil\" \"id:2,phase:2,pass,nolog,setvar:tx.score=+5\"\n\
SecRule ARGS \"@contains never\" \"id:3,phase:2,pass,nolog,setvar:tx.unset=7\"\n\
SecRule TX:SCORE \"@ge 5\" \"id:10,phase:2,pass,log,msg:'score %{tx.score}, unset [%{tx.unset}]',logdata:'data %{tx.score}'\"\n\
SecRule TX:SCORE \"@ge 5\" \"id:11,phase:2,pass,log,msg:'later %{tx.later}'\"\n\
SecAction \"id:12,phase:5,pass,nolog,setvar:tx.later=2\"\n\
SecAction \"id:20,phase:5,pass,log,msg:'final %{tx.score} %{tx.later}'\"\n";

fn run(options: &Options, read_between: bool) -> Vec<(u32, String, String)> {
    let program =
        Program::from_str_with("t.conf", RULES, options).unwrap_or_else(|e| panic!("{e}"));
    let records = |tx: &Transaction| -> Vec<(u32, String, String)> {
        tx.matched_rules()
            .iter()
            .map(|m| (m.id, m.msg.clone(), m.data.clone()))
            .collect()
    };
    let mut tx = Transaction::new(Arc::clone(&program), &Connection::default());
    tx.process_uri("/?a=evil", "GET", "1.1");
    let _ = tx.process_request_headers();
    let _ = tx.process_request_body();
    if read_between {
        assert_eq!(records(&tx).len(), 2);
    }
    let _ = tx.process_response_headers(200, "HTTP/1.1");
    let _ = tx.process_response_body();
    tx.process_logging();
    let first = records(&tx);
    assert_eq!(first, records(&tx), "a second read gives the same records");
    first
}

#[test]
fn late_messages_read_as_the_match_would_have_written_them() {
    let p = Program::from_str_with("t.conf", RULES, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let late: Vec<u32> = p
        .rules
        .iter()
        .filter(|r| r.defer_log)
        .map(|r| r.id)
        .collect();
    assert_eq!(late, [10, 20]);
    let want = vec![
        (10, "score 5, unset []".to_string(), "data 5".to_string()),
        (11, "later 1".to_string(), String::new()),
        (20, "final 5 2".to_string(), String::new()),
    ];
    for between in [false, true] {
        assert_eq!(run(&Options::default(), between), want);
        assert_eq!(run(&Options::none(), between), want);
    }
}
