//! JSON request bodies (`ctl:requestBodyProcessor=JSON`).
//!
//! libmodsecurity v3 parses JSON with YAJL 2 in streaming mode and turns every
//! scalar into an argument (`src/request_body_processor/json.cc` and `json.h`,
//! `JSON::addArgument`, `getCurrentKey`, the `yajl_*` callbacks). This module is a
//! small iterative (non-recursive) parser that reproduces YAJL's grammar, its
//! error messages and ModSecurity's naming.
//!
//! # Argument naming (exactly v3's)
//!
//! * The root container is named `json`; object members append `.key`; array
//!   elements append `.array_N` (N counts from 0 within that array):
//!   `{"a":{"b":1}}` → `json.a.b`; `{"a":[1,2]}` → `json.a.array_0`,
//!   `json.a.array_1`; `[{"x":1}]` → `json.array_0.x`; `[[1]]` →
//!   `json.array_0.array_0`.
//! * A scalar at the top level is named `json` (`"abc"` → `json=abc`).
//! * An empty key inside an object is named `empty-key` (`{"":1}` →
//!   `json.empty-key`).
//! * Values: strings are unescaped (`\uXXXX` → UTF-8, with YAJL's quirks: an
//!   unpaired high surrogate becomes `?` and swallows the next character; a
//!   "surrogate pair" is combined without checking the second half); numbers are
//!   the raw number text as written (`1.50e3` stays `1.50e3`); `true` and
//!   `false` are `true`/`false`; `null` is the empty string.
//! * Empty objects and arrays produce no argument. Duplicate keys produce
//!   duplicate arguments.
//!
//! # Grammar and errors (YAJL 2 defaults: no comments, UTF-8 checked, one value)
//!
//! Errors are YAJL's `yajl_get_error(…, verbose=0)` strings, **including their
//! trailing newline** (v3 copies them verbatim into REQBODY_ERROR_MSG after its
//! `JSON parsing error: ` prefix): `lexical error: <text>\n` or
//! `parse error: <text>\n`, e.g. `parse error: premature EOF\n`,
//! `parse error: trailing garbage\n`, `lexical error: invalid char in json text.\n`.
//! UTF-8 in strings is checked the way YAJL does (lead byte and continuation-byte
//! shape only; overlong forms and surrogates pass). Whitespace is space, `\t`,
//! `\n`, `\v`, `\f`, `\r`. At the end of the input YAJL feeds one extra space
//! (`yajl_do_finish`), which decides how a truncated token fails.
//!
//! Arguments produced before an error are kept in `out` (v3 adds them as the
//! parse streams, and keeps them when REQBODY_ERROR is set).
//!
//! An empty body returns `Ok(())`: YAJL would say `premature EOF` but v3 only
//! reports JSON errors when the body is not empty.
//!
//! # Limits
//!
//! * SecRequestBodyJsonDepthLimit (`depth_limit`, v3 default
//!   [`JSON_DEPTH_LIMIT_DEFAULT`]): opening a container that makes the nesting
//!   deeper than the limit cancels the parse with
//!   `parse error: client cancelled parse via callback return value\n. Parsing depth limit exceeded`.
//! * SecArgumentsLimit (`max_args`: how many more arguments the transaction
//!   accepts): one more argument cancels the parse with
//!   `parse error: client cancelled parse via callback return value\n`.
//! * The parser is iterative: the nesting depth only costs heap memory, linear in
//!   the input. Argument names repeat their parents' names, so the total output is
//!   bounded by `max_args` times the name length.

use std::io::Write as _;

use super::Arg;

/// v3's default SecRequestBodyJsonDepthLimit (`json_depth_limit_default`).
pub const JSON_DEPTH_LIMIT_DEFAULT: usize = 10000;

const CANCELLED: &str = "parse error: client cancelled parse via callback return value\n";
const DEPTH_SUFFIX: &str = ". Parsing depth limit exceeded";

