//! Byte requirements: the prefilter's second test, for operators whose matches need
//! no usable literal but do need certain bytes. A requirement is a conjunction of
//! byte sets — every match contains at least one byte of each set — checked against
//! the set of bytes a value contains (its *presence*, computed in the same scan as
//! the literals). `[\n\r]` requires `{\n, \r}`; `%[0-9a-f]{2}` requires `{%}`;
//! CRS 941210's `javascript:` with entity-encoded variants requires `{j, &}`,
//! `{a, &}`, ... and `{:, &}` all at once, which a URL without `j` fails.
//!
//! Derived from the regular expression's syntax tree, parsed as the operator
//! compiles it: a literal requires each of its bytes; a class requires one of its
//! bytes; a concatenation requires what each of its parts requires; a repetition
//! with a minimum of one requires its body's; an alternation requires, for each
//! rank `i`, the union of its branches' `i`-th sets (a match takes one branch, which
//! contains a byte of its own `i`-th set); anything that can match the empty string
//! requires nothing. Sets and presence are folded to ASCII lower case (so a scan
//! shared by chains that differ only in case serves both); folding only widens what
//! a requirement admits. Only selective sets are kept (by an estimate of how often
//! their bytes occur in benign values), at most [`MAX_SETS`] per operator.

use regex_syntax::hir::{Class, Hir, HirKind};

/// Most sets kept per requirement.
pub const MAX_SETS: usize = 6;
/// Largest weight of a kept set (see [`weight`]): about three letters, or a
/// shell command separator class (`[\s\x0b&\),<>\|]`, 31).
const MAX_WEIGHT: u32 = 36;
/// Most sets and largest weight kept for the parts of a pattern while its
/// requirement is derived: an alternation may need a set its branches hold at
/// different ranks, or one heavier than the final cut once unioned.
const PART_SETS: usize = 12;
const PART_WEIGHT: u32 = 48;

/// A set of (lower-cased) bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, PartialOrd, Ord)]
pub struct ByteSet(pub [u64; 4]);

impl ByteSet {
    /// Adds a byte (folded to lower case).
    pub fn insert(&mut self, b: u8) {
        let b = b.to_ascii_lowercase();
        self.0[usize::from(b >> 6)] |= 1 << (b & 63);
    }

    /// Whether it contains `b` (folded to lower case).
    pub fn contains(&self, b: u8) -> bool {
        let b = b.to_ascii_lowercase();
        self.0[usize::from(b >> 6)] & (1 << (b & 63)) != 0
    }

    /// Whether it shares a byte with a presence set (4 words).
    pub fn intersects(&self, presence: &[u64]) -> bool {
        self.0.iter().zip(presence).any(|(a, b)| a & b != 0)
    }

    fn union(&self, other: &ByteSet) -> ByteSet {
        let mut u = *self;
        for (a, b) in u.0.iter_mut().zip(other.0) {
            *a |= b;
        }
        u
    }

    /// Whether it holds no byte.
    pub fn is_empty(&self) -> bool {
        self.0 == [0; 4]
    }

    fn is_subset(&self, other: &ByteSet) -> bool {
        self.0.iter().zip(other.0).all(|(a, b)| a & !b == 0)
    }

    fn bytes(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=255u8).filter(|&b| self.0[usize::from(b >> 6)] & (1 << (b & 63)) != 0)
    }

    /// How likely a benign value contains one of its bytes, roughly: the sum of
    /// its bytes' weights (letters 10, digits 8, common punctuation 6 or 4, other
    /// printable ASCII 2, control and non-ASCII bytes 1).
    pub fn weight(&self) -> u32 {
        self.bytes().map(byte_weight).sum()
    }
}

fn byte_weight(b: u8) -> u32 {
    match b {
        b'a'..=b'z' => 10,
        b'0'..=b'9' => 8,
        b' ' | b'/' | b'.' | b'-' | b'_' | b'=' | b',' | b';' | b':' => 6,
        b'&' | b'+' | b'%' | b'(' | b')' | b'*' | b'?' | b'"' => 4,
        0x21..=0x7e => 2,
        _ => 1,
    }
}

/// Words of a presence set.
pub const PRESENCE_WORDS: usize = 4;

