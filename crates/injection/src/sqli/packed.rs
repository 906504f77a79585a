//! Packed keys: a word of up to seven bytes, upper-cased, in one `u64`, and a
//! hash table of such keys built at compile time.
//!
//! The tokenizer looks up nearly every word it reads in the keyword table, and
//! every fingerprint in the fingerprint list. Packing a word is a couple of
//! loads and a few arithmetic instructions; finding its key is one multiply
//! and, mostly, one or two compares against a table that lives in the binary
//! (no hashing byte by byte, no string compares, no lazy initialisation).

/// Up to seven bytes, upper-cased, in the high bytes of a `u64` and the length
/// in the low byte: equal keys exactly when the upper-cased strings are equal.
/// Never 0 but for the empty string; `None` for longer words.
///
/// Branch-light: two overlapping big-endian loads (or three single bytes) and
/// a word-at-a-time upper-casing, rather than a loop over the bytes.
#[inline]
pub(crate) fn pack(w: &[u8]) -> Option<u64> {
    let n = w.len();
    let bytes = if let (Some(head), Some(tail)) = (w.first_chunk::<4>(), w.last_chunk::<4>()) {
        if n > 7 {
            return None;
        }
        // bytes 0..4 and n-4..n; where they overlap they are the same bytes
        (u64::from(u32::from_be_bytes(*head)) << 32)
            | (u64::from(u32::from_be_bytes(*tail)) << (64 - 8 * n))
    } else if let (Some(&first), Some(&mid), Some(&last)) = (w.first(), w.get(n / 2), w.last()) {
        // one to three bytes: 0, n/2 and n-1 cover them
        (u64::from(first) << 56)
            | (u64::from(mid) << (56 - 8 * (n / 2)))
            | (u64::from(last) << (56 - 8 * (n - 1)))
    } else {
        0
    };
    Some(ascii_upper(bytes) | n as u64)
}

/// [`pack`] as a plain loop over the bytes, for building tables at compile time.
pub(crate) const fn pack_const(w: &[u8]) -> Option<u64> {
    if w.len() > 7 {
        return None;
    }
    let mut key = w.len() as u64;
    let mut i = 0;
    while i < w.len() {
        key |= (w[i].to_ascii_uppercase() as u64) << (56 - 8 * i);
        i += 1;
    }
    Some(key)
}

/// `u64::to_be_bytes(x).map(|b| b.to_ascii_uppercase())`, eight bytes at once.
#[inline]
pub(crate) fn ascii_upper(x: u64) -> u64 {
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const SMALL_A: u64 = u64::from_ne_bytes([b'a'; 8]);
    const PAST_SMALL_Z: u64 = u64::from_ne_bytes([b'z' + 1; 8]);
    // With each byte's high bit forced on, subtracting cannot borrow across
    // bytes; the high bit of the difference then tells whether the low seven
    // bits reached the subtrahend.
    let at_least_a = (x | HIGHS).wrapping_sub(SMALL_A);
    let past_z = (x | HIGHS).wrapping_sub(PAST_SMALL_Z);
    let lower = at_least_a & !past_z & !x & HIGHS;
    // 0x80 >> 2 is the 0x20 between cases
    x - (lower >> 2)
}

/// An open-addressing (linear probing) hash table of non-zero packed keys
/// with a `u16` each, of `N` slots (a power of two, at least one empty).
pub(crate) struct PackedTable<const N: usize> {
    /// Per slot: the key, 0 for an empty slot.
    keys: [u64; N],
    /// Per slot: the key's value.
    values: [u16; N],
    /// Number of keys.
    len: usize,
}

impl<const N: usize> PackedTable<N> {
    /// An empty table.
    pub(crate) const fn new() -> Self {
        assert!(N.is_power_of_two());
        PackedTable {
            keys: [0; N],
            values: [0; N],
            len: 0,
        }
    }

    /// The home slot of `key` (Fibonacci hashing: the high bits of a multiply).
    #[inline]
    const fn home(key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - N.trailing_zeros())) as usize
    }

    /// Adds `key` (non-zero) with `value`; a key already present keeps its
    /// first value (as a binary search over deduplicated keys finds one).
    /// Fails the build when the table would have no empty slot left.
    pub(crate) const fn insert(&mut self, key: u64, value: u16) {
        assert!(key != 0);
        let mut slot = Self::home(key);
        loop {
            if self.keys[slot] == 0 {
                assert!(self.len + 1 < N, "packed table too small");
                self.keys[slot] = key;
                self.values[slot] = value;
                self.len += 1;
                return;
            }
            if self.keys[slot] == key {
                return;
            }
            slot = (slot + 1) & (N - 1);
        }
    }

    /// The value of `key` (never found for 0, the empty string's key).
    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<u16> {
        let mut slot = Self::home(key);
        // (at most N probes; the table always has an empty slot)
        for _ in 0..N {
            let k = *self.keys.get(slot)?;
            if k == 0 {
                return None;
            }
            if k == key {
                return self.values.get(slot).copied();
            }
            slot = (slot + 1) & (N - 1);
        }
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// The word-at-a-time packing equals the byte loop, for any bytes
        /// (letters, the bytes next to them, NUL and high bytes).
        #[test]
        fn pack_agrees_with_the_byte_loop(
            w in prop::collection::vec(
                prop_oneof![
                    any::<u8>(),
                    prop::sample::select(b"@AZ[`az{\x00\x7f\x80\xc1\xdaxX_.".to_vec()),
                ],
                0..10,
            )
        ) {
            prop_assert_eq!(pack(&w), pack_const(&w));
        }
    }

    #[test]
    fn table_finds_what_was_inserted() {
        let mut t = PackedTable::<16>::new();
        let words: [&[u8]; 5] = [b"A", b"SELECT", b"or", b"1", b"x_y"];
        for (i, w) in words.iter().enumerate() {
            t.insert(pack_const(w).unwrap(), i as u16);
        }
        for (i, w) in words.iter().enumerate() {
            assert_eq!(t.get(pack(w).unwrap()), Some(i as u16));
            assert_eq!(
                t.get(pack(&w.to_ascii_lowercase()).unwrap()),
                Some(i as u16)
            );
        }
        assert_eq!(t.get(pack(b"").unwrap()), None);
        assert_eq!(t.get(pack(b"SELEC").unwrap()), None);
    }
}
