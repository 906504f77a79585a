//! The multi-pattern prefilter: "one complex regex beats many simple rules", done by
//! the compiler so that every rule keeps its identity.
//!
//! At load time, every operator that can only match when one of a few literals
//! occurs in its input (`@rx` with required literals, `@pm`/`@pmFromFile` phrases,
//! `@contains`, `@beginsWith`, `@endsWith`, `@streq`, `@containsWord`) gives that
//! literal set; all sets go into one ASCII-case-insensitive Aho-Corasick automaton.
//! At run time, a value transformed by a chain is scanned once (overlapping search,
//! so no literal hides another) and the scan says, as a bit set over rules, which of
//! those rules may match; the others are known not to match without running their
//! operator. The prefilter can only say "maybe": matching case-insensitively and
//! choosing necessary (not sufficient) literals only adds candidates, never hides a
//! match. `Options::verify_prefilter` checks this on every skipped evaluation.
//!
//! Required literals of a regular expression are derived from its syntax tree
//! (`regex-syntax`, parsed with the same flags the operator compiles with): a literal
//! must occur in every match; a concatenation requires what any one of its parts
//! requires (the part with the longest shortest literal is chosen); an alternation
//! requires one of its branches' literals; a repetition with a minimum of one
//! requires its body's; anything else requires nothing.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex_syntax::hir::{Class, Hir, HirKind};

/// Most literals one operator may contribute (a larger set is treated as "none").
const MAX_SET: usize = 64;

/// Required literals of a pattern already translated to the `regex` crate's syntax
/// for bytes (as compiled by `regex::bytes`), or `None` when a match needs none.
pub fn regex_literals(translated: &str) -> Option<Vec<Vec<u8>>> {
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(translated)
        .ok()?;
    let set = required(&hir)?;
    (score(&set) >= 2).then_some(set)
}

/// The shortest literal's length: how selective a set is.
fn score(set: &[Vec<u8>]) -> usize {
    set.iter().map(Vec::len).min().unwrap_or(0)
}

/// A single byte matched case-insensitively (`[Ss]`), as `(?i)` produces.
fn case_pair(class: &Class) -> Option<u8> {
    let bytes: Vec<u8> = match class {
        Class::Bytes(c) => {
            let mut v = Vec::new();
            for r in c.ranges() {
                if u32::from(r.end()) - u32::from(r.start()) > 2 {
                    return None;
                }
                v.extend(r.start()..=r.end());
            }
            v
        }
        Class::Unicode(c) => {
            let mut v = Vec::new();
            for r in c.ranges() {
                if u32::from(r.end()) - u32::from(r.start()) > 2 {
                    return None;
                }
                for ch in r.start()..=r.end() {
                    if !ch.is_ascii() && ch != '\u{17f}' && ch != '\u{212a}' {
                        return None;
                    }
                    if ch.is_ascii() {
                        v.push(ch as u8);
                    }
                }
            }
            v
        }
    };
    match bytes.as_slice() {
        [a] => Some(*a),
        [a, b] if a.eq_ignore_ascii_case(b) => Some(a.to_ascii_lowercase()),
        _ => None,
    }
}

/// A literal (bytes) that `h` always matches exactly, case-insensitively: literals
/// and case pairs.
fn fixed(h: &Hir) -> Option<Vec<u8>> {
    match h.kind() {
        HirKind::Literal(l) => Some(l.0.to_vec()),
        HirKind::Class(c) => case_pair(c).map(|b| vec![b]),
        HirKind::Capture(c) => fixed(&c.sub),
        HirKind::Concat(parts) => {
            let mut out = Vec::new();
            for p in parts {
                out.extend(fixed(p)?);
            }
            Some(out)
        }
        _ => None,
    }
}

