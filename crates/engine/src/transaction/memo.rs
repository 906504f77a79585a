//! The per-transaction transformation memo: `(value slot, chain) -> result`. Chains
//! are interned as a trie, so a chain's result is computed from its parent's memoised
//! result: CRS chains sharing a prefix share the work.
//!
//! Results are found by one hash lookup of `(slot, chain)`. A transformation that
//! leaves its input unchanged stores nothing (the bytes are the parent's); changed
//! bytes live in buffers kept across [`TransformMemo::clear`], so a reused memo
//! allocates nothing once warm.
//!
//! A transformation is applied at most once per slot and input bytes: CRS chains
//! differ in steps that leave most values as they are (`utf8toUnicode` on ASCII,
//! `htmlEntityDecode` without `&`), so two chains often end in the same step on
//! the same bytes, and the second takes the first's result (its bytes and scan).
//!
//! The prefilter's scan of a transformed value is memoised too, with the chain
//! whose bytes it scans: chains that leave a value unchanged, or change only the
//! case of its ASCII letters (the prefilter matches ASCII case-insensitively),
//! share their parent's scan, and chains that reach the same bytes by the same
//! last step share that step's. For most benign values every chain shares the one
//! scan of the raw value. (Bytes equal by other paths are scanned again: finding
//! them by a hash of every scanned value cost more than the scans it saved.)

use crate::transform::triggers::{self, ByteMask};
use crate::transform::Transformation;
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;

use crate::chains::{ChainId, ChainTable};

/// Where the bytes of a `(slot, chain)` result are, which chain's bytes its
/// prefilter scan is keyed by, and where that scan is once made: one lookup
/// answers all three.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Link {
    /// Index of the buffer holding the bytes, or [`BASE`] for the untransformed value.
    bytes: u32,
    /// The nearest chain (itself or an ancestor, 0 for the raw value) whose bytes
    /// differ from its parent's other than in ASCII case.
    scan: ChainId,
    /// Offset of the scan in `TransformMemo::bits`, or [`UNSCANNED`] (not known
    /// here yet: the owner's entry may have it).
    bits: u32,
}

/// `Link::bytes` of the untransformed value.
const BASE: u32 = u32::MAX;
/// `Link::bits` of a result whose scan is not recorded in its entry.
const UNSCANNED: u32 = u32::MAX;
const ROOT: Link = Link {
    bytes: BASE,
    scan: 0,
    bits: UNSCANNED,
};

/// Slots whose links live in dense rows (one entry per chain); later slots (many
/// arguments, JSON documents) use a hash map, so memory stays proportional to the
/// results computed.
const DENSE_SLOTS: usize = 256;

/// Longest value whose bytes are collected to pass over chains that leave it
/// unchanged (see [`crate::transform::triggers`]).
pub(crate) const PRESENCE_MAX: usize = 2048;
/// `Link::bytes` of a row entry not computed yet, as stored: rows hold `bytes`
/// plus 2 (wrapping), so that [`BASE`] is 1 and an absent entry all zeros, and a
/// new row is filled by a memset.
const STORED_ABSENT: u32 = 0;

/// A link as a row stores it (see [`STORED_ABSENT`]).
#[inline]
fn stored(l: Link) -> Link {
    Link {
        bytes: l.bytes.wrapping_add(2),
        ..l
    }
}

/// A link as [`stored`] stored it.
#[inline]
fn unstored(l: Link) -> Link {
    Link {
        bytes: l.bytes.wrapping_sub(2),
        ..l
    }
}

/// `(slot, chain) -> Link`: a row per slot, indexed by chain id, for the first
/// [`DENSE_SLOTS`] slots (a lookup is two indexings, and a transaction's rows are
/// reset with one fill each), a hash map beyond.
#[derive(Debug, Default)]
struct LinkTable {
    /// Per slot: the start of its row in `entries`, or `u32::MAX` (no row).
    rows: Vec<u32>,
    entries: Vec<Link>,
    /// Row width: the number of chains, fixed by the first insertion after a clear.
    width: usize,
    spill: FxHashMap<(u32, ChainId), Link>,
}

impl LinkTable {
    fn clear(&mut self) {
        self.rows.clear();
        self.entries.clear();
        self.width = 0;
        self.spill.clear();
    }

