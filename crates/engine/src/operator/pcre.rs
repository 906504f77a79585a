//! Translation of PCRE patterns, as ModSecurity v3 compiles them, into the syntax of the
//! Rust regex engines.
//!
//! ModSecurity compiles every `@rx` pattern with `PCRE_DOTALL | PCRE_MULTILINE` and
//! without UTF mode: the subject and the pattern are bytes, `.` matches any byte
//! (newlines included), `^`/`$` match at line boundaries, `\w`, `\d`, `\s` and
//! `(?i)` are ASCII-only, and a non-ASCII character written in the pattern is the
//! sequence of its UTF-8 bytes (so `é+` repeats only the last byte, and `[é]` is a
//! class of two bytes). The translator makes the Rust engines see exactly that:
//!
//! - [`Dialect::Bytes`] targets `regex::bytes` with Unicode off: every non-ASCII
//!   pattern byte becomes `\xHH` (a byte), PCRE-only escapes (`\h`, `\v`, `\e`, octal,
//!   `\Q..\E`, ...) become explicit byte classes, and constructs that are literal in
//!   PCRE but special in Rust (`\<`, a `{` that is not a quantifier, `[` inside a
//!   class, ...) are escaped. Look-around, back-references, atomic groups and
//!   possessive quantifiers cannot be expressed: they make the translation fail with
//!   [`Translation::NeedsBacktracking`].
//! - [`Dialect::Latin1`] targets `fancy-regex`, which only searches `&str`: the
//!   subject is mapped byte-for-char (byte `b` becomes `U+00bb`), so every pattern
//!   byte becomes `\x{HH}` and the ASCII-only classes are spelled out (Unicode is on
//!   in that engine). Back-tracking constructs are passed through.
//!
//! One difference between the engines cannot be expressed in the linear engine's
//! syntax: PCRE's multiline `^` does not match at the very end of a subject that
//! ends with a newline. [`caret_variant`] gives a second pattern that decides matches
//! at that one position (the Latin-1 translation spells `^` out with a look-ahead).

use std::fmt::Write as _;

/// Which engine the translated pattern is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// `regex::bytes::Regex` with Unicode disabled.
    Bytes,
    /// `fancy_regex::Regex` over a subject mapped byte-for-char.
    Latin1,
}

/// Result of a translation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Translation {
    /// The pattern in the target syntax (flags prefix included).
    Pattern(String),
    /// The pattern uses a construct that only a backtracking engine has (the name of
    /// the construct is given).
    NeedsBacktracking(&'static str),
    /// The pattern is not valid PCRE (or uses a PCRE feature no engine here has).
    Invalid(String),
}

/// Translates a PCRE pattern (compiled by ModSecurity with DOTALL and MULTILINE, no
/// UTF) for `dialect`.
pub(crate) fn translate(pattern: &str, dialect: Dialect) -> Translation {
    translate_with(pattern, dialect, false).0
}

/// For [`Dialect::Bytes`]: the pattern with every `^` written as `\A`, when the
/// pattern has a `^` at all (else `None`).
///
/// PCRE's multiline `^` does not match at the very end of a subject that ends with a
/// newline, while the `regex` crate's does. A match that the linear engine reports
/// at the end of such a subject is therefore checked again with this variant, in
/// which `^` cannot match there (nor anywhere but the start), exactly as in PCRE at
/// that position.
pub(crate) fn caret_variant(pattern: &str) -> Option<String> {
    match translate_with(pattern, Dialect::Bytes, true) {
        (Translation::Pattern(p), true) => Some(p),
        _ => None,
    }
}

fn translate_with(pattern: &str, dialect: Dialect, caret_start: bool) -> (Translation, bool) {
    let mut t = Translator {
        src: pattern.as_bytes(),
        pos: 0,
        out: String::with_capacity(pattern.len() + 16),
        dialect,
        extended: false,
        caret_start,
        saw_caret: false,
    };
    t.out.push_str(match dialect {
        Dialect::Bytes => "(?s-u)(?m)",
        Dialect::Latin1 => "(?s)(?m)",
    });
    let result = match t.run() {
        Ok(()) => Translation::Pattern(t.out),
        Err(Stop::Backtracking(what)) => Translation::NeedsBacktracking(what),
        Err(Stop::Invalid(msg)) => Translation::Invalid(msg),
    };
    (result, t.saw_caret)
}

