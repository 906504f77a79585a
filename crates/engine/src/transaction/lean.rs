//! The lean evaluation of a rule (see [`crate::lean`]): its values found from its
//! plan — an arena list walked in place, a count, one TX member — and each
//! tested as the general path (`phase.rs`, `eval_candidates`) tests it: an arena
//! value through the transformation memo, the prefilter's per-value test and the
//! result cache; a count or a TX value transformed in a reused buffer. The
//! values, their order, MATCHED_VARS names and values, and the cache's reads and
//! writes are the general path's; only the candidate list, the target-set cache,
//! lent scans and scratch entries are left out.

use super::Transaction;
use crate::lean::{LeanPlan, LeanTarget};
use crate::operator::Operator;
use crate::rule::{CompiledOp, Rule};
use crate::variable::Var;

impl Transaction {
    /// Whether `rule`'s lean plan may be used now: not with `Options::verify`
    /// (the general path checks every shortcut) nor when one of this
    /// transaction's `ctl` target removals applies to the rule.
    #[inline]
    pub(super) fn lean_applies(&self, program: &crate::Program, rule: &Rule) -> bool {
        !program.options.verify && !self.ctl_exclusions_apply(rule)
    }

    /// Evaluates `rule` through its lean plan; runs per-match effects. Returns
    /// whether a value matched (`!` applied), as `eval_rule_values` would.
    pub(super) fn eval_lean(
        &mut self,
        program: &crate::Program,
        rule: &Rule,
        plan: &LeanPlan,
    ) -> bool {
        let op: &dyn Operator = match (&rule.operator.op, &rule.resolved_op) {
            (CompiledOp::Static(op), _) => op.as_ref(),
            (CompiledOp::Dynamic(_), Some((_, op))) => op.as_ref(),
            // Never planned (see `lean::plan`): the general path.
            _ => return self.eval_rule_values(program, rule),
        };
        let mut matched = false;
        for target in plan.targets.iter() {
            match target {
                LeanTarget::List {
                    var,
                    key,
                    count: false,
                } => {
                    let var = *var;
                    let n = self.data.slots(var).len();
                    if n == 0 && super::is_scalar(var) {
                        // As libmodsecurity v3's anchored variables: an unset
                        // single-valued variable still yields one empty value.
                        matched |= self.lean_owned(program, rule, op, b"", |s| {
                            s.push_str(var.name());
                        });
                        continue;
                    }
                    for i in 0..n {
                        let slot = self.data.slots(var)[i];
                        let selected = key.as_ref().is_none_or(|k| {
                            k.as_bytes()
                                .eq_ignore_ascii_case(&self.data.entry(slot).key)
                        });
                        if selected {
                            matched |= self.lean_slot(program, rule, op, var, slot);
                        }
                    }
                }
                LeanTarget::List {
                    var,
                    key,
                    count: true,
                } => {
                    let var = *var;
                    let slots = self.data.slots(var);
                    let n = if slots.is_empty() && super::is_scalar(var) {
                        1
                    } else {
                        match key {
                            None => slots.len(),
                            Some(k) => slots
                                .iter()
                                .filter(|&&s| {
                                    k.as_bytes().eq_ignore_ascii_case(&self.data.entry(s).key)
                                })
                                .count(),
                        }
                    };
                    let mut digits = [0u8; 20];
                    let n = i64::try_from(n).unwrap_or(i64::MAX);
                    let value = super::phase::format_int(n, &mut digits);
                    matched |= self.lean_owned(program, rule, op, value, |s| {
                        s.push('&');
                        s.push_str(var.name());
                    });
                }
                LeanTarget::Tx { key, count: false } => {
                    let mut value = std::mem::take(&mut self.work.lean_buf);
                    value.clear();
                    let found = match self.state.tx.get(key) {
                        Some(v) => {
                            value.extend_from_slice(v);
                            true
                        }
                        None => false,
                    };
                    if found {
                        matched |= self.lean_owned(program, rule, op, &value, |s| {
                            s.push_str("TX:");
                            s.push_str(key);
                        });
                    }
                    self.work.lean_buf = value;
                }
                LeanTarget::TxSelected { target } => {
                    matched |= self.lean_tx_selected(program, rule, op, *target);
                }
                LeanTarget::Tx { key, count: true } => {
                    let value: &[u8] = if self.state.tx.get(key).is_some() {
                        b"1"
                    } else {
                        b"0"
                    };
                    matched |= self.lean_owned(program, rule, op, value, |s| s.push_str("&TX"));
                }
            }
        }
        matched
    }

