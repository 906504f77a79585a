//! Anchored ends: a test that takes a rule's bit out of a value's scan when no
//! match of its pattern can end where the value ends.
//!
//! Some patterns have literals that benign values hold but end with a `$`:
//! CRS 932340 (a Unix command without arguments) is `<separators and
//! evasions><spaces, assignments, a path><one of 20 command names>$`. Its
//! literals and escape bytes (`;`, `)`, ...) are in every browser
//! `User-Agent`, so the prefilter admits it on nearly every request, and its
//! regular expression then scans the whole value (its `$` is multi-line, so
//! the engine cannot search backwards from the end). Yet a value that holds no
//! line end can only match it at its end, and there it must end with a
//! command name: `Safari/537.36` does not.
//!
//! For a pattern that is a concatenation ending in `$` (or `\z`), the test is a
//! DFA of a suffix of the concatenation, reversed and anchored at the value's
//! end: every match of the pattern in a value without `\n` ends at the value's
//! end, and ends with a match of that suffix, which the DFA then finds reading
//! the value backwards from its last byte (usually a few bytes, until it
//! dies). The suffix is the longest whose DFA fits in
//! [`super::anchored::DFA_LIMIT`]: dropping
//! leading parts only admits more. The DFA matches ASCII case-insensitively (a
//! superset of the pattern's matches, so it never rules out a case variant of a
//! match). The test runs only on a fresh scan of one raw value (see
//! `TransformMemo::scan_offset`), and only rules without transformations have
//! one, so the bytes tested are the ones the rule reads; accumulating scans
//! never clear a bit. A value with a line end, or on which the DFA quits (a
//! Unicode word boundary), keeps the bit.

use regex_automata::dfa::Automaton;
use regex_automata::MatchKind;
use regex_syntax::hir::{Class, Hir, HirKind, Look};

use super::anchored::AnchoredDfa;

/// A test is kept only when at most this many of the 256 bytes can be a
/// match's last byte: with more, it would take few bits out for its cost.
const LAST_BYTES_MAX: usize = 64;

/// The reversed, anchored DFA of a pattern's suffix (see the module notes).
#[derive(Debug, Clone)]
pub struct AnchoredEnd {
    /// Reversed, anchored at the value's end.
    dfa: AnchoredDfa,
    /// The suffix tested, as text (for equality and the plan).
    pattern: String,
}

impl PartialEq for AnchoredEnd {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern
    }
}

impl Eq for AnchoredEnd {}

impl AnchoredEnd {
    /// The test of a parsed pattern (translated as for the prefilter's literals:
    /// bytes, multi-line) every match of which ends at a `$` or `\z`; `None` for
    /// another pattern, or when no suffix's DFA fits or rules out enough last
    /// bytes.
    pub fn build(hir: &Hir) -> Option<AnchoredEnd> {
        let parts = end_parts(hir)?;
        // Every match begins at a line's start too: the search itself stops
        // after a few bytes, as this test would.
        if let Some(HirKind::Look(Look::Start | Look::StartLF)) = parts.first().map(Hir::kind) {
            return None;
        }
        // Longest suffix first; the last part alone is the `$`.
        for from in 0..parts.len().saturating_sub(1) {
            let suffix = Hir::concat(parts[from..].to_vec());
            if suffix.properties().minimum_len().unwrap_or(0) == 0 {
                // Matches the empty string at the end: never rules a value out.
                return None;
            }
            let folded = fold_case(&suffix)?;
            if let Some(t) = AnchoredEnd::from_hir(&folded) {
                return (t.last_bytes() <= LAST_BYTES_MAX).then_some(t);
            }
        }
        None
    }

    fn from_hir(hir: &Hir) -> Option<AnchoredEnd> {
        let dfa = AnchoredDfa::build(&[hir], MatchKind::All, true)?;
        Some(AnchoredEnd {
            dfa,
            pattern: hir.to_string(),
        })
    }

    /// How many bytes can be a match's last byte (lead from the start state to
    /// a state that is not dead).
    fn last_bytes(&self) -> usize {
        let AnchoredDfa { dfa, start } = &self.dfa;
        (0..=255u8)
            .filter(|&b| !dfa.is_dead_state(dfa.next_state(*start, b)))
            .count()
    }

    /// Whether a match of the pattern may end where `value` ends, or (`value`
    /// holding a line end) anywhere: `false` only when none can match `value`
    /// at all.
    pub fn may_match(&self, value: &[u8]) -> bool {
        memchr::memchr(b'\n', value).is_some() || self.may_end_without_newline(value)
    }

    /// [`AnchoredEnd::may_match`] for a value known to hold no `\n`.
    pub(crate) fn may_end_without_newline(&self, value: &[u8]) -> bool {
        self.dfa.admits(value.iter().rev().copied())
    }