    #[inline]
    fn row(&self, slot: u32) -> Option<usize> {
        match self.rows.get(slot as usize) {
            Some(&r) if r != u32::MAX => Some(r as usize),
            _ => None,
        }
    }

    #[inline]
    fn dense(&self, slot: u32, chain: ChainId) -> bool {
        (slot as usize) < DENSE_SLOTS && (chain as usize) < self.width
    }

    #[inline]
    fn get(&self, slot: u32, chain: ChainId) -> Option<Link> {
        if self.dense(slot, chain) {
            let r = self.row(slot)?;
            let l = self.entries[r + chain as usize];
            (l.bytes != STORED_ABSENT).then(|| unstored(l))
        } else {
            self.spill.get(&(slot, chain)).copied()
        }
    }

    #[inline]
    fn get_mut(&mut self, slot: u32, chain: ChainId) -> Option<&mut Link> {
        if self.dense(slot, chain) {
            let r = self.row(slot)?;
            // (Only `bits` is changed through it: `bytes` stays as stored.)
            Some(&mut self.entries[r + chain as usize]).filter(|l| l.bytes != STORED_ABSENT)
        } else {
            self.spill.get_mut(&(slot, chain))
        }
    }

    /// Inserts a link; `width` is the program's number of chains.
    fn insert(&mut self, width: usize, slot: u32, chain: ChainId, link: Link) {
        if self.width == 0 && self.entries.is_empty() {
            self.width = width;
        }
        if !self.dense(slot, chain) {
            self.spill.insert((slot, chain), link);
            return;
        }
        let r = match self.row(slot) {
            Some(r) => r,
            None => {
                let r = self.entries.len();
                // All zeros (a memset): an absent entry's other fields are never read.
                let absent = Link {
                    bytes: STORED_ABSENT,
                    scan: 0,
                    bits: 0,
                };
                self.entries.resize(r + self.width, absent);
                let i = slot as usize;
                if self.rows.len() <= i {
                    self.rows.resize(i + 1, u32::MAX);
                }
                self.rows[i] = r as u32;
                r
            }
        };
        self.entries[r + chain as usize] = stored(link);
    }

    fn capacity_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Link>()
            + self.spill.capacity() * std::mem::size_of::<((u32, ChainId), Link)>()
    }
}

/// Memoised transformation results of one transaction.
#[derive(Debug, Default)]
pub struct TransformMemo {
    index: LinkTable,
    /// Result buffers; those past `used` are spare, kept from before a `clear`.
    buffers: Vec<Vec<u8>>,
    used: usize,
    /// Per slot: the offset in `bits` of the raw value's scan, or [`UNSCANNED`]
    /// (the other chains' offsets are in their [`Link`]s).
    root_scans: Vec<u32>,
    /// Each transformation applied, by (slot, [`Link::bytes`] of its input,
    /// transformation) -> the chain whose link holds its result: equal inputs
    /// have equal results, so another chain ending in the same step on the same
    /// bytes takes that link instead of applying it again.
    applied: FxHashMap<(u32, u32, Transformation), ChainId>,
    bits: Vec<u64>,
    /// Per slot: the bytes of the raw value, once a chain was asked for it (a
    /// chain whose trigger bytes it lacks leaves it unchanged).
    presence: Vec<Option<ByteMask>>,
    /// Long-value scans of chains that only delete bytes (see
    /// [`crate::chains::ChainTable::deleted_bytes`]), by (slot, deleted bytes):
    /// offsets in `bits`, made without building the chain's result.
    deleting_scans: Vec<(u32, ByteMask, u32)>,
    /// Scratch buffers of [`TransformMemo::walk_opaque`]: two values.
    walk: (Vec<u8>, Vec<u8>),
    /// Bumped by every [`TransformMemo::clear`]: offsets into `bits` kept
    /// elsewhere are valid while it stays the same.
    clears: u64,
}

impl TransformMemo {
    /// The number of clears so far (see the field).
    #[inline]
    pub fn clears(&self) -> u64 {
        self.clears
    }

    /// The offset of the raw value's scan of `slot`, or [`UNSCANNED`].
    fn root_scan(&self, slot: u32) -> u32 {
        self.root_scans
            .get(slot as usize)
            .copied()
            .unwrap_or(UNSCANNED)
    }

