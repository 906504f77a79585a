//! The target-set cache: the values a target list selects, less those its
//! exclusions name (`!REQUEST_COOKIES:/__utm/`), resolved once per transaction
//! while its variables stay the same, and shared by every rule with that list
//! and those exclusions ([`crate::rule::Rule::target_set`]).
//!
//! Most CRS rules name one of a few lists (`REQUEST_COOKIES|!REQUEST_COOKIES:/__utm/|
//! REQUEST_COOKIES_NAMES|ARGS_NAMES|ARGS|XML:/*`, ...), and a prefilter group union
//! and each evaluated rule would otherwise resolve them and test every key against
//! the exclusions again. Only lists of request data qualify (stored variables,
//! ARGS, ARGS_NAMES, XML; no counts), so a list's values change only when one of
//! the variables it reads does, which [`super::data::Data::version`] tracks
//! (`XML`'s version is the XML document's parsing): a resolution made in phase 1
//! serves phase 2 unless the body added to one of its variables. A resolution holding values that are not in the arena (an XPath
//! result, the empty value of an unset single-valued variable) is not kept: rules
//! with that list resolve it themselves, as without the cache.
//!
//! A rule reads the list in place ([`Transaction::take_targets`]): nothing is
//! copied or filtered per rule. A rule that `ctl` target removals select (941010
//! removes REQUEST_FILENAME from the XSS rules on most requests) reads a variant
//! of the list without what they take, made once per list, set of removals and
//! removals applying: the removals of a transaction only accumulate.

use super::data::Scratch;
use super::resolve::{Candidate, Src};
use super::Transaction;
use crate::rule::Rule;
use crate::variable::Var;

/// One target list's resolution.
#[derive(Debug, Default, Clone)]
pub(crate) struct TargetSetCache {
    /// The version of its variables it was made for (`None`: never; see
    /// [`Transaction::targets_version`]).
    generation: Option<u64>,
    /// The data generation at which it was last found current (no version to
    /// compute while it is the same).
    checked_at: Option<u64>,
    /// Whether every value is in the arena (else `cands` is not used).
    usable: bool,
    cands: Vec<Candidate>,
    /// The slots of the values the exclusions removed.
    excluded: Vec<u32>,
    /// What `ctl_cands` was made for (`None`: not made, or lent).
    ctl_key: Option<CtlKey>,
    /// `cands` less the values the `ctl` target removals of `ctl_key` take.
    ctl_cands: Vec<Candidate>,
    /// `excluded` and the slots of the values those removals took.
    ctl_excluded: Vec<u32>,
}

/// The `ctl` target removals a list variant leaves out: those applying to a
/// rule (`applicable`: bits over the transaction's removals by id, then by tag)
/// among the first `entries`, from the list made for `generation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CtlKey {
    generation: u64,
    entries: u32,
    applicable: u64,
}

impl super::tracked::HeapBytes for TargetSetCache {
    fn heap_bytes(&self) -> usize {
        list_bytes(&self.cands, &self.excluded) + list_bytes(&self.ctl_cands, &self.ctl_excluded)
    }
}

/// Which `ctl` target removals of a transaction apply to a rule (see
/// [`Transaction::ctl_removals_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CtlRemovals {
    /// None does.
    None,
    /// Those with these bits among the first `entries` removals by id, then by
    /// tag.
    Some { entries: u32, applicable: u64 },
    /// A removal by message may (its message is expanded per evaluation), or
    /// there are more than 64: resolved per rule.
    Other,
}

/// Whether a target variable's values are request data alone (see the module
/// notes).
pub(crate) fn request_data_only(var: Var) -> bool {
    matches!(var, Var::Args | Var::ArgsNames | Var::Xml) || super::resolve::is_stored(var)
}

impl Transaction {
    /// The version of the values `rule`'s targets (request data alone) select: it
    /// changes whenever the list of one of their variables does.
    fn targets_version(&self, rule: &Rule) -> u64 {
        let mut v = 0;
        for t in &rule.targets {
            v = v.max(match t.var {
                Var::Args => self
                    .data
                    .version(Var::ArgsGet)
                    .max(self.data.version(Var::ArgsPost)),
                Var::ArgsNames => self
                    .data
                    .version(Var::ArgsGetNames)
                    .max(self.data.version(Var::ArgsPostNames)),
                var => self.data.version(var),
            });
        }
        v
    }

