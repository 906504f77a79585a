//! The SQL tokenizer: one parser per character class.
//!
//! Byte-set helpers reproduce the C library's use of `strchr` on a
//! NUL-terminated set, where the NUL byte always matches.

use super::charclass::CharClass;
use super::data::CHAR_MAP;
use super::keywords::{keyword_continues_after, lookup_word};
use super::token::{Token, TokenType, TOKEN_VALUE_CAPACITY};
use super::wordscan::{scan_whole_word, scan_word, WordByte};
use super::{SqliState, FLAG_QUOTE_DOUBLE, FLAG_QUOTE_SINGLE, FLAG_SQL_ANSI, FLAG_SQL_MYSQL};

/// A 256-entry membership table; byte 0 is always a member.
type ByteSet = [bool; 256];

const fn byte_set(chars: &[u8]) -> ByteSet {
    let mut t = [false; 256];
    t[0] = true;
    let mut i = 0;
    while i < chars.len() {
        t[chars[i] as usize] = true;
        i += 1;
    }
    t
}

/// Whitespace for SQL: space, `\t\n\v\f\r`, NUL and Latin-1 NBSP (0xA0).
static WHITE: ByteSet = byte_set(b" \t\n\x0b\x0c\r\xa0");
/// Bytes that end a word.
static WORD_END: ByteSet = byte_set(b" []{}<>:\\?=@!#~+-*/&|^%(),';\t\n\x0b\x0c\r\"\xa0");

/// [`WordByte`] of every byte, for [`scan_word`].
static WORD_SCAN: [WordByte; 256] = {
    let mut t = [WordByte::Letter; 256];
    let mut i = 0;
    while i < 256 {
        if WORD_END[i] {
            t[i] = WordByte::End;
        }
        i += 1;
    }
    t[b'.' as usize] = WordByte::Delim;
    t[b'`' as usize] = WordByte::Delim;
    t
};
/// Bytes that end a variable name.
static VAR_END: ByteSet = byte_set(b" <>:\\?=@!#~+-*/&|^%(),';\t\n\x0b\x0c\r'`\"");
static BINARY_DIGITS: ByteSet = byte_set(b"01");
static HEX_DIGITS: ByteSet = byte_set(b"0123456789ABCDEFabcdef");
static MONEY_CHARS: ByteSet = byte_set(b"0123456789.,");
static LETTERS: ByteSet = byte_set(b"abcdefghjiklmnopqrstuvwxyzABCDEFGHJIKLMNOPQRSTUVWXYZ");

/// Length of the prefix of `s` made of members of `set` (C `strspn`-like).
fn span(s: &[u8], set: &ByteSet) -> usize {
    s.iter().position(|&b| !set[b as usize]).unwrap_or(s.len())
}

/// Length of the prefix of `s` made of non-members of `set` (C `strcspn`-like).
fn cspan(s: &[u8], set: &ByteSet) -> usize {
    s.iter().position(|&b| set[b as usize]).unwrap_or(s.len())
}

/// Whether `b` is SQL whitespace (including NUL and 0xA0).
pub(crate) fn is_white(b: u8) -> bool {
    WHITE[b as usize]
}

/// Index of the first `c` in `s[from..]`.
fn find_byte(s: &[u8], from: usize, c: u8) -> Option<usize> {
    s.get(from..)?
        .iter()
        .position(|&b| b == c)
        .map(|i| from + i)
}

/// Index of the first `c0 c1` pair starting in `s[from..to]` and ending
/// before `to` (libinjection's `memchr2` over `s[from..to]`).
fn find_pair(s: &[u8], from: usize, to: usize, c0: u8, c1: u8) -> Option<usize> {
    let hay = s.get(from..to)?;
    hay.windows(2)
        .position(|w| w[0] == c0 && w[1] == c1)
        .map(|i| from + i)
}

/// Index of the first occurrence of `needle` in `s[from..]`.
fn find_slice(s: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    let hay = s.get(from..)?;
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len())
        .position(|w| w == needle)
        .map(|i| from + i)
}

