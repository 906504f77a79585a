//! Step gates: per step of a phase, what the rule loop needs to pass over a rule
//! that cannot match without reading the rule (a rule is several cache lines; a
//! gate, 12 bytes in one array per phase).
//!
//! A gated rule is one whose evaluation starts with the prefilter's group test
//! (prefiltered, in a group, not unconditional, not folded at load time; not
//! with `Options::verify`, which evaluates what the prefilter rules out): its gate
//! holds its group and prefilter bit, and the loop asks the group's admission
//! (see `Transaction::group_may_match`) before anything else.
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
//! After a gated rule its admission rules out, the loop passes over the steps
//! that follow it as long as each is one it would pass over without an effect
//! beyond clearing MATCHED_VARS (see `Transaction::gate_rejects`): gated rules
//! their admissions rule out, markers and load-time removals (no `skip` is
//! pending), and rules folded at load time that never match and have no other
//! effect ([`StepGates::never`]).

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
    /// The rule's prefilter bit.
    pub bit: u32,
}

/// The gates of a program's phases.
#[derive(Debug, Clone, Default)]
pub struct StepGates {
    gates: [Vec<Gate>; 5],
    /// Per phase, bit per step: a rule folded at load time that never matches,
    /// whose evaluation only clears MATCHED_VARS (`StaticResult::plain` with no
    /// match); none with `Options::verify` (which evaluates folded rules).
    never: [Vec<u64>; 5],
}

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
            gated.then_some((rule.prefilter_group?, rule.prefilter?))
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
        for (never, steps) in out.never.iter_mut().zip(&program.phases) {
            never.clear();
            never.resize(steps.len().div_ceil(64), 0);
            for (i, step) in steps.iter().enumerate() {
                let Step::Rule(idx) = *step else { continue };
                let folded = program
                    .rules
                    .get(idx as usize)
                    .and_then(|r| r.static_result.as_ref());
                if !options.verify && folded.is_some_and(|s| s.plain && s.matches.is_empty()) {
                    never[i / 64] |= 1 << (i % 64);
                }
            }
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

    /// The gate of step `step` of phase `phase` (1-5), when it is a gated rule.
    #[inline]
    pub fn at(&self, phase: u8, step: usize) -> Option<Gate> {
        let g = *self
            .gates
            .get(usize::from(phase).wrapping_sub(1))?
            .get(step)?;
        (g.end != 0).then_some(g)
    }

    /// Whether step `step` of phase `phase` is a rule folded at load time that
    /// never matches and only clears MATCHED_VARS (see the field).
    #[inline]
    pub fn never(&self, phase: u8, step: usize) -> bool {
        self.never
            .get(usize::from(phase).wrapping_sub(1))
            .and_then(|w| w.get(step / 64))
            .is_some_and(|w| w & (1 << (step % 64)) != 0)
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
        let gated = |r: &crate::rule::Rule| {
            r.prefilter.is_some()
                && r.prefilter_group.is_some()
                && !r.unconditional
                && r.static_result.is_none()
        };
        let (mut in_multi, mut rejectable, mut count, mut never) = (0, 0, 0, 0);
        for phase in 1..=5u8 {
            let steps = &program.phases[usize::from(phase - 1)];
            // The loop's passes go over exactly the folded rules that never
            // match and only clear MATCHED_VARS (the paranoia-level gates below
            // the level).
            for (k, s) in steps.iter().enumerate() {
                let folded_never = matches!(*s, Step::Rule(r) if program.rules[r as usize]
                    .static_result
                    .as_ref()
                    .is_some_and(|f| f.plain && f.matches.is_empty()));
                assert_eq!(runs.never(phase, k), folded_never, "phase {phase} step {k}");
                never += usize::from(folded_never);
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
                        assert_eq!(Some(gate.bit), other.prefilter);
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
        eprintln!("{count} runs, {in_multi} of {rejectable} rejectable rules in runs of 2 or more");
        assert!(count >= 20, "only {count} runs");
        assert!(never >= 20, "only {never} folded rules never match");
        assert!(
            in_multi * 2 > rejectable,
            "{in_multi} of {rejectable} rules in runs"
        );
    }
}
