//! Folded rules whose match only sets MATCHED_VAR(S) and HIGHEST_SEVERITY (CRS's
//! paranoia-level gates), or that and `setvar`s (CRS's anomaly-score sums), are
//! applied by the rule loop without being evaluated: the rules after them see
//! the same MATCHED_VARS, severity and TX as with plain evaluation.

use std::sync::Arc;

use engine::{Connection, Options, Program, Transaction};

#[path = "support/outcome.rs"]
mod outcome;

/// 2 is a gate folded at load time (phase 1 set the level): it matches and jumps
/// over 3; 4 reads the MATCHED_VARS and severity it left; 5 is folded to "never
/// matches", which clears MATCHED_VARS, so 6 does not match.
const RULES: &str = "SecRuleEngine On\n\
SecAction \"id:1,phase:1,pass,nolog,setvar:tx.level=1\"\n\
SecRule TX:level \"@lt 2\" \"id:2,phase:2,pass,nolog,severity:4,skipAfter:END-GATE\"\n\
SecRule ARGS \"@rx never\" \"id:3,phase:2,deny,status:403\"\n\
SecMarker END-GATE\n\
SecRule MATCHED_VARS \"@streq 1\" \"id:4,phase:2,pass,log,msg:'after the gate: %{MATCHED_VAR_NAME}=%{MATCHED_VAR}, severity %{HIGHEST_SEVERITY}'\"\n\
SecRule TX:level \"@eq 5\" \"id:5,phase:2,pass,nolog\"\n\
SecRule MATCHED_VARS \"@rx .\" \"id:6,phase:2,deny,status:403,msg:'left over'\"\n\
SecRule ARGS:q \"@streq a\" \"id:7,phase:2,pass,nolog,skipAfter:END-GATE-2\"\n\
SecRule TX:level \"@lt 3\" \"id:8,phase:2,pass,nolog,skipAfter:END-GATE-2\"\n\
SecRule ARGS \"@rx never\" \"id:9,phase:2,deny,status:403\"\n\
SecMarker END-GATE-2\n\
SecRule MATCHED_VARS_NAMES \"@rx .\" \"id:10,phase:2,pass,log,msg:'%{MATCHED_VAR}'\"\n";

fn compile(name: &str, text: &str, options: &Options) -> Arc<Program> {
    Program::from_str_with(name, text, options).unwrap_or_else(|e| panic!("{e}"))
}

/// `text` compiled with every optimisation and with none.
fn optimised_and_plain(name: &str, text: &str) -> (Arc<Program>, Arc<Program>) {
    (
        compile(name, text, &Options::default()),
        compile(name, text, &Options::none()),
    )
}

/// Rule `id`'s load-time result (the test fails when it has none).
fn folded(program: &Program, id: u32) -> &engine::prune::StaticResult {
    program
        .rules
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("rule {id}"))
        .static_result
        .as_ref()
        .unwrap_or_else(|| panic!("rule {id} is not folded"))
}

/// The phase-2 step of rule `id` (the test fails when it has none).
fn phase2_step(program: &Program, id: u32) -> usize {
    program.phases[1]
        .iter()
        .position(
            |s| matches!(*s, engine::rule::Step::Rule(r) if program.rules[r as usize].id == id),
        )
        .unwrap_or_else(|| panic!("rule {id} has no step"))
}

/// Decision and matched rules (id and message) after phase 2.
fn run(program: &Arc<Program>, uri: &str) -> (u16, Vec<(u32, String)>) {
    let mut tx = Transaction::new(Arc::clone(program), &Connection::default());
    tx.process_uri(uri, "GET", "1.1");
    tx.add_request_header(b"Host", b"example.com");
    let _ = tx.process_request_headers();
    let _ = tx.process_request_body();
    outcome::decision(&tx)
}

