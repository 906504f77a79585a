//! The prefilter's per-group unions: for a group of rules with the same targets and
//! transformation chain, the union of the prefilter's scan results over every value
//! the group inspects (for `multiMatch` rules, also every intermediate value after
//! each transformation). A rule whose required literals occur in none of them cannot
//! match, which one bit test tells — without resolving its targets or visiting its
//! values. The union is computed once per group while the request data stay the same
//! (see [`super::data::Data::generation`]).
//!
//! Exclusions only remove values, so a union over the values before exclusions is a
//! superset: it may keep a rule that an exact union would skip, never the reverse.
//! Values that are not request data (counts, computed values) make the union
//! unknown, and the rule is evaluated as usual. Rules over collections that rules
//! write (TX, GEO, ...) have no group at all (see `Var::is_rule_state`): such a
//! member may not exist yet when the union is computed and appear later in the
//! same phase, with the request data (and so the union's generation) unchanged.

use super::resolve::{Candidate, Src};
use super::Transaction;
use crate::prefilter::Prefilter;
use crate::rule::Rule;
use crate::transform::triggers;

/// One group's union.
#[derive(Debug, Default, Clone)]
pub(crate) struct GroupUnion {
    /// The data generation it was computed for (`None`: never computed).
    generation: Option<u64>,
    /// Some value was not request data: the union is unknown.
    unknown: bool,
    bits: Vec<u64>,
    /// Per value, in resolution order: its slot and the memo offset of its scan
    /// ([`NO_OFFSET`] when the scan came from the result cache); kept when the
    /// memo is on and the result cache off (see [`Transaction::take_value_scans`]).
    scans: Vec<(u32, u32)>,
}

/// Fewest values of a target list for its group unions to start from the raw
/// values' scans (see [`Transaction::target_roots`]).
const MIN_SCREENED: usize = 8;

/// A value whose scan is not in the memo.
pub(crate) const NO_OFFSET: u32 = u32::MAX;

/// A group's per-value scans lent to one rule's evaluation (see
/// [`Transaction::take_value_scans`]).
pub(crate) struct ValueScans {
    group: usize,
    generation: u64,
    scans: Vec<(u32, u32)>,
    /// The next entry to look at.
    next: usize,
}

impl ValueScans {
    /// The memo offset of the scan of `slot`, the next value of the rule in order;
    /// `None` when unknown. The rule's values are those of the group in the same
    /// order, less the ones exclusions removed, so one forward walk finds each.
    #[inline]
    pub(crate) fn offset(&mut self, slot: u32) -> Option<usize> {
        while let Some(&(s, o)) = self.scans.get(self.next) {
            self.next += 1;
            if s == slot {
                return (o != NO_OFFSET).then_some(o as usize);
            }
        }
        None
    }
}

impl GroupUnion {
    /// Marks the union as not computed (keeping its buffer).
    pub(crate) fn forget(&mut self) {
        self.generation = None;
    }

    /// Bytes held (for the pool's size bound).
    pub(crate) fn capacity_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.bits.capacity() * 8 + self.scans.capacity() * 8
    }
}

impl Transaction {
    /// The prefilter bits of one value under `rule`'s chain (for `multiMatch`, of
    /// every intermediate value), into `out`.
    pub(crate) fn value_bits(
        &mut self,
        program: &crate::Program,
        pf: &Prefilter,
        rule: &Rule,
        slot: u32,
        out: &mut Vec<u64>,
    ) {
        out.clear();
        let mut chain = rule.transforms;
        let long = self.data.response_body_slot() == Some(slot);
        loop {
            let base = &self.data.entry(slot).value;
            // A chain that changes the value at most in case does so at every
            // prefix: the raw value's scan stands for them all.
            let unchanged = self.memo.scan_unchanged(&program.chains, slot, chain, base);
            let scanned = if unchanged { 0 } else { chain };
            let bits = self
                .memo
                .scan(pf, &program.chains, slot, scanned, base, long);
            if out.is_empty() {
                out.extend_from_slice(bits);
            } else {
                for (u, b) in out.iter_mut().zip(bits) {
                    *u |= b;
                }
            }
            match program.chains.split_last(chain) {
                Some((parent, _)) if rule.multi_match && !unchanged => chain = parent,
                _ => break,
            }
        }
    }

    /// Whether `rule` (with prefilter bit `bit` in group `group`) may match: false
    /// when none of its required literals occurs in any value of its group.
    pub(crate) fn group_may_match(
        &mut self,
        program: &crate::Program,
        pf: &Prefilter,
        rule: &Rule,
        group: u32,
        bit: u32,
    ) -> bool {
        let g = group as usize;
        if self.groups.len() <= g {
            self.groups.resize_with(g + 1, GroupUnion::default);
        }
        let generation = self.data.generation();
        if self.groups[g].generation != Some(generation) {
            self.compute_union(program, pf, rule, g, generation);
        }
        let u = &self.groups[g];
        u.unknown || pf.admits(&u.bits, bit)
    }

