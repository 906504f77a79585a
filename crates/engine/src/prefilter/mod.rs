//! The multi-pattern prefilter: "one complex regex beats many simple rules", done by
//! the compiler so that every rule keeps its identity.
//!
//! At load time, every operator that can only match when one of a few literals
//! occurs in its input (`@rx` with required literals, `@pm`/`@pmFromFile` phrases,
//! `@contains`, `@beginsWith`, `@endsWith`, `@streq`, `@containsWord`) gives that
//! literal set; all sets go into one ASCII-case-insensitive Aho-Corasick automaton.
//! The automaton holds one [`PREFIX_MAX`]-byte piece of each longer literal only
//! (the one benign text holds least, see [`window`]): a value that contains a
//! literal contains each of its pieces, so the test stays a necessary condition,
//! and the automaton is small enough to be a DFA (one table lookup per byte).
//! At run time, a value transformed by a chain is scanned once (overlapping search,
//! so no literal hides another) and the scan says, as a bit set over rules, which of
//! those rules may match; the others are known not to match without running their
//! operator. The prefilter can only say "maybe": matching case-insensitively and
//! choosing necessary (not sufficient) literals only adds candidates, never hides a
//! match. `Options::verify` checks this on every skipped evaluation.
//!
//! A second, cheaper test covers operators without usable literals: the bytes a
//! match needs (see [`bytes`]), checked against the set of bytes the scanned value
//! contains.
//!
//! Required literals of a regular expression are derived from its syntax tree (see
//! [`literals`]).

pub mod anchored;
pub mod anchored_end;
pub(crate) mod automaton;
pub mod bytes;
mod few;
mod literals;
mod table;
mod window;

#[cfg(test)]
pub(crate) use literals::restricted;
pub use literals::{
    regex_anchored_end, regex_literals, regex_min_len, regex_required, RequiredLiterals,
};

use crate::transform::triggers::ByteMask;
use automaton::Matcher;
use bytes::ByteReq;
use few::FewLiterals;

/// Literals are cut to a piece of this many bytes (see [`window`]). Over the CRS's
/// 6,000 distinct literals a
/// DFA of the whole literals takes 85 MB (a contiguous NFA 2 MB, at two to five
/// times the instructions per byte); of 8-byte prefixes 7 MB, and the response-body
/// automaton's 2,363 literals 2.5 MB instead of 31 MB. Shorter prefixes admit more
/// rules for nothing smaller: at 6 bytes R1 scans cost more than at 8.
pub const PREFIX_MAX: usize = 8;

/// What the prefilter knows of one rule's operator: literals one of which every
/// match contains, and bytes every match contains (at least one of the two).
#[derive(Debug, Clone, Default)]
pub struct RuleTest {
    /// The rule's bit.
    pub bit: u32,
    /// Required literals (`None`: no usable literal).
    pub literals: Option<Vec<Vec<u8>>>,
    /// Required bytes (see [`bytes`]).
    pub bytes: Option<ByteReq>,
    /// Bytes whose presence admits a value without a literal (see
    /// [`RequiredLiterals::escape`]).
    pub escape: Option<ByteMask>,
    /// A value on which this matches at its start is admitted without a literal
    /// (see [`RequiredLiterals::anchored`]).
    pub anchored: Option<std::sync::Arc<anchored::AnchoredStart>>,
    /// A value whose end this test rules out is not admitted, whatever else
    /// admits it (see [`anchored_end`]).
    pub end: Option<std::sync::Arc<anchored_end::AnchoredEnd>>,
}

impl RuleTest {
    /// The fewest bytes a value the operator matches holds: every match holds
    /// one of the literals, or (with escape bytes, or only required bytes) at
    /// least one byte. 0 when nothing is known.
    pub fn min_match_len(&self) -> usize {
        // A match at the start holds no literal, and may be empty.
        if self.anchored.is_some() {
            return 0;
        }
        let byte = usize::from(self.escape.is_some() || self.bytes.is_some());
        match &self.literals {
            Some(lits) if !lits.is_empty() => {
                let shortest = lits.iter().map(Vec::len).min().unwrap_or(0);
                if self.escape.is_some() {
                    shortest.min(1)
                } else {
                    shortest
                }
            }
            _ => byte,
        }
    }
}

/// The compiled prefilter of a program.
///
/// A scan result is a word array of [`Prefilter::scan_words`]: the rule bits
/// (a rule without literals always has its bit set), then the value's presence
/// set ([`bytes::PRESENCE_WORDS`] words). Results of several values combine by
/// OR: a rule admitted by the union may match one of them.
#[derive(Debug, Clone)]
pub struct Prefilter {
    /// The main automaton (with each literal's rule bits).
    ac: Option<Matcher>,
    /// Number of rule bits.
    rules: u32,
    /// The bits of rules without literals (set in every scan).
    always: Vec<u64>,
    /// Byte requirements by rule bit.
    bytes: Vec<Option<ByteReq>>,
    /// The bits of rules with a byte requirement (the others are admitted by
    /// their bit alone: see [`Prefilter::admitted_in`]).
    with_req: Vec<u64>,
    /// Rules whose bit a scan also sets when the value holds one of their escape
    /// bytes: per byte (lower-cased, as presence sets hold them), its run in
    /// `escape_bits`, the bits of the rules it admits as (word, bits) pairs.
    escape_runs: Vec<(u32, u32)>,
    escape_bits: Vec<(u32, u64)>,
    /// The union of the escape bytes.
    escape_union: ByteMask,
    /// The automaton for long values (see [`Prefilter::add_long`]).
    long: Option<LongScan>,
    /// Long-value scans under chains that delete these bytes, when their rules
    /// have few literals (see [`Prefilter::add_deleting`]).
    deleting: Vec<(ByteMask, FewLiterals)>,
    /// Rules whose bit a scan also sets when their anchored start matches the
    /// value (see [`anchored`]), with those tests.
    anchored: anchored::AnchoredSet,
    /// Rules whose bit a scan of a value clears again when their anchored end
    /// rules the value out (see [`anchored_end`]), with those tests, by bit ...
    ends: Vec<(u32, std::sync::Arc<anchored_end::AnchoredEnd>)>,
    /// ... and their bits, as (word, bits) pairs: at most [`END_WORDS`].
    end_words: Vec<(u32, u64)>,
}