#[test]
fn gates_applied_by_the_rule_loop_leave_what_evaluation_leaves() {
    let (optimised, plain) = optimised_and_plain("gates.conf", RULES);
    // The gates are folded, and simple enough for the loop to apply.
    for id in [2, 5, 8] {
        assert!(folded(&optimised, id).plain, "rule {id}");
    }
    for uri in ["/", "/?q=a", "/?q=b"] {
        let got = run(&optimised, uri);
        assert_eq!(got, run(&plain, uri), "{uri}");
        assert_eq!(got.0, 200, "{uri}");
        assert_eq!(
            got.1.first(),
            Some(&(
                4,
                "after the gate: MATCHED_VARS:level=1, severity 4".to_string()
            )),
            "{uri}"
        );
    }
    // Without ARGS:q=a, gate 8 matches: its entry is the only one rule 10 sees
    // (rule 7 did not match and cleared the list).
    assert_eq!(
        run(&optimised, "/?q=b").1.last(),
        Some(&(10, "TX:level".to_string()))
    );
}

/// After a prefiltered rule its group's admission rules out, the loop passes over
/// the steps that follow as long as they would only clear MATCHED_VARS: 11 (folded
/// to "never matches") and 12 when its literal is absent. It stops at 13, folded
/// to a match: its MATCHED_VARS entry and jump reach 15; and at 12 when `evil`
/// occurs (12 then matches and jumps over 13 to 16). 17 is folded to a match that
/// jumps over 18 to 19, folded to "never matches": 17's MATCHED_VARS entry is
/// cleared there unread, so the loop passes over 17 as a jump, and 20 sees no
/// entry.
const PASSED: &str = "SecRuleEngine On\n\
SecAction \"id:1,phase:1,pass,nolog,setvar:tx.level=1\"\n\
SecRule ARGS \"@rx attack\" \"id:10,phase:2,deny,status:403\"\n\
SecRule TX:level \"@eq 5\" \"id:11,phase:2,pass,nolog\"\n\
SecRule ARGS \"@rx evil\" \"id:12,phase:2,pass,log,msg:'evil',skipAfter:END-EVIL\"\n\
SecRule TX:level \"@lt 2\" \"id:13,phase:2,pass,nolog,skipAfter:END-GATE\"\n\
SecRule ARGS \"@rx foo\" \"id:14,phase:2,deny,status:403\"\n\
SecMarker END-GATE\n\
SecRule MATCHED_VARS \"@streq 1\" \"id:15,phase:2,pass,log,msg:'%{MATCHED_VAR_NAME}'\"\n\
SecMarker END-EVIL\n\
SecRule ARGS \"@rx other\" \"id:16,phase:2,pass,log,msg:'other'\"\n\
SecRule TX:level \"@lt 3\" \"id:17,phase:2,pass,nolog,skipAfter:END-3\"\n\
SecRule ARGS \"@rx foo\" \"id:18,phase:2,deny,status:403\"\n\
SecMarker END-3\n\
SecRule TX:level \"@eq 7\" \"id:19,phase:2,pass,nolog\"\n\
SecRule MATCHED_VARS_NAMES \"@rx .\" \"id:20,phase:2,pass,log,msg:'left over %{MATCHED_VAR}'\"\n";

#[test]
fn the_loop_passes_over_ruled_out_and_never_matching_rules_and_stops_where_one_may_match() {
    let (optimised, plain) = optimised_and_plain("passed.conf", PASSED);
    // 11 and 13 are folded and plain; 10, 12 and 14 are gated.
    for (id, never) in [(11, true), (13, false)] {
        let folded = folded(&optimised, id);
        assert!(folded.plain, "rule {id}");
        assert_eq!(folded.matches.is_empty(), never, "rule {id}");
    }
    let step = |id: u32| phase2_step(&optimised, id);
    for id in [10, 12, 14, 16] {
        assert!(optimised.step_gates.at(2, step(id)).is_some(), "rule {id}");
    }
    // 11 is passed over; 13 is not (its entry reaches 15, a rule, not a clear).
    assert_eq!(optimised.step_gates.pass(2, step(11)), Some(step(11) + 1));
    assert_eq!(optimised.step_gates.pass(2, step(13)), None);
    assert!(optimised
        .step_gates
        .pass(2, step(17))
        .is_some_and(|n| n > step(18) && n <= step(19)));
    let cases: [(&str, &[(u32, &str)]); 4] = [
        ("/", &[(15, "MATCHED_VARS:level")]),
        ("/?q=benign", &[(15, "MATCHED_VARS:level")]),
        ("/?q=evil", &[(12, "evil")]),
        ("/?q=other", &[(15, "MATCHED_VARS:level"), (16, "other")]),
    ];
    for (uri, want) in cases {
        let got = run(&optimised, uri);
        assert_eq!(got, run(&plain, uri), "{uri}");
        let want: Vec<(u32, String)> = want.iter().map(|&(i, m)| (i, m.to_string())).collect();
        assert_eq!(got, (200, want), "{uri}");
    }
}

