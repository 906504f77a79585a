//! The class unions (see [`crate::classes`]): per class chain, the union of the
//! prefilter scans of the class's values under the chain; per arena list, with
//! the Rule Result Cache, the maybe sets of its cached values limited to the rules
//! of the classes holding them (see [`crate::classes::ListPlan`]). Each is made
//! once per change of the lists (`Data::version`), so phase 1's unions of the
//! request headers serve phase 2 as well.
//!
//! A class's values are screened once per version: each value's bytes and raw
//! scan, and the union of both. Most chains change a value only when it holds one
//! of the chain's scan trigger bytes (see
//! [`crate::chains::ChainTable::scan_triggers`]); a value without them has its raw
//! scan under the chain, and a class none of whose values has them has its raw
//! union — read in place instead of a lookup per value. Otherwise the union
//! starts from the raw union, and only the values with a trigger byte add their
//! scans under the chain: their raw scans stay in, a superset.

use super::data::Data;
use super::memo::TransformMemo;
use super::tracked::{HeapBytes, Tracked};
use super::Transaction;
use crate::prefilter::or_into;
use crate::prefilter::Prefilter;
use crate::transform::triggers::{self, ByteMask};

/// One class chain's union.
#[derive(Debug, Default, Clone)]
pub(crate) struct ClassUnion {
    /// The lists' version it was made for (`None`: never).
    version: Option<u64>,
    /// The data generation at which it was last found current: while the
    /// generation is the same, no list changed (no version to compute).
    checked_at: Option<u64>,
    /// A value is not in the arena: the union is unknown.
    pub(crate) unknown: bool,
    /// The class has no value (without the result cache's): the union is empty
    /// (`bits` is then not filled and `admitted` is empty).
    pub(crate) empty: bool,
    /// The union of the scans (prefilter bits and presence set), when
    /// [`fill_union`] filled it; a union none of whose values holds a trigger
    /// byte of the chain is the class's raw union, read in place, and this is
    /// then left as it was.
    pub(crate) bits: Vec<u64>,
    /// Per value, in resolution order: its slot and the memo offset of its scan
    /// (under a `multiMatch` chain, of the union of its intermediate values'
    /// scans; [`super::groups::NO_OFFSET`] when it is not in the memo).
    pub(crate) scans: Vec<(u32, u32)>,
    /// The prefilter bits of the class chain's rules that the union admits
    /// (literal found, byte requirement met), as (word, bits) pairs of the words
    /// with a bit.
    pub(crate) admitted: Vec<(u32, u64)>,
}

/// A class's values screened (see the module notes).
#[derive(Debug, Default, Clone)]
pub(crate) struct ClassValues {
    version: Option<u64>,
    /// The memo's clear count when made: the raw scans' offsets are valid while
    /// it stays the same (without the memo, it is cleared before every rule).
    memo_clears: u64,
    /// Every value is short enough to have its bytes collected, and none is the
    /// response body (scanned by the long-value automaton).
    screened: bool,
    /// The values without a result-cache entry (all without the cache): slot
    /// and memo offset of the raw scan (when screened; else
    /// [`super::groups::NO_OFFSET`]), in resolution order ...
    values: Vec<(u32, u32)>,
    /// ... and the bytes of each as trigger tests see them
    /// ([`triggers::trigger_view`]; when screened).
    bytes_of: Vec<ByteMask>,
    /// The union of their bytes.
    bytes: ByteMask,
    /// The union of their raw scans.
    raw: Vec<u64>,
}

/// One arena list's part of the result cache's settle (see
/// [`crate::classes::ListPlan`]): its cached values' maybe sets, each limited to
/// the rules of the pure classes holding it, and the pure classes holding a value
/// without an entry.
#[derive(Debug, Default, Clone)]
pub(crate) struct ListMaybe {
    version: Option<u64>,
    pub(crate) rules: Vec<u64>,
    /// No cached value: `rules` is empty.
    pub(crate) empty: bool,
    /// Classes (bit set by class index) holding a value without an entry.
    pub(crate) uncached: Vec<u64>,
}

impl HeapBytes for ListMaybe {
    fn heap_bytes(&self) -> usize {
        (self.rules.capacity() + self.uncached.capacity()) * 8
    }
}

