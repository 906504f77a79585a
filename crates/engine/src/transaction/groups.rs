//! The prefilter's per-group unions: for a group of rules with the same targets and
//! transformation chain, the union of the prefilter's scan results over every value
//! the group inspects (for `multiMatch` rules, also every intermediate value after
//! each transformation). A rule whose required literals occur in none of them cannot
//! match, which one bit test tells — without resolving its targets or visiting its
//! values. The union is the OR of the group's class unions (see [`crate::classes`]
//! and [`super::classes`]), made once per group while the request data stay the
//! same (see [`super::data::Data::generation`]).
//!
//! Exclusions only remove values, so a union over the values before exclusions is a
//! superset: it may keep a rule that an exact union would skip, never the reverse.
//! Values that are not request data (counts, computed values) make the union
//! unknown, and the rule is evaluated as usual. Rules over collections that rules
//! write (TX, GEO, ...) have no group at all (see `Var::is_rule_state`): such a
//! member may not exist yet when the union is computed and appear later in the
//! same phase, with the request data (and so the union's generation) unchanged.
//!
//! With the Rule Result Cache, a value with a cache entry adds its maybe set
//! instead of its scan: a rule of the group may match when the union admits it or
//! the maybe set of one of its classes' values holds it. Every rule of a group
//! reads all of the group's classes, so for the group's rules the union of all
//! classes' maybe sets, each limited to the class's rules (`all_maybe`, made once
//! per epoch, each value visited once: see [`crate::classes::ListPlan`]), is the
//! union over the group's classes: one set serves every group. Pure rules
//! without literals (`@detectSQLi`, `@validateUtf8Encoding`, `@rx ^$`, ...) and
//! pure negated rules are in groups for this test alone: their gate's bit is
//! [`crate::step_gates::NO_BIT`], which every union admits.

use super::resolve::{Candidate, Src};
use super::Transaction;
use crate::prefilter::{or_into, BitTest, Prefilter};
use crate::rule::Rule;

/// Which prefiltered rules may match, for the current request data: the prefilter
/// bits the groups' class unions admit and, with the result cache, the rules the
/// cached values may match. Groups are merged in as their rules are reached (a
/// group behind a paranoia-level jump costs nothing), each class chain and class
/// once per data generation.
#[derive(Debug, Default, Clone)]
pub(crate) struct Admission {
    /// The data generation it is for (`None`: none).
    generation: Option<u64>,
    /// Bumped with the generation; stamps below equal to it are current.
    epoch: u64,
    /// Admitted prefilter bits.
    bits: Vec<u64>,
    /// Per group: the epoch it was merged in, and whether its union is unknown.
    groups: Vec<(u64, bool)>,
    /// Per class chain: the epoch its admitted bits were merged in.
    class_chains: Vec<u64>,
    /// Classes with a value in their lists (bits by class index).
    nonempty: Vec<u64>,
    /// Classes of unset single-valued variables (one empty value, not in the
    /// arena: their unions are unknown).
    unknown: Vec<u64>,
    /// With the result cache: the phase `uncached` and `all_maybe` are made for
    /// in this epoch (0: none). They hold the parts of the lists that phase's
    /// rules read (see [`crate::classes::ClassPlan::list_phases`]).
    settled: u8,
    /// Classes with a value that has no result-cache entry (or that are not
    /// pure).
    uncached: Vec<u64>,
    /// The union of every class's maybe set, each limited to the class's rules
    /// (rules by index).
    all_maybe: Vec<u64>,
    /// The lists' parts ORed into `all_maybe` and `list_uncached` in this
    /// transaction: per arena list of the plan, the version of the part (`None`:
    /// not in them). Settles add the parts of the lists that changed since.
    list_parts: Vec<Option<u64>>,
    /// The union of the lists' `uncached` classes over those parts.
    list_uncached: Vec<u64>,
    /// Per list of [`crate::classes::ClassPlan::keyed_lists`]: the version its
    /// part below was found for (`None`: not in this transaction) ...
    keyed_versions: Vec<Option<u64>>,
    /// ... and the keyed classes reading it whose key one of its values has
    /// (bits by class index).
    keyed_held: Vec<Vec<u64>>,
    /// The keyed classes no list holds a value of: taken out of `nonempty`.
    keyed_empty: Vec<u64>,
}

impl Admission {
    /// Marks it as not computed (keeping its buffers).
    pub(crate) fn forget(&mut self) {
        self.generation = None;
        self.list_parts.clear();
        self.keyed_versions.clear();
    }

    /// The epoch (bumped with each data generation it is made for).
    #[inline]
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// With the result cache, settled: whether the cached values cover a group
    /// that is `(unclassed, read through an XML document)` and reads the classes
    /// of `class_mask` — every value of them cached and known.
    #[inline]
    pub(crate) fn covers(
        &self,
        (unclassed, read_as_xml): (bool, bool),
        class_mask: &[u64],
    ) -> bool {
        !(unclassed || read_as_xml)
            && class_mask
                .iter()
                .zip(self.uncached.iter().zip(&self.unknown))
                .all(|(m, (u, k))| m & (u | k) == 0)
    }