/// Parses a JSON body and appends v3-named arguments to `out`.
///
/// `depth_limit` is SecRequestBodyJsonDepthLimit; `max_args` is how many
/// arguments may still be added (SecArgumentsLimit minus the arguments already
/// present; `usize::MAX` when unset). Returns the YAJL-style error message on
/// failure (arguments added before the error stay in `out`). Never panics;
/// linear time; no recursion.
pub fn parse_json(
    body: &[u8],
    depth_limit: usize,
    max_args: usize,
    out: &mut Vec<Arg>,
) -> Result<(), String> {
    for_each_json_arg(body, depth_limit, max_args, |name, value| {
        out.push(Arg::new(name, value));
    })
}

/// [`parse_json`], handing each argument to `f` (name, value) as it is parsed
/// instead of collecting them: the name is built in one reused buffer, and a
/// value without escapes is a slice of `body` (no allocation per argument).
pub fn for_each_json_arg(
    body: &[u8],
    depth_limit: usize,
    max_args: usize,
    f: impl FnMut(&[u8], &[u8]),
) -> Result<(), String> {
    if body.is_empty() {
        return Ok(());
    }
    let mut p = JsonParser {
        lexer: Lexer {
            input: body,
            pos: 0,
        },
        states: vec![State::Start],
        frames: Vec::new(),
        prefix: Vec::new(),
        current_key: Vec::new(),
        name: Vec::new(),
        unescaped: Vec::new(),
        depth_limit,
        max_args,
        added: 0,
        name_bytes: 0,
        name_budget: body.len().saturating_mul(16).saturating_add(64 << 10),
        sink: f,
    };
    p.run()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    ParseComplete,
    MapStart,
    MapNeedKey,
    MapSep,
    MapNeedVal,
    MapGotVal,
    ArrayStart,
    ArrayNeedVal,
    ArrayGotVal,
}

#[derive(Debug)]
enum Tok {
    LeftBrace,
    RightBrace,
    LeftBracket,
    RightBracket,
    Comma,
    Colon,
    /// A string: the raw bytes between the quotes, and whether it has escapes.
    Str(usize, usize, bool),
    Number(usize, usize),
    True,
    False,
    Null,
    /// A lexical error with YAJL's text.
    Error(&'static str),
    /// The input ended inside a token.
    Incomplete,
    /// Only whitespace was left.
    End,
}

/// YAJL's lexer over `input` followed by one virtual space.
struct Lexer<'a> {
    input: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    /// The byte at `i`, where `input.len()` is the space YAJL feeds at the end.
    fn get(&self, i: usize) -> Option<u8> {
        match i.cmp(&self.input.len()) {
            std::cmp::Ordering::Less => self.input.get(i).copied(),
            std::cmp::Ordering::Equal => Some(b' '),
            std::cmp::Ordering::Greater => None,
        }
    }

    fn next(&mut self) -> Tok {
        loop {
            let Some(c) = self.get(self.pos) else {
                return Tok::End;
            };
            self.pos += 1;
            return match c {
                b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' => continue,
                b'{' => Tok::LeftBrace,
                b'}' => Tok::RightBrace,
                b'[' => Tok::LeftBracket,
                b']' => Tok::RightBracket,
                b',' => Tok::Comma,
                b':' => Tok::Colon,
                b't' => self.literal(b"rue", Tok::True),
                b'f' => self.literal(b"alse", Tok::False),
                b'n' => self.literal(b"ull", Tok::Null),
                b'"' => self.string(),
                b'-' | b'0'..=b'9' => self.number(),
                b'/' => {
                    Tok::Error("probable comment found in input text, comments are not enabled.")
                }
                _ => Tok::Error("invalid char in json text."),
            };
        }
    }

