//! A minimal HTML5 tokenizer (libinjection's `libinjection_html5.c`).
//!
//! It follows the HTML5 tokenization states that matter for finding tags,
//! attributes and comments, plus a few browser quirks (NUL bytes ignored in
//! tag names, back-quoted attribute values, `<% %>` comments). It can start
//! in the data state or inside an attribute value, to analyse input that is
//! inserted in such a context.
//!
//! The state functions chain into each other; here they return the next state
//! to a driver loop instead of calling it, so the stack stays flat whatever
//! the input.

/// Where the input is assumed to be inserted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Html5Flags {
    /// In text content (`DATA_STATE`).
    DataState,
    /// In an unquoted attribute value (`VALUE_NO_QUOTE`).
    ValueNoQuote,
    /// In a single-quoted attribute value (`VALUE_SINGLE_QUOTE`).
    ValueSingleQuote,
    /// In a double-quoted attribute value (`VALUE_DOUBLE_QUOTE`).
    ValueDoubleQuote,
    /// In a back-quoted attribute value, an old IE quirk (`VALUE_BACK_QUOTE`).
    ValueBackQuote,
}

/// The kind of an HTML5 token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Html5TokenType {
    /// Text.
    DataText,
    /// A start tag's name (`<name`).
    TagNameOpen,
    /// The `>` that ends a start tag.
    TagNameClose,
    /// The `/>` that ends a self-closing tag.
    TagNameSelfClose,
    /// Tag data (unused by the tokenizer, kept for parity).
    TagData,
    /// An end tag's name (`</name>`).
    TagClose,
    /// An attribute name.
    AttrName,
    /// An attribute value.
    AttrValue,
    /// A comment, bogus comment or processing instruction.
    TagComment,
    /// A `<!DOCTYPE` declaration.
    Doctype,
}

impl Html5TokenType {
    /// The libinjection name of the type (e.g. `DATA_TEXT`).
    pub const fn name(self) -> &'static str {
        match self {
            Html5TokenType::DataText => "DATA_TEXT",
            Html5TokenType::TagNameOpen => "TAG_NAME_OPEN",
            Html5TokenType::TagNameClose => "TAG_NAME_CLOSE",
            Html5TokenType::TagNameSelfClose => "TAG_NAME_SELFCLOSE",
            Html5TokenType::TagData => "TAG_DATA",
            Html5TokenType::TagClose => "TAG_CLOSE",
            Html5TokenType::AttrName => "ATTR_NAME",
            Html5TokenType::AttrValue => "ATTR_VALUE",
            Html5TokenType::TagComment => "TAG_COMMENT",
            Html5TokenType::Doctype => "DOCTYPE",
        }
    }
}

/// One HTML5 token: a type and a slice of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Html5Token<'a> {
    /// The token type.
    pub kind: Html5TokenType,
    /// Byte offset of the token in the input.
    pub start: usize,
    /// The token's bytes.
    pub bytes: &'a [u8],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Eof,
    Data,
    TagOpen,
    TagName,
    TagNameClose,
    EndTagOpen,
    SelfClosingStartTag,
    AttributeName,
    AfterAttributeName,
    BeforeAttributeName,
    BeforeAttributeValue,
    ValueDoubleQuote,
    ValueSingleQuote,
    ValueBackQuote,
    ValueNoQuote,
    AfterAttributeValueQuoted,
    Comment,
    Cdata,
    BogusComment,
    BogusComment2,
    MarkupDeclarationOpen,
    Doctype,
}

/// What a state function does next.
enum Step {
    /// Stop: `true` when a token was produced, `false` at the end.
    Done(bool),
    /// Continue in another state (a tail call in the C code).
    Go(State),
}

use Step::{Done, Go};

/// HTML whitespace for this tokenizer: space, `\t\n\v\f\r` and NUL.
fn is_white(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0)
}

/// Index of the first `c` in `s[from..]`.
fn find_byte(s: &[u8], from: usize, c: u8) -> Option<usize> {
    s.get(from..)?
        .iter()
        .position(|&b| b == c)
        .map(|i| from + i)
}

