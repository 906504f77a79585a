//! The prefilter's literal automaton: every occurrence of every literal in a value
//! (overlapping), ASCII case-insensitively, mapped to the rule bits of the literals.
//!
//! A DFA (aho-corasick's `dfa::DFA`) driven by our own loop: one table lookup per
//! byte and one comparison to notice a match state, where the crate's overlapping
//! iterator pays its per-call search state and bookkeeping on every byte (R2-10k's
//! two 10 KB scans: 19 -> about 6 instructions per byte). A state's match list
//! holds every literal ending there, including those that are suffixes of others,
//! so visiting each state's list is the overlapping search. The rule bits of each
//! match state's list are merged once, when the automaton is built
//! ([`StateMasks`]): a match costs one lookup and an OR per word it touches,
//! instead of a pass over the state's literals and each literal's rules. Should
//! the DFA exceed the builder's limits, a contiguous NFA through the crate's
//! iterator is used.

use aho_corasick::automaton::{Automaton as _, StateID};
use aho_corasick::{dfa::DFA, AhoCorasick, AhoCorasickKind, Anchored, MatchKind};

/// A compiled literal set with its literals' rule bits.
#[derive(Debug, Clone)]
pub(crate) struct Matcher {
    kind: Kind,
    /// The rule bits of each literal (by literal index).
    literal_rules: Vec<Vec<u32>>,
}

#[derive(Debug, Clone)]
enum Kind {
    Dfa(Box<DFA>, StateMasks),
    Other(AhoCorasick),
}

/// Per match state of a DFA, the rule bits its literals set, as runs of (word,
/// bits).
#[derive(Debug, Clone, Default)]
struct StateMasks {
    /// Match state -> (start, length) of its run in `masks`.
    states: rustc_hash::FxHashMap<u32, (u32, u32)>,
    masks: Vec<(u32, u64)>,
    /// The same, indexed by `(state >> shift) - lo` (`u32::MAX` starts: not a
    /// match state). The DFA's state ids are indices times a power of two and
    /// its match states lie together, so the table is dense; empty when they
    /// do not (`states` is looked up instead).
    dense: Vec<(u32, u32)>,
    shift: u32,
    lo: u32,
}

impl StateMasks {
    /// The masks of every match state of `dfa`. Every state of an Aho-Corasick
    /// automaton stands for a prefix of a literal, and feeding that prefix from the
    /// start state reaches it, so walking every literal visits every state.
    fn build(dfa: &DFA, literals: &[Vec<u8>], literal_rules: &[Vec<u32>]) -> Option<StateMasks> {
        let start = dfa.start_state(Anchored::No).ok()?;
        let mut m = StateMasks::default();
        m.add(dfa, start, literal_rules);
        for lit in literals {
            let mut sid = start;
            for &b in lit {
                sid = dfa.next_state(Anchored::No, sid, b);
                m.add(dfa, sid, literal_rules);
            }
        }
        m.index();
        Some(m)
    }

    /// Makes the dense table when the match states' ids allow one.
    fn index(&mut self) {
        let Some(shift) = self.states.keys().map(|&k| k.trailing_zeros()).min() else {
            return;
        };
        let shift = shift.min(31);
        let idx = |k: u32| k >> shift;
        let (Some(lo), Some(hi)) = (
            self.states.keys().map(|&k| idx(k)).min(),
            self.states.keys().map(|&k| idx(k)).max(),
        ) else {
            return;
        };
        let span = (hi - lo) as usize + 1;
        if span > 4 * self.states.len() + 64 {
            return;
        }
        self.dense = vec![(u32::MAX, 0); span];
        for (&k, &run) in &self.states {
            self.dense[(idx(k) - lo) as usize] = run;
        }
        self.shift = shift;
        self.lo = lo;
    }

    /// The (start, length) run of match state `sid`.
    #[inline]
    fn run(&self, sid: u32) -> Option<(u32, u32)> {
        if self.dense.is_empty() {
            return self.states.get(&sid).copied();
        }
        match self
            .dense
            .get((sid >> self.shift).wrapping_sub(self.lo) as usize)
        {
            Some(&(start, len))
                if start != u32::MAX && (sid >> self.shift) << self.shift == sid =>
            {
                Some((start, len))
            }
            _ => None,
        }
    }

