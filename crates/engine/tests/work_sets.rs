//! Work sets (the memo, target lists and unions a phase uses) go back to the
//! thread's pool after phase 2 and may come back for phase 3 from another
//! transaction: transactions whose phases interleave, as a proxy's do while they
//! wait on the upstream, match exactly as each does alone.

use std::sync::Arc;

use engine::{Connection, Options, Program, Transaction};

/// Every phase reads the request's arguments (through the memo, the target lists
/// and the prefilter's unions), so a cache carried from one transaction to
/// another would show in what phases 3 to 5 match.
const RULES: &str = "SecRuleEngine On\n\
SecResponseBodyAccess On\n\
SecResponseBodyMimeType text/html\n\
SecRule ARGS \"@contains evil\" \"id:1,phase:1,pass,log,msg:'p1 %{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule ARGS \"@contains evil\" \"id:2,phase:2,pass,log,t:lowercase,msg:'p2 %{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule ARGS \"@contains evil\" \"id:3,phase:3,pass,log,t:lowercase,msg:'p3 %{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule ARGS|RESPONSE_BODY \"@rx (?:evil|body)\" \"id:4,phase:4,pass,log,t:lowercase,msg:'p4 %{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule ARGS \"@contains evil\" \"id:5,phase:5,pass,log,t:lowercase,msg:'p5 %{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n";

/// Requests of one shape (the same number of values, so the same data
/// generations) with the attack in a different place each.
const URIS: [&str; 4] = [
    "/?a=EVIL&b=x",
    "/?a=good&b=Evil",
    "/?a=x&b=y",
    "/?a=evil&b=evil",
];

fn open(program: &Arc<Program>, uri: &str) -> Transaction {
    let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
    tx.process_uri(uri, "GET", "1.1");
    tx.add_request_header(b"Host", b"example.com");
    let _ = tx.process_request_headers();
    let _ = tx.process_request_body();
    tx
}

fn finish(mut tx: Transaction) -> Vec<(u32, String)> {
    tx.add_response_header(b"Content-Type", b"text/html");
    let _ = tx.process_response_headers(200, "HTTP/1.1");
    tx.append_response_body(b"<p>a body</p>");
    let _ = tx.process_response_body();
    tx.process_logging();
    tx.matched_rules()
        .iter()
        .map(|m| (m.id, m.msg.clone()))
        .collect()
}

#[test]
fn interleaved_transactions_match_as_each_does_alone() {
    for options in [Options::default(), Options::none()] {
        let program =
            Program::from_str_with("t.conf", RULES, &options).unwrap_or_else(|e| panic!("{e}"));
        let alone: Vec<_> = URIS.iter().map(|u| finish(open(&program, u))).collect();
        assert_eq!(
            alone[0],
            vec![
                (2, "p2 ARGS:a=evil".to_string()),
                (3, "p3 ARGS:a=evil".to_string()),
                (4, "p4 RESPONSE_BODY=<p>a body</p>".to_string()),
                (5, "p5 ARGS:a=evil".to_string()),
            ]
        );
        assert_eq!(alone[3][0], (1, "p1 ARGS:b=evil".to_string()));
        assert_eq!(
            alone[2],
            vec![(4, "p4 RESPONSE_BODY=<p>a body</p>".to_string())]
        );
        // Request phases of all four, then the response phases in reverse order
        // (each takes the set another left last), twice (warm caches).
        for _ in 0..2 {
            let open_txs: Vec<_> = URIS.iter().map(|u| open(&program, u)).collect();
            let mut interleaved: Vec<_> = open_txs.into_iter().rev().map(finish).collect();
            interleaved.reverse();
            assert_eq!(interleaved, alone);
        }
    }
}

/// A transaction parked after phase 1 (as the proxy does while a request body
/// arrives), with other transactions run whole meanwhile, matches as it does alone.
#[test]
fn a_parked_transaction_matches_as_it_does_alone() {
    let program = Program::from_str_with(
        "t.conf",
        &format!("SecRequestBodyAccess On\n{RULES}"),
        &Options::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let post = |tx: &mut Transaction| {
        let _ = tx.append_request_body(b"c=EVIL&d=x");
        let _ = tx.process_request_body();
    };
    let first = |uri: &str| {
        let mut tx = Transaction::new(Arc::clone(&program), &Connection::default());
        tx.process_uri(uri, "POST", "1.1");
        tx.add_request_header(b"Host", b"example.com");
        tx.add_request_header(b"Content-Type", b"application/x-www-form-urlencoded");
        let _ = tx.process_request_headers();
        tx
    };
    let mut alone = first(URIS[1]);
    post(&mut alone);
    let alone = finish(alone);
    assert!(
        alone.contains(&(2, "p2 ARGS:c=evil".to_string())),
        "{alone:?}"
    );
    let mut parked = first(URIS[1]);
    parked.park();
    for u in URIS {
        let _ = finish(open(&program, u));
    }
    post(&mut parked);
    assert_eq!(finish(parked), alone);
}
