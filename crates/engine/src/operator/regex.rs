//! The compiled form of a ModSecurity regular expression, shared by `@rx`,
//! `@rxGlobal` and the `@verify*` operators.
//!
//! A pattern is translated from PCRE (see [`super::pcre`]) and compiled with the
//! linear-time `regex` crate whenever possible. Patterns that need a backtracking
//! engine (look-around, back-references, atomic groups, possessive quantifiers) fall
//! back to `fancy-regex`, bounded by the match limit; exceeding it counts as no match,
//! as a PCRE match-limit error does in ModSecurity (which then also sets
//! `MSC_PCRE_LIMITS_EXCEEDED`; that variable is the engine's business).
//!
//! `fancy-regex` only searches `&str`, so for the fallback the subject is mapped
//! byte-for-char (byte `b` becomes `U+00bb`) in a per-thread buffer that is reused, and
//! positions are mapped back.

use std::cell::RefCell;

use super::pcre::{caret_variant, translate, Dialect, Translation};
use super::{Captures, OperatorError, RegexEngine};

/// PCRE's own default match limit, which ModSecurity v3 leaves in force unless
/// `SecPcreMatchLimit` is configured.
pub const DEFAULT_MATCH_LIMIT: u64 = 10_000_000;

/// Largest compiled program accepted from the `regex` crate (CRS patterns are large).
const SIZE_LIMIT: usize = 256 << 20;

/// A compiled pattern.
#[derive(Debug)]
pub(crate) enum Pattern {
    /// Linear-time engine over bytes.
    Linear {
        /// The compiled pattern.
        re: regex::bytes::Regex,
        /// The pattern with `^` as `\A`, when it has a `^`: decides matches at the
        /// end of a subject that ends with a newline (see [`caret_variant`]).
        caret: Option<Box<regex::bytes::Regex>>,
    },
    /// Backtracking fallback over the byte-for-char image of the subject.
    Backtracking {
        /// The compiled pattern.
        re: Box<fancy_regex::Regex>,
        /// The construct that required it.
        reason: &'static str,
    },
}

thread_local! {
    static LATIN1: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Runs `f` on the byte-for-char image of `input` (buffer reused per thread).
fn with_latin1<R>(input: &[u8], f: impl FnOnce(&str) -> R) -> R {
    LATIN1.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            buf.extend(input.iter().map(|&b| char::from(b)));
            f(&buf)
        }
        // Re-entrancy cannot happen (no callbacks run user code); be safe anyway.
        Err(_) => {
            let s: String = input.iter().map(|&b| char::from(b)).collect();
            f(&s)
        }
    })
}

/// Offset in the byte-for-char image of the byte offset `pos` of `input`.
fn to_latin1_offset(input: &[u8], pos: usize) -> usize {
    pos + input[..pos.min(input.len())]
        .iter()
        .filter(|&&b| b >= 0x80)
        .count()
}

/// Byte offset in `input` of the offset `pos` of its byte-for-char image.
fn from_latin1_offset(image: &str, pos: usize) -> usize {
    image[..pos].chars().count()
}

