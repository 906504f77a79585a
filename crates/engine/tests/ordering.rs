//! Rule ordering and early exit: results against plain evaluation.

use std::sync::Arc;

use engine::profile::Profile;
use engine::{Connection, Intervention, Options, Program, Transaction};

/// A self-contained rule set: deny rules of different selectivity, one with
/// another status, a logging pass rule and a setvar/reader pair.
const SELF_CONTAINED: &str = "SecRuleEngine On\n\
SecDefaultAction \"phase:2,log,auditlog,deny,status:403\"\n\
SecRule ARGS \"@contains other\" \"id:14,phase:2,deny,status:406\"\n\
SecRule ARGS \"@contains note\" \"id:15,phase:2,pass,log\"\n\
SecRule ARGS \"@contains flag\" \"id:16,phase:2,pass,nolog,setvar:tx.flag=1\"\n\
SecRule TX:flag \"@eq 1\" \"id:17,phase:2,deny,status:409\"\n\
SecRule ARGS \"@rx (?:a|b)+c{2,}d*e\" \"id:10,phase:2,deny,t:lowercase\"\n\
SecRule ARGS \"@rx zz[0-9]+\" \"id:11,phase:2,deny,t:lowercase\"\n\
SecRule ARGS \"@contains rare1\" \"id:12,phase:2,deny\"\n\
SecRule ARGS \"@contains rare2\" \"id:13,phase:2,deny\"\n\
SecRule ARGS \"@contains attack\" \"id:18,phase:2,deny\"\n\
SecRule ARGS \"@contains evil\" \"id:19,phase:2,deny\"\n";

fn run(
    program: &Arc<Program>,
    query: &str,
    profile: Option<&mut Profile>,
) -> (Option<u16>, Vec<u32>) {
    let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
    if profile.is_some() {
        tx.enable_profile();
    }
    tx.process_uri(&format!("/?{query}"), "GET", "1.1");
    tx.add_request_header(b"Host", b"example.com");
    let _ = tx.process_request_headers();
    let _ = tx.process_request_body();
    tx.process_logging();
    if let (Some(acc), Some(p)) = (profile, tx.profile()) {
        acc.merge(p);
    }
    let status = tx.intervention().map(Intervention::status);
    let ids = tx.matched_rules().iter().map(|m| m.id).collect();
    (status, ids)
}

fn learn(program: &Arc<Program>, queries: &[&str], repeat: usize) -> Profile {
    let mut profile = Profile::new(program.rules.len());
    for _ in 0..repeat {
        for q in queries {
            run(program, q, Some(&mut profile));
        }
    }
    profile
}

#[test]
fn self_contained_ordering_keeps_decisions_and_matches() {
    let plain = Program::from_str_with("t.conf", SELF_CONTAINED, &Options::none())
        .unwrap_or_else(|e| panic!("{e}"));
    let options = Options::parse("all").unwrap_or_else(|e| panic!("{e}"));
    // Traffic where the last rules (18, 19) catch most attacks.
    let training = [
        "q=hello", "q=attack", "q=evil", "q=attack", "q=evil", "q=hi",
    ];
    let learner = Program::from_str_with("t.conf", SELF_CONTAINED, &options)
        .unwrap_or_else(|e| panic!("{e}"));
    let profile = learn(&learner, &training, 20);
    let plan = engine::ordering::plan(&learner, &profile);
    assert!(plan.moved() > 0, "nothing moved: {plan:?}");
    // 17 reads what 16 writes, 14 and 17 have other statuses, 15 and 16 have
    // effects: none of the exits after them may pass them.
    let fresh = Program::from_str_with("t.conf", SELF_CONTAINED, &options)
        .unwrap_or_else(|e| panic!("{e}"));
    let (ordered, moved) = Program::reordered(fresh, &plan).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(moved, plan.moved());
    let order = ordered.rule_ids(2);
    let pos = |id: u32| order.iter().position(|&x| x == id).unwrap_or(usize::MAX);
    assert!(pos(16) < pos(17));
    assert!(pos(14) < pos(15) && pos(15) < pos(16));
    assert!([10, 11, 12, 13, 18, 19].iter().all(|&i| pos(17) < pos(i)));
    assert!(
        pos(18) < pos(10),
        "the frequent exit did not move up: {order:?}"
    );
    // Requests that match at most one exit: identical decisions and matches.
    for q in [
        "q=hello",
        "q=attack",
        "q=evil",
        "q=other",
        "q=note",
        "q=flag",
        "q=abcce",
        "q=zz12",
        "q=note&r=evil",
        "q=flag&r=note",
        "q=nothing&r=else",
    ] {
        assert_eq!(run(&plain, q, None), run(&ordered, q, None), "{q}");
    }
    // Several exits of the same kind: the same decision, reported by one of them.
    let (a, _) = run(&plain, "q=attack&r=zz1", None);
    let (b, ids) = run(&ordered, "q=attack&r=zz1", None);
    assert_eq!(a, b);
    assert!(ids.len() == 1 && [11, 18].contains(&ids[0]), "{ids:?}");
}

