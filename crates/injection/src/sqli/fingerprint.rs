//! Fingerprints: the token-type letters of the folded tokens, their lookup in
//! the fingerprint list, and the false-positive heuristics
//! (`libinjection_sqli_blacklist` / `libinjection_sqli_not_whitelist`).

use core::fmt;

use super::keywords::{equals_upper, is_fingerprint_padded};
use super::token::TokenType;
use super::{SqliState, TOKEN_SLOTS};

/// A SQLi fingerprint: up to eight ASCII token-type letters (at most five in
/// practice), e.g. `s&1c`. A small `Copy` value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Fingerprint {
    /// The letters, then zeros (the lookup reads all eight bytes at once).
    bytes: [u8; 8],
    len: u8,
}

impl Fingerprint {
    /// The empty fingerprint.
    pub const EMPTY: Fingerprint = Fingerprint {
        bytes: [0; 8],
        len: 0,
    };

    /// Builds a fingerprint from token-type letters (at most eight are kept).
    pub fn from_bytes(b: &[u8]) -> Fingerprint {
        let mut f = Fingerprint::EMPTY;
        for &c in b.iter().take(8) {
            f.bytes[f.len as usize] = c;
            f.len += 1;
        }
        f
    }

    /// The fingerprint as a string (empty when no token was found).
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(self.as_bytes()).unwrap_or("")
    }

    /// The fingerprint letters.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Number of letters.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there are no letters.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether this is a known SQLi fingerprint (the empty one is not).
    pub(crate) fn is_known(&self) -> bool {
        !self.is_empty() && is_fingerprint_padded(&self.bytes, self.len())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({:?})", self.as_str())
    }
}

impl PartialEq<str> for Fingerprint {
    fn eq(&self, other: &str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for Fingerprint {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl SqliState<'_> {
    /// Resets the state with `flags`, folds the input and returns its
    /// fingerprint (`libinjection_sqli_fingerprint`).
    pub fn fingerprint(&mut self, flags: u32) -> Fingerprint {
        self.reset(flags);
        let tlen = self.fold();

        // PHP's magic back-quote comment: a trailing empty, unclosed `` ` ``
        // bare word is a comment.
        if tlen > 2 {
            let t = &mut self.tokens[tlen - 1];
            if t.kind == TokenType::Bareword && t.str_open == b'`' && t.len == 0 && t.str_close == 0
            {
                t.kind = TokenType::Comment;
            }
        }

        // (folding may return one token more than MAX_TOKENS when it found
        // an evil "{ ``" sequence; the fingerprint then becomes "X")
        let tlen = tlen.min(TOKEN_SLOTS);
        let mut letters = [0u8; TOKEN_SLOTS];
        let mut evil = false;
        for (l, t) in letters.iter_mut().zip(&self.tokens).take(tlen) {
            *l = t.kind.as_byte();
            evil |= t.kind == TokenType::Evil;
        }
        let mut fp = Fingerprint {
            bytes: letters,
            len: tlen as u8,
        };

        // Unparsable input: the fingerprint is just "X".
        if evil {
            fp = Fingerprint::from_bytes(b"X");
            let t = &mut self.tokens[0];
            let p = t.pos;
            t.assign_char(TokenType::Evil, p, b'X');
            self.mark_used(1);
            self.tokens[1].kind = TokenType::None;
        }
        self.fingerprint = fp;
        fp
    }

    /// Whether the last fingerprint is in the fingerprint list and passes the
    /// false-positive heuristics (`libinjection_sqli_check_fingerprint`).
    pub fn check_fingerprint(&self) -> bool {
        self.blacklist() && self.not_whitelist()
    }

    /// Whether the last fingerprint is a known SQLi fingerprint.
    pub fn blacklist(&self) -> bool {
        self.fingerprint.is_known()
    }

    /// The false-positive heuristics: `false` when a matching fingerprint is
    /// nevertheless judged benign.
    pub fn not_whitelist(&self) -> bool {
        let fp = self.fingerprint.as_bytes();
        let tlen = fp.len();
        let tok = &self.tokens;

        // MS SQL audit logs ignore anything containing 'sp_password'.
        if tlen > 1
            && fp[tlen - 1] == TokenType::Comment.as_byte()
            && self.s.windows(11).any(|w| w == b"sp_password")
        {
            return true;
        }

        match tlen {
            2 => {
                // "very small SQLi", hard to tell from normal input
                if fp[1] == TokenType::Union.as_byte() {
                    // "1 union" alone is benign; with folding or comments not
                    return self.stats_tokens != 2;
                }
                // '#' comments: too many false positives
                if tok[1].first() == b'#' {
                    return false;
                }
                // "nc": only /* comments count
                if tok[0].kind == TokenType::Bareword
                    && tok[1].kind == TokenType::Comment
                    && tok[1].first() != b'/'
                {
                    return false;
                }
                // "1/*" is SQLi
                if tok[0].kind == TokenType::Number
                    && tok[1].kind == TokenType::Comment
                    && tok[1].first() == b'/'
                {
                    return true;
                }
                // "1c": the number must really end where the comment starts
                if tok[0].kind == TokenType::Number && tok[1].kind == TokenType::Comment {
                    if self.stats_tokens > 2 {
                        return true;
                    }
                    let at = |i: usize| self.s.get(i).copied().unwrap_or(0);
                    let ch = at(tok[0].len);
                    // signed char in C: high bytes count as "<= 32" too
                    if (ch as i8) <= 32 {
                        return true;
                    }
                    if ch == b'/' && at(tok[0].len + 1) == b'*' {
                        return true;
                    }
                    if ch == b'-' && at(tok[0].len + 1) == b'-' {
                        return true;
                    }
                    return false;
                }
                // "foo-- bar": '--' followed by text is plain text
                if tok[1].len > 2 && tok[1].first() == b'-' {
                    return false;
                }
            }
            3 => {
                if fp == b"sos" || fp == b"s&s" {
                    // ...foo' + 'bar...: no opening or closing quote
                    return tok[0].str_open == 0
                        && tok[2].str_close == 0
                        && tok[0].str_close == tok[2].str_open;
                } else if matches!(fp, b"s&n" | b"n&1" | b"1&1" | b"1&v" | b"1&s") {
                    // 'sexy and 17' is not SQLi, 'sexy and 17<18' is
                    if self.stats_tokens == 3 {
                        return false;
                    }
                } else if tok[1].kind == TokenType::Keyword
                    && (tok[1].len < 5 || !equals_upper("INTO", &tok[1].value()[..4]))
                {
                    // only "INTO OUTFILE" / "INTO DUMPFILE" are SQLi
                    return false;
                }
            }
            _ => {}
        }
        true
    }
}