impl Pattern {
    /// Compiles a PCRE pattern as ModSecurity v3 does (`PCRE_DOTALL | PCRE_MULTILINE`,
    /// no UTF). `match_limit` 0 means [`DEFAULT_MATCH_LIMIT`].
    pub(crate) fn compile(pattern: &str, match_limit: u64) -> Result<Pattern, OperatorError> {
        // ModSecurity replaces an empty pattern with ".*".
        let pattern = if pattern.is_empty() { ".*" } else { pattern };
        match translate(pattern, Dialect::Bytes) {
            Translation::Pattern(p) => {
                let compile = |p: &str| {
                    regex::bytes::RegexBuilder::new(p)
                        .size_limit(SIZE_LIMIT)
                        .dfa_size_limit(SIZE_LIMIT)
                        .build()
                        .map_err(|e| {
                            OperatorError::InvalidArgument(format!(
                                "invalid regular expression `{pattern}`: {e}"
                            ))
                        })
                };
                let re = compile(&p)?;
                let caret = match caret_variant(pattern) {
                    Some(v) => Some(Box::new(compile(&v)?)),
                    None => None,
                };
                Ok(Pattern::Linear { re, caret })
            }
            Translation::Invalid(m) => Err(OperatorError::InvalidArgument(format!(
                "invalid regular expression `{pattern}`: {m}"
            ))),
            Translation::NeedsBacktracking(reason) => {
                let p = match translate(pattern, Dialect::Latin1) {
                    Translation::Pattern(p) => p,
                    Translation::Invalid(m) => {
                        return Err(OperatorError::InvalidArgument(format!(
                            "invalid regular expression `{pattern}`: {m}"
                        )))
                    }
                    Translation::NeedsBacktracking(m) => {
                        return Err(OperatorError::InvalidArgument(format!(
                            "invalid regular expression `{pattern}`: {m}"
                        )))
                    }
                };
                let limit = if match_limit == 0 {
                    DEFAULT_MATCH_LIMIT
                } else {
                    match_limit
                };
                let limit = usize::try_from(limit).unwrap_or(usize::MAX);
                fancy_regex::RegexBuilder::new(&p)
                    .backtrack_limit(limit)
                    .delegate_size_limit(SIZE_LIMIT)
                    .delegate_dfa_size_limit(SIZE_LIMIT)
                    .build()
                    .map(|re| Pattern::Backtracking {
                        re: Box::new(re),
                        reason,
                    })
                    .map_err(|e| {
                        OperatorError::InvalidArgument(format!(
                            "invalid regular expression `{pattern}` (needs a backtracking \
                             engine for its {reason}): {e}"
                        ))
                    })
            }
        }
    }

    /// Which engine runs the pattern.
    pub(crate) fn engine(&self) -> RegexEngine {
        match self {
            Pattern::Linear { .. } => RegexEngine::Linear,
            Pattern::Backtracking { reason, .. } => RegexEngine::Backtracking { reason },
        }
    }

    /// Whether the pattern matches anywhere in `input`.
    pub(crate) fn is_match(&self, input: &[u8]) -> bool {
        match self {
            Pattern::Linear { re, caret } => match caret {
                Some(c) if input.last() == Some(&b'\n') => match re.find(input) {
                    Some(m) if m.start() == input.len() => c.is_match_at(input, m.start()),
                    Some(_) => true,
                    None => false,
                },
                _ => re.is_match(input),
            },
            Pattern::Backtracking { re, .. } => {
                with_latin1(input, |s| re.is_match(s).unwrap_or(false))
            }
        }
    }

    /// The first match: fills `captures` with group 0 (whole match) and the groups
    /// that took part in it (up to 9), as ModSecurity fills TX:0-9.
    pub(crate) fn captures_first(&self, input: &[u8], captures: &mut Captures) -> bool {
        match self {
            // No group but the whole match: the match's span, from the faster
            // search that reports no groups (the same leftmost-first match).
            Pattern::Linear { re, caret } if re.captures_len() == 1 => {
                let Some(mut m) = re.find(input) else {
                    return false;
                };
                if let Some(c) = caret.as_ref().filter(|_| ends_at_newline(input, m.start())) {
                    // PCRE: `^` cannot match here; the variant decides.
                    match c.find_at(input, m.start()) {
                        Some(v) => m = v,
                        None => return false,
                    }
                }
                captures.clear();
                captures.set(0, m.as_bytes());
                true
            }
            Pattern::Linear { re, caret } => {
                let mut locs = re.capture_locations();
                let Some(m) = re.captures_read(&mut locs, input) else {
                    return false;
                };
                if let Some(c) = caret.as_ref().filter(|_| ends_at_newline(input, m.start())) {
                    // PCRE: `^` cannot match here; the variant decides (and its
                    // groups are the ones PCRE would report).
                    if c.captures_read_at(&mut locs, input, m.start()).is_none() {
                        return false;
                    }
                }
                captures.clear();
                for i in 0..locs.len().min(10) {
                    if let Some((s, e)) = locs.get(i) {
                        captures.set(i, &input[s..e]);
                    }
                }
                true
            }
            Pattern::Backtracking { re, .. } => with_latin1(input, |s| {
                let Ok(Some(caps)) = re.captures(s) else {
                    return false;
                };
                captures.clear();
                let mut buf = Vec::new();
                for i in 0..caps.len().min(10) {
                    if let Some(m) = caps.get(i) {
                        buf.clear();
                        buf.extend(m.as_str().chars().map(latin1_byte));
                        captures.set(i, &buf);
                    }
                }
                true
            }),
        }
    }