/// Iterator over the raw tokens of an input (no folding), as
/// `libinjection_sqli_tokenize` produces them.
///
/// ```
/// use injection::sqli::{Tokenizer, TokenType, FLAG_NONE};
/// let kinds: Vec<TokenType> = Tokenizer::new(b"1 OR 1=1", FLAG_NONE).map(|t| t.kind).collect();
/// assert_eq!(kinds, [TokenType::Number, TokenType::LogicOperator, TokenType::Number,
///                    TokenType::Operator, TokenType::Number]);
/// ```
#[derive(Clone, Debug)]
pub struct Tokenizer<'a> {
    state: SqliState<'a>,
}

impl<'a> Tokenizer<'a> {
    /// A tokenizer over `input` with the given `FLAG_*` flags.
    pub fn new(input: &'a [u8], flags: u32) -> Self {
        Tokenizer {
            state: SqliState::new(input, flags),
        }
    }
}

impl Iterator for Tokenizer<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        if self.state.tokenize() {
            Some(*self.state.current())
        } else {
            None
        }
    }
}

impl SqliState<'_> {
    /// Reads the next token into the current slot (`libinjection_sqli_tokenize`).
    ///
    /// Returns `false` at the end of input.
    pub fn tokenize(&mut self) -> bool {
        let slen = self.s.len();
        if slen == 0 {
            return false;
        }
        self.mark_used(self.current);
        *self.cur() = Token::EMPTY;

        // At the start of input in a quote context, pretend a quote precedes it.
        if self.pos == 0 && self.flags & (FLAG_QUOTE_SINGLE | FLAG_QUOTE_DOUBLE) != 0 {
            let delim = if self.flags & FLAG_QUOTE_SINGLE != 0 {
                b'\''
            } else if self.flags & FLAG_QUOTE_DOUBLE != 0 {
                b'"'
            } else {
                0
            };
            self.pos = self.parse_string_core(0, delim, 0);
            self.stats_tokens += 1;
            return true;
        }

        while self.pos < slen {
            let ch = self.s[self.pos];
            self.pos = match CHAR_MAP[ch as usize] {
                CharClass::White => self.pos + 1,
                CharClass::Bang | CharClass::Op2 => self.parse_operator2(),
                CharClass::Str => self.parse_string(),
                CharClass::Hash => self.parse_hash(),
                CharClass::Money => self.parse_money(),
                CharClass::Op1 | CharClass::Unary => self.parse_operator1(),
                CharClass::LeftParens
                | CharClass::RightParens
                | CharClass::Comma
                | CharClass::Semicolon
                | CharClass::LeftBrace
                | CharClass::RightBrace => self.parse_char(),
                CharClass::Dash => self.parse_dash(),
                CharClass::Num => self.parse_number(),
                CharClass::Slash => self.parse_slash(),
                CharClass::Other => self.parse_other(),
                CharClass::Var => self.parse_var(),
                CharClass::Word => self.parse_word(),
                CharClass::BString => self.parse_bstring(),
                CharClass::EString => self.parse_estring(),
                CharClass::NqString => self.parse_nqstring(),
                CharClass::QString => self.parse_qstring_core(0),
                CharClass::UString => self.parse_ustring(),
                CharClass::XString => self.parse_xstring(),
                CharClass::BWord => self.parse_bword(),
                CharClass::Back => self.parse_backslash(),
                CharClass::Tick => self.parse_tick(),
            };
            if self.current().kind != TokenType::None {
                self.stats_tokens += 1;
                return true;
            }
        }
        false
    }

    fn parse_operator1(&mut self) -> usize {
        let pos = self.pos;
        let ch = self.s[pos];
        self.cur().assign_char(TokenType::Operator, pos, ch);
        pos + 1
    }

    fn parse_other(&mut self) -> usize {
        let pos = self.pos;
        let ch = self.s[pos];
        self.cur().assign_char(TokenType::Unknown, pos, ch);
        pos + 1
    }

    /// `(`, `)`, `,`, `;`, `{`, `}`: the byte is its own token type.
    fn parse_char(&mut self) -> usize {
        let pos = self.pos;
        let ch = self.s[pos];
        let kind = TokenType::from_byte(ch).unwrap_or(TokenType::Unknown);
        self.cur().assign_char(kind, pos, ch);
        pos + 1
    }

    fn parse_eol_comment(&mut self) -> usize {
        let s = self.s;
        let pos = self.pos;
        match find_byte(s, pos, b'\n') {
            None => {
                self.cur().assign(TokenType::Comment, pos, &s[pos..]);
                s.len()
            }
            Some(end) => {
                self.cur().assign(TokenType::Comment, pos, &s[pos..end]);
                end + 1
            }
        }
    }

    /// `#`: an operator in ANSI mode, an end-of-line comment in MySQL mode.
    fn parse_hash(&mut self) -> usize {
        self.stats_comment_hash += 1;
        if self.flags & FLAG_SQL_MYSQL != 0 {
            self.stats_comment_hash += 1;
            self.parse_eol_comment()
        } else {
            let pos = self.pos;
            self.cur().assign_char(TokenType::Operator, pos, b'#');
            pos + 1
        }
    }

    fn parse_dash(&mut self) -> usize {
        let s = self.s;
        let slen = s.len();
        let pos = self.pos;
        if (pos + 2 < slen && s[pos + 1] == b'-' && is_white(s[pos + 2]))
            || (pos + 2 == slen && s[pos + 1] == b'-')
        {
            // "-- " or a final "--": always a comment
            self.parse_eol_comment()
        } else if pos + 1 < slen && s[pos + 1] == b'-' && self.flags & FLAG_SQL_ANSI != 0 {
            self.stats_comment_ddx += 1;
            self.parse_eol_comment()
        } else {
            self.cur().assign_char(TokenType::Operator, pos, b'-');
            pos + 1
        }
    }

    fn parse_slash(&mut self) -> usize {
        let s = self.s;
        let slen = s.len();
        let pos = self.pos;
        if pos + 1 == slen || s[pos + 1] != b'*' {
            return self.parse_operator1();
        }
        let end = find_pair(s, pos + 2, slen, b'*', b'/');
        let clen = match end {
            None => slen - pos,
            Some(e) => e + 2 - pos,
        };
        // A nested "/*" (PostgreSQL nests comments) or a MySQL "/*!" comment
        // cannot be parsed consistently: evil.
        let nested = match end {
            Some(e) => find_pair(s, pos + 2, e + 1, b'/', b'*').is_some(),
            None => false,
        };
        let mysql = pos + 2 < slen && s[pos + 2] == b'!';
        let kind = if nested || mysql {
            TokenType::Evil
        } else {
            TokenType::Comment
        };
        self.cur().assign(kind, pos, &s[pos..pos + clen]);
        pos + clen
    }

    fn parse_backslash(&mut self) -> usize {
        let s = self.s;
        let pos = self.pos;
        if pos + 1 < s.len() && s[pos + 1] == b'N' {
            // MySQL's alias for NULL
            self.cur().assign(TokenType::Number, pos, &s[pos..pos + 2]);
            pos + 2
        } else {
            self.cur().assign_char(TokenType::Backslash, pos, s[pos]);
            pos + 1
        }
    }

    fn parse_operator2(&mut self) -> usize {
        let s = self.s;
        let slen = s.len();
        let pos = self.pos;
        if pos + 1 >= slen {
            return self.parse_operator1();
        }
        if pos + 2 < slen && s[pos] == b'<' && s[pos + 1] == b'=' && s[pos + 2] == b'>' {
            self.cur()
                .assign(TokenType::Operator, pos, &s[pos..pos + 3]);
            return pos + 3;
        }
        if let Some(kind) = lookup_word(&s[pos..pos + 2]) {
            self.cur().assign(kind, pos, &s[pos..pos + 2]);
            return pos + 2;
        }
        if s[pos] == b':' {
            self.cur().assign(TokenType::Colon, pos, &s[pos..pos + 1]);
            return pos + 1;
        }
        self.parse_operator1()
    }

    /// Reads a string that starts at `pos + offset` and ends at an unescaped
    /// `delim` (or the end of input). `offset` is 0 for the simulated quote at
    /// the start of input, else the length of the opening prefix.
    pub(crate) fn parse_string_core(&mut self, pos: usize, delim: u8, offset: usize) -> usize {
        let s = self.s;
        let len = s.len();
        let start = (pos + offset).min(len);
        let mut q = find_byte(s, start, delim);
        let tok = &mut self.tokens[self.current];
        tok.str_open = if offset > 0 { delim } else { 0 };
        loop {
            match q {
                None => {
                    tok.assign(TokenType::String, start, &s[start..]);
                    tok.str_close = 0;
                    return len;
                }
                Some(qp) => {
                    if is_backslash_escaped(s, qp, start) {
                        q = find_byte(s, qp + 1, delim);
                    } else if qp + 1 < len && s[qp + 1] == s[qp] {
                        q = find_byte(s, qp + 2, delim);
                    } else {
                        tok.assign(TokenType::String, start, &s[start..qp]);
                        tok.str_close = delim;
                        return qp + 1;
                    }
                }
            }
        }
    }

    fn parse_string(&mut self) -> usize {
        let pos = self.pos;
        let delim = self.s[pos];
        self.parse_string_core(pos, delim, 1)
    }

    /// `E'..'` (PostgreSQL) and `N'..'` (MySQL national) strings.
    fn parse_estring(&mut self) -> usize {
        let s = self.s;
        let pos = self.pos;
        if pos + 2 >= s.len() || s[pos + 1] != b'\'' {
            return self.parse_word();
        }
        self.parse_string_core(pos, b'\'', 2)
    }

    /// `U&'..'` strings.
    fn parse_ustring(&mut self) -> usize {
        let s = self.s;
        let pos = self.pos;
        if pos + 2 < s.len() && s[pos + 1] == b'&' && s[pos + 2] == b'\'' {
            self.pos += 2;
            let end = self.parse_string();
            let tok = self.cur();
            tok.str_open = b'u';
            if tok.str_close == b'\'' {
                tok.str_close = b'u';
            }
            end
        } else {
            self.parse_word()
        }
    }

    /// Oracle `q'(..)'` strings (`offset` 1 for `nq'..'`).
    fn parse_qstring_core(&mut self, offset: usize) -> usize {
        let s = self.s;
        let slen = s.len();
        let pos = self.pos + offset;
        if pos >= slen
            || (s[pos] != b'q' && s[pos] != b'Q')
            || pos + 2 >= slen
            || s[pos + 1] != b'\''
        {
            return self.parse_word();
        }
        let open = s[pos + 2];
        // signed char in C: bytes >= 0x80 are "< 33" too
        if (open as i8) < 33 {
            return self.parse_word();
        }
        let close = match open {
            b'(' => b')',
            b'[' => b']',
            b'{' => b'}',
            b'<' => b'>',
            c => c,
        };
        let tok = &mut self.tokens[self.current];
        match find_pair(s, pos + 3, slen, close, b'\'') {
            None => {
                tok.assign(TokenType::String, pos + 3, &s[pos + 3..]);
                tok.str_open = b'q';
                tok.str_close = 0;
                slen
            }
            Some(end) => {
                tok.assign(TokenType::String, pos + 3, &s[pos + 3..end]);
                tok.str_open = b'q';
                tok.str_close = b'q';
                end + 2
            }
        }
    }

    /// `N'..'` or Oracle `nq'..'`.
    fn parse_nqstring(&mut self) -> usize {
        let s = self.s;
        let pos = self.pos;
        if pos + 2 < s.len() && s[pos + 1] == b'\'' {
            return self.parse_estring();
        }
        self.parse_qstring_core(1)
    }

    /// `b'0101'` and `x'CAFE'` literals.
    fn parse_digit_string(&mut self, digits: &ByteSet) -> usize {
        let s = self.s;
        let slen = s.len();
        let pos = self.pos;
        if pos + 2 >= slen || s[pos + 1] != b'\'' {
            return self.parse_word();
        }
        let wlen = span(&s[pos + 2..], digits);
        if pos + 2 + wlen >= slen || s[pos + 2 + wlen] != b'\'' {
            return self.parse_word();
        }
        self.cur()
            .assign(TokenType::Number, pos, &s[pos..pos + wlen + 3]);
        pos + 2 + wlen + 1
    }

    fn parse_bstring(&mut self) -> usize {
        self.parse_digit_string(&BINARY_DIGITS)
    }

    fn parse_xstring(&mut self) -> usize {
        self.parse_digit_string(&HEX_DIGITS)
    }

    /// SQL Server `[bracketed words]`.
    fn parse_bword(&mut self) -> usize {
        let s = self.s;
        let pos = self.pos;
        match find_byte(s, pos, b']') {
            None => {
                self.cur().assign(TokenType::Bareword, pos, &s[pos..]);
                s.len()
            }
            Some(end) => {
                self.cur().assign(TokenType::Bareword, pos, &s[pos..=end]);
                end + 1
            }
        }
    }

    pub(crate) fn parse_word(&mut self) -> usize {
        let (s, pos) = (self.s, self.pos);
        let (kind, end) = word_token(s, pos);
        self.cur().assign(kind, pos, &s[pos..end]);
        end
    }

    /// MySQL `` `quoted identifiers` ``: a function name or a bare word.
    fn parse_tick(&mut self) -> usize {
        let pos = self.pos;
        let end = self.parse_string_core(pos, b'`', 1);
        let tok = self.cur();
        tok.kind = if lookup_word(tok.value()) == Some(TokenType::Function) {
            TokenType::Function
        } else {
            TokenType::Bareword
        };
        end
    }

    fn parse_var(&mut self) -> usize {
        let s = self.s;
        let slen = s.len();
        let mut pos = self.pos + 1;
        if pos < slen && s[pos] == b'@' {
            pos += 1;
            self.cur().count = 2;
        } else {
            self.cur().count = 1;
        }
        if pos < slen {
            if s[pos] == b'`' {
                self.pos = pos;
                let end = self.parse_tick();
                self.cur().kind = TokenType::Variable;
                return end;
            } else if s[pos] == b'\'' || s[pos] == b'"' {
                self.pos = pos;
                let end = self.parse_string();
                self.cur().kind = TokenType::Variable;
                return end;
            }
        }
        let start = pos.min(slen);
        let xlen = cspan(&s[start..], &VAR_END);
        self.cur()
            .assign(TokenType::Variable, start, &s[start..start + xlen]);
        start + xlen
    }

    /// `$1,000.00`, PostgreSQL `$$strings$$` and `$tag$strings$tag$`.
    fn parse_money(&mut self) -> usize {
        let s = self.s;
        let slen = s.len();
        let pos = self.pos;
        if pos + 1 == slen {
            self.cur().assign_char(TokenType::Bareword, pos, b'$');
            return slen;
        }
        let xlen = span(&s[pos + 1..], &MONEY_CHARS);
        if xlen == 0 {
            if s[pos + 1] == b'$' {
                // $$ .. $$
                let tok = &mut self.tokens[self.current];
                match find_pair(s, pos + 2, slen, b'$', b'$') {
                    None => {
                        tok.assign(TokenType::String, pos + 2, &s[pos + 2..]);
                        tok.str_open = b'$';
                        tok.str_close = 0;
                        slen
                    }
                    Some(end) => {
                        tok.assign(TokenType::String, pos + 2, &s[pos + 2..end]);
                        tok.str_open = b'$';
                        tok.str_close = b'$';
                        end + 2
                    }
                }
            } else {
                // $tag$ .. $tag$
                let xlen = span(&s[pos + 1..], &LETTERS);
                if xlen == 0 || pos + xlen + 1 == slen || s[pos + xlen + 1] != b'$' {
                    self.cur().assign_char(TokenType::Bareword, pos, b'$');
                    return pos + 1;
                }
                let body = pos + xlen + 2;
                let tag = &s[pos..body];
                let found = find_slice(s, body, tag);
                let tok = &mut self.tokens[self.current];
                match found {
                    None => {
                        tok.assign(TokenType::String, body, &s[body..]);
                        tok.str_open = b'$';
                        tok.str_close = 0;
                        slen
                    }
                    Some(end) => {
                        tok.assign(TokenType::String, body, &s[body..end]);
                        tok.str_open = b'$';
                        tok.str_close = b'$';
                        end + xlen + 2
                    }
                }
            }
        } else if xlen == 1 && s[pos + 1] == b'.' {
            // "$." is a word
            self.parse_word()
        } else {
            self.cur()
                .assign(TokenType::Number, pos, &s[pos..pos + 1 + xlen]);
            pos + 1 + xlen
        }
    }

    fn parse_number(&mut self) -> usize {
        let (s, pos) = (self.s, self.pos);
        let (kind, end) = number_token(s, pos);
        self.cur().assign(kind, pos, &s[pos..end]);
        end
    }
}

