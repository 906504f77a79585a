//! Transformation chains, interned as a trie so that chains sharing a prefix share
//! nodes: the per-transaction memo then reuses a prefix's result for every chain
//! that extends it (CRS chains share long prefixes).

use std::collections::HashMap;

use crate::transform::triggers::{self, ByteMask};
use crate::transform::Transformation;

/// Id of an interned chain; 0 is the empty chain.
pub type ChainId = u32;

/// The interned chains of a program.
#[derive(Debug, Clone, Default)]
pub struct ChainTable {
    nodes: Vec<(ChainId, Option<Transformation>)>,
    lookup: HashMap<(ChainId, Transformation), ChainId>,
    /// Per chain: the union of its transformations' trigger bytes (`None`: one
    /// of them may change any value); see [`crate::transform::triggers`].
    triggers: Vec<Option<ByteMask>>,
    /// Per chain: the case-folded union of its transformations' scan trigger bytes
    /// (see [`Transformation::scan_triggers`]).
    scan_triggers: Vec<Option<ByteMask>>,
    /// Per chain with a step that may change any value into any bytes (see
    /// [`ChainTable::opaque`]): the chain before the first such step, and the
    /// steps from it on.
    opaque: Vec<Option<(ChainId, Box<[Transformation]>)>>,
}

impl ChainTable {
    /// A table holding only the empty chain.
    pub fn new() -> Self {
        ChainTable {
            nodes: vec![(0, None)],
            lookup: HashMap::new(),
            triggers: vec![Some([0; 4])],
            scan_triggers: vec![Some([0; 4])],
            opaque: vec![None],
        }
    }

    /// Interns a chain and returns its id.
    pub fn intern(&mut self, chain: &[Transformation]) -> ChainId {
        let mut id = 0;
        for &t in chain {
            id = match self.lookup.get(&(id, t)) {
                Some(&next) => next,
                None => {
                    let next = self.nodes.len() as ChainId;
                    let parent = self.triggers.get(id as usize).copied().flatten();
                    self.triggers.push(triggers::union(parent, t.triggers()));
                    let parent = self.scan_triggers.get(id as usize).copied().flatten();
                    let own = t.scan_triggers().map(triggers::fold_case);
                    self.scan_triggers.push(triggers::union(parent, own));
                    // The parent's split, one step longer; or a split here when
                    // this step has no scan trigger bytes.
                    let opaque = match self.opaque.get(id as usize).cloned().flatten() {
                        Some((before, steps)) => Some((before, [&steps[..], &[t]].concat().into())),
                        None if own.is_none() => Some((id, Box::from([t]))),
                        None => None,
                    };
                    self.opaque.push(opaque);
                    self.nodes.push((id, Some(t)));
                    self.lookup.insert((id, t), next);
                    next
                }
            };
        }
        id
    }

    /// The bytes without which the chain changes a value at most in the case of
    /// its ASCII letters, so that the value's prefilter scan stands for the
    /// chain's (`None`: it may change any value). A value lacking them lacks them
    /// after each step too (the set holds both cases of its letters), so every
    /// step leaves it as it is up to case.
    #[inline]
    pub fn scan_triggers(&self, id: ChainId) -> Option<&ByteMask> {
        self.scan_triggers.get(id as usize)?.as_ref()
    }

    /// When every step of the chain only deletes bytes or changes ASCII case
    /// (see [`Transformation::deleted_bytes`]): the bytes it deletes. `None` for
    /// the empty chain and for chains with another step.
    pub fn deleted_bytes(&self, mut id: ChainId) -> Option<ByteMask> {
        let mut deleted = [0u64; 4];
        let mut steps = 0;
        while let Some((parent, t)) = self.split_last(id) {
            let d = t.deleted_bytes()?;
            for (a, b) in deleted.iter_mut().zip(d) {
                *a |= b;
            }
            steps += 1;
            id = parent;
        }
        (steps > 0).then_some(deleted)
    }

