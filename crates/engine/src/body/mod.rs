//! Request body processors and the other parsers of request data: URL-encoded
//! arguments (query string and `application/x-www-form-urlencoded` bodies), cookies,
//! multipart/form-data, JSON and XML.
//!
//! Each parser is a pure function from bytes to a neutral result; the transaction
//! turns results into variables (ARGS_GET/ARGS_POST, REQUEST_COOKIES, FILES*,
//! MULTIPART_*, REQBODY_ERROR, XML). Nothing here panics, allocates without bound or
//! takes more than linear time on hostile input.
//!
//! # Modules
//!
//! | module | entry point | variables it feeds |
//! | --- | --- | --- |
//! | [`urlencoded`] | [`urlencoded::parse_urlencoded`] | ARGS_GET / ARGS_POST, URLENCODED_ERROR |
//! | [`cookies`] | [`cookies::parse_cookies`] | REQUEST_COOKIES, REQUEST_COOKIES_NAMES |
//! | [`multipart`] | [`multipart::parse_multipart`] | ARGS_POST, FILES*, MULTIPART_*, REQBODY_ERROR |
//! | [`json`] | [`json::parse_json`] | ARGS_POST (`json.*` names), REQBODY_ERROR |
//! | [`xml`], [`xpath`] | [`xml::parse_xml`], [`xpath::XPath::compile`], [`xml::XmlDoc::evaluate`] | `XML:<xpath>`, REQBODY_ERROR |
//!
//! # Error messages and REQBODY_ERROR_MSG
//!
//! The parsers return the message libmodsecurity's body processor itself produces
//! (for example `Multipart: Final boundary missing.`). libmodsecurity's transaction
//! then prefixes it when it sets REQBODY_ERROR_MSG / REQBODY_PROCESSOR_ERROR_MSG:
//! `"Multipart parsing error: "`, `"JSON parsing error: "` or `"XML parsing error: "`
//! (see `Transaction::processRequestBody` in libmodsecurity's `src/transaction.cc`).
//! That prefixing is the transaction's job, not the parsers'.
//!
//! Every entry point takes plain byte slices so that it can be fuzzed directly.

pub mod cookies;
pub mod json;
pub mod multipart;
pub mod urlencoded;
pub mod xml;
pub mod xpath;

pub use cookies::parse_cookies;
pub use json::{parse_json, JSON_DEPTH_LIMIT_DEFAULT};
pub use multipart::{parse_multipart, FilePart, MultipartFlags, MultipartLimits, MultipartResult};
pub use urlencoded::{parse_urlencoded, UrlencodedStatus};
pub use xml::{parse_xml, XmlDoc, XML_PARSE_ERROR};
pub use xpath::{validate_xpath, XPath};

/// One argument (or cookie, or JSON leaf): a name and a value, decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Arg {
    /// The decoded name.
    pub name: Vec<u8>,
    /// The decoded value.
    pub value: Vec<u8>,
}

impl Arg {
    /// Builds an argument from a name and a value.
    pub fn new(name: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Self {
        Arg {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// C's `isspace` in the "C" locale: space, `\t`, `\n`, `\v`, `\f`, `\r`.
///
/// libmodsecurity uses `isspace` in several places where Rust's
/// `u8::is_ascii_whitespace` would differ (it lacks `\v`).
pub(crate) fn c_isspace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}