/// Phase 2 opens with a folded rule the loop passes over, and the pass reaches a
/// gated rule over ARGS, which the request body filled after phase 1 (new request
/// data): the pass must put it to an admission made for the new data, not to
/// phase 1's (where ARGS was empty and rule 2, of the same group, was ruled out).
const NEW_DATA: &str = "SecRuleEngine On\n\
SecRequestBodyAccess On\n\
SecAction \"id:1,phase:1,pass,nolog,setvar:tx.level=1\"\n\
SecRule ARGS \"@rx attack\" \"id:2,phase:1,pass,log,msg:'phase 1'\"\n\
SecRule TX:level \"@eq 5\" \"id:3,phase:2,pass,nolog\"\n\
SecRule ARGS \"@rx attack\" \"id:4,phase:2,deny,status:403,msg:'phase 2'\"\n";

#[test]
fn a_pass_puts_gated_rules_to_the_admission_of_the_current_data() {
    for options in [Options::default(), Options::none()] {
        let program = Program::from_str_with("new-data.conf", NEW_DATA, &options)
            .unwrap_or_else(|e| panic!("{e}"));
        for _ in 0..2 {
            let mut tx = Transaction::new(Arc::clone(&program), &Connection::default());
            tx.process_uri("/form", "POST", "1.1");
            tx.add_request_header(b"Host", b"example.com");
            tx.add_request_header(b"Content-Type", b"application/x-www-form-urlencoded");
            let _ = tx.process_request_headers();
            let _ = tx.append_request_body(b"q=attack");
            let _ = tx.process_request_body();
            assert_eq!(
                outcome::decision(&tx),
                (403, vec![(4, "phase 2".to_string())]),
                "{options:?}"
            );
        }
    }
}

/// A rule folded to a match with effects of its own (a `setvar`, a logged
/// message) is not plain: the loop evaluates its effects, which read its match
/// (MATCHED_VAR, MATCHED_VAR_NAME) as plain evaluation gives it; the rule after
/// it reads the value it copied.
const EFFECTS: &str = "SecRuleEngine On\n\
SecAction \"id:1,phase:1,pass,nolog,setvar:tx.level=3\"\n\
SecRule TX:level \"@gt 2\" \"id:2,phase:2,pass,log,msg:'seen %{MATCHED_VAR_NAME}=%{MATCHED_VAR}',setvar:tx.copy=%{MATCHED_VAR}\"\n\
SecRule TX:copy \"@streq 3\" \"id:3,phase:2,pass,log,msg:'copied %{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n";

#[test]
fn folded_matches_with_effects_read_their_match() {
    let (optimised, plain) = optimised_and_plain("effects.conf", EFFECTS);
    let gate = folded(&optimised, 2);
    assert!(!gate.plain && !gate.matches.is_empty());
    let got = run(&optimised, "/?q=1");
    assert_eq!(got, run(&plain, "/?q=1"));
    assert_eq!(
        got.1,
        vec![
            (2, "seen TX:level=3".to_string()),
            (3, "copied TX:copy=3".to_string())
        ]
    );
}

