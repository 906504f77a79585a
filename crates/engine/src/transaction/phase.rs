//! Running a phase: the rule loop (skips, markers, removals, `allow`), rule and chain
//! evaluation with ModSecurity v3's order of effects, and the actions.
//!
//! Per matched value (as v3): captures fill TX:0-9, MATCHED_VAR(S) are updated and
//! `setvar`s run. When a whole chain has matched: the other non-disruptive actions of
//! each link run (last link first), then the starter is logged and its disruptive
//! action applied (only when the engine is On). A rule that does not match clears
//! MATCHED_VAR(S).

use super::resolve::Src;
use super::{Allowed, Intervention, Sanitise, Transaction};
use crate::audit::MatchedRule;
use crate::collection::{now_unix, Collection};
use crate::macros::{MacroString, Part};
use crate::operator;
use crate::rule::{AllowScope, CompiledOp, CtlAction, Disruptive, Rule, RuleIdx, Step};
use crate::variable::Var;
use crate::EngineMode;
use seclang::SetVarOp;

/// TX, MATCHED_VARS (name, value) and HIGHEST_SEVERITY after the prologue's segment.
pub(crate) type SegmentState = (Collection, Vec<(String, Vec<u8>)>, Option<u8>);

/// What the rule loop does with a rule (see `Transaction::run_steps_from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Visit {
    /// Evaluate it.
    Run,
    /// Go on as if it were not there.
    Pass,
    /// Stop before it.
    Stop,
}

impl Transaction {
    /// Runs phase `phase` (1-5).
    pub(crate) fn run(&mut self, phase: u8) {
        self.phases_done |= 1 << (phase - 1);
        if self.mode == EngineMode::Off {
            return;
        }
        if phase < 5 && self.intervention.is_some() {
            return;
        }
        match self.allowed {
            Allowed::All if phase < 5 => return,
            Allowed::Request if phase <= 2 => return,
            _ => {}
        }
        let program = std::sync::Arc::clone(&self.program);
        let phase_start = self.profile.is_some().then(std::time::Instant::now);
        self.hold_work();
        self.run_steps(&program, phase);
        if phase == 2 {
            // A proxy waits for the upstream now: the set goes to the phases of
            // other requests meanwhile.
            self.release_work(false);
        }
        if let (Some(start), Some(p)) = (phase_start, self.profile.as_deref_mut()) {
            p.phase_nanos[(phase - 1) as usize] += elapsed_nanos(start);
        }
    }

    fn run_steps(&mut self, program: &crate::Program, phase: u8) {
        let from = self.matched.len();
        self.run_steps_in_order(program, phase);
        if program.ordering.reordered[(phase - 1) as usize] {
            self.restore_match_order(program, from);
        }
    }

    fn run_steps_in_order(&mut self, program: &crate::Program, phase: u8) {
        let from = match &program.prologue {
            Some(p) if phase == 1 => match self.enter_prologue(program, p) {
                Some(end) => end,
                None => return,
            },
            _ => 0,
        };
        self.run_steps_from(program, phase, from, true, |_| Visit::Run);
    }

    /// Phase 1's prologue (see [`crate::prologue`]): its kept rules run and its
    /// recorded state is taken, or with `Options::verify` the whole segment runs
    /// and the state it leaves is compared with the record. Returns the step to
    /// continue from (0 when the transaction's state is not the fresh one the
    /// prologue assumes), or `None` when the phase ended.
    fn enter_prologue(
        &mut self,
        program: &crate::Program,
        p: &crate::prologue::Prologue,
    ) -> Option<usize> {
        if !self.state.tx.is_empty()
            || !self.state.matched_vars.is_empty()
            || self.state.highest_severity.is_some()
        {
            return Some(0);
        }
        let end = p.end;
        if program.options.verify {
            let stopped = self.run_prologue_segment(program, end);
            let Some((tx, matched_vars, severity)) = stopped else {
                panic!("the prologue's segment ended the phase");
            };
            assert!(
                tx.iter_bytes().eq(p.tx.iter_bytes()),
                "the prologue's segment leaves another TX"
            );
            assert_eq!(
                matched_vars, p.matched_vars,
                "the prologue's segment leaves other MATCHED_VARS"
            );
            assert_eq!(severity, p.highest_severity);
            return Some(end);
        }
        // The segment's end is a rule's step (or the phase's end), where the loop
        // stops; a kept rule cannot end the phase, but should it, so does this.
        self.run_steps_from(program, 1, 0, false, |i| {
            if i >= end {
                Visit::Stop
            } else if p.is_hoisted(i) {
                Visit::Pass
            } else {
                Visit::Run
            }
        })?;
        // The pooled TX this transaction was given, restored (cheaply when it was
        // restored from the same prologue before).
        let mut tx = std::mem::take(&mut self.tx_base);
        tx.restore_from(&p.tx, p.tx_id);
        self.state.tx = tx;
        self.state.matched_vars.clear();
        for (name, value) in &p.matched_vars {
            let mut e = self.state.matched_vars.spare();
            e.name.push_str(name);
            e.value.extend_from_slice(value);
            self.state.matched_vars.push(e);
        }
        self.state.highest_severity = p.highest_severity;
        Some(end)
    }

    /// Runs phase 1's steps before `end`, every rule, and returns the state they
    /// leave; `None` when they end the phase.
    pub(crate) fn run_prologue_segment(
        &mut self,
        program: &crate::Program,
        end: usize,
    ) -> Option<SegmentState> {
        let stopped = self.run_steps_from(program, 1, 0, false, |i| {
            if i >= end {
                Visit::Stop
            } else {
                Visit::Run
            }
        })?;
        (stopped == end || stopped == program.phases[0].len()).then(|| {
            (
                self.state.tx.clone(),
                self.state
                    .matched_vars
                    .iter(self.lookup())
                    .map(|(n, v)| (n.into_owned(), v.to_vec()))
                    .collect(),
                self.state.highest_severity,
            )
        })
    }

