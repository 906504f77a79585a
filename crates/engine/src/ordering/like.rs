//! Carrying a learned order over to a fresh compile of the same rules.
//!
//! A program handed out to transactions is shared, so a new order cannot be
//! applied to it in place ([`crate::Program::reordered`] needs the only `Arc`).
//! An online learner therefore compiles the same configuration again, off the
//! request path, and needs that copy in the order the running program has now
//! (which earlier plans produced) before it applies the next plan, whose steps
//! refer to the running order. [`order_like`] computes the plan that does it.
//!
//! The result is sound only because the running order is itself the result of
//! [`super::apply`]ing plans to a compile of the same rules: this module checks
//! that both programs have the same rules (ids at every index, same fixed steps)
//! and that only rules were permuted, never which permutations are allowed.

use super::{ApplyError, OrderPlan, SegmentPlan};
use crate::rule::Step;
use crate::Program;

/// The plan that gives `program` (a fresh compile) the step order of `like` (a
/// compile of the same configuration, reordered by earlier plans). An empty plan
/// when the orders are the same. Fails when the programs differ in anything but
/// the order of rules: rule count or ids, fixed steps, the set of rules of a phase.
pub fn order_like(program: &Program, like: &Program) -> Result<OrderPlan, ApplyError> {
    if program.rules.len() != like.rules.len()
        || program
            .rules
            .iter()
            .zip(&like.rules)
            .any(|(a, b)| a.id != b.id || a.chain_next != b.chain_next)
    {
        return Err(ApplyError::Different);
    }
    let mut out = OrderPlan::default();
    for (p, (mine, theirs)) in program.phases.iter().zip(&like.phases).enumerate() {
        if mine.len() != theirs.len() {
            return Err(ApplyError::Different);
        }
        let mut positions = Vec::new();
        let mut before = Vec::new();
        let mut after = Vec::new();
        for (i, (a, b)) in mine.iter().zip(theirs).enumerate() {
            if a == b {
                continue;
            }
            match (a, b) {
                (Step::Rule(x), Step::Rule(y)) => {
                    positions.push(i);
                    before.push(*x);
                    after.push(*y);
                }
                _ => {
                    return Err(ApplyError::Mismatch {
                        phase: p as u8 + 1,
                        step: i,
                    })
                }
            }
        }
        if positions.is_empty() {
            continue;
        }
        let mut a = before.clone();
        let mut b = after.clone();
        a.sort_unstable();
        b.sort_unstable();
        if a != b {
            return Err(ApplyError::Different);
        }
        out.segments.push(SegmentPlan {
            phase: p as u8 + 1,
            positions,
            before,
            after,
            stats: Vec::new(),
            reach: 0.0,
            cost_before: 0.0,
            cost_after: 0.0,
            anomaly: false,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Profile, RuleCost};
    use crate::Options;
    use std::sync::Arc;

    const RULES: &str = "SecRuleEngine On\n\
SecDefaultAction \"phase:1,log,deny,status:403\"\n\
SecRule ARGS \"@contains rare1\" \"id:10,phase:1,deny\"\n\
SecRule ARGS \"@contains rare2\" \"id:11,phase:1,deny\"\n\
SecRule ARGS \"@contains attack\" \"id:12,phase:1,deny\"\n";

    fn compile() -> Arc<Program> {
        Program::from_str_with("t.conf", RULES, &Options::default())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn ids(p: &Program) -> Vec<u32> {
        p.rule_ids(1)
    }

    /// A profile where rule 12 (last) is cheap and matches half the time.
    fn profile(p: &Program) -> Profile {
        let mut prof = Profile::new(p.rules.len());
        prof.transactions = 100;
        for (i, r) in p.rules.iter().enumerate() {
            prof.rules[i] = match r.id {
                12 => RuleCost {
                    evaluations: 100,
                    matches: 50,
                    nanos: 1_000,
                },
                _ => RuleCost {
                    evaluations: 100,
                    matches: 0,
                    nanos: 100_000,
                },
            };
        }
        prof
    }

    #[test]
    fn a_fresh_compile_takes_the_running_order_then_the_next_plan() {
        let first = compile();
        let plan = crate::ordering::plan(&first, &profile(&first));
        assert!(plan.moved() > 0, "{plan:?}");
        let (running, _) = Program::reordered(compile(), &plan).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ids(&running)[0], 12);
        // The same order again on a fresh compile.
        let fresh = compile();
        let carry = order_like(&fresh, &running).unwrap_or_else(|e| panic!("{e}"));
        let (copy, _) = Program::reordered(fresh, &carry).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(copy.phases, running.phases);
        assert_eq!(ids(&copy), ids(&running));
        // Equal orders: nothing to do.
        let same = order_like(&running, &copy).unwrap_or_else(|e| panic!("{e}"));
        assert!(same.segments.is_empty());
        // A plan made on the running program applies to the copy.
        let mut p2 = profile(&running);
        for (i, r) in running.rules.iter().enumerate() {
            if r.id == 11 {
                p2.rules[i].matches = 90;
                p2.rules[i].nanos = 10;
            }
        }
        let next = crate::ordering::plan(&running, &p2);
        assert!(next.moved() > 0, "{next:?}");
        let (again, _) = Program::reordered(copy, &next).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ids(&again)[0], 11);
    }

    #[test]
    fn other_rules_are_refused() {
        let other = Program::from_str_with(
            "t.conf",
            &RULES.replace("id:12", "id:13"),
            &Options::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            order_like(&compile(), &other).map(|p| p.segments.len()),
            Err(ApplyError::Different)
        );
    }
}
