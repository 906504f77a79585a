//! Step gates: per step of a phase, what the rule loop needs to pass over a rule
//! that cannot match without reading the rule (a rule is several cache lines; a
//! gate, 12 bytes in one array per phase).
//!
//! A gated rule is one whose evaluation starts with the prefilter's group test
//! (in a group, not unconditional, not folded at load time; not with
//! `Options::verify`, which evaluates what the prefilter rules out): its gate
//! holds its group and prefilter bit ([`NO_BIT`], see [`gate_bit`], for a pure
//! rule without literals or negated, in a group for the result cache's test
//! alone), and the loop asks
//! the group's admission (see `Transaction::group_may_match`) before anything
//! else.
//!
//! With the Rule Result Cache, gates also mark runs of rules the cache rules out
//! together. A rule the cached values rule out (see `Transaction::gate_rejects`)
//! is one whose group's classes have every value
//! cached and known, and that no class's maybe set holds. The first test depends
//! on the group's classes alone, so consecutive rules over the same classes (CRS
//! files are written so: a file's rules read the same targets through different
//! transformations) share it: the loop makes the test once for a run and passes
//! over each rule of it no maybe set holds with one bit test. A run is a maximal
//! sequence of steps whose rules are all gated, in groups with the same class
//! mask and XML flag (and classed), with markers and load-time removals between
//! them (without a pending `skip`, both are no-ops).
//!
//! The loop also passes over runs of steps it would go through without an effect
//! beyond clearing MATCHED_VARS (see `Transaction::pass_over`): gated rules their
//! admissions rule out, markers and load-time removals (no `skip` is pending),
//! and the steps [`StepGates::pass`] gives: rules folded at load time that never
//! match, whatever their actions, which then never run (a paranoia-level gate
//! above the level; an anomaly-score sum above it, such as 949053's `setvar`),
//! unless unconditional, and plain folded matches whose only effects are a
//! MATCHED_VARS entry that is cleared before anything reads it and a jump (a gate
//! below the level: `skipAfter` to its file's end marker, where the next file's
//! first gate never matches).

use crate::rule::Step;
use crate::Program;

/// One step's gate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gate {
    /// The end (exclusive step index) of the step's result-cache run (the step
    /// after it when it is in none, or without the cache); 0 for a step that is
    /// not a gated rule.
    pub end: u32,
    /// The rule's prefilter group.
    pub group: u32,
    /// The rule's prefilter bit ([`NO_BIT`]: none, in a group for the result
    /// cache's test alone).
    pub bit: u32,
}

/// [`Gate::bit`] of a rule without a prefilter bit: only the result cache's test
/// rules it out (its group's unions never do).
pub const NO_BIT: u32 = u32::MAX;

/// The bit a grouped rule's admission tests: its prefilter bit, or [`NO_BIT`]
/// for a rule without one and for a negated rule (the absence of its literals
/// is a match).
pub fn gate_bit(rule: &crate::rule::Rule) -> u32 {
    match rule.prefilter {
        Some(bit) if !rule.operator.negated => bit,
        _ => NO_BIT,
    }
}

/// The gates of a program's phases.
#[derive(Debug, Clone, Default)]
pub struct StepGates {
    gates: [Vec<Gate>; 5],
    /// Per phase and step: where the loop goes on from when it passes over the
    /// step with no effect but clearing MATCHED_VARS ([`NO_PASS`]: it cannot).
    passes: [Vec<u32>; 5],
    /// Per phase and step: for a marker, the first step after the run of
    /// markers it starts (see [`PhaseGates::after_markers`]); 0 for other steps.
    markers: [Vec<u32>; 5],
    /// Per phase: what the rule loop's stop mask is made from (see
    /// [`crate::step_stops`]); empty without the prefilter.
    stops: [crate::step_stops::StopPlan; 5],
}

/// One phase's gates and passes (see [`StepGates::phase`]), which
/// [`StepGates::at`] and [`StepGates::pass`] read.
#[derive(Debug, Clone, Copy)]
pub struct PhaseGates<'a> {
    gates: &'a [Gate],
    passes: &'a [u32],
    markers: &'a [u32],
}

