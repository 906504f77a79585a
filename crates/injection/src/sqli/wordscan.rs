//! Finding where a word ends.
//!
//! The tokenizer reads a word up to the first byte of its end set (space,
//! operators, quotes, ...) and notes the first `.` or `` ` `` in it, where a
//! leading keyword splits the word (`SELECT.1`). Inside an input words are
//! short and the byte-class table is the fastest. A value that is one word,
//! though, is often a long name (`json.customer.loyalty.tier`) made of
//! letters, digits, `_` and `.`: there a block of sixteen such bytes is
//! recognised with a few vector compares (the loop is written so that the
//! compiler vectorises it), and only the other bytes go through the table.

/// What a byte means to the word scanner.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum WordByte {
    /// Part of the word.
    Letter,
    /// Ends the word.
    End,
    /// `.` or `` ` ``: part of the word, but a leading keyword splits there.
    Delim,
}

/// The length of the word at the start of `s`, given the class of every byte,
/// and the position of its first [`WordByte::Delim`] byte: byte by byte, for
/// the words inside an input, which are mostly short.
#[inline]
pub(crate) fn scan_word(s: &[u8], classes: &[WordByte; 256]) -> (usize, Option<usize>) {
    scan_bytes(s, 0, None, classes)
}

/// [`scan_word`] for a word that is likely the whole of `s` (a value that is
/// one word, often a long dotted name): sixteen bytes at a time, and the last
/// sixteen bytes at once.
#[inline]
pub(crate) fn scan_whole_word(s: &[u8], classes: &[WordByte; 256]) -> (usize, Option<usize>) {
    let mut first_delim = None;
    let mut i = 0;
    // blocks of letters, digits, '_' and '.'
    while let Some(block) = s.get(i..).and_then(|r| r.first_chunk::<16>()) {
        let (plain, dot) = classify(block);
        if !plain {
            return scan_bytes(s, i, first_delim, classes);
        }
        if dot && first_delim.is_none() {
            first_delim = block.iter().position(|&b| b == b'.').map(|k| i + k);
        }
        i += 16;
    }
    // the last sixteen bytes, overlapping those above
    if i < s.len() {
        if let Some(block) = s.last_chunk::<16>() {
            let (plain, dot) = classify(block);
            if plain {
                if dot && first_delim.is_none() {
                    // (the bytes before `i` hold no '.': this is the first)
                    let at = s.len() - 16;
                    first_delim = block.iter().position(|&b| b == b'.').map(|k| at + k);
                }
                return (s.len(), first_delim);
            }
        }
    }
    scan_bytes(s, i, first_delim, classes)
}

/// The scan from `i` on, with the first delimiter found before `i`.
#[inline]
fn scan_bytes(
    s: &[u8],
    mut i: usize,
    mut first_delim: Option<usize>,
    classes: &[WordByte; 256],
) -> (usize, Option<usize>) {
    while let Some(&b) = s.get(i) {
        match classes[b as usize] {
            WordByte::Letter => {}
            WordByte::End => return (i, first_delim),
            WordByte::Delim => {
                if first_delim.is_none() {
                    first_delim = Some(i);
                }
            }
        }
        i += 1;
    }
    (s.len(), first_delim)
}

/// Whether all sixteen bytes are ASCII letters, digits, `_` or `.`, and
/// whether one is a `.`. Branch-free, so that it vectorises.
#[inline]
fn classify(block: &[u8; 16]) -> (bool, bool) {
    let mut plain = true;
    let mut dot = false;
    for &b in block {
        let digit = b.wrapping_sub(b'0') < 10;
        let letter = (b | 0x20).wrapping_sub(b'a') < 26;
        plain &= digit | letter | (b == b'.') | (b == b'_');
        dot |= b == b'.';
    }
    (plain, dot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A class table as the tokenizer's: spaces and operators end a word.
    fn classes() -> [WordByte; 256] {
        let mut t = [WordByte::Letter; 256];
        for &b in b" []{}<>:\\?=@!#~+-*/&|^%(),';\t\n\x0b\x0c\r\"\xa0\0" {
            t[b as usize] = WordByte::End;
        }
        t[b'.' as usize] = WordByte::Delim;
        t[b'`' as usize] = WordByte::Delim;
        t
    }

    /// The byte loop the block scan replaces.
    fn scan_by_bytes(s: &[u8], classes: &[WordByte; 256]) -> (usize, Option<usize>) {
        let mut first_delim = None;
        for (i, &b) in s.iter().enumerate() {
            match classes[b as usize] {
                WordByte::Letter => {}
                WordByte::End => return (i, first_delim),
                WordByte::Delim => {
                    first_delim.get_or_insert(i);
                }
            }
        }
        (s.len(), first_delim)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10000))]

        /// The block scan finds the same end and first delimiter as the byte
        /// loop, for words of plain bytes with any bytes mixed in.
        #[test]
        fn block_scan_agrees_with_the_byte_loop(
            s in prop::collection::vec(
                prop_oneof![
                    8 => prop::sample::select(
                        b"azAZ09_.Mm5".to_vec(),
                    ),
                    1 => any::<u8>(),
                ],
                0..80,
            )
        ) {
            let t = classes();
            prop_assert_eq!(scan_word(&s, &t), scan_by_bytes(&s, &t));
            prop_assert_eq!(scan_whole_word(&s, &t), scan_by_bytes(&s, &t));
        }
    }

    /// Every byte value in every position of a block of letters.
    #[test]
    fn every_byte_in_every_position() {
        let t = classes();
        for b in 0..=255u8 {
            for at in 0..40 {
                let mut s = [b'a'; 40];
                s[at] = b;
                for n in [at + 1, 16, 17, 31, 32, 33, 40] {
                    let s = &s[..n.max(at + 1)];
                    assert_eq!(
                        scan_whole_word(s, &t),
                        scan_by_bytes(s, &t),
                        "{b} at {at} of {n}"
                    );
                }
            }
        }
    }
}
