//! `t:parityEven7bit`: sets or clears bit 7 of every byte so that the byte has
//! even parity.
//!
//! As in ModSecurity, the parity is computed over all eight bits of the input
//! byte (bit 7 included): when it is odd, bit 7 is set, otherwise cleared. For
//! 7-bit input this gives even parity; a byte that already has bit 7 set is
//! treated the same way, exactly as libmodsecurity does.

/// Whether the byte has an odd number of set bits.
pub(crate) fn odd_parity(b: u8) -> bool {
    b.count_ones() % 2 == 1
}

/// Applies a per-byte mapping, copying only when some byte changes.
pub(crate) fn map_bytes(input: &[u8], out: &mut Vec<u8>, f: impl Fn(u8) -> u8) -> bool {
    out.clear();
    let Some(first) = input.iter().position(|&b| f(b) != b) else {
        return false;
    };
    out.reserve(input.len());
    out.extend_from_slice(&input[..first]);
    out.extend(input[first..].iter().map(|&b| f(b)));
    true
}

/// The even-parity form of one byte.
fn even(b: u8) -> u8 {
    if odd_parity(b) {
        b | 0x80
    } else {
        b & 0x7f
    }
}

/// Applies even parity to every byte.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    map_bytes(input, out, even)
}
