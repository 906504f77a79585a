//! Keyword and fingerprint lookup in the compiled-in tables: words and
//! fingerprints of up to seven bytes packed into a `u64` (module `packed`)
//! and found in hash tables built at compile time; longer keywords through a
//! filter and a hash index of the table.
//!
//! The helpers at the end answer, for the tokenizer and folding, questions
//! that would otherwise cost a lookup per word: whether a word can still be a
//! dotted keyword (`SYS.STRAGG`) past its first `.`, and whether two words can
//! form a multi-word keyword (`UNION ALL`).

use core::cmp::Ordering;

use super::data::{FINGERPRINTS, KEYWORDS};
use super::packed::{ascii_upper, pack, pack_const, PackedTable};
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
/// libinjection binary-searches the table with `cstrcasecmp`, which finds a key
/// exactly when the key equals the word with its ASCII letters upper-cased (keys
/// are upper case and hold no NUL); here one hash probe finds it (the tokenizer
/// looks words up about 700 times per kilobyte of input).
#[inline]
pub fn lookup_word(word: &[u8]) -> Option<TokenType> {
    // Most words are short: one probe of the packed table, without hashing
    // byte by byte or comparing strings.
    match pack(word) {
        Some(key) => {
            let i = SHORT_KEYWORDS.get(key)?;
            KEYWORDS.get(usize::from(i)).map(|&(_, t)| t)
        }
        None => lookup_long_word(word),
    }
}

/// [`lookup_word`] for words of eight bytes or more.
#[inline(never)]
fn lookup_long_word(word: &[u8]) -> Option<TokenType> {
    // Most long words are no keyword: told by their length and end bytes.
    if !LONG_FILTER.may_hold(word) {
        return None;
    }
    let mut upper = [0u8; KEY_MAX];
    let upper = upper.get_mut(..word.len())?;
    for (u, &b) in upper.iter_mut().zip(word) {
        *u = b.to_ascii_uppercase();
    }
    let mut slot = hash(upper) as usize & (INDEX_SLOTS - 1);
    for _ in 0..INDEX_SLOTS {
        let i = *WORD_INDEX.get(slot)?;
        let (key, kind) = KEYWORDS.get(usize::from(i).checked_sub(1)?)?;
        if key.as_bytes() == upper {
            return Some(*kind);
        }
        slot = (slot + 1) & (INDEX_SLOTS - 1);
    }
    None
}

/// Number of keywords that pack (seven bytes or fewer).
const SHORT_KEYWORD_COUNT: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < KEYWORDS.len() {
        if pack_const(KEYWORDS[i].0.as_bytes()).is_some() {
            n += 1;
        }
        i += 1;
    }
    n
};

/// The keywords of [`KEYWORDS`] that pack, with their positions: at most a
/// quarter of the slots used (2,048 slots, 20 KiB), as most lookups miss and a
/// miss probes until an empty slot.
static SHORT_KEYWORDS: PackedTable<{ (SHORT_KEYWORD_COUNT * 4).next_power_of_two() }> = {
    let mut t = PackedTable::new();
    let mut i = 0;
    while i < KEYWORDS.len() {
        if let Some(key) = pack_const(KEYWORDS[i].0.as_bytes()) {
            t.insert(key, i as u16);
        }
        i += 1;
    }
    t
};

/// The longest keyword (longer words are not looked up).
const KEY_MAX: usize = 32;
/// Slots of the keyword index (a power of two, about four per keyword).
const INDEX_SLOTS: usize = 4096;

/// FNV-1a over the upper-cased bytes.
const fn hash(bytes: &[u8]) -> u32 {
    let mut h = 0x811c_9dc5u32;
    let mut i = 0;
    while i < bytes.len() {
        h = (h ^ bytes[i] as u32).wrapping_mul(0x0100_0193);
        i += 1;
    }
    h
}

/// Open-addressing index over [`KEYWORDS`]: per slot, the keyword's position + 1,
/// or 0 for an empty slot.
static WORD_INDEX: [u16; INDEX_SLOTS] = {
    assert!(KEYWORDS.len() < INDEX_SLOTS);
    let mut index = [0u16; INDEX_SLOTS];
    let mut i = 0;
    while i < KEYWORDS.len() {
        let mut slot = hash(KEYWORDS[i].0.as_bytes()) as usize & (INDEX_SLOTS - 1);
        while index[slot] != 0 {
            slot = (slot + 1) & (INDEX_SLOTS - 1);
        }
        index[slot] = (i + 1) as u16;
        i += 1;
    }
    index
};