    /// Lends the per-value scans of `rule`'s group, computed for the current data,
    /// to the rule's evaluation: each value's prefilter test is then one bit test,
    /// without the memo's lookups (a rule over 80 JSON arguments admitted by the
    /// union tests 80 values). `None` without a computed, known union, when the
    /// memo is off (it is cleared per rule, and the offsets with it) or the result
    /// cache on (see `compute_union`).
    pub(crate) fn take_value_scans(
        &mut self,
        program: &crate::Program,
        rule: &Rule,
    ) -> Option<ValueScans> {
        if !program.options.memo || program.options.value_cache {
            return None;
        }
        let g = rule.prefilter_group? as usize;
        let generation = self.data.generation();
        let u = self.groups.get_mut(g)?;
        if u.generation != Some(generation) || u.unknown {
            return None;
        }
        Some(ValueScans {
            group: g,
            generation,
            scans: std::mem::take(&mut u.scans),
            next: 0,
        })
    }

    /// Gives lent scans back to their group (unless it was computed again).
    pub(crate) fn give_value_scans(&mut self, lent: ValueScans) {
        if let Some(u) = self.groups.get_mut(lent.group) {
            if u.generation == Some(lent.generation) && u.scans.is_empty() {
                u.scans = lent.scans;
            }
        }
    }

    fn compute_union(
        &mut self,
        program: &crate::Program,
        pf: &Prefilter,
        rule: &Rule,
        g: usize,
        generation: u64,
    ) {
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut cands: Vec<Candidate> = std::mem::take(&mut self.cands);
        scratch.reset();
        cands.clear();
        let listed = self.cached_targets(rule, &mut cands);
        if !listed {
            for spec in &rule.targets {
                self.collect(spec, rule, &mut scratch, &mut cands);
            }
        }
        let mut union = std::mem::take(&mut self.groups[g]);
        union.generation = Some(generation);
        union.unknown = false;
        union.bits.clear();
        union.bits.resize(pf.scan_words(), 0);
        union.scans.clear();
        // With the result cache, most values' scans come from it (no memo offset to
        // keep) and the list would cost more than it saves.
        let keep_scans = program.options.memo && !program.options.value_cache;
        let cache = program.options.value_cache;
        let id = rule.transforms
            | if rule.multi_match {
                crate::value_cache::MULTI
            } else {
                0
            };
        let mut value_bits = std::mem::take(&mut self.bits_buf);
        let body = self.data.response_body_slot();
        let mask = program.group_masks.get(g).and_then(Option::as_ref);
        let screened = keep_scans
            && listed
            && self.union_from_raw_scans(program, pf, rule, &cands, &mut union);
        for c in cands.iter().filter(|_| !screened) {
            let Src::Slot(slot) = c.src else {
                union.unknown = true;
                break;
            };
            if c.count {
                union.unknown = true;
                break;
            }
            // A value the result cache holds no entry for (or without the cache):
            // one scan, merged straight from the memo.
            let entry = cache && self.data.cached(slot, &program.caches).is_some();
            if !entry && !rule.multi_match {
                let base = &self.data.entry(slot).value;
                let long = Some(slot) == body;
                let o =
                    self.memo
                        .scan_offset(pf, &program.chains, slot, rule.transforms, base, long);
                or_into(&mut union.bits, self.memo.bits_at(o, pf.scan_words()));
                if keep_scans {
                    union
                        .scans
                        .push((slot, u32::try_from(o).unwrap_or(NO_OFFSET)));
                }
                if cache {
                    self.data.add_cost(slot, 2);
                }
                continue;
            }
            // A repeated value's scan comes from the result cache (verification
            // recomputes it and compares).
            if keep_scans {
                union.scans.push((slot, NO_OFFSET));
            }
            let mut expected: Option<Vec<u64>> = None;
            // The response body's scans come from the long-value automaton: kept
            // apart from scans of the same bytes in other variables.
            let id = if Some(slot) == body {
                id | crate::value_cache::LONG
            } else {
                id
            };
            if cache {
                let verify = program.options.verify;
                // Every rule of the group known not to match this value: it adds
                // nothing (cheaper than merging its scan).
                if let (false, Some(m)) = (verify, mask) {
                    if self
                        .data
                        .cached(slot, &program.caches)
                        .is_some_and(|e| e.known_clear(m))
                    {
                        continue;
                    }
                }
                let bits = &mut union.bits;
                let hit = self.data.cached(slot, &program.caches).and_then(|e| {
                    e.scan_with(id, |cached| {
                        if verify {
                            expected = Some(cached.to_vec());
                        } else {
                            if let Some(m) = mask {
                                m.learn(e, pf, cached);
                            }
                            for (u, b) in bits.iter_mut().zip(cached) {
                                *u |= b;
                            }
                        }
                    })
                });
                if hit.is_some() && !verify {
                    continue;
                }
            }
            self.value_bits(program, pf, rule, slot, &mut value_bits);
            if let Some(bits) = expected {
                assert_eq!(
                    bits.as_slice(),
                    value_bits.as_slice(),
                    "cached prefilter scan differs for rule {}",
                    rule.chain_id
                );
            } else if cache {
                match self.data.cached(slot, &program.caches) {
                    Some(e) => {
                        e.set_scan(id, &value_bits);
                        if let Some(m) = mask {
                            m.learn(e, pf, &value_bits);
                        }
                    }
                    None => self.data.add_cost(slot, 2),
                }
            }
            or_into(&mut union.bits, &value_bits);
        }
        self.groups[g] = union;
        self.bits_buf = value_bits;
        self.scratch = scratch;
        self.cands = cands;
    }
}

