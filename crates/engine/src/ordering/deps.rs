//! A phase's steps split into fixed steps and segments of movable units, with the
//! precedence constraints between the units of each segment.
//!
//! A unit is one step: a rule with its chain links (a chain never splits). Fixed
//! steps keep their index: markers, load-time removals (they count for `skip`),
//! rules with `skip`/`skipAfter` and everything a `skip:N` counts over, the step
//! just before every jump target (so every jump still lands on the same step and
//! no rule crosses into or out of a skipped block), and barriers (see
//! [`super::footprint`]: `ctl`, `allow`, collections, readers of an earlier
//! rule's `MATCHED_VAR`, ...). The runs of other steps between fixed ones are the
//! segments; a unit moves only inside its segment, and two units of a segment keep
//! their relative order when their footprints conflict.

use super::footprint::{self, Footprint};
use crate::rule::{RuleIdx, Step};
use crate::Program;

/// A run of movable units between fixed steps.
#[derive(Debug, Clone)]
pub struct Segment {
    /// The phase (1-5).
    pub phase: u8,
    /// The step indexes, in order (consecutive).
    pub positions: Vec<usize>,
    /// The unit (chain starter) at each position.
    pub units: Vec<RuleIdx>,
    /// For each unit, the earlier units of the segment it must follow.
    pub preds: Vec<Vec<usize>>,
}

impl Segment {
    /// The part of the segment at steps `lo..hi` (a sub-run of a segment is a
    /// segment: the units outside it stay where they are), if it has two units.
    pub fn restrict(&self, lo: usize, hi: usize) -> Option<Segment> {
        let keep: Vec<usize> = (0..self.positions.len())
            .filter(|&k| (lo..hi).contains(&self.positions[k]))
            .collect();
        if keep.len() < 2 {
            return None;
        }
        let first = keep[0];
        Some(Segment {
            phase: self.phase,
            positions: keep.iter().map(|&k| self.positions[k]).collect(),
            units: keep.iter().map(|&k| self.units[k]).collect(),
            preds: keep
                .iter()
                .map(|&k| {
                    self.preds[k]
                        .iter()
                        .filter(|&&q| keep.contains(&q))
                        .map(|&q| q - first)
                        .collect()
                })
                .collect(),
        })
    }
}

/// The analysis of one phase.
#[derive(Debug, Clone, Default)]
pub struct PhaseDeps {
    /// For each step, why it is fixed (`None`: it belongs to a segment).
    pub fixed: Vec<Option<&'static str>>,
    /// The segments with at least two units.
    pub segments: Vec<Segment>,
}

