//! The per-transaction transformation memo: `(value slot, chain) -> result`. Chains
//! are interned as a trie, so a chain's result is computed from its parent's memoised
//! result: CRS chains sharing a prefix share the work.
//!
//! Storage is a vector indexed by slot, each holding the few chains computed for that
//! value (looked up linearly: a value meets a handful of distinct chains), so a
//! lookup hashes nothing.

use crate::chains::{ChainId, ChainTable};

#[derive(Debug, Clone)]
enum Memo {
    /// The transformation left its input unchanged: same bytes as the parent chain.
    Same,
    /// The transformed bytes.
    Owned(Vec<u8>),
}

/// Memoised transformation results of one transaction.
#[derive(Debug, Default)]
pub struct TransformMemo {
    slots: Vec<Vec<(ChainId, Memo)>>,
    /// Prefilter scans per slot: (chain, rule bits).
    scans: Vec<Vec<(ChainId, Vec<u64>)>>,
}

impl TransformMemo {
    /// Forgets everything (keeping capacity).
    pub fn clear(&mut self) {
        for s in &mut self.slots {
            s.clear();
        }
        for s in &mut self.scans {
            s.clear();
        }
    }

    /// The prefilter's rule bits for `(slot, chain)`, scanning the transformed value
    /// once; call [`TransformMemo::compute`] first.
    pub fn scan(
        &mut self,
        prefilter: &crate::prefilter::Prefilter,
        chains: &ChainTable,
        slot: u32,
        chain: ChainId,
        base: &[u8],
    ) -> &[u64] {
        let i = slot as usize;
        if self.scans.len() <= i {
            self.scans.resize_with(i + 1, Vec::new);
        }
        let pos = match self.scans[i].iter().position(|(c, _)| *c == chain) {
            Some(p) => p,
            None => {
                let mut bits = Vec::new();
                prefilter.scan(self.get(chains, slot, chain, base), &mut bits);
                self.scans[i].push((chain, bits));
                self.scans[i].len() - 1
            }
        };
        &self.scans[i][pos].1
    }

    fn find(&self, slot: u32, chain: ChainId) -> Option<&Memo> {
        self.slots
            .get(slot as usize)?
            .iter()
            .find(|(c, _)| *c == chain)
            .map(|(_, m)| m)
    }

    /// Ensures `(slot, chain)` is computed, computing missing prefixes first.
    pub fn compute(&mut self, chains: &ChainTable, slot: u32, chain: ChainId, base: &[u8]) {
        if chain == 0 || self.find(slot, chain).is_some() {
            return;
        }
        let Some((parent, t)) = chains.split_last(chain) else {
            return;
        };
        self.compute(chains, slot, parent, base);
        let mut out = Vec::new();
        let input = self.get(chains, slot, parent, base);
        let memo = if t.apply(input, &mut out) {
            Memo::Owned(out)
        } else {
            Memo::Same
        };
        let i = slot as usize;
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, Vec::new);
        }
        self.slots[i].push((chain, memo));
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
            if chain == 0 {
                return base;
            }
            match self.find(slot, chain) {
                Some(Memo::Owned(v)) => return v,
                Some(Memo::Same) | None => match chains.split_last(chain) {
                    Some((parent, _)) => chain = parent,
                    None => return base,
                },
            }
        }
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
