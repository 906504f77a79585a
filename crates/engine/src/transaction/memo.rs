//! The per-transaction transformation memo: `(value slot, chain) -> result`. Chains
//! are interned as a trie, so a chain's result is computed from its parent's memoised
//! result: CRS chains sharing a prefix share the work.
//!
//! Results are found by one hash lookup of `(slot, chain)`. A transformation that
//! leaves its input unchanged stores nothing (the bytes are the parent's); changed
//! bytes live in buffers kept across [`TransformMemo::clear`], so a reused memo
//! allocates nothing once warm.
//!
//! The prefilter's scan of a transformed value is memoised too, keyed by the bytes
//! it scans rather than by the chain: chains that leave a value unchanged, or change
//! only the case of its ASCII letters (the prefilter matches ASCII case-
//! insensitively), share their parent's scan. For most benign values every chain
//! shares the one scan of the raw value.

use rustc_hash::FxHashMap;

use crate::chains::{ChainId, ChainTable};

/// Where the bytes of a `(slot, chain)` result are, and which chain's bytes its
/// prefilter scan is keyed by: one lookup answers both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Link {
    /// Index of the buffer holding the bytes, or [`BASE`] for the untransformed value.
    bytes: u32,
    /// The nearest chain (itself or an ancestor, 0 for the raw value) whose bytes
    /// differ from its parent's other than in ASCII case.
    scan: ChainId,
}

/// `Link::bytes` of the untransformed value.
const BASE: u32 = u32::MAX;
const ROOT: Link = Link {
    bytes: BASE,
    scan: 0,
};

/// Memoised transformation results of one transaction.
#[derive(Debug, Default)]
pub struct TransformMemo {
    index: FxHashMap<(u32, ChainId), Link>,
    /// Result buffers; those past `used` are spare, kept from before a `clear`.
    buffers: Vec<Vec<u8>>,
    used: usize,
    /// Prefilter scans: (slot, chain owning the bytes) -> offset in `bits`.
    scans: FxHashMap<(u32, ChainId), u32>,
    /// The same scans by (slot, hash of the scanned bytes) -> (chain owning the
    /// bytes, offset in `bits`); a hit is confirmed by comparing the bytes.
    by_bytes: FxHashMap<(u32, u64), (ChainId, u32)>,
    bits: Vec<u64>,
}

impl TransformMemo {
    /// Forgets everything (keeping buffers for reuse).
    pub fn clear(&mut self) {
        self.index.clear();
        self.used = 0;
        self.scans.clear();
        self.by_bytes.clear();
        self.bits.clear();
    }

    /// Bytes held by the result buffers (for the pool's size bound).
    pub fn capacity_bytes(&self) -> usize {
        self.buffers.iter().map(Vec::capacity).sum::<usize>() + self.bits.capacity() * 8
    }

    fn link(&self, slot: u32, chain: ChainId) -> Option<Link> {
        if chain == 0 {
            Some(ROOT)
        } else {
            self.index.get(&(slot, chain)).copied()
        }
    }

    fn bytes<'a>(&'a self, link: Link, base: &'a [u8]) -> &'a [u8] {
        match self.buffers.get(link.bytes as usize) {
            Some(b) if link.bytes != BASE => b,
            _ => base,
        }
    }

    /// Ensures `(slot, chain)` is computed, computing missing prefixes first.
    pub fn compute(&mut self, chains: &ChainTable, slot: u32, chain: ChainId, base: &[u8]) {
        if chain == 0 || self.index.contains_key(&(slot, chain)) {
            return;
        }
        let Some((parent, t)) = chains.split_last(chain) else {
            return;
        };
        self.compute(chains, slot, parent, base);
        let plink = self.link(slot, parent).unwrap_or(ROOT);
        if self.used == self.buffers.len() {
            self.buffers.push(Vec::new());
        }
        let mut out = std::mem::take(&mut self.buffers[self.used]);
        let input = self.bytes(plink, base);
        let link = if t.apply(input, &mut out) {
            let case_only = out.len() == input.len() && out.eq_ignore_ascii_case(input);
            Some(Link {
                bytes: self.used as u32,
                scan: if case_only { plink.scan } else { chain },
            })
        } else {
            None
        };
        self.buffers[self.used] = out;
        match link {
            Some(l) => {
                self.used += 1;
                self.index.insert((slot, chain), l);
            }
            // Unchanged: the parent's bytes and scan.
            None => {
                self.index.insert((slot, chain), plink);
            }
        }
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

    /// The prefilter's rule bits for `(slot, chain)`, scanning each distinct byte
    /// string once; call [`TransformMemo::compute`] first. `long`: the slot is the
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
        let owner = match self.link(slot, chain) {
            Some(l) => l.scan,
            None => chain,
        };
        let words = prefilter.scan_words();
        let offset = match self.scans.get(&(slot, owner)) {
            Some(&o) => o as usize,
            None => {
                let value = self.get(chains, slot, owner, base);
                let hash = {
                    use std::hash::{Hash, Hasher};
                    let mut h = rustc_hash::FxHasher::default();
                    value.hash(&mut h);
                    h.finish()
                };
                let same = self.by_bytes.get(&(slot, hash)).and_then(|&(other, o)| {
                    (self.get(chains, slot, other, base) == value).then_some(o as usize)
                });
                let o = match same {
                    Some(o) => o,
                    None => {
                        let o = self.bits.len();
                        let mut bits = std::mem::take(&mut self.bits);
                        bits.resize(o + words, 0);
                        let value = self.get(chains, slot, owner, base);
                        if long {
                            prefilter.scan_long_into(value, &mut bits[o..]);
                        } else {
                            prefilter.scan_into(value, &mut bits[o..]);
                        }
                        self.bits = bits;
                        self.by_bytes.insert((slot, hash), (owner, o as u32));
                        o
                    }
                };
                self.scans.insert((slot, owner), o as u32);
                o
            }
        };
        &self.bits[offset..offset + words]
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
    use crate::transform::Transformation;

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
}