/// Per length up to [`KEY_MAX`], a 1024-bit set over the (first, last) bytes of
/// the keywords of that length longer than a packed key (upper case): a word
/// whose bit is clear, once upper-cased, equals none of them.
struct LongFilter([[u64; 16]; KEY_MAX + 1]);

impl LongFilter {
    /// The bit of an upper-cased (first, last) pair.
    #[inline]
    const fn bit(first: u8, last: u8) -> usize {
        (first as usize * 31 + last as usize) & 1023
    }

    /// Whether `word` (longer than seven bytes) may be a keyword.
    #[inline]
    fn may_hold(&self, word: &[u8]) -> bool {
        let (Some(&first), Some(&last)) = (word.first(), word.last()) else {
            return false;
        };
        let b = Self::bit(first.to_ascii_uppercase(), last.to_ascii_uppercase());
        self.0
            .get(word.len())
            .is_some_and(|set| set[b / 64] & (1 << (b % 64)) != 0)
    }
}

static LONG_FILTER: LongFilter = {
    let mut f = LongFilter([[0; 16]; KEY_MAX + 1]);
    let mut i = 0;
    while i < KEYWORDS.len() {
        let k = KEYWORDS[i].0.as_bytes();
        if pack_const(k).is_none() {
            assert!(k.len() <= KEY_MAX);
            let b = LongFilter::bit(k[0], k[k.len() - 1]);
            f.0[k.len()][b / 64] |= 1 << (b % 64);
        }
        i += 1;
    }
    f
};

/// Whether `fingerprint` is in the fingerprint list, compared case-insensitively
/// (libinjection stores the fingerprints upper-cased in its keyword table).
///
/// Fingerprints are at most [`super::MAX_TOKENS`] letters, so each is packed
/// into one `u64` (see [`pack`]) and found in a hash table of such keys; a
/// longer input (never produced by the tokenizer) falls back to comparing
/// strings.
pub fn is_fingerprint(fingerprint: &[u8]) -> bool {
    match pack(fingerprint) {
        Some(key) => FINGERPRINT_SET.get(key).is_some(),
        None => search_strings(fingerprint),
    }
}

/// [`is_fingerprint`] of `bytes[..len]` (a [`super::Fingerprint`]'s buffer):
/// the key is packed from one load, the bytes past `len` masked off.
#[inline]
pub(crate) fn is_fingerprint_padded(bytes: &[u8; 8], len: usize) -> bool {
    if len > 7 {
        return search_strings(bytes.get(..len).unwrap_or(bytes));
    }
    let kept = !(u64::MAX >> (8 * len));
    let key = ascii_upper(u64::from_be_bytes(*bytes) & kept) | len as u64;
    FINGERPRINT_SET.get(key).is_some()
}

/// [`is_fingerprint`] by comparing strings: a binary search over [`FINGERPRINTS`]
/// with both sides upper-cased.
fn search_strings(fingerprint: &[u8]) -> bool {
    FINGERPRINTS
        .binary_search_by(|fp| {
            let a = fp.bytes().map(|c| c.to_ascii_uppercase());
            let b = fingerprint.iter().map(|&c| c.to_ascii_uppercase());
            a.cmp(b)
        })
        .is_ok()
}

/// Number of fingerprints that pack (all of them: at most five letters).
const PACKED_FINGERPRINT_COUNT: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < FINGERPRINTS.len() {
        if pack_const(FINGERPRINTS[i].as_bytes()).is_some() {
            n += 1;
        }
        i += 1;
    }
    n
};

/// Every fingerprint of [`FINGERPRINTS`] that packs (about half the slots
/// used: 128 KiB of keys for the 8,367 fingerprints).
static FINGERPRINT_SET: PackedTable<
    { (PACKED_FINGERPRINT_COUNT + PACKED_FINGERPRINT_COUNT / 2).next_power_of_two() },