    /// Records where the scan of `(slot, chain)`'s bytes is.
    fn record_scan(&mut self, slot: u32, chain: ChainId, offset: u32) {
        if chain == 0 {
            let i = slot as usize;
            if self.root_scans.len() <= i {
                self.root_scans.resize(i + 1, UNSCANNED);
            }
            self.root_scans[i] = offset;
        } else if let Some(l) = self.index.get_mut(slot, chain) {
            l.bits = offset;
        }
    }

    /// Forgets everything (keeping buffers for reuse).
    pub fn clear(&mut self) {
        self.clears = self.clears.wrapping_add(1);
        self.index.clear();
        self.used = 0;
        self.root_scans.clear();
        self.applied.clear();
        self.bits.clear();
        self.presence.clear();
        self.deleting_scans.clear();
    }

    /// Frees every result buffer larger than `max` bytes (see
    /// [`super::data::Data::trim`]) and returns the bytes still held.
    pub fn trim(&mut self, max: usize) -> usize {
        for b in self
            .buffers
            .iter_mut()
            .chain([&mut self.walk.0, &mut self.walk.1])
        {
            crate::buffers::shed(b, max);
        }
        self.capacity_bytes()
    }

    /// Bytes held by the result buffers (for the pool's size bound).
    pub fn capacity_bytes(&self) -> usize {
        self.buffers.iter().map(Vec::capacity).sum::<usize>()
            + self.walk.0.capacity()
            + self.walk.1.capacity()
            + self.bits.capacity() * 8
            + self.index.capacity_bytes()
            + self.presence.capacity() * std::mem::size_of::<Option<ByteMask>>()
            + self.applied.capacity() * std::mem::size_of::<((u32, u32, Transformation), ChainId)>()
    }

    #[inline]
    fn link(&self, slot: u32, chain: ChainId) -> Option<Link> {
        if chain == 0 {
            Some(ROOT)
        } else {
            self.index.get(slot, chain)
        }
    }

    fn bytes<'a>(&'a self, link: Link, base: &'a [u8]) -> &'a [u8] {
        match self.buffers.get(link.bytes as usize) {
            Some(b) if link.bytes != BASE => b,
            _ => base,
        }
    }

    /// The bytes of `slot`'s raw value `base`, computed once.
    pub(crate) fn presence(&mut self, slot: u32, base: &[u8]) -> &ByteMask {
        let i = slot as usize;
        if self.presence.len() <= i {
            self.presence.resize(i + 1, None);
        }
        self.presence[i].get_or_insert_with(|| triggers::presence(base))
    }

    /// Whether `chain` leaves `slot`'s raw value `base` as it is because the value
    /// holds none of the chain's trigger bytes (so do all the chain's prefixes).
    #[inline]
    pub(crate) fn unchanged(
        &mut self,
        chains: &ChainTable,
        slot: u32,
        chain: ChainId,
        base: &[u8],
    ) -> bool {
        self.lacks(chains.triggers(chain), slot, chain, base)
    }

    /// Whether `chain` changes `slot`'s raw value `base` at most in the case of its
    /// ASCII letters (see [`ChainTable::scan_triggers`]), so that the raw value's
    /// prefilter scan is the chain's (and its prefixes').
    #[inline]
    pub fn scan_unchanged(
        &mut self,
        chains: &ChainTable,
        slot: u32,
        chain: ChainId,
        base: &[u8],
    ) -> bool {
        self.lacks(chains.scan_triggers(chain), slot, chain, base)
    }

    /// Whether the raw value of `slot` holds none of the bytes of `set` (`None`:
    /// every byte). Not asked of the empty chain, nor of long values, response
    /// bodies: they hold nearly every byte.
    #[inline]
    fn lacks(&mut self, set: Option<&ByteMask>, slot: u32, chain: ChainId, base: &[u8]) -> bool {
        match set {
            Some(t) if chain != 0 && base.len() <= PRESENCE_MAX => {
                triggers::disjoint(t, &triggers::trigger_view(*self.presence(slot, base), base))
            }
            _ => false,
        }
    }

