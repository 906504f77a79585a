//! Anchored starts: the matches of a pattern that can only begin where the value
//! begins, decided by a small anchored DFA run from the value's first byte.
//!
//! Some patterns have no literal every match holds because one branch of their
//! top-level alternation is `^`: CRS 932260 (direct Unix command execution) is
//! `(?:^(?:json\.)?|<separators and evasions>)<spaces, assignments, a path><one
//! of hundreds of command names>`, so a value that *starts* with a command name
//! matches without any separator, and the command names are too many and too
//! short to be required literals. Split at that alternation, the pattern is
//! `A·T | U·T`, with `A` the branches that begin with `^` (less it) and `U` the
//! others:
//!
//! - a match through `U` is a match of `U·T`, whose required literals (or rare
//!   bytes) the prefilter finds as for any pattern (for 932260: the separators
//!   `=`, `&`, line ends and the evasion words `env`, `eval`, `time`, ...);
//! - a match through `A` begins at the value's start, or (multi-line `^`) just
//!   after a line end, which is then an escape byte; at the start it is a match
//!   of `A·T` anchored there, which the DFA here decides exactly.
//!
//! So a value that holds none of `U·T`'s literals or escape bytes and on which
//! the anchored DFA finds no match cannot match the pattern. The DFA is built at
//! load time (or not at all, when it would exceed [`DFA_LIMIT`]); a run reads
//! the value until the DFA dies, which for a value that does not begin like a
//! match is after a few bytes. The DFA is of the anchored matches without the
//! rare bytes, `/` and `=`, which become escape bytes: the paths and
//! assignments 932260 allows before a command name multiply its states (with
//! them its DFA takes 4.4 MB and 150 ms to build).
//! Only patterns with other branches too are split: one every match of which
//! begins at the start (`^$`) is as cheap to run as its anchored DFA, and the
//! test runs on every scan.

use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::nfa::thompson;
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::{Anchored, MatchKind};
use regex_syntax::hir::Hir;

/// Largest DFA built (and largest determinisation), in bytes: a larger one
/// would cost load time (tens of milliseconds) and memory for one rule.
pub(super) const DFA_LIMIT: usize = 1 << 20;

/// An anchored DFA for the branches of a pattern that begin with `^` (see the
/// module notes).
#[derive(Debug, Clone)]
pub struct AnchoredStart {
    /// The DFA and its state at the start of a value; `None`: no match begins
    /// at the start.
    dfa: Option<AnchoredDfa>,
    /// What the DFA matches at the start (`None` with it).
    hir: Option<Hir>,
    /// That pattern as text (for equality).
    pattern: String,
}

impl PartialEq for AnchoredStart {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern
    }
}

impl Eq for AnchoredStart {}

/// An anchored dense DFA and its state where a run begins: at the start of a
/// value (no byte behind it: what `^` and `\b` see there), or, built reversed
/// for [`super::anchored_end`], at its end. Found once.
#[derive(Debug, Clone)]
pub(super) struct AnchoredDfa {
    pub(super) dfa: dense::DFA<Vec<u32>>,
    pub(super) start: StateID,
}

impl AnchoredDfa {
    /// The DFA of `hirs` (one pattern each), anchored, of the reversed patterns
    /// with `reverse`; `None` when too large.
    pub(super) fn build(hirs: &[&Hir], kind: MatchKind, reverse: bool) -> Option<AnchoredDfa> {
        let mut config = thompson::Config::new()
            .utf8(false)
            .reverse(reverse)
            .nfa_size_limit(Some(DFA_LIMIT));
        if reverse {
            // (A reverse NFA has no capture states.)
            config = config.which_captures(thompson::WhichCaptures::None);
        }
        let nfa = thompson::Compiler::new()
            .configure(config)
            .build_many_from_hir(hirs)
            .ok()?;
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .start_kind(StartKind::Anchored)
                    .match_kind(kind)
                    .dfa_size_limit(Some(DFA_LIMIT))
                    .determinize_size_limit(Some(DFA_LIMIT))
                    .accelerate(false)
                    // ASCII word boundaries only in the patterns compiled for
                    // bytes; a Unicode one makes non-ASCII bytes quit bytes,
                    // on which the tests admit.
                    .unicode_word_boundary(true),
            )
            .build_from_nfa(&nfa)
            .ok()?;
        // (Reversed, the "look-behind" byte is the one after the value's end:
        // none either.)
        let start = dfa
            .start_state(
                &start::Config::new()
                    .anchored(Anchored::Yes)
                    .look_behind(None),
            )
            .ok()?;
        Some(AnchoredDfa { dfa, start })
    }

    /// Runs the DFA over `bytes` from its start: whether it reaches a match
    /// (`true` also at a quit byte: it cannot tell), stopping where it dies.
    #[inline]
    pub(super) fn admits(&self, bytes: impl Iterator<Item = u8>) -> bool {
        let dfa = &self.dfa;
        let mut s = self.start;
        for b in bytes {
            s = dfa.next_state(s, b);
            if dfa.is_special_state(s) {
                if dfa.is_match_state(s) || dfa.is_quit_state(s) {
                    return true;
                }
                if dfa.is_dead_state(s) {
                    return false;
                }
            }
        }
        dfa.is_match_state(dfa.next_eoi_state(s))
    }
}

