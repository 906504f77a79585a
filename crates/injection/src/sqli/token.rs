//! SQL tokens: the token type letters used in fingerprints and the token record.

/// Maximum number of bytes of a token's value that are kept (libinjection keeps
/// 31 bytes plus a terminating NUL in a 32-byte buffer).
pub const TOKEN_VALUE_CAPACITY: usize = 31;

/// The type of a SQL token. Each variant is represented by the single ASCII
/// letter libinjection uses for it in fingerprints (see [`TokenType::as_char`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum TokenType {
    /// No token (an empty slot).
    #[default]
    None = 0,
    /// `k`: a SQL keyword.
    Keyword = b'k',
    /// `U`: `UNION` and its variants.
    Union = b'U',
    /// `B`: grouping keywords (`GROUP BY`, `ORDER BY`, `LIMIT`, ...).
    Group = b'B',
    /// `E`: statement starters (`SELECT`, `INSERT`, ...).
    Expression = b'E',
    /// `t`: SQL type names.
    SqlType = b't',
    /// `f`: function names.
    Function = b'f',
    /// `n`: a bare word (identifier).
    Bareword = b'n',
    /// `1`: a number.
    Number = b'1',
    /// `v`: a variable (`@x`, `@@x`).
    Variable = b'v',
    /// `s`: a string literal.
    String = b's',
    /// `o`: an operator.
    Operator = b'o',
    /// `&`: a logical operator (`AND`, `OR`, `&&`, `||`).
    LogicOperator = b'&',
    /// `c`: a comment.
    Comment = b'c',
    /// `A`: `COLLATE`.
    Collate = b'A',
    /// `(`
    LeftParens = b'(',
    /// `)`
    RightParens = b')',
    /// `{`
    LeftBrace = b'{',
    /// `}`
    RightBrace = b'}',
    /// `.`
    Dot = b'.',
    /// `,`
    Comma = b',',
    /// `:`
    Colon = b':',
    /// `;`
    Semicolon = b';',
    /// `T`: Transact-SQL statement starters.
    Tsql = b'T',
    /// `?`: an unknown character.
    Unknown = b'?',
    /// `X`: unparsable or evasive input; the fingerprint becomes `X`.
    Evil = b'X',
    /// `F`: a fingerprint entry of the keyword table (never a token).
    Fingerprint = b'F',
    /// `\`: a lone backslash.
    Backslash = b'\\',
}

impl TokenType {
    /// The letter used for this type in fingerprints (`'\0'` for [`TokenType::None`]).
    pub const fn as_char(self) -> char {
        self as u8 as char
    }

    /// The letter used for this type in fingerprints, as a byte.
    pub const fn as_byte(self) -> u8 {
        self as u8
    }

    /// The type for a fingerprint letter, if it is one.
    pub const fn from_byte(b: u8) -> Option<TokenType> {
        Some(match b {
            0 => TokenType::None,
            b'k' => TokenType::Keyword,
            b'U' => TokenType::Union,
            b'B' => TokenType::Group,
            b'E' => TokenType::Expression,
            b't' => TokenType::SqlType,
            b'f' => TokenType::Function,
            b'n' => TokenType::Bareword,
            b'1' => TokenType::Number,
            b'v' => TokenType::Variable,
            b's' => TokenType::String,
            b'o' => TokenType::Operator,
            b'&' => TokenType::LogicOperator,
            b'c' => TokenType::Comment,
            b'A' => TokenType::Collate,
            b'(' => TokenType::LeftParens,
            b')' => TokenType::RightParens,
            b'{' => TokenType::LeftBrace,
            b'}' => TokenType::RightBrace,
            b'.' => TokenType::Dot,
            b',' => TokenType::Comma,
            b':' => TokenType::Colon,
            b';' => TokenType::Semicolon,
            b'T' => TokenType::Tsql,
            b'?' => TokenType::Unknown,
            b'X' => TokenType::Evil,
            b'F' => TokenType::Fingerprint,
            b'\\' => TokenType::Backslash,
            _ => return None,
        })
    }
}