    /// Ensures `(slot, chain)` is computed, computing missing prefixes first.
    pub fn compute(&mut self, chains: &ChainTable, slot: u32, chain: ChainId, base: &[u8]) {
        if chain == 0 || self.index.get(slot, chain).is_some() {
            return;
        }
        // A chain none of whose trigger bytes the value holds: the raw value and
        // its scan, without running the chain or its prefixes.
        if self.unchanged(chains, slot, chain, base) {
            let link = Link {
                bits: self.root_scan(slot),
                ..ROOT
            };
            self.index.insert(chains.len(), slot, chain, link);
            return;
        }
        let Some((parent, t)) = chains.split_last(chain) else {
            return;
        };
        self.compute(chains, slot, parent, base);
        let plink = self.link(slot, parent).unwrap_or(ROOT);
        // The same transformation of the same bytes, reached by another chain
        // (CRS chains differ in steps that leave most values as they are): its
        // result, bytes and scan.
        match self.applied.entry((slot, plink.bytes, t)) {
            Entry::Occupied(e) => {
                if let Some(l) = self.index.get(slot, *e.get()) {
                    self.index.insert(chains.len(), slot, chain, l);
                    return;
                }
            }
            Entry::Vacant(e) => {
                e.insert(chain);
            }
        }
        if self.used == self.buffers.len() {
            self.buffers.push(Vec::new());
        }
        let mut out = std::mem::take(&mut self.buffers[self.used]);
        let input = self.bytes(plink, base);
        let link = if t.apply(input, &mut out) {
            let case_only = t.changes_only_case()
                || (out.len() == input.len() && out.eq_ignore_ascii_case(input));
            Some(Link {
                bytes: self.used as u32,
                scan: if case_only { plink.scan } else { chain },
                bits: UNSCANNED,
            })
        } else {
            None
        };
        self.buffers[self.used] = out;
        match link {
            Some(mut l) => {
                self.used += 1;
                if l.scan != chain {
                    // Same scan as the parent's: its offset, when already known.
                    l.bits = plink.bits;
                }
                self.index.insert(chains.len(), slot, chain, l);
            }
            // Unchanged: the parent's bytes and scan.
            None => {
                self.index.insert(chains.len(), slot, chain, plink);
            }
        }
    }

    /// Which bytes `(slot, chain)`'s result is: equal ids for a chain and its
    /// parent mean its last transformation left the value as it was (a
    /// `multiMatch` rule inspects a value again only after a change). Call
    /// [`TransformMemo::compute`] first.
    pub fn bytes_id(&self, slot: u32, chain: ChainId) -> u32 {
        self.link(slot, chain).map_or(BASE, |l| l.bytes)
    }

