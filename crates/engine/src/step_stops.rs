//! Stop plans: per phase, what the rule loop's stop mask is made from. The mask
//! holds a bit per step, set where the loop must do more than clear MATCHED_VARS
//! (see `Transaction::next_stop`): a pass over rules that cannot match is then a
//! search for the next set bit instead of a test per step.
//!
//! A step's bit is fixed at load time unless the step is a gated rule (see
//! [`crate::step_gates`]):
//! - markers, load-time removals (no `skip` is pending where the mask is used)
//!   and rules folded to "never matches" (one-step passes) are clear;
//! - other rules that are not gated are set, folded matches the loop jumps over
//!   included (the loop takes their jump where it may).
//!
//! A gated rule's bit is made per data generation from its group's admission
//! (see `transaction/groups.rs`): it is set when the rule may match. That is when
//! a class's maybe set holds it (result cache), or when the cached values do not
//! cover its group and the group's union is unknown, admits its prefilter bit,
//! or there is no bit to test ([`crate::step_gates::NO_BIT`]). The plan lists
//! the gated steps by prefilter bit, by rule and by group, so the mask is made
//! from the admitted bits and the groups, not by visiting every step.

use crate::rule::Step;
use crate::step_gates::{Gate, NO_BIT};

/// A step a plan's list does not hold.
pub const NO_STEP: u32 = u32::MAX;

/// One phase's stop plan.
#[derive(Debug, Clone, Default)]
pub struct StopPlan {
    /// The steps whose bit is set whatever the admission (bit per step).
    pub fixed: Vec<u64>,
    /// Per prefilter bit: the gated steps holding it, as (start, length) in
    /// `bit_steps` (empty for bits of other phases).
    bit_runs: Vec<(u32, u32)>,
    /// Gated steps by prefilter bit: (step, position of its group in `groups`).
    bit_steps: Vec<(u32, u32)>,
    /// Per rule index: its step when it is a gated rule of this phase
    /// ([`NO_STEP`] otherwise).
    rule_steps: Vec<u32>,
    /// The gated rules of this phase (bit per rule index).
    pub rule_mask: Vec<u64>,
    /// The prefilter bits of this phase's gated steps.
    pub bit_mask: Vec<u64>,
    /// The groups with a gated rule in this phase.
    pub groups: Vec<PhaseGroup>,
    /// The groups' gated steps: for each group, its steps without a prefilter
    /// bit first, then the others.
    group_steps: Vec<u32>,
    /// The groups' class masks (see [`crate::classes::GroupPlan`]), one after
    /// the other, `mask_words` each.
    group_masks: Vec<u64>,
    mask_words: usize,
    /// The class chains of the groups with a gated step with a prefilter bit
    /// and a plan that is not unclassed (each once, in class order), each with
    /// its class and whether every such group holding it reads `XML`: the
    /// chains whose unions the mask is made from (see
    /// `Transaction::admit_phase`).
    pub class_chains: Vec<(u32, u32, bool)>,
    /// `class_chains` by class: (class, start, end) of the run of its chains in
    /// `class_chains`, which are in class order, so that a class without a
    /// value is passed over with one test, not one per chain.
    pub class_runs: Vec<(u32, u32, u32)>,
    /// The groups (positions in `groups`) whose steps the mask may take from
    /// the group rather than from the admitted bits (see
    /// `Transaction::admit_phase`), so that a mask is made without visiting
    /// the others: those with a gated step without a prefilter bit ...
    pub nobit_groups: Vec<u32>,
    /// ... those with a prefilter bit whose union is unknown whatever the
    /// data (unclassed) ...
    pub unclassed_groups: Vec<u32>,
    /// ... those with a prefilter bit reading `XML` (unknown when there is a
    /// document or it failed) ...
    pub xml_groups: Vec<u32>,
    /// ... and per class, those with a prefilter bit reading it (unknown when
    /// the class is), as (start, length) in `class_group_list`.
    class_group_runs: Vec<(u32, u32)>,
    class_group_list: Vec<u32>,
}