    /// Makes the rule's target-set cache entry `ts` for the current values
    /// (unless made).
    fn make_target_set(&mut self, rule: &Rule, ts: u32) {
        let i = ts as usize;
        let now = self.data.generation();
        if let Some(entry) = self.work.target_sets.get(i) {
            if entry.checked_at == Some(now) && entry.generation.is_some() {
                return;
            }
        }
        let generation = self.targets_version(rule);
        let current = self.work.target_sets.set_flags(i, |e| {
            e.checked_at = Some(now);
            e.generation == Some(generation)
        });
        if current {
            return;
        }
        // Both lists taken out in one edit (their bytes leave the entry with
        // them and come back with the edit below).
        let (mut cands, mut excluded) = {
            let mut e = self.work.target_sets.edit(i);
            (
                std::mem::take(&mut e.cands),
                std::mem::take(&mut e.excluded),
            )
        };
        cands.clear();
        excluded.clear();
        let mut scratch = Scratch::default();
        for spec in &rule.targets {
            self.collect(spec, rule, &mut scratch, &mut cands);
        }
        let usable = cands.iter().all(|c| matches!(c.src, Src::Slot(_)));
        if usable && !rule.exclusions.is_empty() {
            // Every rule of the set has these exclusions (they are part of its
            // key): applied once here.
            cands.retain(|c| {
                let key = &self.entry_of(c, &[]).key;
                let out = rule.exclusions.iter().any(|e| e.excludes(c.var, key));
                if let (true, Src::Slot(slot)) = (out, c.src) {
                    excluded.push(slot);
                }
                !out
            });
        }
        let mut entry = self.work.target_sets.edit(i);
        entry.excluded = excluded;
        entry.usable = usable;
        entry.generation = Some(generation);
        entry.cands = cands;
    }

    /// Appends the values `rule`'s targets select, less those its own exclusions
    /// name, from the target-set cache when the rule has a set whose resolution is
    /// usable; returns whether it did (else nothing was appended).
    pub(crate) fn cached_targets(&mut self, rule: &Rule, out: &mut Vec<Candidate>) -> bool {
        let Some(ts) = rule.target_set else {
            return false;
        };
        self.make_target_set(rule, ts);
        let entry = &self.work.target_sets[ts as usize];
        if entry.usable {
            out.extend_from_slice(&entry.cands);
        }
        entry.usable
    }

    /// The `ctl` target removals of this transaction that apply to `rule`.
    pub(crate) fn ctl_removals_for(&self, rule: &Rule) -> CtlRemovals {
        let s = &self.state;
        if !s.removed_targets_by_msg.is_empty() && rule.meta.msg.is_some() {
            return CtlRemovals::Other;
        }
        let entries = s.removed_targets_by_id.len() + s.removed_targets_by_tag.len();
        if entries == 0 {
            return CtlRemovals::None;
        }
        if entries > 64 {
            return CtlRemovals::Other;
        }
        let mut applicable = 0u64;
        for (i, (ids, _)) in s.removed_targets_by_id.iter().enumerate() {
            if ids.iter().any(|r| r.contains(rule.chain_id)) {
                applicable |= 1 << i;
            }
        }
        let n = s.removed_targets_by_id.len();
        for (i, (t, _)) in s.removed_targets_by_tag.iter().enumerate() {
            if t.selects(rule) {
                applicable |= 1 << (n + i);
            }
        }
        if applicable == 0 {
            return CtlRemovals::None;
        }
        CtlRemovals::Some {
            entries: entries as u32,
            applicable,
        }
    }

