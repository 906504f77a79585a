//! Log messages composed when a record is read (part of pre-pruning): a logged
//! rule's `msg` and `logdata` are expanded at its match only when the state they
//! read may still change afterwards. The rest are expanded when the records are
//! first read (`Transaction::matched_rules`), which most transactions never do
//! without an audit log; CRS's 980170 expands 21 TX members on every request that
//! scored.
//!
//! A rule may compose late when every variable part of its `msg` and `logdata` is
//! a TX member named by a literal key (not a capture group, `TX:0`-`TX:9`) that no
//! rule which may run after it writes: no later rule of its phase, no rule of a
//! later phase, no link of its own chain (each chain's writes and additions as
//! [`crate::ordering::footprint`] finds them, a key built from macros covering
//! every key its literal prefix begins). Rules only ever run in phase order and
//! forward within a phase, and rule ordering keeps every pair whose reads and
//! writes overlap in the order written (the same footprints), so whatever runs
//! after the match writes none of those members: expanding them at any later
//! time gives the text the match would have given. Nothing but rules writes TX
//! members other than the capture groups, and a member changes with time only by
//! an `expirevar`: a program with one on TX composes every message at its match.

use crate::macros::Part;
use crate::ordering::footprint::{self, Key};
use crate::rule::{RuleIdx, Step};
use crate::variable::Var;
use crate::Program;

/// Sets [`crate::rule::Rule::defer_log`] on every logged chain starter whose
/// messages may be composed when its record is read (see the module notes).
pub(crate) fn mark(program: &mut Program) {
    let deferred = deferrable(program);
    for (rule, d) in program.rules.iter_mut().zip(deferred) {
        rule.defer_log = d;
    }
}

/// By rule index: whether the rule's messages may be composed late.
fn deferrable(program: &Program) -> Vec<bool> {
    let mut out = vec![false; program.rules.len()];
    // A member given an expiry changes with time, not only by a rule's write:
    // then every message is composed at its match.
    let expiring = program
        .rules
        .iter()
        .any(|r| r.expirevars.iter().any(|(var, _, _)| *var == Var::Tx));
    if expiring {
        return out;
    }
    // The keys written after the step being looked at, walking the program
    // backwards: phase 5's last step first.
    let mut later: Vec<Key> = Vec::new();
    for steps in program.phases.iter().rev() {
        for step in steps.iter().rev() {
            let Step::Rule(idx) = *step else {
                continue;
            };
            let f = footprint::of_chain(program, idx);
            let own: Vec<&Key> = f.writes.iter().chain(&f.adds).collect();
            if let Some(reads) = message_reads(program, idx) {
                let written = |k: &Key| {
                    later.iter().any(|w| w.overlaps(k)) || own.iter().any(|w| w.overlaps(k))
                };
                if !reads.iter().any(written) {
                    if let Some(d) = out.get_mut(idx as usize) {
                        *d = true;
                    }
                }
            }
            for k in own {
                if !later.contains(k) {
                    later.push(k.clone());
                }
            }
        }
    }
    out
}

/// The TX members rule `idx`'s `msg` and `logdata` read, when it is a logged rule
/// with at least one variable part and every one is a TX member named by a
/// literal key other than a capture group; `None` otherwise.
fn message_reads(program: &Program, idx: RuleIdx) -> Option<Vec<Key>> {
    let rule = program.rules.get(idx as usize)?;
    if rule.id == 0 || !rule.log {
        return None;
    }
    let mut reads = Vec::new();
    for m in [&rule.meta.msg, &rule.meta.logdata].into_iter().flatten() {
        for part in m.parts() {
            match part {
                Part::Literal(_) => {}
                Part::Var {
                    var: Var::Tx,
                    key: Some(k),
                    ..
                } if !(k.len() == 1 && k.as_bytes()[0].is_ascii_digit()) => {
                    reads.push(Key {
                        col: "tx".to_string(),
                        name: Some(k.to_ascii_lowercase()),
                        prefix: false,
                    });
                }
                Part::Var { .. } => return None,
            }
        }
    }
    (!reads.is_empty()).then_some(reads)
}

#[cfg(test)]
mod tests {
    use crate::{Options, Program};

    fn program(text: &str) -> std::sync::Arc<Program> {
        Program::from_str_with("t.conf", text, &Options::default())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn deferred(p: &Program, id: u32) -> bool {
        p.rules
            .iter()
            .find(|r| r.id == id)
            .is_some_and(|r| r.defer_log)
    }

    #[test]
    fn a_message_of_members_no_later_rule_writes_is_composed_late() {
        let p = program(
            r#"
SecRuleEngine On
SecAction "id:1,phase:1,pass,nolog,setvar:tx.score=5"
SecRule ARGS "@rx a" "id:2,phase:2,pass,log,msg:'score %{tx.score} of %{tx.other}',logdata:'x'"
SecRule ARGS "@rx b" "id:3,phase:2,pass,log,msg:'score %{tx.score}',setvar:tx.other=1"
SecRule ARGS "@rx c" "id:4,phase:2,pass,log,msg:'at %{MATCHED_VAR}'"
SecRule ARGS "@rx d" "id:5,phase:2,pass,log,msg:'group %{tx.1}'"
SecRule ARGS "@rx e" "id:6,phase:2,pass,log,msg:'literal'"
SecRule ARGS "@rx f" "id:7,phase:1,pass,log,msg:'%{tx.score}'"
SecRule ARGS "@rx g" "id:8,phase:3,pass,nolog,setvar:'tx.sc%{tx.x}=1'"
SecRule ARGS "@rx h" "id:9,phase:4,pass,log,msg:'%{tx.other} %{tx.score}'"
SecRule ARGS "@rx i" "id:10,phase:4,pass,log,msg:'%{tx.late}',chain"
    SecRule ARGS "@rx j" "setvar:tx.late=1"
"#,
        );
        // tx.other is written later in phase 2 (rule 3).
        assert!(!deferred(&p, 2));
        // tx.score: written only in phase 1, before; phase 3's macro key
        // `sc...` may name it.
        assert!(!deferred(&p, 3));
        assert!(!deferred(&p, 7));
        // After phase 3 nothing writes tx.other or tx.score.
        assert!(deferred(&p, 9));
        // MATCHED_VAR, capture groups and literal messages compose at the match.
        assert!(!deferred(&p, 4));
        assert!(!deferred(&p, 5));
        assert!(!deferred(&p, 6));
        // Its own chain link writes tx.late.
        assert!(!deferred(&p, 10));
    }

    #[test]
    fn an_expiring_tx_member_composes_every_message_at_its_match() {
        let p = program(
            r#"
SecRuleEngine On
SecAction "id:1,phase:1,pass,nolog,setvar:tx.a=1,expirevar:tx.a=1"
SecRule ARGS "@rx h" "id:2,phase:4,pass,log,msg:'%{tx.b}'"
"#,
        );
        assert!(!deferred(&p, 2));
        let p = program(r#"SecRule ARGS "@rx h" "id:2,phase:4,pass,log,msg:'%{tx.b}'""#);
        assert!(deferred(&p, 2));
    }
}