/// A group with gated rules in a phase.
#[derive(Debug, Clone, Copy, Default)]
pub struct PhaseGroup {
    /// The prefilter group.
    pub group: u32,
    /// Its gated steps in the plan's list: (start, length, of which the first
    /// `nobit` have no prefilter bit).
    start: u32,
    len: u32,
    nobit: u32,
    /// A target is not an arena list (see [`crate::classes::GroupPlan`]).
    pub unclassed: bool,
    /// A target reads `XML`.
    pub xml: bool,
}

impl StopPlan {
    /// The plan of one phase's steps, with its gates and passes (see
    /// [`crate::step_gates::StepGates`]).
    pub(crate) fn build(
        steps: &[Step],
        reachable: &[bool],
        gate_at: impl Fn(usize) -> Option<Gate>,
        pass_at: impl Fn(usize) -> Option<usize>,
        rules: usize,
        bits: usize,
        group_plan: impl Fn(u32) -> Option<(bool, bool, Vec<u64>, Vec<(u32, u32)>)>,
    ) -> StopPlan {
        let mut plan = StopPlan {
            fixed: vec![0; steps.len().div_ceil(64)],
            bit_runs: vec![(0, 0); bits],
            rule_steps: vec![NO_STEP; rules],
            rule_mask: vec![0; rules.div_ceil(64)],
            bit_mask: vec![0; bits.div_ceil(64)],
            ..StopPlan::default()
        };
        let mut by_bit: Vec<Vec<(u32, u32)>> = vec![Vec::new(); bits];
        let mut by_group: std::collections::BTreeMap<u32, (Vec<u32>, Vec<u32>)> =
            std::collections::BTreeMap::new();
        for (i, step) in steps.iter().enumerate() {
            let Step::Rule(idx) = *step else { continue };
            let s = i as u32;
            let Some(gate) = gate_at(i) else {
                if pass_at(i) != Some(i + 1) {
                    set(&mut plan.fixed, s);
                }
                continue;
            };
            // A gated rule the loop never reaches: its group is not merged for
            // it (were it reached after all, it would be evaluated).
            if !reachable.get(i).copied().unwrap_or(true) {
                set(&mut plan.fixed, s);
                continue;
            }
            if let Some(r) = plan.rule_steps.get_mut(idx as usize) {
                *r = s;
                set(&mut plan.rule_mask, idx);
            }
            let entry = by_group.entry(gate.group).or_default();
            if gate.bit == NO_BIT {
                entry.0.push(s);
                continue;
            }
            entry.1.push(s);
            match by_bit.get_mut(gate.bit as usize) {
                Some(list) => {
                    list.push((s, gate.group));
                    set(&mut plan.bit_mask, gate.bit);
                }
                // A bit the prefilter does not have: always a stop.
                None => set(&mut plan.fixed, s),
            }
        }
        let position = |group: u32| by_group.keys().position(|&g| g == group).unwrap_or(0) as u32;
        for (run, list) in plan.bit_runs.iter_mut().zip(by_bit) {
            *run = (plan.bit_steps.len() as u32, list.len() as u32);
            plan.bit_steps
                .extend(list.into_iter().map(|(s, g)| (s, position(g))));
        }
        let masks: Vec<_> = by_group.keys().map(|&g| group_plan(g)).collect();
        plan.mask_words = masks
            .iter()
            .flatten()
            .map(|(_, _, m, _)| m.len())
            .max()
            .unwrap_or(0);
        let mut chains: std::collections::BTreeMap<(u32, u32), bool> =
            std::collections::BTreeMap::new();
        for ((group, (nobit, other)), gp) in by_group.into_iter().zip(masks) {
            // A group without a plan: as an unclassed one (never covered).
            let (unclassed, xml, mask, class_chains) =
                gp.unwrap_or((true, false, Vec::new(), Vec::new()));
            if !unclassed && !other.is_empty() {
                for cc in class_chains {
                    *chains.entry(cc).or_insert(true) &= xml;
                }
            }
            plan.groups.push(PhaseGroup {
                group,
                start: plan.group_steps.len() as u32,
                len: (nobit.len() + other.len()) as u32,
                nobit: nobit.len() as u32,
                unclassed,
                xml,
            });
            plan.group_steps.extend(nobit);
            plan.group_steps.extend(other);
            let at = plan.group_masks.len();
            plan.group_masks.extend(mask);
            plan.group_masks.resize(at + plan.mask_words, 0);
        }
        plan.index_groups();
        plan.class_chains = chains
            .into_iter()
            .map(|((cc, class), xml)| (cc, class, xml))
            .collect();
        plan.class_chains.sort_by_key(|&(cc, class, _)| (class, cc));
        for (i, &(_, class, _)) in plan.class_chains.iter().enumerate() {
            let i = i as u32;
            match plan.class_runs.last_mut() {
                Some(run) if run.0 == class => run.2 = i + 1,
                _ => plan.class_runs.push((class, i, i + 1)),
            }
        }
        plan
    }

