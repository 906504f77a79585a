//! Required literals of a regular expression, derived from its syntax tree
//! (`regex-syntax`, parsed with the same flags the operator compiles with): a literal
//! must occur in every match; a concatenation requires what any one of its parts
//! requires (the part with the longest shortest literal is chosen); an alternation
//! requires one of its branches' literals; a repetition with a minimum of one
//! requires its body's; anything else requires nothing.

use regex_syntax::hir::{Class, Hir, HirKind};

use crate::transform::triggers::ByteMask;

/// Literals shorter than this are joined across the parts that are not exact
/// when that gives longer ones.
const EDGES_BELOW: usize = 6;
/// Most literals one operator may contribute (a larger set is treated as "none").
const MAX_SET: usize = 64;
/// Longest literal kept in a cross product (longer ones are cut: a prefix of a
/// required literal is required too).
const MAX_LEN: usize = 24;
/// Largest byte class expanded into single-byte alternatives.
const MAX_CLASS: usize = 8;
/// Largest byte class whose bytes a match may begin or end with (see
/// [`prefixes`] and [`suffixes`]): a class joined to the run beside it.
const WIDE_CLASS: usize = 32;
/// Most literals of a set formed where a run of exact parts meets a part that is
/// not exact (the run times the strings the part's matches begin with).
const MAX_EDGE: usize = 256;

/// Required literals of a pattern already translated to the `regex` crate's syntax
/// for bytes (as compiled by `regex::bytes`), or `None` when a match needs none.
pub fn regex_literals(translated: &str) -> Option<Vec<Vec<u8>>> {
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(translated)
        .ok()?;
    required(&hir).filter(|s| score(s) >= 2)
}

/// The length in bytes of the shortest match of a pattern translated as for
/// [`regex_literals`] (0 when it does not parse: unknown).
pub fn regex_min_len(translated: &str) -> usize {
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(translated)
        .ok()
        .and_then(|h| h.properties().minimum_len())
        .unwrap_or(0)
}

/// The test of the value's end of a pattern translated as for
/// [`regex_literals`] (see [`super::anchored_end`]); `None` when it has none.
pub fn regex_anchored_end(translated: &str) -> Option<super::anchored_end::AnchoredEnd> {
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(translated)
        .ok()?;
    super::anchored_end::AnchoredEnd::build(&hir)
}

/// What every match of a pattern holds: one of `literals`, or (when given) one of
/// the `escape` bytes, or (when given) a match of `anchored` at the value's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequiredLiterals {
    /// Literals (lower-cased; possibly none, when only escape bytes admit).
    pub literals: Vec<Vec<u8>>,
    /// Bytes whose presence admits a value without a literal.
    pub escape: Option<ByteMask>,
    /// The pattern's branches that begin with `^`, whose matches begin at the
    /// value's start (see [`super::anchored`]): a value on which it matches is
    /// admitted without a literal.
    pub anchored: Option<std::sync::Arc<super::anchored::AnchoredStart>>,
}

/// As [`regex_literals`]; for a pattern without usable literals, the literals of
/// its matches that hold none of its rare bytes, with those bytes to escape (see
/// [`without_rare_bytes`]); failing those, literals joined across the parts of
/// concatenations that are not exact (see [`concat_required`]); failing those,
/// for a pattern whose top-level alternation has branches that begin with `^`,
/// the other branches' requirement and an anchored test of the `^` ones (see
/// [`anchored_split`]).
pub fn regex_required(translated: &str) -> Option<RequiredLiterals> {
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(translated)
        .ok()?;
    hir_required(&hir).or_else(|| anchored_split(&hir))
}

/// [`regex_required`] of a parsed pattern, without the anchored split.
fn hir_required(hir: &Hir) -> Option<RequiredLiterals> {
    if let Some(mut literals) = required(hir).filter(|s| score(s) >= 2) {
        // Short literals (`on`, `cons`) are common in benign text: literals
        // joined across the parts that are not exact (`[ (,;=]on`) may be
        // longer, each a longer string around a short one every match holds.
        let within = score(&literals);
        if within < EDGES_BELOW {
            if let Some(across) = required_with(hir, EDGES_BELOW).filter(|s| score(s) > within) {
                literals = across;
            }
        }
        return Some(RequiredLiterals {
            literals,
            escape: None,
            anchored: None,
        });
    }
    if let Some(r) = without_rare_bytes(hir) {
        return Some(r);
    }
    // Last, longer literals joined across parts that are not exact (a pattern
    // made of alternations with optional pieces, as CRS's path traversal one).
    required_with(hir, 2)
        .filter(|s| score(s) >= 2)
        .map(|literals| RequiredLiterals {
            literals,
            escape: None,
            anchored: None,
        })
}

