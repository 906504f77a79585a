//! Pre-pruning (the RuleCache paper's §IV-C, done as a load-time data-flow
//! analysis): rules whose outcome is the same for every request are evaluated once,
//! when the program is compiled, and their result is stored in the rule
//! ([`Rule::static_result`]). At run time such a rule costs a lookup: its matched
//! values and per-match `setvar`s are replayed, then everything else happens as for
//! any rule (removals, logging, `ctl`, disruptive action, `skip` / `skipAfter`).
//!
//! In the CRS this covers the initialisation rules (`&TX:...` tests of
//! `crs-setup.conf`), the paranoia-level gates (`TX:DETECTION_PARANOIA_LEVEL "@lt
//! 2"` with `skipAfter`) and every other test of a TX value that only static rules
//! write.
//!
//! # Soundness
//!
//! A rule is folded only when all it reads is TX members by name (`TX:key`,
//! `&TX:key`, and `%{tx.key}` in its operator argument) whose values are known at
//! that point for every request. Values are tracked by a forward analysis over
//! each phase's steps in order (jumps only go forward), joining the states of all
//! paths into a step; phases are chained, the start of a phase joining the ends of
//! all earlier ones (an intervention or `allow` may skip phases). A member becomes
//! unknown when a rule whose outcome is not static writes it, when paths disagree,
//! when a rule anywhere writes TX keys through a macro with a matching literal
//! prefix, or when it is a capture group (`TX:0-9`). Rules that a `ctl:ruleRemove*`
//! anywhere in the program might remove or change at run time are neither folded
//! nor trusted as writers. An operator with a side effect (`@geoLookup`, which
//! writes GEO) is never evaluated here. `Options::verify` re-evaluates every folded
//! rule and panics on a difference (the CRS suite runs that way in the tests).

use rustc_hash::FxHashMap;

use crate::macros::{MacroString, Part};
use crate::operator::{self, OperatorEnv};
use crate::rule::{CompiledOp, CtlAction, Disruptive, KeySel, Rule, RuleIdx, Step};
use crate::transaction::memo::apply_chain;
use crate::variable::Var;
use crate::Program;
use seclang::SetVarOp;

/// The load-time result of a rule that evaluates the same for every request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticResult {
    /// The matched values, as (MATCHED_VAR_NAME, MATCHED_VAR); empty when the rule
    /// never matches.
    pub matches: Vec<(String, Vec<u8>)>,
    /// A match has no effect beyond MATCHED_VAR(S), HIGHEST_SEVERITY and the
    /// rule's own `skip` / `skipAfter` (a `pass`, `nolog` rule with no other
    /// action and no chain, as CRS's paranoia-level gates): the rule loop applies
    /// it without evaluating the rule.
    pub plain: bool,
    /// As `plain` but for the rule's `setvar`s, which each match runs after
    /// adding its MATCHED_VARS entry (CRS's anomaly-score sums, such as
    /// 949052's `tx.blocking_inbound_anomaly_score=+%{tx.inbound_anomaly_score_pl1}`
    /// behind a paranoia-level test that always holds): the rule loop applies
    /// those effects without evaluating the rule. Unlike a plain match, such a
    /// match may change a score, so the loop still tests an early exit after it
    /// and no pass goes over it.
    pub setvars_only: bool,
}

impl StaticResult {
    /// `rule`'s folded result `matches`.
    fn of(rule: &crate::rule::Rule, matches: Vec<(String, Vec<u8>)>) -> StaticResult {
        let quiet = rule.chain_next.is_none()
            && rule.id != 0
            && !rule.unconditional
            && !rule.capture
            && !rule.log
            && rule.disruptive == crate::rule::Disruptive::Pass
            && rule.ctls.is_empty()
            && rule.initcols.is_empty()
            && rule.setsid.is_none()
            && rule.setuid.is_none()
            && rule.setenvs.is_empty()
            && rule.expirevars.is_empty()
            && rule.sanitise.is_empty();
        StaticResult {
            matches,
            plain: quiet && rule.setvars.is_empty(),
            setvars_only: quiet && !rule.setvars.is_empty(),
        }
    }
}

/// What the analysis knows about one TX member at one point.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Val {
    Known(Vec<u8>),
    Unknown,
}