    /// Fills the lists of groups by what may make them mark their steps
    /// (`nobit_groups`, `unclassed_groups`, `xml_groups`, the groups per class).
    fn index_groups(&mut self) {
        let (mut nobit, mut unclassed, mut xml) = (Vec::new(), Vec::new(), Vec::new());
        let mut by_class: Vec<Vec<u32>> = vec![Vec::new(); self.mask_words * 64];
        for (k, g) in self.groups.iter().enumerate() {
            let pos = k as u32;
            if g.nobit > 0 {
                nobit.push(pos);
            }
            if !self.has_bits(g) {
                continue;
            }
            if g.unclassed {
                unclassed.push(pos);
                continue;
            }
            if g.xml {
                xml.push(pos);
            }
            for (wi, &word) in self.group_mask(k).iter().enumerate() {
                let mut word = word;
                while word != 0 {
                    let c = wi * 64 + word.trailing_zeros() as usize;
                    word &= word - 1;
                    if let Some(list) = by_class.get_mut(c) {
                        list.push(pos);
                    }
                }
            }
        }
        (self.nobit_groups, self.unclassed_groups, self.xml_groups) = (nobit, unclassed, xml);
        for list in by_class {
            self.class_group_runs
                .push((self.class_group_list.len() as u32, list.len() as u32));
            self.class_group_list.extend(list);
        }
    }

    /// The groups (positions) with a prefilter bit reading class `class`.
    #[inline]
    pub fn class_groups(&self, class: usize) -> &[u32] {
        let (start, len) = self.class_group_runs.get(class).copied().unwrap_or((0, 0));
        self.class_group_list
            .get(start as usize..(start + len) as usize)
            .unwrap_or_default()
    }

    /// The group at position `k`.
    #[inline]
    pub fn group_at(&self, k: u32) -> Option<&PhaseGroup> {
        self.groups.get(k as usize)
    }

    /// The groups' class masks, one word each, when masks are one word.
    #[inline]
    pub fn single_word_masks(&self) -> Option<&[u64]> {
        (self.mask_words == 1).then_some(&self.group_masks[..])
    }

    /// Group `k`'s (by position) class mask.
    #[inline]
    pub fn group_mask(&self, k: usize) -> &[u64] {
        let w = self.mask_words;
        self.group_masks.get(k * w..(k + 1) * w).unwrap_or_default()
    }

    /// The gated steps holding prefilter bit `bit`, with their groups'
    /// positions in [`StopPlan::groups`].
    #[inline]
    pub fn bit_steps(&self, bit: u32) -> &[(u32, u32)] {
        let (start, len) = self.bit_runs.get(bit as usize).copied().unwrap_or((0, 0));
        self.bit_steps
            .get(start as usize..(start + len) as usize)
            .unwrap_or_default()
    }

