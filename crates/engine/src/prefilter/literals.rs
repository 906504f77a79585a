//! Required literals of a regular expression, derived from its syntax tree
//! (`regex-syntax`, parsed with the same flags the operator compiles with): a literal
//! must occur in every match; a concatenation requires what any one of its parts
//! requires (the part with the longest shortest literal is chosen); an alternation
//! requires one of its branches' literals; a repetition with a minimum of one
//! requires its body's; anything else requires nothing.

use regex_syntax::hir::{Class, Hir, HirKind};

/// Most literals one operator may contribute (a larger set is treated as "none").
const MAX_SET: usize = 64;
/// Longest literal kept in a cross product (longer ones are cut: a prefix of a
/// required literal is required too).
const MAX_LEN: usize = 24;
/// Largest byte class expanded into single-byte alternatives.
const MAX_CLASS: usize = 8;

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

/// How selective a literal is likely to be on benign traffic: its length, except
/// that single bytes rarely seen in benign values (`<`, quotes, parentheses, ...)
/// count as two and other single bytes as none.
fn literal_score(l: &[u8]) -> usize {
    match l {
        [] => 0,
        [b] if b"<>'\"();`|{}\\$!^~[]*@".contains(b) => 2,
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
                if usize::from(r.end() - r.start()) >= 2 * MAX_CLASS {
                    return None;
                }
                for b in r.start()..=r.end() {
                    add(b, &mut v);
                }
            }
        }
        Class::Unicode(c) => {
            for r in c.ranges() {
                if u32::from(r.end()) - u32::from(r.start()) >= 2 * MAX_CLASS as u32 {
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
    (!v.is_empty() && v.len() <= MAX_CLASS).then_some(v)
}

/// `a x b`: every concatenation, when the product stays small (literals longer
/// than [`MAX_LEN`] are cut to their prefix, which is still required).
fn cross(a: &[Vec<u8>], b: &[Vec<u8>]) -> Option<Vec<Vec<u8>>> {
    if a.len().saturating_mul(b.len()) > MAX_SET {
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

/// Literals one of which occurs in every match of `h`, or `None`.
fn required(h: &Hir) -> Option<Vec<Vec<u8>>> {
    if let Some(set) = exact(h) {
        return (!set.iter().any(Vec::is_empty)).then_some(set);
    }
    match h.kind() {
        HirKind::Capture(c) => required(&c.sub),
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
            required(&r.sub)
        }
        HirKind::Alternation(branches) => {
            let mut set: Vec<Vec<u8>> = Vec::new();
            for b in branches {
                for lit in required(b)? {
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
            // product); a run that would grow too large starts again.
            let mut run: Vec<Vec<u8>> = vec![Vec::new()];
            for p in parts {
                match exact(p) {
                    Some(e) => match cross(&run, &e) {
                        Some(next) => run = next,
                        None => {
                            consider(std::mem::replace(&mut run, e));
                        }
                    },
                    None => {
                        consider(std::mem::replace(&mut run, vec![Vec::new()]));
                        if let Some(set) = required(p) {
                            consider(set);
                        }
                    }
                }
            }
            consider(run);
            best
        }
        _ => None,
    }
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
}
