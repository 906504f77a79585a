//! Long response bodies under chains that only delete bytes are scanned without
//! building the chain's result, their few literals searched for directly (see
//! `Prefilter::add_deleting`): the rules reading the body through such a chain, or
//! through a `multiMatch` prefix of one, match as with every optimisation off.

use std::sync::Arc;

use engine::{Connection, Options, Program, Transaction};

const RULES: &str = "SecRuleEngine On\n\
SecResponseBodyAccess On\n\
SecResponseBodyMimeType text/html\n\
SecRule RESPONSE_BODY \"@contains qqqq\" \"id:10,phase:4,pass,log,t:none\"\n\
SecRule RESPONSE_BODY \"@contains <title>punkholic\" \"id:1,phase:4,pass,log,t:none,t:removeWhitespace,t:lowercase\"\n\
SecRule RESPONSE_BODY \"@contains null x\" \"id:2,phase:4,pass,log,multiMatch,t:none,t:removeNulls,t:removeWhitespace\"\n\
SecRule RESPONSE_BODY \"@contains zzq\" \"id:3,phase:4,pass,log,t:none,t:removeNulls\"\n\
SecRule RESPONSE_BODY \"@contains select\" \"id:4,phase:4,pass,log,t:none\"\n\
SecRule RESPONSE_BODY \"@contains leftout\" \"id:5,phase:4,pass,log,t:none,t:lowercase,t:removeWhitespace\"\n";

fn run(program: &Arc<Program>, body: &[u8]) -> Vec<u32> {
    let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
    tx.process_uri("/", "GET", "1.1");
    tx.add_request_header(b"Host", b"example.com");
    let _ = tx.process_request_headers();
    let _ = tx.process_request_body();
    tx.add_response_header(b"Content-Type", b"text/html");
    let _ = tx.process_response_headers(200, "HTTP/1.1");
    let _ = tx.append_response_body(body);
    let _ = tx.process_response_body();
    tx.matched_rules().iter().map(|m| m.id).collect()
}

#[test]
fn rules_through_deleting_chains_match_as_without_optimisations() {
    let all = Program::from_str_with("t.conf", RULES, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let none =
        Program::from_str_with("t.conf", RULES, &Options::none()).unwrap_or_else(|e| panic!("{e}"));
    // Longer than the presence limit (2 KB): the deleting scan is taken.
    let filler = b"<p>Palisade response body.</p>\n".repeat(100);
    let cases: [(&[u8], &[u32]); 7] = [
        (b"", &[]),
        (b"< TiTle >\n PUNK holic", &[1]),
        (b"<title>punk-holic", &[]),
        // "null x" holds only after t:removeNulls, before t:removeWhitespace.
        (b"null\0 x", &[2]),
        (b"nullx", &[]),
        (b"z\0z\0q select", &[3, 4]),
        (b"left\tOUT <title>\tpunkholic", &[1, 5]),
    ];
    for (insert, expected) in cases {
        for at in [0, filler.len() / 2, filler.len()] {
            let mut body = filler.clone();
            body.splice(at..at, insert.iter().copied());
            let got = run(&all, &body);
            assert_eq!(got, run(&none, &body), "{insert:?} at {at}");
            assert_eq!(got, expected, "{insert:?} at {at}");
        }
    }
}