/// The requirement of a pattern `(?:A|U)T` (a top-level alternation, possibly
/// followed by more parts `T`) some of whose branches `A` begin with `^`: every
/// match goes through `U` — and then holds one of `U·T`'s literals or escape
/// bytes ([`hir_required`]) — or through `A` — and then begins at the value's
/// start, where `A·T` (without the `^`) matches it anchored, or after a line end
/// (`^` is multi-line), which is then an escape byte too. `None` when `A` is
/// empty, `U·T` has no requirement or the anchored DFA would be too large.
fn anchored_split(h: &Hir) -> Option<RequiredLiterals> {
    let (branches, tail) = split_head(h)?;
    let mut anchored = Vec::new();
    let mut rest = Vec::new();
    let mut line_ends: Vec<u8> = Vec::new();
    for b in branches {
        match strip_start(b) {
            Some((stripped, ends)) => {
                anchored.push(stripped);
                line_ends.extend_from_slice(ends);
            }
            None => rest.push(b.clone()),
        }
    }
    // A pattern every match of which begins at the start is as cheap to run as
    // its anchored DFA: nothing to gain (and the test would run on every scan).
    if anchored.is_empty() || rest.is_empty() {
        return None;
    }
    let with_tail = |head: Vec<Hir>| {
        let mut parts = vec![Hir::alternation(head)];
        parts.extend(tail.iter().cloned());
        Hir::concat(parts)
    };
    // (An anchored split of `U·T` itself is not tried: one level.)
    let mut req = hir_required(&with_tail(rest))?;
    // The anchored matches without the rare bytes, `/` and `=` (which then
    // admit the value): the paths and assignments command patterns allow before
    // a name multiply the DFA's states (932260: 4.4 MB and 150 ms to build with
    // them, a tenth without).
    let whole = with_tail(anchored);
    let mut matched = [false; 256];
    mark_bytes(&whole, &mut matched);
    let mut gone: Vec<u8> = RARE
        .iter()
        .chain(b"/=")
        .copied()
        .filter(|&b| matched[usize::from(b)])
        .collect();
    gone.extend_from_slice(&line_ends);
    let start = match restrict(&whole, &gone) {
        Some(r) => super::anchored::AnchoredStart::build(&r)?,
        // No anchored match without those bytes.
        None => super::anchored::AnchoredStart::never(),
    };
    if !gone.is_empty() {
        let mut escape = req.escape.unwrap_or_default();
        for b in gone {
            let b = b.to_ascii_lowercase();
            escape[usize::from(b >> 6)] |= 1 << (b & 63);
        }
        req.escape = Some(escape);
    }
    req.anchored = Some(std::sync::Arc::new(start));
    Some(req)
}