    /// Records `sid`'s masks (a match state not seen yet).
    fn add(&mut self, dfa: &DFA, sid: StateID, literal_rules: &[Vec<u32>]) {
        if !dfa.is_match(sid) || self.states.contains_key(&sid.as_u32()) {
            return;
        }
        let mut bits: Vec<u32> = (0..dfa.match_len(sid))
            .flat_map(|i| {
                literal_rules
                    .get(dfa.match_pattern(sid, i).as_usize())
                    .into_iter()
                    .flatten()
                    .copied()
            })
            .collect();
        bits.sort_unstable();
        let start = self.masks.len();
        for b in bits {
            let word = b / 64;
            let in_run = self.masks.len() > start;
            match self.masks.last_mut() {
                Some((w, m)) if in_run && *w == word => *m |= 1 << (b % 64),
                _ => self.masks.push((word, 1 << (b % 64))),
            }
        }
        let len = self.masks.len() - start;
        self.states.insert(sid.as_u32(), (start as u32, len as u32));
    }
}

impl Matcher {
    /// An automaton over `literals` (ASCII case-insensitive) whose matches set
    /// the bits `literal_rules` gives each literal; `None` when none can be built.
    pub fn build(literals: &[Vec<u8>], literal_rules: Vec<Vec<u32>>) -> Option<Matcher> {
        let dfa = DFA::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .prefilter(false)
            .build(literals);
        if let Ok(d) = dfa {
            if let Some(masks) = StateMasks::build(&d, literals, &literal_rules) {
                return Some(Matcher {
                    kind: Kind::Dfa(Box::new(d), masks),
                    literal_rules,
                });
            }
        }
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(literals)
            .ok()
            .map(|ac| Matcher {
                kind: Kind::Other(ac),
                literal_rules,
            })
    }

    /// Heap bytes of the automaton and its masks.
    pub fn memory_usage(&self) -> usize {
        match &self.kind {
            Kind::Dfa(d, m) => {
                d.memory_usage() + m.masks.len() * 16 + m.states.len() * 16 + m.dense.len() * 8
            }
            Kind::Other(a) => a.memory_usage(),
        }
    }

    /// Whether match states find their masks in a dense table (tests).
    #[cfg(test)]
    pub fn dense(&self) -> bool {
        matches!(&self.kind, Kind::Dfa(_, m) if !m.dense.is_empty())
    }

    /// The number of literals.
    pub fn literals(&self) -> usize {
        self.literal_rules.len()
    }

    /// Sets in `scan` the rule bits of every literal occurring in `haystack` (or,
    /// with `deleted`, in `haystack` without the bytes it marks: the scan of the
    /// value a chain that only deletes bytes would give, without building it).
    pub fn scan_into(&self, haystack: &[u8], deleted: Option<&[bool; 256]>, scan: &mut [u64]) {
        match (&self.kind, deleted) {
            (Kind::Dfa(dfa, masks), None) if haystack.len() >= INTERLEAVE_MIN => {
                run_dfa_interleaved(dfa, masks, &self.literal_rules, haystack, scan);
            }
            (_, None) => self.scan_sequential_into(haystack, scan),
            (Kind::Dfa(dfa, masks), Some(d)) => {
                let kept = haystack.iter().copied().filter(|&b| !d[usize::from(b)]);
                run_dfa(dfa, masks, &self.literal_rules, kept, scan);
            }
            (Kind::Other(ac), Some(d)) => {
                let kept: Vec<u8> = haystack
                    .iter()
                    .copied()
                    .filter(|&b| !d[usize::from(b)])
                    .collect();
                self.overlapping(ac, &kept, scan);
            }
        }
    }

    /// As [`Matcher::scan_into`] without a deleted-byte table, in one piece (short
    /// values; a benchmark's baseline for long ones).
    pub fn scan_sequential_into(&self, haystack: &[u8], scan: &mut [u64]) {
        match &self.kind {
            Kind::Dfa(dfa, masks) => run_dfa(
                dfa,
                masks,
                &self.literal_rules,
                haystack.iter().copied(),
                scan,
            ),
            Kind::Other(ac) => self.overlapping(ac, haystack, scan),
        }
    }

