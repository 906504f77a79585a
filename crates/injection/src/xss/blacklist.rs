//! The XSS blacklists: dangerous tags, attributes and URL schemes
//! (libinjection's `is_black_tag`, `is_black_attr`, `is_black_url`).

use super::entity::html_encoded_starts_with;
use super::events::EVENT_NAMES;

/// How an attribute's value must be checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttributeType {
    /// A harmless attribute.
    None,
    /// Always XSS (`on*` handlers, `xmlns`, `datasrc`, ...).
    Black,
    /// The value is a URL: XSS if it uses a dangerous scheme.
    Url,
    /// The value is CSS (`style`, `filter`): always XSS.
    Style,
    /// The value names another attribute (SVG `attributeName`).
    Indirect,
}

/// Compares the upper-case ASCII `a` with `b`, upper-casing `b`'s ASCII
/// letters and skipping NUL bytes of `b` (`cstrcasecmp_with_null`).
/// Returns `true` on a match.
pub(crate) fn equals_ignoring_nulls(a: &[u8], b: &[u8]) -> bool {
    equals_at(a, b, 0, b.len())
}

/// Tags that are always XSS.
const BLACK_TAGS: &[&[u8]] = &[
    b"APPLET",
    b"BASE",
    b"COMMENT",
    b"EMBED",
    b"FRAME",
    b"FRAMESET",
    b"HANDLER",
    b"IFRAME",
    b"IMPORT",
    b"ISINDEX",
    b"LINK",
    b"LISTENER",
    b"META",
    b"NOSCRIPT",
    b"OBJECT",
    b"SCRIPT",
    b"STYLE",
    b"VMLFRAME",
    b"XML",
    b"XSS",
];

/// Attributes whose value needs checking, and how.
const BLACK_ATTRS: &[(&[u8], AttributeType)] = &[
    (b"ACTION", AttributeType::Url),
    (b"ATTRIBUTENAME", AttributeType::Indirect),
    (b"BY", AttributeType::Url),
    (b"BACKGROUND", AttributeType::Url),
    (b"DATAFORMATAS", AttributeType::Black),
    (b"DATASRC", AttributeType::Black),
    (b"DYNSRC", AttributeType::Url),
    (b"FILTER", AttributeType::Style),
    (b"FORMACTION", AttributeType::Url),
    (b"FOLDER", AttributeType::Url),
    (b"FROM", AttributeType::Url),
    (b"HANDLER", AttributeType::Url),
    (b"HREF", AttributeType::Url),
    (b"LOWSRC", AttributeType::Url),
    (b"POSTER", AttributeType::Url),
    (b"SRC", AttributeType::Url),
    (b"STYLE", AttributeType::Style),
    (b"TO", AttributeType::Url),
    (b"VALUES", AttributeType::Url),
    (b"XLINK:HREF", AttributeType::Url),
];

/// The first letters of the names `black_attr_at` recognises: the attributes
/// above, `ON*` event handlers, `XMLNS` and `XLINK`.
const ATTR_FIRST: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < BLACK_ATTRS.len() {
        t[BLACK_ATTRS[i].0[0] as usize] = true;
        i += 1;
    }
    t[b'O' as usize] = true;
    t[b'X' as usize] = true;
    t
};

fn ieq(b: u8, upper: u8) -> bool {
    b.to_ascii_uppercase() == upper
}

/// Whether a tag name is dangerous (script, iframe, anything SVG or XSL, ...).
pub fn is_black_tag(name: &[u8]) -> bool {
    if name.len() < 3 {
        return false;
    }
    if BLACK_TAGS.iter().any(|t| equals_ignoring_nulls(t, name)) {
        return true;
    }
    // anything SVG or XSL(T) related
    (ieq(name[0], b'S') && ieq(name[1], b'V') && ieq(name[2], b'G'))
        || (ieq(name[0], b'X') && ieq(name[1], b'S') && ieq(name[2], b'L'))
}

/// Classifies an attribute name.
pub fn is_black_attr(name: &[u8]) -> AttributeType {
    black_attr_at(name, 0, name.len())
}

/// [`equals_ignoring_nulls`] over `n` bytes of `input` from `start`; bytes
/// past the end of the input read as NUL (and are skipped), as the C code
/// reads the string's terminator there.
fn equals_at(a: &[u8], input: &[u8], start: usize, n: usize) -> bool {
    let mut ai = 0usize;
    for i in 0..n {
        let cb = input.get(start + i).copied().unwrap_or(0);
        if cb == 0 {
            continue;
        }
        let ca = a.get(ai).copied().unwrap_or(0);
        ai += 1;
        if ca != cb.to_ascii_uppercase() {
            return false;
        }
    }
    ai >= a.len()
}