impl HeapBytes for ClassUnion {
    fn heap_bytes(&self) -> usize {
        (self.bits.capacity() + self.scans.capacity() + 2 * self.admitted.capacity()) * 8
    }
}

impl HeapBytes for ClassValues {
    fn heap_bytes(&self) -> usize {
        self.values.capacity() * std::mem::size_of::<(u32, u32)>()
            + self.bytes_of.capacity() * std::mem::size_of::<ByteMask>()
            + self.raw.capacity() * 8
    }
}

impl Transaction {
    /// The version of a class's lists: it changes whenever one of them does.
    #[inline]
    fn class_version(&self, program: &crate::Program, class: u32) -> u64 {
        let lists = &program.classes.classes[class as usize].lists;
        let mut v = 0;
        for &l in lists {
            v = v.max(self.data.version(l));
        }
        v
    }

    /// Class chain `cc`'s union, when made for the current values.
    pub(crate) fn current_class_union(
        &self,
        program: &crate::Program,
        cc: u32,
    ) -> Option<&ClassUnion> {
        let u = self.work.class_unions.get(cc as usize)?;
        let class = program.classes.class_chains.get(cc as usize)?.class;
        (u.version == Some(self.class_version(program, class))).then_some(u)
    }

    /// Screens class `class`'s values for the current data (unless done);
    /// `version`: its lists' version.
    fn class_values(&mut self, program: &crate::Program, pf: &Prefilter, class: u32, version: u64) {
        let i = class as usize;
        let clears = self.work.memo.clears();
        if let Some(cv) = self.work.class_values.get(i) {
            if cv.version == Some(version) && cv.memo_clears == clears {
                return;
            }
        }
        let plan = &program.classes;
        let c = &plan.classes[i];
        let cache = program.options.value_cache && plan.class_pure[i];
        let body = self.data.response_body_slot();
        let words = pf.scan_words();
        let work = &mut self.work;
        let data = &mut self.data;
        let mut cv = work.class_values.edit(i);
        cv.version = Some(version);
        cv.memo_clears = clears;
        cv.values.clear();
        cv.bytes_of.clear();
        cv.bytes = [0; 4];
        cv.raw.clear();
        cv.raw.resize(words, 0);
        cv.screened = true;
        let memo = &mut work.memo;
        for &list in &c.lists {
            for k in 0..data.slots(list).len() {
                let slot = data.slots(list)[k];
                if let Some(key) = &c.key {
                    if !data.entry(slot).key.eq_ignore_ascii_case(key) {
                        continue;
                    }
                }
                if cache {
                    if data.cached(slot, &program.caches).is_some() {
                        continue;
                    }
                    let len = data.entry(slot).value.len();
                    data.add_cost(slot, crate::value_cache::scan_cost(len));
                }
                let base = &data.entry(slot).value;
                if !cv.screened || base.len() > super::memo::PRESENCE_MAX || Some(slot) == body {
                    cv.screened = false;
                    cv.values.push((slot, super::groups::NO_OFFSET));
                    cv.bytes_of.push([0; 4]);
                    continue;
                }
                // (The raw scan first: it collects the value's bytes, which the
                // chains' trigger tests need, when the memo does not have them.)
                let o = memo.scan_offset(pf, &program.chains, slot, 0, base, false);
                let bytes = triggers::trigger_view(*memo.presence(slot, base), base);
                for (u, b) in cv.raw.iter_mut().zip(memo.bits_at(o, words)) {
                    *u |= b;
                }
                for (u, b) in cv.bytes.iter_mut().zip(bytes) {
                    *u |= b;
                }
                let o = u32::try_from(o).unwrap_or(super::groups::NO_OFFSET);
                cv.values.push((slot, o));
                cv.bytes_of.push(bytes);
            }
        }
    }

    /// Screens class `class`'s values for the current data (unless done) and
    /// returns whether every one was screened and there is one: the class chains
    /// whose union is then the class's raw union are merged by
    /// [`raw_admitted_into`] without a union of their own (see
    /// `Transaction::admit_phase`).
    pub(crate) fn screen_class(
        &mut self,
        program: &crate::Program,
        pf: &Prefilter,
        class: u32,
    ) -> bool {
        let version = self.class_version(program, class);
        self.class_values(program, pf, class, version);
        self.work
            .class_values
            .get(class as usize)
            .is_some_and(|cv| cv.screened && !cv.values.is_empty())
    }

