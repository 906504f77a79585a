//! Results the Rule Result Cache learns for values a rule's exclusions remove.
//!
//! With the result cache, a prefilter group admits a rule when a maybe set of
//! its classes holds it: some value of the class whose entry does not know the
//! rule leaves it unmatched (see [`crate::value_cache::ValueEntry::maybe_into`]).
//! A value that the rule's exclusions remove (`!REQUEST_COOKIES:/__utm/`, or
//! 941010's `ctl` removal of REQUEST_FILENAME from the XSS rules) is never
//! evaluated by it, so its entry would never learn the rule's result, and the
//! class's maybe set would admit the rule on every request — each then visiting
//! all its values to find them cached as "no match".
//!
//! The rule's result on such a value is as pure as on any other (the operator
//! and transformations see the value alone), so it is learned here, once per
//! (rule, cached value), without any effect on the transaction: no match is
//! recorded, no variable set. A match of a `capture` rule is not recorded (its
//! groups would be needed); the value then stays unknown, as before.

use super::Transaction;
use crate::rule::{CompiledOp, Rule};

impl Transaction {
    /// Learns `rule`'s results on the cached values of `slots` (removed from its
    /// targets by exclusions) that their entries do not know yet.
    pub(super) fn learn_excluded(&mut self, program: &crate::Program, rule: &Rule, slots: &[u32]) {
        if !program.options.value_cache || !rule.pure || rule.multi_match {
            return;
        }
        let op: &dyn crate::operator::Operator = match (&rule.operator.op, &rule.resolved_op) {
            (CompiledOp::Static(op), _) => op.as_ref(),
            (CompiledOp::Dynamic(_), Some((_, op))) => op.as_ref(),
            _ => return,
        };
        for &slot in slots {
            let unknown = self
                .data
                .cached(slot, &program.caches)
                .is_some_and(|e| e.result(rule.index).is_none());
            if !unknown {
                continue;
            }
            let base = &self.data.entry(slot).value;
            self.work
                .memo
                .compute(&program.chains, slot, rule.transforms, base);
            let hit = match (rule.prefilter, &program.prefilter) {
                (Some(bit), Some(pf)) => {
                    let long = self.data.response_body_slot() == Some(slot);
                    let base = &self.data.entry(slot).value;
                    let bits =
                        self.work
                            .memo
                            .scan(pf, &program.chains, slot, rule.transforms, base, long);
                    pf.admits(bits, bit).then_some(())
                }
                _ => Some(()),
            }
            .map(|()| {
                let base = &self.data.entry(slot).value;
                let v = self
                    .work
                    .memo
                    .get(&program.chains, slot, rule.transforms, base);
                op.evaluate(v, None)
            });
            let hit = hit.unwrap_or(false);
            if hit && rule.capture {
                continue;
            }
            if let Some(e) = self.data.cached(slot, &program.caches) {
                e.set_result(rule.index, hit);
            }
        }
    }
}