/// Classifies the attribute name at `input[start..start + len]`. Like the C
/// code, event-handler names are compared over their whole length, which may
/// extend past the attribute name into the following input.
pub(crate) fn black_attr_at(input: &[u8], start: usize, len: usize) -> AttributeType {
    let name = input.get(start..start + len).unwrap_or(&[]);
    let len = name.len();
    if len < 2 {
        return AttributeType::None;
    }
    // Every test below needs the name's first byte, unless it is NUL (skipped by
    // the comparisons), to start one of the listed names: most words are rejected
    // by one table lookup.
    if name[0] != 0 && !ATTR_FIRST[usize::from(name[0].to_ascii_uppercase())] {
        return AttributeType::None;
    }
    if len >= 5 {
        // JavaScript event handlers: on*
        if ieq(name[0], b'O') && ieq(name[1], b'N') {
            let rest = start + 2;
            if EVENT_NAMES
                .iter()
                .any(|ev| equals_at(ev, input, rest, ev.len()))
            {
                return AttributeType::Black;
            }
        }
        // XMLNS and XLINK can create arbitrary tags
        if equals_ignoring_nulls(b"XMLNS", &name[..5])
            || equals_ignoring_nulls(b"XLINK", &name[..5])
        {
            return AttributeType::Black;
        }
    }
    listed_attr(name)
}

/// The type of `name` in [`BLACK_ATTRS`], compared as
/// [`equals_ignoring_nulls`] does.
fn listed_attr(name: &[u8]) -> AttributeType {
    // Without NUL bytes (which the comparison skips) a listed name can only
    // match a name of its own length.
    let any_length = name.contains(&0);
    BLACK_ATTRS
        .iter()
        .filter(|(n, _)| any_length || n.len() == name.len())
        .find(|(n, _)| equals_ignoring_nulls(n, name))
        .map_or(AttributeType::None, |&(_, t)| t)
}

/// Whether the URL at `input[start..start + len]` (possibly HTML-encoded)
/// uses a dangerous scheme: `data:`, `view-source:`, `java*` or `vbscript:`.
pub(crate) fn is_black_url(input: &[u8], start: usize, len: usize) -> bool {
    let mut start = start;
    let mut len = len;
    // skip whitespace, control and non-ASCII bytes
    while len > 0 {
        let b = input.get(start).copied().unwrap_or(0);
        if b <= 32 || b >= 127 {
            start += 1;
            len -= 1;
        } else {
            break;
        }
    }
    [&b"DATA"[..], b"VIEW-SOURCE", b"JAVA", b"VBSCRIPT"]
        .iter()
        .any(|scheme| html_encoded_starts_with(scheme, input, start, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags() {
        assert!(is_black_tag(b"script"));
        assert!(is_black_tag(b"sc\0ript"));
        assert!(is_black_tag(b"svg:foo"));
        assert!(!is_black_tag(b"scripts"));
        assert!(!is_black_tag(b"b"));
    }

    #[test]
    fn attrs() {
        assert_eq!(is_black_attr(b"onload"), AttributeType::Black);
        assert_eq!(is_black_attr(b"href"), AttributeType::Url);
        assert_eq!(is_black_attr(b"xmlns:foo"), AttributeType::Black);
        assert_eq!(is_black_attr(b"title"), AttributeType::None);
        // only known event names count
        assert_eq!(is_black_attr(b"onewsaction"), AttributeType::None);
        assert_eq!(is_black_attr(b"ONMOUSEOVERX"), AttributeType::Black);
    }

    /// The length filter changes no answer: names of every listed length, with
    /// and without NUL bytes, in any case.
    #[test]
    fn length_filter_agrees_with_comparing_every_name() {
        let every = |name: &[u8]| {
            BLACK_ATTRS
                .iter()
                .find(|(n, _)| equals_ignoring_nulls(n, name))
                .map_or(AttributeType::None, |&(_, t)| t)
        };
        let mut names: Vec<Vec<u8>> = vec![b"".to_vec(), b"\0".to_vec(), b"lang".to_vec()];
        for (n, _) in BLACK_ATTRS {
            names.push(n.to_vec());
            names.push(n.to_ascii_lowercase());
            names.push(n[..n.len() - 1].to_vec());
            names.push([*n, b"X"].concat());
            names.push([&n[..1], b"\0", &n[1..]].concat());
            names.push([*n, b"\0"].concat());
            names.push([b"\0", *n].concat());
            names.push([b"\0\0", &n[1..]].concat());
        }
        for name in &names {
            assert_eq!(listed_attr(name), every(name), "{name:?}");
        }
    }

    #[test]
    fn urls() {
        let u = b"  javascript:alert(1)";
        assert!(is_black_url(u, 0, u.len()));
        let u = b"http://example.com/";
        assert!(!is_black_url(u, 0, u.len()));
    }
}
