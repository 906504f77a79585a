//! Trigger bytes: for a transformation, a set of bytes such that a value holding
//! none of them comes out unchanged (`urlDecode` needs a `%` or `+`, `lowercase` an
//! upper-case letter). A chain whose transformations' triggers all miss a value's
//! bytes leaves the value as it is, so the memo takes the raw value for it without
//! running the chain (see [`crate::chains::ChainTable::triggers`]).
//!
//! Each set mirrors the test its transformation makes before changing anything;
//! the property test below checks every set against its transformation.

use super::Transformation;

/// A set of bytes, one bit per byte value.
pub type ByteMask = [u64; 4];

/// The set holding `bytes`.
const fn mask(bytes: &[u8]) -> ByteMask {
    let mut m = [0u64; 4];
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        m[(b >> 6) as usize] |= 1 << (b & 63);
        i += 1;
    }
    m
}

/// The set of the bytes from `lo` to `hi`.
const fn range(lo: u8, hi: u8) -> ByteMask {
    let mut m = [0u64; 4];
    let mut b = lo as usize;
    while b <= hi as usize {
        m[b >> 6] |= 1 << (b & 63);
        b += 1;
    }
    m
}

const fn or(a: ByteMask, b: ByteMask) -> ByteMask {
    [a[0] | b[0], a[1] | b[1], a[2] | b[2], a[3] | b[3]]
}

/// C `isspace`: what the whitespace transformations treat as whitespace.
const C_SPACE: ByteMask = mask(b" \t\n\x0b\x0c\r");

impl Transformation {
    /// The bytes without which the transformation leaves a value unchanged;
    /// `None` when it may change any value (encoders, digests, `length`, ...).
    pub fn triggers(self) -> Option<ByteMask> {
        Some(match self {
            Self::None => [0; 4],
            Self::Lowercase => range(b'A', b'Z'),
            Self::Uppercase => range(b'a', b'z'),
            Self::UrlDecode | Self::UrlDecodeUni => mask(b"%+"),
            Self::HtmlEntityDecode => mask(b"&"),
            Self::JsDecode | Self::CssDecode | Self::EscapeSeqDecode => mask(b"\\"),
            Self::SqlHexDecode => mask(b"0"),
            Self::CmdLine => or(range(b'A', b'Z'), mask(b"\"'\\^ ,;\t\r\n")),
            Self::CompressWhitespace | Self::Trim | Self::TrimLeft | Self::TrimRight => C_SPACE,
            Self::RemoveWhitespace => or(C_SPACE, mask(&[0xa0, 0xc2])),
            Self::RemoveNulls | Self::ReplaceNulls => mask(&[0]),
            Self::RemoveComments => mask(b"/<-#"),
            Self::RemoveCommentsChar => mask(b"/*<-#"),
            Self::ReplaceComments => mask(b"/"),
            Self::NormalisePath => mask(b"./"),
            Self::NormalisePathWin => mask(b"./\\"),
            Self::Utf8ToUnicode => or(mask(&[0]), range(0x80, 0xff)),
            Self::UrlEncode
            | Self::HexDecode
            | Self::HexEncode
            | Self::Base64Decode
            | Self::Base64DecodeExt
            | Self::Base64Encode
            | Self::Length
            | Self::Md5
            | Self::Sha1
            | Self::ParityEven7bit
            | Self::ParityOdd7bit
            | Self::ParityZero7bit => return None,
        })
    }
}

impl Transformation {
    /// Whether the transformation changes nothing but the case of ASCII letters,
    /// whatever the value (`lowercase`, `uppercase`): its result is its input up
    /// to case, without comparing them.
    #[inline]
    pub fn changes_only_case(self) -> bool {
        matches!(self, Self::Lowercase | Self::Uppercase)
    }