    /// [`Admission::covers`] for every group of a phase's stop plan, in plan
    /// order, into `covered`: the classes that are uncached or unknown are ORed
    /// once, and with one mask word (CRS: 32 classes) a group costs one AND.
    pub(crate) fn covers_groups(
        &self,
        plan: &crate::step_stops::StopPlan,
        xml: bool,
        covered: &mut Vec<bool>,
    ) {
        let bad: smallvec::SmallVec<[u64; 2]> = self
            .uncached
            .iter()
            .zip(&self.unknown)
            .map(|(u, k)| u | k)
            .collect();
        let open = |g: &crate::step_stops::PhaseGroup| !(g.unclassed || (g.xml && xml));
        match (&bad[..], plan.single_word_masks()) {
            ([b], Some(masks)) => covered.extend(
                plan.groups
                    .iter()
                    .zip(masks)
                    .map(|(g, &m)| open(g) && m & b == 0),
            ),
            _ => covered.extend(plan.groups.iter().enumerate().map(|(k, g)| {
                open(g) && plan.group_mask(k).iter().zip(&bad).all(|(m, b)| m & b == 0)
            })),
        }
    }

    /// The admitted prefilter bits.
    #[inline]
    pub(crate) fn admitted_bits(&self) -> &[u64] {
        &self.bits
    }

    /// With the result cache, settled: the rules some class's maybe set holds.
    #[inline]
    pub(crate) fn maybe_rules(&self) -> &[u64] {
        &self.all_maybe
    }

    /// Heap bytes held (for the pool's size bound).
    pub(crate) fn capacity_bytes(&self) -> usize {
        (self.bits.capacity()
            + self.class_chains.capacity()
            + self.all_maybe.capacity()
            + self.uncached.capacity())
            * 8
            + self.groups.capacity() * 16
            + (self.nonempty.capacity() + self.unknown.capacity()) * 8
            + self.list_parts.capacity() * 16
            + (self.list_uncached.capacity() + self.keyed_empty.capacity()) * 8
            + self.keyed_versions.capacity() * 16
            + self
                .keyed_held
                .iter()
                .map(|h| 24 + h.capacity() * 8)
                .sum::<usize>()
    }
}

/// A value whose scan is not in the memo.
pub(crate) const NO_OFFSET: u32 = u32::MAX;

/// A group's per-value scans lent to one rule's evaluation (see
/// [`Transaction::take_value_scans`]).
pub(crate) struct ValueScans {
    scans: Vec<(u32, u32)>,
    /// What they are the scans of.
    of: LentFor,
}

/// A group's lent scans are made for: the group, the admission's epoch, the data
/// generation and the memo's clears (whose offsets they hold). Rules of one
/// group follow one another (CRS's files list a group's rules together), so
/// the next rule of the group usually takes the list as the last one gave it
/// back, instead of gathering it again from the class unions.
pub(crate) type LentFor = (u32, u64, u64, u64);

impl ValueScans {
    /// Pushes onto `kept` the candidates of `cands` (the rule's values, in
    /// order) that `test` does not pass over: every value without a known scan
    /// (in `bits`, the memo's scans) and every one whose scan it admits, in a
    /// loop of its own (its state stays in registers).
    #[inline(never)]
    pub(crate) fn keep_admitted(
        &self,
        cands: &[Candidate],
        bits: &[u64],
        test: &BitTest<'_>,
        kept: &mut Vec<Candidate>,
    ) {
        // Each candidate's scan is found by walking `scans` forward: the rule's
        // values are those of the group's classes in the same order, less the
        // ones key selectors and exclusions leave out. A value not found (one
        // the group did not have) or without a scan in the memo (one from the
        // result cache) is unknown: kept, never a guess. The walk's position
        // stays in a local (a register).
        let scans = &self.scans[..];
        let mut next = 0;
        for c in cands {
            if let (Src::Slot(slot), false) = (c.src, c.count) {
                let mut found = NO_OFFSET;
                // Usually the next scan is the value's: no loop then.
                match scans.get(next) {
                    Some(&(s, o)) if s == slot => {
                        next += 1;
                        found = o;
                    }
                    _ => {
                        while let Some(&(s, o)) = scans.get(next) {
                            next += 1;
                            if s == slot {
                                found = o;
                                break;
                            }
                        }
                    }
                }
                if found != NO_OFFSET && !test.admits_at(bits, found as usize) {
                    continue;
                }
            }
            kept.push(*c);
        }
    }
}

impl Transaction {
    /// Whether `rule` (with prefilter bit `bit` in group `group`) may match: false
    /// when none of its required literals occurs in any value of its group, or,
    /// with the result cache, when every value of its group's classes is cached
    /// and known not to match it (the only test for a rule without a bit,
    /// [`crate::step_gates::NO_BIT`]).
    pub(crate) fn group_may_match(
        &mut self,
        program: &crate::Program,
        pf: &Prefilter,
        rule: &Rule,
        group: u32,
        bit: u32,
    ) -> bool {
        self.refresh_admission(program, pf);
        if program.options.value_cache && self.cache_rules_out(program, rule.index, group) {
            return false;
        }
        self.group_admits(program, pf, rule.index, group, bit)
    }