/// The HTML5 tokenizer (`libinjection_h5_init` + `libinjection_h5_next`).
///
/// ```
/// use injection::xss::{Html5Flags, Html5Tokenizer, Html5TokenType};
/// let tokens: Vec<_> = Html5Tokenizer::new(b"<a href=x>", Html5Flags::DataState)
///     .map(|t| (t.kind, t.bytes))
///     .collect();
/// assert_eq!(tokens, [
///     (Html5TokenType::TagNameOpen, &b"a"[..]),
///     (Html5TokenType::AttrName, &b"href"[..]),
///     (Html5TokenType::AttrValue, &b"x"[..]),
///     (Html5TokenType::TagNameClose, &b">"[..]),
/// ]);
/// ```
#[derive(Clone, Debug)]
pub struct Html5Tokenizer<'a> {
    s: &'a [u8],
    pos: usize,
    state: State,
    is_close: bool,
    token_start: usize,
    token_len: usize,
    token_type: Html5TokenType,
}

impl<'a> Html5Tokenizer<'a> {
    /// A tokenizer over `input`, starting in the context given by `flags`.
    pub fn new(input: &'a [u8], flags: Html5Flags) -> Self {
        let state = match flags {
            Html5Flags::DataState => State::Data,
            Html5Flags::ValueNoQuote => State::BeforeAttributeName,
            Html5Flags::ValueSingleQuote => State::ValueSingleQuote,
            Html5Flags::ValueDoubleQuote => State::ValueDoubleQuote,
            Html5Flags::ValueBackQuote => State::ValueBackQuote,
        };
        Html5Tokenizer {
            s: input,
            pos: 0,
            state,
            is_close: false,
            token_start: 0,
            token_len: 0,
            token_type: Html5TokenType::DataText,
        }
    }