/// The most words of rule bits holding rules with an anchored end (see
/// [`Prefilter::veto_ends`], which tests each such word on every scan): rules
/// in further words have no test.
const END_WORDS: usize = 2;

/// A second automaton over the literals of the rules that read one long variable
/// (the response body): it holds only those rules' literals, so it has fewer
/// matches to report per byte of a long value. A scan with it sets the bits of
/// those rules only (and of the rules without literals), so it is used only for
/// values no other rule reads.
#[derive(Debug, Clone)]
struct LongScan {
    ac: Matcher,
}

impl Prefilter {
    /// Builds the prefilter from `(rule bit, literals)` pairs; `None` when no rule
    /// has literals.
    pub fn build(sets: &[(u32, Vec<Vec<u8>>)]) -> Option<Prefilter> {
        let tests: Vec<RuleTest> = sets
            .iter()
            .map(|(bit, lits)| RuleTest {
                bit: *bit,
                literals: Some(lits.clone()),
                ..RuleTest::default()
            })
            .collect();
        Prefilter::build_tests(&tests)
    }

    /// Builds the prefilter from the rules' tests; `None` when no rule has one.
    pub fn build_tests(tests: &[RuleTest]) -> Option<Prefilter> {
        Prefilter::build_main(tests, |_| true)
    }

    /// Builds the prefilter with a long-value automaton (see
    /// [`Prefilter::add_long`]) over the tests `reads_long` selects. The main
    /// automaton leaves out the literals of the tests `long_only` selects (rules
    /// that read the long variable and nothing else): every value they inspect is
    /// scanned by the long-value automaton, so the main one is smaller and faster
    /// for nothing (with the CRS's response-body rules: 7 MB -> 4 MB).
    pub fn build_with_long(
        tests: &[RuleTest],
        reads_long: impl Fn(u32) -> bool,
        long_only: impl Fn(u32) -> bool,
    ) -> Option<Prefilter> {
        let mut pf = Prefilter::build_main(tests, |bit| !long_only(bit))?;
        pf.add_long(tests, reads_long);
        Some(pf)
    }

    /// As [`Prefilter::build_tests`], the main automaton holding the literals of
    /// the tests `in_main` selects only.
    fn build_main(tests: &[RuleTest], in_main: impl Fn(u32) -> bool) -> Option<Prefilter> {
        let tests: Vec<RuleTest> = tests.iter().map(single_bytes_escape).collect();
        let tests = &tests[..];
        let rules = tests.iter().map(|t| t.bit + 1).max().unwrap_or(0);
        let mut always = vec![0u64; (rules as usize).div_ceil(64)];
        let mut bytes: Vec<Option<ByteReq>> = vec![None; rules as usize];
        let mut useful = false;
        // Per escape byte, the bits of its rules by word.
        let mut escapes: Vec<std::collections::BTreeMap<u32, u64>> = vec![Default::default(); 256];
        let mut escape_union = [0u64; 4];
        for t in tests {
            if let Some(e) = t.escape {
                for b in 0..256usize {
                    if e[b >> 6] & (1 << (b & 63)) != 0 {
                        *escapes[b].entry(t.bit / 64).or_default() |= 1 << (t.bit % 64);
                    }
                }
                for (u, x) in escape_union.iter_mut().zip(e) {
                    *u |= x;
                }
            }
            bytes[t.bit as usize] = t.bytes.clone();
            useful |= t.bytes.is_some();
            if t.literals.is_none() {
                always[(t.bit / 64) as usize] |= 1 << (t.bit % 64);
            }
        }
        if !useful && tests.iter().all(|t| t.literals.is_none()) {
            return None;
        }
        let mut with_req = vec![0u64; (rules as usize).div_ceil(64)];
        for (bit, req) in bytes.iter().enumerate() {
            if req.is_some() {
                with_req[bit / 64] |= 1 << (bit % 64);
            }
        }
        let mut escape_runs = Vec::with_capacity(256);
        let mut escape_bits = Vec::new();
        for bits in escapes {
            let from = escape_bits.len() as u32;
            escape_bits.extend(bits);
            escape_runs.push((from, escape_bits.len() as u32 - from));
        }
        let (literals, literal_rules) = index_literals(tests.iter().filter(|t| in_main(t.bit)));
        let ac = if literals.is_empty() {
            None
        } else {
            Some(Matcher::build(&literals, literal_rules)?)
        };
        let anchored = anchored::AnchoredSet::build(
            tests
                .iter()
                .filter_map(|t| t.anchored.clone().map(|a| (t.bit, a)))
                .collect(),
        );
        let mut ends: Vec<_> = tests
            .iter()
            .filter_map(|t| t.end.clone().map(|e| (t.bit, e)))
            .collect();
        ends.sort_by_key(|(bit, _)| *bit);
        let mut end_words: Vec<(u32, u64)> = Vec::new();
        ends.retain(|(bit, _)| {
            let w = bit / 64;
            if let Some((_, m)) = end_words.iter_mut().find(|(x, _)| *x == w) {
                *m |= 1 << (bit % 64);
                return true;
            }
            if end_words.len() == END_WORDS {
                return false;
            }
            end_words.push((w, 1 << (bit % 64)));
            true
        });
        Some(Prefilter {
            ac,
            rules,
            always,
            bytes,
            with_req,
            escape_runs,
            escape_bits,
            escape_union,
            long: None,
            deleting: Vec::new(),
            anchored,
            ends,
            end_words,
        })
    }