    /// The step of rule `idx` when it is a gated rule of this phase.
    #[inline]
    pub fn rule_step(&self, idx: u32) -> Option<u32> {
        self.rule_steps
            .get(idx as usize)
            .copied()
            .filter(|&s| s != NO_STEP)
    }

    /// Whether a group has a gated step with a prefilter bit (only then is its
    /// union asked).
    #[inline]
    pub fn has_bits(&self, g: &PhaseGroup) -> bool {
        g.len > g.nobit
    }

    /// Whether a group has gated steps without a prefilter bit (without the
    /// result cache, none: such rules join no group).
    #[inline]
    pub fn has_nobit(&self, g: &PhaseGroup) -> bool {
        g.nobit > 0
    }

    /// Sets in `mask` group `g`'s gated steps: all of them, or only those
    /// without a prefilter bit.
    #[inline]
    pub fn mark_group(&self, g: &PhaseGroup, all: bool, mask: &mut [u64]) {
        for &s in self.group_steps(g, all) {
            set(mask, s);
        }
    }

    /// A group's gated steps: all of them, or only those without a prefilter bit.
    #[inline]
    pub fn group_steps(&self, g: &PhaseGroup, all: bool) -> &[u32] {
        let len = if all { g.len } else { g.nobit };
        self.group_steps
            .get(g.start as usize..(g.start + len) as usize)
            .unwrap_or_default()
    }
}

/// Which steps of phase `p` (0-4) of `program` the rule loop may reach from the
/// phase's start. A rule folded to a match (see [`crate::prune`]) or
/// unconditional that has a `skipAfter` always jumps: the steps between it and
/// its target are reached only by another jump (in the CRS, the rules above the
/// paranoia level). Every other rule may fall through or jump; a `skip`, early
/// exit's target or backward jump makes every later step reachable.
pub fn reachable(program: &crate::Program, p: usize) -> Vec<bool> {
    let Some(steps) = program.phases.get(p) else {
        return Vec::new();
    };
    let n = steps.len();
    let mut r = vec![false; n + 1];
    r[0] = true;
    let mut all_from = n + 1;
    if let Some(e) = program.ordering.early_exit.get(p).and_then(|e| e.as_ref()) {
        all_from = all_from.min(e.target);
    }
    for i in 0..n {
        if i >= all_from {
            r[i] = true;
        }
        if !r[i] {
            continue;
        }
        let Step::Rule(idx) = steps[i] else {
            r[i + 1] = true;
            continue;
        };
        let Some(rule) = program.rules.get(idx as usize) else {
            r[i + 1] = true;
            continue;
        };
        if rule.skip > 0 {
            all_from = all_from.min(i + 1);
        }
        let always = !program.options.verify
            && (rule.unconditional
                || rule
                    .static_result
                    .as_ref()
                    .is_some_and(|s| !s.matches.is_empty()));
        match rule.skip_after {
            Some(t) if t <= i => all_from = all_from.min(i + 1),
            Some(t) => {
                r[t.min(n)] = true;
                if !always {
                    r[i + 1] = true;
                }
            }
            None => r[i + 1] = true,
        }
    }
    r.truncate(n);
    r
}

/// Sets bit `i`.
#[inline]
pub fn set(mask: &mut [u64], i: u32) {
    if let Some(w) = mask.get_mut((i / 64) as usize) {
        *w |= 1 << (i % 64);
    }
}

