//! Early exit in anomaly-scoring mode (opt-in, `Options::early_exit`): once the
//! inbound score has reached the threshold, the rest of the phase's detection
//! rules are skipped and evaluation continues at the blocking evaluation, whose
//! decision is then the same as after evaluating everything.
//!
//! The compiler looks for the CRS shape and proves what the jump relies on:
//! - a blocking rule `B`: `SecRule TX:S "@ge N|%{tx.T}" "deny|drop|redirect"`
//!   without chain, exclusions or other targets;
//! - before it, a section `[E, B)` that recomputes `S`: the rule at `E` sets `S`
//!   to a literal, then rules whose outcome is static (pre-pruning) add literals or
//!   `%{tx.Xi}` to it, nothing else writes `S`, `T` or an `Xi`, and nothing jumps;
//! - before that, the region `[R, E)` the exit may skip: rules whose disruptive
//!   action is `pass`, that write `S`/`T` never and each `Xi` only by adding a
//!   non-negative constant (a literal, or `%{tx.K}` where every write of `tx.K`
//!   anywhere is a non-negative literal), whose jumps stay inside the region, and
//!   whose `ctl`s only remove rules or targets that are not `B`, the section, or
//!   any later rule.
//!
//! Then, when `base + sum(Xi) >= threshold` after a match inside the region,
//! every skipped rule could only have raised the `Xi`, so `S` at `B` could only
//! be higher: `B` denies either way. The run-time check also refuses the exit
//! when `B` or a section rule was removed by a `ctl` or `B`'s target excluded.
//! What differs from full evaluation is exactly what early exit allows: the
//! skipped rules' matches (and the scores and log data built from them).

use crate::macros::Part;
use crate::rule::{CompiledOp, CtlAction, Disruptive, KeySel, Rule, RuleIdx, Step};
use crate::variable::Var;
use crate::Program;
use seclang::SetVarOp;

/// The blocking threshold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Threshold {
    /// A literal number.
    Literal(i64),
    /// `%{tx.T}`, read when the exit is tested (nothing in the region writes it).
    Tx(String),
}

/// Early exit for one phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlyExit {
    /// First step of the region where a match tests the exit.
    pub from: usize,
    /// The step the exit jumps to (the start of the blocking section, `E`).
    pub target: usize,
    /// The blocking rule.
    pub blocking: RuleIdx,
    /// The rules of the section (at `E` and the feeding additions).
    pub section: Vec<RuleIdx>,
    /// Literal part of the score the section computes.
    pub base: i64,
    /// The TX keys (lower case) the section adds to the score.
    pub scores: Vec<String>,
    /// Where each of `scores` was last found in TX: the test runs at every
    /// match in the region, and a hinted lookup does not hash the key.
    pub score_hints: Vec<crate::collection::Hint>,
    /// The same for a threshold read from TX.
    pub threshold_hint: crate::collection::Hint,
    /// The threshold.
    pub threshold: Threshold,
    /// The score variable `B` tests (lower case).
    pub score: String,
}

/// Early exit for each phase where the program has the shape and the proof holds.
pub fn analyse(program: &Program) -> [Option<EarlyExit>; 5] {
    let mut out: [Option<EarlyExit>; 5] = Default::default();
    for (p, slot) in out.iter_mut().enumerate() {
        *slot = analyse_phase(program, p);
    }
    out
}