    /// The whole input.
    pub fn input(&self) -> &'a [u8] {
        self.s
    }

    /// Advances to the next token; `false` at the end of input.
    pub fn advance(&mut self) -> bool {
        let mut st = self.state;
        loop {
            match self.run(st) {
                Done(r) => return r,
                Go(next) => st = next,
            }
        }
    }

    /// The current token (valid after [`Html5Tokenizer::advance`] returned `true`).
    pub fn token(&self) -> Html5Token<'a> {
        let end = (self.token_start + self.token_len).min(self.s.len());
        let start = self.token_start.min(end);
        Html5Token {
            kind: self.token_type,
            start,
            bytes: &self.s[start..end],
        }
    }

    fn run(&mut self, st: State) -> Step {
        match st {
            State::Eof => Done(false),
            State::Data => self.data(),
            State::TagOpen => self.tag_open(),
            State::TagName => self.tag_name(),
            State::TagNameClose => self.tag_name_close(),
            State::EndTagOpen => self.end_tag_open(),
            State::SelfClosingStartTag => self.self_closing_start_tag(),
            State::AttributeName => self.attribute_name(),
            State::AfterAttributeName => self.after_attribute_name(),
            State::BeforeAttributeName => self.before_attribute_name(),
            State::BeforeAttributeValue => self.before_attribute_value(),
            State::ValueDoubleQuote => self.attribute_value_quote(b'"'),
            State::ValueSingleQuote => self.attribute_value_quote(b'\''),
            State::ValueBackQuote => self.attribute_value_quote(b'`'),
            State::ValueNoQuote => self.attribute_value_no_quote(),
            State::AfterAttributeValueQuoted => self.after_attribute_value_quoted(),
            State::Comment => self.comment(),
            State::Cdata => self.cdata(),
            State::BogusComment => self.bogus_comment(),
            State::BogusComment2 => self.bogus_comment2(),
            State::MarkupDeclarationOpen => self.markup_declaration_open(),
            State::Doctype => self.doctype(),
        }
    }

    fn emit(&mut self, kind: Html5TokenType, start: usize, len: usize) {
        self.token_type = kind;
        self.token_start = start;
        self.token_len = len;
    }

    /// Skips whitespace (including NUL); returns the next byte, or `None` at
    /// the end.
    ///
    /// The C code returns the byte as a signed `char`, so byte 0xFF reads as
    /// its end-of-input marker (-1): it ends the token stream too.
    fn skip_white(&mut self) -> Option<u8> {
        while self.pos < self.s.len() {
            let ch = self.s[self.pos];
            if matches!(ch, 0x00 | 0x20 | 0x09 | 0x0a | 0x0b | 0x0c | 0x0d) {
                self.pos += 1;
            } else if ch == 0xff {
                return None;
            } else {
                return Some(ch);
            }
        }
        None
    }

    fn data(&mut self) -> Step {
        let len = self.s.len();
        match find_byte(self.s, self.pos, b'<') {
            None => {
                self.emit(Html5TokenType::DataText, self.pos, len - self.pos.min(len));
                self.state = State::Eof;
                if self.token_len == 0 {
                    return Done(false);
                }
            }
            Some(idx) => {
                self.emit(Html5TokenType::DataText, self.pos, idx - self.pos);
                self.pos = idx + 1;
                self.state = State::TagOpen;
                if self.token_len == 0 {
                    return Go(State::TagOpen);
                }
            }
        }
        Done(true)
    }

    fn tag_open(&mut self) -> Step {
        if self.pos >= self.s.len() {
            return Done(false);
        }
        let ch = self.s[self.pos];
        match ch {
            b'!' => {
                self.pos += 1;
                Go(State::MarkupDeclarationOpen)
            }
            b'/' => {
                self.pos += 1;
                self.is_close = true;
                Go(State::EndTagOpen)
            }
            b'?' => {
                self.pos += 1;
                Go(State::BogusComment)
            }
            b'%' => {
                // not in the spec: IE <= 9 and old Safari comments
                self.pos += 1;
                Go(State::BogusComment2)
            }
            // NUL: an IE-ism, ignored in tag names
            b'a'..=b'z' | b'A'..=b'Z' | 0 => Go(State::TagName),
            _ => {
                if self.pos == 0 {
                    return Go(State::Data);
                }
                self.emit(Html5TokenType::DataText, self.pos - 1, 1);
                self.state = State::Data;
                Done(true)
            }
        }
    }

    fn end_tag_open(&mut self) -> Step {
        if self.pos >= self.s.len() {
            return Done(false);
        }
        let ch = self.s[self.pos];
        if ch == b'>' {
            return Go(State::Data);
        } else if ch.is_ascii_alphabetic() {
            return Go(State::TagName);
        }
        self.is_close = false;
        Go(State::BogusComment)
    }

    fn tag_name_close(&mut self) -> Step {
        self.is_close = false;
        self.emit(Html5TokenType::TagNameClose, self.pos, 1);
        self.pos += 1;
        self.state = if self.pos < self.s.len() {
            State::Data
        } else {
            State::Eof
        };
        Done(true)
    }

    fn tag_name(&mut self) -> Step {
        let len = self.s.len();
        let mut pos = self.pos;
        while pos < len {
            let ch = self.s[pos];
            if ch == 0 {
                // NULs are allowed (and ignored by old browsers) in tag names
                pos += 1;
            } else if is_white(ch) {
                self.emit(Html5TokenType::TagNameOpen, self.pos, pos - self.pos);
                self.pos = pos + 1;
                self.state = State::BeforeAttributeName;
                return Done(true);
            } else if ch == b'/' {
                self.emit(Html5TokenType::TagNameOpen, self.pos, pos - self.pos);
                self.pos = pos + 1;
                self.state = State::SelfClosingStartTag;
                return Done(true);
            } else if ch == b'>' {
                if self.is_close {
                    self.emit(Html5TokenType::TagClose, self.pos, pos - self.pos);
                    self.pos = pos + 1;
                    self.is_close = false;
                    self.state = State::Data;
                } else {
                    self.emit(Html5TokenType::TagNameOpen, self.pos, pos - self.pos);
                    self.pos = pos;
                    self.state = State::TagNameClose;
                }
                return Done(true);
            } else {
                pos += 1;
            }
        }
        self.emit(Html5TokenType::TagNameOpen, self.pos, len - self.pos);
        self.state = State::Eof;
        Done(true)
    }

    fn before_attribute_name(&mut self) -> Step {
        match self.skip_white() {
            None => Done(false),
            Some(b'/') => {
                self.pos += 1;
                Go(State::SelfClosingStartTag)
            }
            Some(b'>') => {
                self.state = State::Data;
                self.emit(Html5TokenType::TagNameClose, self.pos, 1);
                self.pos += 1;
                Done(true)
            }
            Some(_) => Go(State::AttributeName),
        }
    }

    fn attribute_name(&mut self) -> Step {
        let len = self.s.len();
        let mut pos = self.pos + 1;
        while pos < len {
            let ch = self.s[pos];
            let next = if is_white(ch) {
                Some((State::AfterAttributeName, pos + 1))
            } else if ch == b'/' {
                Some((State::SelfClosingStartTag, pos + 1))
            } else if ch == b'=' {
                Some((State::BeforeAttributeValue, pos + 1))
            } else if ch == b'>' {
                Some((State::TagNameClose, pos))
            } else {
                None
            };
            if let Some((state, new_pos)) = next {
                self.emit(Html5TokenType::AttrName, self.pos, pos - self.pos);
                self.state = state;
                self.pos = new_pos;
                return Done(true);
            }
            pos += 1;
        }
        self.emit(
            Html5TokenType::AttrName,
            self.pos,
            len.saturating_sub(self.pos),
        );
        self.state = State::Eof;
        self.pos = len;
        Done(true)
    }

    fn after_attribute_name(&mut self) -> Step {
        match self.skip_white() {
            None => Done(false),
            Some(b'/') => {
                self.pos += 1;
                Go(State::SelfClosingStartTag)
            }
            Some(b'=') => {
                self.pos += 1;
                Go(State::BeforeAttributeValue)
            }
            Some(b'>') => Go(State::TagNameClose),
            Some(_) => Go(State::AttributeName),
        }
    }

    fn before_attribute_value(&mut self) -> Step {
        match self.skip_white() {
            None => {
                self.state = State::Eof;
                Done(false)
            }
            Some(b'"') => Go(State::ValueDoubleQuote),
            Some(b'\'') => Go(State::ValueSingleQuote),
            // non-standard, IE
            Some(b'`') => Go(State::ValueBackQuote),
            Some(_) => Go(State::ValueNoQuote),
        }
    }

    fn attribute_value_quote(&mut self, qchar: u8) -> Step {
        let len = self.s.len();
        // Skip the opening quote, unless we started inside the value
        // (then "'><foo" gives an empty value).
        if self.pos > 0 {
            self.pos += 1;
        }
        match find_byte(self.s, self.pos, qchar) {
            None => {
                self.emit(
                    Html5TokenType::AttrValue,
                    self.pos,
                    len.saturating_sub(self.pos),
                );
                self.state = State::Eof;
            }
            Some(idx) => {
                self.emit(Html5TokenType::AttrValue, self.pos, idx - self.pos);
                self.state = State::AfterAttributeValueQuoted;
                self.pos += self.token_len + 1;
            }
        }
        Done(true)
    }

    fn attribute_value_no_quote(&mut self) -> Step {
        let len = self.s.len();
        let mut pos = self.pos;
        while pos < len {
            let ch = self.s[pos];
            if is_white(ch) {
                self.emit(Html5TokenType::AttrValue, self.pos, pos - self.pos);
                self.pos = pos + 1;
                self.state = State::BeforeAttributeName;
                return Done(true);
            } else if ch == b'>' {
                self.emit(Html5TokenType::AttrValue, self.pos, pos - self.pos);
                self.pos = pos;
                self.state = State::TagNameClose;
                return Done(true);
            }
            pos += 1;
        }
        self.state = State::Eof;
        self.emit(
            Html5TokenType::AttrValue,
            self.pos,
            len.saturating_sub(self.pos),
        );
        Done(true)
    }

    fn after_attribute_value_quoted(&mut self) -> Step {
        if self.pos >= self.s.len() {
            return Done(false);
        }
        let ch = self.s[self.pos];
        if is_white(ch) {
            self.pos += 1;
            Go(State::BeforeAttributeName)
        } else if ch == b'/' {
            self.pos += 1;
            Go(State::SelfClosingStartTag)
        } else if ch == b'>' {
            self.emit(Html5TokenType::TagNameClose, self.pos, 1);
            self.pos += 1;
            self.state = State::Data;
            Done(true)
        } else {
            Go(State::BeforeAttributeName)
        }
    }

    fn self_closing_start_tag(&mut self) -> Step {
        if self.pos >= self.s.len() {
            return Done(false);
        }
        if self.s[self.pos] == b'>' {
            self.emit(
                Html5TokenType::TagNameSelfClose,
                self.pos.saturating_sub(1),
                2,
            );
            self.state = State::Data;
            self.pos += 1;
            Done(true)
        } else {
            Go(State::BeforeAttributeName)
        }
    }

    fn bogus_comment(&mut self) -> Step {
        let len = self.s.len();
        match find_byte(self.s, self.pos, b'>') {
            None => {
                self.emit(
                    Html5TokenType::TagComment,
                    self.pos,
                    len.saturating_sub(self.pos),
                );
                self.pos = len;
                self.state = State::Eof;
            }
            Some(idx) => {
                self.emit(Html5TokenType::TagComment, self.pos, idx - self.pos);
                self.pos = idx + 1;
                self.state = State::Data;
            }
        }
        Done(true)
    }

    /// `<% ... %>`
    fn bogus_comment2(&mut self) -> Step {
        let len = self.s.len();
        let mut pos = self.pos;
        loop {
            match find_byte(self.s, pos, b'%') {
                Some(idx) if idx + 1 < len => {
                    if self.s[idx + 1] != b'>' {
                        pos = idx + 1;
                        continue;
                    }
                    self.emit(Html5TokenType::TagComment, self.pos, idx - self.pos);
                    self.pos = idx + 2;
                    self.state = State::Data;
                    return Done(true);
                }
                _ => {
                    self.emit(
                        Html5TokenType::TagComment,
                        self.pos,
                        len.saturating_sub(self.pos),
                    );
                    self.pos = len;
                    self.state = State::Eof;
                    return Done(true);
                }
            }
        }
    }

    fn markup_declaration_open(&mut self) -> Step {
        let rest = self.s.get(self.pos..).unwrap_or(&[]);
        if rest.len() >= 7 && rest[..7].eq_ignore_ascii_case(b"DOCTYPE") {
            Go(State::Doctype)
        } else if rest.len() >= 7 && &rest[..7] == b"[CDATA[" {
            self.pos += 7;
            Go(State::Cdata)
        } else if rest.len() >= 2 && &rest[..2] == b"--" {
            self.pos += 2;
            Go(State::Comment)
        } else {
            Go(State::BogusComment)
        }
    }

    /// Comments end at the end of input, `-->` or `-!>` (NULs allowed after
    /// the first `-`).
    fn comment(&mut self) -> Step {
        let s = self.s;
        let len = s.len();
        let mut pos = self.pos;
        loop {
            let idx = match find_byte(s, pos, b'-') {
                Some(idx) if idx + 3 <= len => idx,
                _ => return self.comment_to_eof(),
            };
            let mut offset = 1;
            while idx + offset < len && s[idx + offset] == 0 {
                offset += 1;
            }
            if idx + offset == len {
                return self.comment_to_eof();
            }
            let ch = s[idx + offset];
            if ch != b'-' && ch != b'!' {
                pos = idx + 1;
                continue;
            }
            offset += 1;
            if idx + offset == len {
                return self.comment_to_eof();
            }
            if s[idx + offset] != b'>' {
                pos = idx + 1;
                continue;
            }
            offset += 1;
            self.emit(Html5TokenType::TagComment, self.pos, idx - self.pos);
            self.pos = idx + offset;
            self.state = State::Data;
            return Done(true);
        }
    }

    fn comment_to_eof(&mut self) -> Step {
        let len = self.s.len();
        self.state = State::Eof;
        self.emit(
            Html5TokenType::TagComment,
            self.pos,
            len.saturating_sub(self.pos),
        );
        Done(true)
    }

    fn cdata(&mut self) -> Step {
        let s = self.s;
        let len = s.len();
        let mut pos = self.pos;
        loop {
            match find_byte(s, pos, b']') {
                Some(idx) if idx + 3 <= len => {
                    if s[idx + 1] == b']' && s[idx + 2] == b'>' {
                        self.state = State::Data;
                        self.emit(Html5TokenType::DataText, self.pos, idx - self.pos);
                        self.pos = idx + 3;
                        return Done(true);
                    }
                    pos = idx + 1;
                }
                _ => {
                    self.state = State::Eof;
                    self.emit(
                        Html5TokenType::DataText,
                        self.pos,
                        len.saturating_sub(self.pos),
                    );
                    return Done(true);
                }
            }
        }
    }

    fn doctype(&mut self) -> Step {
        let len = self.s.len();
        self.token_start = self.pos;
        self.token_type = Html5TokenType::Doctype;
        match find_byte(self.s, self.pos, b'>') {
            None => {
                self.state = State::Eof;
                self.token_len = len.saturating_sub(self.pos);
            }
            Some(idx) => {
                self.state = State::Data;
                self.token_len = idx - self.pos;
                self.pos = idx + 1;
            }
        }
        Done(true)
    }
}

impl<'a> Iterator for Html5Tokenizer<'a> {
    type Item = Html5Token<'a>;

    fn next(&mut self) -> Option<Html5Token<'a>> {
        if self.advance() {
            Some(self.token())
        } else {
            None
        }
    }
}