/// A small anomaly-scoring set shaped like the CRS: initialisation, detection
/// rules adding to a score, the blocking section and the blocking rule.
const ANOMALY: &str = "SecRuleEngine On\n\
SecDefaultAction \"phase:2,log,auditlog,pass\"\n\
SecAction \"id:1,phase:1,pass,nolog,setvar:tx.critical=5,setvar:tx.threshold=5,setvar:tx.score_pl1=0\"\n\
SecRule ARGS \"@contains alpha\" \"id:100,phase:2,block,setvar:'tx.score_pl1=+%{tx.critical}'\"\n\
SecRule ARGS \"@contains beta\" \"id:101,phase:2,block,setvar:'tx.score_pl1=+%{tx.critical}'\"\n\
SecRule ARGS \"@contains gamma\" \"id:102,phase:2,block,setvar:'tx.score_pl1=+%{tx.critical}'\"\n\
SecRule ARGS \"@contains delta\" \"id:103,phase:2,block,setvar:'tx.score_pl1=+%{tx.critical}'\"\n\
SecAction \"id:200,phase:2,pass,nolog,setvar:tx.blocking=0\"\n\
SecAction \"id:201,phase:2,pass,nolog,setvar:'tx.blocking=+%{tx.score_pl1}'\"\n\
SecRule TX:BLOCKING \"@ge %{tx.threshold}\" \"id:300,phase:2,deny,status:403,msg:'score %{tx.blocking}'\"\n";

#[test]
fn early_exit_keeps_decisions_and_drops_only_later_matches() {
    let plain = Program::from_str_with(
        "a.conf",
        ANOMALY,
        &Options::parse("all").unwrap_or_else(|e| panic!("{e}")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(plain.ordering.early_exit.iter().all(Option::is_none));
    let options = Options::parse("all,early_exit").unwrap_or_else(|e| panic!("{e}"));
    let early =
        Program::from_str_with("a.conf", ANOMALY, &options).unwrap_or_else(|e| panic!("{e}"));
    let exit = early.ordering.early_exit[1]
        .as_ref()
        .unwrap_or_else(|| panic!("no early exit found"));
    assert_eq!(exit.scores, vec!["score_pl1".to_string()]);
    for q in [
        "q=x",
        "q=alpha",
        "q=beta&r=gamma",
        "q=alpha&r=beta&s=delta",
        "q=delta",
    ] {
        let (sa, ia) = run(&plain, q, None);
        let (sb, ib) = run(&early, q, None);
        assert_eq!(sa, sb, "{q}");
        if sa.is_none() {
            assert_eq!(ia, ib, "{q}");
        } else {
            // The first detection match reaches the threshold: later detection
            // matches are skipped; the blocking rule still reports.
            assert!(ib.iter().all(|id| ia.contains(id)), "{q}: {ib:?} vs {ia:?}");
            assert_eq!(ib.last(), Some(&300));
            assert_eq!(ib.len(), 2, "{q}: {ib:?}");
        }
    }
    // A section rule whose outcome is not static: no proof, no early exit.
    let gated = ANOMALY.replace(
        "SecAction \"id:201,phase:2,",
        "SecRule REQUEST_METHOD \"@streq GET\" \"id:201,phase:2,",
    );
    let p = Program::from_str_with("a.conf", &gated, &options).unwrap_or_else(|e| panic!("{e}"));
    assert!(p.ordering.early_exit[1].is_none());
    // A detection rule that lowers the score ends the region after it.
    let lowering = ANOMALY.replace(
        "id:101,phase:2,block,setvar:'tx.score_pl1=+%{tx.critical}'",
        "id:101,phase:2,block,setvar:'tx.score_pl1=-%{tx.critical}'",
    );
    let p = Program::from_str_with("a.conf", &lowering, &options).unwrap_or_else(|e| panic!("{e}"));
    let exit = p.ordering.early_exit[1]
        .as_ref()
        .unwrap_or_else(|| panic!("no exit"));
    let first = p.phases[1]
        .iter()
        .position(|s| matches!(s, engine::rule::Step::Rule(i) if p.rules[*i as usize].id == 102));
    assert_eq!(Some(exit.from), first);
}

#[test]
fn ordering_with_early_exit_puts_frequent_detections_first() {
    let options = Options::parse("all,early_exit").unwrap_or_else(|e| panic!("{e}"));
    let learner =
        Program::from_str_with("a.conf", ANOMALY, &options).unwrap_or_else(|e| panic!("{e}"));
    let profile = learn(&learner, &["q=delta", "q=delta", "q=x", "q=gamma"], 20);
    let plan = engine::ordering::plan(&learner, &profile);
    assert!(plan.moved() > 0);
    assert!(plan.segments.iter().all(|s| s.anomaly));
    let fresh =
        Program::from_str_with("a.conf", ANOMALY, &options).unwrap_or_else(|e| panic!("{e}"));
    let (ordered, _) = Program::reordered(fresh, &plan).unwrap_or_else(|e| panic!("{e}"));
    let plain = Program::from_str_with("a.conf", ANOMALY, &Options::none())
        .unwrap_or_else(|e| panic!("{e}"));
    for q in ["q=x", "q=delta", "q=alpha&r=delta", "q=gamma&r=beta"] {
        let (sa, ia) = run(&plain, q, None);
        let (sb, ib) = run(&ordered, q, None);
        assert_eq!(sa, sb, "{q}");
        assert!(ib.iter().all(|id| ia.contains(id)), "{q}");
        // Matches are reported in the original rule order.
        let mut sorted = ib.clone();
        sorted.sort_unstable();
        assert_eq!(ib, sorted, "{q}");
    }
    // Without `order` in the options a plan is refused.
    let off = Program::from_str_with("a.conf", ANOMALY, &Options::none())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(Program::reordered(off, &plan).is_err());
}
