//! Comparing an optimised run's [`Outcome`] with the reference's (every optimisation
//! off): exactly, or — when ordering with early exit is on — under the rule of
//! [`early_exit_consistent`].

use std::collections::BTreeSet;
use std::fmt;

use engine::audit::MatchedRule;
use serde::Serialize;
use serde_json::Value;

use super::outcome::Outcome;

/// What differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The intervention (status, kind, deciding rule) or the phase it came in.
    Decision,
    /// The list of matched rules (ids in order, messages, data, matched values).
    MatchedRules,
    /// A TX anomaly score.
    AnomalyScore,
    /// Another TX variable.
    TxVariables,
    /// The JSON audit record.
    AuditRecord,
}

impl Kind {
    /// The name used in summaries.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Decision => "decision",
            Kind::MatchedRules => "matched rules",
            Kind::AnomalyScore => "anomaly score",
            Kind::TxVariables => "TX variables",
            Kind::AuditRecord => "audit record",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One difference of one kind in one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What differs.
    pub kind: Kind,
    /// The rules involved (those only one side matched or matched differently; the
    /// deciding rules of a decision).
    pub rule_ids: Vec<u32>,
    /// A readable description: reference against optimised.
    pub detail: String,
}

/// How strictly to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Everything identical (every optimisation but early exit).
    #[default]
    Exact,
    /// Ordering with early exit: the same decision; the optimised run's matched
    /// rules are the reference's minus ones skipped after the threshold was
    /// crossed (see [`early_exit_consistent`]).
    EarlyExit {
        /// Rule ordering is on too: the optimised run's rules of the deciding phase
        /// may come in another order (a subset rather than a prefix).
        reordered: bool,
    },
}

/// Compares the reference outcome with the optimised one; empty when they agree.
pub fn compare(reference: &Outcome, optimised: &Outcome, mode: Mode) -> Vec<Finding> {
    let mut out = Vec::new();
    if reference.decision != optimised.decision {
        let ids = [&reference.decision, &optimised.decision]
            .iter()
            .filter_map(|d| d.as_ref().and_then(|d| rule_of(&d.intervention)))
            .collect::<BTreeSet<u32>>();
        out.push(Finding {
            kind: Kind::Decision,
            rule_ids: ids.into_iter().collect(),
            detail: format!(
                "reference {}, optimised {}",
                json(&reference.decision),
                json(&optimised.decision)
            ),
        });
    }
    let early = match mode {
        Mode::Exact => None,
        Mode::EarlyExit { reordered } => Some(reordered),
    };
    match early {
        None => {
            if reference.matched != optimised.matched {
                out.push(matched_finding(&reference.matched, &optimised.matched));
            }
            if let Some(f) = map_finding(Kind::AnomalyScore, reference, optimised, |o| &o.scores) {
                out.push(f);
            }
            if let Some(f) = map_finding(Kind::TxVariables, reference, optimised, |o| &o.tx) {
                out.push(f);
            }
            let paths = json_diff(&reference.audit, &optimised.audit, 5);
            if !paths.is_empty() {
                out.push(Finding {
                    kind: Kind::AuditRecord,
                    rule_ids: Vec::new(),
                    detail: paths.join("\n"),
                });
            }
        }
        Some(reordered) => {
            let phase = reference.decision.as_ref().map(|d| d.phase);
            let decider = reference
                .decision
                .as_ref()
                .and_then(|d| rule_of(&d.intervention));
            if let Err(why) = early_exit_consistent(
                &reference.matched,
                &optimised.matched,
                phase,
                decider,
                reordered,
            ) {
                let mut f = matched_finding(&reference.matched, &optimised.matched);
                f.detail = format!("{why}\n{}", f.detail);
                out.push(f);
            }
            if let Some(f) = scores_after_early_exit(reference, optimised) {
                out.push(f);
            }
            // Matched rules and their messages are checked above; the rest of the
            // record must be identical.
            let strip = |v: &Value| {
                let mut v = v.clone();
                if let Some(t) = v.get_mut("transaction").and_then(Value::as_object_mut) {
                    t.remove("messages");
                    t.remove("matched_rules");
                }
                v
            };
            let paths = json_diff(&strip(&reference.audit), &strip(&optimised.audit), 5);
            if !paths.is_empty() {
                out.push(Finding {
                    kind: Kind::AuditRecord,
                    rule_ids: Vec::new(),
                    detail: paths.join("\n"),
                });
            }
        }
    }
    out
}