    /// Adds the long-value automaton over the literals of the tests whose bit
    /// `in_subset` selects (the rules that read the long variable); nothing when
    /// none has literals.
    pub fn add_long(&mut self, tests: &[RuleTest], in_subset: impl Fn(u32) -> bool) {
        // One-byte literals are escape bytes (see `single_bytes_escape`), set by
        // every scan.
        let tests: Vec<RuleTest> = tests.iter().map(single_bytes_escape).collect();
        let (literals, literal_rules) = index_literals(tests.iter().filter(|t| in_subset(t.bit)));
        if literals.is_empty() {
            return;
        }
        self.long = Matcher::build(&literals, literal_rules).map(|ac| LongScan { ac });
    }

    /// Makes the long-value scans that skip the bytes `deleted` (see
    /// [`Prefilter::scan_long_without_into`]) search the literals of the tests
    /// `in_subset` selects directly, when they are few (see [`few`]); nothing
    /// otherwise. Such a scan sets the bits of those rules only (and of the rules
    /// without literals or with an escape byte present): `in_subset` must select
    /// every rule that reads the long variable through a chain, or a `multiMatch`
    /// chain prefix, deleting exactly `deleted`. Returns whether it did.
    pub fn add_deleting(
        &mut self,
        deleted: ByteMask,
        tests: &[RuleTest],
        in_subset: impl Fn(u32) -> bool,
    ) -> bool {
        if self.deleting.iter().any(|(d, _)| *d == deleted) {
            return false;
        }
        let (literals, literal_rules) = index_literals(tests.iter().filter(|t| in_subset(t.bit)));
        match FewLiterals::build(literals, literal_rules) {
            Some(few) => {
                self.deleting.push((deleted, few));
                true
            }
            None => false,
        }
    }

    /// The number of deleted-byte sets searched directly (tests).
    #[cfg(test)]
    pub(crate) fn deleting_searches(&self) -> usize {
        self.deleting.len()
    }

    /// Whether a long-value automaton exists.
    pub fn has_long(&self) -> bool {
        self.long.is_some()
    }

    /// Words of a rule bit set.
    pub fn words(&self) -> usize {
        (self.rules as usize).div_ceil(64)
    }

    /// Words of a scan result: rule bits, then the presence set.
    pub fn scan_words(&self) -> usize {
        self.words() + bytes::PRESENCE_WORDS
    }

    /// Scans `value` once into `scan` (resized to [`Prefilter::scan_words`]).
    pub fn scan(&self, value: &[u8], scan: &mut Vec<u64>) {
        scan.clear();
        scan.resize(self.scan_words(), 0);
        self.scan_fresh_into(value, scan);
    }

    /// As [`Prefilter::scan`], ORed into `scan` (of [`Prefilter::scan_words`]
    /// words, which may hold other values' scans: no anchored end is tested).
    pub fn scan_into(&self, value: &[u8], scan: &mut [u64]) {
        self.scan_raw(value, scan);
    }

    /// As [`Prefilter::scan_into`], into zeroed words: the rules whose anchored
    /// end rules `value` out are taken out again (see [`anchored_end`]).
    pub fn scan_fresh_into(&self, value: &[u8], scan: &mut [u64]) {
        self.scan_raw(value, scan);
        self.veto_ends(value, scan);
    }

    /// As [`Prefilter::scan_fresh_into`], returning the set of `value`'s bytes
    /// (not lower-cased: as [`crate::transform::triggers::presence`] gives it),
    /// which the automaton's loop collects.
    pub fn scan_into_collecting(&self, value: &[u8], scan: &mut [u64]) -> ByteMask {
        let raw = self.scan_raw(value, scan);
        self.veto_ends(value, scan);
        raw
    }

    /// The scan of `value` ORed into `scan`, returning its bytes (see
    /// [`Prefilter::scan_into_collecting`]).
    fn scan_raw(&self, value: &[u8], scan: &mut [u64]) -> ByteMask {
        for (s, a) in scan.iter_mut().zip(&self.always) {
            *s |= a;
        }
        let raw = match &self.ac {
            Some(ac) => ac.scan_collecting(value, scan),
            None => crate::transform::triggers::presence(value),
        };
        self.add_presence_and_escape(&crate::transform::triggers::lowered(&raw), scan);
        self.add_anchored(value, scan);
        raw
    }

    /// After the scan of one value into zeroed words `scan`: clears the bits of
    /// the rules whose anchored end rules `value` out (see [`anchored_end`]).
    #[inline]
    fn veto_ends(&self, value: &[u8], scan: &mut [u64]) {
        // A value with a line end: a match may end before it (its presence set
        // is in the scan already).
        if scan.get(self.words()).is_none_or(|p| p & (1 << b'\n') != 0) {
            return;
        }
        for &(w, m) in &self.end_words {
            let set = scan.get(w as usize).map_or(0, |x| x & m);
            if set != 0 {
                self.veto_ends_slow(value, scan, w, set);
            }
        }
    }

    /// [`Prefilter::veto_ends`] for the bits `set` of word `w`.
    #[inline(never)]
    fn veto_ends_slow(&self, value: &[u8], scan: &mut [u64], w: u32, set: u64) {
        let mut set = set;
        while set != 0 {
            let bit = w * 64 + set.trailing_zeros();
            set &= set - 1;
            let Ok(k) = self.ends.binary_search_by_key(&bit, |(b, _)| *b) else {
                continue;
            };
            if !self.ends[k].1.may_end_without_newline(value) {
                if let Some(x) = scan.get_mut(w as usize) {
                    *x &= !(1 << (bit % 64));
                }
            }
        }
    }

    /// Sets the bits of the rules whose anchored start matches `value` (see
    /// [`anchored`]; most prefilters have no such rule).
    #[inline]
    fn add_anchored(&self, value: &[u8], scan: &mut [u64]) {
        if self.anchored.is_empty() {
            return;
        }
        self.add_anchored_slow(value, scan);
    }

    #[inline(never)]
    fn add_anchored_slow(&self, value: &[u8], scan: &mut [u64]) {
        self.anchored.scan(value, scan);
    }

    /// Sets the bits of every rule with an anchored start: a scan of bytes the
    /// value does not hold as such (the response body less deleted bytes)
    /// cannot run the tests.
    fn add_all_anchored(&self, scan: &mut [u64]) {
        self.anchored.set_all(scan);
    }