    /// The crate's overlapping search (the automaton is not a DFA).
    fn overlapping(&self, ac: &AhoCorasick, haystack: &[u8], scan: &mut [u64]) {
        for m in ac.find_overlapping_iter(haystack) {
            for &r in self
                .literal_rules
                .get(m.pattern().as_usize())
                .into_iter()
                .flatten()
            {
                set(scan, r);
            }
        }
    }

    /// Calls `f` with the index of every literal occurring in `haystack`, once per
    /// occurrence (for tests: the scan goes through [`Matcher::scan_into`]).
    #[cfg(test)]
    pub fn for_each_match(&self, haystack: &[u8], mut f: impl FnMut(usize)) {
        match &self.kind {
            Kind::Dfa(dfa, _) => {
                let Ok(mut sid) = dfa.start_state(Anchored::No) else {
                    return;
                };
                let mut report = |sid| {
                    if dfa.is_match(sid) {
                        for i in 0..dfa.match_len(sid) {
                            f(dfa.match_pattern(sid, i).as_usize());
                        }
                    }
                };
                report(sid);
                for &b in haystack {
                    sid = dfa.next_state(Anchored::No, sid, b);
                    report(sid);
                }
            }
            Kind::Other(ac) => {
                for m in ac.find_overlapping_iter(haystack) {
                    f(m.pattern().as_usize());
                }
            }
        }
    }
}

/// Match states found without masks (tests check there are none).
#[cfg(test)]
pub(crate) static FALLBACKS: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// Sets bit `r`.
#[inline]
fn set(scan: &mut [u64], r: u32) {
    if let Some(w) = scan.get_mut((r / 64) as usize) {
        *w |= 1 << (r % 64);
    }
}

/// Runs the DFA over `bytes`, setting the rule bits of every literal ending at
/// each of them.
#[inline]
fn run_dfa(
    dfa: &DFA,
    masks: &StateMasks,
    literal_rules: &[Vec<u32>],
    bytes: impl Iterator<Item = u8>,
    scan: &mut [u64],
) {
    let Ok(mut sid) = dfa.start_state(Anchored::No) else {
        return;
    };
    // An empty literal matches before the first byte.
    if dfa.is_match(sid) {
        report_matches(dfa, masks, literal_rules, sid, scan);
    }
    for b in bytes {
        sid = dfa.next_state(Anchored::No, sid, b);
        if dfa.is_special(sid) && dfa.is_match(sid) {
            report_matches(dfa, masks, literal_rules, sid, scan);
        }
    }
}

/// Shortest value scanned as [`LANES`] interleaved pieces.
const INTERLEAVE_MIN: usize = 512;
/// Pieces of a long value scanned side by side.
const LANES: usize = 4;

/// [`run_dfa`] over a long value cut into [`LANES`] pieces, each extended by the
/// longest literal's length less one and scanned from the start state, the
/// pieces' steps interleaved: one step's table lookup waits for the previous one
/// (a chain of dependent loads, about one byte per load latency), four
/// independent chains keep the processor busy. Every occurrence starts in one
/// piece and ends within its extension, where that piece's scan finds it (a scan
/// from the start state at a position reports every literal occurring entirely
/// after it); occurrences found twice set the same bits. So the bits equal
/// [`run_dfa`]'s over the whole value.
fn run_dfa_interleaved(
    dfa: &DFA,
    masks: &StateMasks,
    literal_rules: &[Vec<u32>],
    hay: &[u8],
    scan: &mut [u64],
) {
    let Ok(start) = dfa.start_state(Anchored::No) else {
        return;
    };
    // An empty literal matches before the first byte.
    if dfa.is_match(start) {
        report_matches(dfa, masks, literal_rules, start, scan);
    }
    let overlap = dfa.max_pattern_len().saturating_sub(1);
    let piece = hay.len().div_ceil(LANES);
    let lane = |i: usize| {
        let from = (i * piece).min(hay.len());
        let to = ((i + 1) * piece + overlap).min(hay.len());
        &hay[from..to]
    };
    // (Four lanes, zipped below: `LANES` is 4.)
    let (l0, l1, l2, l3) = (lane(0), lane(1), lane(2), lane(3));
    let mut sid = [start; LANES];
    // The common length side by side (no bounds checks: zipped slices) ...
    for (((&a, &b), &c), &d) in l0.iter().zip(l1).zip(l2).zip(l3) {
        for (s, byte) in sid.iter_mut().zip([a, b, c, d]) {
            *s = dfa.next_state(Anchored::No, *s, byte);
            if dfa.is_special(*s) && dfa.is_match(*s) {
                report_matches(dfa, masks, literal_rules, *s, scan);
            }
        }
    }
    // ... then each piece's rest on its own.
    let common = l0.len().min(l1.len()).min(l2.len()).min(l3.len());
    for (s, l) in sid.iter_mut().zip([l0, l1, l2, l3]) {
        for &byte in &l[common..] {
            *s = dfa.next_state(Anchored::No, *s, byte);
            if dfa.is_special(*s) && dfa.is_match(*s) {
                report_matches(dfa, masks, literal_rules, *s, scan);
            }
        }
    }
}

