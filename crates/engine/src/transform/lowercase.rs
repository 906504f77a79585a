//! `t:lowercase`: converts ASCII `A-Z` to `a-z` (`tolower()` in the C locale);
//! bytes at or above 0x80 are left alone.

/// Lowercases ASCII letters; `false` when there is no uppercase letter.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(first) = input.iter().position(u8::is_ascii_uppercase) else {
        return false;
    };
    out.extend_from_slice(input);
    out[first..].make_ascii_lowercase();
    true
}

#[cfg(test)]
mod tests {
    use super::apply;

    #[test]
    fn lowercases_ascii_only() {
        let mut out = Vec::new();
        assert!(apply(b"SeLeCT \xC3\x89", &mut out));
        assert_eq!(out, b"select \xC3\x89");
        assert!(!apply(b"already lower \xC9", &mut out));
        assert!(out.is_empty());
    }
}
