//! The target-set cache: rules naming the same target list (with the same
//! exclusions) share one resolution while its variables stay the same, see values
//! added later (body arguments in phase 2) as plain evaluation does, and `ctl`
//! target removals still apply to the rules they select.

use std::sync::Arc;

use engine::rule::CtlAction;
use engine::{Connection, Options, Program, Transaction};

const RULES: &str = "SecRuleEngine On\n\
SecRequestBodyAccess On\n\
SecRule ARGS \"@contains evil\" \"id:1,phase:1,pass,log,msg:'p1 %{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS \"@contains evil\" \"id:2,phase:2,pass,log,msg:'p2 %{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS|!ARGS:c \"@contains bad\" \"id:3,phase:2,pass,log,msg:'p3 %{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS \"@contains bad\" \"id:4,phase:2,pass,log,msg:'p4 %{MATCHED_VAR_NAME}'\"\n\
SecRule REQUEST_BODY|ARGS_NAMES \"@rx ^d$\" \"id:5,phase:2,pass,log,msg:'p5 %{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS|!ARGS:c \"@contains bad\" \"id:6,phase:2,pass,log,msg:'p6 %{MATCHED_VAR_NAME}'\"\n";

fn run(program: &Arc<Program>, uri: &str, body: &[u8]) -> Vec<(u32, String)> {
    let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
    tx.process_uri(uri, "POST", "1.1");
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

fn programs(rules: &str) -> (Arc<Program>, Arc<Program>) {
    let all = Program::from_str_with("t.conf", rules, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let none =
        Program::from_str_with("t.conf", rules, &Options::none()).unwrap_or_else(|e| panic!("{e}"));
    (all, none)
}

#[test]
fn rules_with_one_target_list_share_it_and_see_later_values() {
    let (all, none) = programs(RULES);
    let sets: Vec<Option<u32>> = all.rules.iter().map(|r| r.target_set).collect();
    // Rules 1, 2 and 4 name ARGS; 3 and 6 name ARGS less ARGS:c (the exclusion is
    // applied in their set's resolution).
    assert!(sets[0].is_some());
    assert!([sets[1], sets[3]].iter().all(|s| *s == sets[0]), "{sets:?}");
    assert!(sets[2].is_some());
    assert_ne!(sets[2], sets[0]);
    assert_eq!(sets[5], sets[2]);
    assert_ne!(sets[4], sets[0]);
    for body in [&b"b=evil&c=bad&e=bad"[..], b"", b"c=bad"] {
        assert_eq!(
            run(&all, "/?a=evil&d=1", body),
            run(&none, "/?a=evil&d=1", body),
            "{body:?}"
        );
    }
    let m = run(&all, "/?a=evil&d=1", b"b=evil&c=bad&e=bad");
    assert_eq!(
        m,
        vec![
            (1, "p1 ARGS:a".to_string()),
            (2, "p2 ARGS:b".to_string()),
            (3, "p3 ARGS:e".to_string()),
            (4, "p4 ARGS:e".to_string()),
            (5, "p5 ARGS_NAMES:d".to_string()),
            (6, "p6 ARGS:e".to_string()),
        ]
    );
}

/// Rules sharing ARGS, some of which a `ctl:ruleRemoveTargetByTag` (run when the
/// URI holds `/x`) or `ctl:ruleRemoveTargetById` (`/y`) selects: those lose
/// `ARGS:a`, the others keep it, in phase 2 after phase 1 resolved the list.
const CTL_RULES: &str = "SecRuleEngine On\n\
SecRequestBodyAccess On\n\
SecRule ARGS \"@contains evil\" \"id:20,phase:1,pass,log,tag:t1,msg:'early %{MATCHED_VAR_NAME}'\"\n\
SecRule REQUEST_URI \"@contains /x\" \"id:10,phase:1,pass,nolog,ctl:ruleRemoveTargetByTag=^t1;ARGS:a\"\n\
SecRule REQUEST_URI \"@contains /y\" \"id:11,phase:1,pass,nolog,ctl:ruleRemoveTargetById=22;ARGS:a\"\n\
SecRule ARGS \"@contains evil\" \"id:21,phase:2,pass,log,tag:t1,msg:'t1 %{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS \"@contains evil\" \"id:22,phase:2,pass,log,tag:t2,msg:'t2 %{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS \"@contains evil\" \"id:23,phase:2,pass,log,tag:T1,tag:t1x,msg:'t1x %{MATCHED_VAR_NAME}'\"\n\
SecRule ARGS \"@contains evil\" \"id:24,phase:2,pass,log,tag:xt1,msg:'xt1 %{MATCHED_VAR_NAME}'\"\n";

#[test]
fn ctl_target_removals_apply_to_the_rules_they_select_in_a_shared_list() {
    let (all, none) = programs(CTL_RULES);
    let set = all.rules[0].target_set;
    assert!(set.is_some());
    assert!(all
        .rules
        .iter()
        .filter(|r| r.id > 20)
        .all(|r| r.target_set == set));
    for uri in [
        "/x?a=evil&b=evil",
        "/y?a=evil&b=evil",
        "/x/y?a=evil",
        "/?a=evil",
    ] {
        for body in [&b""[..], b"a=evil&c=evil"] {
            assert_eq!(
                run(&all, uri, body),
                run(&none, uri, body),
                "{uri} {body:?}"
            );
        }
    }
    let ids = |m: Vec<(u32, String)>| -> Vec<String> { m.into_iter().map(|(_, s)| s).collect() };
    assert_eq!(
        ids(run(&all, "/x?a=evil&b=evil", b"")),
        [
            "early ARGS:b", // 20: matched before the ctl (a, then b: the last is named)
            "t1 ARGS:b",
            "t2 ARGS:b",
            "t1x ARGS:b",
            "xt1 ARGS:b"
        ]
    );
    // Only the rules whose tags `^t1` matches lose ARGS:a.
    let m = run(&all, "/x?a=evil", b"");
    assert_eq!(ids(m), ["early ARGS:a", "t2 ARGS:a", "xt1 ARGS:a"]);
    let m = run(&all, "/y?a=evil", b"");
    assert_eq!(
        ids(m),
        ["early ARGS:a", "t1 ARGS:a", "t1x ARGS:a", "xt1 ARGS:a"]
    );
}

#[test]
fn tag_selectors_select_the_rules_whose_tags_match() {
    let rules = format!(
        "{CTL_RULES}SecRule REQUEST_URI \"@contains /z\" \"id:12,phase:1,pass,nolog,ctl:ruleRemoveByTag=t2\"\n"
    );
    let (all, _) = programs(&rules);
    let mut selectors = 0;
    for rule in &all.rules {
        for ctl in &rule.ctls {
            let (CtlAction::RemoveByTag(s) | CtlAction::RemoveTargetByTag(s, _)) = ctl else {
                continue;
            };
            selectors += 1;
            // Filled at load time, one bit per rule.
            assert_eq!(s.rules.len(), all.rules.len().div_ceil(64));
            for r in &all.rules {
                let by_regex = r.meta.tags.iter().any(|t| s.re.is_match(t.as_bytes()));
                assert_eq!(s.selects(r), by_regex, "rule {} with {}", r.id, s.re);
            }
        }
    }
    assert_eq!(selectors, 2);
}
