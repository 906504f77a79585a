//! Keyword and fingerprint lookup in the compiled-in tables: words and
//! fingerprints of up to seven bytes packed into a `u64` and found in a hash
//! table of such keys; longer keywords through a hash index of the table.

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
/// libinjection binary-searches the table with `cstrcasecmp`, which finds a key
/// exactly when the key equals the word with its ASCII letters upper-cased (keys
/// are upper case and hold no NUL); here one hash probe finds it (the tokenizer
/// looks words up about 700 times per kilobyte of input).
pub fn lookup_word(word: &[u8]) -> Option<TokenType> {
    // Most words are short: one probe of the packed table, without hashing
    // byte by byte or comparing strings.
    if let Some(key) = pack(word) {
        let kind = short_keywords().get(key)?;
        return KEYWORDS.get(usize::from(kind)).map(|&(_, t)| t);
    }
    // Most long words are no keyword: told by their length and end bytes.
    if !long_filter().may_hold(word) {
        return None;
    }
    let mut upper = [0u8; KEY_MAX];
    let upper = upper.get_mut(..word.len())?;
    for (u, &b) in upper.iter_mut().zip(word) {
        *u = b.to_ascii_uppercase();
    }
    let index = word_index();
    let mut slot = hash(upper) as usize & (index.len() - 1);
    loop {
        let i = *index.get(slot)?;
        let (key, kind) = KEYWORDS.get(usize::from(i).checked_sub(1)?)?;
        if key.as_bytes() == upper {
            return Some(*kind);
        }
        slot = (slot + 1) & (index.len() - 1);
    }
}

/// The longest keyword (longer words are not looked up).
const KEY_MAX: usize = 32;
/// Slots of the keyword index (a power of two, about four per keyword).
const INDEX_SLOTS: usize = 4096;

/// FNV-1a over the upper-cased bytes.
fn hash(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// Per length up to [`KEY_MAX`], a 1024-bit set over the (first, last) bytes of
/// the keywords of that length longer than a packed key (upper case): a word
/// whose bit is clear, once upper-cased, equals none of them.
struct LongFilter([[u64; 16]; KEY_MAX + 1]);

impl LongFilter {
    /// The bit of an upper-cased (first, last) pair.
    #[inline]
    fn bit(first: u8, last: u8) -> usize {
        (usize::from(first) * 31 + usize::from(last)) & 1023
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

fn long_filter() -> &'static LongFilter {
    static FILTER: std::sync::OnceLock<LongFilter> = std::sync::OnceLock::new();
    FILTER.get_or_init(|| {
        let mut f = LongFilter([[0; 16]; KEY_MAX + 1]);
        for (key, _) in KEYWORDS
            .iter()
            .filter(|(k, _)| pack(k.as_bytes()).is_none())
        {
            let k = key.as_bytes();
            if let (Some(&first), Some(&last), Some(set)) =
                (k.first(), k.last(), f.0.get_mut(k.len()))
            {
                let b = LongFilter::bit(first, last);
                set[b / 64] |= 1 << (b % 64);
            }
        }
        f
    })
}

/// Open-addressing index over [`KEYWORDS`]: per slot, the keyword's position + 1,
/// or 0 for an empty slot.
fn word_index() -> &'static [u16] {
    static INDEX: std::sync::OnceLock<Vec<u16>> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index = vec![0u16; INDEX_SLOTS];
        for (i, (key, _)) in KEYWORDS.iter().enumerate() {
            let mut slot = hash(key.as_bytes()) as usize & (INDEX_SLOTS - 1);
            while index[slot] != 0 {
                slot = (slot + 1) & (INDEX_SLOTS - 1);
            }
            index[slot] = (i + 1) as u16;
        }
        index
    })
}

/// Whether `fingerprint` is in the fingerprint list, compared case-insensitively
/// (libinjection stores the fingerprints upper-cased in its keyword table).
///
/// Fingerprints are at most [`super::MAX_TOKENS`] letters, so each is packed
/// into one `u64` (see [`pack`]) and found in a hash table of such keys; a
/// longer input (never produced by the tokenizer) falls back to comparing
/// strings.
pub fn is_fingerprint(fingerprint: &[u8]) -> bool {
    match pack(fingerprint) {
        Some(key) => packed_fingerprints().get(key).is_some(),
        None => search_strings(fingerprint),
    }
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

/// Up to seven bytes, upper-cased, in the high bytes of a `u64` and the length
/// in the low byte: equal keys exactly when the upper-cased strings are equal.
/// Never 0 but for the empty string.
fn pack(fp: &[u8]) -> Option<u64> {
    if fp.len() > 7 {
        return None;
    }
    let mut key = fp.len() as u64;
    for (i, &b) in fp.iter().enumerate() {
        key |= u64::from(b.to_ascii_uppercase()) << (56 - 8 * i);
    }
    Some(key)
}

/// An open-addressing hash table of packed keys (see [`pack`]) with a `u16`
/// each: one multiply and, mostly, one probe per lookup.
struct PackedTable {
    /// Per slot: the key (0: empty) and its value.
    slots: Vec<(u64, u16)>,
    /// The empty string's value, if it is a key.
    empty: Option<u16>,
}

impl PackedTable {
    /// A table of `entries`, with at least twice as many slots.
    fn new(entries: impl Iterator<Item = (u64, u16)>) -> PackedTable {
        let entries: Vec<(u64, u16)> = entries.collect();
        let n = (entries.len() * 2).next_power_of_two().max(16);
        let mut t = PackedTable {
            slots: vec![(0, 0); n],
            empty: None,
        };
        for (key, value) in entries {
            if key == 0 {
                t.empty.get_or_insert(value);
                continue;
            }
            let mut slot = t.slot(key);
            loop {
                match t.slots[slot] {
                    (0, _) => {
                        t.slots[slot] = (key, value);
                        break;
                    }
                    // The first entry of a key wins (as a binary search over
                    // deduplicated keys finds one).
                    (k, _) if k == key => break,
                    _ => slot = (slot + 1) & (n - 1),
                }
            }
        }
        t
    }

    /// The home slot of `key`.
    #[inline]
    fn slot(&self, key: u64) -> usize {
        let bits = self.slots.len().trailing_zeros();
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
    }

    /// The value of `key`.
    #[inline]
    fn get(&self, key: u64) -> Option<u16> {
        if key == 0 {
            return self.empty;
        }
        let mask = self.slots.len() - 1;
        let mut slot = self.slot(key);
        loop {
            match *self.slots.get(slot)? {
                (0, _) => return None,
                (k, v) if k == key => return Some(v),
                _ => slot = (slot + 1) & mask,
            }
        }
    }
}

/// Every fingerprint of [`FINGERPRINTS`] that packs.
fn packed_fingerprints() -> &'static PackedTable {
    static PACKED: std::sync::OnceLock<PackedTable> = std::sync::OnceLock::new();
    PACKED.get_or_init(|| {
        PackedTable::new(
            FINGERPRINTS
                .iter()
                .filter_map(|fp| pack(fp.as_bytes()))
                .map(|k| (k, 0)),
        )
    })
}

/// The keywords of [`KEYWORDS`] that pack, with their positions.
fn short_keywords() -> &'static PackedTable {
    static SHORT: std::sync::OnceLock<PackedTable> = std::sync::OnceLock::new();
    SHORT.get_or_init(|| {
        PackedTable::new(
            KEYWORDS
                .iter()
                .enumerate()
                .filter_map(|(i, (key, _))| Some((pack(key.as_bytes())?, u16::try_from(i).ok()?))),
        )
    })
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
}