    /// The second half of [`Transaction::group_may_match`]: whether group
    /// `group`'s unions (and, with the result cache, its classes' maybe sets)
    /// admit rule `index` with prefilter bit `bit`. The admission must be current
    /// (with the result cache, [`Transaction::cache_rules_out`] has settled it).
    #[inline]
    fn group_admits(
        &mut self,
        program: &crate::Program,
        pf: &Prefilter,
        index: crate::rule::RuleIdx,
        group: u32,
        bit: u32,
    ) -> bool {
        // In a group for the result cache's test alone: no union to ask.
        if bit == crate::step_gates::NO_BIT {
            return true;
        }
        if program.options.value_cache {
            self.settle_admission(program);
        }
        self.ensure_group_admitted(program, pf, group);
        let a = &self.work.admission;
        a.groups[group as usize].1
            || crate::prefilter::has(&a.bits, bit)
            || (program.options.value_cache && crate::prefilter::has(&a.all_maybe, index))
    }

    /// Merges group `group` into the admission unless done in this epoch (with
    /// the result cache, the admission is settled).
    #[inline]
    pub(super) fn ensure_group_admitted(
        &mut self,
        program: &crate::Program,
        pf: &Prefilter,
        group: u32,
    ) {
        let a = &mut self.work.admission;
        let g = group as usize;
        if a.groups.len() <= g {
            a.groups.resize(g + 1, (0, false));
        }
        if a.groups[g].0 != a.epoch {
            self.admit_group(program, pf, g);
        }
    }

    /// Settles the admission (see [`Transaction::settle`]) unless done in this
    /// epoch; it must be current.
    #[inline]
    pub(super) fn settle_admission(&mut self, program: &crate::Program) {
        let phase = self.phase_now();
        if self.work.admission.settled != phase {
            self.settle(program, phase);
        }
    }

    /// The phase running (the last one started).
    #[inline]
    fn phase_now(&self) -> u8 {
        (u8::BITS - self.phases_done.leading_zeros()) as u8
    }

    /// For the gated rule `idx` at step `i` of `phase` (see [`crate::step_gates`]):
    /// the step to go on from when its group's admission rules it out (as
    /// [`Transaction::group_may_match`] would find), `None` when it may match.
    /// With `bulk`, the steps after it that the loop would pass over with no
    /// effect but clearing MATCHED_VARS are passed over with it (see
    /// [`Transaction::pass_over`]); with the result cache, the rules of its run
    /// that the cached values rule out first (they share the class test: one bit
    /// test each). The rule loop asks before it reads the rule; no `ctl` may have
    /// removed rules, no `skip` be pending.
    pub(crate) fn gate_rejects(
        &mut self,
        program: &crate::Program,
        (phase, steps): (u8, &[crate::rule::Step]),
        (i, idx): (usize, crate::rule::RuleIdx),
        gate: crate::step_gates::Gate,
        bulk: bool,
    ) -> Option<usize> {
        let pf = program.prefilter.as_ref()?;
        self.refresh_admission(program, pf);
        let covered = program.options.value_cache && self.cache_covers(program, gate.group);
        let cached_out = covered && !crate::prefilter::has(&self.work.admission.all_maybe, idx);
        if !cached_out && self.group_admits(program, pf, idx, gate.group, gate.bit) {
            return None;
        }
        if !bulk {
            return Some(i + 1);
        }
        let run = (gate.end as usize, covered);
        Some(self.pass_over_in_run(program, (phase, steps), i + 1, run))
    }

    /// From step `j` of `phase`, the first step the rule loop would do more at
    /// than clear MATCHED_VARS: passes over gated rules their admissions rule out
    /// (each as [`Transaction::gate_rejects`] tests it alone), markers and
    /// load-time removals (no `skip` is pending) and the folded rules
    /// [`crate::step_gates::StepGates::pass`] gives (a folded match only outside
    /// an early exit's region, where a match may end the phase, and not at a
    /// rule a `ctl` removed, which the loop passes over itself). No rule is
    /// evaluated in between, so the request data stay as they are (the admission
    /// is brought to them once, at the first gated rule). The caller clears
    /// MATCHED_VARS.
    pub(crate) fn pass_over(
        &mut self,
        program: &crate::Program,
        (phase, steps): (u8, &[crate::rule::Step]),
        j: usize,
    ) -> usize {
        self.pass_over_in_run(program, (phase, steps), j, (0, false))
    }

    /// [`Transaction::pass_over`] from step `j`, which may lie inside a result-cache
    /// run (see [`crate::step_gates`]) whose class test is known: `run` is the
    /// run's end and whether the cached values cover its classes
    /// ([`Transaction::cache_covers`]; `(0, false)`: none known). Every rule of a
    /// run reads the same classes, so the test is made once per run, and each of
    /// its rules then costs the bit tests of the maybe set and its group's union.
    fn pass_over_in_run(
        &mut self,
        program: &crate::Program,
        (phase, steps): (u8, &[crate::rule::Step]),
        mut j: usize,
        mut run: (usize, bool),
    ) -> usize {
        let gates = program.step_gates.phase(phase);
        let cache = program.options.value_cache;
        let exit = program.ordering.early_exit[usize::from(phase - 1)].as_ref();
        // A pass may start at a folded rule, before any gated rule of the phase
        // brought the admission to the current data: its first gated rule does.
        let mut current = false;
        let removals = self.any_rule_removed();
        while let Some(&step) = steps.get(j) {
            if let crate::rule::Step::Rule(r) = step {
                if let Some(g) = gates.at(j) {
                    let Some(pf) = program.prefilter.as_ref() else {
                        break;
                    };
                    if !current {
                        self.refresh_admission(program, pf);
                        current = true;
                    }
                    if cache && j >= run.0 {
                        run = (g.end as usize, self.cache_covers(program, g.group));
                    }
                    if run.1 {
                        // The cached values cover the run: its rules no maybe
                        // set holds are passed over with one bit test each.
                        let all = &self.work.admission.all_maybe;
                        let from = j;
                        while j < run.0 {
                            match steps.get(j) {
                                Some(&crate::rule::Step::Rule(r))
                                    if crate::prefilter::has(all, r) =>
                                {
                                    break
                                }
                                Some(_) => j += 1,
                                None => break,
                            }
                        }
                        if j > from {
                            continue;
                        }
                    }
                    if self.group_admits(program, pf, r, g.group, g.bit) {
                        break;
                    }
                } else {
                    match gates.pass(j) {
                        Some(next) if next == j + 1 => {}
                        // A rule a `ctl` removed does not match: no jump (the
                        // loop passes over it at its removal test).
                        Some(_) if removals && self.removed_at(program, steps, j) => break,
                        Some(next) if exit.is_none_or(|e| !(e.from..e.target).contains(&j)) => {
                            j = next;
                            continue;
                        }
                        _ => break,
                    }
                }
            } else if let crate::rule::Step::Marker = step {
                j = gates.after_markers(j);
                continue;
            }
            j += 1;
        }
        j
    }