fn required(h: &Hir) -> Option<Vec<Vec<u8>>> {
    if let Some(f) = fixed(h) {
        return (!f.is_empty()).then(|| vec![f]);
    }
    match h.kind() {
        HirKind::Capture(c) => required(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => required(&r.sub),
        HirKind::Alternation(branches) => {
            let mut set: Vec<Vec<u8>> = Vec::new();
            for b in branches {
                for lit in required(b)? {
                    if !set.iter().any(|s| s.eq_ignore_ascii_case(&lit)) {
                        set.push(lit);
                    }
                }
                if set.len() > MAX_SET {
                    return None;
                }
            }
            Some(set)
        }
        HirKind::Concat(parts) => {
            let mut best: Option<Vec<Vec<u8>>> = None;
            let mut consider = |cand: Vec<Vec<u8>>| {
                if best.as_ref().is_none_or(|b| score(&cand) > score(b)) {
                    best = Some(cand);
                }
            };
            // Runs of consecutive fixed parts form longer literals.
            let mut run: Vec<u8> = Vec::new();
            for p in parts {
                match fixed(p) {
                    Some(f) => run.extend(f),
                    None => {
                        if !run.is_empty() {
                            consider(vec![std::mem::take(&mut run)]);
                        }
                        if let Some(set) = required(p) {
                            consider(set);
                        }
                    }
                }
            }
            if !run.is_empty() {
                consider(vec![run]);
            }
            best
        }
        _ => None,
    }
}

/// The compiled prefilter of a program.
#[derive(Debug, Clone)]
pub struct Prefilter {
    ac: AhoCorasick,
    /// For each literal, the rule bits it admits.
    literal_rules: Vec<Vec<u32>>,
    /// Number of rule bits.
    rules: u32,
}

impl Prefilter {
    /// Builds the prefilter from `(rule bit, literals)` pairs; `None` when no rule
    /// has literals.
    pub fn build(sets: &[(u32, Vec<Vec<u8>>)]) -> Option<Prefilter> {
        let mut literals: Vec<Vec<u8>> = Vec::new();
        let mut index: std::collections::HashMap<Vec<u8>, usize> = std::collections::HashMap::new();
        let mut literal_rules: Vec<Vec<u32>> = Vec::new();
        let mut rules = 0;
        for (bit, set) in sets {
            rules = rules.max(bit + 1);
            for lit in set {
                let key = lit.to_ascii_lowercase();
                let i = *index.entry(key.clone()).or_insert_with(|| {
                    literals.push(key);
                    literal_rules.push(Vec::new());
                    literals.len() - 1
                });
                if literal_rules[i].last() != Some(bit) {
                    literal_rules[i].push(*bit);
                }
            }
        }
        if literals.is_empty() {
            return None;
        }
        // A DFA: the fastest scan (one transition per byte), built once per program.
        let ac = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&literals)
            .or_else(|_| {
                AhoCorasickBuilder::new()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::Standard)
                    .build(&literals)
            })
            .ok()?;
        Some(Prefilter {
            ac,
            literal_rules,
            rules,
        })
    }

    /// Words of a rule bit set.
    pub fn words(&self) -> usize {
        (self.rules as usize).div_ceil(64)
    }

    /// Scans `value` once; sets in `bits` (of [`Prefilter::words`] words, cleared
    /// first) the rules that may match it.
    pub fn scan(&self, value: &[u8], bits: &mut Vec<u64>) {
        bits.clear();
        bits.resize(self.words(), 0);
        for m in self.ac.find_overlapping_iter(value) {
            for &r in &self.literal_rules[m.pattern().as_usize()] {
                bits[(r / 64) as usize] |= 1 << (r % 64);
            }
        }
    }

    /// Number of distinct literals.
    pub fn literal_count(&self) -> usize {
        self.literal_rules.len()
    }
}

/// Whether `bit` is set.
pub fn has(bits: &[u64], bit: u32) -> bool {
    bits.get((bit / 64) as usize)
        .is_some_and(|w| w & (1 << (bit % 64)) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(p: &str) -> Option<Vec<String>> {
        regex_literals(p).map(|v| {
            v.into_iter()
                .map(|l| String::from_utf8_lossy(&l).into_owned())
                .collect()
        })
    }

    #[test]
    fn extracts_necessary_literals() {
        assert_eq!(lits("(?i)union\\s+select"), Some(vec!["select".into()]));
        assert_eq!(lits("foo|bar"), Some(vec!["foo".into(), "bar".into()]));
        assert_eq!(lits("a+"), None);
        assert_eq!(lits("(?:abc)?def"), Some(vec!["def".into()]));
        assert_eq!(lits("x*|yy"), None);
        assert_eq!(lits("(?i)<script"), Some(vec!["<script".into()]));
        assert_eq!(lits(".*"), None);
    }

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
    }
}
