//! Rule ordering (the RuleCache paper's §IV-B, with exact structure) and early
//! exit in anomaly-scoring mode.
//!
//! Each phase is split into fixed steps and segments of movable units
//! ([`deps`]), with precedence constraints from the units' footprints
//! ([`footprint`]: setvar read-after-write and friends, captures, exits that must
//! end the phase alike, `ctl` and anything unclassified as barriers). From a
//! measured [`Profile`] (cost per evaluation, probability a unit ends the phase)
//! [`order`] computes the order of least expected cost; [`plan`] does that for
//! every segment and [`apply`] rewrites a program's step lists (jump targets are
//! fixed steps, so the rule loop needs no change).
//!
//! Where it applies, so that results do not change:
//! - self-contained mode (a disruptive match ends the phase): a unit ends the
//!   phase when it matches with `deny`/`drop`/`redirect`; exits move only among
//!   rules without visible effects, and two exits swap only when they end the
//!   phase the same way (same action and status). When several exits would
//!   match one request, which of them reports may change, never the decision;
//! - anomaly mode only with early exit on ([`early_exit`]): inside the region
//!   an exit may skip, a unit "ends the phase" when its match reaches the
//!   threshold; score additions commute, so nothing but what early exit skips
//!   can differ.
//!
//! The transaction sorts the match records of a reordered phase back into the
//! original rule order, so logs and audit records list matches as plain
//! evaluation does.

pub mod deps;
pub mod early_exit;
pub mod footprint;
pub mod like;
pub mod order;

use rustc_hash::FxHashMap;

use crate::profile::Profile;
use crate::rule::{RuleIdx, Step};
use crate::Program;

pub use early_exit::EarlyExit;

/// What the rule loop needs at run time: early exits and the original rank of
/// every rule of a reordered phase.
#[derive(Debug, Clone, Default)]
pub struct Runtime {
    /// Early exit per phase (when `Options::early_exit` and the proof holds).
    pub early_exit: [Option<EarlyExit>; 5],
    /// Phases whose steps were reordered.
    pub reordered: [bool; 5],
    /// Rule id -> position in the original step list, for reordered phases.
    pub rank: FxHashMap<u32, u32>,
}

/// One segment's proposed order.
#[derive(Debug, Clone)]
pub struct SegmentPlan {
    /// The phase (1-5).
    pub phase: u8,
    /// The step indexes of the segment.
    pub positions: Vec<usize>,
    /// The units (chain starters) in the original order.
    pub before: Vec<RuleIdx>,
    /// The units in the proposed order.
    pub after: Vec<RuleIdx>,
    /// Per unit (original order): ns per evaluation and exit probability.
    pub stats: Vec<order::Job>,
    /// Evaluations of the segment's first unit per request (how often the
    /// segment is reached).
    pub reach: f64,
    /// Expected ns per request of the segment in the original order.
    pub cost_before: f64,
    /// Expected ns per request in the proposed order.
    pub cost_after: f64,
    /// Whether exits are anomaly early exits (else disruptive matches).
    pub anomaly: bool,
}