    fn literal(&mut self, rest: &[u8], tok: Tok) -> Tok {
        for &want in rest {
            match self.get(self.pos) {
                None => return Tok::Incomplete,
                Some(c) => {
                    self.pos += 1;
                    if c != want {
                        return Tok::Error("invalid string in json text.");
                    }
                }
            }
        }
        tok
    }

    fn string(&mut self) -> Tok {
        let start = self.pos;
        let mut escapes = false;
        loop {
            // The run of bytes that need no test but the loop's (printable
            // ASCII other than `"` and `\`), passed over at once.
            let rest = self.input.get(self.pos..).unwrap_or_default();
            self.pos += rest
                .iter()
                .position(|&c| c == b'"' || c == b'\\' || !(0x20..0x80).contains(&c))
                .unwrap_or(rest.len());
            let Some(c) = self.get(self.pos) else {
                return Tok::Incomplete;
            };
            self.pos += 1;
            if c == b'"' {
                return Tok::Str(start, self.pos - 1, escapes);
            } else if c == b'\\' {
                escapes = true;
                let Some(e) = self.get(self.pos) else {
                    return Tok::Incomplete;
                };
                self.pos += 1;
                if e == b'u' {
                    for _ in 0..4 {
                        let Some(h) = self.get(self.pos) else {
                            return Tok::Incomplete;
                        };
                        self.pos += 1;
                        if !h.is_ascii_hexdigit() {
                            return Tok::Error(
                                "invalid (non-hex) character occurs after '\\u' inside string.",
                            );
                        }
                    }
                } else if !matches!(e, b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') {
                    return Tok::Error(
                        "inside a string, '\\' occurs before a character which it may not.",
                    );
                }
            } else if c < 0x20 {
                return Tok::Error("invalid character inside string.");
            } else if c >= 0x80 {
                let extra = if c >> 5 == 0x06 {
                    1
                } else if c >> 4 == 0x0e {
                    2
                } else if c >> 3 == 0x1e {
                    3
                } else {
                    return Tok::Error("invalid bytes in UTF8 string.");
                };
                for _ in 0..extra {
                    let Some(n) = self.get(self.pos) else {
                        return Tok::Incomplete;
                    };
                    self.pos += 1;
                    if n >> 6 != 0x02 {
                        return Tok::Error("invalid bytes in UTF8 string.");
                    }
                }
            }
        }
    }

    fn number(&mut self) -> Tok {
        let start = self.pos - 1;
        let mut c = self.get(start);
        let mut i = start;
        // Advances and returns the next byte (None past the virtual space).
        macro_rules! read {
            () => {{
                i += 1;
                c = self.get(i);
            }};
        }
        if c == Some(b'-') {
            read!();
        }
        match c {
            Some(b'0') => read!(),
            Some(b'1'..=b'9') => {
                while c.is_some_and(|d| d.is_ascii_digit()) {
                    read!();
                }
            }
            None => return Tok::Incomplete,
            _ => {
                self.pos = i;
                return Tok::Error("malformed number, a digit is required after the minus sign.");
            }
        }
        if c == Some(b'.') {
            read!();
            let mut digits = 0;
            while c.is_some_and(|d| d.is_ascii_digit()) {
                digits += 1;
                read!();
            }
            if c.is_none() {
                return Tok::Incomplete;
            }
            if digits == 0 {
                self.pos = i;
                return Tok::Error(
                    "malformed number, a digit is required after the decimal point.",
                );
            }
        }
        if c == Some(b'e') || c == Some(b'E') {
            read!();
            if c == Some(b'+') || c == Some(b'-') {
                read!();
            }
            if c.is_some_and(|d| d.is_ascii_digit()) {
                while c.is_some_and(|d| d.is_ascii_digit()) {
                    read!();
                }
            } else if c.is_none() {
                return Tok::Incomplete;
            } else {
                self.pos = i;
                return Tok::Error("malformed number, a digit is required after the exponent.");
            }
        }
        if c.is_none() {
            return Tok::Incomplete;
        }
        self.pos = i;
        Tok::Number(start, i.min(self.input.len()))
    }
}

