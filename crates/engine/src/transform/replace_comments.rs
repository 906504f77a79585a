//! `t:replaceComments`: replaces each C-style comment `/* ... */` with a single
//! space; an unterminated comment (from `/*` to the end) also becomes one space.
//! A lone `*/` outside a comment is kept. Comments do not nest.

use memchr::memmem;

/// Replaces comments; `false` when there is no `/*`.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(first) = memmem::find(input, b"/*") else {
        return false;
    };
    out.reserve(input.len());
    let mut i = 0;
    let mut start = Some(first);
    while let Some(s) = start {
        out.extend_from_slice(&input[i..i + s]);
        let body = i + s + 2;
        out.push(b' ');
        match memmem::find(&input[body..], b"*/") {
            Some(e) => i = body + e + 2,
            None => return true,
        }
        start = memmem::find(&input[i..], b"/*");
    }
    out.extend_from_slice(&input[i..]);
    true
}

#[cfg(test)]
mod tests {
    use super::apply;

    #[test]
    fn replaces() {
        let mut out = Vec::new();
        assert!(apply(b"a/*x*/b/**/c/*d", &mut out));
        assert_eq!(out, b"a b c ");
        assert!(apply(b"/*/", &mut out));
        assert_eq!(out, b" ");
    }
}