fn rule_of(i: &engine::Intervention) -> Option<u32> {
    match i {
        engine::Intervention::Deny { rule_id, .. }
        | engine::Intervention::Drop { rule_id }
        | engine::Intervention::Redirect { rule_id, .. } => *rule_id,
    }
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn ids(rules: &[MatchedRule]) -> Vec<u32> {
    rules.iter().map(|m| m.id).collect()
}

/// The rules of a matched-rule difference and where the lists first part.
fn matched_finding(reference: &[MatchedRule], optimised: &[MatchedRule]) -> Finding {
    let first = reference
        .iter()
        .zip(optimised)
        .position(|(a, b)| a != b)
        .unwrap_or(reference.len().min(optimised.len()));
    let mut involved = BTreeSet::new();
    for m in reference
        .iter()
        .skip(first)
        .chain(optimised.iter().skip(first))
    {
        involved.insert(m.id);
    }
    let describe = |m: Option<&MatchedRule>| match m {
        Some(m) => format!(
            "{} (phase {}, msg {:?}, data {:?}, {} = {:?})",
            m.id, m.phase, m.msg, m.data, m.matched_var_name, m.matched_var
        ),
        None => "nothing".into(),
    };
    Finding {
        kind: Kind::MatchedRules,
        rule_ids: involved.into_iter().collect(),
        detail: format!(
            "reference ids {:?}\noptimised ids {:?}\nfirst difference at #{first}: reference {}, optimised {}",
            ids(reference),
            ids(optimised),
            describe(reference.get(first)),
            describe(optimised.get(first)),
        ),
    }
}

fn map_finding(
    kind: Kind,
    reference: &Outcome,
    optimised: &Outcome,
    get: impl Fn(&Outcome) -> &std::collections::BTreeMap<String, String>,
) -> Option<Finding> {
    let (a, b) = (get(reference), get(optimised));
    if a == b {
        return None;
    }
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let lines: Vec<String> = keys
        .into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| format!("tx.{k}: reference {:?}, optimised {:?}", a.get(k), b.get(k)))
        .collect();
    Some(Finding {
        kind,
        rule_ids: Vec::new(),
        detail: lines.join("\n"),
    })
}

/// Under early exit a score may only be lower than the reference's (rules after the
/// threshold did not add to it), and the blocking score must still reach the
/// threshold when the request was blocked.
fn scores_after_early_exit(reference: &Outcome, optimised: &Outcome) -> Option<Finding> {
    let num = |s: Option<&String>| s.and_then(|v| v.trim().parse::<i64>().ok());
    let mut lines = Vec::new();
    let keys: BTreeSet<&String> = reference
        .scores
        .keys()
        .chain(optimised.scores.keys())
        .collect();
    for k in keys {
        let (a, b) = (reference.scores.get(k), optimised.scores.get(k));
        match (num(a), num(b)) {
            (Some(x), Some(y)) if y <= x => {}
            (_, None) if a.is_none() => {}
            _ => lines.push(format!(
                "tx.{k}: reference {a:?}, optimised {b:?} (may only be lower)"
            )),
        }
    }
    if reference.decision.is_some() {
        let threshold = num(optimised.tx.get("inbound_anomaly_score_threshold"));
        let blocking = num(optimised.scores.get("blocking_inbound_anomaly_score"));
        if let (Some(t), Some(s)) = (threshold, blocking) {
            if s < t {
                lines.push(format!(
                    "tx.blocking_inbound_anomaly_score {s} is below the threshold {t}"
                ));
            }
        }
    }
    (!lines.is_empty()).then(|| Finding {
        kind: Kind::AnomalyScore,
        rule_ids: Vec::new(),
        detail: lines.join("\n"),
    })
}