/// One open container, as in v3's `m_containers`.
struct Frame {
    is_array: bool,
    counter: usize,
    /// Length of the name prefix before this container's segment.
    prefix_start: usize,
    /// Length of the name prefix up to the end of this container's name.
    name_end: usize,
}

/// An argument's value as the lexer gave it.
#[derive(Clone, Copy)]
enum Value {
    /// `input[start..end]` as it is (a string without escapes, a number).
    Raw(usize, usize),
    /// `input[start..end]`, a string with escapes, to decode.
    Escaped(usize, usize),
    /// A literal's value.
    Fixed(&'static [u8]),
}

struct JsonParser<'a, F> {
    lexer: Lexer<'a>,
    states: Vec<State>,
    frames: Vec<Frame>,
    /// Concatenation of every open container's `name` + (`.` | `.array_N`).
    prefix: Vec<u8>,
    /// The last object key read (decoded), until a value or container takes it.
    current_key: Vec<u8>,
    /// The argument name being built (reused).
    name: Vec<u8>,
    /// A decoded string value (reused).
    unescaped: Vec<u8>,
    depth_limit: usize,
    max_args: usize,
    added: usize,
    /// Bytes of argument names produced so far, and the most allowed: names repeat
    /// their parents' keys, so they are bounded relative to the body (16 times it
    /// plus 64 KiB), or the body fails.
    name_bytes: usize,
    name_budget: usize,
    /// Where each argument goes.
    sink: F,
}

/// A callback asked YAJL to stop (v3 returned 0 from a callback).
enum Cancel {
    Depth,
    Args,
    /// An argument name longer than [`MAX_NAME_LEN`].
    NameTooLong,
}

/// Longest argument name produced. v3 has no limit, but names repeat their
/// parents' keys, so one long key would be copied into every leaf name (found by
/// fuzzing: output quadratic in the body). A longer name fails the body instead.
pub const MAX_NAME_LEN: usize = 8192;

fn cancelled(c: Cancel) -> String {
    match c {
        Cancel::Depth => format!("{CANCELLED}{DEPTH_SUFFIX}"),
        Cancel::Args => CANCELLED.to_string(),
        Cancel::NameTooLong => {
            format!("{CANCELLED}. Argument name longer than {MAX_NAME_LEN} bytes")
        }
    }
}

fn parse_error(msg: &str) -> String {
    format!("parse error: {msg}\n")
}

fn lexical_error(msg: &str) -> String {
    format!("lexical error: {msg}\n")
}