    /// ORs a presence set into a scan's presence words and sets the escape bits
    /// of the result (every scan ends here), from the words as ORed (in
    /// registers): reading the four words back from `scan` as one wide load
    /// would wait for the four stores just made, which cannot be forwarded to it.
    #[inline]
    fn add_presence_and_escape(&self, presence: &ByteMask, scan: &mut [u64]) {
        let words = self.words();
        let Some(held) = scan.get_mut(words..words + bytes::PRESENCE_WORDS) else {
            return;
        };
        let p = [
            held[0] | presence[0],
            held[1] | presence[1],
            held[2] | presence[2],
            held[3] | presence[3],
        ];
        held.copy_from_slice(&p);
        if !crate::transform::triggers::disjoint(&p, &self.escape_union) {
            self.escape_slow(&p, scan);
        }
    }

    /// As [`Prefilter::scan_fresh_into`], with `value`'s presence set already
    /// known (its bytes lower-cased, as [`bytes::presence`] gives them).
    pub fn scan_into_with_presence(&self, value: &[u8], presence: &[u64; 4], scan: &mut [u64]) {
        self.scan_with(self.ac.as_ref(), value, None, scan);
        self.add_presence_and_escape(presence, scan);
        self.add_anchored(value, scan);
        self.veto_ends(value, scan);
    }

    #[inline(never)]
    fn escape_slow(&self, presence: &ByteMask, scan: &mut [u64]) {
        for (w, (&p, &u)) in presence.iter().zip(&self.escape_union).enumerate() {
            let mut present = p & u;
            while present != 0 {
                let b = w * 64 + present.trailing_zeros() as usize;
                present &= present - 1;
                let (from, n) = self.escape_runs.get(b).copied().unwrap_or_default();
                let run = self
                    .escape_bits
                    .get(from as usize..(from + n) as usize)
                    .unwrap_or_default();
                for &(w, m) in run {
                    if let Some(x) = scan.get_mut(w as usize) {
                        *x |= m;
                    }
                }
            }
        }
    }

    /// The always-admitted bits and the rule bits of the literals `ac` finds in
    /// `value` (without the bytes `deleted` marks, if given).
    fn scan_with(
        &self,
        ac: Option<&Matcher>,
        value: &[u8],
        deleted: Option<&[bool; 256]>,
        scan: &mut [u64],
    ) {
        for (s, a) in scan.iter_mut().zip(&self.always) {
            *s |= a;
        }
        if let Some(ac) = ac {
            ac.scan_into(value, deleted, scan);
        }
    }

    /// As [`Prefilter::scan_into`] with the long-value automaton (the plain one when
    /// there is none): only the bits of the rules given to [`Prefilter::add_long`]
    /// (and of the rules without literals) are set.
    pub fn scan_long_into(&self, value: &[u8], scan: &mut [u64]) {
        self.scan_with(self.long_automaton(), value, None, scan);
        self.add_presence_and_escape(&lowered_presence(value), scan);
        self.add_anchored(value, scan);
    }

    /// As [`Prefilter::scan_long_into`] with the automaton's one-piece loop (no
    /// interleaving): the baseline of `benches/long_scan.rs`.
    #[doc(hidden)]
    pub fn scan_long_into_sequential(&self, value: &[u8], scan: &mut [u64]) {
        self.scan_with(None, value, None, scan);
        if let Some(m) = self.long_automaton() {
            m.scan_sequential_into(value, scan);
        }
        self.add_presence_and_escape(&lowered_presence(value), scan);
        self.add_anchored(value, scan);
    }

    /// The long-value automaton (the plain one when there is none).
    fn long_automaton(&self) -> Option<&Matcher> {
        match &self.long {
            Some(long) => Some(&long.ac),
            None => self.ac.as_ref(),
        }
    }

    /// As [`Prefilter::scan_long_into`] on `value` less every byte of `deleted`
    /// (a set without letters), up to case: the long-value scan of the result of a
    /// chain that only deletes bytes and changes case (`removeWhitespace,lowercase`
    /// on a response body), without building it. With a search made for these
    /// bytes by [`Prefilter::add_deleting`], only its rules' bits are set.
    pub fn scan_long_without_into(&self, value: &[u8], deleted: &[u64; 4], scan: &mut [u64]) {
        self.scan_long_without_into_with_presence(value, deleted, None, scan);
    }

    /// As [`Prefilter::scan_long_without_into`], with `value`'s presence set when
    /// known (as [`bytes::presence`] gives it: the raw value's scan holds it).
    pub fn scan_long_without_into_with_presence(
        &self,
        value: &[u8],
        deleted: &[u64; 4],
        presence: Option<&[u64]>,
        scan: &mut [u64],
    ) {
        let mut table = [false; 256];
        for (b, d) in table.iter_mut().enumerate() {
            *d = deleted[b >> 6] & (1 << (b & 63)) != 0;
        }
        match self.deleting.iter().find(|(d, _)| d == deleted) {
            Some((_, few)) => {
                self.scan_with(None, value, None, scan);
                few.scan_into(value, &table, scan);
            }
            None => self.scan_with(self.long_automaton(), value, Some(&table), scan),
        }
        let mut present = match presence {
            Some(known) => {
                let mut p = [0u64; 4];
                for (x, k) in p.iter_mut().zip(known) {
                    *x = *k;
                }
                p
            }
            None => lowered_presence(value),
        };
        for (x, d) in present.iter_mut().zip(deleted) {
            *x &= !d;
        }
        self.add_presence_and_escape(&present, scan);
        self.add_all_anchored(scan);
    }

    /// Whether the rule with `bit` may match a value (or one of the values) with
    /// this scan result: one of its literals occurred and every byte set it
    /// requires has a byte present.
    pub fn admits(&self, scan: &[u64], bit: u32) -> bool {
        self.bit_test(bit).admits(scan)
    }

