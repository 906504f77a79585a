//! Evaluating a `@geoLookup` rule: the one operator that writes transaction state
//! (the `GEO` collection), so the phase evaluator runs it here rather than through
//! [`crate::operator::Operator::evaluate`] (see [`crate::operator::GeoLookup`] for
//! the keys and v3's behaviour).
//!
//! Each value is transformed as for any rule (with `multiMatch`, the value and every
//! intermediate value a transformation changed are looked up), each found record is
//! stored into `GEO` at once, replacing earlier values of its keys, and matches
//! (after negation) have the usual per-match effects. Nothing here is cached: the
//! lookup must run, and write `GEO`, every time.

use super::data::Entry;
use super::memo::apply_chain;
use super::resolve::Candidate;
use super::Transaction;
use crate::operator::GeoLookup;
use crate::rule::Rule;

impl Transaction {
    /// Looks up every value of `cands` (already resolved and filtered by the
    /// caller); returns whether any matched.
    pub(super) fn eval_geo_lookup(
        &mut self,
        program: &crate::Program,
        rule: &Rule,
        geo: &GeoLookup,
        scratch: &[Entry],
        cands: &[Candidate],
    ) -> bool {
        let negated = rule.operator.negated;
        let mut matched_any = false;
        let mut vbuf = std::mem::take(&mut self.work.vbuf);
        let mut tbuf = std::mem::take(&mut self.work.tbuf);
        let mut values: Vec<Vec<u8>> = Vec::new();
        for c in cands {
            values.clear();
            let raw = &self.entry_of(c, scratch).value;
            if rule.multi_match {
                let mut cur = raw.clone();
                values.push(cur.clone());
                for t in program.chains.transformations(rule.transforms) {
                    let mut out = Vec::new();
                    if t.apply(&cur, &mut out) {
                        cur = out;
                        values.push(cur.clone());
                    }
                }
            } else {
                apply_chain(&program.chains, rule.transforms, raw, &mut vbuf, &mut tbuf);
                values.push(vbuf.clone());
            }
            for value in values.drain(..) {
                // The operator captures nothing: no stale groups of an earlier rule
                // may be stored by `capture`.
                self.work.captures.clear();
                let hit = match geo.lookup(&value) {
                    Some(record) => {
                        for (key, v) in record.iter() {
                            self.state.geo.set_slice(key, v.as_bytes());
                        }
                        true
                    }
                    None => false,
                };
                if hit != negated {
                    matched_any = true;
                    let mut e = self.state.matched_vars.spare();
                    self.name_match(c, scratch, &mut e);
                    e.value.extend_from_slice(&value);
                    self.on_match(rule, e, hit);
                }
            }
        }
        self.work.vbuf = vbuf;
        self.work.tbuf = tbuf;
        matched_any
    }
}