impl<F: FnMut(&[u8], &[u8])> JsonParser<'_, F> {
    fn run(&mut self) -> Result<(), String> {
        loop {
            let Some(&state) = self.states.last() else {
                return Ok(());
            };
            match state {
                State::ParseComplete => {
                    return match self.lexer.next() {
                        Tok::End | Tok::Incomplete => Ok(()),
                        _ => Err(parse_error("trailing garbage")),
                    };
                }
                State::Start | State::MapNeedVal | State::ArrayNeedVal | State::ArrayStart => {
                    let tok = self.lexer.next();
                    self.value_state(state, tok)?;
                }
                State::MapStart | State::MapNeedKey => match self.lexer.next() {
                    Tok::End | Tok::Incomplete => return Err(parse_error("premature EOF")),
                    Tok::Error(e) => return Err(lexical_error(e)),
                    Tok::Str(s, e, esc) => {
                        let mut key = std::mem::take(&mut self.current_key);
                        key.clear();
                        self.string_into(s, e, esc, &mut key);
                        self.current_key = key;
                        self.set_state(State::MapSep);
                    }
                    Tok::RightBrace if state == State::MapStart => self.end_container(),
                    _ => return Err(parse_error("invalid object key (must be a string)")),
                },
                State::MapSep => match self.lexer.next() {
                    Tok::End | Tok::Incomplete => return Err(parse_error("premature EOF")),
                    Tok::Error(e) => return Err(lexical_error(e)),
                    Tok::Colon => self.set_state(State::MapNeedVal),
                    _ => {
                        return Err(parse_error(
                            "object key and value must be separated by a colon (':')",
                        ))
                    }
                },
                State::MapGotVal => match self.lexer.next() {
                    Tok::End | Tok::Incomplete => return Err(parse_error("premature EOF")),
                    Tok::Error(e) => return Err(lexical_error(e)),
                    Tok::RightBrace => self.end_container(),
                    Tok::Comma => self.set_state(State::MapNeedKey),
                    _ => {
                        return Err(parse_error(
                            "after key and value, inside map, I expect ',' or '}'",
                        ))
                    }
                },
                State::ArrayGotVal => match self.lexer.next() {
                    Tok::End | Tok::Incomplete => return Err(parse_error("premature EOF")),
                    Tok::Error(e) => return Err(lexical_error(e)),
                    Tok::RightBracket => self.end_container(),
                    Tok::Comma => self.set_state(State::ArrayNeedVal),
                    _ => return Err(parse_error("after array element, I expect ',' or ']'")),
                },
            }
        }
    }

    fn set_state(&mut self, s: State) {
        if let Some(top) = self.states.last_mut() {
            *top = s;
        }
    }

    /// The state after a value was read in `state`.
    fn after_value(&mut self, state: State) {
        let next = match state {
            State::Start => State::ParseComplete,
            State::MapNeedVal => State::MapGotVal,
            _ => State::ArrayGotVal,
        };
        self.set_state(next);
    }

    fn value_state(&mut self, state: State, tok: Tok) -> Result<(), String> {
        match tok {
            Tok::End | Tok::Incomplete => Err(parse_error("premature EOF")),
            Tok::Error(e) => Err(lexical_error(e)),
            Tok::Str(s, e, esc) => {
                let v = if esc {
                    Value::Escaped(s, e)
                } else {
                    Value::Raw(s, e)
                };
                self.add_argument(v).map_err(cancelled)?;
                self.after_value(state);
                Ok(())
            }
            Tok::Number(s, e) => {
                self.add_argument(Value::Raw(s, e)).map_err(cancelled)?;
                self.after_value(state);
                Ok(())
            }
            Tok::True => self.scalar(state, b"true"),
            Tok::False => self.scalar(state, b"false"),
            Tok::Null => self.scalar(state, b""),
            Tok::LeftBrace | Tok::LeftBracket => {
                let is_array = matches!(tok, Tok::LeftBracket);
                self.start_container(is_array).map_err(cancelled)?;
                self.after_value(state);
                self.states.push(if is_array {
                    State::ArrayStart
                } else {
                    State::MapStart
                });
                Ok(())
            }
            Tok::RightBracket if state == State::ArrayStart => {
                self.end_container();
                Ok(())
            }
            _ => Err(parse_error("unallowed token at this point in JSON text")),
        }
    }

    fn scalar(&mut self, state: State, v: &'static [u8]) -> Result<(), String> {
        self.add_argument(Value::Fixed(v)).map_err(cancelled)?;
        self.after_value(state);
        Ok(())
    }

    /// Appends the string `input[s..e]` to `out`, decoded when it has escapes.
    fn string_into(&self, s: usize, e: usize, escapes: bool, out: &mut Vec<u8>) {
        let raw = self.lexer.input.get(s..e).unwrap_or(&[]);
        if escapes {
            yajl_string_decode_into(raw, out);
        } else {
            out.extend_from_slice(raw);
        }
    }

    /// Appends v3's `getCurrentKey()` to `out` (a buffer other than
    /// `current_key`), which takes the key.
    fn current_key_into(&mut self, out: &mut Vec<u8>) {
        let Some(top) = self.frames.last() else {
            out.extend_from_slice(b"json");
            return;
        };
        if self.current_key.is_empty() {
            if !top.is_array {
                out.extend_from_slice(b"empty-key");
            }
            return;
        }
        out.extend_from_slice(&self.current_key);
        self.current_key.clear();
    }

    /// v3's `JSON::addArgument`.
    fn add_argument(&mut self, value: Value) -> Result<(), Cancel> {
        if self.prefix.len() + self.current_key.len() > MAX_NAME_LEN {
            return Err(Cancel::NameTooLong);
        }
        self.name_bytes += self.prefix.len() + self.current_key.len();
        if self.name_bytes > self.name_budget {
            return Err(Cancel::NameTooLong);
        }
        let mut name = std::mem::take(&mut self.name);
        name.clear();
        name.extend_from_slice(&self.prefix);
        let top_is_array = self.frames.last().map(|f| f.is_array);
        if top_is_array == Some(true) {
            self.bump_array_counter();
        } else {
            self.current_key_into(&mut name);
        }
        if self.added >= self.max_args {
            self.name = name;
            return Err(Cancel::Args);
        }
        self.added += 1;
        let input = self.lexer.input;
        match value {
            Value::Raw(s, e) => (self.sink)(&name, input.get(s..e).unwrap_or(&[])),
            Value::Escaped(s, e) => {
                let mut v = std::mem::take(&mut self.unescaped);
                v.clear();
                self.string_into(s, e, true, &mut v);
                (self.sink)(&name, &v);
                self.unescaped = v;
            }
            Value::Fixed(v) => (self.sink)(&name, v),
        }
        self.name = name;
        Ok(())
    }

    /// Increments the innermost array's element counter and rewrites its
    /// `.array_N` segment (always the end of the prefix).
    fn bump_array_counter(&mut self) {
        if let Some(top) = self.frames.last_mut() {
            if top.is_array {
                top.counter += 1;
                self.prefix.truncate(top.name_end);
                // (Written in place: no string made first. Writing to a `Vec`
                // cannot fail.)
                let _ = write!(self.prefix, ".array_{}", top.counter);
            }
        }
    }

    fn start_container(&mut self, is_array: bool) -> Result<(), Cancel> {
        let prefix_start = self.prefix.len();
        let mut prefix = std::mem::take(&mut self.prefix);
        self.current_key_into(&mut prefix);
        self.prefix = prefix;
        let name_end = self.prefix.len();
        if is_array {
            self.prefix.extend_from_slice(b".array_0");
        } else {
            self.prefix.push(b'.');
        }
        self.frames.push(Frame {
            is_array,
            counter: 0,
            prefix_start,
            name_end,
        });
        if self.frames.len() > self.depth_limit {
            return Err(Cancel::Depth);
        }
        Ok(())
    }

    fn end_container(&mut self) {
        if let Some(frame) = self.frames.pop() {
            self.prefix.truncate(frame.prefix_start);
        }
        self.bump_array_counter();
        self.states.pop();
    }
}