fn analyse_phase(program: &Program, p: usize) -> Option<EarlyExit> {
    let steps = program.phases.get(p)?;
    let (b_pos, b_idx, score, threshold) = steps.iter().enumerate().find_map(|(i, s)| {
        let Step::Rule(idx) = *s else { return None };
        let (score, threshold) = blocking_shape(program.rules.get(idx as usize)?)?;
        Some((i, idx, score, threshold))
    })?;
    // The section: back from B to the rule that sets S to a literal.
    let e_pos = (0..b_pos).rev().find(|&j| match steps[j] {
        Step::Rule(idx) => program.rules[idx as usize].setvars.iter().any(|sv| {
            sv.collection == Var::Tx
                && sv.op == SetVarOp::Set
                && sv.key_literal.as_deref() == Some(&*score)
        }),
        _ => false,
    })?;
    let Step::Rule(e_idx) = steps[e_pos] else {
        return None;
    };
    let e_rule = &program.rules[e_idx as usize];
    if !statically_matches(e_rule) || e_rule.chain_next.is_some() {
        return None;
    }
    let mut base = None;
    for sv in &e_rule.setvars {
        if sv.collection == Var::Tx && sv.key_literal.as_deref() == Some(&*score) {
            base = match (sv.op, sv.value.literal()) {
                (SetVarOp::Set, Some(l)) if is_int_literal(l) => {
                    Some(crate::transaction::parse_int(l))
                }
                _ => None,
            };
        }
    }
    let mut base = base?;
    let mut scores: Vec<String> = Vec::new();
    let mut section = vec![e_idx];
    let threshold_key = match &threshold {
        Threshold::Tx(t) => Some(t.clone()),
        Threshold::Literal(_) => None,
    };
    for step in &steps[e_pos + 1..b_pos] {
        let Step::Rule(idx) = *step else { continue };
        let rule = &program.rules[idx as usize];
        if statically_never_matches(rule) && rule.chain_next.is_none() {
            continue; // folded at load time: never runs its actions
        }
        if rule.chain_next.is_some()
            || !rule.ctls.is_empty()
            || rule.disruptive != Disruptive::Pass
            || ((rule.skip > 0 || rule.skip_after.is_some()) && !statically_never_matches(rule))
        {
            return None;
        }
        for sv in &rule.setvars {
            if sv.collection != Var::Tx {
                continue;
            }
            let key = sv.key_literal.as_deref()?;
            if Some(key) == threshold_key.as_deref() || scores.iter().any(|s| s == key) {
                return None;
            }
            if key != score {
                continue;
            }
            if sv.op != SetVarOp::Add || !statically_matches(rule) {
                return None;
            }
            match (sv.value.literal(), sv.value.parts()) {
                (Some(l), _) if is_int_literal(l) => {
                    base = base.saturating_add(crate::transaction::parse_int(l))
                }
                (
                    None,
                    [Part::Var {
                        var: Var::Tx,
                        key: Some(x),
                        ..
                    }],
                ) => {
                    scores.push(x.clone());
                    section.push(idx);
                }
                _ => return None,
            }
        }
    }
    if scores.contains(&score) {
        return None;
    }
    let guard = Guard {
        score: score.clone(),
        threshold: threshold_key,
        feeds: scores.clone(),
    };
    // Rules a skipped ctl must not touch: B, the section and everything after E.
    let mut later: Vec<&Rule> = Vec::new();
    for (q, st) in program.phases.iter().enumerate() {
        for (j, s) in st.iter().enumerate() {
            if let Step::Rule(idx) = *s {
                if (q == p && j >= e_pos) || q > p {
                    let mut link = Some(idx);
                    while let Some(l) = link {
                        let r = &program.rules[l as usize];
                        later.push(r);
                        link = r.chain_next;
                    }
                }
            }
        }
    }
    // The region: back from E while every step may be skipped.
    let mut from = e_pos;
    while from > 0 {
        let j = from - 1;
        let ok = match steps[j] {
            Step::Marker | Step::Removed => true,
            Step::Rule(idx) => skippable(program, steps, j, idx, e_pos, &guard, &later),
        };
        if !ok {
            break;
        }
        from = j;
    }
    if from == e_pos {
        return None;
    }
    Some(EarlyExit {
        from,
        target: e_pos,
        blocking: b_idx,
        section,
        base,
        score_hints: scores.iter().map(|_| Default::default()).collect(),
        scores,
        threshold,
        threshold_hint: Default::default(),
        score,
    })
}

/// `SecRule TX:S "@ge N|%{tx.T}" "deny|drop|redirect"`: the score and threshold.
fn blocking_shape(rule: &Rule) -> Option<(String, Threshold)> {
    if rule.chain_next.is_some()
        || !rule.exclusions.is_empty()
        || rule.targets.len() != 1
        || rule.operator.name != "ge"
        || rule.operator.negated
        || rule.static_result.is_some()
        || !matches!(
            rule.disruptive,
            Disruptive::Deny | Disruptive::Drop | Disruptive::Redirect(_)
        )
    {
        return None;
    }
    let t = &rule.targets[0];
    let KeySel::Key(score) = &t.sel else {
        return None;
    };
    if t.var != Var::Tx || t.count {
        return None;
    }
    let threshold = match &rule.operator.op {
        CompiledOp::Static(_) if is_int_literal(rule.operator.argument.trim().as_bytes()) => {
            Threshold::Literal(crate::operator::number::atoll(
                rule.operator.argument.as_bytes(),
            ))
        }
        CompiledOp::Dynamic(m) => match m.parts() {
            [Part::Var {
                var: Var::Tx,
                key: Some(k),
                ..
            }] => Threshold::Tx(k.clone()),
            _ => return None,
        },
        _ => return None,
    };
    Some((score.to_ascii_lowercase(), threshold))
}

fn is_int_literal(l: &[u8]) -> bool {
    let s = l.strip_prefix(b"+").unwrap_or(l);
    !s.is_empty() && s.iter().all(u8::is_ascii_digit)
}

fn statically_matches(rule: &Rule) -> bool {
    rule.unconditional
        || rule
            .static_result
            .as_ref()
            .is_some_and(|r| !r.matches.is_empty())
}

