//! `t:md5`: replaces the value with its raw (binary, 16-byte) MD5 digest, as
//! libmodsecurity does (chain `t:hexEncode` to get the usual hex form).

use super::util::finish;
use md5::{Digest, Md5};

/// Writes the 16-byte digest.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    out.extend_from_slice(&Md5::digest(input));
    finish(input, out)
}
