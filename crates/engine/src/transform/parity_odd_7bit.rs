//! `t:parityOdd7bit`: sets or clears bit 7 of every byte so that the byte has
//! odd parity (parity computed over all eight input bits, as ModSecurity does:
//! when it is odd bit 7 is cleared, otherwise set).

use super::parity_even_7bit::{map_bytes, odd_parity};

/// The odd-parity form of one byte.
fn odd(b: u8) -> u8 {
    if odd_parity(b) {
        b & 0x7f
    } else {
        b | 0x80
    }
}

/// Applies odd parity to every byte.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    map_bytes(input, out, odd)
}
