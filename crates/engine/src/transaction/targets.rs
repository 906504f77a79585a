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
use crate::prefilter::Prefilter;
use crate::rule::Rule;
use crate::transform::triggers::ByteMask;
use crate::variable::Var;

/// One target list's resolution.
#[derive(Debug, Default, Clone)]
pub(crate) struct TargetSetCache {
    /// The data generation it was made for (`None`: never).
    generation: Option<u64>,
    /// Whether every value is in the arena (else `cands` is not used).
    usable: bool,
    cands: Vec<Candidate>,
    /// The raw values' scans, for the group unions over this list (see
    /// [`Transaction::target_roots`]).
    pub(crate) roots: RawScans,
}

/// The raw values of a target list, screened once per data generation: the bytes
/// each holds, where its prefilter scan is, and the union of those scans. A group
/// over the list whose chain changes a value at most in case unless the value holds
/// one of the chain's scan trigger bytes (see
/// [`crate::chains::ChainTable::scan_triggers`]) takes the union as it is and scans
/// only the values holding one.
#[derive(Debug, Default, Clone)]
pub(crate) struct RawScans {
    /// The generation it was made for (`None`: never).
    generation: Option<u64>,
    /// Every value is in the arena and short enough to have its bytes collected.
    pub(crate) screened: bool,
    /// Per value, in the list's order: its bytes and the memo offset of its scan.
    pub(crate) values: Vec<(ByteMask, u32)>,
    /// The union of the values' bytes.
    pub(crate) bytes: ByteMask,
    /// The union of the values' scans.
    pub(crate) union: Vec<u64>,
}

impl TargetSetCache {
    /// Marks the resolution as not made (keeping its buffer).
    pub(crate) fn forget(&mut self) {
        self.generation = None;
        self.roots.generation = None;
    }

    /// Bytes held (for the pool's size bound).
    pub(crate) fn capacity_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.cands.capacity() * std::mem::size_of::<Candidate>()
            + self.roots.values.capacity() * std::mem::size_of::<(ByteMask, u32)>()
            + self.roots.union.capacity() * 8
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

    /// Screens the raw values of target set `ts` (resolved by
    /// [`Transaction::cached_targets`] for the current generation) once per
    /// generation: their bytes and scans (see [`RawScans`]). Not screened when a
    /// value is not in the arena, is the response body or is too long to have its
    /// bytes collected.
    pub(crate) fn target_roots(
        &mut self,
        ts: usize,
        pf: &Prefilter,
        chains: &crate::chains::ChainTable,
    ) {
        let generation = self.data.generation();
        let Some(entry) = self.target_sets.get_mut(ts) else {
            return;
        };
        if entry.roots.generation == Some(generation) {
            return;
        }
        let words = pf.scan_words();
        let roots = &mut entry.roots;
        roots.generation = Some(generation);
        roots.values.clear();
        roots.bytes = [0; 4];
        roots.union.clear();
        roots.union.resize(words, 0);
        roots.screened = entry.usable && entry.generation == Some(generation);
        let body = self.data.response_body_slot();
        for c in &entry.cands {
            if !roots.screened {
                break;
            }
            let Src::Slot(slot) = c.src else {
                roots.screened = false;
                break;
            };
            let base = &self.data.entry(slot).value;
            if base.len() > super::memo::PRESENCE_MAX || Some(slot) == body {
                roots.screened = false;
                break;
            }
            let bytes = *self.memo.presence(slot, base);
            let o = self.memo.scan_offset(pf, chains, slot, 0, base, false);
            for (u, b) in roots.union.iter_mut().zip(self.memo.bits_at(o, words)) {
                *u |= b;
            }
            for (u, b) in roots.bytes.iter_mut().zip(bytes) {
                *u |= b;
            }
            let Ok(o) = u32::try_from(o) else {
                roots.screened = false;
                break;
            };
            roots.values.push((bytes, o));
        }
    }
}