/// A `ctl:ruleRemoveById` in phase 2 removes the folded gate 5, whose match would
/// jump over 6: the rule loop keeps passing over ruled-out rules by the stop mask
/// after the removal, and such a pass (from 3, ruled out without `attack`) takes
/// no jump at the removed gate, so 6 is evaluated as without any optimisation.
const REMOVED_GATE: &str = "SecRuleEngine On\n\
SecAction \"id:1,phase:1,pass,nolog,setvar:tx.level=1\"\n\
SecRule ARGS:rm \"@streq 1\" \"id:2,phase:2,pass,nolog,ctl:ruleRemoveById=5\"\n\
SecRule ARGS \"@rx attack\" \"id:3,phase:2,deny,status:403,msg:'attack'\"\n\
SecRule TX:level \"@lt 3\" \"id:5,phase:2,pass,nolog,skipAfter:END-GATE\"\n\
SecRule ARGS \"@rx foo\" \"id:6,phase:2,deny,status:403,msg:'foo'\"\n\
SecMarker END-GATE\n\
SecRule TX:level \"@eq 7\" \"id:7,phase:2,pass,nolog\"\n\
SecRule ARGS \"@rx bar\" \"id:8,phase:2,pass,log,msg:'bar'\"\n";

#[test]
fn a_pass_takes_no_jump_at_a_gate_a_ctl_removed() {
    let (optimised, plain) = optimised_and_plain("removed-gate.conf", REMOVED_GATE);
    assert!(folded(&optimised, 5).plain);
    let step = |id: u32| phase2_step(&optimised, id);
    // 3 and 6 are gated; the gate is passed over as a jump beyond 6.
    for id in [3, 6] {
        assert!(optimised.step_gates.at(2, step(id)).is_some(), "rule {id}");
    }
    assert!(optimised
        .step_gates
        .pass(2, step(5))
        .is_some_and(|n| n > step(6)));
    type Case = (&'static str, u16, &'static [(u32, &'static str)]);
    let cases: [Case; 5] = [
        ("/?q=foo", 200, &[]),
        ("/?rm=1&q=foo", 403, &[(6, "foo")]),
        ("/?rm=1&q=foo+bar", 403, &[(6, "foo")]),
        ("/?rm=1&q=bar", 200, &[(8, "bar")]),
        ("/?rm=1&q=attack", 403, &[(3, "attack")]),
    ];
    for (uri, status, want) in cases {
        let got = run(&optimised, uri);
        assert_eq!(got, run(&plain, uri), "{uri}");
        let want: Vec<(u32, String)> = want.iter().map(|&(i, m)| (i, m.to_string())).collect();
        assert_eq!(got, (status, want), "{uri}");
    }
}

/// Folded matches whose only other effects are `setvar`s (CRS's anomaly-score
/// sums, 949052 and the like) are applied by the rule loop too: each match's
/// entry, then the `setvar`s, which read it (`%{MATCHED_VAR}`). Adding a zero
/// score leaves a member as it is, and one not written as its number (`007`)
/// is written as the sum's number, as evaluation writes it.
const SUMS: &str = "SecRuleEngine On\n\
SecAction \"id:1,phase:1,pass,nolog,setvar:tx.level=1,setvar:tx.odd=007,setvar:tx.total=0\"\n\
SecRule ARGS:q \"@streq bad\" \"id:2,phase:2,pass,nolog,setvar:tx.score=+5\"\n\
SecRule TX:level \"@ge 1\" \"id:3,phase:2,pass,nolog,setvar:'tx.total=+%{tx.score}',setvar:'tx.odd=+%{tx.score}',setvar:'tx.seen=%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'\"\n\
SecRule TX:level \"@ge 1\" \"id:4,phase:2,pass,nolog,setvar:'tx.total=+%{tx.score}'\"\n\
SecRule TX:total \"@ge 10\" \"id:5,phase:2,deny,status:403,msg:'total %{tx.total}'\"\n\
SecRule TX:odd \"@rx ^\\d+$\" \"id:6,phase:2,pass,log,msg:'odd %{tx.odd}, seen %{tx.seen}'\"\n";

#[test]
fn folded_score_sums_are_applied_by_the_rule_loop() {
    let (optimised, plain) = optimised_and_plain("sums.conf", SUMS);
    for id in [3, 4] {
        let sum = folded(&optimised, id);
        assert!(sum.setvars_only && !sum.plain, "rule {id}");
    }
    for (uri, want) in [
        ("/", (200, vec![(6, "odd 7, seen TX:level=1".to_string())])),
        ("/?q=bad", (403, vec![(5, "total 10".to_string())])),
    ] {
        let got = run(&optimised, uri);
        assert_eq!(got, run(&plain, uri), "{uri}");
        assert_eq!(got, want, "{uri}");
    }
}