    /// All matches (as `@rxGlobal`): the groups of every match are numbered on from
    /// those of the previous one (TX:0..9 in order, as ModSecurity's `searchGlobal`).
    pub(crate) fn captures_all(&self, input: &[u8], captures: &mut Captures) -> bool {
        let mut n = 0usize;
        match self {
            Pattern::Linear { re, caret } => {
                let mut any = false;
                for caps in re.captures_iter(input) {
                    let start = caps.get(0).map_or(0, |m| m.start());
                    if let Some(c) = caret.as_ref().filter(|_| ends_at_newline(input, start)) {
                        // The last possible match: let the variant decide.
                        let Some(vc) = c.captures_at(input, start) else {
                            break;
                        };
                        if !any {
                            captures.clear();
                            any = true;
                        }
                        for m in vc.iter().flatten() {
                            captures.set(n, m.as_bytes());
                            n += 1;
                        }
                        break;
                    }
                    if !any {
                        captures.clear();
                        any = true;
                    }
                    for m in caps.iter().flatten() {
                        captures.set(n, m.as_bytes());
                        n += 1;
                    }
                    if n > 9 {
                        break;
                    }
                }
                any
            }
            Pattern::Backtracking { re, .. } => with_latin1(input, |s| {
                let mut any = false;
                let mut buf = Vec::new();
                for caps in re.captures_iter(s) {
                    let Ok(caps) = caps else { break };
                    if !any {
                        captures.clear();
                        any = true;
                    }
                    for m in caps.iter().flatten() {
                        buf.clear();
                        buf.extend(m.as_str().chars().map(latin1_byte));
                        captures.set(n, &buf);
                        n += 1;
                    }
                    if n > 9 {
                        break;
                    }
                }
                any
            }),
        }
    }

    /// The leftmost match starting at or after byte `start`, searched with the whole
    /// of `input` as context (anchors see the real start and line boundaries).
    pub(crate) fn find_at(&self, input: &[u8], start: usize) -> Option<(usize, usize)> {
        match self {
            Pattern::Linear { re, caret } => {
                let m = re.find_at(input, start)?;
                match caret.as_ref().filter(|_| ends_at_newline(input, m.start())) {
                    Some(c) => c
                        .find_at(input, m.start())
                        .filter(|v| v.start() == m.start())
                        .map(|v| (v.start(), v.end())),
                    None => Some((m.start(), m.end())),
                }
            }
            Pattern::Backtracking { re, .. } => with_latin1(input, |s| {
                let from = to_latin1_offset(input, start);
                match re.find_from_pos(s, from) {
                    Ok(Some(m)) => Some((
                        from_latin1_offset(s, m.start()),
                        from_latin1_offset(s, m.end()),
                    )),
                    _ => None,
                }
            }),
        }
    }

    /// Calls `f` with every non-overlapping match of `input` (ModSecurity's
    /// `searchAllMatches`: after an empty match the search resumes one byte later),
    /// until `f` returns true; returns whether it did.
    pub(crate) fn any_match(&self, input: &[u8], mut f: impl FnMut(usize, usize) -> bool) -> bool {
        let mut offset = 0;
        while offset <= input.len() {
            let Some((s, e)) = self.find_at(input, offset) else {
                return false;
            };
            if f(s, e) {
                return true;
            }
            offset = if s == e { e + 1 } else { e };
        }
        false
    }

