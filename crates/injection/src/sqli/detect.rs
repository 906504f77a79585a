//! The SQLi verdict: fingerprint the input in up to five contexts
//! (`libinjection_is_sqli`).

use super::fingerprint::Fingerprint;
use super::{
    SqliState, FLAG_QUOTE_DOUBLE, FLAG_QUOTE_NONE, FLAG_QUOTE_SINGLE, FLAG_SQL_ANSI, FLAG_SQL_MYSQL,
};

impl SqliState<'_> {
    /// Whether the last pass saw comments whose meaning differs in MySQL.
    fn reparse_as_mysql(&self) -> bool {
        self.stats_comment_ddx != 0 || self.stats_comment_hash != 0
    }

    /// Fingerprints the input with `flags` and checks the fingerprint.
    fn try_context(&mut self, flags: u32) -> bool {
        self.fingerprint(flags);
        self.check_fingerprint()
    }

    /// Tries a quote context with ANSI comments, then, if the input had
    /// comments that MySQL reads differently, with MySQL comments.
    fn try_quote_context(&mut self, quote: u32) -> bool {
        self.try_context(quote | FLAG_SQL_ANSI)
            || (self.reparse_as_mysql() && self.try_context(quote | FLAG_SQL_MYSQL))
    }

    /// Whether the input is SQL injection (`libinjection_is_sqli`).
    ///
    /// The input is analysed as-is, then as if it followed a `'` (when it
    /// contains one), then as if it followed a `"` (when it contains one); ANSI
    /// comment rules first, MySQL's when the input has `#` or `--x` comments
    /// (the double-quote context uses MySQL's only).
    /// Afterwards [`SqliState::last_fingerprint`] is the fingerprint of the
    /// last context tried (the matching one when the result is `true`).
    pub fn is_sqli(&mut self) -> bool {
        let s = self.s;
        if s.is_empty() {
            return false;
        }
        self.try_quote_context(FLAG_QUOTE_NONE)
            || (s.contains(&b'\'') && self.try_quote_context(FLAG_QUOTE_SINGLE))
            || (s.contains(&b'"') && self.try_context(FLAG_QUOTE_DOUBLE | FLAG_SQL_MYSQL))
    }
}

/// The result of [`crate::detect_sqli`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqliResult {
    /// Whether the input is SQL injection.
    pub is_sqli: bool,
    /// The fingerprint libinjection reports: the matching one when `is_sqli`,
    /// else the one of the last context analysed.
    pub fingerprint: Fingerprint,
}