    /// The per-value scans of class chain `cc` when its union is the class's raw
    /// union for the current values (see [`Transaction::screen_class`]): the raw
    /// scans, in resolution order, as [`ClassUnion::scans`] would hold them.
    pub(crate) fn raw_class_scans(
        &self,
        program: &crate::Program,
        cc: u32,
    ) -> Option<&[(u32, u32)]> {
        let ch = program.classes.class_chains.get(cc as usize)?;
        let cv = self.work.class_values.get(ch.class as usize)?;
        let current = cv.version == Some(self.class_version(program, ch.class))
            && cv.memo_clears == self.work.memo.clears();
        (current && raw_union(program, cv, ch.chain)).then_some(&cv.values[..])
    }

    /// Makes class chain `cc`'s union for the current values (unless made).
    pub(crate) fn class_union(&mut self, program: &crate::Program, pf: &Prefilter, cc: u32) {
        let i = cc as usize;
        let generation = self.data.generation();
        let made = self
            .work
            .class_unions
            .get(i)
            .map(|u| (u.checked_at, u.version));
        if let Some((Some(checked_at), _)) = made {
            if checked_at == generation {
                return;
            }
        }
        let plan = &program.classes;
        let ch = plan.class_chains[i];
        let version = self.class_version(program, ch.class);
        if let Some((_, Some(v))) = made {
            if v == version {
                self.work
                    .class_unions
                    .set_flags(i, |u| u.checked_at = Some(generation));
                return;
            }
        }
        let class = &plan.classes[ch.class as usize];
        if class.lists.iter().all(|&l| self.data.slots(l).is_empty()) {
            // No value (an unset single-valued variable yields one empty value,
            // which is not in the arena).
            self.work.class_unions.set_flags(i, |u| {
                u.version = Some(version);
                u.checked_at = Some(generation);
                u.unknown = class.scalar;
                u.empty = true;
                u.scans.clear();
            });
            return;
        }
        self.class_values(program, pf, ch.class, version);
        // Disjoint parts of the work set: no value or union is moved out and back.
        let work = &mut self.work;
        let cv = &work.class_values[ch.class as usize];
        let mut edit = work.class_unions.edit(i);
        let u = &mut *edit;
        u.version = Some(version);
        u.checked_at = Some(generation);
        u.unknown = false;
        u.empty = cv.values.is_empty();
        u.scans.clear();
        u.admitted.clear();
        if u.empty {
            return;
        }
        let scratch = (&mut work.memo, &mut work.bits_buf);
        // The class's raw union, or the one filled in `u.bits`.
        let min_len = plan.cc_min_len.get(i).map_or(0, |&m| m as usize);
        let bits = match fill_union(scratch, &self.data, program, pf, (ch, min_len), cv, u) {
            Union::Raw => &cv.raw,
            Union::Filled => &u.bits,
        };
        u.admitted
            .extend(admitted_words(plan, pf, i, bits).filter(|&(_, a)| a != 0));
    }

    /// Makes list `li`'s part of the settle (see [`ListMaybe`]) for the current
    /// values (unless made): each value is looked up once, and a cached one adds
    /// its maybe set limited to the rules of the classes holding it.
    pub(crate) fn list_maybe(&mut self, program: &crate::Program, li: usize) {
        let plan = &program.classes;
        let Some(lp) = plan.lists.get(li) else {
            return;
        };
        let version = self.data.version(lp.var);
        if self.work.list_maybes.get(li).map(|m| m.version) == Some(Some(version)) {
            return;
        }
        let data = &mut self.data;
        let mut m = self.work.list_maybes.edit(li);
        m.version = Some(version);
        m.rules.clear();
        m.empty = true;
        m.uncached.clear();
        m.uncached.resize(plan.classes.len().div_ceil(64), 0);
        let m = &mut *m;
        let pick = |key: &[u8]| {
            let keyed = if lp.keyed.is_empty() {
                None
            } else {
                lp.keyed_plan(key)
            };
            match keyed {
                Some(kp) => Some((&kp.classes, &kp.rule_runs)),
                None if lp.all => Some((&lp.classes, &lp.rule_runs)),
                // No pure class holds the value.
                None => None,
            }
        };
        data.each_cached(
            lp.var,
            &program.caches,
            pick,
            |(classes, rules), cached| match cached {
                Some(e) => {
                    if m.empty {
                        m.empty = false;
                        m.rules.resize(plan.multi_rules.len(), 0);
                    }
                    e.maybe_into(&mut m.rules, rules);
                }
                None => or_into(&mut m.uncached, classes),
            },
        );
    }
}