    /// Starts the admission afresh when the request data changed.
    #[inline]
    pub(super) fn refresh_admission(&mut self, program: &crate::Program, pf: &Prefilter) {
        let generation = self.data.generation();
        if self.work.admission.generation != Some(generation) {
            self.new_admission(program, pf, generation);
        }
    }

    #[inline(never)]
    fn new_admission(&mut self, program: &crate::Program, pf: &Prefilter, generation: u64) {
        let a = &mut self.work.admission;
        a.generation = Some(generation);
        a.epoch += 1;
        a.bits.clear();
        a.bits.resize(pf.words(), 0);
        let words = program.classes.classes.len().div_ceil(64);
        a.nonempty.clear();
        a.nonempty.resize(words, 0);
        a.unknown.clear();
        a.unknown.resize(words, 0);
        a.settled = 0;
        // A class has a value when one of its lists has; a scalar one without
        // any is unknown. One test per list, not per class and list.
        let plan = &program.classes;
        for (l, classes) in &plan.list_classes {
            if !self.data.slots(*l).is_empty() {
                or_into(&mut a.nonempty, classes);
            }
        }
        // (Not with the result cache: its settle finds the classes of a list's
        // values with their keys, and a group of classes without a value is
        // covered.)
        if !program.options.value_cache && !plan.keyed_lists.is_empty() {
            self.keyed_nonempty(program);
        }
        let a = &mut self.work.admission;
        for ((u, n), s) in a.unknown.iter_mut().zip(&a.nonempty).zip(&plan.scalar) {
            *u = s & !n;
        }
    }

    /// Takes the keyed classes without a value (see
    /// [`crate::classes::ClassPlan::keyed_mask`]) out of the admission's
    /// `nonempty`: a keyed class has a value when a value of its lists has the
    /// key, found per list when it changed (the request headers once), from one
    /// pass over its values.
    #[inline(never)]
    fn keyed_nonempty(&mut self, program: &crate::Program) {
        let plan = &program.classes;
        let words = plan.classes.len().div_ceil(64);
        let a = &mut self.work.admission;
        if a.keyed_versions.len() != plan.keyed_lists.len() {
            a.keyed_versions.clear();
            a.keyed_versions.resize(plan.keyed_lists.len(), None);
            a.keyed_held.resize_with(plan.keyed_lists.len(), Vec::new);
        }
        let mut changed = false;
        for (li, kl) in plan.keyed_lists.iter().enumerate() {
            let version = Some(self.data.version(kl.var));
            if a.keyed_versions[li] == version {
                continue;
            }
            a.keyed_versions[li] = version;
            changed = true;
            let held = &mut a.keyed_held[li];
            held.clear();
            held.resize(words, 0);
            for &s in self.data.slots(kl.var) {
                let key = &self.data.entry(s).key;
                for (c, k) in kl.of_len(key.len()) {
                    // (The first byte first: most keys of a length differ
                    // there.)
                    let first = |b: &[u8]| b.first().map(u8::to_ascii_lowercase);
                    if first(key) == first(k) && key.eq_ignore_ascii_case(k) {
                        held[*c as usize / 64] |= 1 << (c % 64);
                    }
                }
            }
        }
        if changed {
            a.keyed_empty.clear();
            a.keyed_empty.extend_from_slice(&plan.keyed_mask);
            for held in &a.keyed_held {
                for (e, h) in a.keyed_empty.iter_mut().zip(held) {
                    *e &= !h;
                }
            }
        }
        for (n, e) in a.nonempty.iter_mut().zip(&a.keyed_empty) {
            *n &= !e;
        }
    }

    /// With the result cache, most groups are ruled out before their unions: when
    /// every value of the group's classes is cached (and they are known), a rule
    /// no class's maybe set holds cannot match (the group's own maybe set is a
    /// subset of the union of all classes'; its scans, of no value). The
    /// admission must be current ([`Transaction::refresh_admission`]).
    #[inline]
    fn cache_rules_out(
        &mut self,
        program: &crate::Program,
        index: crate::rule::RuleIdx,
        group: u32,
    ) -> bool {
        self.settle_admission(program);
        !crate::prefilter::has(&self.work.admission.all_maybe, index)
            && self.cache_covers(program, group)
    }