impl PhaseGates<'_> {
    /// The gate of step `step`, when it is a gated rule (see [`StepGates::at`]).
    #[inline]
    pub fn at(&self, step: usize) -> Option<Gate> {
        self.gates.get(step).copied().filter(|g| g.end != 0)
    }

    /// Where the loop goes on from when it passes over step `step` (see
    /// [`StepGates::pass`]).
    #[inline]
    pub fn pass(&self, step: usize) -> Option<usize> {
        let p = *self.passes.get(step)?;
        (p != NO_PASS).then_some(p as usize)
    }

    /// The first step after the run of markers that starts at step `step`, a
    /// marker. Markers do nothing (nor do they use up a `skip`): the loop goes
    /// over a run of them at once. CRS places every file's end markers in each
    /// phase's steps, so phases 3 to 5 hold runs of twenty and more.
    #[inline]
    pub fn after_markers(&self, step: usize) -> usize {
        match self.markers.get(step) {
            Some(&next) if next as usize > step => next as usize,
            _ => step + 1,
        }
    }
}

/// A step the loop cannot pass over (see [`StepGates::pass`]).
const NO_PASS: u32 = u32::MAX;

impl StepGates {
    /// The gates of `program`'s steps (its classes planned).
    pub fn build(program: &Program) -> StepGates {
        let options = &program.options;
        let gate = |step: &Step| -> Option<(u32, u32)> {
            let Step::Rule(idx) = *step else { return None };
            let rule = program.rules.get(idx as usize)?;
            let gated = options.prefilter
                && !options.verify
                && !rule.unconditional
                && rule.static_result.is_none();
            gated.then_some((rule.prefilter_group?, gate_bit(rule)))
        };
        // A rule's run signature: its group's class mask and XML flag.
        let signature = |step: &Step| -> Option<(&[u64], bool)> {
            if !options.value_cache {
                return None;
            }
            let gp = program.classes.groups.get(gate(step)?.0 as usize)?;
            (!gp.unclassed).then_some((gp.class_mask.as_slice(), gp.xml))
        };
        let mut out = StepGates::default();
        for (passes, steps) in out.passes.iter_mut().zip(&program.phases) {
            *passes = Self::passes(program, steps);
        }
        for (markers, steps) in out.markers.iter_mut().zip(&program.phases) {
            *markers = Self::marker_runs(steps);
        }
        for (gates, steps) in out.gates.iter_mut().zip(&program.phases) {
            gates.clear();
            gates.resize(steps.len(), Gate::default());
            let mut i = 0;
            while i < steps.len() {
                let Some((group, bit)) = gate(&steps[i]) else {
                    i += 1;
                    continue;
                };
                let Some(sig) = signature(&steps[i]) else {
                    gates[i] = Gate {
                        end: (i + 1) as u32,
                        group,
                        bit,
                    };
                    i += 1;
                    continue;
                };
                // Extend over rules of the same signature and over no-op steps;
                // the run ends after its last rule.
                let mut last = i;
                let mut j = i + 1;
                while j < steps.len() {
                    match steps[j] {
                        Step::Marker | Step::Removed => {}
                        Step::Rule(_) if signature(&steps[j]) == Some(sig) => last = j,
                        Step::Rule(_) => break,
                    }
                    j += 1;
                }
                for (g, step) in gates[i..=last].iter_mut().zip(&steps[i..=last]) {
                    if let Some((group, bit)) = gate(step) {
                        *g = Gate {
                            end: (last + 1) as u32,
                            group,
                            bit,
                        };
                    }
                }
                i = last + 1;
            }
        }
        out
    }

    /// Makes the stop plans (see [`crate::step_stops`]) of `program`, whose
    /// gates are built (and early exits analysed): none without the prefilter.
    pub fn attach_stops(program: &mut Program) {
        let Some(pf) = program.prefilter.as_ref() else {
            return;
        };
        let gates = &program.step_gates;
        let plans: Vec<_> = (0..5)
            .map(|p| {
                crate::step_stops::StopPlan::build(
                    &program.phases[p],
                    &crate::step_stops::reachable(program, p),
                    |i| gates.at(p as u8 + 1, i),
                    |i| gates.pass(p as u8 + 1, i),
                    program.rules.len(),
                    pf.words() * 64,
                    |g| {
                        let gp = program.classes.groups.get(g as usize)?;
                        Some((
                            gp.unclassed,
                            gp.xml,
                            gp.class_mask.clone(),
                            gp.class_chains
                                .iter()
                                .map(|&cc| (cc, program.classes.class_chains[cc as usize].class))
                                .collect(),
                        ))
                    },
                )
            })
            .collect();
        for (slot, plan) in program.step_gates.stops.iter_mut().zip(plans) {
            *slot = plan;
        }
    }

