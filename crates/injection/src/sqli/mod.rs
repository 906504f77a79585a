//! SQL-injection detection: tokenizer, folding, fingerprint lookup.
//!
//! The pipeline, as in libinjection:
//!
//! 1. [`SqliState::tokenize`] reads one token at a time ([`tokenizer`]); the
//!    first byte's [`CharClass`] selects the parser.
//! 2. [`SqliState::fold`] ([`fold`]) reduces the token stream to at most five
//!    tokens (e.g. `1+1` becomes `1`, `NOT IN` one operator).
//! 3. The types of the folded tokens form a fingerprint such as `s&1c`, looked
//!    up in the list of known SQLi fingerprints; a few heuristics reduce false
//!    positives ([`fingerprint`]).
//! 4. [`SqliState::is_sqli`] runs that on the input as-is, as if it followed a
//!    single quote, and as if it followed a double quote, in ANSI and MySQL
//!    comment modes ([`detect`]).
//!
//! [`crate::detect_sqli`] first tries a shortcut for inputs that are one word
//! or one number, or several joined by dashes, the most common values, which
//! decides them as the pipeline would without running it (module `simple`).

pub mod charclass;
pub mod data;
pub mod detect;
pub mod fingerprint;
pub mod fold;
pub mod keywords;
mod packed;
mod simple;
pub mod token;
pub mod tokenizer;
mod wordscan;

pub use charclass::CharClass;
pub use fingerprint::Fingerprint;
pub use keywords::{is_fingerprint, lookup_word};
pub(crate) use simple::detect_simple;
pub use token::{Token, TokenType};
pub use tokenizer::Tokenizer;

/// No flags: equivalent to `FLAG_QUOTE_NONE | FLAG_SQL_ANSI`.
pub const FLAG_NONE: u32 = 0;
/// Parse the input as-is (not inside a string).
pub const FLAG_QUOTE_NONE: u32 = 1;
/// Parse the input as if it followed a single quote.
pub const FLAG_QUOTE_SINGLE: u32 = 2;
/// Parse the input as if it followed a double quote.
pub const FLAG_QUOTE_DOUBLE: u32 = 4;
/// ANSI comments: `--x` is a comment, `#` an operator.
pub const FLAG_SQL_ANSI: u32 = 8;
/// MySQL comments: `#` starts a comment, `--x` (no whitespace) does not.
pub const FLAG_SQL_MYSQL: u32 = 16;

/// Maximum number of tokens in a fingerprint.
pub const MAX_TOKENS: usize = 5;

/// Number of token slots (folding looks up to three tokens ahead).
pub(crate) const TOKEN_SLOTS: usize = MAX_TOKENS + 3;

/// The state of one SQLi analysis of one input: a fixed-size value, no heap.
#[derive(Clone, Debug)]
pub struct SqliState<'a> {
    pub(crate) s: &'a [u8],
    pub(crate) flags: u32,
    pub(crate) pos: usize,
    pub(crate) tokens: [Token; TOKEN_SLOTS],
    /// Slots `used..` are all [`Token::EMPTY`]: [`SqliState::reset`] clears
    /// only the slots below (one to three for most inputs) instead of all
    /// eight. Every write to a slot keeps this bound.
    pub(crate) used: usize,
    pub(crate) current: usize,
    pub(crate) fingerprint: Fingerprint,
    pub(crate) stats_comment_ddx: u32,
    pub(crate) stats_comment_hash: u32,
    pub(crate) stats_folds: u32,
    pub(crate) stats_tokens: u32,
}

impl<'a> SqliState<'a> {
    /// A new state over `input` with the given `FLAG_*` flags
    /// (`libinjection_sqli_init`; [`FLAG_NONE`] means
    /// `FLAG_QUOTE_NONE | FLAG_SQL_ANSI`).
    pub fn new(input: &'a [u8], flags: u32) -> Self {
        SqliState {
            s: input,
            flags: normalize_flags(flags),
            pos: 0,
            tokens: [Token::EMPTY; TOKEN_SLOTS],
            used: 0,
            current: 0,
            fingerprint: Fingerprint::EMPTY,
            stats_comment_ddx: 0,
            stats_comment_hash: 0,
            stats_folds: 0,
            stats_tokens: 0,
        }
    }