    /// The rule loop from step `from` (with no `skip` pending). `visit(i)` is asked
    /// before the rule at step `i` is evaluated: on [`Visit::Stop`] the loop
    /// returns `Some(i)`, on [`Visit::Pass`] it goes on to the next step as if the
    /// rule were not there. With `bulk` (only where `visit` runs every step), a
    /// run of rules the result cache rules out is passed over at once. Returns
    /// `Some(steps.len())` at the phase's end and `None` when a match ends the
    /// phase early (intervention, `allow`).
    fn run_steps_from(
        &mut self,
        program: &crate::Program,
        phase: u8,
        from: usize,
        bulk: bool,
        visit: impl Fn(usize) -> Visit,
    ) -> Option<usize> {
        let steps = &program.phases[(phase - 1) as usize];
        let early_exit = program.ordering.early_exit[(phase - 1) as usize].as_ref();
        let phase_gates = program.step_gates.phase(phase);
        let mut i = from;
        let mut skip = 0u32;
        // The step the stop mask last passed to: it would give that step again
        // there (nothing ran in between), so it is not asked twice.
        let mut stop = usize::MAX;
        while i < steps.len() {
            let idx = match steps[i] {
                Step::Rule(idx) => idx,
                Step::Removed => {
                    // A rule removed at load time still uses up one `skip`.
                    skip = skip.saturating_sub(1);
                    i += 1;
                    continue;
                }
                Step::Marker => {
                    i = phase_gates.after_markers(i);
                    continue;
                }
            };
            if skip > 0 {
                skip -= 1;
                i += 1;
                continue;
            }
            match visit(i) {
                Visit::Run => {}
                Visit::Pass => {
                    i += 1;
                    continue;
                }
                Visit::Stop => return Some(i),
            }
            // A gated rule (see [`crate::step_gates`]) its group's admission rules
            // out (the result cache's values, or the prefilter's unions): not
            // matched, as `eval_chain` would find through `group_may_match`,
            // without the calls and without reading the rule. In the main loop,
            // the steps after it that would only clear MATCHED_VARS too (gated
            // rules ruled out, rules folded to no match, markers) are passed over
            // with it. With a profile, the long way (which counts evaluations).
            // A rule a `ctl` removed is passed over first; a pass takes no
            // folded match's jump at a removed rule (see `Transaction::pass_over`),
            // so the main loop keeps the stop mask after `ctl` removals.
            let removals = self.any_rule_removed();
            if removals && self.rule_removed_by_ctl(&program.rules[idx as usize]) {
                i += 1;
                continue;
            }
            // The main loop at a gated rule or a folded rule it can pass over:
            // the next step it must do more at, by the stop mask (see
            // `transaction/stops.rs`).
            let main = bulk && self.profile.is_none();
            let gate = phase_gates.at(i);
            let pass = phase_gates.pass(i);
            if main && program.prefilter.is_some() && (gate.is_some() || pass.is_some()) {
                let next = if i == stop {
                    i
                } else {
                    self.next_stop(program, (phase, steps), i, removals)
                };
                #[cfg(debug_assertions)]
                {
                    assert_eq!(next, self.next_stop(program, (phase, steps), i, removals));
                    self.check_stop(program, (phase, steps), (i, idx), next);
                }
                if next > i {
                    self.state.matched_vars.clear();
                    i = next;
                    stop = next;
                    continue;
                }
            } else if main && pass.is_some() {
                let next = self.pass_over(program, (phase, steps), i);
                if next > i {
                    self.state.matched_vars.clear();
                    i = next;
                    continue;
                }
            }
            if let Some(gate) = gate {
                // The stop mask found the rule may match.
                if self.profile.is_none() && !(main && program.prefilter.is_some()) {
                    if let Some(next) =
                        self.gate_rejects(program, (phase, steps), (i, idx), gate, bulk)
                    {
                        self.state.matched_vars.clear();
                        i = next;
                        continue;
                    }
                }
            }
            let rule = &program.rules[idx as usize];
            let plain = self.plain_static(program, rule);
            let matched = if let Some(m) = plain {
                m
            } else if self.profile.is_some() {
                let start = std::time::Instant::now();
                let m = self.eval_chain(program, idx);
                if let Some(c) = self
                    .profile
                    .as_deref_mut()
                    .and_then(|p| p.rules.get_mut(idx as usize))
                {
                    c.evaluations += 1;
                    c.matches += u64::from(m);
                    c.nanos += elapsed_nanos(start);
                }
                m
            } else {
                self.eval_chain(program, idx)
            };
            if matched {
                if self.intervention.is_some() && phase < 5 {
                    return None;
                }
                match self.allowed {
                    Allowed::Phase(p) if p == phase => {
                        self.allowed = Allowed::None;
                        return None;
                    }
                    Allowed::All if phase < 5 => return None,
                    Allowed::Request if phase <= 2 => return None,
                    _ => {}
                }
                // A plain folded match (a paranoia-level gate) adds to no score
                // and changes no threshold: the exit is tested at the others
                // (a folded match's `setvar`s may add to one).
                let quiet = plain.is_some() && rule.static_result.as_ref().is_some_and(|s| s.plain);
                if let Some(exit) = early_exit.filter(|_| !quiet) {
                    if (exit.from..exit.target).contains(&i)
                        && self.early_exit_reached(program, exit)
                    {
                        i = exit.target;
                        skip = 0;
                        continue;
                    }
                }
                if let Some(target) = rule.skip_after {
                    i = target;
                    continue;
                }
                skip = rule.skip;
            }
            i += 1;
        }
        Some(i)
    }

    /// A rule folded at load time whose match has no effect beyond MATCHED_VAR(S)
    /// and HIGHEST_SEVERITY ([`crate::prune::StaticResult::plain`]): those effects,
    /// as [`Transaction::eval_chain`] would apply them, and whether it matched.
    /// `None` for other rules, with `Options::verify` (which evaluates folded
    /// rules to check them) and in profiled runs (which count evaluations).
    ///
    /// A folded rule whose only other effect is its `setvar`s
    /// ([`crate::prune::StaticResult::setvars_only`]) is applied so too: each
    /// match's entry, then the rule's `setvar`s, as `on_match` runs them.
    /// Inlined into the rule loop: a call per rule visited cost about 2,600
    /// instructions per R1 request more (session 66).
    #[inline(always)]
    fn plain_static(&mut self, program: &crate::Program, rule: &Rule) -> Option<bool> {
        let sr = rule
            .static_result
            .as_ref()
            .filter(|s| s.plain || s.setvars_only)?;
        if program.options.verify || self.profile.is_some() {
            return None;
        }
        if sr.matches.is_empty() {
            self.state.matched_vars.clear();
            return Some(false);
        }
        if sr.setvars_only {
            self.folded_setvars(rule, sr);
        } else {
            // By reference: nothing is copied unless something reads them.
            for (k, _) in (0u32..).zip(&sr.matches) {
                let mut e = self.state.matched_vars.spare();
                e.name_folded(rule.index, k);
                self.state.matched_vars.push(e);
            }
        }
        if let Some(sev) = rule.meta.severity {
            self.state.highest_severity =
                Some(self.state.highest_severity.map_or(sev, |h| h.min(sev)));
        }
        Some(true)
    }

    /// The matches of a folded rule whose other effects are its `setvar`s (see
    /// [`Transaction::plain_static`]): each entry by reference, then the
    /// `setvar`s.
    #[inline(never)]
    fn folded_setvars(&mut self, rule: &Rule, sr: &crate::prune::StaticResult) {
        for (k, _) in (0u32..).zip(&sr.matches) {
            let mut e = self.state.matched_vars.spare();
            e.name_folded(rule.index, k);
            self.state.matched_vars.push(e);
            self.run_setvars(rule);
        }
    }

    /// Whether a `ctl:ruleRemove*` of this transaction removed `rule`.
    #[inline]
    pub(super) fn rule_removed(&self, rule: &Rule) -> bool {
        // Most transactions remove nothing: one test per rule visited.
        self.any_rule_removed() && self.rule_removed_by_ctl(rule)
    }

