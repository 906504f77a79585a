//! Simple inputs, the verdict of `libinjection_is_sqli` without the state,
//! folding or the other contexts: one word or number; several joined by
//! single dashes (`2019-03-14`, `SOCK-PACK-3-BLK-M`); or bare words and
//! numbers separated by whitespace (`Jane Doe`, `Apartment 4B`).
//!
//! Most values a WAF inspects are like this: `gold`, `48213`, `19.99`,
//! `true`, `json.customer.loyalty.tier`, dates, SKUs, names. For them the full
//! algorithm ([`super::SqliState::is_sqli`]) sets up a state, reads the
//! tokens, folds, fingerprints and checks, which costs several times the
//! reading of the tokens itself. Here the tokens are read by the tokenizer's
//! own scanners ([`leading_word_token`], [`word_token`], [`number_token`]) and
//! the rest is decided as the full algorithm decides it:
//!
//! - The tokens, dashes and whitespace make up the input (but for what
//!   follows six spaced tokens, below), and a word ends at any quote, so the
//!   input holds no `'` or `"`: only the as-is context is tried, and the
//!   string-prefix classes (`b`, `e`, `n`, `q`, `u`, `x`), whose strings all
//!   need a `'`, read a plain word.
//! - No `#` and no `--` (each dash is followed by a token; a number holds at
//!   most one `-`, in an exponent, which the number parser reads), so the pass
//!   counts no comment and MySQL's comment rules are not tried.
//! - One token: folding drops it when it is a comment, a left parenthesis, a
//!   SQL type or a unary operator (the fingerprint is then empty and never
//!   matches), else keeps it: the fingerprint is its type letter.
//! - `t1-t2-...-tk` with bare words and numbers only: `t1 -` is no
//!   two-token fold (checked: no keyword `t1 -`), and `t1 - ti` folds to `t1`
//!   as arithmetic, again and again: the fingerprint is `t1`'s type letter.
//! - `t1 t2 ... tk` with bare words and numbers only, whitespace after `t1`
//!   (and between or after any of them): no two- or three-token rule applies
//!   to them but the merging of two bare words into a keyword (`UNION ALL`),
//!   which is checked for every pair. So the fingerprint is the type letters
//!   of the first five tokens. Folding reads six tokens and no further, so
//!   what follows the sixth may be anything: it is never tokenized in this
//!   pass (no comment counted), and only its quotes matter, which would start
//!   the quote contexts when this pass does not match.
//! - The false-positive heuristics only look at fingerprints of two or more
//!   letters, and for those of bare words and numbers they never apply (they
//!   need a union, a comment, a string, a logic operator, a keyword, or a
//!   token starting with `#` or `-`): the verdict is whether the fingerprint
//!   is a known one.
//!
//! Anything else (another separator, a keyword among several tokens, any
//! other byte) is left to the full algorithm, which the property tests below
//! compare with.

use super::charclass::CharClass;
use super::data::CHAR_MAP;
use super::detect::SqliResult;
use super::fingerprint::Fingerprint;
use super::fold::{merged_kind, skipped_at_start};
use super::keywords::is_one_letter_fingerprint;
use super::token::{TokenType, TOKEN_VALUE_CAPACITY};
use super::tokenizer::{leading_word_token, number_token, word_token};
use super::MAX_TOKENS;

/// The result of [`crate::detect_sqli`] when `input` is simple (see the
/// module documentation), else `None`.
#[inline]
pub(crate) fn detect_simple(input: &[u8]) -> Option<SqliResult> {
    // The first token, and the byte after it, tell the shape.
    let (kind, end) = first_token(input)?;
    let kept = input.get(..end.min(TOKEN_VALUE_CAPACITY))?;
    let Some(&next) = input.get(end) else {
        return Some(one_token(kind, kept));
    };
    if !plain(kind) {
        return None;
    }
    if next == b'-' {
        dashed(input, kind, kept, end)
    } else if CHAR_MAP[next as usize] == CharClass::White {
        spaced(input, kind, kept, end)
    } else {
        None
    }
}

