//! Keyword and fingerprint lookup in the compiled-in tables (binary search).

use core::cmp::Ordering;

use super::data::{FINGERPRINTS, KEYWORDS};
use super::token::TokenType;

/// Compares an upper-case table key with arbitrary input bytes, upper-casing
/// ASCII letters of the input, with the exact semantics of libinjection's
/// `cstrcasecmp` (signed `char` comparison, NUL handling).
fn cstrcasecmp(key: &[u8], input: &[u8]) -> Ordering {
    for (i, &b) in input.iter().enumerate() {
        let ca = key.get(i).copied().unwrap_or(0) as i8;
        let cb = b.to_ascii_uppercase() as i8;
        if ca != cb {
            return ca.cmp(&cb);
        } else if ca == 0 {
            return Ordering::Less;
        }
    }
    if key.len() <= input.len() {
        Ordering::Equal
    } else {
        Ordering::Greater
    }
}

/// Looks a word up in the keyword table, case-insensitively (ASCII letters only).
///
/// Returns the keyword's token type, or `None` when the word is not a keyword.
pub fn lookup_word(word: &[u8]) -> Option<TokenType> {
    KEYWORDS
        .binary_search_by(|(key, _)| cstrcasecmp(key.as_bytes(), word))
        .ok()
        .map(|i| KEYWORDS[i].1)
}

/// Whether `fingerprint` is in the fingerprint list, compared case-insensitively
/// (libinjection stores the fingerprints upper-cased in its keyword table).
pub fn is_fingerprint(fingerprint: &[u8]) -> bool {
    FINGERPRINTS
        .binary_search_by(|fp| {
            let a = fp.bytes().map(|c| c.to_ascii_uppercase());
            let b = fingerprint.iter().map(|&c| c.to_ascii_uppercase());
            a.cmp(b)
        })
        .is_ok()
}

/// C `cstrcasecmp(key, value, value.len()) == 0`: the value equals the upper-case key.
pub(crate) fn equals_upper(key: &str, value: &[u8]) -> bool {
    cstrcasecmp(key.as_bytes(), value) == Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_lookup_is_case_insensitive() {
        assert_eq!(lookup_word(b"select"), Some(TokenType::Expression));
        assert_eq!(lookup_word(b"SeLeCt"), Some(TokenType::Expression));
        assert_eq!(lookup_word(b"selectx"), None);
        assert_eq!(lookup_word(b"sel"), None);
        assert_eq!(lookup_word(b"UNION ALL"), Some(TokenType::Union));
        assert_eq!(lookup_word(b"AND\0"), None);
    }

    #[test]
    fn fingerprint_lookup_is_case_insensitive() {
        assert!(is_fingerprint(b"s&sos"));
        assert!(is_fingerprint(b"1UE"));
        assert!(!is_fingerprint(b""));
        assert!(!is_fingerprint(b"zzzzz"));
    }
}
