//! The target-set cache: rules naming the same target list share one resolution
//! while the request data stay the same, and see values added later (body
//! arguments in phase 2) as plain evaluation does.

use std::sync::Arc;

use engine::{Connection, Options, Program, Transaction};

const RULES: &str = "SecRuleEngine On\n\
SecRequestBodyAccess On\n\
SecRule ARGS \"@contains evil\" \"id:1,phase:1,pass,log,msg:'p1 %{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS \"@contains evil\" \"id:2,phase:2,pass,log,msg:'p2 %{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS|!ARGS:c \"@contains bad\" \"id:3,phase:2,pass,log,msg:'p3 %{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS \"@contains bad\" \"id:4,phase:2,pass,log,msg:'p4 %{MATCHED_VAR_NAME}'\"\n\
SecRule REQUEST_BODY|ARGS_NAMES \"@rx ^d$\" \"id:5,phase:2,pass,log,msg:'p5 %{MATCHED_VAR_NAME}'\"\n";

fn run(program: &Arc<Program>, body: &[u8]) -> Vec<(u32, String)> {
    let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
    tx.process_uri("/?a=evil&d=1", "POST", "1.1");
    tx.add_request_header(b"Host", b"example.com");
    tx.add_request_header(b"Content-Type", b"application/x-www-form-urlencoded");
    let _ = tx.process_request_headers();
    let _ = tx.append_request_body(body);
    let _ = tx.process_request_body();
    tx.matched_rules()
        .iter()
        .map(|m| (m.id, m.msg.clone()))
        .collect()
}

#[test]
fn rules_with_one_target_list_share_it_and_see_later_values() {
    let all = Program::from_str_with("t.conf", RULES, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let none =
        Program::from_str_with("t.conf", RULES, &Options::none()).unwrap_or_else(|e| panic!("{e}"));
    let sets: Vec<Option<u32>> = all.rules.iter().map(|r| r.target_set).collect();
    // Rules 1, 2, 3 and 4 name ARGS (3's exclusion is applied per rule).
    assert!(sets[0].is_some());
    assert!(sets[..4].iter().all(|s| *s == sets[0]), "{sets:?}");
    assert_ne!(sets[4], sets[0]);
    for body in [&b"b=evil&c=bad&e=bad"[..], b"", b"c=bad"] {
        assert_eq!(run(&all, body), run(&none, body), "{body:?}");
    }
    let m = run(&all, b"b=evil&c=bad&e=bad");
    assert_eq!(
        m,
        vec![
            (1, "p1 ARGS:a".to_string()),
            (2, "p2 ARGS:b".to_string()),
            (3, "p3 ARGS:e".to_string()),
            (4, "p4 ARGS:e".to_string()),
            (5, "p5 ARGS_NAMES:d".to_string()),
        ]
    );
}
