//! `t:normalisePath` (alias `normalizePath`): normalises a path the way
//! libmodsecurity does.
//!
//! * runs of `/` collapse to one;
//! * `./` self-references are removed;
//! * `../` removes itself and the previous segment; an absolute path never goes
//!   above the root (`/../a` is `/a`), while in a relative path a back-reference
//!   with nothing left to remove is kept (`../a` stays `../a`, `a/../../b` is
//!   `../b`);
//! * a leading `/` is kept; a trailing `/` is kept only if the input had one;
//!   for a relative path, a `/` that would end up first is dropped (`./` gives
//!   the empty string);
//! * a lone `.` or `..` segment at the end is resolved like `./` and `../`
//!   (`/a/b/..` is `/a`, `/a/.` is `/a`); libmodsecurity's corner case is kept:
//!   `/..` gives the empty string (the root slash is dropped as a trailing
//!   slash the input did not have), while `/../` gives `/`.
//!
//! This is a faithful port of libmodsecurity's single-pass, in-place
//! algorithm, including its corner cases: it works on bytes, treats only `/`
//! (and, for `normalisePathWin`, `\`) as separators and knows nothing of
//! drive letters or UNC paths.

use super::util::finish;

/// Normalises `path` (whose separators are already `/`) into `out`.
pub(crate) fn normalize_into(path: &[u8], out: &mut Vec<u8>) {
    out.clear();
    if path.is_empty() {
        return;
    }
    let p = path;
    let end = p.len() - 1;
    let relative = p[0] != b'/';
    let trailing = p[end] == b'/';
    out.resize(p.len(), 0);
    let (mut src, mut dst) = (0usize, 0usize);
    let mut hit_root = false;
    let mut done = false;
    while !done && src <= end && dst <= end {
        // Only the end of a path segment (or of the input) is normalised.
        let at_segment_end = if src == end {
            done = true;
            true
        } else {
            p[src + 1] == b'/'
        };
        if at_segment_end && p[src] == b'.' {
            if dst > 0 && out[dst - 1] == b'.' {
                // A back-reference "..".
                if relative && (hit_root || dst <= 2) {
                    // Nothing to remove: keep the "..".
                    hit_root = true;
                } else {
                    // Remove the back-reference and the previous segment.
                    let mut d = dst as isize - 3;
                    while d > 0 && out[d as usize] != b'/' {
                        d -= 1;
                    }
                    if d <= 0 {
                        // Never above the root.
                        hit_root = true;
                        d = 0;
                        if !relative && src == end {
                            d += 1;
                        }
                    }
                    dst = d as usize;
                    if done {
                        continue;
                    }
                    src += 1;
                }
            } else if dst == 0 {
                // A relative self-reference "./" at the start.
                if done {
                    continue;
                }
                src += 1;
            } else if out[dst - 1] == b'/' {
                // A self-reference "/./".
                if done {
                    continue;
                }
                dst -= 1;
                src += 1;
            }
        } else if at_segment_end && !(src != end && p[src] == b'/') && dst > 0 {
            // The end of a regular segment.
            hit_root = false;
        }

        // Copy the byte, collapsing runs of slashes.
        if p[src] == b'/' {
            while src < end && p[src + 1] == b'/' {
                src += 1;
            }
            if relative && dst == 0 {
                // No leading slash for a relative path.
                src += 1;
                continue;
            }
        }
        out[dst] = p[src];
        dst += 1;
        src += 1;
    }
    // No trailing slash unless there was one.
    if !trailing && dst > 0 && out[dst - 1] == b'/' {
        dst -= 1;
    }
    out.truncate(dst);
}

/// Whether the path may change: it has a `.` or a `//`.
pub(crate) fn may_change(path: &[u8]) -> bool {
    memchr::memchr(b'.', path).is_some() || memchr::memmem::find(path, b"//").is_some()
}

/// Normalises the path; `false` when it is already normal.
pub(crate) fn apply(input: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    if !may_change(input) {
        return false;
    }
    normalize_into(input, out);
    finish(input, out)
}

#[cfg(test)]
mod tests {
    use super::apply;

    fn norm(s: &str) -> String {
        let mut out = Vec::new();
        if apply(s.as_bytes(), &mut out) {
            String::from_utf8_lossy(&out).into_owned()
        } else {
            s.to_owned()
        }
    }

    #[test]
    fn paths() {
        assert_eq!(norm("/a/b/../c"), "/a/c");
        assert_eq!(norm("/a//b/./c/"), "/a/b/c/");
        assert_eq!(norm("/../../etc/passwd"), "/etc/passwd");
        assert_eq!(norm("../a"), "../a");
        assert_eq!(norm("a/../../b"), "../b");
        assert_eq!(norm("./a"), "a");
        assert_eq!(norm("/a/b/.."), "/a");
        assert_eq!(norm("/a/."), "/a");
        // The root slash is kept, then removed as a trailing slash the input lacked.
        assert_eq!(norm("/.."), "");
        assert_eq!(norm("/../"), "/");
        assert_eq!(norm("//"), "/");
    }
}