    /// [`Prefilter::admits`] for `bit`, worked out once for the values of one
    /// rule.
    #[inline]
    pub fn bit_test(&self, bit: u32) -> BitTest<'_> {
        BitTest {
            word: (bit / 64) as usize,
            mask: 1 << (bit % 64),
            presence: self.words(),
            req: self.byte_req(bit),
        }
    }

    /// Of the bits `candidates` of word `w`, set in the scan result `scan`, those
    /// [`Prefilter::admits`] admits: a bit without a byte requirement by itself,
    /// one with a requirement when the scan's presence set meets it (tested bit
    /// by bit for those only).
    #[inline]
    pub fn admitted_in(&self, scan: &[u64], w: u32, candidates: u64) -> u64 {
        if candidates == 0 {
            return 0;
        }
        let req = self.with_req.get(w as usize).copied().unwrap_or(0);
        let mut admitted = candidates & !req;
        let mut tested = candidates & req;
        while tested != 0 {
            let t = tested.trailing_zeros();
            tested &= tested - 1;
            if self.admits(scan, w * 64 + t) {
                admitted |= 1 << t;
            }
        }
        admitted
    }

    /// Whether the rule with `bit` has an anchored end test (see
    /// [`anchored_end`]).
    pub fn has_end(&self, bit: u32) -> bool {
        // (`ends` is sorted by bit, as `veto_ends_slow` searches it.)
        self.ends.binary_search_by_key(&bit, |(b, _)| *b).is_ok()
    }

    /// The byte requirement of the rule with `bit`.
    pub fn byte_req(&self, bit: u32) -> Option<&ByteReq> {
        self.bytes.get(bit as usize).and_then(Option::as_ref)
    }

    /// Heap bytes of the automata.
    pub fn automaton_bytes(&self) -> usize {
        self.ac.as_ref().map_or(0, Matcher::memory_usage)
            + self.long.as_ref().map_or(0, |l| l.ac.memory_usage())
            + self.anchored.memory_usage()
            + self
                .ends
                .iter()
                .map(|(_, e)| e.memory_usage())
                .sum::<usize>()
    }

    /// Whether both automata are flat DFA tables, not the NFA fallback (tests).
    #[cfg(test)]
    pub(crate) fn tables(&self) -> bool {
        self.ac.as_ref().is_some_and(Matcher::is_table)
            && self.long.as_ref().is_none_or(|l| l.ac.is_table())
    }

    /// Number of distinct literal pieces of the main automaton.
    pub fn literal_count(&self) -> usize {
        self.ac.as_ref().map_or(0, Matcher::literals)
    }

    /// Number of distinct literal pieces of the long-value automaton.
    pub fn long_literal_count(&self) -> usize {
        self.long.as_ref().map_or(0, |l| l.ac.literals())
    }
}

/// `t` with its one-byte literals turned into escape bytes: a value holds such a
/// literal exactly when its presence set (lower-cased, as the automaton matches
/// ASCII case-insensitively) holds the byte. The automaton is then left the
/// literals that discriminate: a one-byte literal (`=`, `1`, `;`) occurs in most
/// values, and every state whose path ends with it is a match state to report.
fn single_bytes_escape(t: &RuleTest) -> RuleTest {
    let mut t = t.clone();
    let Some(lits) = t.literals.as_mut() else {
        return t;
    };
    if lits.iter().all(|l| l.len() != 1) {
        return t;
    }
    let mut escape = t.escape.unwrap_or_default();
    lits.retain(|l| match l[..] {
        [b] => {
            let b = b.to_ascii_lowercase();
            escape[usize::from(b >> 6)] |= 1 << (b & 63);
            false
        }
        _ => true,
    });
    t.escape = Some(escape);
    t
}

/// The set of `value`'s bytes, folded to lower case ([`bytes::presence`]).
fn lowered_presence(value: &[u8]) -> ByteMask {
    let mut p = [0u64; 4];
    bytes::presence(value, &mut p);
    p
}

/// The distinct lower-cased literal pieces (see [`PREFIX_MAX`] and [`window`]) of
/// `tests`, and for each the bits of the rules it admits.
fn index_literals<'a>(tests: impl Iterator<Item = &'a RuleTest>) -> (Vec<Vec<u8>>, Vec<Vec<u32>>) {
    let mut literals: Vec<Vec<u8>> = Vec::new();
    let mut index: std::collections::HashMap<Vec<u8>, usize> = std::collections::HashMap::new();
    let mut literal_rules: Vec<Vec<u32>> = Vec::new();
    let pieces = window::Pieces::new();
    for t in tests {
        for lit in t.literals.iter().flatten() {
            let key = pieces.window(lit);
            let i = *index.entry(key.clone()).or_insert_with(|| {
                literals.push(key);
                literal_rules.push(Vec::new());
                literals.len() - 1
            });
            if literal_rules[i].last() != Some(&t.bit) {
                literal_rules[i].push(t.bit);
            }
        }
    }
    (literals, literal_rules)
}

/// One rule's test of scan results (see [`Prefilter::bit_test`]).
#[derive(Debug, Clone, Copy)]
pub struct BitTest<'a> {
    /// The word and mask of the rule's bit.
    word: usize,
    mask: u64,
    /// Where a scan's presence words start.
    presence: usize,
    /// The rule's byte requirement.
    req: Option<&'a ByteReq>,
}

impl BitTest<'_> {
    /// Whether the rule may match a value with scan result `scan` (at least
    /// [`Prefilter::scan_words`] words; more are not read).
    #[inline]
    pub fn admits(&self, scan: &[u64]) -> bool {
        self.admits_at(scan, 0)
    }

    /// [`BitTest::admits`] for the scan result starting at word `at` of `bits`
    /// (the memo's scans: no slice made per value). `at` is a memo offset (a
    /// `u32`), so the sums cannot overflow.
    #[inline]
    pub fn admits_at(&self, bits: &[u64], at: usize) -> bool {
        if bits.get(at + self.word).is_none_or(|w| w & self.mask == 0) {
            return false;
        }
        match self.req {
            Some(req) => bits
                .get(at + self.presence..)
                .is_some_and(|presence| req.admits(presence)),
            None => true,
        }
    }
}