    /// Whether the rule at step `j` of `steps` is one a `ctl:ruleRemove*` of
    /// this transaction removed (asked where some rule was removed).
    #[cold]
    pub(super) fn removed_at(
        &self,
        program: &crate::Program,
        steps: &[crate::rule::Step],
        j: usize,
    ) -> bool {
        match steps.get(j) {
            Some(&Step::Rule(r)) => program
                .rules
                .get(r as usize)
                .is_some_and(|rule| self.rule_removed_by_ctl(rule)),
            _ => false,
        }
    }

    /// Whether a `ctl:ruleRemove*` of this transaction removed rules.
    #[inline]
    pub(super) fn any_rule_removed(&self) -> bool {
        !(self.state.removed_ids.is_empty()
            && self.state.removed_tags.is_empty()
            && self.state.removed_msgs.is_empty())
    }

    #[inline(never)]
    fn rule_removed_by_ctl(&self, rule: &Rule) -> bool {
        let id = rule.id;
        if self.state.removed_ids.iter().any(|r| r.contains(id)) {
            return true;
        }
        if self.state.removed_tags.iter().any(|s| s.selects(rule)) {
            return true;
        }
        if !self.state.removed_msgs.is_empty() {
            if let Some(m) = &rule.meta.msg {
                let msg = self.expand_string(m, Some(rule));
                if self
                    .state
                    .removed_msgs
                    .iter()
                    .any(|r| r.is_match(msg.as_bytes()))
                {
                    return true;
                }
            }
        }
        false
    }

    /// Evaluates a chain starting at `idx`; returns whether every link matched.
    fn eval_chain(&mut self, program: &crate::Program, idx: RuleIdx) -> bool {
        let rule = &program.rules[idx as usize];
        if !self.eval_rule(program, rule) {
            self.state.matched_vars.clear();
            return false;
        }
        if let Some(next) = rule.chain_next {
            if !self.eval_chain(program, next) {
                return false;
            }
        }
        self.after_full_match(program, rule);
        true
    }

    /// Evaluates one rule's targets with its operator; runs per-match effects.
    fn eval_rule(&mut self, program: &crate::Program, rule: &Rule) -> bool {
        if rule.unconditional {
            self.run_setvars(rule);
            return true;
        }
        if let Some(sr) = &rule.static_result {
            if program.options.verify {
                let m = self.eval_rule_values(program, rule);
                assert_eq!(
                    m,
                    !sr.matches.is_empty(),
                    "rule {} folded at load time evaluates differently",
                    rule.chain_id
                );
                return m;
            }
            // Each match by reference (see `plain_static`), then its effects.
            for (k, _) in (0u32..).zip(&sr.matches) {
                let mut e = self.state.matched_vars.spare();
                e.name_folded(rule.index, k);
                self.on_match(rule, e, true);
            }
            return !sr.matches.is_empty();
        }
        if !program.options.memo {
            // No memo: nothing transformed for an earlier rule is reused.
            self.work.memo.clear();
        }
        // (A rule in a group without a prefilter bit, for the result cache's
        // test alone: see `compile::assign_prefilter_groups`.)
        if let (Some(group), Some(pf)) = (rule.prefilter_group, &program.prefilter) {
            let bit = crate::step_gates::gate_bit(rule);
            if !self.group_may_match(program, pf, rule, group, bit) {
                if program.options.verify {
                    // Evaluate anyway: a match here is a defect of the prefilter.
                    assert!(
                        !self.eval_rule_values(program, rule),
                        "prefilter group hid a match of rule {}",
                        rule.chain_id
                    );
                }
                return false;
            }
        }
        if let Some(plan) = &rule.lean {
            if self.lean_applies(program, rule) {
                return self.eval_lean(program, rule, plan);
            }
        }
        self.eval_rule_values(program, rule)
    }

    /// Evaluates the rule's values with its operator (after the prefilter's group
    /// test); runs per-match effects.
    pub(super) fn eval_rule_values(&mut self, program: &crate::Program, rule: &Rule) -> bool {
        let mut scratch = std::mem::take(&mut self.work.scratch);
        scratch.reset();
        // A cached list of request data (already without what the rule's own
        // exclusions name, and what the `ctl` target removals applying to it take)
        // is read in place; other lists are resolved into a buffer reused across
        // rules. One call of the value loop for both (it is inlined here).
        let removals = self.ctl_removals_for(rule);
        let mut lent = self.take_targets(rule, removals);
        let cands = match &mut lent {
            Some(l) => std::mem::take(&mut l.cands),
            None => {
                let mut cands = std::mem::take(&mut self.work.cands);
                cands.clear();
                self.resolve_targets(rule, &mut scratch, &mut cands);
                cands
            }
        };
        let m = self.eval_candidates(program, rule, &cands, &scratch);
        self.work.scratch = scratch;
        match lent {
            Some(mut l) => {
                l.cands = cands;
                if !l.excluded.is_empty() {
                    self.learn_excluded(program, rule, &l.excluded);
                }
                self.give_targets(l);
            }
            None => self.work.cands = cands,
        }
        m
    }

    /// Resolves `rule`'s values into `cands` (its exclusions and the `ctl` target
    /// removals applied), those not in the arena into `scratch`.
    fn resolve_targets(
        &mut self,
        rule: &Rule,
        scratch: &mut super::data::Scratch,
        cands: &mut Vec<super::resolve::Candidate>,
    ) {
        if self.cached_targets(rule, cands) {
            // The rule's own exclusions are applied in the cached list; a `ctl`'s
            // may remain (a cached list has no counts: every value is subject).
            self.drop_excluded(rule, scratch, cands, 0, false);
        } else {
            let may_exclude = !rule.exclusions.is_empty() || self.ctl_exclusions_apply(rule);
            for spec in &rule.targets {
                let start = cands.len();
                self.collect(spec, rule, scratch, cands);
                if !spec.count && may_exclude {
                    self.drop_excluded(rule, scratch, cands, start, true);
                }
            }
        }
    }