    /// The part of [`Transaction::cache_rules_out`] that depends on the group's
    /// classes alone: whether every value of group `group`'s classes is cached
    /// and known (no class of it uncached, impure or unknown; not read through
    /// an XML document). Settles the admission first, which must be current.
    #[inline]
    fn cache_covers(&mut self, program: &crate::Program, group: u32) -> bool {
        self.settle_admission(program);
        let Some(gp) = program.classes.groups.get(group as usize) else {
            return false;
        };
        let xml = self.xml.is_some() || self.xml_failed;
        self.work
            .admission
            .covers((gp.unclassed, gp.xml && xml), &gp.class_mask)
    }

    /// Makes the admission's `uncached` classes and `all_maybe` rules for this
    /// epoch and `phase`: the classes with a value that are not pure, and the
    /// parts of every list with a value that a rule of the phase reads (see
    /// [`crate::classes::ListPlan`]), which is, for the phase's rules, the union
    /// of every class's maybe set limited to its rules, each value visited once.
    /// (A phase's rules are in groups of that phase, whose classes' lists are the
    /// phase's: the parts of other lists could only add rules of other phases. A
    /// proxy's response phases, which may run with a work set another request
    /// left, so look up no request value.)
    ///
    /// The lists' parts accumulate over the transaction's epochs: a settle adds
    /// the parts of the lists whose version changed since they were added (phase
    /// 2 adds the request body's lists; the header lists' parts stay). A part
    /// left from an earlier version of a list keeps rules or classes its values
    /// may no longer have: the sets are then larger than exact ones, which can
    /// only send more rules to their unions and evaluation, never rule one out.
    #[inline(never)]
    fn settle(&mut self, program: &crate::Program, phase: u8) {
        let plan = &program.classes;
        let a = &mut self.work.admission;
        if a.list_parts.is_empty() {
            a.list_parts.resize(plan.lists.len(), None);
            a.list_uncached.clear();
            a.list_uncached.resize(plan.classes.len().div_ceil(64), 0);
            a.all_maybe.clear();
            a.all_maybe.resize(plan.multi_rules.len(), 0);
        }
        for &li in plan.lists_in_phase(phase) {
            let li = li as usize;
            let Some(lp) = plan.lists.get(li) else {
                continue;
            };
            if self.data.slots(lp.var).is_empty() {
                continue;
            }
            let version = Some(self.data.version(lp.var));
            if self.work.admission.list_parts.get(li) == Some(&version) {
                continue;
            }
            self.list_maybe(program, li);
            let a = &mut self.work.admission;
            let Some(m) = self.work.list_maybes.get(li) else {
                continue;
            };
            or_into(&mut a.list_uncached, &m.uncached);
            if !m.empty {
                or_into(&mut a.all_maybe, &m.rules);
            }
            if let Some(p) = a.list_parts.get_mut(li) {
                *p = version;
            }
        }
        let a = &mut self.work.admission;
        a.uncached.clear();
        a.uncached.extend(
            a.nonempty
                .iter()
                .zip(&plan.impure)
                .zip(&a.list_uncached)
                .map(|((n, i), l)| (n & i) | l),
        );
        a.settled = phase;
    }

    /// Merges group `g`'s class chains (and, with the result cache, classes) into
    /// the admission, making their unions first where needed.
    fn admit_group(&mut self, program: &crate::Program, pf: &Prefilter, g: usize) {
        let plan = &program.classes;
        let epoch = self.work.admission.epoch;
        let Some(gp) = plan.groups.get(g) else {
            self.work.admission.groups[g] = (epoch, true);
            return;
        };
        let mut unknown = self.plan_unknown(gp);
        // No class of the group has a value: nothing to merge.
        let any = gp
            .class_mask
            .iter()
            .zip(&self.work.admission.nonempty)
            .any(|(m, n)| m & n != 0);
        if !unknown && any {
            for &cc in &gp.class_chains {
                if !self.merge_class_chain(program, pf, cc) {
                    unknown = true;
                    break;
                }
            }
        }
        self.work.admission.groups[g] = (epoch, unknown);
    }

    /// Whether a group's union is unknown in this epoch whatever its classes'
    /// unions: a target is not an arena list, reads an XML document (there is
    /// one, or the XML processor failed) or an unset single-valued variable.
    #[inline]
    fn plan_unknown(&self, gp: &crate::classes::GroupPlan) -> bool {
        gp.unclassed
            || (gp.xml && (self.xml.is_some() || self.xml_failed))
            || gp
                .class_mask
                .iter()
                .zip(&self.work.admission.unknown)
                .any(|(m, u)| m & u != 0)
    }

