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
        if self.try_quote_context(FLAG_QUOTE_NONE) {
            return true;
        }
        let quotes = Quotes::of(s);
        (quotes.single && self.try_quote_context(FLAG_QUOTE_SINGLE))
            || (quotes.double && self.try_context(FLAG_QUOTE_DOUBLE | FLAG_SQL_MYSQL))
    }
}

/// Which quote characters an input holds.
struct Quotes {
    single: bool,
    double: bool,
}

impl Quotes {
    /// One pass over the input for both quotes, eight bytes at a time (most
    /// inputs hold neither, and two `memchr` calls over short inputs cost
    /// about twice as much).
    fn of(s: &[u8]) -> Quotes {
        const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
        const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
        const SINGLE: u64 = u64::from_ne_bytes([b'\''; 8]);
        const DOUBLE: u64 = u64::from_ne_bytes([b'"'; 8]);
        // Non-zero exactly when some byte of `x` is zero.
        let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
        let (mut single, mut double) = (0u64, 0u64);
        let mut add = |x: u64| {
            single |= zero_byte(x ^ SINGLE);
            double |= zero_byte(x ^ DOUBLE);
        };
        let mut chunks = s.chunks_exact(8);
        for c in &mut chunks {
            if let Some(c) = c.first_chunk::<8>() {
                add(u64::from_ne_bytes(*c));
            }
        }
        let tail = chunks.remainder();
        if !tail.is_empty() {
            if let Some(last) = s.last_chunk::<8>() {
                // the last eight bytes, overlapping bytes already seen
                add(u64::from_ne_bytes(*last));
            } else {
                // a short input, padded with NULs (no quote)
                let mut w = [0u8; 8];
                for (d, &b) in w.iter_mut().zip(tail) {
                    *d = b;
                }
                add(u64::from_ne_bytes(w));
            }
        }
        Quotes {
            single: single != 0,
            double: double != 0,
        }
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

#[cfg(test)]
mod tests {
    use super::Quotes;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// The word-at-a-time scan finds a quote exactly when `contains` does.
        #[test]
        fn quote_scan_agrees_with_contains(
            input in prop::collection::vec(
                prop::sample::select(b"'\"&!#\0\x01\x80\xa7\xa2\xffa1 ".to_vec()),
                0..40,
            )
        ) {
            let q = Quotes::of(&input);
            prop_assert_eq!(q.single, input.contains(&b'\''));
            prop_assert_eq!(q.double, input.contains(&b'"'));
        }
    }
}
