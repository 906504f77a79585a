//! SQL-injection and XSS detection, a faithful Rust port of
//! [libinjection](https://github.com/client9/libinjection) (reference commit
//! `85e252a28981d479822092bad235bb75beb7edfa`).
//!
//! Palisade's rule engine uses this crate for the SecLang operators
//! `@detectSQLi` ([`detect_sqli`]) and `@detectXSS` ([`detect_xss`]), which
//! run on every inspected request variable. Both functions:
//!
//! - take arbitrary bytes (not necessarily UTF-8) and never panic;
//! - run in linear time, with a small fixed-size state on the stack and no
//!   heap allocation;
//! - give exactly the verdicts (and, for SQLi, the fingerprints) of the
//!   reference C library: the crate's tests replay libinjection's own test
//!   vectors and its sample payload files.
//!
//! # How it works
//!
//! - [`sqli`]: a SQL tokenizer with one parser per character class, token
//!   folding to at most five tokens, and lookup of the resulting fingerprint
//!   (e.g. `s&1c`) in libinjection's list of known SQLi fingerprints, tried
//!   with the input as-is and as if it followed a `'` or a `"`, with ANSI and
//!   MySQL comment rules. The most common values (one word or number, a few
//!   joined by dashes or spaces) are decided by a shortcut that reads their
//!   tokens and gives the same answer without the rest of the pipeline.
//! - [`xss`]: an HTML5 tokenizer run as if the input were text or an
//!   attribute value (unquoted, `'`, `"` or `` ` ``), with blacklists of tags,
//!   attributes and URL schemes.
//!
//! The keyword, character-class and fingerprint tables are compiled in
//! ([`sqli::data`]), generated from libinjection's `sqlparse_data.json` and
//! `fingerprints.txt`.
//!
//! # Example
//!
//! ```
//! use injection::{detect_sqli, detect_xss};
//!
//! let r = detect_sqli(b"1' OR '1'='1");
//! assert!(r.is_sqli);
//! assert_eq!(r.fingerprint.as_str(), "s&sos");
//! assert!(!detect_sqli(b"O'Reilly").is_sqli);
//!
//! assert!(detect_xss(b"<script>alert(1)</script>"));
//! assert!(detect_xss(b"\" onmouseover=\"alert(1)"));
//! assert!(!detect_xss(b"<b>bold</b>"));
//! ```
//!
//! # License
//!
//! The algorithm and the data tables are those of libinjection:
//!
//! Copyright (c) 2012-2016, Nick Galbreath (Client9). All rights reserved.
//! Redistribution and use in source and binary forms, with or without
//! modification, are permitted provided that the following conditions are
//! met: (1) redistributions of source code must retain the above copyright
//! notice, this list of conditions and the following disclaimer;
//! (2) redistributions in binary form must reproduce the above copyright
//! notice, this list of conditions and the following disclaimer in the
//! documentation and/or other materials provided with the distribution;
//! (3) neither the name of the copyright holder nor the names of its
//! contributors may be used to endorse or promote products derived from this
//! software without specific prior written permission. THIS SOFTWARE IS
//! PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS
//! OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED
//! WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
//! DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE
//! LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR
//! CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF
//! SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS
//! INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN
//! CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE)
//! ARISING IN ANY WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE
//! POSSIBILITY OF SUCH DAMAGE.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod sqli;
pub mod xss;

pub use sqli::detect::SqliResult;
pub use sqli::Fingerprint;

/// Whether `input` is SQL injection, and its fingerprint
/// (`libinjection_sqli_init(FLAG_NONE)` + `libinjection_is_sqli`).
///
/// When `is_sqli` is `false`, `fingerprint` is that of the last context
/// analysed, as libinjection leaves it.
pub fn detect_sqli(input: &[u8]) -> SqliResult {
    // One word or number, or a few joined by dashes (most values): decided
    // without the pipeline.
    if let Some(result) = sqli::detect_simple(input) {
        return result;
    }
    let mut state = sqli::SqliState::new(input, sqli::FLAG_NONE);
    let is_sqli = state.is_sqli();
    SqliResult {
        is_sqli,
        fingerprint: state.last_fingerprint(),
    }
}

/// Whether `input` is cross-site scripting (`libinjection_xss`).
pub fn detect_xss(input: &[u8]) -> bool {
    xss::is_xss(input)
}
