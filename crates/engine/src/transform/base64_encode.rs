//! `t:base64Encode`: standard Base64 (RFC 4648 alphabet `A-Z a-z 0-9 + /`) with
//! `=` padding and no line breaks.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Base64-encodes the input; `false` only for the empty input.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    if input.is_empty() {
        return false;
    }
    out.reserve(input.len().div_ceil(3) * 4);
    let sextet = |v: u32, shift: u32| ALPHABET[((v >> shift) & 0x3f) as usize];
    let mut chunks = input.chunks_exact(3);
    for c in &mut chunks {
        let v = u32::from(c[0]) << 16 | u32::from(c[1]) << 8 | u32::from(c[2]);
        out.extend_from_slice(&[sextet(v, 18), sextet(v, 12), sextet(v, 6), sextet(v, 0)]);
    }
    match *chunks.remainder() {
        [a] => {
            let v = u32::from(a) << 16;
            out.extend_from_slice(&[sextet(v, 18), sextet(v, 12), b'=', b'=']);
        }
        [a, b] => {
            let v = u32::from(a) << 16 | u32::from(b) << 8;
            out.extend_from_slice(&[sextet(v, 18), sextet(v, 12), sextet(v, 6), b'=']);
        }
        _ => {}
    }
    true
}