/// Whether the byte at `q` is preceded by an odd number of backslashes that
/// lie at or after `start`.
fn is_backslash_escaped(s: &[u8], q: usize, start: usize) -> bool {
    let mut i = q;
    let mut n = 0usize;
    while i > start && s[i - 1] == b'\\' {
        n += 1;
        i -= 1;
    }
    n & 1 == 1
}

/// The word token that starts at `pos` (`parse_word`): its type and where it
/// ends; its value is `s[pos..end]`.
///
/// libinjection reads the word up to a [`WORD_END`] byte, then looks up the
/// prefix before each `.` or `` ` `` and splits the word after the first one
/// that is a keyword (`SELECT.1`), else looks up the whole word. Here one pass
/// finds the end and the first delimiter, and the lookups that cannot match
/// are skipped (see [`keyword_continues_after`]).
pub(crate) fn word_token(s: &[u8], pos: usize) -> (TokenType, usize) {
    let word = s.get(pos..).unwrap_or_default();
    let (wlen, first_delim) = scan_word(word, &WORD_SCAN);
    word_kind(word, pos, wlen, first_delim)
}

/// [`word_token`] at the start of `s` when the word runs to the end of `s`,
/// to a `-` or to whitespace (the shapes the `simple` module decides), else
/// `None`, cheaply: without the lookups. The word is scanned sixteen bytes at
/// a time.
pub(crate) fn leading_word_token(s: &[u8]) -> Option<(TokenType, usize)> {
    let (wlen, first_delim) = scan_whole_word(s, &WORD_SCAN);
    match s.get(wlen) {
        None | Some(b'-') => {}
        Some(&b) if CHAR_MAP[b as usize] == CharClass::White => {}
        Some(_) => return None,
    }
    Some(word_kind(s, 0, wlen, first_delim))
}