/// `dst |= src`, word by word (bit sets of equal lengths).
#[inline]
pub fn or_into(dst: &mut [u64], src: &[u64]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d |= s;
    }
}

/// Whether `bit` is set.
pub fn has(bits: &[u64], bit: u32) -> bool {
    bits.get((bit / 64) as usize)
        .is_some_and(|w| w & (1 << (bit % 64)) != 0)
}

#[cfg(test)]
mod tests {

    #[test]
    fn one_byte_literals_are_tested_on_the_presence_set() {
        let t = |bit: u32, lits: &[&str]| RuleTest {
            bit,
            literals: Some(lits.iter().map(|s| s.as_bytes().to_vec()).collect()),
            bytes: None,
            escape: None,
            anchored: None,
            end: None,
        };
        let pf = Prefilter::build_tests(&[t(0, &["=", "select"]), t(1, &["x"]), t(2, &["union"])])
            .unwrap_or_else(|| panic!("tests"));
        // Only the longer literals are in the automaton.
        assert_eq!(pf.literal_count(), 2);
        let admitted = |v: &str| -> Vec<u32> {
            let mut scan = Vec::new();
            pf.scan(v.as_bytes(), &mut scan);
            (0..3).filter(|&b| pf.admits(&scan, b)).collect()
        };
        assert_eq!(admitted("a=b"), vec![0]);
        assert_eq!(admitted("SELECT"), vec![0]);
        // Case-insensitively, as the automaton matched.
        assert_eq!(admitted("X"), vec![1]);
        assert_eq!(admitted("x union"), vec![1, 2]);
        assert_eq!(admitted("nothing"), Vec::<u32>::new());
        // The long-value scan sets them too.
        let mut scan = vec![0; pf.scan_words()];
        pf.scan_long_into(b"k=v", &mut scan);
        assert!(pf.admits(&scan, 0));
    }

    #[test]
    fn a_rules_shortest_match_follows_its_literals() {
        let t = |literals: Option<Vec<&str>>, escape: bool, bytes: bool| RuleTest {
            bit: 0,
            literals: literals.map(|l| l.iter().map(|s| s.as_bytes().to_vec()).collect()),
            bytes: if bytes {
                bytes::regex_bytes("<[a-z]")
            } else {
                None
            },
            escape: escape.then_some([0; 4]),
            anchored: None,
            end: None,
        };
        assert_eq!(
            t(Some(vec!["eval(", "env["]), false, false).min_match_len(),
            4
        );
        // An escape byte admits a match without a literal: one byte.
        assert_eq!(t(Some(vec!["eval("]), true, false).min_match_len(), 1);
        assert!(bytes::regex_bytes("<[a-z]").is_some());
        assert_eq!(t(None, false, true).min_match_len(), 1);
        assert_eq!(t(None, false, false).min_match_len(), 0);
    }
    use super::*;

    #[test]
    fn scan_sets_bits_of_rules_whose_literal_occurs_overlapping() {
        let pf = Prefilter::build(&[
            (0, vec![b"select".to_vec()]),
            (1, vec![b"elect".to_vec()]),
            (2, vec![b"zz".to_vec()]),
        ])
        .unwrap_or_else(|| panic!("literals"));
        let mut bits = Vec::new();
        pf.scan(b"xSELECTx", &mut bits);
        assert!(has(&bits, 0) && has(&bits, 1) && !has(&bits, 2));
        assert!(pf.admits(&bits, 0) && !pf.admits(&bits, 2));
    }

    #[test]
    fn a_collecting_scan_gives_the_bits_and_bytes_of_separate_passes() {
        let mut tests = literal_tests();
        // Rule 3 needs a `<` (a byte requirement, tested on the presence set).
        tests.push(RuleTest {
            bit: 3,
            literals: None,
            bytes: bytes::regex_bytes("<[a-z]"),
            escape: None,
            anchored: None,
            end: None,
        });
        let pf = Prefilter::build_tests(&tests).unwrap_or_else(|| panic!("tests"));
        let words = pf.scan_words();
        let mut values: Vec<Vec<u8>> = vec![Vec::new(), b"UNION<b>".to_vec()];
        // Both loops: short values, and values scanned as interleaved pieces.
        for len in [5usize, 31, 32, 33, 90] {
            let mut v: Vec<u8> = (0..len).map(|i| b"xY %\xc3"[i % 5]).collect();
            let at = len / 2;
            v.splice(at..at, b"Select<i>".iter().copied());
            values.push(v);
        }
        for v in &values {
            let raw = crate::transform::triggers::presence(v);
            let mut separate = vec![0u64; words];
            pf.scan_into_with_presence(
                v,
                &crate::transform::triggers::lowered(&raw),
                &mut separate,
            );
            let mut collected = vec![0u64; words];
            assert_eq!(pf.scan_into_collecting(v, &mut collected), raw, "{v:?}");
            assert_eq!(collected, separate, "{v:?}");
        }
        let mut bits = vec![0u64; words];
        pf.scan_into_collecting(&values[2], &mut bits);
        assert!(pf.admits(&bits, 0) && pf.admits(&bits, 3) && !pf.admits(&bits, 1));
    }

    /// Rules 0-2 with one literal each: `select`, `union`, `error in`.
    fn literal_tests() -> Vec<RuleTest> {
        [(0, "select"), (1, "union"), (2, "error in")]
            .iter()
            .map(|(bit, lit)| RuleTest {
                bit: *bit,
                literals: Some(vec![lit.as_bytes().to_vec()]),
                bytes: None,
                escape: None,
                anchored: None,
                end: None,
            })
            .collect()
    }