/// Splits phase `phase` (1-5) of `program` into fixed steps and segments.
/// `exits_matter`: units may end the phase (a disruptive match in self-contained
/// mode), which constrains them against units with visible effects.
pub fn analyse(program: &Program, phase: u8, exits_matter: bool) -> PhaseDeps {
    let Some(steps) = program.phases.get(usize::from(phase).wrapping_sub(1)) else {
        return PhaseDeps::default();
    };
    let n = steps.len();
    // Captures are private to each chain when no rule reads another's.
    let private_captures = !program.phases.iter().flatten().any(|s| match *s {
        Step::Rule(idx) => footprint::of_chain(program, idx).external_capture_reads,
        _ => false,
    });
    let mut fixed: Vec<Option<&'static str>> = vec![None; n];
    let mut prints: Vec<Option<Footprint>> = vec![None; n];
    for (i, step) in steps.iter().enumerate() {
        match *step {
            Step::Marker => fixed[i] = Some("marker"),
            Step::Removed => fixed[i] = Some("removed at load time"),
            Step::Rule(idx) => {
                let mut f = footprint::of_chain(program, idx);
                if private_captures {
                    f = f.without_capture_writes();
                }
                if let Some(why) = f.barrier {
                    fixed[i] = Some(why);
                }
                let Some(rule) = program.rules.get(idx as usize) else {
                    fixed[i] = Some("unknown rule");
                    continue;
                };
                if let Some(t) = rule.skip_after {
                    if t >= 1 && t - 1 < n && fixed[t - 1].is_none() {
                        fixed[t - 1] = Some("jump target");
                    }
                    if t <= i {
                        fixed[i] = Some("backward jump");
                    }
                }
                if rule.skip > 0 {
                    let mut left = rule.skip;
                    let mut j = i + 1;
                    while left > 0 && j < n {
                        if !matches!(steps[j], Step::Marker) {
                            left -= 1;
                        }
                        if fixed[j].is_none() {
                            fixed[j] = Some("counted by skip");
                        }
                        j += 1;
                    }
                    if j < n && fixed[j].is_none() {
                        fixed[j] = Some("jump target");
                    }
                }
                prints[i] = Some(f);
            }
        }
    }
    // Steps fixed later in the loop (jump targets, skip ranges) are already set;
    // fixing a step after its footprint was read is fine: it only leaves segments.
    let mut segments = Vec::new();
    let mut i = 0;
    while i < n {
        if fixed[i].is_some() {
            i += 1;
            continue;
        }
        let start = i;
        while i < n && fixed[i].is_none() {
            i += 1;
        }
        if i - start < 2 {
            continue;
        }
        let positions: Vec<usize> = (start..i).collect();
        let units: Vec<RuleIdx> = positions
            .iter()
            .filter_map(|&p| match steps[p] {
                Step::Rule(idx) => Some(idx),
                _ => None,
            })
            .collect();
        if units.len() != positions.len() {
            continue;
        }
        let fps: Vec<&Footprint> = positions
            .iter()
            .filter_map(|&p| prints[p].as_ref())
            .collect();
        if fps.len() != positions.len() {
            continue;
        }
        let preds = (0..fps.len())
            .map(|b| {
                (0..b)
                    .filter(|&a| footprint::conflicts(fps[a], fps[b], exits_matter))
                    .collect()
            })
            .collect();
        segments.push(Segment {
            phase,
            positions,
            units,
            preds,
        });
    }
    PhaseDeps { fixed, segments }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;

    fn program(text: &str) -> std::sync::Arc<Program> {
        Program::from_str_with("t.conf", text, &Options::none()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn markers_skips_and_barriers_split_segments() {
        let p = program(
            "SecRuleEngine On\n\
             SecRule ARGS \"@rx a\" \"id:1,phase:2,deny\"\n\
             SecRule ARGS \"@rx b\" \"id:2,phase:2,deny\"\n\
             SecRule ARGS \"@rx c\" \"id:3,phase:2,pass,ctl:ruleRemoveById=9\"\n\
             SecRule ARGS \"@rx d\" \"id:4,phase:2,deny\"\n\
             SecRule ARGS \"@rx e\" \"id:5,phase:2,pass,skipAfter:END\"\n\
             SecRule ARGS \"@rx f\" \"id:6,phase:2,deny\"\n\
             SecRule ARGS \"@rx g\" \"id:7,phase:2,deny\"\n\
             SecRule ARGS \"@rx h\" \"id:8,phase:2,deny\"\n\
             SecMarker END\n\
             SecRule ARGS \"@rx i\" \"id:9,phase:2,deny\"\n\
             SecRule ARGS \"@rx j\" \"id:10,phase:2,deny\"\n",
        );
        let d = analyse(&p, 2, true);
        let ids =
            |s: &Segment| -> Vec<u32> { s.units.iter().map(|&u| p.rules[u as usize].id).collect() };
        let segs: Vec<Vec<u32>> = d.segments.iter().map(ids).collect();
        // 3 is a ctl barrier, 4 alone, 5 jumps to after the marker (fixed), so 6-8
        // move only among themselves; 9 and 10 follow the marker.
        assert_eq!(segs, vec![vec![1, 2], vec![6, 7, 8], vec![9, 10]]);
        assert!(d.segments.iter().all(|s| s.preds.iter().all(Vec::is_empty)));
    }

    #[test]
    fn hazards_become_constraints() {
        let p = program(
            "SecRuleEngine On\n\
             SecRule ARGS \"@rx a\" \"id:1,phase:2,pass,nolog,setvar:tx.x=1\"\n\
             SecRule TX:x \"@eq 1\" \"id:2,phase:2,deny\"\n\
             SecRule ARGS \"@rx c\" \"id:3,phase:2,deny,status:403\"\n\
             SecRule ARGS \"@rx d\" \"id:4,phase:2,deny,status:406\"\n\
             SecRule ARGS \"@rx e\" \"id:5,phase:2,pass,log\"\n",
        );
        let d = analyse(&p, 2, true);
        assert_eq!(d.segments.len(), 1);
        let preds = &d.segments[0].preds;
        // 2 reads what 1 writes; 1 has effects, so no exit may pass it.
        assert_eq!(preds[1], vec![0]);
        assert_eq!(preds[2], vec![0]);
        // Different statuses keep their order; 5 logs without exiting.
        assert_eq!(preds[3], vec![0, 1, 2]);
        assert_eq!(preds[4], vec![1, 2, 3]);
        // Without exits only the data hazards remain.
        let d = analyse(&p, 2, false);
        let preds = &d.segments[0].preds;
        assert_eq!(preds[1], vec![0]);
        assert!(preds[2].is_empty() && preds[3].is_empty() && preds[4].is_empty());
    }
}