/// The input is one token, of this type and kept value.
fn one_token(kind: TokenType, kept: &[u8]) -> SqliResult {
    if skipped_at_start(kind, kept) {
        SqliResult {
            is_sqli: false,
            fingerprint: Fingerprint::EMPTY,
        }
    } else {
        SqliResult {
            is_sqli: is_one_letter_fingerprint(kind.as_byte()),
            fingerprint: Fingerprint::from_bytes(&[kind.as_byte()]),
        }
    }
}

/// `t1-t2-...-tk`, given `t1` (a bare word or number) ending at `end`:
/// everything folds into `t1`.
fn dashed(input: &[u8], kind: TokenType, kept: &[u8], end: usize) -> Option<SqliResult> {
    if merged_kind(kind, kept, TokenType::Operator, b"-").is_some() {
        return None;
    }
    let mut pos = end;
    while pos < input.len() {
        if input[pos] != b'-' {
            return None;
        }
        match token_at(input, pos + 1)? {
            (k, e) if plain(k) => pos = e,
            _ => return None,
        }
    }
    Some(SqliResult {
        is_sqli: is_one_letter_fingerprint(kind.as_byte()),
        fingerprint: Fingerprint::from_bytes(&[kind.as_byte()]),
    })
}

/// `t1 t2 ... tk`, given `t1` (a bare word or number) ending at `end`, where
/// whitespace follows: bare words and numbers, whitespace between them; after
/// the sixth anything without quotes.
fn spaced(input: &[u8], kind: TokenType, kept: &[u8], end: usize) -> Option<SqliResult> {
    let mut letters = [kind.as_byte(), 0, 0, 0, 0];
    let mut count = 1usize;
    // the previous token, for the merge check: its type and kept value
    let mut prev = (kind, kept);
    let mut pos = end;
    loop {
        // whitespace, skipped as the tokenizer skips it
        while input
            .get(pos)
            .is_some_and(|&b| CHAR_MAP[b as usize] == CharClass::White)
        {
            pos += 1;
        }
        if pos >= input.len() {
            break;
        }
        let (kind, end) = token_at(input, pos)?;
        if !plain(kind) {
            return None;
        }
        let kept = input.get(pos..end.min(pos + TOKEN_VALUE_CAPACITY))?;
        if merged_kind(prev.0, prev.1, kind, kept).is_some() {
            return None;
        }
        prev = (kind, kept);
        if let Some(l) = letters.get_mut(count) {
            *l = kind.as_byte();
        }
        count += 1;
        pos = end;
        if count > MAX_TOKENS {
            // Folding reads six tokens and no further: the rest of the input
            // only matters through its quotes, when this pass does not match.
            break;
        }
    }
    let fingerprint = Fingerprint::from_bytes(&letters[..count.min(MAX_TOKENS)]);
    let is_sqli = fingerprint.is_known();
    let rest = input.get(pos..).unwrap_or_default();
    if !is_sqli && rest.iter().any(|&b| b == b'\'' || b == b'"') {
        return None;
    }
    Some(SqliResult {
        is_sqli,
        fingerprint,
    })
}

/// Whether the chains and sequences above may hold tokens of this type.
fn plain(kind: TokenType) -> bool {
    matches!(kind, TokenType::Bareword | TokenType::Number)
}

/// The first token, when it is a number, or a word that runs to the end, to
/// a `-` or to whitespace: its type and end.
#[inline]
fn first_token(input: &[u8]) -> Option<(TokenType, usize)> {
    let &first = input.first()?;
    if is_word_start(first) {
        leading_word_token(input)
    } else if CHAR_MAP[first as usize] == CharClass::Num {
        Some(number_token(input, 0))
    } else {
        None
    }
}

