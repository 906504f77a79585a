//! `t:uppercase`: converts ASCII `a-z` to `A-Z` (`toupper()` in the C locale);
//! bytes at or above 0x80 are left alone.

/// Uppercases ASCII letters; `false` when there is no lowercase letter.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(first) = input.iter().position(u8::is_ascii_lowercase) else {
        return false;
    };
    out.extend_from_slice(input);
    out[first..].make_ascii_uppercase();
    true
}