    /// The stop plan of phase `phase` (1-5); `None` without the prefilter.
    #[inline]
    pub fn stops(&self, phase: u8) -> Option<&crate::step_stops::StopPlan> {
        self.stops
            .get(usize::from(phase).wrapping_sub(1))
            .filter(|p| !p.fixed.is_empty() || !p.groups.is_empty())
    }

    /// Per step: for a marker, the first step after its run of markers (see
    /// [`PhaseGates::after_markers`]); 0 for other steps.
    fn marker_runs(steps: &[Step]) -> Vec<u32> {
        let mut out = vec![0u32; steps.len()];
        let mut next = steps.len();
        for (i, step) in steps.iter().enumerate().rev() {
            if matches!(step, Step::Marker) {
                out[i] = u32::try_from(next).unwrap_or(0);
            } else {
                next = i;
            }
        }
        out
    }

    /// The passes of one phase's steps (see [`StepGates::pass`]); none with
    /// `Options::verify`, which evaluates folded rules.
    fn passes(program: &Program, steps: &[Step]) -> Vec<u32> {
        let mut passes = vec![NO_PASS; steps.len()];
        if program.options.verify {
            return passes;
        }
        let folded = |step: &Step| {
            let Step::Rule(idx) = *step else { return None };
            let rule = program.rules.get(idx as usize)?;
            Some(rule).zip(rule.static_result.as_ref())
        };
        // A rule folded to "never matches" has no effect whatever its actions
        // (they run on a match; `eval_rule` returns its static result first), as
        // long as it is not unconditional (whose actions run without a match).
        let never = |step: &Step| {
            folded(step).is_some_and(|(r, s)| s.matches.is_empty() && !r.unconditional)
        };
        for (i, step) in steps.iter().enumerate() {
            if never(step) {
                passes[i] = (i + 1) as u32;
                continue;
            }
            let Some((rule, _)) = folded(step).filter(|(_, s)| s.plain) else {
                continue;
            };
            // A match without a severity that jumps to markers followed by a rule
            // that never matches: its MATCHED_VARS entry is cleared there, unread.
            let Some(target) = rule
                .skip_after
                .filter(|&t| t > i && rule.meta.severity.is_none())
            else {
                continue;
            };
            let after = steps
                .get(target..)
                .unwrap_or_default()
                .iter()
                .find(|s| !matches!(s, Step::Marker | Step::Removed));
            if after.is_some_and(never) {
                passes[i] = u32::try_from(target).unwrap_or(NO_PASS);
            }
        }
        passes
    }

    /// Where the loop goes on from when it passes over step `step` of phase
    /// `phase` with no effect but clearing MATCHED_VARS, when it can: the next
    /// step after a folded rule that never matches, the jump's target after a
    /// folded match whose MATCHED_VARS entry is cleared unread (see the module
    /// notes). A folded match may end a phase early under early exit: the loop
    /// tests that first.
    #[inline]
    pub fn pass(&self, phase: u8, step: usize) -> Option<usize> {
        self.phase(phase).pass(step)
    }

    /// The gate of step `step` of phase `phase` (1-5), when it is a gated rule.
    #[inline]
    pub fn at(&self, phase: u8, step: usize) -> Option<Gate> {
        self.phase(phase).at(step)
    }