/// The first set bit at or after `from` (`len` when none before `len`).
#[inline]
pub fn next_set(mask: &[u64], from: usize, len: usize) -> usize {
    let mut w = from / 64;
    let Some(&first) = mask.get(w) else {
        return len;
    };
    let mut word = first & (u64::MAX << (from % 64));
    loop {
        if word != 0 {
            return (w * 64 + word.trailing_zeros() as usize).min(len);
        }
        w += 1;
        match mask.get(w) {
            Some(&x) => word = x,
            None => return len,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests fail by panicking

    use super::*;

    /// The steps of phase 1 with the rule ids (0 for a marker or removal).
    fn phase_ids(program: &crate::Program) -> Vec<u32> {
        program.phases[0]
            .iter()
            .map(|s| match *s {
                Step::Rule(idx) => program.rules[idx as usize].id,
                _ => 0,
            })
            .collect()
    }

    /// Rule 2, folded to a match at load time (TX:pl is 1), jumps over rule 3
    /// (`rule3`) to END-A; `after` follows the marker.
    fn behind_a_gate(rule3: &str, after: &str) -> String {
        format!(
            "SecRuleEngine On\n\
             SecAction \"id:1,phase:1,pass,nolog,setvar:tx.pl=1\"\n\
             SecRule TX:pl \"@lt 2\" \"id:2,phase:1,pass,nolog,skipAfter:END-A\"\n\
             {rule3}\n\
             SecMarker END-A\n\
             {after}"
        )
    }

    #[test]
    fn steps_behind_a_jump_that_always_happens_are_not_reachable() {
        // Rule 5 may or may not jump, so rule 6 stays reachable.
        let rules = &behind_a_gate(
            "SecRule ARGS \"@rx evil\" \"id:3,phase:1,pass,log\"",
            "SecRule ARGS \"@rx good\" \"id:4,phase:1,pass,log\"\n\
             SecRule ARGS \"@rx jump\" \"id:5,phase:1,pass,nolog,skipAfter:END-B\"\n\
             SecRule ARGS \"@rx other\" \"id:6,phase:1,pass,log\"\n\
             SecMarker END-B\n",
        );
        let options = crate::Options::parse("prune,prefilter").unwrap();
        let program = crate::Program::from_str_with("r.conf", rules, &options).unwrap();
        let ids = phase_ids(&program);
        let reach = reachable(&program, 0);
        let reached: Vec<u32> = ids
            .iter()
            .zip(&reach)
            .filter(|(&id, &r)| r && id != 0)
            .map(|(&id, _)| id)
            .collect();
        assert_eq!(reached, vec![1, 2, 4, 5, 6], "steps {ids:?}");
        // Without pre-pruning nothing is folded: every step is reachable.
        let plain = crate::Program::from_str_with(
            "r.conf",
            rules,
            &crate::Options::parse("prefilter").unwrap(),
        )
        .unwrap();
        assert!(reachable(&plain, 0).iter().all(|&r| r));
    }

    #[test]
    fn rules_the_loop_cannot_reach_have_no_prefilter_bit_and_no_literal() {
        // Rule 3 sits behind the folded gate: it never runs, and its literal
        // (`evilword`) is not in the automaton; rule 4's is.
        let rules = &behind_a_gate(
            "SecRule ARGS \"@contains evilword\" \"id:3,phase:1,deny,log\"",
            "SecRule ARGS \"@contains goodword\" \"id:4,phase:1,deny,log\"\n",
        );
        let bits = |opts: &str| {
            let (opts, verify) = match opts.strip_suffix(",verify") {
                Some(o) => (o, true),
                None => (opts, false),
            };
            let mut options = crate::Options::parse(opts).unwrap();
            options.verify = verify;
            let program = crate::Program::from_str_with("r.conf", rules, &options).unwrap();
            let by_id = |id: u32| program.rules.iter().find(|r| r.id == id).unwrap().prefilter;
            let literals = program.prefilter.as_ref().map_or(0, |p| p.literal_count());
            (by_id(3), by_id(4), literals)
        };
        let (unreached, reached, literals) = bits("prune,prefilter");
        assert_eq!(unreached, None);
        assert!(reached.is_some());
        assert_eq!(literals, 1);
        // Without pre-pruning (or when verifying, which evaluates the gate) both
        // rules may run: both have bits.
        for opts in ["prefilter", "prune,prefilter,verify"] {
            let (a, b, literals) = bits(opts);
            assert!(a.is_some() && b.is_some(), "{opts}");
            assert_eq!(literals, 2, "{opts}");
        }
    }

    #[test]
    fn the_next_set_bit_is_found_across_words_and_never_past_the_end() {
        let mut m = vec![0u64; 3];
        set(&mut m, 5);
        set(&mut m, 70);
        set(&mut m, 130);
        assert_eq!(next_set(&m, 0, 150), 5);
        assert_eq!(next_set(&m, 5, 150), 5);
        assert_eq!(next_set(&m, 6, 150), 70);
        assert_eq!(next_set(&m, 71, 150), 130);
        assert_eq!(next_set(&m, 131, 150), 150);
        assert_eq!(next_set(&m, 200, 150), 150);
        // A bit at or past the length is not a step.
        assert_eq!(next_set(&m, 71, 100), 100);
    }

    #[test]
    fn a_plan_sets_fixed_stops_and_lists_gated_steps_by_bit_rule_and_group() {
        // Steps: 0 gated (group 4, bit 1), 1 marker, 2 rule evaluated, 3 folded
        // never-matching rule, 4 gated (group 4, no bit), 5 gated (group 2, bit 1),
        // 6 folded match jumping to 8.
        let steps = [
            Step::Rule(10),
            Step::Marker,
            Step::Rule(11),
            Step::Rule(12),
            Step::Rule(13),
            Step::Rule(14),
            Step::Rule(15),
        ];
        let gate = |i: usize| {
            let (group, bit) = match i {
                0 => (4, 1),
                4 => (4, NO_BIT),
                5 => (2, 1),
                _ => return None,
            };
            Some(Gate { end: 1, group, bit })
        };
        let pass = |i: usize| match i {
            3 => Some(4),
            6 => Some(8),
            _ => None,
        };
        let group_plan =
            |g: u32| (g == 4).then(|| (false, true, vec![0b101], vec![(7, 2), (3, 0)]));
        let plan = StopPlan::build(&steps, &[true; 7], gate, pass, 20, 3, group_plan);
        assert_eq!(plan.fixed, vec![(1 << 2) | (1 << 6)]);
        // Groups 2 and 4 are at positions 0 and 1.
        assert_eq!(plan.bit_steps(1), &[(0, 1), (5, 0)]);
        assert!(plan.bit_steps(0).is_empty());
        assert!(plan.bit_steps(7).is_empty());
        assert_eq!(plan.rule_step(13), Some(4));
        assert_eq!(plan.rule_step(11), None);
        assert_eq!(plan.rule_step(99), None);
        assert_eq!(plan.rule_mask, vec![(1 << 10) | (1 << 13) | (1 << 14)]);
        assert_eq!(plan.bit_mask, vec![0b10]);
        let groups: Vec<u32> = plan.groups.iter().map(|g| g.group).collect();
        assert_eq!(groups, vec![2, 4]);
        let g4 = plan.groups[1];
        assert_eq!(plan.group_steps(&g4, false), &[4]);
        assert_eq!(plan.group_steps(&g4, true), &[4, 0]);
        assert!(plan.has_bits(&g4) && plan.has_bits(&plan.groups[0]));
        assert_eq!(plan.group_steps(&plan.groups[0], false), &[] as &[u32]);
        // Group 2 has no plan: unclassed, with an empty mask.
        assert!(plan.groups[0].unclassed && !g4.unclassed && g4.xml);
        assert_eq!(plan.group_mask(0), &[0]);
        assert_eq!(plan.group_mask(1), &[0b101]);
        // The class chains come from the group with a plan, in index order, with
        // their classes, read through XML only.
        assert_eq!(plan.class_chains, vec![(3, 0, true), (7, 2, true)]);
        assert_eq!(plan.class_runs, vec![(0, 0, 1), (2, 1, 2)]);
    }
}
