//! The per-transaction transformation memo: `(value slot, chain) -> result`. Chains
//! are interned as a trie, so a chain's result is computed from its parent's memoised
//! result: CRS chains sharing a prefix share the work.

use std::collections::HashMap;

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
    map: HashMap<(u32, ChainId), Memo>,
}

impl TransformMemo {
    /// Forgets everything (keeping capacity).
    pub fn clear(&mut self) {
        self.map.clear();
    }

    /// Forgets results for slots at or above `slot` (values replaced).
    pub fn forget_all(&mut self) {
        self.map.clear();
    }

    /// Ensures `(slot, chain)` is computed, computing missing prefixes first.
    pub fn compute(&mut self, chains: &ChainTable, slot: u32, chain: ChainId, base: &[u8]) {
        if chain == 0 || self.map.contains_key(&(slot, chain)) {
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
        self.map.insert((slot, chain), memo);
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
            match self.map.get(&(slot, chain)) {
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
pub fn apply_chain(chains: &ChainTable, chain: ChainId, input: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(input);
    let mut tmp = Vec::new();
    for t in chains.transformations(chain) {
        if t.apply(out, &mut tmp) {
            std::mem::swap(out, &mut tmp);
        }
    }
}