    /// The search of ModSecurity's `@verifyCPF`, `@verifySSN` and `@verifySVNR`: for
    /// each start `i` in `0..len-1`, every non-overlapping match in the *substring*
    /// `input[i..]` (anchors see `i` as the start) is checked with `check`; the first
    /// accepted one is returned (as a range of `input`). Quadratic in the worst case,
    /// like ModSecurity.
    pub(crate) fn scan_suffixes(
        &self,
        input: &[u8],
        check: impl Fn(&[u8]) -> bool,
    ) -> Option<(usize, usize)> {
        let mut found = None;
        for i in 0..input.len().saturating_sub(1) {
            let val = &input[i..];
            if self.any_match(val, |s, e| {
                let ok = check(&val[s..e]);
                if ok {
                    found = Some((i + s, i + e));
                }
                ok
            }) {
                return found;
            }
        }
        None
    }
}

/// Whether `pos` is the end of a non-empty `input` that ends with a newline: the one
/// position where PCRE's multiline `^` differs from the `regex` crate's.
fn ends_at_newline(input: &[u8], pos: usize) -> bool {
    pos == input.len() && input.last() == Some(&b'\n')
}

/// The byte a char of a byte-for-char image stands for.
fn latin1_byte(c: char) -> u8 {
    u8::try_from(u32::from(c)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests fail by panicking

    use super::*;

    fn fallback(p: &str) -> Pattern {
        let pat = Pattern::compile(p, 0).unwrap_or_else(|e| panic!("{p}: {e}"));
        assert!(
            matches!(pat.engine(), RegexEngine::Backtracking { .. }),
            "{p} should need the fallback"
        );
        pat
    }

    #[test]
    fn fallback_keeps_pcre_byte_semantics() {
        // ASCII word boundary and classes, bytes >= 0x80 as single units.
        let p = fallback(r"(?=a)\bab\b");
        assert!(p.is_match(b"x ab y"));
        assert!(!p.is_match(b"xab"));
        assert!(p.is_match(b"\xE9ab\xE9"));
        let p = fallback(r"^(?=.)[\w\s]+$");
        assert!(p.is_match(b"a z"));
        assert!(!p.is_match(b"\xE9z"));
        let p = fallback(r"(?i)(?=x)xé");
        assert!(!p.is_match("XÉ".as_bytes()));
        assert!(p.is_match("Xé".as_bytes()));
        let p = fallback(r"(?=[[:alpha:]])\w+\Z");
        assert!(p.is_match(b"abc\n"));
        let p = fallback(r"(a)\1(?=.)");
        let mut caps = Captures::default();
        assert!(p.captures_first(b"\xFFaab", &mut caps));
        assert_eq!(caps.get(0), Some(&b"aa"[..]));
        assert_eq!(p.find_at(b"\xFF\xFFaab", 0), Some((2, 4)));
        assert_eq!(p.find_at(b"\xFF\xFFaab", 3), None);
    }

    #[test]
    fn a_pattern_without_groups_captures_the_match_a_grouped_one_reports() {
        use crate::operator::Captures;
        for (bare, grouped) in [
            ("^.*$", "^(.*)$"),
            ("b+", "(b+)"),
            ("^ab", "^(ab)"),
            (r"\d{2,}x?", r"(\d{2,}x?)"),
        ] {
            let (a, b) = (
                Pattern::compile(bare, 0).unwrap(),
                Pattern::compile(grouped, 0).unwrap(),
            );
            for input in [
                &b"abbb"[..],
                b"",
                b"x\nab",
                b"ab\n",
                b"\nab",
                b"a\nb\n",
                b"12345x",
            ] {
                let (mut ca, mut cb) = (Captures::default(), Captures::default());
                let (ma, mb) = (
                    a.captures_first(input, &mut ca),
                    b.captures_first(input, &mut cb),
                );
                assert_eq!(ma, mb, "{bare} on {input:?}");
                if ma {
                    assert_eq!(ca.get(0), cb.get(0), "{bare} on {input:?}");
                    assert_eq!(ca.get(1), None, "{bare} on {input:?}");
                }
            }
        }
    }

    #[test]
    fn octal_and_backreference_rules() {
        let p = Pattern::compile(r"\101", 0).unwrap();
        assert!(p.is_match(b"A"));
        assert_eq!(p.engine(), RegexEngine::Linear);
        let p = Pattern::compile(r"(a)\1", 0).unwrap();
        assert!(p.is_match(b"aa") && !p.is_match(b"ab"));
    }
}