    /// Phase `phase`'s gates and passes (1-5; empty for another), for the rule
    /// loop, which asks both at every step it visits.
    #[inline]
    pub fn phase(&self, phase: u8) -> PhaseGates<'_> {
        let i = usize::from(phase).wrapping_sub(1);
        PhaseGates {
            gates: self.gates.get(i).map_or(&[], Vec::as_slice),
            passes: self.passes.get(i).map_or(&[], Vec::as_slice),
            markers: self.markers.get(i).map_or(&[], Vec::as_slice),
        }
    }

    /// The end of the result-cache run step `step` of phase `phase` is in; `step`
    /// itself when it is not a gated rule.
    pub fn end(&self, phase: u8, step: usize) -> usize {
        self.at(phase, step).map_or(step, |g| g.end as usize)
    }

    /// Runs of at least two rules in phase `phase` (for the plan and tests).
    pub fn count(&self, phase: u8) -> usize {
        let Some(gates) = self.gates.get(usize::from(phase).wrapping_sub(1)) else {
            return 0;
        };
        let mut n = 0;
        let mut i = 0;
        while i < gates.len() {
            let e = gates[i].end as usize;
            if e > i + 1 {
                n += 1;
                i = e;
            } else {
                i += 1;
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests fail by panicking

    use crate::rule::Step;

    #[test]
    fn runs_of_markers_are_passed_at_once() {
        let program = crate::Program::from_str(
            "markers.conf",
            "SecRule ARGS \"@rx a\" \"id:1,phase:1,pass,skipAfter:END-B\"\n\
             SecMarker END-A\n\
             SecMarker END-B\n\
             SecMarker END-C\n\
             SecRule ARGS \"@rx b\" \"id:2,phase:1,pass\"\n\
             SecMarker END-D\n",
        )
        .unwrap();
        let steps = &program.phases[0];
        let gates = program.step_gates.phase(1);
        let rule = |k: usize| matches!(steps[k], Step::Rule(_));
        let first = (0..steps.len()).find(|&k| !rule(k)).unwrap();
        let second = (first..steps.len()).find(|&k| rule(k)).unwrap();
        assert_eq!(second - first, 3, "{steps:?}");
        for k in first..second {
            assert_eq!(gates.after_markers(k), second, "step {k} of {steps:?}");
        }
        // The last run ends at the phase's end.
        assert_eq!(gates.after_markers(steps.len() - 1), steps.len());
    }

    #[test]
    fn crs_gates_hold_their_rules_and_runs_read_the_same_classes() {
        let crs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/crs");
        let mut paths = vec![crs.join("crs-setup.conf.example")];
        let mut files: Vec<_> = std::fs::read_dir(crs.join("rules"))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "conf"))
            .collect();
        files.sort();
        paths.extend(files);
        let program = crate::Program::from_paths(&paths).unwrap();
        let runs = &program.step_gates;
        // Default options: the prefilter and the result cache on, no verification.
        // A pure rule without literals, or negated, is gated for the cache's
        // test alone.
        let gated = |r: &crate::rule::Rule| {
            r.prefilter_group.is_some() && !r.unconditional && r.static_result.is_none()
        };
        let cache_only = program
            .rules
            .iter()
            .filter(|r| gated(r) && super::gate_bit(r) == super::NO_BIT)
            .inspect(|r| {
                assert!(r.pure, "rule {}", r.id);
                assert!(r.prefilter.is_none() || r.operator.negated, "rule {}", r.id);
                assert!(!(r.operator.negated && r.multi_match), "rule {}", r.id);
            })
            .count();
        assert!(
            cache_only > 20,
            "{cache_only} rules gated for the cache alone"
        );
        let (mut in_multi, mut rejectable, mut count) = (0, 0, 0);
        let (mut never, mut jumps, mut never_with_actions) = (0, 0, 0);
        let mut longest_markers = 0;
        for phase in 1..=5u8 {
            let steps = &program.phases[usize::from(phase - 1)];
            // The loop passes over exactly the folded rules that never match
            // (the paranoia-level gates above the level, and rules with actions
            // such as 949053's `setvar`, which never run) and the folded plain
            // matches whose jump leads through markers to one of those (the
            // gates below it).
            let folded = |k: usize| match steps.get(k) {
                Some(&Step::Rule(r)) => {
                    let rule = &program.rules[r as usize];
                    let f = rule.static_result.as_ref()?;
                    if f.matches.is_empty() && !rule.unconditional {
                        Some((rule, true))
                    } else {
                        f.plain.then_some((rule, false))
                    }
                }
                _ => None,
            };
            for k in 0..steps.len() {
                let want = match folded(k) {
                    Some((rule, true)) => {
                        never += 1;
                        never_with_actions += usize::from(!rule.setvars.is_empty());
                        Some(k + 1)
                    }
                    Some((rule, false)) => rule.skip_after.filter(|&t| {
                        let next = (t..steps.len())
                            .find(|&n| !matches!(steps[n], Step::Marker | Step::Removed));
                        t > k
                            && rule.meta.severity.is_none()
                            && next.is_some_and(|n| matches!(folded(n), Some((_, true))))
                    }),
                    None => None,
                };
                jumps += usize::from(want.is_some_and(|n| n != k + 1));
                assert_eq!(runs.pass(phase, k), want, "phase {phase} step {k}");
                // A marker leads to the first step after it that is not one.
                if matches!(steps[k], Step::Marker) {
                    let after = (k..steps.len())
                        .find(|&n| !matches!(steps[n], Step::Marker))
                        .unwrap_or(steps.len());
                    assert_eq!(runs.phase(phase).after_markers(k), after);
                    longest_markers = longest_markers.max(after - k);
                }
            }
            let mut i = 0;
            while i < steps.len() {
                let end = runs.end(phase, i);
                let Step::Rule(first) = steps[i] else {
                    assert_eq!(end, i, "a gate is a rule's");
                    i += 1;
                    continue;
                };
                let first = &program.rules[first as usize];
                rejectable += usize::from(gated(first));
                if gated(first) {
                    assert!(end > i, "rule {} has no gate", first.id);
                }
                if end == i {
                    i += 1;
                    continue;
                }
                assert!(gated(first), "rule {} has a gate", first.id);
                // Every rule of the run reads the same classes, and every step
                // of it is in it up to the same end.
                let sig = |r: &crate::rule::Rule| {
                    let gp = &program.classes.groups[r.prefilter_group.unwrap() as usize];
                    (gp.class_mask.clone(), gp.xml, gp.unclassed)
                };
                let mut n = 0;
                for (k, s) in steps.iter().enumerate().take(end).skip(i) {
                    if let Step::Rule(other) = *s {
                        let other = &program.rules[other as usize];
                        // The gate holds the rule's group and bit.
                        let gate = runs.at(phase, k).unwrap();
                        assert_eq!(gate.end as usize, end);
                        assert_eq!(Some(gate.group), other.prefilter_group);
                        assert_eq!(gate.bit, super::gate_bit(other));
                        assert!(gated(other));
                        assert_eq!(sig(first), sig(other), "{} and {}", first.id, other.id);
                        n += 1;
                    }
                }
                rejectable += n - 1;
                assert!(
                    matches!(steps[end - 1], Step::Rule(_)),
                    "a run ends at a rule"
                );
                // Maximal: the next rule is of another signature or not rejectable.
                let next = steps[end..].iter().find_map(|s| match *s {
                    Step::Rule(r) => Some(&program.rules[r as usize]),
                    _ => None,
                });
                if let Some(next) = next.filter(|r| gated(r)) {
                    assert_ne!(sig(first), sig(next), "runs at {} could be one", next.id);
                }
                if n >= 2 {
                    in_multi += n;
                    count += 1;
                }
                i = end;
            }
            assert_eq!(runs.count(phase), {
                let mut c = 0;
                let mut i = 0;
                while i < steps.len() {
                    let e = runs.end(phase, i);
                    c += usize::from(e > i + 1);
                    i = e.max(i + 1);
                }
                c
            });
        }
        eprintln!(
            "{count} runs, {in_multi} of {rejectable} rejectable rules in runs of 2 or more, \
             {cache_only} gated for the result cache alone"
        );
        assert!(count >= 20, "only {count} runs");
        assert!(never >= 20, "only {never} folded rules never match");
        // The blocking evaluation's score sums above the paranoia level (949053,
        // 949153, 959053, ...): folded, never matching, with a `setvar`.
        assert!(
            never_with_actions >= 10,
            "only {never_with_actions} folded rules with actions never match"
        );
        assert!(jumps >= 20, "only {jumps} folded jumps are passed over");
        // Every file's end markers are in each phase's steps.
        assert!(
            longest_markers >= 10,
            "the longest run of markers has {longest_markers}"
        );
        assert!(
            in_multi * 2 > rejectable,
            "{in_multi} of {rejectable} rules in runs"
        );
    }
}