fn statically_never_matches(rule: &Rule) -> bool {
    rule.static_result
        .as_ref()
        .is_some_and(|r| r.matches.is_empty())
}

/// The names the region may not write (the score, the threshold) or may only
/// add to (the feeding scores).
struct Guard {
    score: String,
    threshold: Option<String>,
    feeds: Vec<String>,
}

impl Guard {
    fn names(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.score)
            .chain(self.threshold.iter())
            .chain(self.feeds.iter())
    }
}

/// Whether the chain at step `j` may be skipped by an exit to `e_pos`.
fn skippable(
    program: &Program,
    steps: &[Step],
    j: usize,
    idx: RuleIdx,
    e_pos: usize,
    guard: &Guard,
    later: &[&Rule],
) -> bool {
    let starter = &program.rules[idx as usize];
    if starter.disruptive != Disruptive::Pass {
        return false;
    }
    let mut link = Some(idx);
    while let Some(l) = link {
        let rule = &program.rules[l as usize];
        link = rule.chain_next;
        if !rule.initcols.is_empty() || rule.setsid.is_some() || rule.setuid.is_some() {
            return false;
        }
        // Jumps must stay inside the region (or never happen).
        if !statically_never_matches(rule) {
            if rule.skip_after.is_some_and(|t| t > e_pos) {
                return false;
            }
            if rule.skip > 0 {
                let mut left = rule.skip;
                let mut k = j + 1;
                while left > 0 && k < steps.len() {
                    if !matches!(steps[k], Step::Marker) {
                        left -= 1;
                    }
                    k += 1;
                }
                if k > e_pos {
                    return false;
                }
            }
        }
        for ctl in &rule.ctls {
            let removal = matches!(
                ctl,
                CtlAction::RemoveById(_)
                    | CtlAction::RemoveByTag(_)
                    | CtlAction::RemoveTargetById(..)
                    | CtlAction::RemoveTargetByTag(..)
            );
            if !removal || later.iter().any(|r| crate::prune::may_modify(ctl, r)) {
                return false;
            }
        }
        for sv in &rule.setvars {
            if sv.collection != Var::Tx {
                continue;
            }
            match &sv.key_literal {
                Some(k) => {
                    if *k == guard.score || guard.threshold.as_deref() == Some(k.as_str()) {
                        return false;
                    }
                    if guard.feeds.contains(k) && !adds_non_negative(program, sv) {
                        return false;
                    }
                }
                None => {
                    let prefix = match sv.key.parts().first() {
                        Some(Part::Literal(l)) => String::from_utf8_lossy(l).to_ascii_lowercase(),
                        _ => String::new(),
                    };
                    if guard.names().any(|p| p.starts_with(&prefix)) {
                        return false;
                    }
                }
            }
        }
        for (var, key, _) in &rule.expirevars {
            if *var == Var::Tx {
                let k = key
                    .literal()
                    .map(|l| String::from_utf8_lossy(l).to_ascii_lowercase());
                match k {
                    Some(k) if !guard.names().any(|p| *p == k) => {}
                    _ => return false,
                }
            }
        }
    }
    true
}

/// `setvar:tx.k=+V` where `V` is a non-negative literal or `%{tx.K}` with every
/// write of `tx.K` in the program a non-negative literal.
fn adds_non_negative(program: &Program, sv: &crate::rule::SetVarAction) -> bool {
    if sv.op != SetVarOp::Add {
        return false;
    }
    if let Some(l) = sv.value.literal() {
        return is_int_literal(l);
    }
    let [Part::Var {
        var: Var::Tx,
        key: Some(k),
        ..
    }] = sv.value.parts()
    else {
        return false;
    };
    constant_non_negative(program, k)
}

/// Whether every write of `tx.k` anywhere is a non-negative literal (unset reads
/// as 0), and no key written through a macro or `expirevar` could be `k`.
fn constant_non_negative(program: &Program, k: &str) -> bool {
    if k.bytes().all(|b| b.is_ascii_digit()) {
        return false; // a capture group
    }
    for rule in &program.rules {
        for sv in &rule.setvars {
            if sv.collection != Var::Tx {
                continue;
            }
            match &sv.key_literal {
                Some(key) if key == k => match (sv.op, sv.value.literal()) {
                    (SetVarOp::Set | SetVarOp::Add, Some(l)) if is_int_literal(l) => {}
                    (SetVarOp::Unset, _) => {}
                    _ => return false,
                },
                Some(_) => {}
                None => {
                    let prefix = match sv.key.parts().first() {
                        Some(Part::Literal(l)) => String::from_utf8_lossy(l).to_ascii_lowercase(),
                        _ => String::new(),
                    };
                    if k.starts_with(&prefix) {
                        return false;
                    }
                }
            }
        }
        if rule.expirevars.iter().any(|(v, _, _)| *v == Var::Tx) {
            return false;
        }
    }
    true
}