    /// The bytes without which the transformation changes a value at most in the
    /// case of its ASCII letters, which the prefilter's case-insensitive scan does
    /// not see: `lowercase` needs none, `cmdLine` only its punctuation and
    /// whitespace. `None` when it may change any value.
    pub fn scan_triggers(self) -> Option<ByteMask> {
        match self {
            t if t.changes_only_case() => Some([0; 4]),
            Self::CmdLine => Some(mask(b"\"'\\^ ,;\t\r\n")),
            t => t.triggers(),
        }
    }
}

/// `m` with both cases of each ASCII letter it holds: a set a value lacks stays
/// lacking after a change of case.
pub fn fold_case(m: ByteMask) -> ByteMask {
    let (upper, lower) = (range(b'A', b'Z')[1], range(b'a', b'z')[1]);
    let w = m[1];
    [
        m[0],
        w | ((w & upper) << 32) | ((w & lower) >> 32),
        m[2],
        m[3],
    ]
}

/// `m` with each upper-case ASCII letter replaced by its lower case: the bytes of
/// a value lower-cased, from the bytes of the value.
pub fn lowered(m: &ByteMask) -> ByteMask {
    let upper = range(b'A', b'Z')[1];
    let w = m[1];
    [m[0], (w & !upper) | ((w & upper) << 32), m[2], m[3]]
}

/// Values at least this long get their presence set through a byte table.
const TABLE_FROM: usize = 32;

/// The bytes of `value`.
///
/// A short value sets its bits word by word. Each byte then reads and writes
/// the word the previous one may have written, so a byte waits for the last
/// store: about 0.75 ns a byte here. From [`TABLE_FROM`] bytes on, each byte is
/// one store into a table of flags, which no later byte reads, and the table
/// is folded into the four words once, eight flags per multiplication: about
/// 0.2 ns a byte and 12 ns per value (`presence_paths_agree` checks both
/// paths against each other).
pub fn presence(value: &[u8]) -> ByteMask {
    if value.len() < TABLE_FROM {
        presence_by_word(value)
    } else {
        presence_by_table(value)
    }
}

fn presence_by_word(value: &[u8]) -> ByteMask {
    let mut m = [0u64; 4];
    for &b in value {
        m[usize::from(b >> 6)] |= 1 << (b & 63);
    }
    m
}

fn presence_by_table(value: &[u8]) -> ByteMask {
    let mut seen = [0u8; 256];
    for &b in value {
        seen[usize::from(b)] = 1;
    }
    let mut m = [0u64; 4];
    for (word, flags) in m.iter_mut().zip(seen.chunks_exact(64)) {
        for (k, eight) in flags.chunks_exact(8).enumerate() {
            let mut x = [0u8; 8];
            x.copy_from_slice(eight);
            // Flag `i` (0 or 1, in byte `i`) lands in bit `56 + i`: the products
            // of the flags with the multiplier's bytes never carry into each other.
            let bits = u64::from_le_bytes(x).wrapping_mul(0x0102_0408_1020_4080) >> 56;
            *word |= bits << (8 * k);
        }
    }
    m
}

/// The bytes of a value as trigger tests see them (`presence`: its bytes): a
/// `.` counts only when the value ends with one. The `.` is a trigger byte of
/// the path normalisations alone, and they change a value without separators
/// only through a `.` ending it (a lone `.` or `..` segment: `ab..` gives the
/// empty string), while a `.` inside a value (`json.a.b`, `4.5`) is copied as it
/// is. A chain whose triggers this view lacks has each of its transformations
/// see the raw value, so none changes it.
#[inline]
pub fn trigger_view(mut presence: ByteMask, value: &[u8]) -> ByteMask {
    if value.last() != Some(&b'.') {
        presence[0] &= !(1 << b'.');
    }
    presence
}

/// Whether two sets have no byte in common.
#[inline]
pub fn disjoint(a: &ByteMask, b: &ByteMask) -> bool {
    (a[0] & b[0]) | (a[1] & b[1]) | (a[2] & b[2]) | (a[3] & b[3]) == 0
}

