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
//! A rule no `ctl` exclusion of the transaction applies to reads the list in place
//! ([`Transaction::take_targets`]): nothing is copied or filtered per rule.

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
    /// Whether every value is in the arena (else `cands` is not used).
    usable: bool,
    cands: Vec<Candidate>,
}

impl TargetSetCache {
    /// Marks the resolution as not made (keeping its buffer).
    pub(crate) fn forget(&mut self) {
        self.generation = None;
    }

    /// Bytes held (for the pool's size bound).
    pub(crate) fn capacity_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.cands.capacity() * std::mem::size_of::<Candidate>()
    }
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

    /// The rule's target-set cache entry, made for the current values.
    fn target_set_entry(&mut self, rule: &Rule, ts: u32) -> &mut TargetSetCache {
        let i = ts as usize;
        if self.target_sets.len() <= i {
            self.target_sets.resize_with(i + 1, TargetSetCache::default);
        }
        let generation = self.targets_version(rule);
        if self.target_sets[i].generation != Some(generation) {
            let mut cands = std::mem::take(&mut self.target_sets[i].cands);
            cands.clear();
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
                    !rule.exclusions.iter().any(|e| e.excludes(c.var, key))
                });
            }
            let entry = &mut self.target_sets[i];
            entry.usable = usable;
            entry.generation = Some(generation);
            entry.cands = cands;
        }
        &mut self.target_sets[i]
    }

    /// Appends the values `rule`'s targets select, less those its own exclusions
    /// name, from the target-set cache when the rule has a set whose resolution is
    /// usable; returns whether it did (else nothing was appended).
    pub(crate) fn cached_targets(&mut self, rule: &Rule, out: &mut Vec<Candidate>) -> bool {
        let Some(ts) = rule.target_set else {
            return false;
        };
        let entry = self.target_set_entry(rule, ts);
        if entry.usable {
            out.extend_from_slice(&entry.cands);
        }
        entry.usable
    }

    /// Takes the rule's cached list (as [`Transaction::cached_targets`] would
    /// append it) out of the cache for the rule's evaluation, when usable; give
    /// it back with [`Transaction::give_targets`]. While taken, the entry counts as
    /// not made, so a nested resolution would make it again.
    pub(crate) fn take_targets(&mut self, rule: &Rule) -> Option<LentTargets> {
        let ts = rule.target_set?;
        let entry = self.target_set_entry(rule, ts);
        if !entry.usable {
            return None;
        }
        let generation = entry.generation.take()?;
        Some(LentTargets {
            set: ts,
            generation,
            cands: std::mem::take(&mut entry.cands),
        })
    }

    /// Returns a list [`Transaction::take_targets`] lent (unless the entry was made
    /// again meanwhile).
    pub(crate) fn give_targets(&mut self, lent: LentTargets) {
        if let Some(entry) = self.target_sets.get_mut(lent.set as usize) {
            if entry.generation.is_none() {
                entry.generation = Some(lent.generation);
                entry.cands = lent.cands;
            }
        }
    }
}

/// A target-set cache entry's list, lent to one rule's evaluation.
#[derive(Debug)]
pub(crate) struct LentTargets {
    set: u32,
    generation: u64,
    /// The values (all in the arena).
    pub cands: Vec<Candidate>,
}
