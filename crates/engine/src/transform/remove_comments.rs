//! `t:removeComments`: removes comments, as libmodsecurity does.
//!
//! * `/* ... */` and `<!-- ... -->` are removed (they are not nested; either
//!   terminator, `*/` or `-->`, closes either kind of comment);
//! * outside a comment, `--` or `#` ends the value: it and everything after it
//!   are removed;
//! * an unterminated comment is replaced by a single space;
//! * a lone `*/` or `-->` outside a comment is kept.
//!
//! (Older libmodsecurity releases copied the byte following a comment
//! terminator without examining it, which turned `SELECT/**//**/UNION` into
//! `SELECT/**/UNION` and left a NUL byte after a comment ending the value; the
//! reference test vectors expect `SELECTUNION` and no NUL, which is what
//! Palisade does.)

/// Whether a comment (or the `--` / `#` cut) starts at `i`.
fn starts_comment(input: &[u8], i: usize) -> bool {
    let rest = &input[i..];
    rest.starts_with(b"/*")
        || rest.starts_with(b"<!--")
        || rest.starts_with(b"--")
        || rest[0] == b'#'
}

/// Removes comments; `false` when there is none.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let first = input
        .iter()
        .enumerate()
        .position(|(i, &b)| matches!(b, b'/' | b'<' | b'-' | b'#') && starts_comment(input, i));
    let Some(first) = first else {
        return false;
    };
    let len = input.len();
    out.reserve(len);
    out.extend_from_slice(&input[..first]);
    let mut in_comment = false;
    let mut i = first;
    while i < len {
        if !in_comment {
            if input[i..].starts_with(b"/*") {
                in_comment = true;
                i += 2;
            } else if input[i..].starts_with(b"<!--") {
                in_comment = true;
                i += 4;
            } else if input[i..].starts_with(b"--") || input[i] == b'#' {
                break;
            } else {
                out.push(input[i]);
                i += 1;
            }
        } else if input[i..].starts_with(b"*/") {
            in_comment = false;
            i += 2;
        } else if input[i..].starts_with(b"-->") {
            in_comment = false;
            i += 3;
        } else {
            i += 1;
        }
    }
    if in_comment {
        out.push(b' ');
    }
    // Something was removed: the output is shorter than the input.
    true
}

#[cfg(test)]
mod tests {
    use super::apply;

    #[test]
    fn comments() {
        let mut out = Vec::new();
        assert!(apply(b"a/*b*/c", &mut out));
        assert_eq!(out, b"ac");
        assert!(apply(b"a/*b*/", &mut out));
        assert_eq!(out, b"a");
        assert!(apply(b"SELECT/**//**/UNION", &mut out));
        assert_eq!(out, b"SELECTUNION");
        assert!(apply(b"a/*b", &mut out));
        assert_eq!(out, b"a ");
        assert!(apply(b"select 1 -- x", &mut out));
        assert_eq!(out, b"select 1 ");
        assert!(!apply(b"a-b/c<d", &mut out));
    }
}