    /// One arena value of a lean rule, as the general path's arena branch tests
    /// it (result cache, memo, prefilter test, operator); runs per-match effects.
    /// Not inlined: inlined into the loop over a target's values, its loop
    /// invariants were set up (about fifty instructions, spilled to the stack)
    /// at every lean rule, though most have one value or none.
    #[inline(never)]
    fn lean_slot(
        &mut self,
        program: &crate::Program,
        rule: &Rule,
        op: &dyn Operator,
        var: Var,
        slot: u32,
    ) -> bool {
        let negated = rule.operator.negated;
        let cache = program.options.value_cache && rule.pure;
        let cached = if cache {
            self.data
                .cached(slot, &program.caches)
                .and_then(|e| e.result(rule.index))
        } else {
            None
        };
        if let Some(known) = cached {
            if known == negated {
                return false;
            }
            // The rule matches: only the transformed value is needed, which the
            // match's record keeps (else the memo gives it).
            let mut e = self.state.matched_vars.spare();
            self.cached_match_into(program, rule, (var, slot), &mut e);
            self.on_match(rule, e, known);
            return true;
        }
        let base = &self.data.entry(slot).value;
        self.work
            .memo
            .compute(&program.chains, slot, rule.transforms, base);
        if self.prefilter_rules_out(program, rule, slot, cache) {
            if !negated {
                return false;
            }
            let mut e = self.state.matched_vars.spare();
            self.memo_match_into(program, rule, (var, slot), &mut e);
            self.on_match(rule, e, false);
            return true;
        }
        let base = &self.data.entry(slot).value;
        let v = self
            .work
            .memo
            .get(&program.chains, slot, rule.transforms, base);
        let hit = op.evaluate(v, None);
        let matched = (hit != negated).then(|| {
            let mut e = self.state.matched_vars.spare();
            e.fill_from_slot((var, slot), v, &self.data.entry(slot).value);
            e
        });
        if cache {
            // (The value was looked up above.)
            match self.data.cached_known(slot) {
                // A match (not negated): recorded with its transformed value.
                Some(e) if hit && matched.is_some() => e.set_match(rule.index, None, v),
                Some(e) => e.set_result(rule.index, hit),
                None => self.data.add_cost(slot, 1),
            }
        }
        match matched {
            Some(e) => {
                self.on_match(rule, e, hit);
                true
            }
            None => false,
        }
    }

    /// A value of a lean rule that is not in the arena (a count, a TX member,
    /// the empty value of an unset variable): transformed in a reused buffer
    /// (nothing to copy for the empty chain) and tested; `name` writes its
    /// MATCHED_VAR_NAME. Runs per-match effects.
    fn lean_owned(
        &mut self,
        program: &crate::Program,
        rule: &Rule,
        op: &dyn Operator,
        value: &[u8],
        name: impl FnOnce(&mut String),
    ) -> bool {
        let negated = rule.operator.negated;
        let mut vbuf = std::mem::take(&mut self.work.vbuf);
        let v: &[u8] = if rule.transforms == 0 {
            value
        } else {
            let mut tbuf = std::mem::take(&mut self.work.tbuf);
            super::memo::apply_chain(
                &program.chains,
                rule.transforms,
                value,
                &mut vbuf,
                &mut tbuf,
            );
            self.work.tbuf = tbuf;
            &vbuf
        };
        let hit = op.evaluate(v, None);
        let matched = hit != negated;
        if matched {
            let mut e = self.state.matched_vars.spare();
            e.value.extend_from_slice(v);
            name(&mut e.name);
            self.work.vbuf = vbuf;
            self.on_match(rule, e, hit);
        } else {
            self.work.vbuf = vbuf;
        }
        matched
    }

    /// The TX members target `target` of `rule` selects (a key regex, or all):
    /// each transformed and tested as [`Transaction::lean_owned`] tests a value,
    /// in place, all of them before any match's effects run (the general path
    /// copies the members into its candidate list first, so its tests see them
    /// as they were then); then the matches' per-match effects, in order, with
    /// the names the general path gives (`TX:key`).
    fn lean_tx_selected(
        &mut self,
        program: &crate::Program,
        rule: &Rule,
        op: &dyn Operator,
        target: usize,
    ) -> bool {
        let Some(spec) = rule.targets.get(target) else {
            return false;
        };
        let negated = rule.operator.negated;
        let mut vbuf = std::mem::take(&mut self.work.vbuf);
        let mut tbuf = std::mem::take(&mut self.work.tbuf);
        // (key, transformed value, operator result) of each match; a benign
        // request has none, and an empty list does not allocate.
        let mut hits: Vec<(Vec<u8>, Vec<u8>, bool)> = Vec::new();
        self.state.tx.for_each_selected(&spec.sel, |k, v| {
            let t: &[u8] = if rule.transforms == 0 {
                v
            } else {
                super::memo::apply_chain(&program.chains, rule.transforms, v, &mut vbuf, &mut tbuf);
                &vbuf
            };
            let hit = op.evaluate(t, None);
            if hit != negated {
                hits.push((k.to_vec(), t.to_vec(), hit));
            }
        });
        self.work.vbuf = vbuf;
        self.work.tbuf = tbuf;
        let matched = !hits.is_empty();
        for (key, value, hit) in hits {
            let mut e = self.state.matched_vars.spare();
            e.value.extend_from_slice(&value);
            super::resolve::push_var_name(&mut e.name, Var::Tx, &key);
            self.on_match(rule, e, hit);
        }
        matched
    }
}