/// The rest of [`word_token`], once the word's length and its first `.` or
/// `` ` `` are known: the keyword lookups.
fn word_kind(
    word: &[u8],
    pos: usize,
    wlen: usize,
    first_delim: Option<usize>,
) -> (TokenType, usize) {
    // (libinjection looks for delimiters within the kept value only)
    let first_delim = first_delim.filter(|&d| d < TOKEN_VALUE_CAPACITY);
    let word = &word[..wlen];
    let kept = wlen.min(TOKEN_VALUE_CAPACITY);

    // "SELECT.1" or "SELECT`col`": split after a leading keyword. Past the
    // first delimiter, only a few dotted keywords can still match.
    if let Some(first) = first_delim {
        for i in first..kept {
            let delim = word[i];
            if delim == b'.' || delim == b'`' {
                match lookup_word(&word[..i]) {
                    Some(kind) if kind != TokenType::Bareword => return (kind, pos + i),
                    _ => {}
                }
                if i == first && !keyword_continues_after(&word[..i], delim) {
                    return (TokenType::Bareword, pos + wlen);
                }
            }
        }
    }

    let kind = if wlen < TOKEN_VALUE_CAPACITY + 1 {
        lookup_word(&word[..kept]).unwrap_or(TokenType::Bareword)
    } else {
        TokenType::Bareword
    };
    (kind, pos + wlen)
}