    /// Takes the rule's cached list (as [`Transaction::cached_targets`] would
    /// append it), less what the `ctl` target removals `removals` take, out of the
    /// cache for the rule's evaluation, when usable; give it back with
    /// [`Transaction::give_targets`]. While taken, the list counts as not made, so
    /// a nested resolution would make it again.
    pub(crate) fn take_targets(
        &mut self,
        rule: &Rule,
        removals: CtlRemovals,
    ) -> Option<LentTargets> {
        let ts = rule.target_set?;
        self.make_target_set(rule, ts);
        let i = ts as usize;
        if !self.work.target_sets[i].usable {
            return None;
        }
        let (entries, applicable) = match removals {
            CtlRemovals::None => {
                let entry = self.work.target_sets.lending(i)?;
                let generation = entry.generation.take()?;
                return Some(LentTargets {
                    set: ts,
                    kind: Lent::All(generation),
                    cands: std::mem::take(&mut entry.cands),
                    excluded: std::mem::take(&mut entry.excluded),
                });
            }
            CtlRemovals::Some {
                entries,
                applicable,
            } => (entries, applicable),
            CtlRemovals::Other => return None,
        };
        let entry = &self.work.target_sets[i];
        let key = CtlKey {
            generation: entry.generation?,
            entries,
            applicable,
        };
        if entry.ctl_key != Some(key) {
            let mut edit = self.work.target_sets.edit(i);
            let cands = std::mem::take(&mut edit.cands);
            let mut kept = std::mem::take(&mut edit.ctl_cands);
            let mut excluded = std::mem::take(&mut edit.ctl_excluded);
            kept.clear();
            excluded.clone_from(&edit.excluded);
            drop(edit);
            // A removal names one variable: values of the others are kept
            // without looking at their keys.
            let named = self.removal_vars(applicable);
            for &c in &cands {
                if named.contains(&c.var)
                    && self.removed_by(applicable, c.var, &self.entry_of(&c, &[]).key)
                {
                    if let Src::Slot(slot) = c.src {
                        excluded.push(slot);
                    }
                    continue;
                }
                kept.push(c);
            }
            let mut entry = self.work.target_sets.edit(i);
            entry.cands = cands;
            entry.ctl_cands = kept;
            entry.ctl_excluded = excluded;
        }
        let entry = self.work.target_sets.lending(i)?;
        entry.ctl_key = None;
        Some(LentTargets {
            set: ts,
            kind: Lent::LessCtl(key),
            cands: std::mem::take(&mut entry.ctl_cands),
            excluded: std::mem::take(&mut entry.ctl_excluded),
        })
    }

    /// The `ctl` target removals `applicable` (bits over the removals by id, then
    /// by tag).
    fn removals(&self, applicable: u64) -> impl Iterator<Item = &crate::rule::Exclusion> {
        let by_id = self.state.removed_targets_by_id.iter().map(|(_, e)| e);
        let by_tag = self.state.removed_targets_by_tag.iter().map(|(_, e)| e);
        by_id
            .chain(by_tag)
            .enumerate()
            .take(64)
            .filter(move |(i, _)| applicable & (1 << i) != 0)
            .map(|(_, e)| e)
    }

    /// The variables the removals `applicable` name.
    fn removal_vars(&self, applicable: u64) -> Vec<Var> {
        let mut vars: Vec<Var> = self.removals(applicable).map(|e| e.var).collect();
        vars.dedup();
        vars
    }

    /// Whether one of the removals `applicable` takes the value of `var` with
    /// `key`.
    fn removed_by(&self, applicable: u64, var: Var, key: &[u8]) -> bool {
        self.removals(applicable).any(|e| e.excludes(var, key))
    }

    /// Returns a list [`Transaction::take_targets`] lent (unless it was made
    /// again meanwhile).
    pub(crate) fn give_targets(&mut self, lent: LentTargets) {
        let sets = &mut self.work.target_sets;
        let Some(entry) = sets.lending(lent.set as usize) else {
            return;
        };
        let (cands, excluded) = match lent.kind {
            Lent::All(generation) if entry.generation.is_none() => {
                entry.generation = Some(generation);
                (&mut entry.cands, &mut entry.excluded)
            }
            Lent::LessCtl(key) if entry.ctl_key.is_none() => {
                entry.ctl_key = Some(key);
                (&mut entry.ctl_cands, &mut entry.ctl_excluded)
            }
            // Made again meanwhile: the lent list is given up.
            _ => {
                sets.lent_dropped(list_bytes(&lent.cands, &lent.excluded));
                return;
            }
        };
        // (What it replaces is empty: it was taken out.)
        let replaced = (
            std::mem::replace(cands, lent.cands),
            std::mem::replace(excluded, lent.excluded),
        );
        sets.lent_dropped(list_bytes(&replaced.0, &replaced.1));
    }
}

/// The bytes one list's buffers (its values and excluded slots) hold, as
/// [`TargetSetCache`] counts them, in the entry or lent.
fn list_bytes(cands: &Vec<Candidate>, excluded: &Vec<u32>) -> usize {
    cands.capacity() * std::mem::size_of::<Candidate>()
        + excluded.capacity() * std::mem::size_of::<u32>()
}

/// Which of an entry's lists was lent.
#[derive(Debug, Clone, Copy)]
enum Lent {
    /// The list (made for this version).
    All(u64),
    /// The list less some `ctl` target removals.
    LessCtl(CtlKey),
}

/// A target-set cache entry's list, lent to one rule's evaluation.
#[derive(Debug)]
pub(crate) struct LentTargets {
    set: u32,
    kind: Lent,
    /// The values (all in the arena).
    pub cands: Vec<Candidate>,
    /// The slots of the values the exclusions (and `ctl` removals) took.
    pub excluded: Vec<u32>,
}
