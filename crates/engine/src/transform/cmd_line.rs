//! `t:cmdLine`: normalises command lines against Windows and Unix evasion tricks,
//! as libmodsecurity does, in one pass:
//!
//! * deletes `\`, `"`, `'` and `^`;
//! * replaces each run of spaces, tabs, `\r`, `\n`, `,` and `;` (deleted bytes do
//!   not break a run) with a single space;
//! * deletes a space right before `/` or `(`;
//! * lowercases ASCII letters.
//!
//! A leading or trailing run becomes a single space; it is not removed.

use super::util::finish;

/// Whether the byte may be changed by the transformation.
fn is_trigger(b: u8) -> bool {
    matches!(
        b,
        b'A'..=b'Z' | b'"' | b'\'' | b'\\' | b'^' | b' ' | b',' | b';' | b'\t' | b'\r' | b'\n'
    )
}

/// Normalises the command line; `false` when nothing changes.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(first) = input.iter().position(|&b| is_trigger(b)) else {
        return false;
    };
    out.reserve(input.len());
    out.extend_from_slice(&input[..first]);
    let mut space = false;
    for &b in &input[first..] {
        match b {
            b'"' | b'\'' | b'\\' | b'^' => {}
            b' ' | b',' | b';' | b'\t' | b'\r' | b'\n' => {
                if !space {
                    out.push(b' ');
                    space = true;
                }
            }
            b'/' | b'(' => {
                if space {
                    out.pop();
                }
                space = false;
                out.push(b);
            }
            _ => {
                out.push(b.to_ascii_lowercase());
                space = false;
            }
        }
    }
    finish(input, out)
}