/// TX as known at one point (members not listed are known to be absent), and the
/// `ctl:ruleRemove*` actions that may have run before it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct State {
    vars: FxHashMap<String, Val>,
    /// Indexes into [`Facts::ctls`], sorted.
    active: Vec<usize>,
}

impl State {
    fn join(&mut self, other: &State) {
        for a in &other.active {
            if let Err(pos) = self.active.binary_search(a) {
                self.active.insert(pos, *a);
            }
        }
        for (k, v) in &mut self.vars {
            if other.vars.get(k) != Some(v) {
                *v = Val::Unknown;
            }
        }
        for k in other.vars.keys() {
            if !self.vars.contains_key(k) {
                self.vars.insert(k.clone(), Val::Unknown);
            }
        }
    }
}

fn join_into(slot: &mut Option<State>, st: &State) {
    match slot {
        Some(s) => s.join(st),
        None => *slot = Some(st.clone()),
    }
}

/// Program-wide facts the analysis needs.
struct Facts<'p> {
    /// Literal prefixes of TX keys written through macros (`tx.a_%{tx.0}` -> `a_`).
    wild_prefixes: Vec<String>,
    /// Every `ctl` that removes rules or targets at run time, with its rule.
    ctls: Vec<(RuleIdx, &'p CtlAction)>,
}