    /// Merges class chain `cc`'s admitted bits into the admission unless done in
    /// this epoch, making its union first where needed; false when the union is
    /// unknown. A class without a value adds nothing, nor, with the result cache
    /// (settled: see `group_admits`), does one whose values all have entries: it
    /// adds its maybe sets (`all_maybe`), and its union, over no value, is empty.
    #[inline(always)]
    fn merge_class_chain(&mut self, program: &crate::Program, pf: &Prefilter, cc: u32) -> bool {
        let a = &self.work.admission;
        let i = cc as usize;
        if a.class_chains.get(i) == Some(&a.epoch) {
            return true;
        }
        let class = program.classes.class_chains[i].class as usize;
        let (w, bit) = (class / 64, 1 << (class % 64));
        let cached = program.options.value_cache && a.settled == self.phase_now();
        if a.nonempty[w] & bit == 0 || (cached && a.uncached[w] & bit == 0) {
            return true;
        }
        self.class_union(program, pf, cc);
        let cu = &self.work.class_unions[i];
        if cu.unknown {
            return false;
        }
        if cu.empty {
            return true;
        }
        let a = &mut self.work.admission;
        if a.class_chains.len() <= i {
            a.class_chains.resize(i + 1, 0);
        }
        a.class_chains[i] = a.epoch;
        for &(w, m) in &cu.admitted {
            if let Some(x) = a.bits.get_mut(w as usize) {
                *x |= m;
            }
        }
        true
    }

    /// [`Transaction::merge_class_chain`] for a class chain whose union is its
    /// class's raw union (the class screened by [`Transaction::screen_class`]):
    /// its admitted bits are merged from the raw union in place. False (nothing
    /// merged) when its union is not the raw one.
    #[inline]
    fn merge_raw_class_chain(&mut self, program: &crate::Program, pf: &Prefilter, cc: u32) -> bool {
        let i = cc as usize;
        let work = &mut self.work;
        let a = &mut work.admission;
        if a.class_chains.get(i) == Some(&a.epoch) {
            return true;
        }
        if !super::classes::raw_admitted_into(program, pf, &work.class_values, cc, &mut a.bits) {
            return false;
        }
        if a.class_chains.len() <= i {
            a.class_chains.resize(i + 1, 0);
        }
        a.class_chains[i] = a.epoch;
        true
    }