/// One SQL token, as produced by the tokenizer and rewritten by folding.
///
/// Like libinjection, the value is truncated to [`TOKEN_VALUE_CAPACITY`] bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    /// The token type.
    pub kind: TokenType,
    /// Opening quote of a string (`'`, `"`, `` ` ``, `$`, `q`, `u`) or 0 when
    /// the string had none (it started the input in a quote context).
    pub str_open: u8,
    /// Closing quote of a string, or 0 when the string ran to the end of input.
    pub str_close: u8,
    /// Byte offset of the value in the input.
    pub pos: usize,
    /// Length of the (possibly truncated) value.
    pub len: usize,
    /// For variables, the number of leading `@` (1 or 2).
    pub count: u8,
    val: [u8; TOKEN_VALUE_CAPACITY + 1],
}

impl Default for Token {
    fn default() -> Self {
        Token::EMPTY
    }
}

impl Token {
    /// An empty token (type [`TokenType::None`]).
    pub const EMPTY: Token = Token {
        kind: TokenType::None,
        str_open: 0,
        str_close: 0,
        pos: 0,
        len: 0,
        count: 0,
        val: [0; TOKEN_VALUE_CAPACITY + 1],
    };

    /// The token value (at most [`TOKEN_VALUE_CAPACITY`] bytes).
    pub fn value(&self) -> &[u8] {
        &self.val[..self.len]
    }

    /// The token value up to its first NUL byte, as C string functions see it.
    pub fn c_value(&self) -> &[u8] {
        let v = self.value();
        match v.iter().position(|&b| b == 0) {
            Some(i) => &v[..i],
            None => v,
        }
    }

    /// First byte of the value (0 when empty), like `val[0]` in C.
    pub(crate) fn first(&self) -> u8 {
        self.val[0]
    }

    /// Byte `i` of the value buffer (0 past the value).
    pub(crate) fn byte(&self, i: usize) -> u8 {
        self.val.get(i).copied().unwrap_or(0)
    }

    /// Assigns a type, position and value (truncated to the capacity).
    pub(crate) fn assign(&mut self, kind: TokenType, pos: usize, value: &[u8]) {
        let last = value.len().min(TOKEN_VALUE_CAPACITY);
        self.kind = kind;
        self.pos = pos;
        self.len = last;
        copy_prefix(&mut self.val, &value[..last]);
        self.val[last] = 0;
    }

    /// Assigns a one-byte value.
    pub(crate) fn assign_char(&mut self, kind: TokenType, pos: usize, value: u8) {
        self.kind = kind;
        self.pos = pos;
        self.len = 1;
        self.val[0] = value;
        self.val[1] = 0;
    }
}

/// `dst[..src.len()].copy_from_slice(src)` for `src` of at most `dst.len()`
/// bytes, as two overlapping fixed-size copies: token values are short, and
/// a call to `memcpy` costs more than such a copy.
fn copy_prefix(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if n >= 16 {
        copy_ends::<16>(dst, src);
    } else if n >= 8 {
        copy_ends::<8>(dst, src);
    } else if n >= 4 {
        copy_ends::<4>(dst, src);
    } else if let (Some(&first), Some(&mid), Some(&last)) =
        (src.first(), src.get(n / 2), src.last())
    {
        // one to three bytes: 0, n/2 and n-1 cover them
        if let Some([d0, ..]) = dst.get_mut(..n) {
            *d0 = first;
        }
        if let Some(d) = dst.get_mut(n / 2) {
            *d = mid;
        }
        if let Some(d) = dst.get_mut(n - 1) {
            *d = last;
        }
    }
}

/// Copies the first and the last `K` bytes of `src` (`K <= src.len() <= 2K`)
/// to the same places in `dst`.
#[inline(always)]
fn copy_ends<const K: usize>(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if let (Some(head), Some(tail)) = (src.first_chunk::<K>(), src.last_chunk::<K>()) {
        if let Some(d) = dst.first_chunk_mut::<K>() {
            *d = *head;
        }
        if let Some(d) = dst.get_mut(n - K..n).and_then(|d| d.first_chunk_mut::<K>()) {
            *d = *tail;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::copy_prefix;

    /// Every length up to the capacity copies exactly the prefix.
    #[test]
    fn copy_prefix_copies_exactly_the_prefix() {
        let src: Vec<u8> = (1..=32).collect();
        for n in 0..=32 {
            let mut dst = [0u8; 32];
            copy_prefix(&mut dst, &src[..n]);
            assert_eq!(&dst[..n], &src[..n], "{n}");
            assert!(dst[n..].iter().all(|&b| b == 0), "{n}");
        }
    }
}