impl AnchoredStart {
    /// The anchored DFA of `hir` (the `^` branches without their `^`, followed
    /// by the rest of the pattern); `None` when it would be too large.
    pub(crate) fn build(hir: &Hir) -> Option<AnchoredStart> {
        let dfa = AnchoredDfa::build(&[hir], MatchKind::LeftmostFirst, false)?;
        Some(AnchoredStart {
            dfa: Some(dfa),
            hir: Some(hir.clone()),
            pattern: hir.to_string(),
        })
    }

    /// The test of a pattern no match of which begins at the start.
    pub(crate) fn never() -> AnchoredStart {
        AnchoredStart {
            dfa: None,
            hir: None,
            pattern: String::from("[^\\x00-\\xff]"),
        }
    }

    /// Whether a match of the pattern begins at the start of `value` (`true`
    /// also when the DFA cannot tell: a quit byte).
    pub fn is_match(&self, value: &[u8]) -> bool {
        self.dfa
            .as_ref()
            .is_some_and(|d| d.admits(value.iter().copied()))
    }

    /// The pattern matched at the start.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Heap bytes of the DFA.
    pub fn memory_usage(&self) -> usize {
        self.dfa.as_ref().map_or(0, |d| d.dfa.memory_usage())
    }
}

/// The anchored tests of every rule of a prefilter, in one DFA when it is small
/// enough (one pass over a value's start for all of them), else one by one.
#[derive(Debug, Clone, Default)]
pub(crate) struct AnchoredSet {
    /// The rules' bits and tests (those that can match).
    tests: Vec<(u32, std::sync::Arc<AnchoredStart>)>,
    /// Their DFA, pattern `i` being `tests[i]`'s.
    all: Option<AnchoredDfa>,
}

impl AnchoredSet {
    /// The set of the tests `(rule bit, test)`.
    pub(crate) fn build(tests: Vec<(u32, std::sync::Arc<AnchoredStart>)>) -> AnchoredSet {
        let tests: Vec<_> = tests.into_iter().filter(|(_, t)| t.hir.is_some()).collect();
        let all = match &tests[..] {
            [] | [_] => None,
            _ => {
                let hirs: Vec<&Hir> = tests.iter().filter_map(|(_, t)| t.hir.as_ref()).collect();
                AnchoredDfa::build(&hirs, MatchKind::All, false)
            }
        };
        AnchoredSet { tests, all }
    }

    /// Whether there is no test.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.tests.is_empty()
    }

    /// Sets the bits of the rules whose test matches at the start of `value`
    /// (all of them at a quit byte).
    pub(crate) fn scan(&self, value: &[u8], scan: &mut [u64]) {
        let Some(AnchoredDfa { dfa, start }) = &self.all else {
            for (bit, t) in &self.tests {
                if t.is_match(value) {
                    set_bit(scan, *bit);
                }
            }
            return;
        };
        let mut s = *start;
        for &b in value {
            s = dfa.next_state(s, b);
            if dfa.is_special_state(s) {
                if dfa.is_match_state(s) {
                    self.report(dfa, s, scan);
                } else if dfa.is_dead_state(s) {
                    return;
                } else if dfa.is_quit_state(s) {
                    self.set_all(scan);
                    return;
                }
            }
        }
        let s = dfa.next_eoi_state(s);
        if dfa.is_match_state(s) {
            self.report(dfa, s, scan);
        }
    }

    /// Sets the bits of the patterns match state `s` holds.
    fn report(&self, dfa: &dense::DFA<Vec<u32>>, s: StateID, scan: &mut [u64]) {
        for i in 0..dfa.match_len(s) {
            if let Some((bit, _)) = self.tests.get(dfa.match_pattern(s, i).as_usize()) {
                set_bit(scan, *bit);
            }
        }
    }

    /// Sets the bits of every rule with a test.
    pub(crate) fn set_all(&self, scan: &mut [u64]) {
        for (bit, _) in &self.tests {
            set_bit(scan, *bit);
        }
    }

    /// Heap bytes of the DFAs.
    pub(crate) fn memory_usage(&self) -> usize {
        self.all.as_ref().map_or(0, |d| d.dfa.memory_usage())
            + self
                .tests
                .iter()
                .map(|(_, t)| t.memory_usage())
                .sum::<usize>()
    }
}

