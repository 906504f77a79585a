//! The prefilter's literal automaton: every occurrence of every literal in a value
//! (overlapping), ASCII case-insensitively.
//!
//! A DFA (aho-corasick's `dfa::DFA`) driven by our own loop: one table lookup per
//! byte and one comparison to notice a match state, where the crate's overlapping
//! iterator pays its per-call search state and bookkeeping on every byte (R2-10k's
//! two 10 KB scans: 19 -> about 6 instructions per byte). A state's match list
//! holds every literal ending there, including those that are suffixes of others,
//! so visiting each state's list is the overlapping search. Should the DFA exceed
//! the builder's limits, a contiguous NFA through the crate's iterator is used.

use aho_corasick::automaton::Automaton as _;
use aho_corasick::{dfa::DFA, AhoCorasick, AhoCorasickKind, Anchored, MatchKind};

/// A compiled literal set.
#[derive(Debug, Clone)]
pub(crate) enum Matcher {
    Dfa(Box<DFA>),
    Other(AhoCorasick),
}

impl Matcher {
    /// An automaton over `literals` (ASCII case-insensitive); `None` when none can
    /// be built.
    pub fn build(literals: &[Vec<u8>]) -> Option<Matcher> {
        let dfa = DFA::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .prefilter(false)
            .build(literals);
        if let Ok(d) = dfa {
            if d.start_state(Anchored::No).is_ok() {
                return Some(Matcher::Dfa(Box::new(d)));
            }
        }
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(literals)
            .ok()
            .map(Matcher::Other)
    }

    /// Heap bytes of the automaton.
    pub fn memory_usage(&self) -> usize {
        match self {
            Matcher::Dfa(d) => d.memory_usage(),
            Matcher::Other(a) => a.memory_usage(),
        }
    }

    /// Calls `f` with the index of every literal occurring in `haystack`, once per
    /// occurrence.
    pub fn for_each_match(&self, haystack: &[u8], f: impl FnMut(usize)) {
        match self {
            Matcher::Dfa(dfa) => run_dfa(dfa, haystack.iter().copied(), f),
            Matcher::Other(ac) => overlapping(ac, haystack, f),
        }
    }

    /// As [`Matcher::for_each_match`] on `haystack` without the bytes `deleted`
    /// holds (`deleted[b]`): the scan of the value a chain that only deletes bytes
    /// would give, without building it.
    pub fn for_each_match_without(
        &self,
        haystack: &[u8],
        deleted: &[bool; 256],
        f: impl FnMut(usize),
    ) {
        let kept = haystack
            .iter()
            .copied()
            .filter(|&b| !deleted[usize::from(b)]);
        match self {
            Matcher::Dfa(dfa) => run_dfa(dfa, kept, f),
            Matcher::Other(ac) => overlapping(ac, &kept.collect::<Vec<u8>>(), f),
        }
    }
}

/// Runs the DFA over `bytes`, reporting every literal ending at each of them.
#[inline]
fn run_dfa(dfa: &DFA, bytes: impl Iterator<Item = u8>, mut f: impl FnMut(usize)) {
    let Ok(mut sid) = dfa.start_state(Anchored::No) else {
        return;
    };
    // An empty literal matches before the first byte.
    if dfa.is_match(sid) {
        for i in 0..dfa.match_len(sid) {
            f(dfa.match_pattern(sid, i).as_usize());
        }
    }
    for b in bytes {
        sid = dfa.next_state(Anchored::No, sid, b);
        if dfa.is_special(sid) {
            report_matches(dfa, sid, &mut f);
        }
    }
}

/// The crate's overlapping search (the automaton is not a DFA).
fn overlapping(ac: &AhoCorasick, haystack: &[u8], mut f: impl FnMut(usize)) {
    for m in ac.find_overlapping_iter(haystack) {
        f(m.pattern().as_usize());
    }
}

/// Reports the literals of a special state (a match state, or one without matches).
#[inline(never)]
fn report_matches(dfa: &DFA, sid: aho_corasick::automaton::StateID, f: &mut impl FnMut(usize)) {
    if dfa.is_match(sid) {
        for i in 0..dfa.match_len(sid) {
            f(dfa.match_pattern(sid, i).as_usize());
        }
    }
}

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
        let m = Matcher::build(&lits).unwrap_or_else(|| panic!("builds"));
        assert!(matches!(m, Matcher::Dfa(_)));
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
        let m = Matcher::build(&[Vec::new(), b"ab".to_vec()]).unwrap_or_else(|| panic!("b"));
        assert!(occurrences(&m, b"").contains(&0));
        assert!(occurrences(&m, b"xyz").contains(&0));
    }
}