impl Transaction {
    /// A group's union from its target list's raw scans (see
    /// [`super::targets::RawScans`]): the raw values' union, and a scan under the
    /// group's chain of only the values holding one of its scan trigger bytes. The
    /// raw scans of those values stay in the union: a superset, as the union over
    /// values before exclusions is (it may keep a rule, never skip one; each value
    /// is tested on its own scan when the rule is evaluated). `cands` are the list's
    /// values, just resolved by `cached_targets`. Returns false (with `union`
    /// untouched) when the list's values are not screened or the chain may change
    /// any value.
    fn union_from_raw_scans(
        &mut self,
        program: &crate::Program,
        pf: &Prefilter,
        rule: &Rule,
        cands: &[Candidate],
        union: &mut GroupUnion,
    ) -> bool {
        // A short list costs less value by value than screened.
        if cands.len() < MIN_SCREENED {
            return false;
        }
        let (Some(ts), Some(&t)) = (
            rule.target_set,
            program.chains.scan_triggers(rule.transforms),
        ) else {
            return false;
        };
        let ts = ts as usize;
        self.target_roots(ts, pf, &program.chains);
        let Some(roots) = self.target_sets.get(ts).map(|e| &e.roots) else {
            return false;
        };
        let all_raw = triggers::disjoint(&t, &roots.bytes);
        // multiMatch values holding a trigger byte take `value_bits`' walk: left to
        // the caller's loop.
        if !roots.screened || roots.values.len() != cands.len() || (rule.multi_match && !all_raw) {
            return false;
        }
        let words = pf.scan_words();
        union.bits.copy_from_slice(&roots.union);
        for (c, &(bytes, raw)) in cands.iter().zip(&roots.values) {
            let Src::Slot(slot) = c.src else {
                continue;
            };
            if all_raw || triggers::disjoint(&t, &bytes) {
                union.scans.push((slot, raw));
                continue;
            }
            let base = &self.data.entry(slot).value;
            let o = self
                .memo
                .scan_offset(pf, &program.chains, slot, rule.transforms, base, false);
            or_into(&mut union.bits, self.memo.bits_at(o, words));
            union
                .scans
                .push((slot, u32::try_from(o).unwrap_or(NO_OFFSET)));
        }
        true
    }
}

/// `dst |= src`, word by word (equal lengths: scans of one prefilter).
#[inline]
fn or_into(dst: &mut [u64], src: &[u64]) {
    for (u, b) in dst.iter_mut().zip(src) {
        *u |= b;
    }
}

#[cfg(test)]
mod tests {
    use super::{ValueScans, NO_OFFSET};

    fn lent(scans: &[(u32, u32)]) -> ValueScans {
        ValueScans {
            group: 0,
            generation: 0,
            scans: scans.to_vec(),
            next: 0,
        }
    }

    #[test]
    fn a_rules_values_find_their_scans_in_one_forward_walk() {
        // The group's values are slots 4, 9, 2 (repeated) and 7; exclusions removed
        // 9 from the rule's.
        let mut l = lent(&[(4, 0), (9, 12), (2, 24), (2, 24), (7, NO_OFFSET)]);
        assert_eq!(l.offset(4), Some(0));
        assert_eq!(l.offset(2), Some(24));
        assert_eq!(l.offset(2), Some(24));
        // A scan from the result cache is not in the memo.
        assert_eq!(l.offset(7), None);
        // Past the end (a value the group did not have): unknown, never a guess.
        assert_eq!(l.offset(4), None);
        assert_eq!(l.offset(9), None);
    }
}
