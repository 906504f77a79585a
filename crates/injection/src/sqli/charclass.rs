//! Character classes: the first byte of a token selects the parser that reads it.

/// The class of an input byte, as in libinjection's `charmap` table
/// (`sqlparse_data.json`). Each class dispatches to one token parser.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CharClass {
    /// `CHAR_WHITE`: whitespace, skipped.
    White,
    /// `CHAR_BANG`: `!`, a one- or two-byte operator.
    Bang,
    /// `CHAR_STR`: `'` or `"`, a string.
    Str,
    /// `CHAR_HASH`: `#`, an operator or a MySQL comment.
    Hash,
    /// `CHAR_MONEY`: `$`, money or a PostgreSQL dollar-quoted string.
    Money,
    /// `CHAR_OP1`: a one-byte operator.
    Op1,
    /// `CHAR_OP2`: a one- or two-byte operator.
    Op2,
    /// `CHAR_LEFTPARENS`: `(`.
    LeftParens,
    /// `CHAR_RIGHTPARENS`: `)`.
    RightParens,
    /// `CHAR_UNARY`: `+` or `~`.
    Unary,
    /// `CHAR_COMMA`: `,`.
    Comma,
    /// `CHAR_DASH`: `-`, an operator or a `--` comment.
    Dash,
    /// `CHAR_NUM`: a digit or `.`.
    Num,
    /// `CHAR_SLASH`: `/`, an operator or a `/*` comment.
    Slash,
    /// `CHAR_SEMICOLON`: `;`.
    Semicolon,
    /// `CHAR_OTHER`: anything else (an unknown token).
    Other,
    /// `CHAR_VAR`: `@`, a variable.
    Var,
    /// `CHAR_WORD`: a word.
    Word,
    /// `CHAR_BSTRING`: `b`/`B`, a word or a binary string `b'01'`.
    BString,
    /// `CHAR_ESTRING`: `e`/`E`, a word or a PostgreSQL escape string `E'..'`.
    EString,
    /// `CHAR_NQSTRING`: `n`/`N`, a word, `N'..'` or an Oracle `nq'..'` string.
    NqString,
    /// `CHAR_QSTRING`: `q`/`Q`, a word or an Oracle `q'..'` string.
    QString,
    /// `CHAR_USTRING`: `u`/`U`, a word or a `U&'..'` string.
    UString,
    /// `CHAR_XSTRING`: `x`/`X`, a word or a hex string `x'..'`.
    XString,
    /// `CHAR_BWORD`: `[`, a SQL Server bracketed word.
    BWord,
    /// `CHAR_BACK`: `\`.
    Back,
    /// `CHAR_TICK`: `` ` ``, a MySQL quoted identifier.
    Tick,
    /// `CHAR_LEFTBRACE`: `{`.
    LeftBrace,
    /// `CHAR_RIGHTBRACE`: `}`.
    RightBrace,
}

impl CharClass {
    /// Every class, in declaration order.
    pub const ALL: [CharClass; 29] = [
        CharClass::White,
        CharClass::Bang,
        CharClass::Str,
        CharClass::Hash,
        CharClass::Money,
        CharClass::Op1,
        CharClass::Op2,
        CharClass::LeftParens,
        CharClass::RightParens,
        CharClass::Unary,
        CharClass::Comma,
        CharClass::Dash,
        CharClass::Num,
        CharClass::Slash,
        CharClass::Semicolon,
        CharClass::Other,
        CharClass::Var,
        CharClass::Word,
        CharClass::BString,
        CharClass::EString,
        CharClass::NqString,
        CharClass::QString,
        CharClass::UString,
        CharClass::XString,
        CharClass::BWord,
        CharClass::Back,
        CharClass::Tick,
        CharClass::LeftBrace,
        CharClass::RightBrace,
    ];

    /// The name libinjection's data file uses for this class (e.g. `CHAR_WHITE`).
    pub const fn json_name(self) -> &'static str {
        match self {
            CharClass::White => "CHAR_WHITE",
            CharClass::Bang => "CHAR_BANG",
            CharClass::Str => "CHAR_STR",
            CharClass::Hash => "CHAR_HASH",
            CharClass::Money => "CHAR_MONEY",
            CharClass::Op1 => "CHAR_OP1",
            CharClass::Op2 => "CHAR_OP2",
            CharClass::LeftParens => "CHAR_LEFTPARENS",
            CharClass::RightParens => "CHAR_RIGHTPARENS",
            CharClass::Unary => "CHAR_UNARY",
            CharClass::Comma => "CHAR_COMMA",
            CharClass::Dash => "CHAR_DASH",
            CharClass::Num => "CHAR_NUM",
            CharClass::Slash => "CHAR_SLASH",
            CharClass::Semicolon => "CHAR_SEMICOLON",
            CharClass::Other => "CHAR_OTHER",
            CharClass::Var => "CHAR_VAR",
            CharClass::Word => "CHAR_WORD",
            CharClass::BString => "CHAR_BSTRING",
            CharClass::EString => "CHAR_ESTRING",
            CharClass::NqString => "CHAR_NQSTRING",
            CharClass::QString => "CHAR_QSTRING",
            CharClass::UString => "CHAR_USTRING",
            CharClass::XString => "CHAR_XSTRING",
            CharClass::BWord => "CHAR_BWORD",
            CharClass::Back => "CHAR_BACK",
            CharClass::Tick => "CHAR_TICK",
            CharClass::LeftBrace => "CHAR_LEFTBRACE",
            CharClass::RightBrace => "CHAR_RIGHTBRACE",
        }
    }

    /// The class with the given data-file name, if any.
    pub fn from_json_name(name: &str) -> Option<CharClass> {
        CharClass::ALL.into_iter().find(|c| c.json_name() == name)
    }

    /// The Rust path of this class, as written in the generated table.
    pub const fn rust_name(self) -> &'static str {
        match self {
            CharClass::White => "White",
            CharClass::Bang => "Bang",
            CharClass::Str => "Str",
            CharClass::Hash => "Hash",
            CharClass::Money => "Money",
            CharClass::Op1 => "Op1",
            CharClass::Op2 => "Op2",
            CharClass::LeftParens => "LeftParens",
            CharClass::RightParens => "RightParens",
            CharClass::Unary => "Unary",
            CharClass::Comma => "Comma",
            CharClass::Dash => "Dash",
            CharClass::Num => "Num",
            CharClass::Slash => "Slash",
            CharClass::Semicolon => "Semicolon",
            CharClass::Other => "Other",
            CharClass::Var => "Var",
            CharClass::Word => "Word",
            CharClass::BString => "BString",
            CharClass::EString => "EString",
            CharClass::NqString => "NqString",
            CharClass::QString => "QString",
            CharClass::UString => "UString",
            CharClass::XString => "XString",
            CharClass::BWord => "BWord",
            CharClass::Back => "Back",
            CharClass::Tick => "Tick",
            CharClass::LeftBrace => "LeftBrace",
            CharClass::RightBrace => "RightBrace",
        }
    }
}