> = {
    let mut t = PackedTable::new();
    let mut i = 0;
    while i < FINGERPRINTS.len() {
        if let Some(key) = pack_const(FINGERPRINTS[i].as_bytes()) {
            t.insert(key, 0);
        }
        i += 1;
    }
    t
};

/// [`is_fingerprint`] of a one-letter fingerprint, by a table.
#[inline]
pub(crate) fn is_one_letter_fingerprint(letter: u8) -> bool {
    ONE_LETTER_FINGERPRINTS[letter as usize]
}

/// Per byte, whether it alone is a fingerprint (case-insensitively).
static ONE_LETTER_FINGERPRINTS: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < FINGERPRINTS.len() {
        let f = FINGERPRINTS[i].as_bytes();
        if f.len() == 1 {
            let upper = f[0].to_ascii_uppercase();
            t[upper as usize] = true;
            t[upper.to_ascii_lowercase() as usize] = true;
        }
        i += 1;
    }
    t
};

/// C `cstrcasecmp(key, value, value.len()) == 0`: the value equals the upper-case key.
pub(crate) fn equals_upper(key: &str, value: &[u8]) -> bool {
    cstrcasecmp(key.as_bytes(), value) == Ordering::Equal
}

/// Whether `a b` (the two values joined by a space) may be a keyword; when
/// `false` it is certainly none.
///
/// Folding asks for every pair of adjacent word-like tokens whether they form
/// a multi-word keyword (`UNION ALL`, `IS NOT`); almost no pair of ordinary
/// words does. A set over the first bytes of the two parts of every keyword
/// split at one of its spaces answers most pairs without building the joined
/// word and looking it up.
#[inline]
pub(crate) fn may_be_two_words(a: &[u8], b: &[u8]) -> bool {
    match (a.first(), b.first()) {
        (Some(&x), Some(&y)) => TWO_WORD_FILTER.may_hold(x, y),
        // (no keyword starts or ends with a space; not worth a filter)
        _ => true,
    }
}

/// A 4096-bit set over (first byte of the left part, first byte of the right
/// part) of every keyword split at each of its spaces, upper case.
struct TwoWordFilter([u64; 64]);

impl TwoWordFilter {
    /// The bit of a pair of first bytes (of words not yet upper-cased).
    #[inline]
    const fn bit(a: u8, b: u8) -> usize {
        (((a.to_ascii_uppercase() as usize) << 6) ^ b.to_ascii_uppercase() as usize) & 4095
    }

    #[inline]
    fn may_hold(&self, a: u8, b: u8) -> bool {
        let bit = Self::bit(a, b);
        self.0
            .get(bit / 64)
            .is_some_and(|w| w & (1 << (bit % 64)) != 0)
    }
}

static TWO_WORD_FILTER: TwoWordFilter = {
    let mut f = TwoWordFilter([0; 64]);
    let mut i = 0;
    while i < KEYWORDS.len() {
        let k = KEYWORDS[i].0.as_bytes();
        let mut j = 0;
        while j + 1 < k.len() {
            if k[j] == b' ' {
                let bit = TwoWordFilter::bit(k[0], k[j + 1]);
                f.0[bit / 64] |= 1 << (bit % 64);
            }
            j += 1;
        }
        i += 1;
    }
    f
};

/// Whether some keyword begins with `head` (upper-cased) followed by `delim`.
///
/// The tokenizer splits a word after a leading keyword at a `.` or `` ` ``
/// (`SELECT.1`); it asks this at the word's first such delimiter to know
/// whether any longer prefix of the word, or the whole word, can still be a
/// keyword. Few keywords hold a `.` (`SYS.STRAGG`, `DBMS_LOCK.SLEEP`, ...)
/// and none a `` ` ``, so for almost every word the answer is no, and the
/// lookups of the longer prefixes are skipped.
pub(crate) fn keyword_continues_after(head: &[u8], delim: u8) -> bool {
    let heads = &DOTTED_HEADS;
    heads.lengths & (1 << head.len().min(63)) != 0
        && heads.heads[..heads.count].iter().any(|&(i, len, d)| {
            d == delim
                && len == head.len()
                && KEYWORDS
                    .get(i)
                    .and_then(|(k, _)| k.as_bytes().get(..len))
                    .is_some_and(|h| h.eq_ignore_ascii_case(head))
        })
}