    /// Evaluates `cands` (values after exclusions; `scratch` holds those not in the
    /// arena) with the rule's operator; runs per-match effects.
    #[inline]
    fn eval_candidates(
        &mut self,
        program: &crate::Program,
        rule: &Rule,
        cands: &[super::resolve::Candidate],
        scratch: &super::data::Scratch,
    ) -> bool {
        // No value to inspect: no match (whatever the operator), and nothing to build.
        if cands.is_empty() {
            return false;
        }
        // A dynamic operator is built per expanded argument (cached by the program).
        let dynamic;
        let op: &dyn operator::Operator = match (&rule.operator.op, &rule.resolved_op) {
            (CompiledOp::Static(op), _) => op.as_ref(),
            // Writes GEO: evaluated on its own path (see `geo.rs`), never cached.
            (CompiledOp::GeoLookup(geo), _) => {
                return self.eval_geo_lookup(program, rule, geo, scratch, cands);
            }
            // Macros that expand the same for every request: built at load time.
            (CompiledOp::Dynamic(_), Some((_, op))) if !program.options.verify => op.as_ref(),
            (CompiledOp::Dynamic(m), resolved) => {
                let arg = self.expand_string(m, Some(rule));
                if let Some((expected, _)) = resolved {
                    assert_eq!(
                        &arg, expected,
                        "operator argument of rule {} resolved at load time differs",
                        rule.chain_id
                    );
                }
                match program.dynamic_operator(rule.operator.name, &arg) {
                    Some(op) => {
                        dynamic = op;
                        dynamic.as_ref()
                    }
                    None => return false,
                }
            }
        };
        let negated = rule.operator.negated;
        let mut matched_any = false;
        let mut vbuf = std::mem::take(&mut self.work.vbuf);
        let mut tbuf = std::mem::take(&mut self.work.tbuf);
        // The group union's per-value scans: a value in which none of the rule's
        // required literals occurs is passed over with one bit test, as the memo's
        // scan below would decide (verification takes the long way, which checks).
        // (A `multiMatch` rule's scans are each value's union over its
        // intermediate values: a value none of them admits is passed over as
        // `multi_match_slot` would decide value by value.)
        let lent = match (rule.prefilter, &program.prefilter) {
            (Some(bit), Some(pf)) if !negated && !program.options.verify => self
                .take_value_scans(program, rule)
                .map(|l| (l, pf.bit_test(bit))),
            _ => None,
        };
        // The values the test passes over are left out first, in a loop of their
        // own; the others are evaluated below.
        let mut kept = std::mem::take(&mut self.work.kept);
        let cands = match lent {
            Some((l, test)) => {
                kept.clear();
                l.keep_admitted(cands, self.work.memo.all_bits(), &test, &mut kept);
                self.give_value_scans(l);
                &kept[..]
            }
            None => cands,
        };
        'values: for c in cands {
            if rule.multi_match {
                // The operator runs on the value and after every transformation that
                // changes it. A value on which none of them matched is cached.
                let cache_slot = match c.src {
                    Src::Slot(slot) if !c.count && program.options.value_cache && rule.pure => {
                        Some(slot)
                    }
                    _ => None,
                };
                let key = rule.index | crate::value_cache::MULTI;
                let cached = cache_slot.and_then(|slot| {
                    self.data
                        .cached(slot, &program.caches)
                        .and_then(|e| e.result(key))
                });
                if cached == Some(false) && !negated && !program.options.verify {
                    continue;
                }
                let walked = match (c.src, c.count, program.options.memo) {
                    (Src::Slot(slot), false, true) => {
                        self.multi_match_slot(program, rule, op, c, scratch, slot)
                    }
                    _ => None,
                };
                if let Some((matched, any_hit)) = walked {
                    matched_any |= matched;
                    self.record_multi_result(program, rule, cached, cache_slot, any_hit);
                    continue;
                }
                let raw = &self.entry_of(c, scratch).value;
                let mut any_hit = false;
                let mut cur = raw.clone();
                let mut values = vec![cur.clone()];
                for t in program.chains.transformations(rule.transforms) {
                    let mut out = Vec::new();
                    if t.apply(&cur, &mut out) {
                        cur = out;
                        values.push(cur.clone());
                    }
                }
                for value in values {
                    if rule.capture {
                        self.work.captures.clear();
                    }
                    let hit = op.evaluate(&value, rule.capture.then_some(&mut self.work.captures));
                    any_hit |= hit;
                    if hit != negated {
                        matched_any = true;
                        let mut e = self.state.matched_vars.spare();
                        self.name_match(c, scratch, &mut e);
                        e.value.extend_from_slice(&value);
                        self.on_match(rule, e, hit);
                    }
                }
                self.record_multi_result(program, rule, cached, cache_slot, any_hit);
                continue;
            }
            let (hit, value) = match c.src {
                Src::Slot(slot) if !c.count => 'eval: {
                    // A repeated value whose result is cached: no transformation,
                    // no operator (verification recomputes and compares).
                    let cache = program.options.value_cache && rule.pure;
                    let entry = if cache {
                        self.data.cached(slot, &program.caches)
                    } else {
                        None
                    };
                    let cached = entry.and_then(|e| e.result(rule.index));
                    // A cached match of a `capture` rule comes with its groups
                    // (into `self.work.captures`); without them, evaluate.
                    let captures = &mut self.work.captures;
                    let known = cached.filter(|_| !program.options.verify).filter(|&k| {
                        k == negated
                            || !(k && rule.capture)
                            || entry.is_some_and(|e| e.captures_into(rule.index, captures))
                    });
                    if let Some(known) = known {
                        if known == negated {
                            continue 'values;
                        }
                        // The rule matches: only the transformed value is needed,
                        // which the match's record keeps (else the memo gives it).
                        let mut e = self.state.matched_vars.spare();
                        self.cached_match_into(program, rule, (c.var, slot), &mut e);
                        break 'eval (known, Some(e));
                    }
                    let base = &self.data.entry(slot).value;
                    self.work
                        .memo
                        .compute(&program.chains, slot, rule.transforms, base);
                    if self.prefilter_rules_out(program, rule, slot, cached.is_none() && cache) {
                        let base = &self.data.entry(slot).value;
                        if program.options.verify {
                            let v =
                                self.work
                                    .memo
                                    .get(&program.chains, slot, rule.transforms, base);
                            assert!(
                                !op.evaluate(v, None),
                                "prefilter hid a match of rule {} on {:?}",
                                rule.chain_id,
                                String::from_utf8_lossy(v)
                            );
                        }
                        if negated {
                            let mut e = self.state.matched_vars.spare();
                            self.memo_match_into(program, rule, (c.var, slot), &mut e);
                            matched_any = true;
                            self.on_match(rule, e, false);
                        }
                        continue 'values;
                    }
                    let v = self.work.memo.get(
                        &program.chains,
                        slot,
                        rule.transforms,
                        &self.data.entry(slot).value,
                    );
                    if rule.capture {
                        self.work.captures.clear();
                    }
                    let hit = op.evaluate(v, rule.capture.then_some(&mut self.work.captures));
                    if let Some(c) = cached {
                        if program.options.verify {
                            assert_eq!(
                                c,
                                hit,
                                "cached result of rule {} differs on {:?}",
                                rule.chain_id,
                                String::from_utf8_lossy(v)
                            );
                        }
                    }
                    let matched = (hit != negated).then(|| {
                        let mut e = self.state.matched_vars.spare();
                        e.fill_from_slot((c.var, slot), v, &self.data.entry(slot).value);
                        e
                    });
                    if cached == Some(true) && rule.capture && program.options.verify {
                        let mut groups = crate::operator::Captures::default();
                        let found = self
                            .data
                            .cached_known(slot)
                            .is_some_and(|e| e.captures_into(rule.index, &mut groups));
                        assert!(
                            found && (0..10).all(|i| groups.get(i) == self.work.captures.get(i)),
                            "cached groups of rule {} differ",
                            rule.chain_id
                        );
                    }
                    if let (Some(true), false, true, Some(_)) =
                        (cached, negated, program.options.verify, &matched)
                    {
                        if let Some(kept) = self
                            .data
                            .cached_known(slot)
                            .and_then(|e| e.matched_value(rule.index))
                        {
                            assert_eq!(
                                kept, v,
                                "cached transformed value of rule {} differs",
                                rule.chain_id
                            );
                        }
                    }
                    if cached.is_none() && cache {
                        // (The top of the branch looked the value up.)
                        match (self.data.cached_known(slot), &matched) {
                            // A match (not negated): recorded with its transformed
                            // value and groups.
                            (Some(e), Some(_)) if hit => e.set_match(
                                rule.index,
                                rule.capture.then_some(&self.work.captures),
                                v,
                            ),
                            (Some(e), _) => e.set_result(rule.index, hit),
                            (None, _) => self.data.add_cost(slot, 1),
                        }
                    }
                    (hit, matched)
                }
                _ => {
                    let base = &self.entry_of(c, scratch).value;
                    super::memo::apply_chain(
                        &program.chains,
                        rule.transforms,
                        base,
                        &mut vbuf,
                        &mut tbuf,
                    );
                    if rule.capture {
                        self.work.captures.clear();
                    }
                    let hit = op.evaluate(&vbuf, rule.capture.then_some(&mut self.work.captures));
                    let matched = (hit != negated).then(|| {
                        let mut e = self.state.matched_vars.spare();
                        e.value.extend_from_slice(&vbuf);
                        self.name_match(c, scratch, &mut e);
                        e
                    });
                    (hit, matched)
                }
            };
            if let Some(e) = value {
                matched_any = true;
                self.on_match(rule, e, hit);
            }
        }
        self.work.kept = kept;
        self.work.vbuf = vbuf;
        self.work.tbuf = tbuf;
        matched_any
    }

    /// Per-match effects, in v3's order: captures into TX:0-9, MATCHED_VAR(S),
    /// then the rule's `setvar`s. `entry` (name, value) comes from
    /// [`super::matched::MatchedVars::spare`].
    pub(super) fn on_match(&mut self, rule: &Rule, entry: super::matched::Match, hit: bool) {
        // v3 (Rx::evaluate) stores the groups of this match with storeOrUpdateFirst
        // and leaves the other TX:0-9 as they were: a group captured by an earlier
        // rule keeps its value.
        if rule.capture && hit {
            for (i, digit) in DIGITS.iter().enumerate().take(self.work.captures.len()) {
                if let Some(g) = self.work.captures.get(i) {
                    self.state.tx.set_lower(digit, g);
                }
            }
        }
        self.state.matched_vars.push(entry);
        self.run_setvars(rule);
    }

    /// A `multiMatch` rule on an arena value, through the memo: the operator runs
    /// on the value and after each transformation of the chain that changed it (as
    /// without the memo), each result computed once per transaction and shared
    /// with the other rules; a result none of the rule's required literals occurs
    /// in is passed over (the operator cannot match it). Returns whether a result
    /// matched (with `!` applied: what the rule acts on) and whether the operator
    /// itself matched one (what the result cache records); `None`, before any
    /// evaluation, for a chain of 64 steps or more.
    fn multi_match_slot(
        &mut self,
        program: &crate::Program,
        rule: &Rule,
        op: &dyn operator::Operator,
        c: &super::resolve::Candidate,
        scratch: &[super::data::Entry],
        slot: u32,
    ) -> Option<(bool, bool)> {
        let negated = rule.operator.negated;
        let chains = &program.chains;
        let mut prefixes = [0; 64];
        let n = self.multi_prefixes(program, rule, slot, &mut prefixes)?;
        let long = self.data.response_body_slot() == Some(slot);
        let filter = match (rule.prefilter, &program.prefilter) {
            (Some(bit), Some(pf)) if !negated && !program.options.verify => Some((bit, pf)),
            _ => None,
        };
        let (mut matched, mut any_hit) = (false, false);
        let mut previous = None;
        for &chain in &prefixes[..n] {
            let bytes = self.work.memo.bytes_id(slot, chain);
            if previous == Some(bytes) {
                continue;
            }
            previous = Some(bytes);
            if let Some((bit, pf)) = filter {
                let base = &self.data.entry(slot).value;
                if !pf.admits(
                    self.work.memo.scan(pf, chains, slot, chain, base, long),
                    bit,
                ) {
                    continue;
                }
            }
            if rule.capture {
                self.work.captures.clear();
            }
            let base = &self.data.entry(slot).value;
            let value = self.work.memo.get(chains, slot, chain, base);
            let hit = op.evaluate(value, rule.capture.then_some(&mut self.work.captures));
            any_hit |= hit;
            if hit != negated {
                matched = true;
                let mut e = self.state.matched_vars.spare();
                e.value.extend_from_slice(value);
                self.name_match(c, scratch, &mut e);
                self.on_match(rule, e, hit);
            }
        }
        Some((matched, any_hit))
    }

    /// Writes into `prefixes` the prefixes of `rule`'s chain a `multiMatch`
    /// evaluation of `slot` walks, shortest first (the raw value's chain 0
    /// first), and returns how many there are, with the chain computed in the
    /// memo. A value without a trigger byte of the chain is the same after every
    /// step: the raw value alone, as the walk would find (every prefix's bytes are
    /// the raw value's), without linking the prefixes in the memo. `None` for a
    /// chain of 64 steps or more (no real rule set has one: the plain path takes
    /// it). (The array is the caller's: returned by value, its copy cost more
    /// than the walk on values without trigger bytes; inlined, as the walk was
    /// before it was shared.)
    #[inline(always)]
    pub(super) fn multi_prefixes(
        &mut self,
        program: &crate::Program,
        rule: &Rule,
        slot: u32,
        prefixes: &mut [crate::chains::ChainId; 64],
    ) -> Option<usize> {
        let chains = &program.chains;
        let mut n = 0;
        let base = &self.data.entry(slot).value;
        let same = self
            .work
            .memo
            .unchanged(chains, slot, rule.transforms, base);
        let mut id = if same { 0 } else { rule.transforms };
        while let Some((parent, _)) = chains.split_last(id) {
            if n + 1 == prefixes.len() {
                return None;
            }
            prefixes[n] = id;
            n += 1;
            id = parent;
        }
        prefixes[n] = 0;
        n += 1;
        prefixes[..n].reverse();
        if !same {
            let base = &self.data.entry(slot).value;
            self.work.memo.compute(chains, slot, rule.transforms, base);
        }
        Some(n)
    }

    /// Records a `multiMatch` rule's result on a value in the result cache (or
    /// checks it, with `Options::verify`).
    fn record_multi_result(
        &mut self,
        program: &crate::Program,
        rule: &Rule,
        cached: Option<bool>,
        cache_slot: Option<u32>,
        any_hit: bool,
    ) {
        let key = rule.index | crate::value_cache::MULTI;
        match (cached, cache_slot) {
            (Some(c), _) if program.options.verify => {
                assert_eq!(
                    c, any_hit,
                    "cached result of rule {} differs",
                    rule.chain_id
                );
            }
            (None, Some(slot)) => match self.data.cached(slot, &program.caches) {
                Some(e) => e.set_result(key, any_hit),
                None => self.data.add_cost(slot, 1),
            },
            _ => {}
        }
    }

    /// Removes the candidates from `start` on that an exclusion of `rule` covers:
    /// its own (when `own`; a cached list has them applied already) or one a `ctl`
    /// of this transaction added.
    fn drop_excluded(
        &self,
        rule: &Rule,
        scratch: &[super::data::Entry],
        cands: &mut Vec<super::resolve::Candidate>,
        start: usize,
        own: bool,
    ) {
        // An exclusion applies only to values of the variable it names, and a
        // rule's own and the ctl-removed ones name a few (941010's removal of
        // REQUEST_FILENAME stands for most requests): a value of another variable
        // is kept without looking at its key. Values come in runs of one
        // variable, so the test is made once per run.
        let mut run: Option<(Var, bool)> = None;
        let mut w = start;
        for r in start..cands.len() {
            let c = cands[r];
            let named = match run {
                Some((v, named)) if v == c.var => named,
                _ => {
                    let named = (own && rule.exclusions.iter().any(|e| e.var == c.var))
                        || self.ctl_exclusion_names(rule, c.var);
                    run = Some((c.var, named));
                    named
                }
            };
            let key = &self.entry_of(&c, scratch).key;
            if !named
                || !((own && rule.exclusions.iter().any(|e| e.excludes(c.var, key)))
                    || self.ctl_excluded(rule, c.var, key))
            {
                cands[w] = c;
                w += 1;
            }
        }
        cands.truncate(w);
    }

    /// Whether a `ctl` exclusion of this transaction may apply to `rule` (the
    /// `ruleRemoveTargetByMsg` ones: whenever the rule has a message).
    #[inline]
    pub(super) fn ctl_exclusions_apply(&self, rule: &Rule) -> bool {
        let s = &self.state;
        // Most transactions run no `ctl` target removal: three length tests.
        if s.removed_targets_by_id.is_empty()
            && s.removed_targets_by_tag.is_empty()
            && s.removed_targets_by_msg.is_empty()
        {
            return false;
        }
        s.removed_targets_by_id
            .iter()
            .any(|(ids, _)| ids.iter().any(|r| r.contains(rule.chain_id)))
            || s.removed_targets_by_tag
                .iter()
                .any(|(t, _)| t.selects(rule))
            || (!s.removed_targets_by_msg.is_empty() && rule.meta.msg.is_some())
    }

    /// Whether a `ctl` exclusion that may apply to `rule` names `var`: without
    /// one, no value of `var` is [`Transaction::ctl_excluded`].
    fn ctl_exclusion_names(&self, rule: &Rule, var: Var) -> bool {
        let s = &self.state;
        s.removed_targets_by_id
            .iter()
            .any(|(ids, e)| e.var == var && ids.iter().any(|r| r.contains(rule.chain_id)))
            || s.removed_targets_by_tag
                .iter()
                .any(|(t, e)| e.var == var && t.selects(rule))
            || s.removed_targets_by_msg.iter().any(|(_, e)| e.var == var)
    }

    /// Whether the value of `var` with `key` is excluded from `rule`: by its own
    /// exclusions or a `ctl`'s.
    pub(super) fn excluded(&self, rule: &Rule, var: Var, key: &[u8]) -> bool {
        rule.exclusions.iter().any(|e| e.excludes(var, key)) || self.ctl_excluded(rule, var, key)
    }

    /// Whether a `ctl` of this transaction excluded the value of `var` with `key`
    /// from `rule`.
    fn ctl_excluded(&self, rule: &Rule, var: Var, key: &[u8]) -> bool {
        let id = rule.chain_id;
        if self
            .state
            .removed_targets_by_id
            .iter()
            .any(|(ids, e)| ids.iter().any(|r| r.contains(id)) && e.excludes(var, key))
        {
            return true;
        }
        // The tag test is one bit (the rules a tag regex selects are known).
        if self
            .state
            .removed_targets_by_tag
            .iter()
            .any(|(s, e)| s.selects(rule) && e.excludes(var, key))
        {
            return true;
        }
        // ctl:ruleRemoveTargetByMsg: the rule's msg as expanded now.
        if !self.state.removed_targets_by_msg.is_empty() {
            if let Some(m) = &rule.meta.msg {
                let msg = self.expand_string(m, Some(rule));
                if self
                    .state
                    .removed_targets_by_msg
                    .iter()
                    .any(|(re, e)| re.is_match(msg.as_bytes()) && e.excludes(var, key))
                {
                    return true;
                }
            }
        }
        false
    }

    fn collection_mut(&mut self, var: Var) -> Option<&mut Collection> {
        match var {
            Var::Tx => Some(&mut self.state.tx),
            _ => self
                .state
                .persistent
                .iter_mut()
                .find(|(v, _, _)| *v == var)
                .map(|(_, _, c)| c),
        }
    }

    fn run_setvars(&mut self, rule: &Rule) {
        if rule.setvars.is_empty() {
            return;
        }
        // One buffer for the expanded values, kept across calls: no allocation.
        let mut value = std::mem::take(&mut self.work.setvar_buf);
        let mut raw = std::mem::take(&mut self.work.setvar_key);
        for sv in &rule.setvars {
            let lossy;
            // The key's bytes, valid UTF-8 (collection keys are strings).
            let key: &[u8] = match &sv.key_literal {
                Some(k) => k.as_bytes(),
                None => {
                    // Lower-casing the bytes first gives the same key as lower-casing
                    // the lossy string: invalid sequences hold no ASCII byte. (The
                    // literal parts were lower-cased at load time.)
                    if self.expand_setvar_key(sv, rule, &mut raw)
                        || std::str::from_utf8(&raw).is_ok()
                    {
                        &raw
                    } else {
                        lossy = String::from_utf8_lossy(&raw).into_owned();
                        lossy.as_bytes()
                    }
                }
            };
            // A literal key's position hint (a key from macros has none).
            let hint = sv.key_literal.as_ref().map(|_| &sv.hint);
            match sv.op {
                SetVarOp::Add | SetVarOp::Sub => {
                    let b = self.setvar_operand(sv, rule, &mut value);
                    let Some(col) = self.collection_mut(sv.collection) else {
                        continue;
                    };
                    // The member found once, read and written in place.
                    let at = col.position_lower_with(key, hint);
                    let current = at.and_then(|i| col.value_at(i));
                    let a = parse_int(current.unwrap_or(b"0"));
                    let r = if sv.op == SetVarOp::Add {
                        a.saturating_add(b)
                    } else {
                        a.saturating_sub(b)
                    };
                    let mut digits = [0u8; 20];
                    let r = format_int(r, &mut digits);
                    // Adding nothing to a TX member already written as its number
                    // (CRS's score sums on a request nothing matched) leaves it
                    // as it is: not written again.
                    let same = b == 0 && sv.collection == Var::Tx && current == Some(r);
                    match at {
                        Some(_) if same => {}
                        Some(i) => col.set_at(i, r),
                        None => col.set_lower_with(key, r, hint),
                    }
                }
                SetVarOp::Set => {
                    // A literal is written from the rule, not copied first.
                    let v = match sv.value.literal() {
                        Some(l) => l,
                        None => {
                            self.expand(&sv.value, Some(rule), &mut value);
                            &value[..]
                        }
                    };
                    if let Some(col) = self.collection_mut(sv.collection) {
                        col.set_lower_with(key, v, hint);
                    }
                }
                SetVarOp::Flag => {
                    if let Some(col) = self.collection_mut(sv.collection) {
                        col.set_lower_with(key, b"1", hint);
                    }
                }
                SetVarOp::Unset => {
                    if let Some(col) = self.collection_mut(sv.collection) {
                        col.remove(&String::from_utf8_lossy(key));
                    }
                }
            }
        }
        self.work.setvar_buf = value;
        self.work.setvar_key = raw;
    }

    /// A `setvar:'key=+VALUE'` operand as a number: what [`parse_int`] reads of
    /// the expanded value, without expanding it into `buf` when it is a literal
    /// or one TX member (`=+%{tx.inbound_anomaly_score_pl1}`).
    #[inline]
    fn setvar_operand(
        &self,
        sv: &crate::rule::SetVarAction,
        rule: &Rule,
        buf: &mut Vec<u8>,
    ) -> i64 {
        match sv.value.parts() {
            [] => 0,
            [Part::Literal(l)] => parse_int(l),
            [Part::Var {
                var: Var::Tx,
                key: Some(k),
                hint,
            }] => parse_int(
                self.state
                    .tx
                    .get_lower_hinted(k.as_bytes(), hint)
                    .unwrap_or_default(),
            ),
            _ => {
                self.expand(&sv.value, Some(rule), buf);
                parse_int(buf)
            }
        }
    }

    /// A logged rule's `msg` and `logdata`, expanded now (empty when not
    /// given): at its match, or later for one that composes them late.
    pub(super) fn record_messages(&self, rule: &Rule) -> (String, String) {
        let expand = |m: &Option<crate::macros::MacroString>| {
            m.as_ref()
                .map(|m| self.expand_string(m, Some(rule)))
                .unwrap_or_default()
        };
        (expand(&rule.meta.msg), expand(&rule.meta.logdata))
    }

    /// Effects after the whole chain matched, for one link (`rule`).
    fn after_full_match(&mut self, program: &crate::Program, rule: &Rule) {
        debug_assert_eq!(rule.match_actions, rule.has_match_actions());
        if rule.match_actions {
            self.run_match_actions(rule);
        }
        if rule.id == 0 {
            return; // chain link: logging and disruption belong to the starter
        }
        self.after_starter_match(program, rule);
    }

    /// A full match's `ctl`, `initcol`, `setsid`, `setuid`, `sanitise*`,
    /// `setenv` and `expirevar` actions, in that order.
    #[inline(never)]
    fn run_match_actions(&mut self, rule: &Rule) {
        for ctl in &rule.ctls {
            self.apply_ctl(ctl);
        }
        for (var, key) in &rule.initcols {
            let k = self.expand_string(key, Some(rule));
            self.init_collection(*var, &k);
        }
        if let Some(s) = &rule.setsid {
            let k = self.expand_string(s, Some(rule));
            self.state.session_id = Some(k.clone());
            self.init_collection(Var::Session, &k);
        }
        if let Some(u) = &rule.setuid {
            let k = self.expand_string(u, Some(rule));
            self.state.user_id = Some(k.clone());
            self.init_collection(Var::User, &k);
        }
        for (name, arg) in &rule.sanitise {
            self.record_sanitise(name, arg.as_ref(), rule);
        }
        for (k, v) in &rule.setenvs {
            let k = self.expand_string(k, Some(rule));
            let mut val = Vec::new();
            self.expand(v, Some(rule), &mut val);
            self.state.env.set(&k, val);
        }
        for (var, key, secs) in &rule.expirevars {
            let k = self.expand_string(key, Some(rule)).to_ascii_lowercase();
            let s = parse_int(self.expand_string(secs, Some(rule)).as_bytes()).max(0) as u64;
            if let Some(c) = self.collection_mut(*var) {
                c.expire(&k, now_unix() + s);
            }
        }
    }

    /// A full match's logging and disruption, for a chain starter (`rule`).
    fn after_starter_match(&mut self, program: &crate::Program, rule: &Rule) {
        if let Some(sev) = rule.meta.severity {
            self.state.highest_severity =
                Some(self.state.highest_severity.map_or(sev, |h| h.min(sev)));
        }
        let disruptive_applies = self.mode == EngineMode::On && rule.disruptive != Disruptive::Pass;
        if rule.log {
            let (mvn, mv) = self
                .state
                .matched_vars
                .last(self.lookup())
                .map(|(n, v)| (n.into_owned(), crate::lossy::lossy(v)))
                .unwrap_or_default();
            let (msg, data) = if rule.defer_log {
                Default::default()
            } else {
                self.record_messages(rule)
            };
            let record = MatchedRule {
                id: rule.id,
                phase: rule.phase,
                // Composed when the records are read, when it may be (see
                // `crate::deferred_log`).
                msg,
                data,
                severity: rule.meta.severity,
                tags: rule.record.tags.clone(),
                rev: rule.record.rev.clone(),
                ver: rule.record.ver.clone(),
                maturity: rule.record.maturity.clone(),
                accuracy: rule.record.accuracy.clone(),
                file: rule.record.file.clone(),
                line: rule.line,
                matched_var_name: mvn,
                matched_var: mv,
                operator: rule.record.operator.clone(),
                disruptive: disruptive_applies,
                auditlog: rule.auditlog,
            };
            if rule.defer_log {
                self.matched.push_late(record, rule.index);
            } else {
                self.matched.push(record);
            }
        }
        if !disruptive_applies {
            return;
        }
        let _ = program;
        match &rule.disruptive {
            Disruptive::Pass => {}
            Disruptive::Deny => {
                self.intervention = Some(Intervention::Deny {
                    status: rule.status.unwrap_or(403),
                    rule_id: Some(rule.id),
                });
            }
            Disruptive::Drop => {
                self.intervention = Some(Intervention::Drop {
                    rule_id: Some(rule.id),
                });
            }
            Disruptive::Redirect(url) => {
                // v3's Redirect keeps a status set by the rule only when it is in
                // 301-307; anything else becomes 302.
                let status = rule
                    .status
                    .filter(|s| (301..=307).contains(s))
                    .unwrap_or(302);
                self.intervention = Some(Intervention::Redirect {
                    status,
                    location: self.expand_string(url, Some(rule)),
                    rule_id: Some(rule.id),
                });
            }
            Disruptive::Allow(scope) => {
                self.allowed = match scope {
                    AllowScope::All => Allowed::All,
                    AllowScope::Request => Allowed::Request,
                    AllowScope::Phase => Allowed::Phase(rule.phase),
                };
            }
        }
    }

    /// A `sanitise*` action of a matched rule: remembers what the audit log must
    /// mask. `sanitiseMatched` and `sanitiseMatchedBytes` (masked whole) name every
    /// variable the rule matched.
    fn record_sanitise(&mut self, name: &str, arg: Option<&MacroString>, rule: &Rule) {
        let arg = arg.map(|m| self.expand_string(m, Some(rule)));
        let new: Vec<Sanitise> = match (name, arg) {
            ("sanitiseArg", Some(a)) => vec![Sanitise::Arg(a)],
            ("sanitiseRequestHeader", Some(h)) => vec![Sanitise::RequestHeader(h)],
            ("sanitiseResponseHeader", Some(h)) => vec![Sanitise::ResponseHeader(h)],
            ("sanitiseMatched" | "sanitiseMatchedBytes", _) => self
                .state
                .matched_vars
                .iter(self.lookup())
                .map(|(n, _)| Sanitise::Matched(n.into_owned()))
                .collect(),
            _ => Vec::new(),
        };
        for s in new {
            if !self.state.sanitised.contains(&s) {
                self.state.sanitised.push(s);
            }
        }
    }

    fn init_collection(&mut self, var: Var, key: &str) {
        if self.state.persistent.iter().any(|(v, _, _)| *v == var) {
            return;
        }
        let name = var.name().to_ascii_lowercase();
        let record = self
            .store
            .as_ref()
            .map(|s| s.load(&name, key))
            .unwrap_or_default();
        self.state.persistent.push((var, key.to_string(), record));
    }

    fn apply_ctl(&mut self, ctl: &CtlAction) {
        match ctl {
            CtlAction::RuleEngine(m) => self.mode = *m,
            CtlAction::RemoveById(ids) => self.state.removed_ids.extend(ids.iter().copied()),
            CtlAction::RemoveByTag(re) => self.state.removed_tags.push(re.clone()),
            CtlAction::RemoveByMsg(re) => self.state.removed_msgs.push(re.clone()),
            CtlAction::RemoveTargetById(ids, ex) => {
                for e in ex {
                    self.state
                        .removed_targets_by_id
                        .push((ids.clone(), e.clone()));
                }
            }
            CtlAction::RemoveTargetByTag(re, ex) => {
                for e in ex {
                    self.state
                        .removed_targets_by_tag
                        .push((re.clone(), e.clone()));
                }
            }
            CtlAction::RemoveTargetByMsg(re, ex) => {
                for e in ex {
                    self.state
                        .removed_targets_by_msg
                        .push((re.clone(), e.clone()));
                }
            }
            CtlAction::RequestBodyProcessor(p) => {
                self.data.set(Var::ReqbodyProcessor, p.as_bytes());
                self.body_processor = Some(p.clone());
            }
            CtlAction::RequestBodyAccess(b) => self.request_body_access = Some(*b),
            CtlAction::ResponseBodyAccess(b) => self.response_body_access = Some(*b),
            CtlAction::RequestBodyLimit(n) => self.request_body_limit = Some(*n),
            CtlAction::ResponseBodyLimit(n) => self.response_body_limit = Some(*n),
            CtlAction::AuditEngine(a) => self.audit_engine = Some(*a),
            CtlAction::AuditLogParts(p) => {
                let base = self.audit_parts().to_string();
                self.audit_parts = Some(merge_parts(&base, p));
            }
            CtlAction::ForceRequestBodyVariable(b) => self.force_request_body_variable = *b,
            CtlAction::Other(..) => {}
        }
    }
}