/// Sets rule bit `bit` of a scan.
#[inline]
fn set_bit(scan: &mut [u64], bit: u32) {
    if let Some(w) = scan.get_mut((bit / 64) as usize) {
        *w |= 1u64 << (bit % 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(pattern: &str) -> AnchoredStart {
        let hir = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(pattern)
            .unwrap_or_else(|e| panic!("{e}"));
        AnchoredStart::build(&hir).unwrap_or_else(|| panic!("no DFA for {pattern}"))
    }

    #[test]
    fn matches_begin_at_the_start_only_and_agree_with_the_regex() {
        let patterns = [
            r"(?i)(?:json\.)?[\s\x0b]*(?:[a-z]+/)?(?:wget|who(?:ami|is)|ls)[\s\x0b&,]",
            r"(?i)ab+c$",
            r"x\b",
            r"(?-u)x\b",
            r"(?m)a$",
            r"",
        ];
        let inputs: &[&[u8]] = &[
            b"wget x",
            b"WGET ",
            b"json. whoami ",
            b"usr/ls,",
            b"xwget ",
            b"username",
            b"abbbc",
            b"abc\n",
            b"abcd",
            b"x y",
            b"xy",
            b"a\nb",
            b"",
            b"\xff\xfe",
        ];
        for p in patterns {
            let a = start(p);
            let anchored =
                regex::bytes::Regex::new(&format!("^(?:{p})")).unwrap_or_else(|e| panic!("{e}"));
            for input in inputs {
                let expected = anchored.is_match(input);
                if input.is_ascii() {
                    assert_eq!(a.is_match(input), expected, "{p} on {input:?}");
                } else {
                    // A Unicode word boundary quits on non-ASCII bytes: the test
                    // then admits (never a miss).
                    assert!(a.is_match(input) || !expected, "{p} on {input:?}");
                }
            }
        }
    }

    /// The tests of several rules in one DFA set the bits each test alone
    /// would (and every bit at a quit byte).
    #[test]
    fn a_set_sets_the_bits_its_tests_would() {
        let patterns = [
            r"(?i)(?:json\.)?[\s\x0b]*(?:wget|who(?:ami|is)|ls)[\s\x0b&,]",
            r"(?i)(?:json\.)?(?:who|cat)",
            r"ab+c$",
            r"x\b",
        ];
        let tests: Vec<(u32, std::sync::Arc<AnchoredStart>)> = patterns
            .iter()
            .enumerate()
            .map(|(i, p)| (3 + 70 * i as u32, std::sync::Arc::new(start(p))))
            .chain(std::iter::once((
                100,
                std::sync::Arc::new(AnchoredStart::never()),
            )))
            .collect();
        let set = AnchoredSet::build(tests.clone());
        assert!(set.all.is_some(), "no combined DFA");
        let alone = AnchoredSet {
            tests: set.tests.clone(),
            all: None,
        };
        for input in [
            &b"json.whoami "[..],
            b"WHO",
            b"cat",
            b"ls,x",
            b"abbc",
            b"abc\n",
            b"x",
            b"xy",
            b"",
            b"\xffx",
        ] {
            let (mut a, mut b) = (vec![0u64; 5], vec![0u64; 5]);
            set.scan(input, &mut a);
            alone.scan(input, &mut b);
            if input.is_ascii() {
                assert_eq!(a, b, "{input:?}");
            } else {
                // (a quit byte: every bit)
                assert!(a.iter().zip(&b).all(|(x, y)| x & y == *y), "{input:?}");
            }
            for (bit, t) in &tests {
                let on = a[(bit / 64) as usize] & (1 << (bit % 64)) != 0;
                assert!(on || !t.is_match(input), "{bit} on {input:?}");
            }
        }
    }
}