/// Adds the bytes of `value` (folded to lower case) to a presence set of
/// [`PRESENCE_WORDS`] words.
pub fn presence(value: &[u8], out: &mut [u64]) {
    let w = crate::transform::triggers::lowered(&crate::transform::triggers::presence(value));
    for (o, x) in out.iter_mut().zip(w) {
        *o |= x;
    }
}

/// A conjunction of byte sets: a value may match only if it contains a byte of
/// every set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteReq(Box<[ByteSet]>);

impl ByteReq {
    /// Whether a value with this presence set may match.
    pub fn admits(&self, presence: &[u64]) -> bool {
        self.0.iter().all(|s| s.intersects(presence))
    }

    /// The sets, most selective first.
    pub fn sets(&self) -> &[ByteSet] {
        &self.0
    }

    /// The requirement of an operator that never matches: it admits no value.
    pub fn never() -> ByteReq {
        ByteReq(Box::new([ByteSet::default()]))
    }

    /// A requirement from sets (empty: `None`).
    pub fn new(sets: Vec<ByteSet>) -> Option<ByteReq> {
        let sets = rank(sets);
        (!sets.is_empty()).then(|| ByteReq(sets.into_boxed_slice()))
    }
}

/// The byte requirement of a pattern already translated to the `regex` crate's
/// syntax for bytes (as compiled by `regex::bytes`), or `None` when a match needs
/// no selective byte.
pub fn regex_bytes(translated: &str) -> Option<ByteReq> {
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(translated)
        .ok()?;
    ByteReq::new(required(&hir))
}

/// Selective sets, most selective first, without duplicates or sets implied by a
/// kept subset, at most [`MAX_SETS`].
fn rank(sets: Vec<ByteSet>) -> Vec<ByteSet> {
    rank_within(sets, MAX_WEIGHT, MAX_SETS)
}

/// [`rank`] for the parts of a pattern (see [`PART_SETS`]).
fn rank_part(sets: Vec<ByteSet>) -> Vec<ByteSet> {
    rank_within(sets, PART_WEIGHT, PART_SETS)
}

fn rank_within(mut sets: Vec<ByteSet>, max_weight: u32, max_sets: usize) -> Vec<ByteSet> {
    sets.retain(|s| !s.is_empty() && s.weight() <= max_weight);
    sets.sort_by_key(|s| (s.weight(), *s));
    sets.dedup();
    let mut kept: Vec<ByteSet> = Vec::new();
    for s in sets {
        // A superset of a kept set adds nothing: whatever passes the subset passes it.
        if !kept.iter().any(|k| k.is_subset(&s)) {
            kept.push(s);
        }
        if kept.len() == max_sets {
            break;
        }
    }
    kept
}

fn class_set(class: &Class) -> ByteSet {
    let mut s = ByteSet::default();
    match class {
        Class::Bytes(c) => {
            for r in c.ranges() {
                for b in r.start()..=r.end() {
                    s.insert(b);
                }
            }
        }
        Class::Unicode(c) => {
            for r in c.ranges() {
                let (lo, hi) = (u32::from(r.start()), u32::from(r.end()));
                for cp in lo..=hi.min(0x7f) {
                    s.insert(cp as u8);
                }
                // A non-ASCII character is encoded with bytes >= 0x80 only.
                if hi >= 0x80 {
                    for b in 0x80..=0xff {
                        s.insert(b);
                    }
                }
            }
        }
    }
    s
}

/// The (ranked, see [`rank_part`]) conjunction of sets every match of `h`
/// satisfies.
fn required(h: &Hir) -> Vec<ByteSet> {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => Vec::new(),
        HirKind::Literal(l) => rank_part(
            l.0.iter()
                .map(|&b| {
                    let mut s = ByteSet::default();
                    s.insert(b);
                    s
                })
                .collect(),
        ),
        HirKind::Class(c) => rank_part(vec![class_set(c)]),
        HirKind::Capture(c) => required(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => required(&r.sub),
        HirKind::Repetition(_) => Vec::new(),
        HirKind::Concat(parts) => rank_part(parts.iter().flat_map(required).collect()),
        HirKind::Alternation(branches) => {
            let reqs: Vec<Vec<ByteSet>> = branches.iter().map(required).collect();
            rank_part(alternation_sets(&reqs))
        }
    }
}