    /// Merges the groups of a phase's stop plan with a gated step with a
    /// prefilter bit and not covered by the cached values (`covered`, by
    /// position), as [`Transaction::ensure_group_admitted`] on each would, but
    /// visiting each class chain once (see
    /// [`crate::step_stops::StopPlan::class_chains`]) instead of once per group
    /// holding it.
    ///
    /// Every class chain of such a group that is known is merged, so the group
    /// is merged when its union is known. The chains of groups that are not
    /// (XML, an unset single-valued variable) are merged as well, except those
    /// only XML groups hold when their unions are unknown: their admitted bits
    /// are those of rules reading them, which a merge of a known group holding
    /// them would add, or of rules of unknown groups, which are evaluated
    /// anyway. More bits may only keep a rule, never skip one. A union that is
    /// itself unknown (never, for a class with a value) falls back to the
    /// groups one by one.
    ///
    /// With the result cache, a class whose values all have entries is passed
    /// over with one test, as a class without a value: its unions are not made
    /// (the class's maybe sets stand in for them), and every group holding it
    /// that it does not cover holds another class that has such a value.
    ///
    /// Sets in the stop mask `mask` the steps of each group not covered whose
    /// union is unknown, and of the others their steps without a prefilter bit
    /// (the admitted bits set the rest: see `Transaction::make_stops`). When
    /// every class chain was merged, only the groups the plan lists as able to
    /// mark steps are visited, and none is stamped (see
    /// [`Transaction::mark_known_groups`]); otherwise every group is merged and
    /// stamped in turn.
    pub(super) fn admit_phase(
        &mut self,
        program: &crate::Program,
        pf: &Prefilter,
        plan: &crate::step_stops::StopPlan,
        covered: &[bool],
        mask: &mut [u64],
    ) {
        let xml = self.xml.is_some() || self.xml_failed;
        // Whether every class chain was merged (`false`: group by group).
        let mut known = true;
        // With the result cache (settled by `make_stops`), a class whose values
        // all have entries adds nothing either (as `merge_class_chain` finds).
        let cached = program.options.value_cache && self.work.admission.settled == self.phase_now();
        'classes: for &(class, start, end) in &plan.class_runs {
            // A class without a value adds nothing (as `merge_class_chain`
            // finds; tested here first, once per class).
            let a = &self.work.admission;
            if !crate::prefilter::has(&a.nonempty, class)
                || (cached && !crate::prefilter::has(&a.uncached, class))
            {
                continue;
            }
            let chains = plan.class_chains.get(start as usize..end as usize);
            // Every value screened: the chains none of whose trigger bytes a value
            // holds have the class's raw union, whose admitted bits are worked out
            // in place, without a union of their own.
            let screened = self.screen_class(program, pf, class);
            for &(cc, _, xml_only) in chains.unwrap_or_default() {
                if xml && xml_only {
                    continue;
                }
                if screened && self.merge_raw_class_chain(program, pf, cc) {
                    continue;
                }
                if !self.merge_class_chain(program, pf, cc) {
                    known = false;
                    break 'classes;
                }
            }
        }
        if known {
            self.mark_known_groups(plan, covered, xml, mask);
            #[cfg(debug_assertions)]
            self.check_known_marks(program, plan, covered, mask);
        } else {
            self.stamp_groups(program, pf, plan, covered, mask);
        }
    }

    /// The marks of [`Transaction::admit_phase`] when every class chain was
    /// merged, from the plan's lists of the groups that may mark steps: those
    /// with gated steps without a prefilter bit, and the groups with a bit
    /// whose union is unknown (unclassed, reading `XML` when there is a
    /// document, or reading a class that is unknown). The others mark nothing
    /// and are not visited; they are not stamped either: a rule's group test
    /// merges its group then (`Transaction::admit_group`, which finds every
    /// chain merged and the union unknown exactly when a list here holds the
    /// group).
    #[inline]
    fn mark_known_groups(
        &self,
        plan: &crate::step_stops::StopPlan,
        covered: &[bool],
        xml: bool,
        mask: &mut [u64],
    ) {
        let open = |k: u32| !covered.get(k as usize).copied().unwrap_or(false);
        let mut mark = |k: u32, all: bool| {
            if let Some(pg) = plan.group_at(k) {
                plan.mark_group(pg, all, mask);
            }
        };
        for &k in &plan.nobit_groups {
            if open(k) {
                mark(k, false);
            }
        }
        for &k in &plan.unclassed_groups {
            if open(k) {
                mark(k, true);
            }
        }
        if xml {
            for &k in &plan.xml_groups {
                if open(k) {
                    mark(k, true);
                }
            }
        }
        for (w, &word) in self.work.admission.unknown.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                let class = w * 64 + word.trailing_zeros() as usize;
                word &= word - 1;
                for &k in plan.class_groups(class) {
                    if open(k) {
                        mark(k, true);
                    }
                }
            }
        }
    }

    /// Checks the marks of [`Transaction::mark_known_groups`] against the
    /// groups one by one, each group's union unknown as `plan_unknown` finds
    /// (debug builds; nothing is stamped).
    #[cfg(debug_assertions)]
    fn check_known_marks(
        &self,
        program: &crate::Program,
        plan: &crate::step_stops::StopPlan,
        covered: &[bool],
        mask: &[u64],
    ) {
        let mut each = vec![0u64; mask.len()];
        for (pg, &c) in plan.groups.iter().zip(covered) {
            if c {
                continue;
            }
            let unknown = plan.has_bits(pg)
                && program
                    .classes
                    .groups
                    .get(pg.group as usize)
                    .is_none_or(|gp| self.plan_unknown(gp));
            if unknown || plan.has_nobit(pg) {
                plan.mark_group(pg, unknown, &mut each);
            }
        }
        // The mask holds the plan's fixed steps and the groups' marks.
        let expected: Vec<u64> = each
            .iter()
            .zip(plan.fixed.iter().chain(std::iter::repeat(&0)))
            .map(|(e, f)| e | f)
            .collect();
        assert_eq!(mask, &expected[..], "the listed groups mark other steps");
    }

    /// The marks of [`Transaction::admit_phase`] group by group, each group
    /// with a prefilter bit merged and stamped (`admit_group`), when not every
    /// class chain could be merged.
    fn stamp_groups(
        &mut self,
        program: &crate::Program,
        pf: &Prefilter,
        plan: &crate::step_stops::StopPlan,
        covered: &[bool],
        mask: &mut [u64],
    ) {
        let epoch = self.work.admission.epoch;
        for (pg, &c) in plan.groups.iter().zip(covered) {
            if c {
                continue;
            }
            // Unknown: every gated rule stops; otherwise those without a bit
            // to test (the admitted bits add the others).
            let unknown = plan.has_bits(pg) && {
                let g = pg.group as usize;
                let a = &mut self.work.admission;
                match a.groups.get(g) {
                    Some(&(e, u)) if e == epoch => u,
                    _ => {
                        if a.groups.len() <= g {
                            a.groups.resize(g + 1, (0, false));
                        }
                        self.admit_group(program, pf, g);
                        self.work.admission.groups[g].1
                    }
                }
            };
            if unknown || plan.has_nobit(pg) {
                plan.mark_group(pg, unknown, mask);
            }
        }
    }

    /// Lends the per-value scans of `rule`'s group, computed for the current data,
    /// to the rule's evaluation: each value's prefilter test is then one bit test,
    /// without the memo's lookups (a rule over 80 JSON arguments admitted by the
    /// union tests 80 values). `None` without a computed, known union, when the
    /// memo is off (it is cleared per rule, and the offsets with it) or the result
    /// cache on (cached values have no scan in the memo).
    pub(crate) fn take_value_scans(
        &mut self,
        program: &crate::Program,
        rule: &Rule,
    ) -> Option<ValueScans> {
        if !program.options.memo || program.options.value_cache {
            return None;
        }
        let g = rule.prefilter_group? as usize;
        let a = &self.work.admission;
        match a.groups.get(g) {
            Some(&(epoch, false))
                if epoch == a.epoch && a.generation == Some(self.data.generation()) => {}
            _ => return None,
        }
        let of = (
            g as u32,
            a.epoch,
            self.data.generation(),
            self.work.memo.clears(),
        );
        let mut scans = std::mem::take(&mut self.work.lent_buf);
        if self.work.lent_for.take() == Some(of) {
            return Some(ValueScans { scans, of });
        }
        scans.clear();
        for &cc in &program.classes.groups.get(g)?.class_chains {
            // Only unions made for the current values: a class without a value
            // was passed over, and its union may be an earlier transaction's.
            if let Some(cu) = self.current_class_union(program, cc) {
                scans.extend_from_slice(&cu.scans);
            } else if let Some(raw) = self.raw_class_scans(program, cc) {
                // Merged from its class's raw union (`merge_raw_class_chain`).
                scans.extend_from_slice(raw);
            }
        }
        Some(ValueScans { scans, of })
    }

    /// Gives lent scans back, whole: the next rule of the group takes them as
    /// they are (see [`LentFor`]).
    pub(crate) fn give_value_scans(&mut self, lent: ValueScans) {
        self.work.lent_buf = lent.scans;
        self.work.lent_for = Some(lent.of);
    }
}