    /// Restarts the analysis of the same input with new flags
    /// (`libinjection_sqli_reset`).
    ///
    /// The state afterwards equals `SqliState::new(input, flags)`; only the
    /// token slots written since the last reset are cleared, which is what
    /// makes the up to five passes of [`SqliState::is_sqli`] cheap.
    pub fn reset(&mut self, flags: u32) {
        self.flags = normalize_flags(flags);
        self.pos = 0;
        for t in self.tokens.iter_mut().take(self.used) {
            *t = Token::EMPTY;
        }
        self.used = 0;
        self.current = 0;
        self.fingerprint = Fingerprint::EMPTY;
        self.stats_comment_ddx = 0;
        self.stats_comment_hash = 0;
        self.stats_folds = 0;
        self.stats_tokens = 0;
    }

    /// The input being analysed.
    pub fn input(&self) -> &'a [u8] {
        self.s
    }

    /// The active flags.
    pub fn flags(&self) -> u32 {
        self.flags
    }

    /// The token in slot `i` (after [`SqliState::fold`], slots `0..n` hold the
    /// folded tokens); `None` past the last slot.
    pub fn token(&self, i: usize) -> Option<&Token> {
        self.tokens.get(i)
    }

    /// The token most recently produced by [`SqliState::tokenize`].
    pub fn current(&self) -> &Token {
        &self.tokens[self.current]
    }

    /// The fingerprint computed by the last [`SqliState::fingerprint`] call.
    pub fn last_fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// Number of tokens read by the tokenizer since the last reset.
    pub fn stats_tokens(&self) -> u32 {
        self.stats_tokens
    }

    /// Number of folding steps since the last reset.
    pub fn stats_folds(&self) -> u32 {
        self.stats_folds
    }

    pub(crate) fn cur(&mut self) -> &mut Token {
        &mut self.tokens[self.current]
    }

    /// Records that slot `i` is about to be written (see `used`).
    #[inline]
    pub(crate) fn mark_used(&mut self, i: usize) {
        if i >= self.used {
            self.used = i + 1;
        }
    }
}

/// [`FLAG_NONE`] means `FLAG_QUOTE_NONE | FLAG_SQL_ANSI`.
fn normalize_flags(flags: u32) -> u32 {
    if flags == 0 {
        FLAG_QUOTE_NONE | FLAG_SQL_ANSI
    } else {
        flags
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Resetting after any passes, which clears only the slots used,
        /// leaves exactly the state of a new one.
        #[test]
        fn reset_equals_a_new_state(
            input in prop::collection::vec(
                prop::sample::select(b"'\"`/*-#!<>=&;%$@[]{}()\\.,:019aAbBeEnNqQuUxXsS \n\0".to_vec()),
                0..48,
            ),
            passes in prop::collection::vec(
                prop::sample::select(vec![
                    FLAG_NONE,
                    FLAG_QUOTE_SINGLE | FLAG_SQL_ANSI,
                    FLAG_QUOTE_SINGLE | FLAG_SQL_MYSQL,
                    FLAG_QUOTE_DOUBLE | FLAG_SQL_MYSQL,
                    FLAG_QUOTE_NONE | FLAG_SQL_MYSQL,
                ]),
                1..4,
            ),
        ) {
            let mut s = SqliState::new(&input, FLAG_NONE);
            for &flags in &passes {
                s.fingerprint(flags);
                let _ = s.check_fingerprint();
            }
            let last = passes[passes.len() - 1];
            s.reset(last);
            prop_assert_eq!(format!("{s:?}"), format!("{:?}", SqliState::new(&input, last)));
        }
    }
}