/// Whether the union of class chain `chain` over the screened values `cv` is
/// their raw union: every value screened, one at least, none holding a scan
/// trigger byte of the chain (as [`fill_union`] finds).
#[inline]
fn raw_union(program: &crate::Program, cv: &ClassValues, chain: crate::chains::ChainId) -> bool {
    cv.screened
        && !cv.values.is_empty()
        && program
            .chains
            .scan_triggers(chain)
            .is_some_and(|t| triggers::disjoint(t, &cv.bytes))
}

/// When class chain `cc`'s union is its class's raw union for the screened
/// values `values` (the class's, made current by [`Transaction::screen_class`]):
/// ORs the prefilter bits of the chain's rules that it admits into `into` (as
/// [`Transaction::class_union`] finds them) and returns true; otherwise false,
/// and `into` is as it was.
#[inline]
pub(crate) fn raw_admitted_into(
    program: &crate::Program,
    pf: &Prefilter,
    values: &Tracked<ClassValues>,
    cc: u32,
    into: &mut [u64],
) -> bool {
    let plan = &program.classes;
    let Some(ch) = plan.class_chains.get(cc as usize) else {
        return false;
    };
    let Some(cv) = values.get(ch.class as usize) else {
        return false;
    };
    if !raw_union(program, cv, ch.chain) {
        return false;
    }
    for (w, admitted) in admitted_words(plan, pf, cc as usize, &cv.raw) {
        if let Some(x) = into.get_mut(w as usize) {
            *x |= admitted;
        }
    }
    true
}

/// The prefilter bits of class chain `cc`'s rules that the union `bits` admits
/// (literal found, byte requirement met), as (word, bits) pairs over the words
/// of [`crate::classes::ClassPlan::cc_bits`] (a pair may hold no bit).
#[inline]
fn admitted_words<'a>(
    plan: &'a crate::classes::ClassPlan,
    pf: &'a Prefilter,
    cc: usize,
    bits: &'a [u64],
) -> impl Iterator<Item = (u32, u64)> + 'a {
    plan.cc_bits(cc).iter().map(move |&(w, m)| {
        let candidates = m & bits.get(w as usize).copied().unwrap_or(0);
        (w, pf.admitted_in(bits, w, candidates))
    })
}

/// Which union [`fill_union`] made.
enum Union {
    /// No value holds a scan trigger byte of the chain: the union is the class's
    /// raw union ([`ClassValues::raw`]), not copied.
    Raw,
    /// The union is in the class union's `bits`.
    Filled,
}