/// The union of two optional sets (`None`: every byte).
pub fn union(a: Option<ByteMask>, b: Option<ByteMask>) -> Option<ByteMask> {
    Some(or(a?, b?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64: deterministic test values.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn has(m: &ByteMask, b: u8) -> bool {
        m[usize::from(b >> 6)] & (1 << (b & 63)) != 0
    }

    #[test]
    fn values_without_trigger_bytes_are_left_unchanged() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut out = Vec::new();
        let mut checked = 0;
        for &t in Transformation::ALL {
            let Some(tr) = t.triggers() else {
                continue;
            };
            let alphabet: Vec<u8> = (0..=255u8).filter(|&b| !has(&tr, b)).collect();
            // Punctuation and digits are where transformations look: drawn more
            // often than their share of the alphabet.
            let favoured: Vec<u8> = alphabet
                .iter()
                .copied()
                .filter(|b| b.is_ascii_punctuation() || b.is_ascii_digit() || *b == b' ')
                .collect();
            for _ in 0..4000 {
                let len = (rng.next() % 48) as usize;
                let value: Vec<u8> = (0..len)
                    .map(|_| {
                        let r = rng.next();
                        let pool = if r.is_multiple_of(2) && !favoured.is_empty() {
                            &favoured
                        } else {
                            &alphabet
                        };
                        pool[((r >> 8) % pool.len() as u64) as usize]
                    })
                    .collect();
                let changed = t.apply(&value, &mut out);
                assert!(
                    !changed || out == value,
                    "{} changed {:?}, which holds none of its trigger bytes",
                    t.name(),
                    String::from_utf8_lossy(&value)
                );
                checked += 1;
            }
        }
        assert!(checked >= 20 * 4000, "only {checked} values checked");
    }

    #[test]
    fn values_whose_trigger_view_lacks_the_triggers_are_left_unchanged() {
        let mut rng = Rng(0x6a09_e667_f3bc_c908);
        let mut out = Vec::new();
        let (mut checked, mut dotted) = (0, 0);
        for &t in Transformation::ALL {
            let Some(tr) = t.triggers() else {
                continue;
            };
            // The bytes the view may hide (`.`) join the alphabet, drawn often
            // so that `..` and `.` segments occur everywhere but at the end.
            let mut alphabet: Vec<u8> = (0..=255u8).filter(|&b| !has(&tr, b)).collect();
            alphabet.push(b'.');
            let punct: Vec<u8> = alphabet
                .iter()
                .copied()
                .filter(|b| b.is_ascii_punctuation() || b.is_ascii_digit())
                .collect();
            for _ in 0..4000 {
                let len = (rng.next() % 24) as usize;
                let value: Vec<u8> = (0..len)
                    .map(|_| match rng.next() % 4 {
                        0 => b'.',
                        1 => punct[(rng.next() % punct.len() as u64) as usize],
                        _ => alphabet[(rng.next() % alphabet.len() as u64) as usize],
                    })
                    .collect();
                if !disjoint(&tr, &trigger_view(presence(&value), &value)) {
                    continue;
                }
                dotted += usize::from(value.contains(&b'.'));
                let changed = t.apply(&value, &mut out);
                assert!(
                    !changed || out == value,
                    "{} changed {:?}, whose trigger view holds none of its trigger bytes",
                    t.name(),
                    String::from_utf8_lossy(&value)
                );
                checked += 1;
            }
        }
        assert!(checked >= 20 * 3000, "only {checked} values checked");
        assert!(dotted >= 20 * 1000, "only {dotted} values with a dot");
        // A final `.` stays visible: `ab..` and `.` are changed by the path
        // normalisations.
        for v in [&b"ab.."[..], b"."] {
            assert!(!disjoint(
                &Transformation::NormalisePath.triggers().unwrap_or_default(),
                &trigger_view(presence(v), v)
            ));
            assert!(Transformation::NormalisePath.apply(v, &mut out));
        }
    }

    #[test]
    fn values_without_scan_trigger_bytes_change_only_in_case() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut out = Vec::new();
        let mut checked = 0;
        for &t in Transformation::ALL {
            let Some(tr) = t.scan_triggers() else {
                continue;
            };
            let alphabet: Vec<u8> = (0..=255u8).filter(|&b| !has(&tr, b)).collect();
            for _ in 0..4000 {
                let len = (rng.next() % 48) as usize;
                let value: Vec<u8> = (0..len)
                    .map(|_| alphabet[(rng.next() % alphabet.len() as u64) as usize])
                    .collect();
                if t.apply(&value, &mut out) {
                    assert!(
                        out.eq_ignore_ascii_case(&value),
                        "{} changed {:?} beyond case",
                        t.name(),
                        String::from_utf8_lossy(&value)
                    );
                }
                checked += 1;
            }
        }
        assert!(checked >= 20 * 4000, "only {checked} values checked");
        assert_eq!(Transformation::Lowercase.scan_triggers(), Some([0; 4]));
        assert!(has(
            &Transformation::CmdLine.scan_triggers().unwrap_or_default(),
            b';'
        ));
        assert!(!has(
            &Transformation::CmdLine.scan_triggers().unwrap_or_default(),
            b'Q'
        ));
    }

    #[test]
    fn presence_paths_agree() {
        let all: Vec<u8> = (0..=255u8).rev().collect();
        let mut rng = Rng(0x510e_527f_ade6_82d1);
        let mut values: Vec<Vec<u8>> = vec![Vec::new(), all.clone(), all[..40].to_vec()];
        for _ in 0..2000 {
            let len = (rng.next() % 200) as usize;
            values.push((0..len).map(|_| (rng.next() % 256) as u8).collect());
        }
        for value in &values {
            let by_word = presence_by_word(value);
            assert_eq!(presence_by_table(value), by_word, "{value:?}");
            assert_eq!(presence(value), by_word, "{value:?}");
            for &b in value {
                assert!(has(&by_word, b));
            }
            assert_eq!(
                by_word.iter().map(|w| w.count_ones()).sum::<u32>() as usize,
                value
                    .iter()
                    .collect::<std::collections::BTreeSet<_>>()
                    .len()
            );
        }
    }

    #[test]
    fn case_folding_adds_the_other_case_of_letters() {
        let m = fold_case(mask(b"aZ%"));
        assert_eq!(m, mask(b"aAzZ%"));
        assert_eq!(fold_case(mask(b"@[`{")), mask(b"@[`{"));
    }

    #[test]
    fn lowering_a_set_gives_the_bytes_of_the_lower_cased_value() {
        let all: Vec<u8> = (0..=255u8).collect();
        for value in [&b"aZ%@[`{"[..], b"ABC xyz", b"", &all] {
            let mut expected = [0u64; 4];
            crate::prefilter::bytes::presence(value, &mut expected);
            assert_eq!(lowered(&presence(value)), expected, "{value:?}");
        }
    }

    #[test]
    fn triggers_hold_the_bytes_that_change_values() {
        let mut out = Vec::new();
        for (t, value) in [
            (Transformation::Lowercase, &b"A"[..]),
            (Transformation::UrlDecode, b"a+b"),
            (Transformation::HtmlEntityDecode, b"&lt;"),
            (Transformation::JsDecode, b"\\x41"),
            (Transformation::CmdLine, b"a;b"),
            (Transformation::RemoveWhitespace, b"a b"),
            (Transformation::NormalisePath, b"a/./b"),
            (Transformation::Utf8ToUnicode, "é".as_bytes()),
        ] {
            assert!(t.apply(value, &mut out), "{}", t.name());
            let tr = t.triggers().unwrap_or([u64::MAX; 4]);
            assert!(!disjoint(&tr, &presence(value)), "{}", t.name());
        }
        assert_eq!(Transformation::Length.triggers(), None);
        assert_eq!(union(Some(mask(b"a")), None), None);
        assert_eq!(union(Some(mask(b"a")), Some(mask(b"b"))), Some(mask(b"ab")));
    }
}