    #[test]
    fn the_long_value_automaton_sets_the_bits_of_its_rules_as_the_plain_one() {
        let tests: Vec<RuleTest> = literal_tests()
            .into_iter()
            .chain(std::iter::once(RuleTest {
                bit: 3,
                literals: None,
                bytes: None,
                escape: None,
                anchored: None,
                end: None,
            }))
            .collect();
        let mut pf = Prefilter::build_tests(&tests).unwrap_or_else(|| panic!("tests"));
        assert!(!pf.has_long());
        pf.add_long(&tests, |bit| bit != 1);
        assert!(pf.has_long());
        for value in [&b"SQL Error In select UNION"[..], b"nothing", b"errOR in"] {
            let (mut plain, mut long) = (Vec::new(), Vec::new());
            pf.scan(value, &mut plain);
            long.resize(pf.scan_words(), 0);
            pf.scan_long_into(value, &mut long);
            for bit in [0, 2, 3] {
                assert_eq!(pf.admits(&plain, bit), pf.admits(&long, bit), "{bit}");
            }
            // Rule 1 is not in the subset: never set by the long scan.
            assert!(!has(&long, 1));
            // Presence words are the same.
            assert_eq!(plain[pf.words()..], long[pf.words()..]);
        }
    }

    #[test]
    fn a_scan_without_deleted_bytes_is_the_scan_of_the_value_they_leave() {
        use crate::transform::Transformation;
        let tests = literal_tests();
        let chain = [Transformation::RemoveWhitespace, Transformation::Lowercase];
        let deleted = Transformation::RemoveWhitespace
            .deleted_bytes()
            .unwrap_or_else(|| panic!("deletes"));
        for long in [false, true] {
            let mut pf = Prefilter::build_tests(&tests).unwrap_or_else(|| panic!("tests"));
            if long {
                pf.add_long(&tests, |bit| bit != 1);
            }
            for value in [
                &b"SQL Error\tIn sel ect UN\nION"[..],
                b"nothing at all",
                b"e r r o r\xc2\xa0in",
                b"",
                b"  ",
                b"SELECT",
            ] {
                let mut built = value.to_vec();
                for t in chain {
                    let mut out = Vec::new();
                    if t.apply(&built, &mut out) {
                        built = out;
                    }
                }
                let (mut expected, mut got) = (Vec::new(), Vec::new());
                expected.resize(pf.scan_words(), 0);
                got.resize(pf.scan_words(), 0);
                pf.scan_long_into(&built, &mut expected);
                pf.scan_long_without_into(value, &deleted, &mut got);
                assert_eq!(got, expected, "{value:?} long={long}");
            }
        }
    }

    #[test]
    fn a_direct_search_for_deleted_bytes_sets_its_rules_bits_as_the_automaton() {
        use crate::transform::Transformation;
        let mut tests = literal_tests();
        // Rule 3 without literals: always admitted.
        tests.push(RuleTest {
            bit: 3,
            literals: None,
            bytes: None,
            escape: None,
            anchored: None,
            end: None,
        });
        let deleted = Transformation::RemoveWhitespace
            .deleted_bytes()
            .unwrap_or_else(|| panic!("deletes"));
        let mut pf = Prefilter::build_tests(&tests).unwrap_or_else(|| panic!("tests"));
        pf.add_long(&tests, |_| true);
        let automaton = pf.clone();
        // Rules 0 and 2 read the long value through the deleting chain.
        assert!(pf.add_deleting(deleted, &tests, |bit| bit == 0 || bit == 2));
        assert!(
            !pf.add_deleting(deleted, &tests, |_| true),
            "one per byte set"
        );
        // Too many literals: the automaton stays.
        let many: Vec<RuleTest> = (0..=few::FEW_MAX as u32)
            .map(|bit| RuleTest {
                bit,
                literals: Some(vec![format!("lit{bit}").into_bytes()]),
                bytes: None,
                escape: None,
                anchored: None,
                end: None,
            })
            .collect();
        let mut other = Prefilter::build_tests(&many).unwrap_or_else(|| panic!("tests"));
        assert!(!other.add_deleting(deleted, &many, |_| true));
        for value in [
            &b"SQL Error\tIn sel ect UN\nION"[..],
            b"nothing at all",
            b"e r r o r  in",
            b"",
            b"SELECT union",
        ] {
            let (mut expected, mut got) = (Vec::new(), Vec::new());
            expected.resize(pf.scan_words(), 0);
            got.resize(pf.scan_words(), 0);
            automaton.scan_long_without_into(value, &deleted, &mut expected);
            pf.scan_long_without_into(value, &deleted, &mut got);
            for bit in [0, 2, 3] {
                assert_eq!(has(&got, bit), has(&expected, bit), "{value:?} {bit}");
            }
            // Rule 1 is not read through the chain: the search leaves it out.
            assert!(!has(&got, 1));
            assert_eq!(got[pf.words()..], expected[pf.words()..]);
            // The same with the value's presence set given (from its raw scan).
            let mut raw = vec![0; pf.scan_words()];
            pf.scan_long_into(value, &mut raw);
            let mut given = vec![0; pf.scan_words()];
            pf.scan_long_without_into_with_presence(
                value,
                &deleted,
                Some(&raw[pf.words()..]),
                &mut given,
            );
            assert_eq!(given, got);
        }
        // Another byte set still goes through the automaton.
        let nulls = Transformation::RemoveNulls
            .deleted_bytes()
            .unwrap_or_else(|| panic!("deletes"));
        let (mut expected, mut got) = (vec![0; pf.scan_words()], vec![0; pf.scan_words()]);
        automaton.scan_long_without_into(b"un\0ion", &nulls, &mut expected);
        pf.scan_long_without_into(b"un\0ion", &nulls, &mut got);
        assert_eq!(got, expected);
        assert!(has(&got, 1));
    }

