//! Transformations (`t:` actions) with libmodsecurity (ModSecurity v3) semantics.
//!
//! # Design
//!
//! * **One file per transformation.** Each submodule (`url_decode.rs`,
//!   `html_entity_decode.rs`, ...) exposes a single function
//!   `pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool` that
//!   reproduces, byte for byte, what libmodsecurity v3 does with the same value,
//!   including its documented quirks (each file's docs list them). Inputs are
//!   arbitrary bytes, never assumed to be UTF-8; no function panics, none is
//!   quadratic, and every output is bounded by a small multiple of the input
//!   (at most 4x plus a constant; `length`, `md5` and `sha1` are constant-sized).
//!
//! * **One names table.** [`Transformation::NAMES`] maps every SecLang spelling,
//!   including the `normalize*` / `normalise*` aliases, to its [`Transformation`]
//!   variant; [`Transformation::from_name`] (case-insensitive) and
//!   [`Transformation::name`] (canonical spelling) are both derived from it, and a
//!   test checks it against [`seclang::names::TRANSFORMATIONS`], the project's one
//!   list of SecLang names.
//!
//! * **A Cow-like contract.** [`Transformation::apply`] returns `false`, leaving
//!   `out` empty, whenever the result would equal the input, so that the caller
//!   keeps borrowing the input instead of copying it; otherwise it writes the
//!   result into `out` (cleared first) and returns `true`. Returning `true` is a
//!   promise that the bytes really differ.
//!
//! * **Memo-friendly.** A transformation is a pure function of its input bytes
//!   (no transaction state, no configuration), so the engine can memoise results
//!   per transaction keyed by (value, transformation chain). Because most values
//!   are unchanged by most transformations, every implementation starts with a
//!   fast scan for the bytes that could trigger a change (`memchr` where a single
//!   byte or two are enough) and returns `false` without writing anything when
//!   there is none. Reusing one `out` buffer across calls avoids allocations.
//!
//! # Choices where ModSecurity versions differ
//!
//! The reference is libmodsecurity v3 as rewritten in 3.0.12+ (transformations
//! working on `std::string`). Where the behaviour is a matter of choice, the
//! module docs of the transformation say what Palisade does and why; in short:
//! `base64Decode` decodes the longest valid prefix (it stops at the first byte
//! outside the Base64 alphabet, `=` included), `htmlEntityDecode` knows the
//! five named entities `quot amp lt gt nbsp` (matched case-insensitively on the
//! whole name) and numeric entities of any length (the value is reduced to its
//! low byte, saturating as `strtol` does), and `urlDecodeUni` maps `%uXXXX` to its
//! low byte (no `SecUnicodeMapFile` support).

mod util;

mod base64_decode;
mod base64_decode_ext;
mod base64_encode;
mod cmd_line;
mod compress_whitespace;
mod css_decode;
mod escape_seq_decode;
mod hex_decode;
mod hex_encode;
mod html_entity_decode;
mod js_decode;
mod length;
mod lowercase;
mod md5;
mod none;
mod normalise_path;
mod normalise_path_win;
mod parity_even_7bit;
mod parity_odd_7bit;
mod parity_zero_7bit;
mod remove_comments;
mod remove_comments_char;
mod remove_nulls;
mod remove_whitespace;
mod replace_comments;
mod replace_nulls;
mod sha1;
mod sql_hex_decode;
mod trim;
mod trim_left;
mod trim_right;
mod uppercase;
mod url_decode;
mod url_decode_uni;
mod url_encode;
mod utf8_to_unicode;

pub mod triggers;

#[cfg(test)]
mod tests;