impl<'p> Facts<'p> {
    fn gather(program: &'p Program) -> Facts<'p> {
        let mut wild_prefixes: Vec<String> = (0..10).map(|d| d.to_string()).collect();
        let mut ctls = Vec::new();
        for (i, rule) in program.rules.iter().enumerate() {
            for sv in &rule.setvars {
                if sv.collection == Var::Tx && sv.key_literal.is_none() {
                    wild_prefixes.push(literal_prefix(&sv.key));
                }
            }
            for (var, key, _) in &rule.expirevars {
                if *var == Var::Tx {
                    match key.literal() {
                        Some(k) => {
                            wild_prefixes.push(String::from_utf8_lossy(k).to_ascii_lowercase())
                        }
                        None => wild_prefixes.push(literal_prefix(key)),
                    }
                }
            }
            for c in &rule.ctls {
                if removal(c).is_some() {
                    ctls.push((i as RuleIdx, c));
                }
            }
        }
        Facts {
            wild_prefixes,
            ctls,
        }
    }

    fn always_unknown(&self, key: &str) -> bool {
        self.wild_prefixes
            .iter()
            .any(|p| key.starts_with(p.as_str()))
    }

    /// What the `ctl`s that may have run before this point may do to `rule`:
    /// (may remove it, may remove some of its targets).
    fn modifications(&self, st: &State, rule: &Rule) -> (bool, bool) {
        let (mut removed, mut retargeted) = (false, false);
        for &a in &st.active {
            let Some((_, ctl)) = self.ctls.get(a) else {
                continue;
            };
            if may_modify(ctl, rule) {
                match removal(ctl) {
                    Some(true) => retargeted = true,
                    Some(false) => removed = true,
                    None => {}
                }
            }
        }
        (removed, retargeted)
    }

    /// Marks the removal `ctl`s of a chain as possibly run from here on.
    fn activate(&self, idx: RuleIdx, st: &mut State) {
        for (a, (r, _)) in self.ctls.iter().enumerate() {
            if *r == idx {
                if let Err(pos) = st.active.binary_search(&a) {
                    st.active.insert(pos, a);
                }
            }
        }
    }
}

/// Whether a `ctl` removes rules (`Some(false)`) or targets (`Some(true)`).
pub(crate) fn removal(ctl: &CtlAction) -> Option<bool> {
    match ctl {
        CtlAction::RemoveById(_) | CtlAction::RemoveByTag(_) | CtlAction::RemoveByMsg(_) => {
            Some(false)
        }
        CtlAction::RemoveTargetById(..)
        | CtlAction::RemoveTargetByTag(..)
        | CtlAction::RemoveTargetByMsg(..) => Some(true),
        _ => None,
    }
}

/// The literal start of a macro string, lower-cased.
fn literal_prefix(m: &MacroString) -> String {
    match m.parts().first() {
        Some(Part::Literal(l)) => String::from_utf8_lossy(l).to_ascii_lowercase(),
        _ => String::new(),
    }
}

/// Whether a run-time `ctl` may remove `rule` or some of its targets.
pub(crate) fn may_modify(ctl: &CtlAction, rule: &Rule) -> bool {
    let by_tag =
        |re: &regex::bytes::Regex| rule.meta.tags.iter().any(|t| re.is_match(t.as_bytes()));
    let by_msg = |re: &regex::bytes::Regex| match &rule.meta.msg {
        Some(m) => match m.literal() {
            Some(l) => re.is_match(l),
            None => true,
        },
        None => false,
    };
    match ctl {
        CtlAction::RemoveById(ranges) | CtlAction::RemoveTargetById(ranges, _) => {
            ranges.iter().any(|r| r.contains(rule.chain_id))
        }
        CtlAction::RemoveByTag(s) | CtlAction::RemoveTargetByTag(s, _) => by_tag(&s.re),
        CtlAction::RemoveByMsg(re) | CtlAction::RemoveTargetByMsg(re, _) => by_msg(re),
        _ => false,
    }
}

/// Folds every rule whose result is static; returns how many were folded.
pub(crate) fn fold(program: &mut Program) -> usize {
    let facts = Facts::gather(program);
    let mut results = Results {
        folded: vec![None; program.rules.len()],
        resolved: vec![None; program.rules.len()],
    };
    let mut ends: Vec<State> = Vec::new();
    for p in 0..5 {
        let mut start = State::default();
        for (i, e) in ends.iter().enumerate() {
            if i == 0 {
                start = e.clone();
            } else {
                start.join(e);
            }
        }
        let end = walk_phase(program, &facts, p, start, &mut results);
        ends.push(end);
    }
    let mut n = 0;
    for ((rule, r), op) in program
        .rules
        .iter_mut()
        .zip(results.folded)
        .zip(results.resolved)
    {
        if r.is_some() {
            n += 1;
        }
        rule.static_result = r;
        rule.resolved_op = op;
    }
    n
}

/// What the analysis found per rule.
struct Results {
    folded: Vec<Option<StaticResult>>,
    resolved: Vec<Option<(String, std::sync::Arc<dyn operator::Operator>)>>,
}

fn walk_phase(
    program: &Program,
    facts: &Facts,
    phase: usize,
    start: State,
    results: &mut Results,
) -> State {
    let steps = &program.phases[phase];
    let n = steps.len();
    let mut incoming: Vec<Option<State>> = vec![None; n + 1];
    incoming[0] = Some(start);
    let mut exits: Vec<State> = Vec::new();
    for i in 0..n {
        let Some(mut st) = incoming[i].take() else {
            continue;
        };
        let idx = match steps[i] {
            Step::Rule(idx) => idx,
            Step::Marker | Step::Removed => {
                join_into(&mut incoming[i + 1], &st);
                continue;
            }
        };
        let rule = &program.rules[idx as usize];
        let (removed, _) = facts.modifications(&st, rule);
        let retargeted = {
            let mut any = false;
            let mut link = Some(idx);
            while let Some(l) = link {
                let r = &program.rules[l as usize];
                any |= facts.modifications(&st, r).1;
                link = r.chain_next;
            }
            any
        };
        let before = st.clone();
        let mut outcome = walk_chain(program, facts, idx, retargeted, &mut st, results);
        if outcome != Some(false) {
            // The chain's own ctls may run from here on.
            let mut link = Some(idx);
            while let Some(l) = link {
                facts.activate(l, &mut st);
                link = program.rules[l as usize].chain_next;
            }
        }
        if removed {
            // A run-time ctl may have removed the rule: then nothing happened.
            st.join(&before);
            if outcome == Some(true) {
                outcome = None;
            }
        }
        // A chain known never to match cannot end the phase.
        if outcome != Some(false) && may_exit(program, idx) {
            exits.push(st.clone());
        }
        let target = jump_target(steps, i, rule);
        match outcome {
            Some(true) => join_into(&mut incoming[target], &st),
            Some(false) => join_into(&mut incoming[i + 1], &st),
            None => {
                join_into(&mut incoming[i + 1], &st);
                join_into(&mut incoming[target], &st);
            }
        }
    }
    let mut end = incoming[n].take().unwrap_or_default();
    for e in &exits {
        end.join(e);
    }
    end
}

/// Where the loop continues after the chain starting at step `i` matched.
fn jump_target(steps: &[Step], i: usize, rule: &Rule) -> usize {
    if let Some(t) = rule.skip_after {
        return t.min(steps.len());
    }
    let mut skip = rule.skip;
    let mut j = i + 1;
    while skip > 0 && j < steps.len() {
        if !matches!(steps[j], Step::Marker) {
            skip -= 1;
        }
        j += 1;
    }
    j
}

/// Whether a matched chain may end the phase (an intervention or `allow`).
fn may_exit(program: &Program, idx: RuleIdx) -> bool {
    let mut link = Some(idx);
    while let Some(i) = link {
        let r = &program.rules[i as usize];
        if r.disruptive != Disruptive::Pass
            || r.ctls.iter().any(|c| matches!(c, CtlAction::RuleEngine(_)))
        {
            return true;
        }
        link = r.chain_next;
    }
    false
}

/// Walks one chain: folds its static links, applies their writes to `st`; returns
/// whether the chain matches (`None`: depends on the request).
fn walk_chain(
    program: &Program,
    facts: &Facts,
    idx: RuleIdx,
    retargeted: bool,
    st: &mut State,
    results: &mut Results,
) -> Option<bool> {
    let mut outcome = Some(true);
    let mut link = Some(idx);
    while let Some(i) = link {
        let rule = &program.rules[i as usize];
        let result = if !retargeted {
            evaluate(program, facts, rule, st)
        } else {
            None
        };
        // Whether this link is reached for every request that reaches the chain.
        let always_reached = outcome == Some(true);
        match result {
            Some(StaticOutcome::Unconditional) => {
                if always_reached {
                    apply_setvars(facts, rule, st, 1);
                } else {
                    unknown_setvars(rule, st);
                }
            }
            Some(StaticOutcome::Matches(matches)) => {
                let matched = !matches.is_empty();
                if always_reached {
                    apply_setvars(facts, rule, st, matches.len());
                } else if matched {
                    unknown_setvars(rule, st);
                }
                results.folded[i as usize] = Some(StaticResult::of(rule, matches));
                if !matched {
                    // The chain stops here for every request that gets this far.
                    return Some(false);
                }
            }
            None => {
                if !retargeted {
                    if let Some(r) = resolve_operator(program, facts, rule, st) {
                        results.resolved[i as usize] = Some(r);
                    }
                }
                unknown_setvars(rule, st);
                outcome = None;
            }
        }
        link = rule.chain_next;
    }
    outcome
}

enum StaticOutcome {
    /// `SecAction`.
    Unconditional,
    /// The matched values (none: no match).
    Matches(Vec<(String, Vec<u8>)>),
}

/// A member's value for the analysis: `Some(None)` when known absent, `None` when
/// unknown.
fn lookup<'a>(facts: &Facts, st: &'a State, key: &str) -> Option<Option<&'a [u8]>> {
    if facts.always_unknown(key) {
        return None;
    }
    match st.vars.get(key) {
        None => Some(None),
        Some(Val::Known(v)) => Some(Some(v.as_slice())),
        Some(Val::Unknown) => None,
    }
}

