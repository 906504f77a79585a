//! The literal automaton's transitions in a flat table of our own, copied once from
//! aho-corasick's DFA when the prefilter is built.
//!
//! The crate's `next_state` and `is_special`/`is_match` read the DFA's fields
//! through `&self` at every byte; with the call that reports a match in the loop,
//! the compiler reloads them each time (about 16 instructions a byte on a response
//! body). Here the scan loop holds the table, the byte classes and one bound in
//! locals, and a byte costs a class lookup, a bounds-checked table lookup and one
//! comparison (about 13 instructions a byte in the four-lane loop of values of 32
//! bytes or more, whose lanes' pointers and states do not all fit in registers).
//!
//! - **Byte classes.** Every byte no literal holds (ASCII case-insensitively)
//!   leads every state where the start state's byte does (an Aho-Corasick
//!   automaton's failure links end at the start state, which has no edge for
//!   it), and a letter leads where its other case does (the automaton holds both
//!   cases of every literal): one class for the first, one per letter pair or
//!   other byte of the literals.
//! - **States** are the ones reached from the unanchored start state, numbered
//!   with the match states first: state ids are row starts (index times the
//!   number of classes), and a state is a match state when its id is below
//!   [`DfaTable::match_end`].
//! - **Masks.** Per match state, the rule bits of every literal ending there
//!   (literals that are suffixes of others included: the DFA's match lists hold
//!   them), as runs of (word, bits): a match costs one lookup and an OR per word
//!   it touches.

use aho_corasick::automaton::{Automaton as _, StateID};
use aho_corasick::{dfa::DFA, Anchored};

/// A DFA's transitions and match masks (see the module notes).
#[derive(Debug, Clone)]
pub(crate) struct DfaTable {
    /// Byte -> class (the column of its transitions).
    classes: [u8; 256],
    /// Classes (columns per state).
    stride: u32,
    /// The next state's id, at the current state's id plus the byte's class.
    trans: Vec<u32>,
    /// The start state's id.
    start: u32,
    /// Ids below this are match states.
    match_end: u32,
    /// Per match state (by index), its run in `masks`.
    runs: Vec<(u32, u32)>,
    masks: Vec<(u32, u64)>,
    /// Per match state (by index), its run in `literals`: the literals ending
    /// there. Only tests walk occurrences one by one (`for_each_match`, checked
    /// against the crate's own search); kept, as they are small, so that the
    /// table tested is the one scans use.
    literal_runs: Vec<(u32, u32)>,
    literals: Vec<u32>,
    /// The longest literal's length.
    max_literal: usize,
}

impl DfaTable {
    /// The table of `dfa`, built over `literals` with ASCII case-insensitivity, whose
    /// literal `i` sets the rule bits `literal_rules[i]`; `None` when the states do
    /// not fit in 32-bit ids.
    pub(crate) fn build(
        dfa: &DFA,
        literals: &[Vec<u8>],
        literal_rules: &[Vec<u32>],
    ) -> Option<DfaTable> {
        let (classes, reps) = byte_classes(literals);
        let stride = reps.len();
        let start = dfa.start_state(Anchored::No).ok()?;
        // Every state reachable from the start, and its transitions (old ids).
        let mut order = vec![start];
        let mut seen = rustc_hash::FxHashMap::default();
        seen.insert(start.as_u32(), 0usize);
        let mut next_old = Vec::new();
        let mut i = 0;
        while let Some(&sid) = order.get(i) {
            for &b in &reps {
                let to = dfa.next_state(Anchored::No, sid, b);
                next_old.push(to);
                if let std::collections::hash_map::Entry::Vacant(e) = seen.entry(to.as_u32()) {
                    e.insert(order.len());
                    order.push(to);
                }
            }
            i += 1;
        }
        // Match states first.
        let is_match = |s: StateID| dfa.is_match(s);
        let mut new_index = vec![0u32; order.len()];
        let mut next = 0u32;
        for want in [true, false] {
            for (k, &s) in order.iter().enumerate() {
                if is_match(s) == want {
                    new_index[k] = next;
                    next += 1;
                }
            }
        }
        let matches = order.iter().filter(|&&s| is_match(s)).count();
        let id = |k: usize| -> Option<u32> {
            u32::try_from(stride).ok()?.checked_mul(*new_index.get(k)?)
        };
        let total = u32::try_from(order.len().checked_mul(stride)?).ok()?;
        let mut trans = vec![0u32; total as usize];
        for (k, row) in next_old.chunks(stride).enumerate() {
            let from = id(k)? as usize;
            for (c, to) in row.iter().enumerate() {
                let to = *seen.get(&to.as_u32())?;
                *trans.get_mut(from + c)? = id(to)?;
            }
        }
        let mut table = DfaTable {
            classes,
            stride: u32::try_from(stride).ok()?,
            trans,
            start: id(0)?,
            match_end: u32::try_from(matches.checked_mul(stride)?).ok()?,
            runs: vec![(0, 0); matches],
            masks: Vec::new(),
            literal_runs: vec![(0, 0); matches],
            literals: Vec::new(),
            max_literal: literals.iter().map(Vec::len).max().unwrap_or(0),
        };
        for (k, &s) in order.iter().enumerate() {
            if is_match(s) {
                let m = *new_index.get(k)? as usize;
                table.add_match(dfa, s, m, literal_rules);
            }
        }
        Some(table)
    }