enum Stop {
    Backtracking(&'static str),
    Invalid(String),
}

/// One member of a character class.
enum ClassItem {
    Byte(u8),
    /// A set already spelled for the target (e.g. `\d`, `[:word:]`, `\x0A\x0B`).
    Set(String),
}

struct Translator<'a> {
    src: &'a [u8],
    pos: usize,
    out: String,
    dialect: Dialect,
    extended: bool,
    /// Write `^` as `\A` (see [`caret_variant`]).
    caret_start: bool,
    saw_caret: bool,
}

fn invalid<T>(msg: impl Into<String>) -> Result<T, Stop> {
    Err(Stop::Invalid(msg.into()))
}

fn is_octal(b: u8) -> bool {
    (b'0'..=b'7').contains(&b)
}

impl Translator<'_> {
    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn peek_at(&self, off: usize) -> Option<u8> {
        self.src.get(self.pos + off).copied()
    }

    fn backtracking<T>(&self, what: &'static str) -> Result<T, Stop> {
        Err(Stop::Backtracking(what))
    }

    /// Writes one byte as a literal of the target.
    fn push_byte(&mut self, b: u8) {
        match self.dialect {
            Dialect::Bytes => {
                if b.is_ascii_alphanumeric() || b == b'_' {
                    self.out.push(char::from(b));
                } else {
                    let _ = write!(self.out, "\\x{b:02X}");
                }
            }
            Dialect::Latin1 => {
                if b.is_ascii_alphanumeric() || b == b'_' {
                    self.out.push(char::from(b));
                } else if b < 0x80 {
                    let _ = write!(self.out, "\\x{{{b:02X}}}");
                } else {
                    // PCRE's case folding (C locale) never folds non-ASCII bytes.
                    let _ = write!(self.out, "(?-i:\\x{{{b:02X}}})");
                }
            }
        }
    }

    /// Writes a set (outside a class) given as class members.
    fn push_set(&mut self, members: &str, negated: bool) {
        let _ = write!(self.out, "[{}{members}]", if negated { "^" } else { "" });
    }

    fn run(&mut self) -> Result<(), Stop> {
        while let Some(b) = self.peek() {
            match b {
                b'\\' => self.escape_outside()?,
                b'[' => {
                    self.pos += 1;
                    self.class()?;
                }
                b'(' => self.group()?,
                b'^' => {
                    self.saw_caret = true;
                    self.pos += 1;
                    self.out.push_str(match (self.dialect, self.caret_start) {
                        (Dialect::Bytes, false) => "^",
                        (Dialect::Bytes, true) => "\\A",
                        // PCRE's `^` never matches at the very end of the subject
                        // (after a final newline), unless the subject is empty.
                        (Dialect::Latin1, _) => "(?:^(?!\\z)|\\A)",
                    });
                }
                b')' | b'|' | b'$' | b'.' => {
                    self.out.push(char::from(b));
                    self.pos += 1;
                }
                b'*' | b'+' | b'?' => {
                    self.out.push(char::from(b));
                    self.pos += 1;
                    self.quantifier_suffix()?;
                }
                b'{' => {
                    if let Some(len) = self.quantifier_len() {
                        let q = &self.src[self.pos..self.pos + len];
                        // Only ASCII digits, ',' and braces: valid UTF-8.
                        self.out.push_str(&String::from_utf8_lossy(q));
                        self.pos += len;
                        self.quantifier_suffix()?;
                    } else {
                        self.push_byte(b'{');
                        self.pos += 1;
                    }
                }
                b' ' | b'\t' | b'\n' | b'\r' | b'\x0B' | b'\x0C' if self.extended => {
                    self.pos += 1;
                }
                b'#' if self.extended => {
                    while let Some(c) = self.peek() {
                        self.pos += 1;
                        if c == b'\n' {
                            break;
                        }
                    }
                }
                _ => {
                    self.push_byte(b);
                    self.pos += 1;
                }
            }
        }
        Ok(())
    }

    /// After a quantifier: `?` (lazy) is kept, `+` (possessive) needs backtracking.
    fn quantifier_suffix(&mut self) -> Result<(), Stop> {
        match self.peek() {
            Some(b'?') => {
                self.out.push('?');
                self.pos += 1;
            }
            Some(b'+') => {
                if self.dialect == Dialect::Bytes {
                    return self.backtracking("possessive quantifier");
                }
                self.out.push('+');
                self.pos += 1;
            }
            _ => {}
        }
        Ok(())
    }

    /// Length of a `{n}`, `{n,}` or `{n,m}` quantifier at the cursor (PCRE treats any
    /// other `{` as a literal).
    fn quantifier_len(&self) -> Option<usize> {
        let rest = &self.src[self.pos..];
        let mut i = 1;
        let digits = |i: &mut usize| {
            let start = *i;
            while rest.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i > start
        };
        if !digits(&mut i) {
            return None;
        }
        if rest.get(i) == Some(&b',') {
            i += 1;
            digits(&mut i);
        }
        (rest.get(i) == Some(&b'}')).then_some(i + 1)
    }

    fn group(&mut self) -> Result<(), Stop> {
        // At '('.
        if self.peek_at(1) == Some(b'*') {
            return invalid("PCRE verbs such as (*UTF) are not supported");
        }
        if self.peek_at(1) != Some(b'?') {
            self.out.push('(');
            self.pos += 1;
            return Ok(());
        }
        let rest = &self.src[self.pos + 2..];
        let first = rest.first().copied();
        match first {
            Some(b':') => {
                self.out.push_str("(?:");
                self.pos += 3;
            }
            Some(b'#') => {
                // Comment up to the next ')'.
                match rest.iter().position(|&c| c == b')') {
                    Some(end) => self.pos += 2 + end + 1,
                    None => return invalid("unterminated (?# comment"),
                }
            }
            Some(b'=') | Some(b'!') => {
                if self.dialect == Dialect::Bytes {
                    return self.backtracking("look-ahead");
                }
                self.out.push_str("(?");
                self.out.push(char::from(rest[0]));
                self.pos += 3;
            }
            Some(b'<') if matches!(rest.get(1), Some(b'=') | Some(b'!')) => {
                if self.dialect == Dialect::Bytes {
                    return self.backtracking("look-behind");
                }
                self.out.push_str("(?<");
                self.out.push(char::from(rest[1]));
                self.pos += 4;
            }
            Some(b'>') => {
                if self.dialect == Dialect::Bytes {
                    return self.backtracking("atomic group");
                }
                self.out.push_str("(?>");
                self.pos += 3;
            }
            Some(b'P') if rest.get(1) == Some(&b'<') => {
                let name_end = self.name_end(self.pos + 4, b'>')?;
                self.push_named_group(self.pos + 4, name_end);
                self.pos = name_end + 1;
            }
            Some(b'<') => {
                let name_end = self.name_end(self.pos + 3, b'>')?;
                self.push_named_group(self.pos + 3, name_end);
                self.pos = name_end + 1;
            }
            Some(b'\'') => {
                let name_end = self.name_end(self.pos + 3, b'\'')?;
                self.push_named_group(self.pos + 3, name_end);
                self.pos = name_end + 1;
            }
            Some(b'P') => {
                return if self.dialect == Dialect::Bytes {
                    self.backtracking("named back-reference or recursion")
                } else {
                    invalid("(?P=name) / (?P>name) are not supported")
                }
            }
            Some(b'|') => return invalid("branch reset groups (?| are not supported"),
            Some(c) if c == b'-' || c.is_ascii_alphabetic() => self.flag_group()?,
            _ => {
                return if self.dialect == Dialect::Bytes {
                    self.backtracking("recursion, subroutine call or conditional group")
                } else {
                    invalid("recursion, subroutine calls and conditional groups are not supported")
                }
            }
        }
        Ok(())
    }

    /// Finds the end of a group name starting at `start`, terminated by `term`.
    fn name_end(&self, start: usize, term: u8) -> Result<usize, Stop> {
        let mut i = start;
        while let Some(&c) = self.src.get(i) {
            if c == term {
                return if i > start {
                    Ok(i)
                } else {
                    invalid("empty group name")
                };
            }
            if !(c.is_ascii_alphanumeric() || c == b'_') {
                return invalid("invalid character in group name");
            }
            i += 1;
        }
        invalid("unterminated group name")
    }

    fn push_named_group(&mut self, start: usize, end: usize) {
        self.out.push_str("(?P<");
        self.out
            .push_str(&String::from_utf8_lossy(&self.src[start..end]));
        self.out.push('>');
    }

    /// `(?imsxU-imsxU)` or `(?imsxU-imsxU:...)`.
    fn flag_group(&mut self) -> Result<(), Stop> {
        let mut i = self.pos + 2;
        let mut flags = String::new();
        let mut negative = false;
        loop {
            let Some(&c) = self.src.get(i) else {
                return invalid("unterminated flag group");
            };
            match c {
                b'i' | b'm' | b's' | b'U' => flags.push(char::from(c)),
                b'x' => {
                    if !negative {
                        self.extended = true;
                    }
                    flags.push('x');
                }
                // Duplicate names: irrelevant here.
                b'J' => {}
                b'-' if !negative => {
                    negative = true;
                    flags.push('-');
                }
                b')' | b':' => {
                    let trimmed = flags.trim_end_matches('-');
                    if trimmed.is_empty() {
                        self.out.push_str(if c == b')' { "" } else { "(?:" });
                    } else {
                        self.out.push_str("(?");
                        self.out.push_str(trimmed);
                        self.out.push(char::from(c));
                    }
                    self.pos = i + 1;
                    return Ok(());
                }
                _ => return invalid(format!("unknown flag `{}` in group", char::from(c))),
            }
            i += 1;
        }
    }

    /// A `\` outside a class.
    fn escape_outside(&mut self) -> Result<(), Stop> {
        let Some(c) = self.peek_at(1) else {
            return invalid("pattern ends with a backslash");
        };
        self.pos += 2;
        let latin1 = self.dialect == Dialect::Latin1;
        match c {
            b'd' | b'D' | b'w' | b'W' | b's' | b'S' => {
                if latin1 {
                    let (set, neg) = ascii_set(c);
                    self.push_set(set, neg);
                } else {
                    self.out.push('\\');
                    self.out.push(char::from(c));
                }
            }
            b'b' | b'B' => {
                if latin1 {
                    // fancy-regex has no `(?-u:`: spell the ASCII word boundary out.
                    const W: &str = "[0-9A-Za-z_]";
                    if c == b'b' {
                        let _ = write!(self.out, "(?:(?<={W})(?!{W})|(?<!{W})(?={W}))");
                    } else {
                        let _ = write!(self.out, "(?:(?<={W})(?={W})|(?<!{W})(?!{W}))");
                    }
                } else {
                    self.out.push('\\');
                    self.out.push(char::from(c));
                }
            }
            b'A' | b'z' => {
                self.out.push('\\');
                self.out.push(char::from(c));
            }
            b'Z' => {
                if latin1 {
                    self.out.push_str("(?=\\n?\\z)");
                } else {
                    return self.backtracking("\\Z (end or before a final newline)");
                }
            }
            b'G' | b'K' => {
                return if latin1 {
                    invalid(format!("\\{} is not supported", char::from(c)))
                } else {
                    self.backtracking("\\G or \\K")
                }
            }
            b'h' | b'H' | b'v' | b'V' => {
                let set = if c.eq_ignore_ascii_case(&b'h') {
                    &[0x09, 0x20, 0xA0][..]
                } else {
                    &[0x0A, 0x0B, 0x0C, 0x0D, 0x85][..]
                };
                let mut members = String::new();
                for &b in set {
                    self.class_byte(&mut members, b);
                }
                self.push_set(&members, c.is_ascii_uppercase());
            }
            b'N' => self.push_set("\\x0A", true),
            b'R' => {
                let (a, b) = match self.dialect {
                    Dialect::Bytes => ("\\x0D\\x0A", "[\\x0A-\\x0D\\x85]"),
                    Dialect::Latin1 => ("\\x{0D}\\x{0A}", "[\\x{0A}-\\x{0D}\\x{85}]"),
                };
                let _ = write!(self.out, "(?:{a}|{b})");
            }
            b'C' => self.push_set("\\x00-\\xFF", false),
            b'X' => return invalid("\\X (extended grapheme cluster) is not supported"),
            b'p' | b'P' => {
                if latin1 {
                    // Unicode properties of code points below 256: what PCRE (no UTF)
                    // gives for bytes.
                    self.out.push('\\');
                    self.out.push(char::from(c));
                } else {
                    return self.backtracking("Unicode property \\p");
                }
            }
            b'Q' => {
                let rest = &self.src[self.pos..];
                let end = find_subslice(rest, b"\\E").unwrap_or(rest.len());
                let lit = rest[..end].to_vec();
                self.pos += (end + 2).min(rest.len());
                for b in lit {
                    self.push_byte(b);
                }
            }
            b'E' => {}
            b'1'..=b'9' => {
                // PCRE: a back-reference when below 10 or not above the number of
                // groups, otherwise an octal escape (up to three octal digits), and
                // `\8`/`\9` alone are the literal digits.
                let start = self.pos - 1;
                let mut end = start;
                let mut n: u32 = 0;
                while let Some(d) = self.src.get(end).filter(|d| d.is_ascii_digit()) {
                    n = n.saturating_mul(10).saturating_add(u32::from(d - b'0'));
                    end += 1;
                }
                if n < 10 || n <= count_groups(self.src) {
                    if !latin1 {
                        return self.backtracking("back-reference");
                    }
                    self.out.push('\\');
                    self.out
                        .push_str(&String::from_utf8_lossy(&self.src[start..end]));
                    self.pos = end;
                    return Ok(());
                }
                if !is_octal(c) {
                    self.push_byte(c);
                    return Ok(());
                }
                let mut v: u32 = 0;
                self.pos = start;
                for _ in 0..3 {
                    match self.peek() {
                        Some(d) if is_octal(d) => {
                            v = v * 8 + u32::from(d - b'0');
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                let b = byte_value(v)?;
                self.push_byte(b);
            }
            b'g' | b'k' => {
                return if latin1 {
                    self.pos -= 2;
                    self.backref_named()
                } else {
                    self.backtracking("back-reference")
                }
            }
            _ => {
                self.pos -= 2;
                let b = self.escaped_byte()?;
                self.push_byte(b);
            }
        }
        Ok(())
    }

    /// `\g{n}`, `\gN`, `\k<name>`, `\k{name}`, `\k'name'` for fancy-regex.
    fn backref_named(&mut self) -> Result<(), Stop> {
        // At '\'.
        let kind = self.src[self.pos + 1];
        self.pos += 2;
        let (open, close) = match self.peek() {
            Some(b'{') => (b'{', b'}'),
            Some(b'<') => (b'<', b'>'),
            Some(b'\'') => (b'\'', b'\''),
            Some(d) if kind == b'g' && (d.is_ascii_digit() || d == b'-') => {
                return invalid("\\gN back-references are not supported; use \\N");
            }
            _ => return invalid("malformed back-reference"),
        };
        let _ = open;
        let end = self.name_end(self.pos + 1, close)?;
        let name = String::from_utf8_lossy(&self.src[self.pos + 1..end]).into_owned();
        self.pos = end + 1;
        if name.bytes().all(|b| b.is_ascii_digit()) {
            let _ = write!(self.out, "\\{name}");
        } else {
            let _ = write!(self.out, "\\k<{name}>");
        }
        Ok(())
    }

    /// Decodes an escape standing for one byte (cursor at the backslash); used inside
    /// and outside classes.
    fn escaped_byte(&mut self) -> Result<u8, Stop> {
        let Some(c) = self.peek_at(1) else {
            return invalid("pattern ends with a backslash");
        };
        self.pos += 2;
        let b = match c {
            b'a' => 0x07,
            b'e' => 0x1B,
            b'f' => 0x0C,
            b'n' => 0x0A,
            b'r' => 0x0D,
            b't' => 0x09,
            b'c' => {
                let Some(x) = self.peek().filter(u8::is_ascii) else {
                    return invalid("\\c must be followed by an ASCII character");
                };
                self.pos += 1;
                x.to_ascii_uppercase() ^ 0x40
            }
            b'x' => self.hex_escape()?,
            b'o' => {
                if self.peek() != Some(b'{') {
                    return invalid("\\o must be followed by {");
                }
                let start = self.pos + 1;
                let mut i = start;
                let mut v: u32 = 0;
                while let Some(&d) = self.src.get(i).filter(|d| is_octal(**d)) {
                    v = v.saturating_mul(8).saturating_add(u32::from(d - b'0'));
                    i += 1;
                }
                if i == start || self.src.get(i) != Some(&b'}') {
                    return invalid("malformed \\o{...} escape");
                }
                self.pos = i + 1;
                byte_value(v)?
            }
            b'0' => {
                // Up to two more octal digits.
                let mut v: u32 = 0;
                for _ in 0..2 {
                    match self.peek() {
                        Some(d) if is_octal(d) => {
                            v = v * 8 + u32::from(d - b'0');
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                byte_value(v)?
            }
            c if c.is_ascii_alphanumeric() => {
                return invalid(format!(
                    "unrecognized escape `\\{}` in regular expression",
                    char::from(c)
                ))
            }
            // Any other escaped byte (punctuation, space, non-ASCII) is a literal.
            c => c,
        };
        Ok(b)
    }

    /// `\xHH` (0-2 hex digits) or `\x{H...}`; the cursor is after `\x`.
    fn hex_escape(&mut self) -> Result<u8, Stop> {
        if self.peek() == Some(b'{') {
            let start = self.pos + 1;
            let mut i = start;
            let mut v: u32 = 0;
            while let Some(d) = self.src.get(i).and_then(|d| char::from(*d).to_digit(16)) {
                v = v.saturating_mul(16).saturating_add(d);
                i += 1;
            }
            if i == start || self.src.get(i) != Some(&b'}') {
                return invalid("malformed \\x{...} escape");
            }
            self.pos = i + 1;
            return byte_value(v);
        }
        let mut v: u32 = 0;
        for _ in 0..2 {
            match self.peek().and_then(|d| char::from(d).to_digit(16)) {
                Some(d) => {
                    v = v * 16 + d;
                    self.pos += 1;
                }
                None => break,
            }
        }
        byte_value(v)
    }

    /// Writes a byte as a class member.
    fn class_byte(&self, out: &mut String, b: u8) {
        match self.dialect {
            Dialect::Bytes => {
                let _ = write!(out, "\\x{b:02X}");
            }
            Dialect::Latin1 => {
                let _ = write!(out, "\\x{{{b:02X}}}");
            }
        }
    }

    /// A class; the cursor is after `[`.
    fn class(&mut self) -> Result<(), Stop> {
        let negated = self.peek() == Some(b'^');
        if negated {
            self.pos += 1;
        }
        let mut items: Vec<ClassItem> = Vec::new();
        let mut first = true;
        loop {
            let Some(b) = self.peek() else {
                return invalid("missing terminating ] for character class");
            };
            if b == b']' && !first {
                self.pos += 1;
                break;
            }
            first = false;
            let item = self.class_atom()?;
            let Some(item) = item else { continue };
            // A range?
            if let ClassItem::Byte(lo) = item {
                if self.peek() == Some(b'-') && self.peek_at(1).is_some_and(|c| c != b']') {
                    let save = self.pos;
                    self.pos += 1;
                    match self.class_atom()? {
                        Some(ClassItem::Byte(hi)) => {
                            if hi < lo {
                                return invalid("range out of order in character class");
                            }
                            items.push(ClassItem::Set(self.range(lo, hi)));
                            continue;
                        }
                        _ => {
                            // `[a-\d]`: the dash is a literal.
                            self.pos = save;
                        }
                    }
                }
            }
            items.push(item);
        }
        let mut body = String::new();
        for item in &items {
            match item {
                ClassItem::Byte(b) => self.class_byte(&mut body, *b),
                ClassItem::Set(s) => body.push_str(s),
            }
        }
        let non_ascii = items.iter().any(|i| match i {
            ClassItem::Byte(b) => *b >= 0x80,
            ClassItem::Set(_) => false,
        });
        if self.dialect == Dialect::Latin1 && non_ascii {
            let _ = write!(self.out, "(?-i:[{}{body}])", if negated { "^" } else { "" });
        } else {
            self.push_set(&body, negated);
        }
        Ok(())
    }

    fn range(&self, lo: u8, hi: u8) -> String {
        let mut s = String::new();
        self.class_byte(&mut s, lo);
        s.push('-');
        self.class_byte(&mut s, hi);
        s
    }

    /// One class member (None for `\E` and empty `\Q\E`).
    fn class_atom(&mut self) -> Result<Option<ClassItem>, Stop> {
        let Some(b) = self.peek() else {
            return invalid("missing terminating ] for character class");
        };
        if b == b'[' && self.peek_at(1) == Some(b':') {
            let rest = &self.src[self.pos + 2..];
            if let Some(end) = find_subslice(rest, b":]") {
                let name = &rest[..end];
                let (neg, bare) = match name.strip_prefix(b"^") {
                    Some(n) => (true, n),
                    None => (false, name),
                };
                const NAMES: &[&[u8]] = &[
                    b"alnum", b"alpha", b"ascii", b"blank", b"cntrl", b"digit", b"graph", b"lower",
                    b"print", b"punct", b"space", b"upper", b"word", b"xdigit",
                ];
                if !NAMES.contains(&bare) {
                    return invalid("unknown POSIX class name");
                }
                self.pos += 2 + end + 2;
                let set = format!(
                    "[:{}{}:]",
                    if neg { "^" } else { "" },
                    String::from_utf8_lossy(bare)
                );
                return Ok(Some(ClassItem::Set(set)));
            }
        }
        if b != b'\\' {
            self.pos += 1;
            return Ok(Some(ClassItem::Byte(b)));
        }
        let Some(c) = self.peek_at(1) else {
            return invalid("pattern ends with a backslash");
        };
        let set = |s: &str| Ok(Some(ClassItem::Set(s.to_string())));
        match c {
            b'd' | b'D' | b'w' | b'W' | b's' | b'S' => {
                self.pos += 2;
                let name = match c.to_ascii_lowercase() {
                    b'd' => "digit",
                    b'w' => "word",
                    _ => "space",
                };
                let neg = if c.is_ascii_uppercase() { "^" } else { "" };
                set(&format!("[:{neg}{name}:]"))
            }
            b'h' | b'v' => {
                self.pos += 2;
                let bytes: &[u8] = if c == b'h' {
                    &[0x09, 0x20, 0xA0]
                } else {
                    &[0x0A, 0x0B, 0x0C, 0x0D, 0x85]
                };
                let mut s = String::new();
                for &x in bytes {
                    self.class_byte(&mut s, x);
                }
                Ok(Some(ClassItem::Set(s)))
            }
            b'H' | b'V' => {
                self.pos += 2;
                let bytes: &[u8] = if c == b'H' {
                    &[0x09, 0x20, 0xA0]
                } else {
                    &[0x0A, 0x0B, 0x0C, 0x0D, 0x85]
                };
                let mut s = String::from("[^");
                for &x in bytes {
                    self.class_byte(&mut s, x);
                }
                s.push(']');
                Ok(Some(ClassItem::Set(s)))
            }
            b'b' => {
                self.pos += 2;
                Ok(Some(ClassItem::Byte(0x08)))
            }
            b'Q' => {
                self.pos += 2;
                let rest = &self.src[self.pos..];
                let end = find_subslice(rest, b"\\E").unwrap_or(rest.len());
                let lit = rest[..end].to_vec();
                self.pos += (end + 2).min(rest.len());
                let mut s = String::new();
                for b in lit {
                    self.class_byte(&mut s, b);
                }
                Ok((!s.is_empty()).then_some(ClassItem::Set(s)))
            }
            b'E' => {
                self.pos += 2;
                Ok(None)
            }
            b'p' | b'P' => {
                if self.dialect == Dialect::Bytes {
                    return self.backtracking("Unicode property \\p");
                }
                // \p{..} or \pL, passed through.
                let start = self.pos;
                self.pos += 2;
                if self.peek() == Some(b'{') {
                    while let Some(x) = self.peek() {
                        self.pos += 1;
                        if x == b'}' {
                            break;
                        }
                    }
                } else {
                    self.pos += 1;
                }
                let end = self.pos.min(self.src.len());
                set(&String::from_utf8_lossy(&self.src[start..end]))
            }
            b'1'..=b'7' => {
                // Octal in a class.
                self.pos += 1;
                let mut v: u32 = 0;
                for _ in 0..3 {
                    match self.peek() {
                        Some(d) if is_octal(d) => {
                            v = v * 8 + u32::from(d - b'0');
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                Ok(Some(ClassItem::Byte(byte_value(v)?)))
            }
            _ => Ok(Some(ClassItem::Byte(self.escaped_byte()?))),
        }
    }
}

/// A code point written in an escape, which must fit a byte without UTF mode.
fn byte_value(v: u32) -> Result<u8, Stop> {
    u8::try_from(v).or_else(|_| {
        invalid("character code point value in \\x{} or \\o{} is too large (no UTF mode)")
    })
}

/// The ASCII spelling of `\d`, `\w`, `\s` (and negations) as class members.
fn ascii_set(c: u8) -> (&'static str, bool) {
    let set = match c.to_ascii_lowercase() {
        b'd' => "0-9",
        b'w' => "0-9A-Za-z_",
        _ => "\\x{09}-\\x{0D}\\x{20}",
    };
    (set, c.is_ascii_uppercase())
}

/// The number of capturing groups of a pattern (a plain scan: escapes and classes
/// are skipped; `(?<name>`, `(?P<name>` and `(?'name'` count).
fn count_groups(src: &[u8]) -> u32 {
    let mut n = 0;
    let mut i = 0;
    let mut in_class = false;
    while i < src.len() {
        match src[i] {
            b'\\' => i += 1,
            b'[' if !in_class => {
                in_class = true;
                // A ']' right after '[' or '[^' is a literal.
                if src.get(i + 1) == Some(&b'^') {
                    i += 1;
                }
                if src.get(i + 1) == Some(&b']') {
                    i += 1;
                }
            }
            b']' if in_class => in_class = false,
            b'(' if !in_class => {
                let rest = &src[i + 1..];
                let named = rest.starts_with(b"?<")
                    && !rest.starts_with(b"?<=")
                    && !rest.starts_with(b"?<!")
                    || rest.starts_with(b"?P<")
                    || rest.starts_with(b"?'");
                if !rest.starts_with(b"?") && !rest.starts_with(b"*") || named {
                    n += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    n
}

fn find_subslice(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(p: &str) -> String {
        match translate(p, Dialect::Bytes) {
            Translation::Pattern(s) => s,
            other => panic!("{p}: {other:?}"),
        }
    }

    #[test]
    fn literals_and_escapes() {
        assert_eq!(bytes("a\\<b"), "(?s-u)(?m)a\\x3Cb");
        assert_eq!(bytes("é"), "(?s-u)(?m)\\xC3\\xA9");
        assert_eq!(bytes("a{x"), "(?s-u)(?m)a\\x7Bx");
        assert_eq!(bytes("a{2,3}"), "(?s-u)(?m)a{2,3}");
        assert_eq!(bytes("[]a]"), "(?s-u)(?m)[\\x5D\\x61]");
        assert_eq!(bytes("[a-c]"), "(?s-u)(?m)[\\x61-\\x63]");
        assert_eq!(bytes("[\\w-]"), "(?s-u)(?m)[[:word:]\\x2D]");
        assert_eq!(bytes("(?i)x"), "(?s-u)(?m)(?i)x");
        assert_eq!(bytes("(?#c)x"), "(?s-u)(?m)x");
    }

    #[test]
    fn backtracking_constructs_are_reported() {
        for p in ["a(?=b)", "(?<!a)b", "(a)\\1", "(?>a)", "a*+", "a\\Z"] {
            assert!(
                matches!(
                    translate(p, Dialect::Bytes),
                    Translation::NeedsBacktracking(_)
                ),
                "{p}"
            );
            assert!(
                matches!(translate(p, Dialect::Latin1), Translation::Pattern(_)),
                "{p}"
            );
        }
    }
}