    /// The result for `(slot, chain)`; call [`TransformMemo::compute`] first.
    pub fn get<'a>(
        &'a self,
        chains: &ChainTable,
        slot: u32,
        mut chain: ChainId,
        base: &'a [u8],
    ) -> &'a [u8] {
        loop {
            if let Some(l) = self.link(slot, chain) {
                return self.bytes(l, base);
            }
            // Not computed (a caller error): the nearest computed ancestor.
            match chains.split_last(chain) {
                Some((parent, _)) => chain = parent,
                None => return base,
            }
        }
    }

    /// The prefilter's rule bits for `(slot, chain)` (computed first if needed),
    /// scanning each distinct byte string once. `long`: the slot is the
    /// long variable only the long-value automaton's rules read (see
    /// [`crate::prefilter::Prefilter::add_long`]).
    pub fn scan(
        &mut self,
        prefilter: &crate::prefilter::Prefilter,
        chains: &ChainTable,
        slot: u32,
        chain: ChainId,
        base: &[u8],
        long: bool,
    ) -> &[u64] {
        let o = self.scan_offset(prefilter, chains, slot, chain, base, long);
        self.bits_at(o, prefilter.scan_words())
    }

    /// The longest `(slot, before + base64Decode + ...)` result can be, for a
    /// chain that [`ChainTable::base64_bounded`] gives `before` of: the
    /// [`crate::transform::base64_decode_max_len`] of `before`'s result (computed, and
    /// memoised, first), without running the rest of the chain.
    pub(crate) fn base64_bound(
        &mut self,
        chains: &ChainTable,
        slot: u32,
        before: ChainId,
        base: &[u8],
    ) -> usize {
        self.compute(chains, slot, before, base);
        crate::transform::base64_decode_max_len(self.get(chains, slot, before, base))
    }

    /// Stores bits made elsewhere (a `multiMatch` value's union of scans, see
    /// `classes::value_bits`) beside the scans: their offset, for
    /// [`TransformMemo::bits_at`], valid until the memo is cleared.
    pub(crate) fn push_bits(&mut self, bits: &[u64]) -> usize {
        let o = self.bits.len();
        self.bits.extend_from_slice(bits);
        o
    }

    /// Every scan result, for offsets from [`TransformMemo::scan_offset`]
    /// (valid until the memo is cleared).
    #[inline]
    pub fn all_bits(&self) -> &[u64] {
        &self.bits
    }

    /// The scan result at `offset` (from [`TransformMemo::scan_offset`]), of `words`
    /// words; valid until the memo is cleared.
    #[inline]
    pub fn bits_at(&self, offset: usize, words: usize) -> &[u64] {
        &self.bits[offset..offset + words]
    }

    /// As [`TransformMemo::scan`], the result's offset (see
    /// [`TransformMemo::bits_at`]).
    pub fn scan_offset(
        &mut self,
        prefilter: &crate::prefilter::Prefilter,
        chains: &ChainTable,
        slot: u32,
        chain: ChainId,
        base: &[u8],
        long: bool,
    ) -> usize {
        let words = prefilter.scan_words();
        let link = match self.link(slot, chain) {
            Some(l) => l,
            // The raw value's scan, without linking the chain (`compute` links it
            // when a rule asks for its bytes).
            None if self.scan_unchanged(chains, slot, chain, base) => {
                return self.scan_offset(prefilter, chains, slot, 0, base, long);
            }
            // A long response body under a chain that only deletes bytes (and
            // changes case): scanned without building the chain's result, which
            // is built only if a rule is then evaluated on it.
            None if long && base.len() > PRESENCE_MAX && chains.deleted_bytes(chain).is_some() => {
                let deleted = chains.deleted_bytes(chain).unwrap_or_default();
                return self.deleting_scan(prefilter, slot, &deleted, base);
            }
            None => {
                self.compute(chains, slot, chain, base);
                self.link(slot, chain).unwrap_or(Link {
                    bytes: BASE,
                    scan: chain,
                    bits: UNSCANNED,
                })
            }
        };
        let known = if chain == 0 {
            self.root_scan(slot)
        } else {
            link.bits
        };
        if known != UNSCANNED {
            return known as usize;
        }
        let owner = link.scan;
        let owner_known = match owner {
            _ if owner == chain => UNSCANNED,
            0 => self.root_scan(slot),
            _ => self.link(slot, owner).map_or(UNSCANNED, |l| l.bits),
        };
        let offset = if owner_known != UNSCANNED {
            owner_known as usize
        } else {
            let o = self.bits.len();
            let mut bits = std::mem::take(&mut self.bits);
            bits.resize(o + words, 0);
            let value = self.get(chains, slot, owner, base);
            if long {
                prefilter.scan_long_into(value, &mut bits[o..]);
            } else if owner == 0 && base.len() <= PRESENCE_MAX {
                // The raw value: its bytes, which the chains' trigger tests
                // need anyway, give the scan's presence set; when not known
                // yet, the scan collects them.
                match self.presence.get(slot as usize).copied().flatten() {
                    Some(p) => {
                        let lowered = triggers::lowered(&p);
                        prefilter.scan_into_with_presence(base, &lowered, &mut bits[o..]);
                    }
                    None => {
                        let p = prefilter.scan_into_collecting(base, &mut bits[o..]);
                        let i = slot as usize;
                        if self.presence.len() <= i {
                            self.presence.resize(i + 1, None);
                        }
                        self.presence[i] = Some(p);
                    }
                }
            } else if owner == 0 {
                // A long raw value (anchored ends are tested on raw values'
                // scans alone: only rules without transformations have them).
                prefilter.scan_fresh_into(value, &mut bits[o..]);
            } else {
                prefilter.scan_into(value, &mut bits[o..]);
            }
            self.bits = bits;
            self.record_scan(slot, owner, o as u32);
            o
        };
        if chain != owner {
            self.record_scan(slot, chain, offset as u32);
        }
        offset
    }
}

