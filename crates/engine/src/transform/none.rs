//! `t:none`: the identity. In a rule it also discards the transformations
//! inherited from `SecDefaultAction`; that is the rule compiler's business, the
//! function itself never changes anything.

/// Never changes the input.
pub(crate) fn apply(_input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    false
}
