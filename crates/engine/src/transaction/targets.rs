//! The target-set cache: the values a target list selects (before exclusions),
//! resolved once per transaction while the request data stay the same, and shared
//! by every rule with that list ([`crate::rule::Rule::target_set`]).
//!
//! Most CRS rules name one of a few lists (`REQUEST_COOKIES|REQUEST_COOKIES_NAMES|
//! ARGS_NAMES|ARGS|XML:/*`, ...), and a prefilter group union and each evaluated
//! rule would otherwise resolve them again. Only lists of request data qualify
//! (stored variables, ARGS, ARGS_NAMES, XML; no counts), so a list's values change
//! only with the data, which [`super::data::Data::generation`] tracks (the XML
//! document's parsing included). A resolution holding values that are not in the
//! arena (an XPath result, the empty value of an unset single-valued variable)
//! is not kept: rules with that list resolve it themselves, as without the cache.

use super::data::Scratch;
use super::resolve::{Candidate, Src};
use super::Transaction;
use crate::rule::Rule;
use crate::variable::Var;

/// One target list's resolution.
#[derive(Debug, Default, Clone)]
pub(crate) struct TargetSetCache {
    /// The data generation it was made for (`None`: never).
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
    /// Appends the values `rule`'s targets select (before exclusions), from the
    /// target-set cache when the rule has a set whose resolution is usable; returns
    /// whether it did (else nothing was appended).
    pub(crate) fn cached_targets(&mut self, rule: &Rule, out: &mut Vec<Candidate>) -> bool {
        let Some(ts) = rule.target_set else {
            return false;
        };
        let i = ts as usize;
        if self.target_sets.len() <= i {
            self.target_sets.resize_with(i + 1, TargetSetCache::default);
        }
        let generation = self.data.generation();
        if self.target_sets[i].generation != Some(generation) {
            let mut cands = std::mem::take(&mut self.target_sets[i].cands);
            cands.clear();
            let mut scratch = Scratch::default();
            for spec in &rule.targets {
                self.collect(spec, rule, &mut scratch, &mut cands);
            }
            let entry = &mut self.target_sets[i];
            entry.usable = cands.iter().all(|c| matches!(c.src, Src::Slot(_)));
            entry.generation = Some(generation);
            entry.cands = cands;
        }
        let entry = &self.target_sets[i];
        if entry.usable {
            out.extend_from_slice(&entry.cands);
        }
        entry.usable
    }
}
