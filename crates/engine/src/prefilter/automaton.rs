//! The prefilter's literal automaton: every occurrence of every literal in a value
//! (overlapping), ASCII case-insensitively, mapped to the rule bits of the literals.
//!
//! aho-corasick builds a DFA, whose transitions and match lists are copied into a
//! flat table of our own ([`DfaTable`]) driven by our own loop: one class lookup,
//! one bounds-checked table lookup and one comparison per byte, where the crate's
//! overlapping iterator pays its per-call search state and bookkeeping on every
//! byte. A match state's rule bits are merged once, when the table is built: a
//! match costs one lookup and an OR per word it touches. The crate's DFA is
//! dropped once copied.
//! Should the DFA exceed the builder's limits, a contiguous NFA through the
//! crate's iterator is used.

use super::table::DfaTable;
use aho_corasick::{dfa::DFA, AhoCorasick, AhoCorasickKind, MatchKind};

/// A compiled literal set with its literals' rule bits.
#[derive(Debug, Clone)]
pub(crate) struct Matcher {
    kind: Kind,
    /// The rule bits of each literal (by literal index).
    literal_rules: Vec<Vec<u32>>,
}

#[derive(Debug, Clone)]
enum Kind {
    Table(Box<DfaTable>),
    Other(AhoCorasick),
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
            if let Some(table) = DfaTable::build(&d, literals, &literal_rules) {
                return Some(Matcher {
                    kind: Kind::Table(Box::new(table)),
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
            Kind::Table(t) => t.memory_usage(),
            Kind::Other(a) => a.memory_usage(),
        }
    }

    /// Whether it is a flat DFA table (not the NFA fallback; tests).
    #[cfg(test)]
    pub fn is_table(&self) -> bool {
        matches!(&self.kind, Kind::Table(_))
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
            (Kind::Table(t), None) if haystack.len() >= INTERLEAVE_MIN => {
                t.scan_interleaved(haystack, scan);
            }
            (_, None) => self.scan_sequential_into(haystack, scan),
            (Kind::Table(t), Some(d)) => {
                t.scan(
                    haystack.iter().copied().filter(|&b| !d[usize::from(b)]),
                    scan,
                );
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

    /// As [`Matcher::scan_into`] without a deleted-byte table, returning the set
    /// of `haystack`'s bytes (as [`crate::transform::triggers::presence`] gives
    /// it): a short value's is collected in the scan's loop.
    pub fn scan_collecting(&self, haystack: &[u8], scan: &mut [u64]) -> [u64; 4] {
        match &self.kind {
            Kind::Table(t) if haystack.len() < INTERLEAVE_MIN => t.scan_collecting(haystack, scan),
            _ => {
                self.scan_into(haystack, None, scan);
                crate::transform::triggers::presence(haystack)
            }
        }
    }

    /// As [`Matcher::scan_into`] without a deleted-byte table, in one piece (short
    /// values; a benchmark's baseline for long ones).
    pub fn scan_sequential_into(&self, haystack: &[u8], scan: &mut [u64]) {
        match &self.kind {
            Kind::Table(t) => t.scan(haystack.iter().copied(), scan),
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
            Kind::Table(t) => t.for_each_match(haystack, f),
            Kind::Other(ac) => {
                for m in ac.find_overlapping_iter(haystack) {
                    f(m.pattern().as_usize());
                }
            }
        }
    }
}

/// Sets bit `r`.
#[inline]
fn set(scan: &mut [u64], r: u32) {
    if let Some(w) = scan.get_mut((r / 64) as usize) {
        *w |= 1 << (r % 64);
    }
}

/// Shortest value scanned as interleaved pieces ([`DfaTable::scan_interleaved`]).
/// The pieces overlap by the longest literal prefix less one (7 bytes), so a
/// 32-byte value scans 60 bytes in four independent chains of lookups instead
/// of 32 in one. Measured with `palisade bench engine` (CRS PL1, without the
/// result cache): R2 and R3 5% faster than from 512 bytes on, as before; from 64
/// bytes on, about the same.
const INTERLEAVE_MIN: usize = 32;

#[cfg(test)]
mod tests {
    use super::Matcher;

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
        assert!(m.is_table());
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
        assert!(m.is_table());
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
        // Long values (scanned as interleaved pieces): literals across the
        // pieces' borders, at the very ends, and none.
        for n in [32usize, 33, 35, 40, 64, 100, 512, 513, 515, 1000, 4099] {
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
        /// A value's bits from interleaved pieces equal the one-piece scan's:
        /// a few literals at random places (across the pieces' borders among
        /// them) in filler no literal occurs in.
        #[test]
        fn interleaved_scans_set_the_bits_of_a_whole_scan(
            lits in prop::collection::vec("[a-cA-C]{1,12}", 1..20),
            len in super::INTERLEAVE_MIN..2600,
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
            let super::Kind::Table(t) = &m.kind else { panic!("a table") };
            let mut whole = vec![0u64; 1];
            t.scan(hay.iter().copied(), &mut whole);
            let mut pieces = vec![0u64; 1];
            m.scan_into(&hay, None, &mut pieces);
            prop_assert_eq!(pieces, whole);
        }
    }
}

#[cfg(test)]
mod table_props {
    use super::Matcher;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// The flat table finds every occurrence the crate's own overlapping
        /// search finds, and no other: literals of letters in both cases, digits,
        /// punctuation and bytes above ASCII, over values of the same bytes and
        /// others no literal holds.
        #[test]
        fn the_table_finds_the_occurrences_the_crate_finds(
            lits in prop::collection::vec(
                prop::collection::vec(prop::sample::select(b"aAbBzZ09<('\"%\x00\xc3\xa9".to_vec()), 0..8),
                1..24,
            ),
            hays in prop::collection::vec(
                prop::collection::vec(prop::sample::select(b"aAbBzZ09<('\"%\x00\xc3\xa9xY -".to_vec()), 0..40),
                1..8,
            ),
        ) {
            let rules: Vec<Vec<u32>> = (0..lits.len() as u32).map(|i| vec![i]).collect();
            let m = Matcher::build(&lits, rules).unwrap_or_else(|| panic!("builds"));
            prop_assert!(m.is_table());
            let ac = aho_corasick::AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(&lits)
                .unwrap_or_else(|e| panic!("{e}"));
            for hay in &hays {
                let mut expected: Vec<usize> = ac
                    .find_overlapping_iter(hay.as_slice())
                    .map(|m| m.pattern().as_usize())
                    .collect();
                expected.sort_unstable();
                let mut found = Vec::new();
                m.for_each_match(hay, |p| found.push(p));
                found.sort_unstable();
                prop_assert_eq!(found, expected);
            }
        }
    }
}