/// ORs a match state's masks into `scan`.
#[inline(never)]
fn report_matches(
    dfa: &DFA,
    masks: &StateMasks,
    literal_rules: &[Vec<u32>],
    sid: StateID,
    scan: &mut [u64],
) {
    let Some((start, len)) = masks.run(sid.as_u32()) else {
        // Every match state is recorded when the automaton is built; should one
        // not be, its literals' rules are set one by one.
        #[cfg(test)]
        FALLBACKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for i in 0..dfa.match_len(sid) {
            for &r in literal_rules
                .get(dfa.match_pattern(sid, i).as_usize())
                .into_iter()
                .flatten()
            {
                set(scan, r);
            }
        }
        return;
    };
    let run = masks
        .masks
        .get(start as usize..(start + len) as usize)
        .unwrap_or_default();
    for &(w, m) in run {
        if let Some(x) = scan.get_mut(w as usize) {
            *x |= m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Matcher;
    use aho_corasick::automaton::Automaton as _;
    use aho_corasick::Anchored;

    /// Every (pattern, end) occurrence, sorted.
    fn occurrences(m: &Matcher, hay: &[u8]) -> Vec<usize> {
        let mut v = Vec::new();
        m.for_each_match(hay, |p| v.push(p));
        v.sort_unstable();
        v
    }

    #[test]
    fn reports_every_overlapping_occurrence_case_insensitively() {
        let lits: Vec<Vec<u8>> = ["select", "elect", "lec", "zz", "s"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let m =
            Matcher::build(&lits, vec![Vec::new(); lits.len()]).unwrap_or_else(|| panic!("builds"));
        assert!(matches!(m.kind, super::Kind::Dfa(..)));
        // "SELECT select": select x2, elect x2, lec x2, s x2 (the `s` of each).
        assert_eq!(
            occurrences(&m, b"SELECT select"),
            vec![0, 0, 1, 1, 2, 2, 4, 4]
        );
        assert!(occurrences(&m, b"").is_empty());
        // The same as the crate's own overlapping iterator.
        let ac = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(&lits)
            .unwrap_or_else(|e| panic!("{e}"));
        for hay in [&b"zzz sElEcTs"[..], b"lecselectzz", b"nothing here"] {
            let mut expected: Vec<usize> = ac
                .find_overlapping_iter(hay)
                .map(|m| m.pattern().as_usize())
                .collect();
            expected.sort_unstable();
            assert_eq!(occurrences(&m, hay), expected, "{hay:?}");
        }
    }

    #[test]
    fn an_empty_literal_matches_every_value() {
        let m = Matcher::build(&[Vec::new(), b"ab".to_vec()], vec![vec![0], vec![1]])
            .unwrap_or_else(|| panic!("b"));
        assert!(occurrences(&m, b"").contains(&0));
        assert!(occurrences(&m, b"xyz").contains(&0));
    }

    /// The bits each literal occurrence sets, one by one.
    fn bits_by_literal(m: &Matcher, hay: &[u8]) -> Vec<u64> {
        let mut scan = vec![0u64; 2];
        m.for_each_match(hay, |p| {
            for &r in &m.literal_rules[p] {
                scan[(r / 64) as usize] |= 1 << (r % 64);
            }
        });
        scan
    }

    #[test]
    fn state_masks_set_the_bits_of_every_literal_ending_there() {
        // Literals that are suffixes of others (their states' lists hold several),
        // shared and spread rule bits over two words.
        let lits: Vec<Vec<u8>> = ["select", "elect", "lect", "ct", "union", "on", "<", "("]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let rules = vec![
            vec![0, 70],
            vec![1],
            vec![2, 3, 64],
            vec![5],
            vec![6, 127],
            vec![7],
            vec![8, 9],
            vec![],
        ];
        let m = Matcher::build(&lits, rules).unwrap_or_else(|| panic!("builds"));
        assert!(matches!(&m.kind, super::Kind::Dfa(_, masks) if !masks.dense.is_empty()));
        for hay in [
            &b"SELECT * FROM t UNION select"[..],
            b"lect",
            b"x<(on",
            b"nothing",
            b"",
            b"ctct eLeCt",
        ] {
            let mut scan = vec![0u64; 2];
            m.scan_into(hay, None, &mut scan);
            assert_eq!(
                scan,
                bits_by_literal(&m, hay),
                "{:?}",
                String::from_utf8_lossy(hay)
            );
        }
        // Every match state a scan reaches was recorded when the automaton was
        // built (the fallback is never taken).
        let super::Kind::Dfa(dfa, masks) = &m.kind else {
            panic!("a DFA")
        };
        let mut sid = dfa
            .start_state(Anchored::No)
            .unwrap_or_else(|e| panic!("{e}"));
        for &b in b"xSeLeCt unIOn lEcT <(( ct".iter() {
            sid = dfa.next_state(Anchored::No, sid, b);
            if dfa.is_match(sid) {
                assert!(masks.states.contains_key(&sid.as_u32()));
                assert_eq!(
                    masks.run(sid.as_u32()),
                    masks.states.get(&sid.as_u32()).copied()
                );
            }
        }
        // Long values (scanned as interleaved pieces): literals across the
        // pieces' borders, at the very ends, and none.
        for n in [512usize, 513, 515, 1000, 4099] {
            for at in [0, 1, n / 4 - 3, n / 4 - 1, n / 2 - 2, 3 * n / 4 - 5, n - 6] {
                let mut hay = vec![b'x'; n];
                hay[at..at + 6].copy_from_slice(b"sElEcT");
                hay[n - 2..].copy_from_slice(b"on");
                let mut scan = vec![0u64; 2];
                m.scan_into(&hay, None, &mut scan);
                assert_eq!(scan, bits_by_literal(&m, &hay), "{n} {at}");
            }
        }
        // The same through a deleted-byte table.
        let mut deleted = [false; 256];
        deleted[usize::from(b' ')] = true;
        let mut scan = vec![0u64; 2];
        m.scan_into(b"se lect", Some(&deleted), &mut scan);
        assert_eq!(scan, bits_by_literal(&m, b"select"));
    }
}

#[cfg(test)]
mod interleave_props {
    use super::Matcher;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// A long value's bits (interleaved pieces) equal the one-piece scan's:
        /// a few literals at random places (across the pieces' borders among
        /// them) in filler no literal occurs in.
        #[test]
        fn interleaved_scans_set_the_bits_of_a_whole_scan(
            lits in prop::collection::vec("[a-cA-C]{1,12}", 1..20),
            len in 512usize..2600,
            places in prop::collection::vec((0usize..5, 0usize..14, 0usize..20), 0..4),
        ) {
            // Each place: a piece border (0 and 4: the value's ends), a distance
            // before it, a literal.
            let mut hay = vec![b'x'; len];
            for &(border, back, which) in &places {
                let lit = lits[which % lits.len()].as_bytes();
                let at = (border * len.div_ceil(4)).saturating_sub(back).min(len - lit.len());
                hay[at..at + lit.len()].copy_from_slice(lit);
            }
            let lits: Vec<Vec<u8>> = lits.into_iter().map(String::into_bytes).collect();
            let rules: Vec<Vec<u32>> = (0..lits.len() as u32).map(|i| vec![i]).collect();
            let m = Matcher::build(&lits, rules).unwrap_or_else(|| panic!("builds"));
            let super::Kind::Dfa(dfa, masks) = &m.kind else { panic!("a DFA") };
            let mut whole = vec![0u64; 1];
            super::run_dfa(dfa, masks, &m.literal_rules, hay.iter().copied(), &mut whole);
            let mut pieces = vec![0u64; 1];
            m.scan_into(&hay, None, &mut pieces);
            prop_assert_eq!(pieces, whole);
        }
    }
}