const DIGITS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];

/// `auditLogParts=+E` adds parts, `-E` removes them (the compiler refuses any other
/// form, as v3 does; a bare list would replace).
fn merge_parts(base: &str, change: &str) -> String {
    if let Some(add) = change.strip_prefix('+') {
        let mut s = base.to_string();
        for c in add.chars() {
            if !s.contains(c) {
                s.push(c);
            }
        }
        s
    } else if let Some(del) = change.strip_prefix('-') {
        base.chars().filter(|c| !del.contains(*c)).collect()
    } else {
        change.to_string()
    }
}

/// Integer parsing as ModSecurity does for setvar and numeric operators: optional
/// blanks and sign, then digits up to the first other character; none gives 0.
pub(crate) fn parse_int(s: &[u8]) -> i64 {
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_whitespace() {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'-' || s[i] == b'+') {
        neg = s[i] == b'-';
        i += 1;
    }
    let mut n: i64 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        n = n.saturating_mul(10).saturating_add(i64::from(s[i] - b'0'));
        i += 1;
    }
    if neg {
        -n
    } else {
        n
    }
}

fn elapsed_nanos(start: std::time::Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// `n` in decimal, written into `buf` (an i64 needs at most 20 bytes).
pub(super) fn format_int(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

impl Transaction {
    /// Fills the spare entry `e` for a cached match of `rule` on `var`'s value
    /// at `slot`: named by the slot, with the transformed value the match's
    /// record keeps (read from the slot when the record says the rule's
    /// transformations left the value as it was), else as
    /// [`Transaction::memo_match_into`] gives it.
    pub(super) fn cached_match_into(
        &mut self,
        program: &crate::Program,
        rule: &Rule,
        (var, slot): (Var, u32),
        e: &mut super::matched::Match,
    ) {
        match self
            .data
            .cached(slot, &program.caches)
            .and_then(|c| c.matched_form(rule.index))
        {
            // The value as it is (the entry's bytes are the slot's).
            Some(None) => {
                e.name_slot_value(var, slot);
                return;
            }
            Some(Some(v)) => {
                e.value.extend_from_slice(v);
                e.name_slot(var, slot);
                return;
            }
            None => {}
        }
        let base = &self.data.entry(slot).value;
        self.work
            .memo
            .compute(&program.chains, slot, rule.transforms, base);
        self.memo_match_into(program, rule, (var, slot), e);
    }

    /// Fills the spare entry `e` for a match of `rule` on `var`'s value at
    /// `slot`, whose result under the rule's transformations the memo has
    /// computed: named by the slot, with that result as its value, read from the
    /// slot where the transformations left the value as it was (a negated
    /// match on a response body copies nothing), else copied.
    pub(super) fn memo_match_into(
        &mut self,
        program: &crate::Program,
        rule: &Rule,
        (var, slot): (Var, u32),
        e: &mut super::matched::Match,
    ) {
        let base = self.data.entry(slot).value.as_slice();
        let v = self
            .work
            .memo
            .get(&program.chains, slot, rule.transforms, base);
        e.fill_from_slot((var, slot), v, base);
    }

    /// Whether the prefilter rules `rule` out on `slot`'s value (its scan under
    /// the rule's chain, which the memo has computed, lacks the rule's required
    /// literals): the operator cannot match. With `learn`, the result cache
    /// learns that like an evaluated miss (a value without an entry counts the
    /// work as its processing cost).
    pub(super) fn prefilter_rules_out(
        &mut self,
        program: &crate::Program,
        rule: &Rule,
        slot: u32,
        learn: bool,
    ) -> bool {
        let (Some(bit), Some(pf)) = (rule.prefilter, &program.prefilter) else {
            return false;
        };
        let long = self.data.response_body_slot() == Some(slot);
        let base = &self.data.entry(slot).value;
        let bits = self
            .work
            .memo
            .scan(pf, &program.chains, slot, rule.transforms, base, long);
        if pf.admits(bits, bit) {
            return false;
        }
        if learn {
            match self.data.cached(slot, &program.caches) {
                Some(e) => e.set_result(rule.index, false),
                None => self.data.add_cost(slot, 1),
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_integers_like_to_string() {
        for n in [0i64, 5, -5, 10, 1234567, i64::MAX, i64::MIN] {
            let mut buf = [0u8; 20];
            assert_eq!(super::format_int(n, &mut buf), n.to_string().as_bytes());
        }
    }
}
