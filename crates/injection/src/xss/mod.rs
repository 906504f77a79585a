//! XSS detection: an HTML5 tokenizer plus blacklists of tags, attributes and
//! URL schemes (`libinjection_xss`).
//!
//! The input is tokenized as HTML five times: as text, and as the rest of an
//! unquoted, single-, double- and back-quoted attribute value. It is XSS when
//! any pass meets a doctype, a dangerous tag, an event handler or other
//! dangerous attribute, a `javascript:`-like URL, or a suspicious comment.

pub mod blacklist;
mod entity;
mod events;
pub mod html5;

pub use blacklist::{is_black_attr, is_black_tag, AttributeType};
pub use html5::{Html5Flags, Html5Token, Html5TokenType, Html5Tokenizer};

use blacklist::{black_attr_at, equals_ignoring_nulls, is_black_url};

/// Bytes of which every input [`is_xss`] reports contains at least one, so a
/// value without them needs no tokenizing (the rule engine's prefilter skips the
/// operator). Why: a verdict comes from a doctype, a tag name or a comment, which
/// the tokenizer reaches only through `<` (every context enters markup from the
/// data state, and the data state leaves text only at `<`), or from an attribute
/// value after a dangerous attribute name, which it reaches only through `=` (the
/// one value a context starts in has no name before it). A property test checks
/// this on generated inputs and the libinjection vectors.
pub const XSS_NEEDS_ONE_OF: [u8; 2] = [b'<', b'='];

/// Whether `input`, inserted in the context given by `flags`, is XSS
/// (`libinjection_is_xss`).
pub fn is_xss_in_context(input: &[u8], flags: Html5Flags) -> bool {
    let mut h5 = Html5Tokenizer::new(input, flags);
    let mut attr = AttributeType::None;
    while h5.advance() {
        let t = h5.token();
        if t.kind != Html5TokenType::AttrValue {
            attr = AttributeType::None;
        }
        match t.kind {
            Html5TokenType::Doctype => return true,
            Html5TokenType::TagNameOpen if is_black_tag(t.bytes) => return true,
            Html5TokenType::AttrName => attr = black_attr_at(input, t.start, t.bytes.len()),
            Html5TokenType::AttrValue => {
                match attr {
                    AttributeType::None => {}
                    AttributeType::Black | AttributeType::Style => return true,
                    AttributeType::Url => {
                        if is_black_url(input, t.start, t.bytes.len()) {
                            return true;
                        }
                    }
                    AttributeType::Indirect => {
                        // an attribute name given in a value
                        if black_attr_at(input, t.start, t.bytes.len()) != AttributeType::None {
                            return true;
                        }
                    }
                }
                attr = AttributeType::None;
            }
            Html5TokenType::TagComment => {
                let b = t.bytes;
                // IE takes "`" as a tag end
                if b.contains(&b'`') {
                    return true;
                }
                if b.len() > 3 {
                    // IE conditional comments and XML processing instructions
                    if b[0] == b'['
                        && b[1].eq_ignore_ascii_case(&b'i')
                        && b[2].eq_ignore_ascii_case(&b'f')
                    {
                        return true;
                    }
                    if b[0].eq_ignore_ascii_case(&b'x')
                        && b[1].eq_ignore_ascii_case(&b'm')
                        && b[2].eq_ignore_ascii_case(&b'l')
                    {
                        return true;
                    }
                }
                if b.len() > 5 {
                    // IE's <?import pseudo-tag, XML entity definitions
                    if equals_ignoring_nulls(b"IMPORT", &b[..6])
                        || equals_ignoring_nulls(b"ENTITY", &b[..6])
                    {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// Whether `input` is XSS in any of the five contexts (`libinjection_xss`).
pub fn is_xss(input: &[u8]) -> bool {
    [
        Html5Flags::DataState,
        Html5Flags::ValueNoQuote,
        Html5Flags::ValueSingleQuote,
        Html5Flags::ValueDoubleQuote,
        Html5Flags::ValueBackQuote,
    ]
    .into_iter()
    .any(|f| is_xss_in_context(input, f))
}