/// Expands a macro string that refers to TX members only; `None` when it refers to
/// anything else or to an unknown member.
fn expand_static(facts: &Facts, st: &State, m: &MacroString) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for p in m.parts() {
        match p {
            Part::Literal(l) => out.extend_from_slice(l),
            Part::Var {
                var: Var::Tx,
                key: Some(k),
                ..
            } => {
                if let Some(v) = lookup(facts, st, k)? {
                    out.extend_from_slice(v);
                }
            }
            Part::Var { .. } => return None,
        }
    }
    Some(out)
}

/// Builds the operator of a rule whose macro argument expands the same for every
/// request at this point.
fn resolve_operator(
    program: &Program,
    facts: &Facts,
    rule: &Rule,
    st: &State,
) -> Option<(String, std::sync::Arc<dyn operator::Operator>)> {
    let CompiledOp::Dynamic(m) = &rule.operator.op else {
        return None;
    };
    let arg = String::from_utf8_lossy(&expand_static(facts, st, m)?).into_owned();
    let op = program.dynamic_operator(rule.operator.name, &arg)?;
    Some((arg, op))
}

/// Evaluates `rule` (one link) at load time, when everything it reads is known.
fn evaluate(program: &Program, facts: &Facts, rule: &Rule, st: &State) -> Option<StaticOutcome> {
    if rule.unconditional {
        return Some(StaticOutcome::Unconditional);
    }
    if rule.targets.is_empty()
        || !rule.exclusions.is_empty()
        || rule.capture
        || rule.multi_match
        || rule
            .targets
            .iter()
            .any(|t| t.var != Var::Tx || !matches!(t.sel, KeySel::Key(_)))
    {
        return None;
    }
    let built;
    let op: &dyn operator::Operator = match &rule.operator.op {
        CompiledOp::Static(op) => op.as_ref(),
        // It writes GEO on every evaluation: never evaluated at load time.
        CompiledOp::GeoLookup(_) => return None,
        CompiledOp::Dynamic(m) => {
            let arg = expand_static(facts, st, m)?;
            let arg = String::from_utf8_lossy(&arg).into_owned();
            let env = OperatorEnv {
                match_limit: program.config.pcre_match_limit,
                ..OperatorEnv::default()
            };
            built = operator::build(rule.operator.name, &arg, &env).ok()?;
            built.as_ref()
        }
    };
    let mut matches = Vec::new();
    let (mut out, mut tmp) = (Vec::new(), Vec::new());
    for spec in &rule.targets {
        let KeySel::Key(key) = &spec.sel else {
            return None;
        };
        let value = lookup(facts, st, &key.to_ascii_lowercase())?;
        let (name, raw): (String, Vec<u8>) = if spec.count {
            (
                "&TX".to_string(),
                usize::from(value.is_some()).to_string().into_bytes(),
            )
        } else {
            match value {
                Some(v) => (format!("TX:{key}"), v.to_vec()),
                None => continue,
            }
        };
        apply_chain(&program.chains, rule.transforms, &raw, &mut out, &mut tmp);
        let hit = op.evaluate(&out, None);
        if hit != rule.operator.negated {
            matches.push((name, out.clone()));
        }
    }
    Some(StaticOutcome::Matches(matches))
}