/// YAJL's `yajl_string_decode`, quirks included, appended to `out`.
fn yajl_string_decode_into(s: &[u8], out: &mut Vec<u8>) {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let hex4 = |i: usize| -> u32 {
        (0..4).fold(0u32, |acc, k| {
            let c = at(i + k);
            let d = (c as char).to_digit(16).unwrap_or(0);
            (acc << 4) | d
        })
    };
    out.reserve(s.len());
    let mut beg = 0usize;
    let mut end = 0usize;
    while end < s.len() {
        if s[end] != b'\\' {
            end += 1;
            continue;
        }
        out.extend_from_slice(s.get(beg..end).unwrap_or(&[]));
        end += 1;
        let mut utf8 = [0u8; 4];
        let unescaped: &[u8] = match at(end) {
            b'r' => b"\r",
            b'n' => b"\n",
            b'\\' => b"\\",
            b'/' => b"/",
            b'"' => b"\"",
            b'f' => b"\x0c",
            b'b' => b"\x08",
            b't' => b"\t",
            b'u' => {
                let mut cp = hex4(end + 1);
                end += 4;
                let mut unpaired = false;
                if cp & 0xFC00 == 0xD800 {
                    end += 1;
                    if at(end) == b'\\' && at(end + 1) == b'u' {
                        let surrogate = hex4(end + 2);
                        cp = ((cp & 0x3F) << 10)
                            | ((((cp >> 6) & 0xF) + 1) << 16)
                            | (surrogate & 0x3FF);
                        end += 5;
                    } else {
                        unpaired = true;
                    }
                }
                if unpaired {
                    b"?"
                } else if cp == 0 {
                    b"\0"
                } else {
                    let n = utf32_to_utf8(cp, &mut utf8);
                    &utf8[..n]
                }
            }
            // The lexer only lets the escapes above through.
            _ => b"",
        };
        out.extend_from_slice(unescaped);
        end += 1;
        beg = end;
    }
    out.extend_from_slice(s.get(beg..end.min(s.len())).unwrap_or(&[]));
}

