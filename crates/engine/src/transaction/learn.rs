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
//! groups would be needed); the value then stays unknown, as before. For a
//! `multiMatch` rule (not negated), the cache keeps only "no intermediate value
//! matched": the value is walked as the rule's evaluation walks it (the raw
//! value, then each transformation that changed it), and that is recorded when
//! the operator matched none of them (CRS 930110 excludes the Referer header,
//! whose entry otherwise kept the rule in its maybe set: the rule ran on every
//! request with a cached Referer).

use super::Transaction;
use crate::rule::{CompiledOp, Rule};

impl Transaction {
    /// Learns `rule`'s results on the cached values of `slots` (removed from its
    /// targets by exclusions) that their entries do not know yet.
    pub(super) fn learn_excluded(&mut self, program: &crate::Program, rule: &Rule, slots: &[u32]) {
        if !program.options.value_cache || !rule.pure {
            return;
        }
        if rule.multi_match {
            if !rule.operator.negated {
                self.learn_excluded_multi(program, rule, slots);
            }
            return;
        }
        let Some(op) = static_op(rule) else {
            return;
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

    /// [`Transaction::learn_excluded`] for a `multiMatch` rule that is not
    /// negated: "no intermediate value matched" (its `MULTI` result), found by
    /// the walk of [`Transaction::multi_prefixes`], with the prefilter passing
    /// over the values whose scans lack the rule's literals, as the rule's own
    /// evaluation does.
    fn learn_excluded_multi(&mut self, program: &crate::Program, rule: &Rule, slots: &[u32]) {
        let Some(op) = static_op(rule) else {
            return;
        };
        let key = rule.index | crate::value_cache::MULTI;
        let chains = &program.chains;
        for &slot in slots {
            let unknown = self
                .data
                .cached(slot, &program.caches)
                .is_some_and(|e| e.result(key).is_none());
            if !unknown {
                continue;
            }
            let mut prefixes = [0; 64];
            let Some(n) = self.multi_prefixes(program, rule, slot, &mut prefixes) else {
                continue;
            };
            let long = self.data.response_body_slot() == Some(slot);
            let mut hit = false;
            let mut previous = None;
            for &chain in prefixes.get(..n).unwrap_or_default() {
                let bytes = self.work.memo.bytes_id(slot, chain);
                if previous == Some(bytes) {
                    continue;
                }
                previous = Some(bytes);
                let base = &self.data.entry(slot).value;
                if let (Some(bit), Some(pf)) = (rule.prefilter, &program.prefilter) {
                    let bits = self.work.memo.scan(pf, chains, slot, chain, base, long);
                    if !pf.admits(bits, bit) {
                        continue;
                    }
                }
                let base = &self.data.entry(slot).value;
                if op.evaluate(self.work.memo.get(chains, slot, chain, base), None) {
                    hit = true;
                    break;
                }
            }
            if !hit {
                if let Some(e) = self.data.cached(slot, &program.caches) {
                    e.set_result(key, false);
                }
            }
        }
    }
}

/// The operator of a pure rule built at load time (its own, or its argument's
/// macros resolved by pre-pruning), or `None`.
fn static_op(rule: &Rule) -> Option<&dyn crate::operator::Operator> {
    match (&rule.operator.op, &rule.resolved_op) {
        (CompiledOp::Static(op), _) => Some(op.as_ref()),
        (CompiledOp::Dynamic(_), Some((_, op))) => Some(op.as_ref()),
        _ => None,
    }
}