/// The union of a class chain over the screened values `cv` (not empty), with the
/// memo and a bits buffer of the work set. `min_len`: the class chain's
/// [`crate::classes::ClassPlan::cc_min_len`].
fn fill_union(
    (memo, value_bits_buf): (&mut TransformMemo, &mut Vec<u64>),
    data: &Data,
    program: &crate::Program,
    pf: &Prefilter,
    (ch, min_len): (crate::classes::ClassChain, usize),
    cv: &ClassValues,
    u: &mut ClassUnion,
) -> Union {
    let words = pf.scan_words();
    // A chain whose result's length a prefix of it bounds (`base64Decode` then
    // steps that never lengthen): a value whose bound is below every match of the
    // chain's rules is admitted by none of them, without running the chain; its
    // scan is an empty one (shared by such values). Under a `multiMatch` chain,
    // the intermediate values from `base64Decode` on are passed over so.
    let bounded = match min_len {
        0 => None,
        _ => program.chains.base64_bounded(ch.chain),
    };
    // Under a `multiMatch` chain bounded so: a value the chain before
    // `base64Decode` leaves as it is up to case (the empty chain, or none of its
    // scan trigger bytes held) and too short once decoded has the raw value's
    // scan as its union over the intermediate values (as `value_bits` finds),
    // which the union and its per-value scans already hold. `Some`: the scan
    // trigger bytes of the chain before `base64Decode` (none for the empty chain).
    let raw_when_short: Option<ByteMask> = match (ch.multi, bounded) {
        (true, Some(0)) => Some([0; 4]),
        (true, Some(before)) => program.chains.scan_triggers(before).copied(),
        _ => None,
    };
    let mut empty_scan: Option<u32> = None;
    let keep_scans = program.options.memo && !program.options.value_cache;
    let triggers = program.chains.scan_triggers(ch.chain).copied();
    // No value holds a scan trigger byte of the chain: the raw union. (Under a
    // `multiMatch` chain too: every intermediate value is the raw one up to
    // case, and so is its scan.)
    if raw_union(program, cv, ch.chain) {
        if keep_scans {
            u.scans.extend_from_slice(&cv.values);
        }
        return Union::Raw;
    }
    u.bits.clear();
    // Every value screened: the union starts from the raw union, which holds the
    // raw scan of each value, and the values with a trigger byte of the chain add
    // their scans under it. (Their raw scans stay in: a superset, which may keep
    // a rule, never skip one.)
    let screened = match (cv.screened, triggers) {
        (true, Some(t)) => {
            u.bits.extend_from_slice(&cv.raw);
            Some(t)
        }
        _ => {
            u.bits.resize(words, 0);
            None
        }
    };
    let body = data.response_body_slot();
    // The values' scans start as their raw ones (one copy), and those of the
    // values scanned under the chain are replaced.
    if keep_scans {
        u.scans.extend_from_slice(&cv.values);
    }
    let set_scan = |u: &mut ClassUnion, k: usize, o: u32| {
        if let Some(e) = u.scans.get_mut(k) {
            e.1 = o;
        }
    };
    let mut from = 0;
    loop {
        // The values lacking the chain's trigger bytes: their raw scans, in
        // already.
        let k = match screened {
            Some(t) => next_triggered(cv, &t, from),
            None => from,
        };
        let Some(&(slot, raw)) = cv.values.get(k) else {
            break;
        };
        from = k + 1;
        if let Some(before) = &raw_when_short {
            if raw != super::groups::NO_OFFSET
                && cv
                    .bytes_of
                    .get(k)
                    .is_some_and(|b| triggers::disjoint(before, b))
                && !crate::transform::base64_decode_reaches(&data.entry(slot).value, min_len)
            {
                or_into(&mut u.bits, memo.bits_at(raw as usize, words));
                continue;
            }
        }
        if ch.multi {
            let short = bounded.map(|before| (before, min_len));
            value_bits(
                memo,
                data,
                program,
                pf,
                (ch.chain, short),
                slot,
                value_bits_buf,
            );
            or_into(&mut u.bits, value_bits_buf);
            if keep_scans {
                // The value's union over its intermediate values: a rule it does
                // not admit is admitted by none of them.
                let o = memo.push_bits(value_bits_buf);
                set_scan(u, k, u32::try_from(o).unwrap_or(super::groups::NO_OFFSET));
            }
            continue;
        }
        let long = Some(slot) == body;
        let base = &data.entry(slot).value;
        if let (Some(before), false) = (bounded, long) {
            if memo.base64_bound(&program.chains, slot, before, base) < min_len {
                if keep_scans {
                    let o = *empty_scan.get_or_insert_with(|| {
                        value_bits_buf.clear();
                        value_bits_buf.resize(words, 0);
                        let o = memo.push_bits(value_bits_buf);
                        u32::try_from(o).unwrap_or(super::groups::NO_OFFSET)
                    });
                    set_scan(u, k, o);
                }
                continue;
            }
        }
        let o = memo.scan_offset(pf, &program.chains, slot, ch.chain, base, long);
        or_into(&mut u.bits, memo.bits_at(o, words));
        if keep_scans {
            set_scan(u, k, u32::try_from(o).unwrap_or(super::groups::NO_OFFSET));
        }
    }
    Union::Filled
}