/// YAJL's `Utf32toUtf8`; returns the number of bytes written.
fn utf32_to_utf8(cp: u32, buf: &mut [u8; 4]) -> usize {
    if cp < 0x80 {
        buf[0] = cp as u8;
        1
    } else if cp < 0x800 {
        buf[0] = 0xC0 | (cp >> 6) as u8;
        buf[1] = 0x80 | (cp & 0x3F) as u8;
        2
    } else if cp < 0x10000 {
        buf[0] = 0xE0 | (cp >> 12) as u8;
        buf[1] = 0x80 | ((cp >> 6) & 0x3F) as u8;
        buf[2] = 0x80 | (cp & 0x3F) as u8;
        3
    } else if cp < 0x200000 {
        buf[0] = 0xF0 | (cp >> 18) as u8;
        buf[1] = 0x80 | ((cp >> 12) & 0x3F) as u8;
        buf[2] = 0x80 | ((cp >> 6) & 0x3F) as u8;
        buf[3] = 0x80 | (cp & 0x3F) as u8;
        4
    } else {
        buf[0] = b'?';
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tokens() -> impl Strategy<Value = Vec<u8>> {
        let tok = prop_oneof![
            Just(b"{".to_vec()),
            Just(b"}".to_vec()),
            Just(b"[".to_vec()),
            Just(b"]".to_vec()),
            Just(b",".to_vec()),
            Just(b":".to_vec()),
            Just(b"\"k\"".to_vec()),
            Just(b"\"\\ud800\\u".to_vec()),
            Just(b"-1.5e3".to_vec()),
            Just(b"true".to_vec()),
            Just(b"null".to_vec()),
            Just(b" ".to_vec()),
            proptest::collection::vec(any::<u8>(), 0..4),
        ];
        proptest::collection::vec(tok, 0..64).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn never_panics_on_bytes(input in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut out = Vec::new();
            let _ = parse_json(&input, 8, 100, &mut out);
            prop_assert!(out.len() <= 100);
        }

        #[test]
        fn never_panics_on_tokens(input in tokens(), depth in 0usize..6) {
            let mut out = Vec::new();
            let _ = parse_json(&input, depth, usize::MAX, &mut out);
            for a in &out {
                prop_assert!(a.name.starts_with(b"json"));
            }
        }
    }

    #[test]
    fn deep_nesting_is_iterative() {
        let mut body = vec![b'['; 200_000];
        body.extend(vec![b']'; 200_000]);
        let mut out = Vec::new();
        assert_eq!(parse_json(&body, usize::MAX, usize::MAX, &mut out), Ok(()));
        assert!(out.is_empty());
        let err = parse_json(&body, 512, usize::MAX, &mut out);
        assert!(err.is_err_and(|e| e.ends_with(DEPTH_SUFFIX)));
    }
}