    /// Records match state `sid` (new index `m`): its literals and masks.
    fn add_match(&mut self, dfa: &DFA, sid: StateID, m: usize, literal_rules: &[Vec<u32>]) {
        let from = self.literals.len();
        self.literals
            .extend((0..dfa.match_len(sid)).map(|i| dfa.match_pattern(sid, i).as_u32()));
        let mut bits: Vec<u32> = self.literals[from..]
            .iter()
            .flat_map(|&p| literal_rules.get(p as usize).into_iter().flatten().copied())
            .collect();
        bits.sort_unstable();
        bits.dedup();
        let start = self.masks.len();
        for b in bits {
            let word = b / 64;
            let in_run = self.masks.len() > start;
            match self.masks.last_mut() {
                Some((w, mask)) if in_run && *w == word => *mask |= 1 << (b % 64),
                _ => self.masks.push((word, 1 << (b % 64))),
            }
        }
        let run = |a: usize, b: usize| (a as u32, (b - a) as u32);
        if let Some(r) = self.runs.get_mut(m) {
            *r = run(start, self.masks.len());
        }
        if let Some(r) = self.literal_runs.get_mut(m) {
            *r = run(from, self.literals.len());
        }
    }

    /// Heap bytes.
    pub(crate) fn memory_usage(&self) -> usize {
        self.trans.len() * 4
            + (self.runs.len() + self.literal_runs.len()) * 8
            + self.masks.len() * 16
            + self.literals.len() * 4
    }

    /// Sets in `scan` the rule bits of every literal occurring in `bytes`.
    #[inline]
    pub(crate) fn scan(&self, bytes: impl Iterator<Item = u8>, scan: &mut [u64]) {
        let start = self.start;
        // An empty literal matches before the first byte.
        if start < self.match_end {
            self.report(start, scan);
        }
        let mut s = start;
        let advance = self.stepper();
        for b in bytes {
            advance(&mut s, b, scan);
        }
    }

    /// [`DfaTable::scan`] over `hay`, returning the set of its bytes (as
    /// [`crate::transform::triggers::presence`] gives it). The set's words are
    /// updated in the same loop: each byte's update waits for the previous one's
    /// store, and so does each step for the previous one's table lookup, but the
    /// two chains run side by side, where a separate pass would wait again.
    pub(crate) fn scan_collecting(&self, hay: &[u8], scan: &mut [u64]) -> [u64; 4] {
        let start = self.start;
        if start < self.match_end {
            self.report(start, scan);
        }
        let mut s = start;
        let mut seen = [0u64; 4];
        let advance = self.stepper();
        for &b in hay {
            advance(&mut s, b, scan);
            seen[usize::from(b >> 6)] |= 1 << (b & 63);
        }
        seen
    }