/// A SecLang transformation function (`t:NAME`).
///
/// Each variant is one transformation of the ModSecurity v3 reference manual;
/// the spelling aliases `normalizePath` / `normalizePathWin` resolve to
/// [`Transformation::NormalisePath`] / [`Transformation::NormalisePathWin`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Transformation {
    /// `none`: the identity; in a rule it also clears the inherited transformations.
    None,
    /// `lowercase`: ASCII `A-Z` to `a-z`.
    Lowercase,
    /// `uppercase`: ASCII `a-z` to `A-Z`.
    Uppercase,
    /// `urlDecode`: `%HH` and `+` decoding; invalid escapes are kept as-is.
    UrlDecode,
    /// `urlDecodeUni`: `urlDecode` plus IIS `%uHHHH` (low byte, full-width ASCII mapped).
    UrlDecodeUni,
    /// `urlEncode`: `%hh`-encodes every byte but `*`, `0-9`, `A-Z`, `a-z`; space becomes `+`.
    UrlEncode,
    /// `htmlEntityDecode`: `&#DDD;`, `&#xHH;` and `&quot; &amp; &lt; &gt; &nbsp;`.
    HtmlEntityDecode,
    /// `jsDecode`: JavaScript escapes `\uHHHH`, `\xHH`, `\OOO` and `\C`.
    JsDecode,
    /// `cssDecode`: CSS 2 escapes (`\` followed by 1-6 hex digits, or a character).
    CssDecode,
    /// `escapeSeqDecode`: ANSI C escapes (`\n`, `\xHH`, `\OOO`, ...).
    EscapeSeqDecode,
    /// `hexDecode`: pairs of hex digits to bytes.
    HexDecode,
    /// `hexEncode`: bytes to lowercase hex digit pairs.
    HexEncode,
    /// `base64Decode`: Base64 decoding, stopping at the first invalid byte.
    Base64Decode,
    /// `base64DecodeExt`: forgiving Base64 decoding that skips invalid bytes.
    Base64DecodeExt,
    /// `base64Encode`: Base64 encoding with `=` padding.
    Base64Encode,
    /// `sqlHexDecode`: decodes SQL hex literals `0xHHHH...`.
    SqlHexDecode,
    /// `cmdLine`: command-line normalisation (Windows and Unix evasion tricks).
    CmdLine,
    /// `compressWhitespace`: runs of whitespace become one space.
    CompressWhitespace,
    /// `removeWhitespace`: removes whitespace (and the bytes of UTF-8 NBSP).
    RemoveWhitespace,
    /// `removeNulls`: removes NUL bytes.
    RemoveNulls,
    /// `replaceNulls`: replaces NUL bytes with spaces.
    ReplaceNulls,
    /// `removeComments`: removes `/* */` and `<!-- -->` comments; cuts at `--` and `#`.
    RemoveComments,
    /// `removeCommentsChar`: removes the comment markers `/*`, `*/`, `<!--`, `-->`, `--`, `#`.
    RemoveCommentsChar,
    /// `replaceComments`: replaces each C comment `/* ... */` with one space.
    ReplaceComments,
    /// `normalisePath` (alias `normalizePath`): removes `./`, resolves `../`, collapses `//`.
    NormalisePath,
    /// `normalisePathWin` (alias `normalizePathWin`): `normalisePath` after `\` becomes `/`.
    NormalisePathWin,
    /// `utf8toUnicode`: multi-byte UTF-8 sequences to `%uHHHH`.
    Utf8ToUnicode,
    /// `trim`: removes leading and trailing whitespace.
    Trim,
    /// `trimLeft`: removes leading whitespace.
    TrimLeft,
    /// `trimRight`: removes trailing whitespace.
    TrimRight,
    /// `length`: the input's length in bytes, in decimal.
    Length,
    /// `md5`: the raw (binary, 16 bytes) MD5 digest.
    Md5,
    /// `sha1`: the raw (binary, 20 bytes) SHA-1 digest.
    Sha1,
    /// `parityEven7bit`: sets bit 7 of each byte for even parity.
    ParityEven7bit,
    /// `parityOdd7bit`: sets bit 7 of each byte for odd parity.
    ParityOdd7bit,
    /// `parityZero7bit`: clears bit 7 of each byte.
    ParityZero7bit,
}

/// The longest `base64Decode` result of `input`: three bytes per four of its
/// valid prefix (see `base64_decode`).
pub fn base64_decode_max_len(input: &[u8]) -> usize {
    base64_decode::max_len(input)
}

/// Whether [`base64_decode_max_len`] of `input` is `n` or more, reading only
/// the characters that takes.
pub fn base64_decode_reaches(input: &[u8], n: usize) -> bool {
    base64_decode::reaches(input, n)
}