    /// The suffix tested.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Heap bytes of the DFA.
    pub fn memory_usage(&self) -> usize {
        self.dfa.dfa.memory_usage()
    }
}

/// The parts of `h` as a concatenation ending in a `$` (multi-line) or `\z`
/// (captures looked through), that end included; `None` when `h` is not one.
fn end_parts(h: &Hir) -> Option<Vec<Hir>> {
    let mut h = h;
    while let HirKind::Capture(c) = h.kind() {
        h = &c.sub;
    }
    let HirKind::Concat(parts) = h.kind() else {
        return None;
    };
    match parts.last()?.kind() {
        HirKind::Look(Look::EndLF | Look::End) => Some(parts.clone()),
        _ => None,
    }
}

/// `h` matching ASCII case-insensitively (every match of `h` among its
/// matches); `None` for a Unicode class (not in the patterns compiled for
/// bytes).
fn fold_case(h: &Hir) -> Option<Hir> {
    Some(match h.kind() {
        HirKind::Empty | HirKind::Look(_) => h.clone(),
        HirKind::Literal(l) => Hir::concat(
            l.0.iter()
                .map(|&b| {
                    if b.is_ascii_alphabetic() {
                        let mut c = regex_syntax::hir::ClassBytes::new([
                            regex_syntax::hir::ClassBytesRange::new(b, b),
                        ]);
                        c.case_fold_simple();
                        Hir::class(Class::Bytes(c))
                    } else {
                        Hir::literal([b])
                    }
                })
                .collect(),
        ),
        HirKind::Class(Class::Bytes(c)) => {
            let mut c = c.clone();
            c.case_fold_simple();
            Hir::class(Class::Bytes(c))
        }
        HirKind::Class(Class::Unicode(_)) => return None,
        HirKind::Repetition(r) => Hir::repetition(regex_syntax::hir::Repetition {
            sub: Box::new(fold_case(&r.sub)?),
            ..r.clone()
        }),
        HirKind::Capture(c) => fold_case(&c.sub)?,
        HirKind::Concat(parts) => Hir::concat(parts.iter().map(fold_case).collect::<Option<_>>()?),
        HirKind::Alternation(branches) => {
            Hir::alternation(branches.iter().map(fold_case).collect::<Option<_>>()?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::AnchoredEnd;

    fn test_of(pattern: &str) -> Option<AnchoredEnd> {
        let translated = match crate::operator::pcre::translate(
            pattern,
            crate::operator::pcre::Dialect::Bytes,
        ) {
            crate::operator::pcre::Translation::Pattern(p) => p,
            other => panic!("{other:?}"),
        };
        let hir = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(&translated)
            .unwrap_or_else(|e| panic!("{e}"));
        AnchoredEnd::build(&hir)
    }

    #[test]
    fn a_value_that_cannot_end_a_match_is_ruled_out() {
        let t = test_of(r"(?:;|\|\|?|&&?)[\s\x0b]*[\x22']*(?:ls|ps(?:ql)?|w(?:ho(?:ami)?)?)$")
            .unwrap_or_else(|| panic!("no test"));
        let ua = b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/126.0.0.0 Safari/537.36";
        assert!(!t.may_match(ua));
        assert!(t.may_match(b"x; ls"));
        assert!(t.may_match(b"x;whoami"));
        // ASCII case-insensitively: a scan may stand for another case's bytes.
        assert!(t.may_match(b"x;WhoAmI"));
        // The whole pattern fits in the DFA: a command without a separator
        // before it cannot end a match.
        assert!(!t.may_match(b"ls"));
        assert!(!t.may_match(b"x; ls "));
        assert!(!t.may_match(b""));
        // A line end: a match may end before it.
        assert!(t.may_match(b"; ls\nmore"));
    }

    #[test]
    fn only_patterns_ending_in_a_dollar_have_a_test() {
        assert!(test_of(r"\bunion\b.{1,100}?\bselect\b").is_none());
        // Every byte can end a match: nothing to rule out.
        assert!(test_of(r"\.([^.]+)$").is_none());
        // Empty at the end.
        assert!(test_of(r"a[\s]*$").is_some());
        assert!(test_of(r"(?:a|b)?$").is_none());
        assert!(test_of(r"[a-z]+\.(?:exe|dll)$").is_some());
        // Every match begins at the start: the search is as short.
        assert!(test_of(r"^(?:GET|HEAD)$").is_none());
    }

    #[test]
    fn a_word_boundary_is_tested_on_the_value_s_bytes() {
        let t = test_of(r"x?mysql(?:[^\s]{1,3}\b)?$").unwrap_or_else(|| panic!("no test"));
        assert!(t.may_match(b"a mysql"));
        assert!(t.may_match(b"a mysql.ab"));
        assert!(!t.may_match(b"a mysql.abcd"));
        assert!(t.may_match(b"a mysqlx"));
        assert!(!t.may_match(b"a mysql."));
    }
}