    /// [`DfaTable::scan`] over a long value cut into four pieces, each extended by
    /// the longest literal's length less one and scanned from the start state, the
    /// pieces' steps interleaved: one step's table lookup waits for the previous
    /// one (a chain of dependent loads), four independent chains keep the
    /// processor busy. Every occurrence starts in one piece and ends within its
    /// extension, where that piece's scan finds it (a scan from the start state at
    /// a position reports every literal occurring entirely after it); occurrences
    /// found twice set the same bits. So the bits equal [`DfaTable::scan`]'s over
    /// the whole value.
    pub(crate) fn scan_interleaved(&self, hay: &[u8], scan: &mut [u64]) {
        let start = self.start;
        if start < self.match_end {
            self.report(start, scan);
        }
        let overlap = self.max_literal.saturating_sub(1);
        let piece = hay.len().div_ceil(4);
        let lane = |i: usize| {
            let from = (i * piece).min(hay.len());
            let to = ((i + 1) * piece + overlap).min(hay.len());
            &hay[from..to]
        };
        let (l0, l1, l2, l3) = (lane(0), lane(1), lane(2), lane(3));
        let common = l0.len().min(l1.len()).min(l2.len()).min(l3.len());
        let (mut s0, mut s1, mut s2, mut s3) = (start, start, start, start);
        let advance = self.stepper();
        // The common length side by side (no bounds checks: zipped slices) ...
        for (((&a, &b), &c), &d) in l0.iter().zip(l1).zip(l2).zip(l3) {
            advance(&mut s0, a, scan);
            advance(&mut s1, b, scan);
            advance(&mut s2, c, scan);
            advance(&mut s3, d, scan);
        }
        // ... then each piece's rest on its own.
        for (mut s, l) in [(s0, l0), (s1, l1), (s2, l2), (s3, l3)] {
            for &byte in l.get(common..).unwrap_or_default() {
                advance(&mut s, byte, scan);
            }
        }
    }

    /// One scan step: the next state from `s` on byte `b`, its masks ORed into
    /// `scan` when it is a match state. The table, the classes and the bound are
    /// taken into the closure once, so the loops keep them in locals.
    #[inline(always)]
    fn stepper(&self) -> impl Fn(&mut u32, u8, &mut [u64]) + '_ {
        let (trans, classes, end) = (&self.trans[..], &self.classes, self.match_end);
        move |s: &mut u32, b: u8, scan: &mut [u64]| {
            *s = step(trans, classes, *s, b);
            if *s < end {
                self.report(*s, scan);
            }
        }
    }

    /// Calls `f` with every literal ending at each byte of `hay` (once per
    /// occurrence; tests).
    #[cfg(test)]
    pub(crate) fn for_each_match(&self, hay: &[u8], mut f: impl FnMut(usize)) {
        let mut each = |s: u32| {
            let (a, n) = self
                .literal_runs
                .get((s / self.stride) as usize)
                .copied()
                .unwrap_or_default();
            let lits = self.literals.get(a as usize..(a + n) as usize);
            for &p in lits.unwrap_or_default() {
                f(p as usize);
            }
        };
        let mut s = self.start;
        if s < self.match_end {
            each(s);
        }
        for &b in hay {
            s = step(&self.trans, &self.classes, s, b);
            if s < self.match_end {
                each(s);
            }
        }
    }

    /// ORs match state `s`'s masks into `scan`.
    #[cold]
    #[inline(never)]
    fn report(&self, s: u32, scan: &mut [u64]) {
        let (start, len) = self
            .runs
            .get((s / self.stride) as usize)
            .copied()
            .unwrap_or_default();
        let run = self
            .masks
            .get(start as usize..(start + len) as usize)
            .unwrap_or_default();
        for &(w, m) in run {
            if let Some(x) = scan.get_mut(w as usize) {
                *x |= m;
            }
        }
    }
}

/// One transition. Every id in the table is a row start, and a class is below
/// the number of columns, so the lookup is always in bounds (state 0 would stand
/// in should it not be).
#[inline(always)]
fn step(trans: &[u32], classes: &[u8; 256], s: u32, b: u8) -> u32 {
    let c = u32::from(classes[usize::from(b)]);
    trans.get(s.wrapping_add(c) as usize).copied().unwrap_or(0)
}

/// The byte classes of an automaton over `literals` (ASCII case-insensitive; see
/// the module notes), and a byte of each class.
fn byte_classes(literals: &[Vec<u8>]) -> ([u8; 256], Vec<u8>) {
    let mut held = [false; 256];
    for &b in literals.iter().flatten() {
        held[usize::from(b.to_ascii_lowercase())] = true;
        held[usize::from(b.to_ascii_uppercase())] = true;
    }
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    let mut other: Option<u8> = None;
    for b in 0..=255u8 {
        let class = if !held[usize::from(b)] {
            *other.get_or_insert_with(|| {
                reps.push(b);
                (reps.len() - 1) as u8
            })
        } else if b.is_ascii_lowercase() {
            // Its upper case came first.
            classes[usize::from(b.to_ascii_uppercase())]
        } else {
            reps.push(b);
            (reps.len() - 1) as u8
        };
        classes[usize::from(b)] = class;
    }
    (classes, reps)
}
