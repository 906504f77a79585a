//! `t:sha1`: replaces the value with its raw (binary, 20-byte) SHA-1 digest, as
//! libmodsecurity does (chain `t:hexEncode` to get the usual hex form).

use super::util::finish;
use sha1::{Digest, Sha1};

/// Writes the 20-byte digest.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    out.extend_from_slice(&Sha1::digest(input));
    finish(input, out)
}
