//! The rule loop's stop mask (see [`crate::step_stops`]): per phase and data
//! generation, a bit per step set where the loop must do more than clear
//! MATCHED_VARS. The loop passes over rules that cannot match by searching for
//! the next set bit; [`Transaction::pass_over`] and
//! [`Transaction::gate_rejects`], which test step by step, give the same steps
//! (debug builds check every pass against them).
//!
//! The mask is made when a pass first needs it for the phase and the admission's
//! epoch: every group with a reachable gated rule with a prefilter bit in the
//! phase (see [`crate::step_stops::reachable`]) is merged then, unless the cached
//! values cover it, not when its first rule is reached (without the result
//! cache, by merging each of the phase's class chains once: see
//! [`Transaction::admit_phase`]). A group's union depends only on the request
//! data, which stay the same through the epoch, so its bits are the ones a later
//! merge would give; a phase that ends early has merged groups it would not have
//! reached (work, not a different result). The prologue's segment and profiled
//! runs keep the step-by-step tests. After a `ctl` removed rules the mask is
//! still used: a removed rule does nothing the pass would have to do, the loop
//! tests each step it stops at for removal, and a folded match's jump is not
//! taken at a removed rule (the pass stops there instead).

use super::Transaction;
use crate::prefilter::Prefilter;
use crate::step_stops::{next_set, set};

/// A work set's stop mask.
#[derive(Debug, Default, Clone)]
pub(crate) struct Stops {
    /// What the mask was made for: the admission's epoch, the phase and whether
    /// an XML document (or its failure) was there (`None`: not made).
    stamp: Option<(u64, u8, bool)>,
    /// A bit per step of the phase.
    mask: Vec<u64>,
    /// Per group of the phase (in plan order): the cached values cover it.
    covered: Vec<bool>,
}

impl Stops {
    /// Marks it as not made (keeping its buffers).
    pub(crate) fn forget(&mut self) {
        self.stamp = None;
    }

    /// Heap bytes held (for the pool's size bound).
    pub(crate) fn capacity_bytes(&self) -> usize {
        self.mask.capacity() * 8 + self.covered.capacity()
    }
}

impl Transaction {
    /// From step `j` of `phase`, the first step the rule loop must do more at
    /// than clear MATCHED_VARS, as [`Transaction::pass_over`] (or, at a gated
    /// rule, [`Transaction::gate_rejects`]) finds: `j` itself when it is such a
    /// step. For the main loop only: no `skip` pending, no profile, the
    /// prefilter on; `removals`: whether a `ctl` removed rules (see
    /// [`crate::step_gates::StepGates::stops`]).
    pub(crate) fn next_stop(
        &mut self,
        program: &crate::Program,
        (phase, steps): (u8, &[crate::rule::Step]),
        j: usize,
        removals: bool,
    ) -> usize {
        let (Some(pf), Some(plan)) = (program.prefilter.as_ref(), program.step_gates.stops(phase))
        else {
            return self.pass_over(program, (phase, steps), j);
        };
        self.refresh_admission(program, pf);
        let xml = self.xml.is_some() || self.xml_failed;
        let stamp = Some((self.work.admission.epoch(), phase, xml));
        if self.work.stops.stamp != stamp {
            self.make_stops(program, pf, plan);
            self.work.stops.stamp = stamp;
        }
        let exit = program.ordering.early_exit[usize::from(phase - 1)].as_ref();
        let gates = program.step_gates.phase(phase);
        let mask = &self.work.stops.mask;
        let mut j = j;
        loop {
            j = next_set(mask, j, steps.len());
            // A folded match whose jump the loop may take (not where a match
            // may end the phase early, nor at a rule a `ctl` removed: it does
            // not match, and the loop passes over it).
            match gates.pass(j) {
                Some(next)
                    if next > j + 1 && exit.is_none_or(|e| !(e.from..e.target).contains(&j)) =>
                {
                    if removals && self.removed_at(program, steps, j) {
                        return j;
                    }
                    j = next;
                }
                _ => return j,
            }
        }
    }

    /// Checks a pass of the stop mask, from step `i` (rule `idx`) to `next`,
    /// against the step-by-step tests (debug builds).
    #[cfg(debug_assertions)]
    pub(crate) fn check_stop(
        &mut self,
        program: &crate::Program,
        (phase, steps): (u8, &[crate::rule::Step]),
        (i, idx): (usize, crate::rule::RuleIdx),
        next: usize,
    ) {
        let tested = match program.step_gates.at(phase, i) {
            Some(gate) => self
                .gate_rejects(program, (phase, steps), (i, idx), gate, true)
                .unwrap_or(i),
            None => self.pass_over(program, (phase, steps), i),
        };
        assert_eq!(
            next, tested,
            "phase {phase}: the stop mask passes from step {i} to {next}, the step tests to {tested}"
        );
    }

    /// Makes the stop mask of a phase from its plan for the current admission.
    #[inline(never)]
    fn make_stops(
        &mut self,
        program: &crate::Program,
        pf: &Prefilter,
        plan: &crate::step_stops::StopPlan,
    ) {
        let cache = program.options.value_cache;
        if cache {
            self.settle_admission(program);
        }
        // The result cache's class test (`Admission::covers`), per group.
        let mut covered = std::mem::take(&mut self.work.stops.covered);
        covered.clear();
        if cache {
            let xml = self.xml.is_some() || self.xml_failed;
            self.work.admission.covers_groups(plan, xml, &mut covered);
            #[cfg(debug_assertions)]
            for (k, pg) in plan.groups.iter().enumerate() {
                let a = &self.work.admission;
                debug_assert_eq!(
                    covered[k],
                    a.covers((pg.unclassed, pg.xml && xml), plan.group_mask(k))
                );
            }
        } else {
            covered.resize(plan.groups.len(), false);
        }
        // A group the cached values cover needs no union: its rules stop only
        // by their maybe sets. Nor does one whose rules have no prefilter bit
        // (every union admits them). The groups' steps are marked as they are
        // merged.
        let mut mask = std::mem::take(&mut self.work.stops.mask);
        mask.clear();
        mask.extend_from_slice(&plan.fixed);
        self.admit_phase(program, pf, plan, &covered, &mut mask);
        let a = &self.work.admission;
        let bits = a.admitted_bits();
        for (w, (&word, &m)) in bits.iter().zip(&plan.bit_mask).enumerate() {
            let mut word = word & m;
            while word != 0 {
                let bit = (w * 64) as u32 + word.trailing_zeros();
                word &= word - 1;
                for &(s, k) in plan.bit_steps(bit) {
                    if !covered.get(k as usize).copied().unwrap_or(false) {
                        set(&mut mask, s);
                    }
                }
            }
        }
        if cache {
            for (w, (&word, &m)) in a.maybe_rules().iter().zip(&plan.rule_mask).enumerate() {
                let mut word = word & m;
                while word != 0 {
                    let idx = (w * 64) as u32 + word.trailing_zeros();
                    word &= word - 1;
                    if let Some(s) = plan.rule_step(idx) {
                        set(&mut mask, s);
                    }
                }
            }
        }
        self.work.stops.mask = mask;
        self.work.stops.covered = covered;
    }
}