impl Transformation {
    /// Every transformation, once, in the order of the reference manual's list.
    pub const ALL: &'static [Transformation] = &[
        Self::None,
        Self::Lowercase,
        Self::Uppercase,
        Self::UrlDecode,
        Self::UrlDecodeUni,
        Self::UrlEncode,
        Self::HtmlEntityDecode,
        Self::JsDecode,
        Self::CssDecode,
        Self::EscapeSeqDecode,
        Self::HexDecode,
        Self::HexEncode,
        Self::Base64Decode,
        Self::Base64DecodeExt,
        Self::Base64Encode,
        Self::SqlHexDecode,
        Self::CmdLine,
        Self::CompressWhitespace,
        Self::RemoveWhitespace,
        Self::RemoveNulls,
        Self::ReplaceNulls,
        Self::RemoveComments,
        Self::RemoveCommentsChar,
        Self::ReplaceComments,
        Self::NormalisePath,
        Self::NormalisePathWin,
        Self::Utf8ToUnicode,
        Self::Trim,
        Self::TrimLeft,
        Self::TrimRight,
        Self::Length,
        Self::Md5,
        Self::Sha1,
        Self::ParityEven7bit,
        Self::ParityOdd7bit,
        Self::ParityZero7bit,
    ];

    /// The names table: every accepted spelling and its transformation. The first
    /// entry for a variant is its canonical name; aliases follow it.
    pub const NAMES: &'static [(&'static str, Transformation)] = &[
        ("none", Self::None),
        ("lowercase", Self::Lowercase),
        ("uppercase", Self::Uppercase),
        ("urlDecode", Self::UrlDecode),
        ("urlDecodeUni", Self::UrlDecodeUni),
        ("urlEncode", Self::UrlEncode),
        ("htmlEntityDecode", Self::HtmlEntityDecode),
        ("jsDecode", Self::JsDecode),
        ("cssDecode", Self::CssDecode),
        ("escapeSeqDecode", Self::EscapeSeqDecode),
        ("hexDecode", Self::HexDecode),
        ("hexEncode", Self::HexEncode),
        ("base64Decode", Self::Base64Decode),
        ("base64DecodeExt", Self::Base64DecodeExt),
        ("base64Encode", Self::Base64Encode),
        ("sqlHexDecode", Self::SqlHexDecode),
        ("cmdLine", Self::CmdLine),
        ("compressWhitespace", Self::CompressWhitespace),
        ("removeWhitespace", Self::RemoveWhitespace),
        ("removeNulls", Self::RemoveNulls),
        ("replaceNulls", Self::ReplaceNulls),
        ("removeComments", Self::RemoveComments),
        ("removeCommentsChar", Self::RemoveCommentsChar),
        ("replaceComments", Self::ReplaceComments),
        ("normalisePath", Self::NormalisePath),
        ("normalizePath", Self::NormalisePath),
        ("normalisePathWin", Self::NormalisePathWin),
        ("normalizePathWin", Self::NormalisePathWin),
        ("utf8toUnicode", Self::Utf8ToUnicode),
        ("trim", Self::Trim),
        ("trimLeft", Self::TrimLeft),
        ("trimRight", Self::TrimRight),
        ("length", Self::Length),
        ("md5", Self::Md5),
        ("sha1", Self::Sha1),
        ("parityEven7bit", Self::ParityEven7bit),
        ("parityOdd7bit", Self::ParityOdd7bit),
        ("parityZero7bit", Self::ParityZero7bit),
    ];

    /// Looks a transformation up by its SecLang name (without the `t:` prefix).
    ///
    /// Matching is ASCII case-insensitive (ModSecurity itself is case-sensitive;
    /// Palisade is lenient and reports the canonical spelling through
    /// [`Transformation::name`]). Both `normalise*` and `normalize*` are accepted.
    pub fn from_name(name: &str) -> Option<Transformation> {
        Self::NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|&(_, t)| t)
    }

    /// When the transformation only deletes bytes (every occurrence of each) or
    /// changes ASCII case: the bytes it deletes (none for a change of case). A
    /// chain of such steps gives the value less those bytes, up to case, which
    /// the prefilter can scan without building it.
    pub fn deleted_bytes(self) -> Option<triggers::ByteMask> {
        match self {
            t if t.changes_only_case() => Some([0; 4]),
            Self::RemoveNulls => Some(triggers::presence(&[0])),
            Self::RemoveWhitespace => Some(remove_whitespace::removed()),
            _ => None,
        }
    }

    /// Whether the output is never longer than the input (decoders, deletions,
    /// changes of case; a property test checks each). A chain of such steps
    /// bounds its result's length by its input's.
    pub fn never_lengthens(self) -> bool {
        matches!(
            self,
            Self::None
                | Self::Lowercase
                | Self::Uppercase
                | Self::UrlDecode
                | Self::UrlDecodeUni
                | Self::HtmlEntityDecode
                | Self::JsDecode
                | Self::CssDecode
                | Self::EscapeSeqDecode
                | Self::HexDecode
                | Self::Base64Decode
                | Self::Base64DecodeExt
                | Self::SqlHexDecode
                | Self::CmdLine
                | Self::CompressWhitespace
                | Self::RemoveWhitespace
                | Self::RemoveNulls
                | Self::ReplaceNulls
                | Self::RemoveComments
                | Self::RemoveCommentsChar
                | Self::ReplaceComments
                | Self::NormalisePath
                | Self::NormalisePathWin
                | Self::Trim
                | Self::TrimLeft
                | Self::TrimRight
                | Self::ParityEven7bit
                | Self::ParityOdd7bit
                | Self::ParityZero7bit
        )
    }

    /// The canonical spelling of the transformation's name, as in the reference
    /// manual (`normalisePath`, not `normalizePath`).
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Lowercase => "lowercase",
            Self::Uppercase => "uppercase",
            Self::UrlDecode => "urlDecode",
            Self::UrlDecodeUni => "urlDecodeUni",
            Self::UrlEncode => "urlEncode",
            Self::HtmlEntityDecode => "htmlEntityDecode",
            Self::JsDecode => "jsDecode",
            Self::CssDecode => "cssDecode",
            Self::EscapeSeqDecode => "escapeSeqDecode",
            Self::HexDecode => "hexDecode",
            Self::HexEncode => "hexEncode",
            Self::Base64Decode => "base64Decode",
            Self::Base64DecodeExt => "base64DecodeExt",
            Self::Base64Encode => "base64Encode",
            Self::SqlHexDecode => "sqlHexDecode",
            Self::CmdLine => "cmdLine",
            Self::CompressWhitespace => "compressWhitespace",
            Self::RemoveWhitespace => "removeWhitespace",
            Self::RemoveNulls => "removeNulls",
            Self::ReplaceNulls => "replaceNulls",
            Self::RemoveComments => "removeComments",
            Self::RemoveCommentsChar => "removeCommentsChar",
            Self::ReplaceComments => "replaceComments",
            Self::NormalisePath => "normalisePath",
            Self::NormalisePathWin => "normalisePathWin",
            Self::Utf8ToUnicode => "utf8toUnicode",
            Self::Trim => "trim",
            Self::TrimLeft => "trimLeft",
            Self::TrimRight => "trimRight",
            Self::Length => "length",
            Self::Md5 => "md5",
            Self::Sha1 => "sha1",
            Self::ParityEven7bit => "parityEven7bit",
            Self::ParityOdd7bit => "parityOdd7bit",
            Self::ParityZero7bit => "parityZero7bit",
        }
    }

    /// Applies the transformation.
    ///
    /// Returns `false` (and leaves `out` empty) when the output would equal the
    /// input, so callers can keep borrowing the input; otherwise writes the
    /// transformed bytes into `out` (cleared first) and returns `true`.
    pub fn apply(self, input: &[u8], out: &mut Vec<u8>) -> bool {
        let f: fn(&[u8], &mut Vec<u8>) -> bool = match self {
            Self::None => none::apply,
            Self::Lowercase => lowercase::apply,
            Self::Uppercase => uppercase::apply,
            Self::UrlDecode => url_decode::apply,
            Self::UrlDecodeUni => url_decode_uni::apply,
            Self::UrlEncode => url_encode::apply,
            Self::HtmlEntityDecode => html_entity_decode::apply,
            Self::JsDecode => js_decode::apply,
            Self::CssDecode => css_decode::apply,
            Self::EscapeSeqDecode => escape_seq_decode::apply,
            Self::HexDecode => hex_decode::apply,
            Self::HexEncode => hex_encode::apply,
            Self::Base64Decode => base64_decode::apply,
            Self::Base64DecodeExt => base64_decode_ext::apply,
            Self::Base64Encode => base64_encode::apply,
            Self::SqlHexDecode => sql_hex_decode::apply,
            Self::CmdLine => cmd_line::apply,
            Self::CompressWhitespace => compress_whitespace::apply,
            Self::RemoveWhitespace => remove_whitespace::apply,
            Self::RemoveNulls => remove_nulls::apply,
            Self::ReplaceNulls => replace_nulls::apply,
            Self::RemoveComments => remove_comments::apply,
            Self::RemoveCommentsChar => remove_comments_char::apply,
            Self::ReplaceComments => replace_comments::apply,
            Self::NormalisePath => normalise_path::apply,
            Self::NormalisePathWin => normalise_path_win::apply,
            Self::Utf8ToUnicode => utf8_to_unicode::apply,
            Self::Trim => trim::apply,
            Self::TrimLeft => trim_left::apply,
            Self::TrimRight => trim_right::apply,
            Self::Length => length::apply,
            Self::Md5 => md5::apply,
            Self::Sha1 => sha1::apply,
            Self::ParityEven7bit => parity_even_7bit::apply,
            Self::ParityOdd7bit => parity_odd_7bit::apply,
            Self::ParityZero7bit => parity_zero_7bit::apply,
        };
        let changed = f(input, out);
        debug_assert!(
            changed || out.is_empty(),
            "{}: false with output",
            self.name()
        );
        debug_assert!(
            !changed || out.as_slice() != input,
            "{}: true but unchanged",
            self.name()
        );
        changed
    }

    /// Convenience wrapper around [`Transformation::apply`] returning the
    /// transformed value as an owned vector (a copy of the input when unchanged).
    pub fn apply_to_vec(self, input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        if self.apply(input, &mut out) {
            out
        } else {
            input.to_vec()
        }
    }
}

impl std::fmt::Display for Transformation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