impl TransformMemo {
    /// ORs into `out` (of [`crate::prefilter::Prefilter::scan_words`] words) the
    /// scan of every value `steps` make from `(slot, before)`'s result, one step
    /// after another, that differs from the one before it: the intermediate
    /// values a `multiMatch` rule over the chain `before` + `steps` inspects past
    /// `before` (see [`ChainTable::opaque`]). They are computed in two scratch
    /// buffers and scanned without being memoised: after a step such as
    /// `base64Decode` they are bytes no other chain gives, so the memo's links
    /// and buffers would cost more than they save.
    pub fn walk_opaque(
        &mut self,
        prefilter: &crate::prefilter::Prefilter,
        chains: &ChainTable,
        slot: u32,
        (before, steps): (ChainId, &[Transformation]),
        base: &[u8],
        out: &mut [u64],
    ) {
        self.compute(chains, slot, before, base);
        let (mut cur, mut next) = std::mem::take(&mut self.walk);
        cur.clear();
        cur.extend_from_slice(self.get(chains, slot, before, base));
        for &t in steps {
            if t.apply(&cur, &mut next) {
                // A scan only sets bits (escape bits per byte held, so those of
                // the presence sets' union are the union of theirs): into `out`
                // directly, as the OR of the values' own scans.
                prefilter.scan_into(&next, out);
                std::mem::swap(&mut cur, &mut next);
            }
        }
        self.walk = (cur, next);
    }

    /// The long-value scan of `slot`'s raw value `base` less the bytes of
    /// `deleted`, made once per (slot, deleted bytes).
    fn deleting_scan(
        &mut self,
        prefilter: &crate::prefilter::Prefilter,
        slot: u32,
        deleted: &ByteMask,
        base: &[u8],
    ) -> usize {
        if let Some(&(_, _, o)) = self
            .deleting_scans
            .iter()
            .find(|(s, d, _)| *s == slot && d == deleted)
        {
            return o as usize;
        }
        let o = self.bits.len();
        let words = prefilter.scan_words();
        self.bits.resize(o + words, 0);
        // The raw value's long scan, when made, holds its presence set.
        let raw = self.root_scan(slot);
        let (head, tail) = self.bits.split_at_mut(o);
        let presence = (raw != UNSCANNED)
            .then(|| head.get(raw as usize + prefilter.words()..raw as usize + words))
            .flatten();
        debug_assert!(presence.is_none_or(|p| {
            let mut expected = [0u64; 4];
            crate::prefilter::bytes::presence(base, &mut expected);
            p == expected
        }));
        prefilter.scan_long_without_into_with_presence(base, deleted, presence, tail);
        if let Ok(offset) = u32::try_from(o) {
            self.deleting_scans.push((slot, *deleted, offset));
        }
        o
    }
}

