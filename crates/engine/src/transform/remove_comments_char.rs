//! `t:removeCommentsChar`: removes the comment markers `/*`, `*/`, `<!--`,
//! `-->`, `--` and `#` wherever they appear, keeping the text around and between
//! them. Markers are matched left to right on the remaining input, in that order
//! of preference (so `-->` is one marker, not `--` followed by `>`).

/// Length of the comment marker starting at the beginning of `rest`, if any.
fn marker_len(rest: &[u8]) -> Option<usize> {
    [&b"/*"[..], b"*/", b"<!--", b"-->", b"--", b"#"]
        .iter()
        .find(|m| rest.starts_with(m))
        .map(|m| m.len())
}

/// Removes comment markers; `false` when there is none.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let mut changed = false;
    let mut i = 0;
    let len = input.len();
    while i < len {
        // Candidates start with '/', '*', '<', '-' or '#'.
        let next = input[i..]
            .iter()
            .position(|&b| matches!(b, b'/' | b'*' | b'<' | b'-' | b'#'))
            .map_or(len, |p| i + p);
        if changed {
            out.extend_from_slice(&input[i..next]);
        }
        i = next;
        if i >= len {
            break;
        }
        match marker_len(&input[i..]) {
            Some(n) => {
                if !changed {
                    out.reserve(len);
                    out.extend_from_slice(&input[..i]);
                    changed = true;
                }
                i += n;
            }
            None => {
                if changed {
                    out.push(input[i]);
                }
                i += 1;
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::apply;

    #[test]
    fn markers() {
        let mut out = Vec::new();
        assert!(apply(b"se/*x*/lect<!--a-->#--b", &mut out));
        assert_eq!(out, b"sexlectab");
        assert!(!apply(b"a-b*c/d<e", &mut out));
        assert!(out.is_empty());
    }
}