/// The number token that starts at `pos` (`parse_number`, on a digit or a
/// `.` at `pos < s.len()`): its type and where it ends; its value is
/// `s[pos..end]`.
pub(crate) fn number_token(s: &[u8], pos: usize) -> (TokenType, usize) {
    let slen = s.len();
    let start = pos;
    let mut pos = pos;

    if s[pos] == b'0' && pos + 1 < slen {
        let digits = match s[pos + 1] {
            b'X' | b'x' => Some(&HEX_DIGITS),
            b'B' | b'b' => Some(&BINARY_DIGITS),
            _ => None,
        };
        if let Some(digits) = digits {
            let xlen = span(&s[pos + 2..], digits);
            if xlen == 0 {
                return (TokenType::Bareword, pos + 2);
            }
            return (TokenType::Number, pos + 2 + xlen);
        }
    }

    while pos < slen && s[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < slen && s[pos] == b'.' {
        pos += 1;
        while pos < slen && s[pos].is_ascii_digit() {
            pos += 1;
        }
        if pos - start == 1 {
            // only "."
            return (TokenType::Dot, pos);
        }
    }

    let mut have_e = false;
    let mut have_exp = false;
    if pos < slen && (s[pos] == b'E' || s[pos] == b'e') {
        have_e = true;
        pos += 1;
        if pos < slen && (s[pos] == b'+' || s[pos] == b'-') {
            pos += 1;
        }
        while pos < slen && s[pos].is_ascii_digit() {
            have_exp = true;
            pos += 1;
        }
    }

    // Oracle's float/double suffixes: "1.2f", "1d"
    // ("1fUNION" reads as "1f UNION", "123FROM" as "123 FROM")
    if pos < slen
        && matches!(s[pos], b'd' | b'D' | b'f' | b'F')
        && (pos + 1 == slen || is_white(s[pos + 1]) || matches!(s[pos + 1], b';' | b'u' | b'U'))
    {
        pos += 1;
    }

    let kind = if have_e && !have_exp {
        // "1234.e", "10.10E": a word, not a number
        TokenType::Bareword
    } else {
        TokenType::Number
    };
    (kind, pos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    impl SqliState<'_> {
        /// libinjection's `parse_word` as written: the word's end, then a
        /// lookup of the prefix before every `.` or `` ` ``, then of the word.
        fn parse_word_reference(&mut self) -> usize {
            let s = self.s;
            let pos = self.pos;
            let wlen = cspan(&s[pos..], &WORD_END);
            let tok = &mut self.tokens[self.current];
            tok.assign(TokenType::Bareword, pos, &s[pos..pos + wlen]);
            for i in 0..tok.len {
                let delim = tok.byte(i);
                if delim == b'.' || delim == b'`' {
                    match lookup_word(&tok.value()[..i]) {
                        Some(kind) if kind != TokenType::Bareword => {
                            *tok = Token::EMPTY;
                            tok.assign(kind, pos, &s[pos..pos + i]);
                            return pos + i;
                        }
                        _ => {}
                    }
                }
            }
            if wlen < TOKEN_VALUE_CAPACITY + 1 {
                tok.kind = lookup_word(tok.value()).unwrap_or(TokenType::Bareword);
            }
            pos + wlen
        }
    }

    /// Words and the bytes around them: keywords, dotted keywords, their
    /// parts, delimiters and word ends.
    fn words() -> impl Strategy<Value = Vec<u8>> {
        let part = prop_oneof![
            prop::sample::select(vec![
                "select",
                "UNION",
                "sys",
                "stragg",
                "database_name",
                "dbms_lock",
                "sleep",
                "utl_inaddr",
                "get_host_name",
                "ctxsys",
                "drithsx",
                "sn",
                "json",
                "customer",
                "loyalty",
                "tier",
                "jane",
                "doe",
                "@example",
                "com",
                "x",
                "1",
                "abcdefghijklmnopqrstuvwxyz0123456789",
            ])
            .prop_map(|w| w.as_bytes().to_vec()),
            prop::collection::vec(
                prop::sample::select(b"aAsSyY_019.-`@+:/ '\"#*\0\xa0\xff".to_vec()),
                0..8,
            ),
        ];
        prop::collection::vec((part, prop::sample::select(b"..`` -\0".to_vec())), 1..6).prop_map(
            |parts| {
                let mut w = Vec::new();
                for (p, d) in parts {
                    w.extend_from_slice(&p);
                    w.push(d);
                }
                w.pop();
                w
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(8000))]

        /// The one-pass word parser, which skips the lookups that cannot
        /// match, reads the same token as libinjection's, at every start.
        #[test]
        fn parse_word_agrees_with_the_reference(input in words()) {
            for start in 0..input.len() {
                let mut fast = SqliState::new(&input, FLAG_SQL_ANSI);
                let mut full = SqliState::new(&input, FLAG_SQL_ANSI);
                fast.pos = start;
                full.pos = start;
                let end_fast = fast.parse_word();
                let end_full = full.parse_word_reference();
                prop_assert_eq!(end_fast, end_full);
                prop_assert_eq!(fast.tokens[0], full.tokens[0]);
            }
        }
    }
}
