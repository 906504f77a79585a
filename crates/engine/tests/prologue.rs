//! The prologue (phase 1's set-up rules run once at load time): which rules it
//! takes, and results equal to plain evaluation whether its kept rules match or
//! not.

use std::sync::Arc;

use engine::{Connection, Options, Program, Transaction};

#[path = "support/outcome.rs"]
mod outcome;

/// A kept rule (request-dependent, `ctl` only) before the set-up rules; a folded
/// rule that never matches (12) clears MATCHED_VARS after it; 15 reads
/// MATCHED_VARS and ends the segment; 16 logs TX values the prologue wrote.
const RULES: &str = "SecRuleEngine On\n\
SecRule REQUEST_HEADERS:Content-Type \"@rx ^application/json\" \"id:1,phase:1,pass,nolog,t:lowercase,ctl:requestBodyProcessor=JSON\"\n\
SecAction \"id:10,phase:1,pass,nolog,setvar:tx.threshold=5,setvar:tx.score=0\"\n\
SecRule &TX:level \"@eq 0\" \"id:11,phase:1,pass,nolog,setvar:tx.level=1\"\n\
SecRule TX:level \"@eq 2\" \"id:12,phase:1,deny\"\n\
SecAction \"id:13,phase:1,pass,nolog,setvar:tx.copy=%{tx.threshold}\"\n\
SecRule TX:level \"@eq 1\" \"id:14,phase:1,pass,nolog\"\n\
SecRule MATCHED_VARS_NAMES \"@rx ^TX:level$\" \"id:15,phase:1,pass,log,msg:'last %{MATCHED_VAR_NAME}'\"\n\
SecRule REQUEST_HEADERS:X-Probe \"@streq a\" \"id:20,phase:1,pass,log,msg:'probe',setvar:tx.score=+%{tx.threshold}\"\n\
SecRule TX:score \"@ge 0\" \"id:16,phase:1,pass,log,msg:'score %{tx.score} copy %{tx.copy} level %{tx.level}'\"\n\
SecRule REQBODY_PROCESSOR \"@streq JSON\" \"id:17,phase:1,pass,log,msg:'json'\"\n\
SecRule TX:score \"@ge %{tx.threshold}\" \"id:18,phase:1,deny,status:403\"\n";

fn program(text: &str, options: &Options) -> Arc<Program> {
    Program::from_str_with("prologue.conf", text, options).unwrap_or_else(|e| panic!("{e}"))
}

/// Decision, matched rules (id and message) and TX after phase 1.
fn run(program: &Arc<Program>, headers: &[(&str, &str)]) -> (u16, Vec<(u32, String)>, String) {
    let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
    tx.process_uri("/", "GET", "1.1");
    tx.add_request_header(b"Host", b"example.com");
    for (n, v) in headers {
        tx.add_request_header(n.as_bytes(), v.as_bytes());
    }
    let _ = tx.process_request_headers();
    let (status, matched) = outcome::decision(&tx);
    let state = tx
        .tx_collection()
        .iter()
        .map(|(k, v)| format!("{k}={}", String::from_utf8_lossy(v)))
        .collect::<Vec<_>>()
        .join(",");
    (status, matched, state)
}

const REQUESTS: [&[(&str, &str)]; 4] = [
    &[],
    &[("Content-Type", "application/json")],
    &[("X-Probe", "a")],
    &[("Content-Type", "Application/JSON"), ("X-Probe", "a")],
];

#[test]
fn hoists_the_set_up_rules_and_keeps_the_request_dependent_one() {
    let p = program(RULES, &Options::default());
    let pro = p.prologue.as_ref().unwrap_or_else(|| panic!("no prologue"));
    // Steps 0-5: rule 1 (kept), then 10-14 (hoisted); 15 ends it.
    assert_eq!(pro.end, 6);
    assert_eq!(pro.hoisted, vec![false, true, true, true, true, true]);
    assert_eq!(
        pro.matched_vars,
        vec![("TX:level".to_string(), b"1".to_vec())]
    );
    let plan = engine::plan::render(&p);
    assert!(plan.contains("5 rule(s) in the prologue"), "{plan}");
    // Without pre-pruning there is no prologue.
    assert!(program(RULES, &Options::none()).prologue.is_none());
}

#[test]
fn results_equal_plain_evaluation() {
    let all = program(RULES, &Options::default());
    let none = program(RULES, &Options::none());
    let verify = Options {
        verify: true,
        ..Options::default()
    };
    let checked = program(RULES, &verify);
    for headers in REQUESTS {
        let expected = run(&none, headers);
        assert_eq!(run(&all, headers), expected, "{headers:?}");
        // Verification runs the whole segment and compares it with the record.
        assert_eq!(run(&checked, headers), expected, "{headers:?}");
    }
    // The kept rule ran: the JSON processor was chosen; the probe adds the
    // threshold the prologue set, reaching it.
    let (status, matched, state) = run(&all, REQUESTS[3]);
    assert_eq!(status, 403);
    let ids: Vec<u32> = matched.iter().map(|m| m.0).collect();
    assert_eq!(ids, vec![15, 20, 16, 17, 18]);
    assert_eq!(matched[0].1, "last MATCHED_VARS_NAMES:level");
    assert_eq!(matched[2].1, "score 5 copy 5 level 1");
    assert!(state.contains("score=5"), "{state}");
    let (status, matched, _) = run(&all, REQUESTS[0]);
    assert_eq!(status, 200);
    assert_eq!(
        matched.iter().map(|m| m.0).collect::<Vec<_>>(),
        vec![15, 16]
    );
}

#[test]
fn a_rule_that_writes_tx_is_not_passed_over() {
    // The first rule writes TX: nothing after it may be hoisted before it, and
    // nothing before it is hoistable.
    let text = RULES.replace(
        "ctl:requestBodyProcessor=JSON",
        "ctl:requestBodyProcessor=JSON,setvar:tx.level=3",
    );
    let p = program(&text, &Options::default());
    assert!(p.prologue.is_none());
    let none = program(&text, &Options::none());
    for headers in REQUESTS {
        assert_eq!(run(&p, headers), run(&none, headers), "{headers:?}");
    }
}

#[test]
fn a_kept_rule_not_followed_by_a_clearing_rule_ends_the_segment_before_it() {
    // Without rule 12 nothing clears MATCHED_VARS after the kept rule, whose
    // match (or not) they would carry: the segment ends before the kept rule.
    let text = "SecRuleEngine On\n\
SecAction \"id:10,phase:1,pass,nolog,setvar:tx.a=1\"\n\
SecRule REQUEST_HEADERS:Content-Type \"@rx json\" \"id:1,phase:1,pass,nolog,ctl:requestBodyProcessor=JSON\"\n\
SecAction \"id:11,phase:1,pass,nolog,setvar:tx.b=2\"\n\
SecRule MATCHED_VARS_NAMES \"@rx .\" \"id:15,phase:1,pass,log,msg:'%{MATCHED_VARS_NAMES}'\"\n";
    let p = program(text, &Options::default());
    let pro = p.prologue.as_ref().unwrap_or_else(|| panic!("no prologue"));
    assert_eq!(pro.end, 1);
    let none = program(text, &Options::none());
    for headers in REQUESTS {
        assert_eq!(run(&p, headers), run(&none, headers), "{headers:?}");
    }
}