    #[test]
    fn literals_of_long_only_rules_are_left_out_of_the_main_automaton() {
        let tests = literal_tests();
        // Rule 1 reads other variables only, rule 2 the long one only, rule 0 both.
        let pf = Prefilter::build_with_long(&tests, |bit| bit != 1, |bit| bit == 2)
            .unwrap_or_else(|| panic!("tests"));
        assert!(pf.has_long());
        assert_eq!(pf.literal_count(), 2, "select and union only");
        let value = b"select union error in";
        let (mut plain, mut long) = (Vec::new(), Vec::new());
        pf.scan(value, &mut plain);
        long.resize(pf.scan_words(), 0);
        pf.scan_long_into(value, &mut long);
        assert_eq!(
            (has(&plain, 0), has(&plain, 1), has(&plain, 2)),
            (true, true, false)
        );
        assert_eq!(
            (has(&long, 0), has(&long, 1), has(&long, 2)),
            (true, false, true)
        );
        // Only long-only rules with literals: the main automaton is empty, the
        // rules keep their bits through the long one.
        let pf = Prefilter::build_with_long(&tests[2..], |_| true, |_| true)
            .unwrap_or_else(|| panic!("tests"));
        pf.scan(value, &mut plain);
        assert!(!has(&plain, 2));
        long.clear();
        long.resize(pf.scan_words(), 0);
        pf.scan_long_into(value, &mut long);
        assert!(has(&long, 2));
    }

    #[test]
    fn literals_longer_than_the_prefix_admit_by_their_prefix() {
        let pf = Prefilter::build(&[
            (
                0,
                vec![b"UNION SELECT".to_vec(), b"union all select".to_vec()],
            ),
            (1, vec![b"sleep(".to_vec()]),
        ])
        .unwrap_or_else(|| panic!("literals"));
        // "union se" and "union al" are the automaton's patterns (the pieces
        // the window takes: no later piece is rarer).
        assert_eq!(pf.literal_count(), 3);
        let admits = |v: &[u8], bit| {
            let mut scan = Vec::new();
            pf.scan(v, &mut scan);
            pf.admits(&scan, bit)
        };
        assert!(admits(b"1 Union Select 2", 0));
        assert!(admits(b"1 union all select 2", 0));
        // A prefix alone is admitted too: a superset, never a hidden match.
        assert!(admits(b"union sea", 0));
        assert!(!admits(b"union", 0));
        assert!(admits(b"SLEEP(5)", 1) && !admits(b"SLEEP(5)", 0));
    }

    #[test]
    fn presence_of_long_and_short_values_agree() {
        let long: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        for v in [&long[..], &long[..100], b"AbC", b""] {
            let (mut a, mut b) = ([0u64; 4], [0u64; 4]);
            bytes::presence(v, &mut a);
            for &x in v {
                let x = x.to_ascii_lowercase();
                b[usize::from(x >> 6)] |= 1 << (x & 63);
            }
            assert_eq!(a, b);
        }
    }

    #[test]
    fn escape_bytes_admit_values_without_a_literal() {
        let required = regex_required("(?i-u)c[\"'\\\\]*a[\"'\\\\]*t\\b")
            .unwrap_or_else(|| panic!("required literals"));
        let pf = Prefilter::build_tests(&[RuleTest {
            bit: 0,
            literals: Some(required.literals.clone()),
            bytes: None,
            escape: required.escape,
            anchored: None,
            end: None,
        }])
        .unwrap_or_else(|| panic!("tests"));
        let mut scan = Vec::new();
        for (value, admitted) in [
            (&b"CAT"[..], true),
            (b"c'a't", true),
            (b"no quote, no word", false),
            (b"a \\ alone", true),
            (b"dog", false),
        ] {
            pf.scan(value, &mut scan);
            assert_eq!(
                pf.admits(&scan, 0),
                admitted,
                "{}",
                String::from_utf8_lossy(value)
            );
        }
    }

    #[test]
    fn rules_sharing_escape_bytes_are_admitted_together_and_alone_by_their_own() {
        // Bits 3 and 70 (two words) share the quote escapes; bit 5 has the
        // backslash alone. None of the values holds a literal.
        let mask = |bytes: &[u8]| {
            let mut m: ByteMask = [0; 4];
            for &b in bytes {
                m[usize::from(b >> 6)] |= 1 << (b & 63);
            }
            Some(m)
        };
        let (quotes, backslash) = (mask(b"\"'"), mask(b"\\"));
        let test = |bit, escape| RuleTest {
            bit,
            literals: Some(vec![format!("word{bit}").into_bytes()]),
            bytes: None,
            escape,
            anchored: None,
            end: None,
        };
        let pf = Prefilter::build_tests(&[test(3, quotes), test(70, quotes), test(5, backslash)])
            .unwrap_or_else(|| panic!("tests"));
        let mut scan = Vec::new();
        for (value, expected) in [
            (&b"it's"[..], [true, true, false]),
            (b"a \\ b", [false, false, true]),
            (b"\"\\", [true, true, true]),
            (b"plain", [false, false, false]),
            (b"word5", [false, false, true]),
        ] {
            pf.scan(value, &mut scan);
            let got = [3, 70, 5].map(|bit| pf.admits(&scan, bit));
            assert_eq!(got, expected, "{}", String::from_utf8_lossy(value));
        }
    }

    #[test]
    fn byte_requirements_admit_only_values_with_their_bytes() {
        let pf = Prefilter::build_tests(&[
            RuleTest {
                bit: 0,
                literals: None,
                bytes: bytes::regex_bytes("(?-u)[\\n\\r]"),
                escape: None,
                anchored: None,
                end: None,
            },
            RuleTest {
                bit: 1,
                literals: Some(vec![b"select".to_vec()]),
                bytes: bytes::regex_bytes("(?-u)select.*\\("),
                escape: None,
                anchored: None,
                end: None,
            },
        ])
        .unwrap_or_else(|| panic!("tests"));
        let mut scan = Vec::new();
        pf.scan(b"plain value", &mut scan);
        assert!(!pf.admits(&scan, 0) && !pf.admits(&scan, 1));
        pf.scan(b"two\nlines SELECT x", &mut scan);
        assert!(pf.admits(&scan, 0) && !pf.admits(&scan, 1));
        pf.scan(b"select count(*)", &mut scan);
        assert!(!pf.admits(&scan, 0) && pf.admits(&scan, 1));
        // Scans of several values combine by OR.
        let mut other = Vec::new();
        pf.scan(b"a\rb", &mut other);
        for (s, o) in scan.iter_mut().zip(&other) {
            *s |= o;
        }
        assert!(pf.admits(&scan, 0) && pf.admits(&scan, 1));
    }
}