/// Sets every match of an alternation satisfies, from its branches' requirements:
/// for each rank `i`, the union of the branches' `i`-th sets; and each set of a
/// branch that contains a set of every branch (CRS's command lists end most
/// branches with the same separator class, at a different rank in each).
fn alternation_sets(reqs: &[Vec<ByteSet>]) -> Vec<ByteSet> {
    let rank_count = reqs.iter().map(Vec::len).min().unwrap_or(0);
    let mut sets: Vec<ByteSet> = (0..rank_count)
        .map(|i| {
            reqs.iter()
                .fold(ByteSet::default(), |acc, r| acc.union(&r[i]))
        })
        .collect();
    if rank_count == 0 {
        return sets;
    }
    let mut candidates: Vec<ByteSet> = reqs.iter().flatten().copied().collect();
    candidates.sort();
    candidates.dedup();
    for c in candidates {
        if reqs.iter().all(|r| r.iter().any(|s| s.is_subset(&c))) {
            sets.push(c);
        }
    }
    sets
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(p: &str) -> Option<Vec<String>> {
        regex_bytes(p).map(|r| {
            r.sets()
                .iter()
                .map(|s| String::from_utf8_lossy(&s.bytes().collect::<Vec<u8>>()).into_owned())
                .collect()
        })
    }

    fn presence_of(v: &[u8]) -> [u64; 4] {
        let mut p = [0; 4];
        presence(v, &mut p);
        p
    }

    #[test]
    fn extracts_selective_byte_sets() {
        assert_eq!(req("(?-u)[\\n\\r]"), Some(vec!["\n\r".into()]));
        assert_eq!(req("(?-u)%[0-9a-fA-F]{2}"), Some(vec!["%".into()]));
        // Every part of a concatenation is required; the rarest first.
        assert_eq!(
            req("(?-u)<x+'"),
            Some(vec!["'".into(), "<".into(), "x".into()])
        );
        // An alternation requires the union of its branches' best sets.
        assert_eq!(req("(?-u)a<|b'"), Some(vec!["'<".into(), "ab".into()]));
        // Anything that can match the empty string, or only common bytes: nothing.
        assert_eq!(req("(?-u)x*"), None);
        assert_eq!(req("(?-u)^.*$"), None);
        assert_eq!(req("(?-u)[a-z]+"), None);
        assert_eq!(req("(?-u)<|"), None);
        // Case-insensitive classes fold into one set.
        assert_eq!(req("(?i-u)j"), Some(vec!["j".into()]));
        // A superset of a kept set is implied by it.
        assert_eq!(req("(?-u)<[<>]"), Some(vec!["<".into()]));
    }

    #[test]
    fn an_alternation_requires_a_set_all_its_branches_hold_at_any_rank() {
        // The separator is the first branch's third set and the second's second:
        // rank by rank, it is only ever unioned with letters.
        let r = regex_bytes("(?-u)(?:xq[ &|]|z[ &|])").unwrap_or_else(|| panic!("req"));
        assert!(r.sets().iter().any(|s| s.bytes().eq(*b" &|")), "{r:?}");
        assert!(!r.admits(&presence_of(b"xqz")));
        assert!(r.admits(&presence_of(b"xq&")));
        assert!(r.admits(&presence_of(b"z q")));
        // A set only some branches hold is not required.
        let r = regex_bytes("(?-u)(?:xq[ &|]|zw)");
        assert!(r.is_none_or(|r| !r.sets().iter().any(|s| s.bytes().eq(*b" &|"))));
    }

    #[test]
    fn admits_only_values_with_a_byte_of_every_set() {
        let r = regex_bytes("(?i-u)j[\\t]*a[\\t]*v[\\t]*a[\\t]*:").unwrap_or_else(|| panic!("req"));
        assert!(r.admits(&presence_of(b"JAVA:x")));
        assert!(!r.admits(&presence_of(b"https://shop.example.com/app/home")));
        assert!(!r.admits(&presence_of(b"java")));
        // Presence is folded, as the sets are.
        assert!(presence_of(b"A")[1] & (1 << (b'a' - 64)) != 0);
    }
}