/// The branches of `h`'s top-level alternation and the parts after it: `h` is
/// `(?:A|B|...)` or `(?:A|B|...)T...` (captures looked through), or a single
/// branch beginning with `^`.
fn split_head(h: &Hir) -> Option<(&[Hir], &[Hir])> {
    let h = uncaptured(h);
    match h.kind() {
        HirKind::Alternation(branches) => Some((branches, &[])),
        HirKind::Concat(parts) => {
            let first = uncaptured(parts.first()?);
            match first.kind() {
                HirKind::Alternation(branches) => Some((branches, &parts[1..])),
                HirKind::Look(_) => Some((std::slice::from_ref(h), &[])),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `h` with the captures around it looked through.
fn uncaptured(mut h: &Hir) -> &Hir {
    while let HirKind::Capture(c) = h.kind() {
        h = &c.sub;
    }
    h
}

/// A branch that begins with a start-of-input or start-of-line assertion:
/// the branch without it, and the bytes after which the assertion also holds
/// (none for `\A`, `\n` for a multi-line `^`, `\n` and `\r` in CRLF mode).
fn strip_start(b: &Hir) -> Option<(Hir, &'static [u8])> {
    use regex_syntax::hir::Look;
    let ends = |l: &Look| -> Option<&'static [u8]> {
        match l {
            Look::Start => Some(b""),
            Look::StartLF => Some(b"\n"),
            Look::StartCRLF => Some(b"\n\r"),
            _ => None,
        }
    };
    let b = uncaptured(b);
    match b.kind() {
        HirKind::Look(l) => Some((Hir::empty(), ends(l)?)),
        HirKind::Concat(parts) => match parts.first().map(|p| uncaptured(p).kind()) {
            Some(HirKind::Look(l)) => Some((Hir::concat(parts[1..].to_vec()), ends(l)?)),
            _ => None,
        },
        _ => None,
    }
}

/// Bytes that benign values rarely hold (see [`literal_score`]).
const RARE: &[u8] = b"<>'\"();`|{}\\$!^~[]*@";

/// The literals of `h`'s matches that hold none of its rare bytes, with those
/// bytes as escape bytes.
///
/// A pattern whose every match may be spread out by rare bytes (CRS's evasion-
/// tolerant command patterns allow quotes, backslashes and `$` variables between
/// the letters of each word) has no literal every match needs. But a match either
/// holds one of the rare bytes the pattern can match — then the value holds it —
/// or it is a match of the pattern with those bytes taken out of its classes and
/// literals, whose required literals then occur. A value that holds neither
/// cannot match.
fn without_rare_bytes(h: &Hir) -> Option<RequiredLiterals> {
    let mut matched = [false; 256];
    mark_bytes(h, &mut matched);
    let rare: Vec<u8> = RARE
        .iter()
        .copied()
        .filter(|&b| matched[usize::from(b)])
        .collect();
    if rare.is_empty() {
        return None;
    }
    let literals = match restrict(h, &rare) {
        // No match without a rare byte.
        None => Vec::new(),
        // The rare bytes admit the values that hold them: the literals may be the
        // less rare separators.
        Some(r) => required(&r).filter(|s| score(s) >= 1)?,
    };
    if literals.len() > MAX_RESTRICTED {
        return None;
    }
    let (rare, literals) = fewer_escapes(h, rare, literals);
    Some(RequiredLiterals {
        literals,
        escape: Some(crate::transform::triggers::presence(&rare)),
        anchored: None,
    })
}

/// Rare bytes that benign values hold most often, first (a browser's
/// `User-Agent` holds the first three, e-mail addresses the `@`).
const COMMON_RARE: &[u8] = b"();@'*![]\"{}|~^$`<>\\";

/// Takes out of `rare` (the escape bytes of [`without_rare_bytes`], whose
/// restricted matches require `literals`) the bytes without which the matches
/// that hold none of the others still require literals as selective (the byte
/// itself may become one: it admits the same values as a literal): a byte the
/// pattern matches only beside another escape byte (CRS's `$(...)`, whose `(`
/// follows a `$`) need not admit a value by itself. Tried one at a time, the
/// bytes benign values hold most often first; a byte is kept when its matches
/// give no literal, a less selective set or too many literals.
fn fewer_escapes(
    h: &Hir,
    mut rare: Vec<u8>,
    mut literals: Vec<Vec<u8>>,
) -> (Vec<u8>, Vec<Vec<u8>>) {
    for b in COMMON_RARE {
        if !rare.contains(b) {
            continue;
        }
        let fewer: Vec<u8> = rare.iter().copied().filter(|x| x != b).collect();
        let found = match restrict(h, &fewer) {
            // Still no match without one of the others.
            None => Some(Vec::new()),
            // The byte itself as a literal admits what it did as an escape
            // byte: the others must be as selective as before.
            Some(r) if !literals.is_empty() => required(&r).filter(|s| {
                let others: Vec<Vec<u8>> = s.iter().filter(|l| l[..] != [*b]).cloned().collect();
                (others.is_empty() || score(&others) >= score(&literals).max(1))
                    && s.len() <= MAX_RESTRICTED.min(literals.len() + 8)
            }),
            Some(_) => None,
        };
        if let Some(set) = found {
            rare = fewer;
            literals = set;
        }
    }
    (rare, literals)
}

/// `h` restricted to the matches that hold none of the `escape` bytes (`None`
/// when it then matches nothing): what the literals of [`without_rare_bytes`] are
/// taken from, for the proof test to generate from.
#[cfg(test)]
pub(crate) fn restricted(h: &Hir, escape: &ByteMask) -> Option<Hir> {
    let gone: Vec<u8> = (0..=255u8)
        .filter(|&b| escape[usize::from(b >> 6)] & (1 << (b & 63)) != 0)
        .collect();
    restrict(h, &gone)
}

/// Most literals a set from [`without_rare_bytes`] may have.
const MAX_RESTRICTED: usize = 256;

/// Marks every byte `h` can match (any byte for large classes).
fn mark_bytes(h: &Hir, out: &mut [bool; 256]) {
    match h.kind() {
        HirKind::Literal(l) => {
            for &b in l.0.iter() {
                out[usize::from(b)] = true;
            }
        }
        HirKind::Class(Class::Bytes(c)) => {
            for r in c.ranges() {
                for b in r.start()..=r.end() {
                    out[usize::from(b)] = true;
                }
            }
        }
        HirKind::Class(Class::Unicode(c)) => {
            for r in c.ranges() {
                if r.start().is_ascii() {
                    let end = u32::from(r.end()).min(127) as u8;
                    for b in (r.start() as u8)..=end {
                        out[usize::from(b)] = true;
                    }
                }
                if !r.end().is_ascii() {
                    // Multi-byte characters: bytes >= 0x80.
                    out[0x80..].fill(true);
                }
            }
        }
        HirKind::Capture(c) => mark_bytes(&c.sub, out),
        HirKind::Repetition(r) => mark_bytes(&r.sub, out),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().for_each(|x| mark_bytes(x, out)),
        HirKind::Empty | HirKind::Look(_) => {}
    }
}

/// `h` matching only strings without the bytes `gone`; `None` when it then
/// matches nothing.
fn restrict(h: &Hir, gone: &[u8]) -> Option<Hir> {
    use regex_syntax::hir::{ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange};
    Some(match h.kind() {
        HirKind::Empty | HirKind::Look(_) => h.clone(),
        HirKind::Literal(l) => {
            if l.0.iter().any(|b| gone.contains(b)) {
                return None;
            }
            h.clone()
        }
        HirKind::Class(Class::Bytes(c)) => {
            let mut c = c.clone();
            c.difference(&ClassBytes::new(
                gone.iter().map(|&b| ClassBytesRange::new(b, b)),
            ));
            if c.ranges().is_empty() {
                return None;
            }
            Hir::class(Class::Bytes(c))
        }
        HirKind::Class(Class::Unicode(c)) => {
            let mut c = c.clone();
            c.difference(&ClassUnicode::new(
                gone.iter()
                    .map(|&b| ClassUnicodeRange::new(char::from(b), char::from(b))),
            ));
            if c.ranges().is_empty() {
                return None;
            }
            Hir::class(Class::Unicode(c))
        }
        HirKind::Capture(c) => restrict(&c.sub, gone)?,
        HirKind::Repetition(r) => match restrict(&r.sub, gone) {
            Some(sub) => Hir::repetition(regex_syntax::hir::Repetition {
                min: r.min,
                max: r.max,
                greedy: r.greedy,
                sub: Box::new(sub),
            }),
            None if r.min == 0 => Hir::empty(),
            None => return None,
        },
        HirKind::Concat(parts) => {
            let mut out = Vec::with_capacity(parts.len());
            for p in parts {
                out.push(restrict(p, gone)?);
            }
            Hir::concat(out)
        }
        HirKind::Alternation(branches) => {
            let out: Vec<Hir> = branches.iter().filter_map(|b| restrict(b, gone)).collect();
            if out.is_empty() {
                return None;
            }
            Hir::alternation(out)
        }
    })
}

/// How selective a literal is likely to be on benign traffic: its length, except
/// that single bytes rarely seen in benign values (`<`, quotes, parentheses, ...)
/// count as two, the separators that parsing takes out of argument values (`=`,
/// `&`, line ends) as one, and other single bytes as none.
fn literal_score(l: &[u8]) -> usize {
    match l {
        [] => 0,
        [b] if RARE.contains(b) => 2,
        [b'=' | b'&' | b'\n' | b'\r'] => 1,
        [_] => 0,
        _ => l.len(),
    }
}

/// A set is as selective as its least selective literal.
fn score(set: &[Vec<u8>]) -> usize {
    set.iter().map(|l| literal_score(l)).min().unwrap_or(0)
}

/// The bytes a class matches, folded to lower case (the prefilter is ASCII case-
/// insensitive), when there are at most [`MAX_CLASS`] of them.
fn class_bytes(class: &Class) -> Option<Vec<u8>> {
    class_bytes_within(class, MAX_CLASS)
}

/// [`class_bytes`] with at most `max` bytes.
fn class_bytes_within(class: &Class, max: usize) -> Option<Vec<u8>> {
    let mut v: Vec<u8> = Vec::new();
    let add = |b: u8, v: &mut Vec<u8>| {
        let b = b.to_ascii_lowercase();
        if !v.contains(&b) {
            v.push(b);
        }
    };
    match class {
        Class::Bytes(c) => {
            for r in c.ranges() {
                if usize::from(r.end() - r.start()) >= 2 * max {
                    return None;
                }
                for b in r.start()..=r.end() {
                    add(b, &mut v);
                }
            }
        }
        Class::Unicode(c) => {
            for r in c.ranges() {
                if u32::from(r.end()) - u32::from(r.start()) >= 2 * max as u32 {
                    return None;
                }
                for ch in r.start()..=r.end() {
                    // Non-ASCII members of a case-insensitive class (the long s,
                    // the Kelvin sign) are multi-byte: give up rather than guess.
                    if !ch.is_ascii() {
                        return None;
                    }
                    add(ch as u8, &mut v);
                }
            }
        }
    }
    (!v.is_empty() && v.len() <= max).then_some(v)
}

/// `a x b`: every concatenation, when the product stays small (literals longer
/// than [`MAX_LEN`] are cut to their prefix, which is still required).
fn cross(a: &[Vec<u8>], b: &[Vec<u8>]) -> Option<Vec<Vec<u8>>> {
    cross_within(a, b, MAX_SET)
}

/// [`cross`] with at most `max` products.
fn cross_within(a: &[Vec<u8>], b: &[Vec<u8>], max: usize) -> Option<Vec<Vec<u8>>> {
    if a.len().saturating_mul(b.len()) > max {
        return None;
    }
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(a.len() * b.len());
    for x in a {
        for y in b {
            let mut l = x.clone();
            l.extend_from_slice(y);
            l.truncate(MAX_LEN);
            if !out.contains(&l) {
                out.push(l);
            }
        }
    }
    Some(out)
}

/// The finite set of strings `h` matches exactly (lower-cased), when small:
/// literals, small classes, their concatenations, alternations and fixed
/// repetitions. Zero-width assertions match the empty string: ignoring them
/// only widens what a literal set admits.
fn exact(h: &Hir) -> Option<Vec<Vec<u8>>> {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => Some(vec![Vec::new()]),
        HirKind::Literal(l) => {
            let mut v = l.0.to_ascii_lowercase();
            v.truncate(MAX_LEN);
            Some(vec![v])
        }
        HirKind::Class(c) => class_bytes(c).map(|v| v.into_iter().map(|b| vec![b]).collect()),
        HirKind::Capture(c) => exact(&c.sub),
        HirKind::Concat(parts) => {
            let mut acc = vec![Vec::new()];
            for p in parts {
                acc = cross(&acc, &exact(p)?)?;
            }
            Some(acc)
        }
        HirKind::Alternation(branches) => {
            let mut set: Vec<Vec<u8>> = Vec::new();
            for b in branches {
                for l in exact(b)? {
                    if !set.contains(&l) {
                        set.push(l);
                    }
                }
                if set.len() > MAX_SET {
                    return None;
                }
            }
            Some(set)
        }
        HirKind::Repetition(r) if Some(r.min) == r.max && r.min <= 8 => {
            let sub = exact(&r.sub)?;
            let mut acc = vec![Vec::new()];
            for _ in 0..r.min {
                acc = cross(&acc, &sub)?;
            }
            Some(acc)
        }
        _ => None,
    }
}

/// Strings one of which every match of `h` begins with, lower-cased (at most
/// [`MAX_SET`], each at most [`MAX_LEN`] long: a prefix of a match's prefix is
/// one too); `[""]` when nothing is known. A run of exact parts followed by `h`
/// is followed by one of them, so each run string joined to one is required.
fn prefixes(h: &Hir) -> Vec<Vec<u8>> {
    if let Some(set) = exact(h) {
        return set;
    }
    match h.kind() {
        HirKind::Class(c) => wide_class(c),
        HirKind::Capture(c) => prefixes(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => prefixes(&r.sub),
        HirKind::Alternation(branches) => branch_union(branches, prefixes),
        HirKind::Concat(parts) => {
            // The exact parts from the first on, then the first other part's
            // prefixes (cut to a prefix when the product grows too large).
            let mut acc = vec![Vec::new()];
            for p in parts {
                let (next, last) = match exact(p) {
                    Some(e) => (e, false),
                    None => (prefixes(p), true),
                };
                match cross(&acc, &next) {
                    Some(n) => acc = n,
                    None => return acc,
                }
                if last {
                    break;
                }
            }
            acc
        }
        _ => vec![Vec::new()],
    }
}

/// Strings one of which every match of `h` ends with, lower-cased (at most
/// [`MAX_SET`]); `[""]` when nothing is known. Never cut: a cut string would not
/// end the match, so a set that would need one is given up (the empty string).
/// `h` followed by a run of exact parts ends with one of them, followed by the
/// run: each joined to a run string is required.
fn suffixes(h: &Hir) -> Vec<Vec<u8>> {
    let whole = |set: Vec<Vec<u8>>| {
        if set.iter().any(|l| l.len() >= MAX_LEN) {
            vec![Vec::new()]
        } else {
            set
        }
    };
    if let Some(set) = exact(h) {
        return whole(set);
    }
    match h.kind() {
        HirKind::Class(c) => wide_class(c),
        HirKind::Capture(c) => suffixes(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => suffixes(&r.sub),
        HirKind::Alternation(branches) => branch_union(branches, suffixes),
        HirKind::Concat(parts) => {
            // The exact parts from the last back, then the last other part's
            // suffixes before them.
            let mut acc = vec![Vec::new()];
            for p in parts.iter().rev() {
                let (before, last) = match exact(p) {
                    Some(e) => (e, false),
                    None => (suffixes(p), true),
                };
                match cross(&before, &acc) {
                    Some(n) if n.iter().all(|l| l.len() < MAX_LEN) => acc = n,
                    _ => return acc,
                }
                if last {
                    break;
                }
            }
            acc
        }
        _ => vec![Vec::new()],
    }
}

/// The bytes of a class too large to be [`exact`] (at most [`WIDE_CLASS`]), as
/// one-byte strings for [`prefixes`] and [`suffixes`]; `[""]` when larger.
fn wide_class(class: &Class) -> Vec<Vec<u8>> {
    class_bytes_within(class, WIDE_CLASS).map_or_else(
        || vec![Vec::new()],
        |v| v.into_iter().map(|b| vec![b]).collect(),
    )
}

/// The union of `ends` (`prefixes` or `suffixes`) over an alternation's
/// branches; `[""]` when a branch knows nothing or the union grows past
/// [`MAX_SET`].
fn branch_union(branches: &[Hir], ends: fn(&Hir) -> Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut set: Vec<Vec<u8>> = Vec::new();
    for b in branches {
        for l in ends(b) {
            if l.is_empty() {
                return vec![Vec::new()];
            }
            if !set.contains(&l) {
                set.push(l);
            }
        }
        if set.len() > MAX_SET {
            return vec![Vec::new()];
        }
    }
    set
}

/// Literals one of which occurs in every match of `h`, or `None`.
fn required(h: &Hir) -> Option<Vec<Vec<u8>>> {
    required_with(h, 0)
}

/// [`required`]; concatenations whose runs of exact parts give no literals
/// scoring `edges` (0: never) are also joined across their other parts (see
/// [`concat_required`]): longer literals, but more of them.
fn required_with(h: &Hir, edges: usize) -> Option<Vec<Vec<u8>>> {
    if let Some(set) = exact(h) {
        return (!set.iter().any(Vec::is_empty)).then_some(set);
    }
    match h.kind() {
        HirKind::Capture(c) => required_with(&c.sub, edges),
        HirKind::Repetition(r) if r.min >= 1 => {
            // `x{n,}` contains `x` n times in a row: use that when exact and small.
            if let Some(sub) = exact(&r.sub) {
                let mut acc = vec![Vec::new()];
                for _ in 0..r.min.min(8) {
                    match cross(&acc, &sub) {
                        Some(next) => acc = next,
                        None => break,
                    }
                }
                if !acc.iter().any(Vec::is_empty) {
                    return Some(acc);
                }
            }
            required_with(&r.sub, edges)
        }
        HirKind::Alternation(branches) => {
            let mut set: Vec<Vec<u8>> = Vec::new();
            for b in branches {
                for lit in required_with(b, edges)? {
                    if !set.contains(&lit) {
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
            // Literals within runs of exact parts; with `edges`, when those are
            // not selective, the runs joined across the other parts too.
            let known: Vec<Known> = parts
                .iter()
                .map(|p| match exact(p) {
                    Some(e) => Known::Exact(e),
                    None => Known::Required(required_with(p, edges)),
                })
                .collect();
            let within = concat_required(parts, &known, false);
            if edges == 0 || within.as_ref().is_some_and(|s| score(s) >= edges) {
                return within;
            }
            match concat_required(parts, &known, true) {
                Some(across) if within.as_ref().is_none_or(|w| score(&across) > score(w)) => {
                    Some(across)
                }
                _ => within,
            }
        }
        _ => None,
    }
}

/// The literals where a run (strings one of which ends right before a part)
/// meets the part (`start`: strings one of which its match begins with): each
/// run string joined to each start string. While the product is larger than
/// [`MAX_EDGE`], the longer side is cut: run strings to their last bytes, start
/// strings to their first (the joined strings stay adjacent in the match).
fn edge(mut run: Vec<Vec<u8>>, mut start: Vec<Vec<u8>>) -> Option<Vec<Vec<u8>>> {
    let longest = |set: &[Vec<u8>]| set.iter().map(Vec::len).max().unwrap_or(0);
    // A run string of the longest length may have been cut to its first bytes
    // (see `cross`): it would not end right before the part.
    if longest(&run) >= MAX_LEN {
        return None;
    }
    while run.len().saturating_mul(start.len()) > MAX_EDGE {
        let (r, s) = (longest(&run), longest(&start));
        if r.max(s) <= 1 {
            return None;
        }
        if r >= s {
            run = dedup(
                run.into_iter()
                    .map(|l| l[l.len().saturating_sub(r - 1)..].to_vec()),
            );
        } else {
            start = dedup(start.into_iter().map(|mut l| {
                l.truncate(s - 1);
                l
            }));
        }
    }
    cross_within(&run, &start, MAX_EDGE)
}

/// The distinct strings of `set`, in order.
fn dedup(set: impl Iterator<Item = Vec<u8>>) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for l in set {
        if !out.contains(&l) {
            out.push(l);
        }
    }
    out
}

/// What is known of one part of a concatenation.
enum Known {
    /// The strings it matches ([`exact`]).
    Exact(Vec<Vec<u8>>),
    /// Not exact: its required literals ([`required`]).
    Required(Option<Vec<Vec<u8>>>),
}

/// The required literals of a concatenation of `parts` (with what is `known` of
/// each): the best of the runs of consecutive exact parts and of the other parts'
/// own required literals. With `edges`, a part that is not exact also ends a run
/// joined to the strings its matches begin with, and starts the next run from
/// the strings they end with.
fn concat_required(parts: &[Hir], known: &[Known], edges: bool) -> Option<Vec<Vec<u8>>> {
    let mut best: Option<Vec<Vec<u8>>> = None;
    let mut consider = |cand: Vec<Vec<u8>>| {
        if cand.is_empty() || cand.iter().any(Vec::is_empty) {
            return;
        }
        let better = match &best {
            None => true,
            Some(b) => {
                (score(&cand), std::cmp::Reverse(cand.len()))
                    > (score(b), std::cmp::Reverse(b.len()))
            }
        };
        if better {
            best = Some(cand);
        }
    };
    // Runs of consecutive exact parts form longer literals (their cross
    // product); a run that would grow too large starts again. A part that
    // is not exact ends a run, which is then joined to the strings the
    // part's matches begin with, and starts the next from the strings
    // they end with.
    let mut run: Vec<Vec<u8>> = vec![Vec::new()];
    for (p, k) in parts.iter().zip(known) {
        match k {
            Known::Exact(e) => match cross(&run, e) {
                Some(next) => run = next,
                None => {
                    consider(std::mem::replace(&mut run, e.clone()));
                }
            },
            Known::Required(r) => {
                let next = if edges {
                    if let Some(edge) = edge(run.clone(), prefixes(p)) {
                        consider(edge);
                    }
                    suffixes(p)
                } else {
                    vec![Vec::new()]
                };
                consider(std::mem::replace(&mut run, next));
                if let Some(set) = r {
                    consider(set.clone());
                }
            }
        }
    }
    consider(run);
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_match_bounds_every_match() {
        assert_eq!(regex_min_len("abc|de"), 2);
        assert_eq!(regex_min_len("(?i)x{3}(?:y|$)"), 3);
        assert_eq!(regex_min_len("^(?:a)?$"), 0);
        assert_eq!(regex_min_len("\\beval\\("), 5);
        // Not parsed (look-around): unknown.
        assert_eq!(regex_min_len("(?=abc)abc"), 0);
    }

    fn lits(p: &str) -> Option<Vec<String>> {
        regex_literals(p).map(|v| {
            v.into_iter()
                .map(|l| String::from_utf8_lossy(&l).into_owned())
                .collect()
        })
    }

    #[test]
    fn extracts_necessary_literals() {
        // Patterns as the operator compiles them: bytes, no Unicode classes.
        assert_eq!(lits("(?i-u)union\\s+select"), Some(vec!["select".into()]));
        // In Unicode mode `(?i)s` also matches the long s (two bytes): no guess.
        assert_eq!(lits("(?i)union\\s+select"), Some(vec!["union".into()]));
        // Fixed repetitions and small classes form literals.
        assert_eq!(lits("(?-u)[/\\\\]\\.{2,3}[/\\\\]"), Some(vec!["..".into()]));
        assert_eq!(
            lits("(?i-u)on(?:load|error)\\s*="),
            Some(vec!["onload".into(), "onerror".into()])
        );
        assert_eq!(lits("(?-u)\\bexec\\b"), Some(vec!["exec".into()]));
        // Single common bytes are not worth a literal; rare ones are.
        assert_eq!(lits("(?-u)a[0-9]+"), None);
        assert_eq!(lits("(?-u)x*<"), Some(vec!["<".into()]));
        assert_eq!(lits("foo|bar"), Some(vec!["foo".into(), "bar".into()]));
        assert_eq!(lits("a+"), None);
        assert_eq!(lits("(?:abc)?def"), Some(vec!["def".into()]));
        assert_eq!(lits("x*|yy"), None);
        assert_eq!(lits("(?i-u)<script"), Some(vec!["<script".into()]));
        assert_eq!(lits(".*"), None);
    }

    fn required_of(p: &str) -> Option<(Vec<String>, String)> {
        regex_required(p).map(|r| {
            let lits = r
                .literals
                .into_iter()
                .map(|l| String::from_utf8_lossy(&l).into_owned())
                .collect();
            let escape = r.escape.map_or(String::new(), |m| {
                (0..=255u8)
                    .filter(|&b| m[usize::from(b >> 6)] & (1 << (b & 63)) != 0)
                    .map(char::from)
                    .collect()
            });
            (lits, escape)
        })
    }

    #[test]
    fn literals_of_matches_without_rare_bytes_escape_on_those_bytes() {
        // Quotes and backslashes may split the word: no literal every match needs.
        let evasive = "(?i-u)c[\"'\\\\]*a[\"'\\\\]*t\\b";
        assert_eq!(regex_literals(evasive), None);
        assert_eq!(
            required_of(evasive),
            Some((vec!["cat".into()], "\"'\\".into()))
        );
        // A pattern with usable literals keeps them, without escape bytes.
        assert_eq!(
            required_of("(?i-u)union\\s+select"),
            Some((vec!["select".into()], String::new()))
        );
        // Every match holds a rare byte (a class too large for literals): escape
        // bytes alone.
        assert_eq!(
            required_of("(?-u)[a-z]+[<>'\"();`|{}]"),
            Some((vec![], "\"'();<>`{|}".into()))
        );
        // Separators count once the rare bytes escape; `;` need not escape:
        // a match without a quote holds `id` whatever its separator.
        assert_eq!(
            required_of("(?-u)(?:[;=]|&&)\\s*i[\"']*d"),
            Some((vec!["id".into()], "\"'".into()))
        );
        // A rare byte that only follows another (`$(`, as CRS's command
        // patterns have it) need not escape either.
        assert_eq!(
            required_of("(?i-u)c(?:\\$[(a-z]*)?a(?:\\$[(a-z]*)?t"),
            Some((vec!["cat".into()], "$".into()))
        );
        // Nor one whose matches hold a literal as selective: the `(` of
        // `[a-z]+\(` is the literal then.
        assert_eq!(
            required_of("(?i-u)(?:e[\"']*v[\"']*a[\"']*l|[a-z]+\\()"),
            Some((vec!["eval".into(), "(".into()], "\"'".into()))
        );
        // No rare byte to escape on, and no literal: nothing.
        assert_eq!(required_of("(?-u)a[!-~]+"), None);
        assert_eq!(required_of("(?-u)[a-z]+[\"']*"), None);
    }

    #[test]
    fn literals_join_across_parts_that_are_not_exact_when_nothing_else_serves() {
        // A separator, two or three dot-like pieces (optional parts: not exact),
        // a separator: no literal within a run of exact parts is selective, and
        // the pattern has no rare byte to escape on. Every match holds a
        // separator's end followed by a piece's start.
        let p = "(?i-u)(?:[/]|%c0(?:%af)?%2f)(?:\\.(?:%00)?|%2e){2,3}(?:[/]|%2f)";
        assert_eq!(regex_literals(p), None);
        let (lits, escape) = required_of(p).unwrap_or_else(|| panic!("literals"));
        assert_eq!(escape, "");
        let mut lits = lits;
        lits.sort();
        assert_eq!(lits, ["%2f%2e", "%2f.", "/%2e", "/."]);
        // A class of up to 32 bytes beside a run is joined to it: a lone `a`
        // is no literal, `a` and a digit is.
        let (mut lits, _) = required_of("(?-u)a[0-9]+").unwrap_or_else(|| panic!("literals"));
        lits.sort();
        assert_eq!(lits, (0..10).map(|d| format!("a{d}")).collect::<Vec<_>>());
        // Two-byte literals (common in benign text) give way to longer ones
        // joined across a class: CRS 941120's `on` follows one of 24 bytes.
        let (lits, _) = required_of("(?i-u)[\\t-\\r \"'(,/-9;=`]on[a-z]{3,50}[\\t-\\r (,;]*?=[^=]")
            .unwrap_or_else(|| panic!("literals"));
        assert_eq!(lits.len(), 24);
        assert!(
            lits.iter().all(|l| l.len() == 3 && l.ends_with("on")),
            "{lits:?}"
        );
        // Where a run gives selective literals, they are kept as before.
        assert_eq!(
            required_of("(?i-u)union(?:all)?\\s+select"),
            Some((vec!["select".into()], String::new()))
        );
        // Strings a match begins or ends with are never cut where a cut one
        // would not be adjacent to the next part.
        let ends = |p: &str, f: fn(&Hir) -> Vec<Vec<u8>>| -> Vec<String> {
            let h = regex_syntax::ParserBuilder::new()
                .utf8(false)
                .build()
                .parse(p)
                .unwrap_or_else(|e| panic!("{e}"));
            f(&h)
                .iter()
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect()
        };
        assert_eq!(ends("(?-u)ab(?:c)?d+", prefixes), ["ab"]);
        assert_eq!(ends("(?-u)a?(?:bc|de)", suffixes), ["bc", "de"]);
        assert_eq!(ends("(?-u)x*", prefixes), [""]);
        assert_eq!(ends("(?-u)(?:x|y?)z", prefixes), [""]);
        assert_eq!(ends(&format!("(?-u)q?{}", "k".repeat(30)), suffixes), [""]);
        // Joined at an edge; a side cut to fit; a run string that may have been
        // cut to its first bytes (as long as `MAX_LEN`) is never joined.
        let v = |l: &[&str]| l.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        let text = |set: Option<Vec<Vec<u8>>>| {
            set.map(|s| {
                s.iter()
                    .map(|l| String::from_utf8_lossy(l).into_owned())
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(
            text(edge(v(&["/", "%2f"]), v(&[".", "%2e"]))),
            Some(vec![
                "/.".into(),
                "/%2e".into(),
                "%2f.".into(),
                "%2f%2e".into()
            ])
        );
        let many: Vec<String> = (0..300).map(|i| format!("x{i:03}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let cut = edge(v(&refs), v(&["."])).unwrap_or_else(|| panic!("cut to fit"));
        assert!(cut.len() <= MAX_EDGE && cut.iter().all(|l| l.ends_with(b".")));
        assert_eq!(edge(v(&["/", "abcdefghijklmnopqrstuvwx"]), v(&["."])), None);
    }

    #[test]
    fn restricted_patterns_match_exactly_the_strings_without_the_bytes() {
        let gone = b"\"'";
        let parse = |p: &str| {
            regex_syntax::ParserBuilder::new()
                .utf8(false)
                .build()
                .parse(p)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let h = parse("(?i-u)(?:c[\"']*a|\"x|'+)t?");
        let r = restrict(&h, gone).unwrap_or_else(|| panic!("possible"));
        let full =
            regex::bytes::Regex::new(&format!("^(?:{h})$")).unwrap_or_else(|e| panic!("{e}"));
        let cut = regex::bytes::Regex::new(&format!("^(?:{r})$")).unwrap_or_else(|e| panic!("{e}"));
        for s in [
            &b"ca"[..],
            b"CAT",
            b"c\"a",
            b"\"x",
            b"'t",
            b"c't",
            b"",
            b"x",
        ] {
            let free = !s.iter().any(|b| gone.contains(b));
            assert_eq!(cut.is_match(s), free && full.is_match(s), "{s:?}");
        }
        assert!(restrict(&parse("(?-u)[\"']+"), gone).is_none());
    }
}