/// Applies a statically matched rule's TX `setvar`s, `times` times (once per
/// matched value).
fn apply_setvars(facts: &Facts, rule: &Rule, st: &mut State, times: usize) {
    for _ in 0..times {
        for sv in &rule.setvars {
            if sv.collection != Var::Tx {
                continue;
            }
            let Some(key) = &sv.key_literal else {
                // Covered by the wildcard prefixes.
                continue;
            };
            let value = expand_static(facts, st, &sv.value);
            let new = match (sv.op, value) {
                (SetVarOp::Unset, _) => {
                    st.vars.remove(key);
                    continue;
                }
                (SetVarOp::Flag, _) => Val::Known(b"1".to_vec()),
                (SetVarOp::Set, Some(v)) => Val::Known(v),
                (SetVarOp::Add | SetVarOp::Sub, Some(v)) => match lookup(facts, st, key) {
                    Some(cur) => {
                        let a = crate::transaction::parse_int(cur.unwrap_or(b"0"));
                        let b = crate::transaction::parse_int(&v);
                        let r = if sv.op == SetVarOp::Add {
                            a.saturating_add(b)
                        } else {
                            a.saturating_sub(b)
                        };
                        Val::Known(r.to_string().into_bytes())
                    }
                    None => Val::Unknown,
                },
                (_, None) => Val::Unknown,
            };
            st.vars.insert(key.clone(), new);
        }
    }
}

/// A rule whose outcome is not static may write its TX `setvar` keys.
fn unknown_setvars(rule: &Rule, st: &mut State) {
    for sv in &rule.setvars {
        if sv.collection == Var::Tx {
            if let Some(key) = &sv.key_literal {
                st.vars.insert(key.clone(), Val::Unknown);
            }
        }
    }
}