/// The rule for matched rules under early exit. `reference` is the plain run's
/// list, `optimised` the early-exit run's, `phase` the phase that decided (the
/// decisions are compared separately and must be equal) and `decider` the rule of
/// the intervention. Holds when:
///
/// * nothing was decided: the lists are identical (early exit only follows a
///   decision);
/// * the rules of earlier phases are identical;
/// * in the deciding phase, the deciding rule matched in both (compared by id: its
///   message may quote the score) and is the optimised run's last rule of that
///   phase; every other rule the optimised run matched there is one of the
///   reference's, identical, each used once; without `reordered` they form a prefix
///   of the reference's (early exit skips only what comes after the threshold);
/// * rules of later phases (phase 5, logging, which still runs) have the same ids
///   in the same order (their messages may quote scores).
pub fn early_exit_consistent(
    reference: &[MatchedRule],
    optimised: &[MatchedRule],
    phase: Option<u8>,
    decider: Option<u32>,
    reordered: bool,
) -> Result<(), String> {
    let Some(phase) = phase else {
        return if reference == optimised {
            Ok(())
        } else {
            Err("no decision, yet the matched rules differ".into())
        };
    };
    let of = |l: &'_ [MatchedRule], f: &dyn Fn(u8) -> bool| -> Vec<MatchedRule> {
        l.iter().filter(|m| f(m.phase)).cloned().collect()
    };
    if of(reference, &|p| p < phase) != of(optimised, &|p| p < phase) {
        return Err(format!("rules of phases before {phase} differ"));
    }
    if ids(&of(reference, &|p| p > phase)) != ids(&of(optimised, &|p| p > phase)) {
        return Err(format!("rules of phases after {phase} differ"));
    }
    let mut r = of(reference, &|p| p == phase);
    let mut o = of(optimised, &|p| p == phase);
    if let Some(d) = decider {
        if o.last().map(|m| m.id) != Some(d) {
            return Err(format!(
                "the deciding rule {d} is not the optimised run's last rule of phase {phase}"
            ));
        }
        o.pop();
        let Some(at) = r.iter().rposition(|m| m.id == d) else {
            return Err(format!("the reference did not match the deciding rule {d}"));
        };
        r.remove(at);
    }
    if !reordered {
        return if r.starts_with(&o) {
            Ok(())
        } else {
            Err(format!(
                "phase {phase}: the optimised rules are not a prefix of the reference's"
            ))
        };
    }
    let mut used = vec![false; r.len()];
    for m in &o {
        let Some(i) = (0..r.len()).find(|&i| !used[i] && r[i] == *m) else {
            return Err(format!(
                "phase {phase}: rule {} matched only in the optimised run, or differently",
                m.id
            ));
        };
        used[i] = true;
    }
    Ok(())
}

/// Up to `limit` differences between two JSON values, as `path: reference ->
/// optimised` lines.
pub fn json_diff(a: &Value, b: &Value, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    walk(a, b, "$", limit, &mut out);
    out
}

fn short(v: Option<&Value>) -> String {
    let s = v.map_or_else(|| "(absent)".to_string(), |v| v.to_string());
    if s.chars().count() > 200 {
        format!("{}...", s.chars().take(200).collect::<String>())
    } else {
        s
    }
}

