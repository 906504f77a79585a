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
    programs_of(RULES)
}

fn programs_of(rules: &str) -> Vec<(Arc<Program>, Arc<Program>)> {
    let plain =
        Program::from_str_with("c.conf", rules, &Options::none()).unwrap_or_else(|e| panic!("{e}"));
    [
        "prune,memo,prefilter",
        "all",
        "prefilter",
        "prune,prefilter,cache",
    ]
    .iter()
    .map(|o| {
        let options = Options::parse(o).unwrap_or_else(|e| panic!("{e}"));
        let p = Program::from_str_with("c.conf", rules, &options).unwrap_or_else(|e| panic!("{e}"));
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

/// A GET request (URI) and the rules it must match, all with this
/// MATCHED_VAR_NAME as their message.
type MatchCase<'a> = (&'a str, &'a [u32], &'a str);

/// Runs each case twice (the second time with the thread's buffers reused) under
/// every optimised program of `rules`, checking the matched rules and their
/// variable, and that the plain program decides the same.
fn assert_matches(rules: &str, cases: &[MatchCase]) {
    for (optimised, plain) in programs_of(rules) {
        for round in 0..2 {
            for (uri, expected, var) in cases {
                let got = run(&optimised, uri, &[("Host", "h")]);
                assert_eq!(ids(&got), *expected, "{uri} round {round}");
                assert!(got.1.iter().all(|m| m.1 == *var), "{uri}: {got:?}");
                assert_eq!(got, run(&plain, uri, &[("Host", "h")]), "{uri}");
            }
        }
    }
}

/// `multiMatch` rules: each value's scans under every prefix of the chain make
/// its part of the union, and the value is passed over only when none of them
/// holds the rule's literal (without the result cache, by one bit test of the
/// value's lent union).
const MULTI_RULES: &str = "SecRuleEngine On\n\
SecRule ARGS \"@rx \\.\\./\" \"id:11,phase:2,t:none,t:urlDecodeUni,t:removeNulls,multiMatch,pass,log,msg:'%{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS \"@rx ^plain$\" \"id:12,phase:2,t:none,t:lowercase,multiMatch,pass,log,msg:'%{MATCHED_VAR_NAME}'\"\n";

#[test]
fn multi_match_values_are_admitted_by_any_of_their_intermediate_values() {
    let cases: &[MatchCase] = &[
        // Only the decoded value holds the literal.
        ("/?a=fine&b=..%2f&c=x", &[11], "ARGS:b"),
        ("/?a=%2e%2e%2f&b=fine", &[11], "ARGS:a"),
        // Only after the last step (the NUL removed).
        ("/?a=fine&b=..%00/", &[11], "ARGS:b"),
        // In the raw value (its later forms have it too).
        ("/?a=../x&b=fine", &[11], "ARGS:a"),
        // Only the lower-cased value matches; the prefilter ignores case.
        ("/?a=x&q=PLAIN", &[12], "ARGS:q"),
        ("/?a=fine&b=nothing&c=..%2", &[], ""),
    ];
    assert_matches(MULTI_RULES, cases);
}

/// Chains through `base64Decode`: a value whose decoded form is too short for any
/// match of the chain's rules is passed over without decoding it; the bound is
/// taken after the steps before `base64Decode`, and a `multiMatch` rule still
/// sees the value's earlier forms.
const BASE64_RULES: &str = "SecRuleEngine On\n\
SecRule ARGS \"@rx evil\\(\" \"id:21,phase:2,t:none,t:urlDecodeUni,t:base64Decode,t:removeWhitespace,pass,log,msg:'%{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS_NAMES \"@rx evil\\(\" \"id:22,phase:2,t:none,t:urlDecodeUni,t:base64Decode,t:removeWhitespace,multiMatch,pass,log,msg:'%{MATCHED_VAR_NAME}'\"\n";

#[test]
fn values_too_short_once_decoded_are_passed_over_and_no_match_is_lost() {
    let cases: &[MatchCase] = &[
        // base64("evil(") in an argument, plain or URL-encoded first.
        ("/?a=json&b=ZXZpbCg=", &[21], "ARGS:b"),
        ("/?a=x&b=%255AXZpbCg%253D", &[21], "ARGS:b"),
        // Decoded too short ("evi"): no match, under either chain.
        ("/?a=ZXZp&ZXZp=1", &[], ""),
        // The name's raw form matches the multiMatch rule, its decoded form is
        // too short.
        ("/?evil(=1", &[22], "ARGS_NAMES:evil("),
        ("/?ZXZpbCg=1", &[22], "ARGS_NAMES:ZXZpbCg"),
    ];
    assert_matches(BASE64_RULES, cases);
}

/// `multiMatch` rules through `base64Decode` (a chain without scan trigger
/// bytes, so no value is passed over by them): a value the steps before
/// `base64Decode` leave as it is up to case and too short once decoded takes its
/// raw scan as its union without a walk through the chain, so its raw and
/// lower-cased forms are still admitted; a value those steps change is walked.
const MULTI_BASE64_RULES: &str = "SecRuleEngine On\n\
SecRule ARGS \"@rx evil\\(\" \"id:41,phase:2,t:none,t:base64Decode,multiMatch,pass,log,msg:'%{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS \"@rx wick\\(\" \"id:42,phase:2,t:none,t:urlDecodeUni,t:base64Decode,t:removeWhitespace,multiMatch,pass,log,msg:'%{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS \"@rx ^vile\\($\" \"id:43,phase:2,t:none,t:lowercase,t:base64Decode,multiMatch,pass,log,msg:'%{MATCHED_VAR_NAME}'\"\n";

#[test]
fn multi_match_values_too_short_once_decoded_keep_their_raw_forms() {
    let cases: &[MatchCase] = &[
        // Raw forms, too short once decoded (the valid prefix is `evil`).
        ("/?a=fine&b=evil(", &[41], "ARGS:b"),
        ("/?a=wick(&b=fine", &[42], "ARGS:a"),
        // Only the lower-cased form matches.
        ("/?a=VILE(", &[43], "ARGS:a"),
        // Only the URL-decoded form holds the literal: the value holds a trigger
        // byte of the steps before `base64Decode`.
        ("/?a=x&b=wi%2563k(", &[42], "ARGS:b"),
        // Only the decoded form: base64("evil("), base64("wick(").
        ("/?a=ZXZpbCg=", &[41], "ARGS:a"),
        ("/?a=x&b=d2ljayg%3D", &[42], "ARGS:b"),
        ("/?a=evi&b=wic&c=VIL", &[], ""),
    ];
    assert_matches(MULTI_BASE64_RULES, cases);
}

/// One class (ARGS) under chains whose scan trigger bytes its values may or may
/// not hold: a chain none of whose trigger bytes a value holds is merged from
/// the class's raw union (`merge_raw_class_chain`), and without the result cache
/// its rules test each value by the raw scans then lent; a chain changing a value
/// takes that value's own scan.
const RAW_RULES: &str = "SecRuleEngine On\n\
SecRule ARGS \"@rx evil\" \"id:31,phase:2,t:none,t:lowercase,pass,log,msg:'%{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS \"@rx wicked\" \"id:32,phase:2,t:none,t:urlDecodeUni,pass,log,msg:'%{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS \"@rx wicked\" \"id:33,phase:2,t:none,t:lowercase,pass,log,msg:'%{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS \"@rx a b\" \"id:34,phase:2,t:none,t:compressWhitespace,pass,log,msg:'%{MATCHED_VAR_NAME}'\"\n";

#[test]
fn chains_a_class_s_values_do_not_change_take_its_raw_union() {
    let cases: &[MatchCase] = &[
        // No trigger byte of any chain but compressWhitespace's (space): the
        // literal in the second of three values only.
        ("/?a=fine&b=EVIL&c=x", &[31], "ARGS:b"),
        // (Rule 32 does not lower-case.)
        ("/?a=fine&b=WICKED&c=x", &[33], "ARGS:b"),
        // `%` (an argument `w%69cked` once the query string is decoded)
        // triggers urlDecodeUni only: the decoded literal admits rule 32, the
        // raw union holds no literal of rule 33.
        ("/?a=fine&b=w%2569cked", &[32], "ARGS:b"),
        // One value changed by the chain, the literal in another, unchanged.
        ("/?a=%2541&b=wicked", &[32, 33], "ARGS:b"),
        // compressWhitespace changes the value with two spaces only.
        ("/?a=x&b=a%20%20b", &[34], "ARGS:b"),
        ("/?a=x&b=a%20b", &[34], "ARGS:b"),
        ("/?a=x&b=ab", &[], ""),
    ];
    assert_matches(RAW_RULES, cases);
}