    /// For a chain with a step that may change any value into any bytes
    /// (`base64Decode`, `hexDecode`, ...: no scan trigger bytes, see
    /// [`Transformation::scan_triggers`]): the chain before the first such step,
    /// and the steps from it on, in order. `None` for other chains.
    pub fn opaque(&self, id: ChainId) -> Option<(ChainId, &[Transformation])> {
        self.opaque
            .get(id as usize)?
            .as_ref()
            .map(|(before, steps)| (*before, &steps[..]))
    }

    /// For a chain whose first step that may change any value (see
    /// [`ChainTable::opaque`]) is `base64Decode`, followed only by steps that
    /// never lengthen a value: the chain before it. The chain's result is then
    /// at most [`crate::transform::base64_decode_max_len`] of that chain's result
    /// long.
    pub fn base64_bounded(&self, id: ChainId) -> Option<ChainId> {
        let (before, steps) = self.opaque(id)?;
        match steps.split_first() {
            Some((Transformation::Base64Decode, rest))
                if rest.iter().all(|t| t.never_lengthens()) =>
            {
                Some(before)
            }
            _ => None,
        }
    }

    /// The parent chain and the last transformation of a non-empty chain.
    pub fn split_last(&self, id: ChainId) -> Option<(ChainId, Transformation)> {
        let (parent, t) = self.nodes.get(id as usize)?;
        t.map(|t| (*parent, t))
    }

    /// The bytes without which the chain leaves a value unchanged (`None`: it may
    /// change any value).
    #[inline]
    pub fn triggers(&self, id: ChainId) -> Option<&ByteMask> {
        self.triggers.get(id as usize)?.as_ref()
    }

    /// The transformations of a chain, in order.
    pub fn transformations(&self, mut id: ChainId) -> Vec<Transformation> {
        let mut out = Vec::new();
        while let Some((parent, t)) = self.split_last(id) {
            out.push(t);
            id = parent;
        }
        out.reverse();
        out
    }

    /// Number of interned chains (including the empty one).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether only the empty chain exists.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 1
    }
}

#[cfg(test)]
mod tests {
    use super::ChainTable;
    use crate::transform::Transformation as T;

    #[test]
    fn a_chain_splits_before_its_first_step_that_may_change_any_value() {
        let mut c = ChainTable::new();
        let plain = c.intern(&[T::UrlDecodeUni, T::JsDecode]);
        assert_eq!(c.opaque(plain), None);
        let full = c.intern(&[
            T::UrlDecodeUni,
            T::JsDecode,
            T::Base64Decode,
            T::UrlDecodeUni,
            T::JsDecode,
        ]);
        let (before, steps) = c.opaque(full).unwrap_or_else(|| panic!("opaque"));
        assert_eq!(before, plain);
        assert_eq!(steps, &[T::Base64Decode, T::UrlDecodeUni, T::JsDecode][..]);
        assert_eq!(c.opaque(0), None);
        // Base64 first, then steps that never lengthen: bounded.
        assert_eq!(c.base64_bounded(full), Some(plain));
        let longer = c.intern(&[T::UrlDecodeUni, T::Base64Decode, T::Utf8ToUnicode]);
        assert_eq!(c.base64_bounded(longer), None);
        let hex = c.intern(&[T::HexDecode, T::Lowercase]);
        assert_eq!(c.base64_bounded(hex), None);
        assert_eq!(c.base64_bounded(plain), None);
    }

    #[test]
    fn base64_bound_counts_the_valid_prefix() {
        assert_eq!(crate::transform::base64_decode_max_len(b""), 0);
        assert_eq!(crate::transform::base64_decode_max_len(b"json.order_id"), 3);
        assert_eq!(crate::transform::base64_decode_max_len(b"QUJD"), 3);
        assert_eq!(crate::transform::base64_decode_max_len(b"QUJDRA"), 4);
        assert_eq!(crate::transform::base64_decode_max_len(b"QUJDREU=x"), 5);
        assert_eq!(crate::transform::base64_decode_max_len(b"Q"), 0);
    }
}
