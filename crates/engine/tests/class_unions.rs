//! The prefilter groups' unions are built from class unions (a variable, or one
//! key of it, under a chain): a rule is skipped only when no value of its targets
//! holds its literal, whichever other groups share those classes, and the unions
//! of one transaction never leak into the next (transactions reuse buffers per
//! thread).

use std::sync::Arc;

use engine::{Connection, Options, Program, Transaction};

#[path = "support/outcome.rs"]
mod outcome;

/// Rules 1 and 2 share the ARGS class under `lowercase`; 2 also reads the
/// User-Agent, 3 the whole header list under another chain; 4 reads a key of the
/// header list that a request may lack; 6 the argument names and the User-Agent.
const RULES: &str = "SecRuleEngine On\n\
SecRule ARGS \"@rx evil\" \"id:1,phase:2,t:lowercase,pass,log,msg:'args'\"\n\
SecRule ARGS|REQUEST_HEADERS:User-Agent \"@rx evil\" \"id:2,phase:2,t:lowercase,pass,log,msg:'args or agent'\"\n\
SecRule REQUEST_HEADERS \"@rx wicked\" \"id:3,phase:2,t:urlDecodeUni,pass,log,msg:'headers'\"\n\
SecRule REQUEST_HEADERS:X-Probe|ARGS_NAMES \"@rx probe\" \"id:4,phase:2,pass,log,msg:'probe'\"\n\
SecRule REQUEST_FILENAME|ARGS \"@contains danger\" \"id:5,phase:2,pass,log,msg:'filename'\"\n\
SecRule ARGS_NAMES|REQUEST_HEADERS:User-Agent \"@rx evil\" \"id:6,phase:2,t:lowercase,pass,log,msg:'names or agent'\"\n";

/// Without the result cache (the lent per-value scans are used then), with it,
/// and without the memo (which is then cleared before every rule, so the scans'
/// offsets a class's screened values keep go stale: they are made again).
fn programs() -> Vec<(Arc<Program>, Arc<Program>)> {
    let plain =
        Program::from_str_with("c.conf", RULES, &Options::none()).unwrap_or_else(|e| panic!("{e}"));
    [
        "prune,memo,prefilter",
        "all",
        "prefilter",
        "prune,prefilter,cache",
    ]
    .iter()
    .map(|o| {
        let options = Options::parse(o).unwrap_or_else(|e| panic!("{e}"));
        let p = Program::from_str_with("c.conf", RULES, &options).unwrap_or_else(|e| panic!("{e}"));
        (p, Arc::clone(&plain))
    })
    .collect()
}

fn run(program: &Arc<Program>, uri: &str, headers: &[(&str, &str)]) -> (u16, Vec<(u32, String)>) {
    let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
    tx.process_uri(uri, "GET", "1.1");
    for (k, v) in headers {
        tx.add_request_header(k.as_bytes(), v.as_bytes());
    }
    let _ = tx.process_request_headers();
    let _ = tx.process_request_body();
    outcome::decision(&tx)
}

/// A request (URI, headers) and the rules it must match.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [u32]);

fn ids(outcome: &(u16, Vec<(u32, String)>)) -> Vec<u32> {
    outcome.1.iter().map(|m| m.0).collect()
}

#[test]
fn rules_sharing_classes_are_admitted_by_their_own_values_only() {
    let cases: &[Case] = &[
        // The literal in an argument: every rule reading ARGS under lowercase.
        ("/?q=EVIL", &[("Host", "h")], &[1, 2]),
        // In the User-Agent only: rule 2 reads it, rule 1 does not.
        (
            "/?q=fine",
            &[("Host", "h"), ("User-Agent", "evil bot")],
            &[2, 6],
        ),
        // Under urlDecodeUni only.
        ("/", &[("Host", "h"), ("Referer", "w%69cked")], &[3]),
        ("/", &[("Host", "h"), ("Referer", "w%6Acked")], &[]),
        // A key of the header list, or an argument name.
        ("/", &[("Host", "h"), ("x-probe", "a probe")], &[4]),
        ("/?probe=1", &[("Host", "h")], &[4]),
        ("/", &[("Host", "h"), ("X-Other", "probe")], &[]),
        // A single-valued variable.
        ("/danger/x", &[("Host", "h")], &[5]),
        ("/safe?a=danger", &[("Host", "h")], &[5]),
    ];
    for (optimised, plain) in programs() {
        for (uri, headers, expected) in cases {
            let got = run(&optimised, uri, headers);
            assert_eq!(ids(&got), *expected, "{uri} {headers:?}");
            assert_eq!(got, run(&plain, uri, headers), "{uri} {headers:?}");
        }
    }
}

#[test]
fn one_transactions_unions_never_serve_the_next() {
    // Transactions on one thread reuse their buffers. The first fills the
    // argument classes (many values: large memo offsets); the next has no
    // argument, so those classes are passed over, and a rule admitted by the
    // header must find only this transaction's scans for its values (rule 6: the
    // User-Agent's slot is one an argument name had before).
    for (optimised, plain) in programs() {
        let many: String = (0..40).map(|i| format!("a{i}=value{i}&")).collect();
        for round in 0..3 {
            let first = run(&optimised, &format!("/?{many}q=evil"), &[("Host", "h")]);
            assert_eq!(ids(&first), [1, 2], "round {round}");
            let names: Vec<String> = (0..10).map(|i| format!("X-Fill-{i}")).collect();
            let mut headers: Vec<(&str, &str)> = vec![("Host", "h")];
            headers.extend(names.iter().map(|n| (n.as_str(), "x")));
            headers.push(("User-Agent", "evil"));
            let second = run(&optimised, "/", &headers);
            assert_eq!(second, run(&plain, "/", &headers), "round {round}");
            assert_eq!(ids(&second), [2, 6], "round {round}");
        }
    }
}