/// Applies a chain without memo (for values that change during a transaction).
/// `out` receives the result; no allocation beyond growing `out` and one scratch
/// buffer.
pub fn apply_chain(
    chains: &ChainTable,
    chain: ChainId,
    input: &[u8],
    out: &mut Vec<u8>,
    tmp: &mut Vec<u8>,
) {
    out.clear();
    out.extend_from_slice(input);
    // The empty chain (most TX and count targets): the copy is the result,
    // without setting up the stack below.
    if chain == 0 {
        return;
    }
    // Collect the chain root-first on the stack (chains are short).
    let mut stack = [None; 64];
    let mut n = 0;
    let mut id = chain;
    while let Some((parent, t)) = chains.split_last(id) {
        if n == stack.len() {
            break;
        }
        stack[n] = Some(t);
        n += 1;
        id = parent;
    }
    for t in stack[..n].iter().rev().flatten() {
        if t.apply(out, tmp) {
            std::mem::swap(out, tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefilter::{has, Prefilter};

    #[test]
    fn chains_share_prefixes_and_case_only_changes_share_scans() {
        let mut chains = ChainTable::new();
        let lower = chains.intern(&[Transformation::Lowercase]);
        let lower_url = chains.intern(&[Transformation::Lowercase, Transformation::UrlDecode]);
        let pf = Prefilter::build(&[(0, vec![b"select".to_vec()]), (1, vec![b"a b".to_vec()])])
            .unwrap_or_else(|| panic!("literals"));
        let mut memo = TransformMemo::default();
        let base = b"SELECT+a+B";
        memo.compute(&chains, 7, lower_url, base);
        assert_eq!(memo.get(&chains, 7, lower, base), b"select+a+b");
        assert_eq!(memo.get(&chains, 7, lower_url, base), b"select a b");
        // Lower-casing changes only case: it shares the raw value's scan.
        assert_eq!(memo.link(7, lower).map(|l| l.scan), Some(0));
        assert_eq!(memo.link(7, lower_url).map(|l| l.scan), Some(lower_url));
        let raw = memo.scan(&pf, &chains, 7, lower, base, false).to_vec();
        assert!(has(&raw, 0) && !has(&raw, 1));
        let decoded = memo.scan(&pf, &chains, 7, lower_url, base, false).to_vec();
        assert!(has(&decoded, 0) && has(&decoded, 1));
        // Cleared and reused: same results, no stale entries.
        memo.clear();
        memo.compute(&chains, 7, lower, b"X");
        assert_eq!(memo.get(&chains, 7, lower, b"X"), b"x");
        assert_eq!(memo.get(&chains, 7, lower_url, b"X"), b"x");
    }

    #[test]
    fn chains_whose_trigger_bytes_a_value_lacks_give_the_raw_value_and_its_scan() {
        let mut chains = ChainTable::new();
        let url_lower = chains.intern(&[Transformation::UrlDecodeUni, Transformation::Lowercase]);
        let url = chains.intern(&[Transformation::UrlDecodeUni]);
        let b64 = chains.intern(&[Transformation::Base64Decode]);
        let pf =
            Prefilter::build(&[(0, vec![b"order".to_vec()])]).unwrap_or_else(|| panic!("literals"));
        let mut memo = TransformMemo::default();
        let base = b"order-2024.06 x_y@z";
        let raw = memo.scan_offset(&pf, &chains, 3, 0, base, false);
        memo.compute(&chains, 3, url_lower, base);
        // Neither the chain nor its prefix ran: no buffer, the raw bytes and scan.
        assert_eq!(memo.used, 0);
        assert_eq!(memo.index.get(3, url), None);
        assert_eq!(memo.get(&chains, 3, url_lower, base), base);
        assert_eq!(
            memo.scan_offset(&pf, &chains, 3, url_lower, base, false),
            raw
        );
        // A chain that may change any value runs.
        memo.compute(&chains, 3, b64, base);
        assert_eq!(memo.used, 1);
        // A value holding a trigger byte runs the chain.
        let upper = b"ORDER%2d1";
        memo.compute(&chains, 4, url_lower, upper);
        assert_eq!(memo.get(&chains, 4, url_lower, upper), b"order-1");
        assert_eq!(memo.get(&chains, 4, url, upper), b"ORDER-1");
    }

    #[test]
    fn chains_giving_the_same_bytes_share_one_scan() {
        let mut chains = ChainTable::new();
        let url = chains.intern(&[Transformation::UrlDecode]);
        let utf_url = chains.intern(&[Transformation::Utf8ToUnicode, Transformation::UrlDecode]);
        let trim = chains.intern(&[Transformation::Trim]);
        let pf = Prefilter::build(&[(0, vec![b"a b".to_vec()])]).unwrap_or_else(|| panic!("lit"));
        let mut memo = TransformMemo::default();
        let base = b"a+b ";
        for c in [url, utf_url, trim] {
            memo.compute(&chains, 3, c, base);
        }
        let words = pf.scan_words();
        let a = memo.scan(&pf, &chains, 3, url, base, false).to_vec();
        let b = memo.scan(&pf, &chains, 3, utf_url, base, false).to_vec();
        assert_eq!(a, b);
        assert!(has(&a, 0));
        // One scan for both chains.
        assert_eq!(memo.bits.len(), words);
        // Other bytes ("a+b"): a scan of their own, which does not admit the rule.
        let c = memo.scan(&pf, &chains, 3, trim, base, false).to_vec();
        assert!(!has(&c, 0));
        assert_eq!(memo.bits.len(), 2 * words);
        // The same bytes in another slot are scanned again (slots are separate).
        memo.compute(&chains, 4, url, base);
        memo.scan(&pf, &chains, 4, url, base, false);
        assert_eq!(memo.bits.len(), 3 * words);
    }

    #[test]
    fn a_step_on_bytes_it_was_applied_to_before_is_not_applied_again() {
        let mut chains = ChainTable::new();
        let url_lower = chains.intern(&[Transformation::UrlDecode, Transformation::Lowercase]);
        let utf_url_lower = chains.intern(&[
            Transformation::Utf8ToUnicode,
            Transformation::UrlDecode,
            Transformation::Lowercase,
        ]);
        let utf_url = chains.intern(&[Transformation::Utf8ToUnicode, Transformation::UrlDecode]);
        let url = chains.intern(&[Transformation::UrlDecode]);
        let url_trim = chains.intern(&[Transformation::UrlDecode, Transformation::Trim]);
        let utf_url_trim = chains.intern(&[
            Transformation::Utf8ToUnicode,
            Transformation::UrlDecode,
            Transformation::Trim,
        ]);
        let mut memo = TransformMemo::default();
        let base = b"A%42+c";
        memo.compute(&chains, 3, url_lower, base);
        let used = memo.used;
        assert_eq!(used, 2);
        // `utf8toUnicode` leaves the value as it is, so the rest of the chain is
        // the same steps on the same bytes: no buffer more, the same results.
        memo.compute(&chains, 3, utf_url_lower, base);
        assert_eq!(memo.used, used);
        assert_eq!(memo.get(&chains, 3, utf_url_lower, base), b"ab c");
        assert_eq!(memo.get(&chains, 3, utf_url, base), b"AB c");
        assert_eq!(memo.bytes_id(3, utf_url), memo.bytes_id(3, url));
        assert_eq!(memo.bytes_id(3, utf_url_lower), memo.bytes_id(3, url_lower));
        // A step that changes nothing is taken over as such: the bytes of its
        // parent, so a `multiMatch` walk sees no new value.
        memo.compute(&chains, 3, url_trim, base);
        memo.compute(&chains, 3, utf_url_trim, base);
        assert_eq!(memo.used, used);
        assert_eq!(memo.bytes_id(3, utf_url_trim), memo.bytes_id(3, utf_url));
        // Another slot with the same bytes applies the steps itself.
        memo.compute(&chains, 4, utf_url_lower, base);
        assert_eq!(memo.used, used + 2);
        assert_eq!(memo.get(&chains, 4, utf_url_lower, base), b"ab c");
        // After a clear, the same slot and bytes id are another value.
        memo.clear();
        memo.compute(&chains, 3, url_lower, b"X%59");
        memo.compute(&chains, 3, utf_url_lower, b"X%59");
        assert_eq!(memo.get(&chains, 3, utf_url_lower, b"X%59"), b"xy");
        assert_eq!(memo.get(&chains, 3, utf_url, b"X%59"), b"XY");
    }

    #[test]
    fn slots_past_the_dense_rows_are_memoised_in_the_spill_map() {
        let mut chains = ChainTable::new();
        let lower = chains.intern(&[Transformation::Lowercase]);
        let lower_url = chains.intern(&[Transformation::Lowercase, Transformation::UrlDecode]);
        let mut memo = TransformMemo::default();
        let far = DENSE_SLOTS as u32 + 44;
        for (slot, base) in [(5, &b"A%41"[..]), (far, &b"B%42"[..])] {
            memo.compute(&chains, slot, lower_url, base);
            assert_eq!(
                memo.get(&chains, slot, lower, base),
                base.to_ascii_lowercase()
            );
        }
        assert_eq!(memo.get(&chains, 5, lower_url, b"A%41"), b"aA");
        assert_eq!(memo.get(&chains, far, lower_url, b"B%42"), b"bB");
        assert!(memo.index.spill.contains_key(&(far, lower_url)));
        assert!(!memo.index.spill.contains_key(&(5, lower_url)));
        // Cleared: nothing stale in either part.
        memo.clear();
        assert!(memo.link(5, lower).is_none() && memo.link(far, lower).is_none());
        memo.compute(&chains, far, lower, b"C");
        assert_eq!(memo.get(&chains, far, lower, b"C"), b"c");
    }
}