#[cfg(test)]
mod tests {
    use super::{ValueScans, NO_OFFSET};
    use crate::prefilter::{Prefilter, RuleTest};
    use crate::transaction::resolve::{Candidate, Src};
    use crate::variable::Var;

    fn lent(scans: &[(u32, u32)]) -> ValueScans {
        ValueScans {
            scans: scans.to_vec(),
            of: (0, 0, 0, 0),
        }
    }

    #[test]
    fn the_values_a_rules_test_passes_over_are_left_out_in_order() {
        let rule = RuleTest {
            bit: 0,
            literals: Some(vec![b"union".to_vec()]),
            bytes: None,
            escape: None,
            anchored: None,
            end: None,
        };
        let pf = Prefilter::build_tests(&[rule]).unwrap_or_else(|| panic!("prefilter"));
        // The memo's scans, one after the other: slot 3's admits the rule, slot
        // 5's does not.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        pf.scan(b"a UNION b", &mut a);
        pf.scan(b"plain", &mut b);
        let words = pf.scan_words() as u32;
        let bits: Vec<u64> = a.iter().chain(&b).copied().collect();
        let slot = |s: u32| Candidate {
            var: Var::ArgsGet,
            count: false,
            src: Src::Slot(s),
        };
        let cands = [
            slot(5),
            slot(3),
            // Not in the arena, a count, a value without a known scan and one
            // the group did not have: kept (the evaluation decides).
            Candidate {
                var: Var::Tx,
                count: false,
                src: Src::Scratch(0),
            },
            Candidate {
                count: true,
                ..slot(3)
            },
            slot(8),
            slot(5),
            slot(9),
        ];
        // The group's values: slot 7's is one the rule's lack (an exclusion
        // removed it), passed over by the walk; slot 5 comes twice.
        let l = lent(&[(5, words), (3, 0), (7, 0), (8, NO_OFFSET), (5, words)]);
        let mut kept = Vec::new();
        l.keep_admitted(&cands, &bits, &pf.bit_test(0), &mut kept);
        let got: Vec<(bool, Src)> = kept.iter().map(|c| (c.count, c.src)).collect();
        let want = [
            (false, Src::Slot(3)),
            (false, Src::Scratch(0)),
            (true, Src::Slot(3)),
            (false, Src::Slot(8)),
            (false, Src::Slot(9)),
        ];
        assert_eq!(got, want);
    }
}

#[cfg(test)]
mod keyed_tests {
    use std::sync::Arc;

    use crate::{Connection, Options, Program, Transaction};

    /// Rule 1 reads one header, rule 2 one argument (of the query string and
    /// the body), rule 3 every header.
    const RULES: &str = "SecRuleEngine On\n\
SecRule REQUEST_HEADERS:X-Probe \"@rx probe\" \"id:1,phase:1,deny,status:403\"\n\
SecRule ARGS:foo \"@rx evil\" \"id:2,phase:1,deny,status:403\"\n\
SecRule REQUEST_HEADERS \"@rx wicked\" \"id:3,phase:1,deny,status:403\"\n";

    /// Per rule 1, 2, 3: whether the admission finds a value in its class
    /// (without the result cache), and the request's status.
    fn held(options: &str, uri: &str, headers: &[(&str, &str)]) -> (Vec<bool>, u16) {
        let options = Options::parse(options).unwrap_or_else(|e| panic!("{e}"));
        let program =
            Program::from_str_with("k.conf", RULES, &options).unwrap_or_else(|e| panic!("{e}"));
        let mut tx = Transaction::new(Arc::clone(&program), &Connection::default());
        tx.process_uri(uri, "GET", "1.1");
        for (k, v) in headers {
            tx.add_request_header(k.as_bytes(), v.as_bytes());
        }
        let status = tx.process_request_headers().map_or(200, |i| i.status());
        let pf = program
            .prefilter
            .as_ref()
            .unwrap_or_else(|| panic!("prefilter"));
        tx.hold_work();
        tx.refresh_admission(&program, pf);
        let held = [1, 2, 3].map(|id| {
            let group = program
                .rules
                .iter()
                .find(|r| r.id == id)
                .and_then(|r| r.prefilter_group)
                .unwrap_or_else(|| panic!("rule {id} has no group"));
            let class = program.classes.groups[group as usize].classes[0];
            crate::prefilter::has(&tx.work.admission.nonempty, class)
        });
        (held.to_vec(), status)
    }

    #[test]
    fn a_keyed_class_has_a_value_only_when_a_value_has_its_key() {
        let options = "prune,memo,prefilter";
        // No X-Probe header, no argument foo (another one).
        assert_eq!(
            held(options, "/?bar=1", &[("Host", "h"), ("X-Prob", "probe")]),
            (vec![false, false, true], 200)
        );
        // The keys in another case: the classes hold them, and the rules
        // match them.
        assert_eq!(
            held(options, "/?FOO=1", &[("Host", "h"), ("x-PROBE", "probe")]),
            (vec![true, true, true], 403)
        );
        assert_eq!(
            held(options, "/?foo=evil", &[("Host", "h")]),
            (vec![false, true, true], 403)
        );
    }
}