/// The proposed order of every segment of a program.
#[derive(Debug, Clone, Default)]
pub struct OrderPlan {
    /// Segments whose order changes.
    pub segments: Vec<SegmentPlan>,
    /// Per phase, why steps are fixed: (reason, how many steps).
    pub fixed: [Vec<(&'static str, usize)>; 5],
    /// Segments considered (with at least two units) per phase.
    pub considered: [usize; 5],
}

impl OrderPlan {
    /// Expected ns per request saved by the plan under the measured statistics.
    pub fn expected_gain(&self) -> f64 {
        self.segments
            .iter()
            .map(|s| s.reach * (s.cost_before - s.cost_after))
            .sum()
    }

    /// Units that change position.
    pub fn moved(&self) -> usize {
        self.segments
            .iter()
            .map(|s| {
                s.before
                    .iter()
                    .zip(&s.after)
                    .filter(|(a, b)| a != b)
                    .count()
            })
            .sum()
    }
}

/// Computes the plan for `program` from `profile` (a profile of the same program
/// with its current order). Phases with early exit order the region's units by
/// the chance their match reaches the threshold (a match of a unit that adds to a
/// score); elsewhere units exit with their disruptive matches.
pub fn plan(program: &Program, profile: &Profile) -> OrderPlan {
    let mut out = OrderPlan::default();
    let requests = profile.transactions.max(1) as f64;
    for p in 0..5u8 {
        let exit = program.ordering.early_exit[usize::from(p)].as_ref();
        let deps = deps::analyse(program, p + 1, exit.is_none());
        let mut reasons: Vec<(&'static str, usize)> = Vec::new();
        for why in deps.fixed.iter().flatten() {
            match reasons.iter_mut().find(|(r, _)| r == why) {
                Some(e) => e.1 += 1,
                None => reasons.push((why, 1)),
            }
        }
        out.fixed[usize::from(p)] = reasons;
        for seg in deps.segments {
            // In an early-exit phase only the region's units exit: outside it
            // nothing does, so only the part inside the region is ordered.
            let seg = match exit {
                Some(e) => match seg.restrict(e.from, e.target) {
                    Some(s) => s,
                    None => continue,
                },
                None => seg,
            };
            out.considered[usize::from(p)] += 1;
            let stats: Vec<order::Job> = seg
                .units
                .iter()
                .map(|&u| {
                    let c = profile.rules.get(u as usize).copied().unwrap_or_default();
                    let evals = c.evaluations.max(1) as f64;
                    let f = footprint::of_chain(program, u);
                    let exits = match exit {
                        Some(e) => f.adds.iter().any(|k| {
                            k.col == "tx" && k.name.as_ref().is_some_and(|n| e.scores.contains(n))
                        }),
                        None => f.exit.is_some(),
                    };
                    order::Job {
                        cost: c.nanos as f64 / evals,
                        exit: if exits { c.matches as f64 / evals } else { 0.0 },
                    }
                })
                .collect();
            let best = order::best_order(&stats, &seg.preds);
            let identity: Vec<usize> = (0..stats.len()).collect();
            if best == identity {
                continue;
            }
            let reach = profile
                .rules
                .get(seg.units[0] as usize)
                .map_or(0.0, |c| c.evaluations as f64 / requests);
            out.segments.push(SegmentPlan {
                phase: p + 1,
                positions: seg.positions.clone(),
                before: seg.units.clone(),
                after: best.iter().map(|&k| seg.units[k]).collect(),
                cost_before: order::expected_cost(&stats, &identity),
                cost_after: order::expected_cost(&stats, &best),
                stats,
                reach,
                anomaly: exit.is_some(),
            });
        }
    }
    out
}

/// Why a plan could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApplyError {
    /// `Options::order` is off for this program.
    Disabled,
    /// The plan was made for another program (a segment's steps differ).
    Mismatch {
        /// The phase.
        phase: u8,
        /// The step.
        step: usize,
    },
    /// The programs are not compiles of the same rules ([`like::order_like`]).
    Different,
}

impl std::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApplyError::Disabled => f.write_str("rule ordering is off (Options::order)"),
            ApplyError::Mismatch { phase, step } => {
                write!(f, "the plan does not match phase {phase} step {step}")
            }
            ApplyError::Different => f.write_str("the programs have different rules"),
        }
    }
}

impl std::error::Error for ApplyError {}

/// Rewrites `program`'s step lists to the plan's order; returns how many units
/// moved. Jump targets are remapped (they are fixed steps, so they keep their
/// index, but the remap does not rely on it).
pub fn apply(program: &mut Program, plan: &OrderPlan) -> Result<usize, ApplyError> {
    if !program.options.order {
        return Err(ApplyError::Disabled);
    }
    for seg in &plan.segments {
        let steps = &program.phases[usize::from(seg.phase - 1)];
        for (&pos, &u) in seg.positions.iter().zip(&seg.before) {
            if steps.get(pos) != Some(&Step::Rule(u)) || seg.after.len() != seg.before.len() {
                return Err(ApplyError::Mismatch {
                    phase: seg.phase,
                    step: pos,
                });
            }
        }
    }
    for p in 0..5 {
        let segs: Vec<&SegmentPlan> = plan
            .segments
            .iter()
            .filter(|s| usize::from(s.phase) == p + 1)
            .collect();
        if segs.is_empty() {
            continue;
        }
        let old = program.phases[p].clone();
        if !program.ordering.reordered[p] {
            for (i, s) in old.iter().enumerate() {
                if let Step::Rule(idx) = *s {
                    let id = program.rules[idx as usize].id;
                    program.ordering.rank.insert(id, i as u32);
                }
            }
        }
        let mut new = old.clone();
        for seg in segs {
            for (&pos, &u) in seg.positions.iter().zip(&seg.after) {
                new[pos] = Step::Rule(u);
            }
        }
        // old position -> new position
        let mut moved_to = vec![0usize; old.len()];
        let mut where_rule: FxHashMap<RuleIdx, usize> = FxHashMap::default();
        for (i, s) in new.iter().enumerate() {
            if let Step::Rule(idx) = *s {
                where_rule.insert(idx, i);
            }
        }
        for (i, s) in old.iter().enumerate() {
            moved_to[i] = match *s {
                Step::Rule(idx) => where_rule.get(&idx).copied().unwrap_or(i),
                _ => i,
            };
        }
        for s in &old {
            let Step::Rule(idx) = *s else { continue };
            let mut link = Some(idx);
            while let Some(l) = link {
                let rule = &mut program.rules[l as usize];
                if let Some(t) = rule.skip_after {
                    if t >= 1 && t - 1 < old.len() {
                        rule.skip_after = Some(moved_to[t - 1] + 1);
                    }
                }
                link = rule.chain_next;
            }
        }
        program.phases[p] = new;
        program.ordering.reordered[p] = true;
    }
    // Moved rules may join or split runs.
    program.step_gates = crate::step_gates::StepGates::build(program);
    crate::step_gates::StepGates::attach_stops(program);
    Ok(plan.moved())
}
