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

/// What a byte does: kept (lower-cased), deleted, a separator, or `/` and `(`
/// (which take the place of a space before them).
const KEEP: u8 = 0;
const DELETE: u8 = 1;
const SEPARATOR: u8 = 2;
const SLASH: u8 = 3;

/// Each byte's kind (one table load per byte instead of a chain of compares).
static KIND: [u8; 256] = {
    let mut t = [KEEP; 256];
    let kinds: [(&[u8], u8); 3] = [
        (b"\"'\\^", DELETE),
        (b" ,;\t\r\n", SEPARATOR),
        (b"/(", SLASH),
    ];
    let mut k = 0;
    while k < kinds.len() {
        let (bytes, kind) = kinds[k];
        let mut i = 0;
        while i < bytes.len() {
            t[bytes[i] as usize] = kind;
            i += 1;
        }
        k += 1;
    }
    t
};

/// Whether the byte may be changed by the transformation: a letter to lower,
/// a byte deleted or a separator (`/` and `(` change only a space before them).
fn is_trigger(b: u8) -> bool {
    b.is_ascii_uppercase() || matches!(KIND[usize::from(b)], DELETE | SEPARATOR)
}

/// Normalises the command line; `false` when nothing changes.
///
/// The output is never longer than the input (each byte gives at most one), so
/// it is written into `out` sized to the input, at an index kept in a register,
/// and cut to length at the end: no capacity test per byte as `push` makes.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(first) = input.iter().position(|&b| is_trigger(b)) else {
        return false;
    };
    out.resize(input.len(), 0);
    let buf = &mut out[..];
    buf[..first].copy_from_slice(&input[..first]);
    let mut n = first;
    let mut space = false;
    for &b in &input[first..] {
        match KIND[usize::from(b)] {
            KEEP => {
                buf[n] = b.to_ascii_lowercase();
                n += 1;
                space = false;
            }
            DELETE => {}
            SEPARATOR => {
                if !space {
                    buf[n] = b' ';
                    n += 1;
                    space = true;
                }
            }
            _ => {
                // `/` or `(`: the space before it (the last byte written) goes.
                if space {
                    n -= 1;
                }
                space = false;
                buf[n] = b;
                n += 1;
            }
        }
    }
    out.truncate(n);
    finish(input, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The transformation as its notes state it, byte by byte with `push`.
    fn reference(input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut space = false;
        for &b in input {
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
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn equals_the_byte_by_byte_reference(
            input in prop::collection::vec(
                prop_oneof![
                    4 => prop::sample::select(b" ,;\t\r\n\"'\\^/(aZ".to_vec()),
                    1 => any::<u8>(),
                ],
                0..64,
            )
        ) {
            let mut out = b"dirty".to_vec();
            let changed = apply(&input, &mut out);
            let expected = reference(&input);
            prop_assert_eq!(changed, expected != input);
            if changed {
                prop_assert_eq!(out, expected);
            } else {
                prop_assert!(out.is_empty());
            }
        }
    }
}