fn walk(a: &Value, b: &Value, path: &str, limit: usize, out: &mut Vec<String>) {
    if out.len() >= limit || a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let p = format!("{path}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => walk(u, v, &p, limit, out),
                    (u, v) => out.push(format!("{p}: {} -> {}", short(u), short(v))),
                }
                if out.len() >= limit {
                    return;
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                let p = format!("{path}[{i}]");
                match (x.get(i), y.get(i)) {
                    (Some(u), Some(v)) => walk(u, v, &p, limit, out),
                    (u, v) => out.push(format!("{p}: {} -> {}", short(u), short(v))),
                }
                if out.len() >= limit {
                    return;
                }
            }
        }
        _ => out.push(format!("{path}: {} -> {}", short(Some(a)), short(Some(b)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(id: u32, phase: u8, data: &str) -> MatchedRule {
        MatchedRule {
            id,
            phase,
            msg: format!("rule {id}"),
            data: data.into(),
            severity: Some(2),
            tags: Vec::new().into(),
            rev: "".into(),
            ver: "".into(),
            maturity: "".into(),
            accuracy: "".into(),
            file: "f".into(),
            line: 1,
            matched_var_name: "ARGS:q".into(),
            matched_var: "x".into(),
            operator: "@rx x".into(),
            disruptive: false,
            auditlog: true,
        }
    }

    /// The plain run: two rules in phase 1, three scoring rules and the blocking
    /// rule 949110 in phase 2, the reporting rule 980170 in phase 5.
    fn plain() -> Vec<MatchedRule> {
        vec![
            rule(920100, 1, "a"),
            rule(920200, 1, "b"),
            rule(942100, 2, "c"),
            rule(942200, 2, "d"),
            rule(941100, 2, "e"),
            rule(949110, 2, "score 15"),
            rule(980170, 5, "score 15"),
        ]
    }

    fn without(ids: &[u32]) -> Vec<MatchedRule> {
        plain()
            .into_iter()
            .filter(|m| !ids.contains(&m.id))
            .collect()
    }

    fn check(o: &[MatchedRule], reordered: bool) -> Result<(), String> {
        early_exit_consistent(&plain(), o, Some(2), Some(949110), reordered)
    }

    #[test]
    fn early_exit_may_drop_only_the_deciding_phases_tail() {
        // Identical lists, and any tail of the deciding phase skipped.
        assert_eq!(check(&plain(), false), Ok(()));
        assert_eq!(check(&without(&[941100]), false), Ok(()));
        assert_eq!(check(&without(&[942200, 941100]), false), Ok(()));
        // The deciding rule's and the logging rule's messages may quote the lower
        // score.
        let mut o = without(&[941100]);
        o[4].data = "score 10".into();
        o[5].data = "score 10".into();
        assert_eq!(check(&o, false), Ok(()));
    }

    #[test]
    fn early_exit_refuses_what_it_cannot_explain() {
        // A hole in the middle is not a skipped tail (unless reordered).
        assert!(check(&without(&[942200]), false).is_err());
        assert_eq!(check(&without(&[942200]), true), Ok(()));
        // An earlier phase may not lose a rule.
        assert!(check(&without(&[920200]), true).is_err());
        // Nor may the deciding rule be missing, nor the logging phase change.
        assert!(check(&without(&[949110]), true).is_err());
        assert!(check(&without(&[980170]), true).is_err());
        // A rule with other data, or a rule the reference never matched.
        let mut o = plain();
        o[2].data = "other".into();
        assert!(check(&o, true).is_err());
        let mut o = plain();
        o.insert(4, rule(932100, 2, "z"));
        assert!(check(&o, true).is_err());
        // A rule twice where the reference has it once.
        let mut o = without(&[942200]);
        o.insert(3, rule(942100, 2, "c"));
        assert!(check(&o, true).is_err());
        // Without a decision nothing may be skipped.
        assert!(early_exit_consistent(&plain(), &without(&[941100]), None, None, true).is_err());
        assert_eq!(
            early_exit_consistent(&plain(), &plain(), None, None, false),
            Ok(())
        );
    }

    #[test]
    fn reordered_subsets_keep_order_freedom_only_in_the_deciding_phase() {
        let mut o = without(&[942100]);
        o.swap(2, 3); // 941100 before 942200, then 949110 last
        assert_eq!(check(&o, true), Ok(()));
        assert!(check(&o, false).is_err());
    }

    #[test]
    fn json_differences_name_their_paths() {
        let a = serde_json::json!({"t": {"a": 1, "m": [1, 2], "x": "s"}});
        let b = serde_json::json!({"t": {"a": 2, "m": [1], "y": "s"}});
        let d = json_diff(&a, &b, 10);
        assert_eq!(
            d,
            vec![
                "$.t.a: 1 -> 2",
                "$.t.m[1]: 2 -> (absent)",
                "$.t.x: \"s\" -> (absent)",
                "$.t.y: (absent) -> \"s\"",
            ]
        );
        assert!(json_diff(&a, &a, 10).is_empty());
        assert_eq!(json_diff(&a, &b, 2).len(), 2);
    }
}