/// The keywords that hold a `.` or `` ` ``: where their first one is.
struct DottedHeads {
    /// Bit `n` is set when some keyword's first delimiter is at `n` (63: 63
    /// or more).
    lengths: u64,
    /// (keyword position, position of its first delimiter, the delimiter)
    /// for the first `count` entries.
    heads: [(usize, usize, u8); 32],
    count: usize,
}

static DOTTED_HEADS: DottedHeads = {
    let mut d = DottedHeads {
        lengths: 0,
        heads: [(0, 0, 0); 32],
        count: 0,
    };
    let mut i = 0;
    while i < KEYWORDS.len() {
        let k = KEYWORDS[i].0.as_bytes();
        let mut j = 0;
        while j < k.len() {
            if k[j] == b'.' || k[j] == b'`' {
                let at = if j < 63 { j } else { 63 };
                d.lengths |= 1 << at;
                d.heads[d.count] = (i, j, k[j]);
                d.count += 1;
                break;
            }
            j += 1;
        }
        i += 1;
    }
    d
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
    fn one_letter_table_agrees_with_the_lookup() {
        for b in 0..=255u8 {
            assert_eq!(is_one_letter_fingerprint(b), is_fingerprint(&[b]), "{b}");
        }
    }

    #[test]
    fn fingerprint_lookup_is_case_insensitive() {
        assert!(is_fingerprint(b"s&sos"));
        assert!(is_fingerprint(b"1UE"));
        assert!(!is_fingerprint(b""));
        assert!(!is_fingerprint(b"zzzzz"));
    }

    /// The packed lookup answers as the string binary search for every
    /// fingerprint, its lower-case form, its prefixes and one-letter extensions.
    #[test]
    fn packed_fingerprints_agree_with_the_string_search() {
        let mut checked = 0;
        for fp in FINGERPRINTS.iter() {
            let upper = fp.as_bytes().to_vec();
            let lower = fp.to_ascii_lowercase().into_bytes();
            let mut probes = vec![upper.clone(), lower];
            probes.extend((0..upper.len()).map(|n| upper[..n].to_vec()));
            for extra in [b'1', b'k', b'\0', 0xff] {
                let mut longer = upper.clone();
                longer.push(extra);
                probes.push(longer);
            }
            for probe in probes {
                assert_eq!(is_fingerprint(&probe), search_strings(&probe), "{probe:?}");
                checked += 1;
            }
        }
        assert!(checked > FINGERPRINTS.len() * 4);
        assert!(!is_fingerprint(b"12345678"));
    }

    /// The hash index answers as libinjection's binary search with `cstrcasecmp`
    /// for every keyword, its lower-case form, every proper prefix and extension,
    /// and words with NUL or non-ASCII bytes.
    #[test]
    fn hash_index_agrees_with_the_binary_search() {
        let search = |word: &[u8]| {
            KEYWORDS
                .binary_search_by(|(key, _)| cstrcasecmp(key.as_bytes(), word))
                .ok()
                .map(|i| KEYWORDS[i].1)
        };
        let mut words: Vec<Vec<u8>> = Vec::new();
        for (key, _) in KEYWORDS
            .iter()
            .filter(|(k, _)| pack(k.as_bytes()).is_none())
        {
            let k = key.as_bytes();
            words.push(k.to_vec());
            words.push(k.to_ascii_lowercase());
            for n in 0..k.len() {
                words.push(k[..n].to_vec());
            }
            for extra in [&b"X"[..], b"\0", b"\xc3\xa9", b" "] {
                words.push([k, extra].concat());
            }
            let mut nul = k.to_vec();
            nul[0] = 0;
            words.push(nul);
        }
        words.push(vec![b'A'; 40]);
        for w in &words {
            assert_eq!(
                lookup_word(w),
                search(w),
                "{:?}",
                String::from_utf8_lossy(w)
            );
        }
    }

    /// libinjection's lookup: a binary search with `cstrcasecmp`.
    fn binary_search(word: &[u8]) -> Option<TokenType> {
        KEYWORDS
            .binary_search_by(|(key, _)| cstrcasecmp(key.as_bytes(), word))
            .ok()
            .map(|i| KEYWORDS[i].1)
    }

    /// The compile-time tables answer as the binary search for every keyword
    /// (short ones included), its lower-case form, its prefixes and extensions.
    #[test]
    fn packed_keywords_agree_with_the_binary_search() {
        for (key, _) in KEYWORDS.iter() {
            let k = key.as_bytes();
            let mut words = vec![k.to_vec(), k.to_ascii_lowercase()];
            words.extend((0..k.len()).map(|n| k[..n].to_vec()));
            for extra in [&b"X"[..], b"\0", b"\xff", b" ", b"."] {
                words.push([k, extra].concat());
            }
            for w in &words {
                assert_eq!(
                    lookup_word(w),
                    binary_search(w),
                    "{:?}",
                    String::from_utf8_lossy(w)
                );
            }
        }
    }

    /// Every split of every multi-word keyword at a space passes the filter,
    /// in any case.
    #[test]
    fn two_word_filter_admits_every_multi_word_keyword() {
        let mut splits = 0;
        for (key, _) in KEYWORDS.iter() {
            let k = key.as_bytes();
            for i in (0..k.len()).filter(|&i| k[i] == b' ') {
                let (a, b) = (&k[..i], &k[i + 1..]);
                assert!(may_be_two_words(a, b), "{key}");
                assert!(
                    may_be_two_words(&a.to_ascii_lowercase(), &b.to_ascii_lowercase()),
                    "{key}"
                );
                splits += 1;
            }
        }
        assert!(splits > 100);
        assert!(!may_be_two_words(b"Jane", b"Doe"));
        assert!(!may_be_two_words(b"SOCK", b"-"));
    }

    /// Every keyword that holds a `.` or `` ` `` continues after its head.
    #[test]
    fn dotted_heads_cover_every_dotted_keyword() {
        let mut dotted = 0;
        for (key, _) in KEYWORDS.iter() {
            let k = key.as_bytes();
            if let Some(i) = k.iter().position(|&b| b == b'.' || b == b'`') {
                assert!(keyword_continues_after(&k[..i], k[i]), "{key}");
                assert!(
                    keyword_continues_after(&k[..i].to_ascii_lowercase(), k[i]),
                    "{key}"
                );
                dotted += 1;
            }
        }
        assert!(dotted >= 10);
        assert!(!keyword_continues_after(b"json", b'.'));
        assert!(!keyword_continues_after(b"sys", b'`'));
    }

    /// Word parts that make multi-word and dotted keywords, and others.
    fn word_part() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            prop::sample::select(vec![
                "UNION",
                "all",
                "Distinct",
                "not",
                "IN",
                "is",
                "FROM",
                "group",
                "BY",
                "order",
                "natural",
                "left",
                "OUTER",
                "join",
                "for",
                "update",
                "skip",
                "locked",
                "sys",
                "stragg",
                "dbms_lock",
                "sleep",
                "utl_inaddr",
                "get_host_name",
                "ctxsys",
                "drithsx",
                "sn",
                "jane",
                "doe",
                "-",
                "+",
                "json",
                "x",
                "",
            ])
            .prop_map(|w| w.as_bytes().to_vec()),
            prop::collection::vec(prop::sample::select(b"aAbBnNuU_.` -0".to_vec()), 0..6),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// When the two words joined by a space are a keyword, the filter
        /// lets them through.
        #[test]
        fn two_word_filter_never_rejects_a_keyword(
            a in prop::collection::vec(word_part(), 1..3),
            b in prop::collection::vec(word_part(), 1..3),
        ) {
            let (a, b) = (a.join(&b' '), b.join(&b' '));
            let joined = [&a[..], b" ", &b[..]].concat();
            if lookup_word(&joined).is_some() {
                prop_assert!(may_be_two_words(&a, &b));
            }
        }

        /// When a word with a `.` or `` ` `` is a keyword, it continues after
        /// the part before its first delimiter.
        #[test]
        fn dotted_heads_never_reject_a_keyword(parts in prop::collection::vec(word_part(), 1..4)) {
            let w = parts.join(&b'.');
            if let Some(i) = w.iter().position(|&b| b == b'.' || b == b'`') {
                for end in i + 1..=w.len() {
                    if lookup_word(&w[..end]).is_some() {
                        prop_assert!(keyword_continues_after(&w[..i], w[i]));
                    }
                }
            }
        }
    }
}