/// The word or number token at `pos`, as the tokenizer reads it (in an input
/// without quotes), or `None` for another first byte.
fn token_at(input: &[u8], pos: usize) -> Option<(TokenType, usize)> {
    let &b = input.get(pos)?;
    if is_word_start(b) {
        Some(word_token(input, pos))
    } else if CHAR_MAP[b as usize] == CharClass::Num {
        Some(number_token(input, pos))
    } else {
        None
    }
}

/// Whether the tokenizer reads a word at this byte when no `'` follows.
fn is_word_start(b: u8) -> bool {
    matches!(
        CHAR_MAP[b as usize],
        CharClass::Word
            | CharClass::BString
            | CharClass::EString
            | CharClass::NqString
            | CharClass::QString
            | CharClass::UString
            | CharClass::XString
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqli::{SqliState, FLAG_NONE};
    use proptest::prelude::*;

    /// The full algorithm: every context, folding and the heuristics.
    fn full(input: &[u8]) -> SqliResult {
        let mut state = SqliState::new(input, FLAG_NONE);
        let is_sqli = state.is_sqli();
        SqliResult {
            is_sqli,
            fingerprint: state.last_fingerprint(),
        }
    }

    /// Words, numbers, keywords (types, unary and logic operators, dotted
    /// keywords) and the bytes that end or split them.
    fn inputs() -> impl Strategy<Value = Vec<u8>> {
        let part = prop_oneof![
            prop::sample::select(vec![
                "select",
                "UNION",
                "int",
                "varchar",
                "not",
                "NOT",
                "and",
                "or",
                "xor",
                "true",
                "null",
                "div",
                "like",
                "sys",
                "stragg",
                "dbms_lock",
                "sleep",
                "user",
                "json",
                "customer",
                "gold",
                "EUR",
                "jane",
                "doe",
                "@example",
                "com",
                "0x",
                "0b",
                "1e",
                "1.",
                ".5",
                "12840",
                "19.99",
                "1d",
                "2f",
                "q",
                "n",
                "x",
                "b",
                "e",
                "u",
                "N",
                "abcdefghijklmnopqrstuvwxyz0123456789",
            ])
            .prop_map(|w| w.as_bytes().to_vec()),
            prop::collection::vec(
                prop::sample::select(b"aAbBeEnNqQuUxXsS019._@+-:/ '\"#*`$&\0\xa0\xff".to_vec(),),
                0..8,
            ),
        ];
        prop::collection::vec(
            (part, prop::sample::select(b"..._-@+:/ `'\"#*".to_vec())),
            1..4,
        )
        .prop_map(|parts| {
            let mut w = Vec::new();
            for (p, d) in parts {
                w.extend_from_slice(&p);
                w.push(d);
            }
            w.pop();
            w
        })
    }

    /// `lead`, then each part after the separator paired with it (none before
    /// the first), then `trailing`.
    fn joined(lead: &str, parts: &[(&str, &str)], trailing: &str) -> Vec<u8> {
        let mut input = lead.as_bytes().to_vec();
        for (i, (p, sep)) in parts.iter().enumerate() {
            if i > 0 {
                input.extend_from_slice(sep.as_bytes());
            }
            input.extend_from_slice(p.as_bytes());
        }
        input.extend_from_slice(trailing.as_bytes());
        input
    }

    /// The fast path, when it answers, and `detect_sqli` answer as the full
    /// algorithm, verdict and fingerprint.
    fn agrees(input: &[u8]) -> Result<(), TestCaseError> {
        let expected = full(input);
        if let Some(fast) = detect_simple(input) {
            prop_assert_eq!(fast, expected);
        }
        prop_assert_eq!(crate::detect_sqli(input), expected);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10000))]

        /// Whenever the fast path answers, it answers as the full algorithm,
        /// verdict and fingerprint; and `detect_sqli` always does.
        #[test]
        fn single_token_agrees_with_the_full_algorithm(input in inputs()) {
            agrees(&input)?;
        }

        /// Chains joined by dashes (and the odd other separator or double
        /// dash): dates, SKUs, keywords and numbers with exponents.
        #[test]
        fn dash_chains_agree_with_the_full_algorithm(
            parts in prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "2019", "03", "14", "0x1f", "0b", "1e", "1e5", "12f", "1d", "3", ".5",
                        "SOCK", "pack", "BLK", "m", "x", "b", "n", "q", "u", "e", "N", "union",
                        "select", "not", "int", "ord", "or", "and", "sys", "json.a", "a.b",
                        "select.1", "tok_1PQa2b3C4d5E6f", "abcdefghijklmnopqrstuvwxyz0123456789",
                    ]),
                    prop::sample::select(vec!["-", "-", "-", "-", "--", "- ", "+", "", "'"]),
                ),
                1..6,
            ),
            trailing in prop::sample::select(vec!["", "", "-", "--", " "]),
        ) {
            agrees(&joined("", &parts, trailing))?;
        }

        /// Words and numbers separated by whitespace, keywords and pairs that
        /// merge into one (`UNION ALL`, `GROUP BY`) among them, past the six
        /// tokens folding reads.
        #[test]
        fn spaced_words_agree_with_the_full_algorithm(
            parts in prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "Jane", "Doe", "running", "shoes", "4B", "750", "ml", "1e5", "12f",
                        "0x1f", "true", "union", "all", "group", "by", "order", "not", "in",
                        "is", "distinct", "from", "natural", "left", "outer", "join", "sys",
                        "x", "b", "n", "q", "json.a", "select.1", "int", "or", "a-b",
                        "abcdefghijklmnopqrstuvwxyz0123456789",
                    ]),
                    prop::sample::select(vec![" ", " ", " ", "  ", "\t", "\0", "\u{a0}", "\n", ""]),
                ),
                1..10,
            ),
            lead in prop::sample::select(vec!["", "", " "]),
            trailing in prop::sample::select(vec![
                "", "", " ", ",", "'", " -- c", " #", " /* x */", " 'a'", " \"", " or 1=1",
                " union select", " (", ") ", " sleep(5)",
            ]),
        ) {
            agrees(&joined(lead, &parts, trailing))?;
        }

        /// The same for arbitrary bytes.
        #[test]
        fn single_token_agrees_on_any_bytes(input in prop::collection::vec(any::<u8>(), 0..12)) {
            let expected = full(&input);
            if let Some(fast) = detect_simple(&input) {
                prop_assert_eq!(fast, expected);
            }
        }
    }

    /// Every multi-word keyword, split at each of its spaces, at every
    /// position among bare words and numbers: where folding merges it, and
    /// where it no longer looks.
    #[test]
    fn multi_word_keywords_at_every_position_agree() {
        let mut checked = 0;
        for (key, _) in crate::sqli::data::KEYWORDS.iter() {
            for (i, _) in key.match_indices(' ') {
                let (a, b) = (&key[..i], &key[i + 1..]);
                for before in 0..8 {
                    for after in 0..3 {
                        let mut words: Vec<String> = Vec::new();
                        words.extend((0..before).map(|j| ["w", "1", "x2"][j % 3].to_owned()));
                        words.push(a.to_ascii_lowercase());
                        words.push(b.to_owned());
                        words.extend((0..after).map(|_| "z".to_owned()));
                        let input = words.join(" ");
                        if let Some(fast) = detect_simple(input.as_bytes()) {
                            assert_eq!(fast, full(input.as_bytes()), "{input}");
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 100, "{checked}");
    }

    /// Every keyword, alone and in lower case: the fast path answers, as the
    /// full algorithm (types, unary operators, fingerprints of every letter).
    #[test]
    fn every_keyword_alone_agrees() {
        let mut answered = 0;
        for (key, _) in crate::sqli::data::KEYWORDS.iter() {
            for w in [
                key.as_bytes().to_vec(),
                key.to_ascii_lowercase().into_bytes(),
            ] {
                if let Some(fast) = detect_simple(&w) {
                    assert_eq!(fast, full(&w), "{key}");
                    answered += 1;
                }
            }
        }
        assert!(answered > 1000);
    }
}
