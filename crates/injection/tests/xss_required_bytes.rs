//! `XSS_NEEDS_ONE_OF`: every input `detect_xss` reports contains `<` or `=`. The
//! rule engine's prefilter skips `@detectXSS` on values without them, so a gap
//! here would hide attacks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

mod common;

use injection::detect_xss;
use injection::xss::XSS_NEEDS_ONE_OF;
use proptest::prelude::*;

fn has_needed(input: &[u8]) -> bool {
    input.iter().any(|b| XSS_NEEDS_ONE_OF.contains(b))
}

/// `input` with each needed byte replaced by `with`.
fn without_needed(input: &[u8], with: u8) -> Vec<u8> {
    input
        .iter()
        .map(|&b| {
            if XSS_NEEDS_ONE_OF.contains(&b) {
                with
            } else {
                b
            }
        })
        .collect()
}

/// The sample payload lines (`data/*.txt`, 1,913 XSS lines among them).
fn payload_lines() -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    for path in common::files("data", "", ".txt") {
        let bytes = std::fs::read(&path).unwrap();
        lines.extend(bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec));
    }
    lines
}

#[test]
fn every_reported_payload_has_a_needed_byte() {
    let (mut reported, mut stripped) = (0, 0);
    for line in payload_lines() {
        if detect_xss(&line) {
            reported += 1;
            assert!(has_needed(&line), "reported without < or =: {line:?}");
            // The same payload without its `<` and `=` is never reported,
            // whatever takes their place.
            for with in [b' ', b'x', b'"', b'\'', b'`', b'/', b'>', b'&'] {
                let s = without_needed(&line, with);
                assert!(!detect_xss(&s), "reported without < or =: {s:?}");
                stripped += 1;
            }
        }
    }
    assert!(reported > 1500, "only {reported} payloads reported");
    assert!(stripped > 12_000);
}

/// HTML- and script-flavoured pieces (the tests take their `<` and `=` out).
fn fragments() -> impl Strategy<Value = Vec<u8>> {
    const FRAGMENTS: &[&[u8]] = &[
        b"!--",
        b"-->",
        b"!DOCTYPE",
        b"![CDATA[",
        b"]]>",
        b"?",
        b"%",
        b"/>",
        b">",
        b"/",
        b"script",
        b"svg",
        b"img",
        b"onload",
        b"onerror",
        b"onx",
        b"href",
        b"src",
        b"style",
        b"xmlns",
        b"attributeName",
        b"formaction",
        b"javascript:",
        b"vbscript:",
        b"data:",
        b"&#106;",
        b"&#x6A;",
        b"&#",
        b"&lt;",
        b"&#60;",
        b"\"",
        b"'",
        b"`",
        b" ",
        b"\t",
        b"\n",
        b"\x0c",
        b"\0",
        b"\xff",
        b"alert(1)",
        b"[if",
        b"xml",
        b"IMPORT",
        b"ENTITY",
        b"<",
        b"=",
        b"</",
        b"<!--",
        b"<?",
        b"onerror=",
        b"href=",
    ];
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..24).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn fragments_without_needed_bytes_are_not_xss(input in fragments(), with in 0..3usize) {
        let input = without_needed(&input, [b' ', b'"', b'x'][with]);
        prop_assert!(!detect_xss(&input), "{input:?}");
    }

    #[test]
    fn bytes_without_needed_bytes_are_not_xss(
        input in prop::collection::vec(any::<u8>(), 0..128),
    ) {
        let input = without_needed(&input, b' ');
        prop_assert!(!detect_xss(&input), "{input:?}");
    }
}