/// The first of the screened values `cv` from index `from` on that holds a byte
/// of `triggers` or has no raw scan (`cv.values.len()`: none). In a loop of its
/// own: most values are passed over here.
#[inline(never)]
fn next_triggered(cv: &ClassValues, triggers: &ByteMask, from: usize) -> usize {
    let values = cv.values.get(from..).unwrap_or_default();
    let bytes = cv.bytes_of.get(from..).unwrap_or_default();
    let passed = values
        .iter()
        .zip(bytes)
        .take_while(|(&(_, raw), b)| {
            raw != super::groups::NO_OFFSET && triggers::disjoint(triggers, b)
        })
        .count();
    from + passed
}

/// The prefilter bits of one value of a `multiMatch` class chain: the union of
/// the scans of the value after every transformation of `chain` (each distinct
/// scan once: a transformation that leaves the value as it was shares its
/// parent's), into `out`. From a step that may change any value into any bytes
/// on (`base64Decode`: see [`crate::chains::ChainTable::opaque`]), the values
/// are walked without the memo ([`TransformMemo::walk_opaque`]), unless `short`
/// (the chain before `base64Decode`, see
/// [`crate::chains::ChainTable::base64_bounded`], and the class chain's
/// [`crate::classes::ClassPlan::cc_min_len`]) shows them all shorter than any
/// match of the chain's rules.
fn value_bits(
    memo: &mut TransformMemo,
    data: &Data,
    program: &crate::Program,
    pf: &Prefilter,
    (mut chain, short): (
        crate::chains::ChainId,
        Option<(crate::chains::ChainId, usize)>,
    ),
    slot: u32,
    out: &mut Vec<u64>,
) {
    out.clear();
    let words = pf.scan_words();
    out.resize(words, 0);
    let long = data.response_body_slot() == Some(slot);
    let base = &data.entry(slot).value;
    if !long {
        if let Some(opaque) = program.chains.opaque(chain) {
            let passed = short.is_some_and(|(before, min_len)| {
                before == opaque.0
                    && memo.base64_bound(&program.chains, slot, before, base) < min_len
            });
            if !passed {
                memo.walk_opaque(pf, &program.chains, slot, opaque, base, out);
            }
            chain = opaque.0;
        }
    }
    let mut last = None;
    loop {
        // A chain that changes the value at most in case does so at every
        // prefix: the raw value's scan stands for them all.
        let unchanged = memo.scan_unchanged(&program.chains, slot, chain, base);
        let scanned = if unchanged { 0 } else { chain };
        let o = memo.scan_offset(pf, &program.chains, slot, scanned, base, long);
        if last != Some(o) {
            or_into(out, memo.bits_at(o, words));
            last = Some(o);
        }
        match program.chains.split_last(chain) {
            Some((parent, _)) if !unchanged => chain = parent,
            _ => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{next_triggered, ClassValues};
    use crate::transaction::groups::NO_OFFSET;
    use crate::transform::triggers;

    #[test]
    fn the_values_holding_a_trigger_byte_are_found_in_order() {
        let values: [&[u8]; 5] = [b"plain", b"a%20b", b"text", b"x+y", b"tail"];
        let mut cv = ClassValues::default();
        for (k, v) in values.iter().enumerate() {
            // The third value has no raw scan: it is never passed over.
            let raw = if k == 2 { NO_OFFSET } else { 10 * k as u32 };
            cv.values.push((k as u32, raw));
            cv.bytes_of.push(triggers::presence(v));
        }
        // A chain changing only values with `%`.
        let t = triggers::presence(b"%");
        let found: Vec<usize> = {
            let mut from = 0;
            let mut found = Vec::new();
            loop {
                let k = next_triggered(&cv, &t, from);
                if k >= cv.values.len() {
                    break found;
                }
                found.push(k);
                from = k + 1;
            }
        };
        assert_eq!(found, vec![1, 2]);
        // From past the end: none.
        assert_eq!(next_triggered(&cv, &t, 9), 9);
        // `%` or `+`: the fourth value too.
        let t = triggers::presence(b"%+");
        assert_eq!(next_triggered(&cv, &t, 3), 3);
        assert_eq!(next_triggered(&cv, &t, 4), 5);
    }
}
