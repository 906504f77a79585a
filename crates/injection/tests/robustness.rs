//! Arbitrary bytes never make detection panic, and pathological inputs run
//! in linear time without deep recursion.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use injection::sqli::{SqliState, Tokenizer, FLAG_NONE, FLAG_QUOTE_DOUBLE, FLAG_SQL_MYSQL};
use injection::xss::{Html5Flags, Html5Tokenizer};
use injection::{detect_sqli, detect_xss};
use proptest::prelude::*;

/// Bytes that steer the tokenizers into their interesting states.
fn interesting_bytes() -> impl Strategy<Value = Vec<u8>> {
    let alphabet: Vec<u8> =
        b"'\"`/*-#!<>=&;%$@[]{}()\\.,:0123456789aAbBeEnNqQuUxXsSoO \t\r\n\0\xa0\xff".to_vec();
    prop::collection::vec(prop::sample::select(alphabet), 0..64)
}

/// Sequences of SQL and HTML fragments, to reach deep folding and
/// tokenizer states that random bytes rarely reach.
fn fragments() -> impl Strategy<Value = Vec<u8>> {
    const FRAGMENTS: &[&[u8]] = &[
        b"SELECT",
        b"UNION",
        b"ALL",
        b"OR",
        b"AND",
        b"NOT",
        b"IN",
        b"LIKE",
        b"IF",
        b"USER",
        b"COLLATE",
        b"utf8_bin",
        b"INTO",
        b"OUTFILE",
        b"sp_password",
        b"1",
        b"1.e",
        b"0x",
        b"$$",
        b"$a$",
        b"q'[",
        b"N'",
        b"U&'",
        b"x'0'",
        b"b'1'",
        b"'",
        b"\"",
        b"`",
        b"``",
        b"{",
        b"}",
        b"(",
        b")",
        b",",
        b";",
        b".",
        b"::",
        b"@",
        b"@@",
        b"\\",
        b"\\N",
        b"-",
        b"--",
        b"-- ",
        b"#",
        b"/*",
        b"*/",
        b"/*!",
        b"+",
        b"~",
        b"!",
        b"=",
        b"<=>",
        b" ",
        b"\n",
        b"\0",
        b"\xa0",
        b"\xff",
        b"<",
        b"</",
        b"<!--",
        b"-->",
        b"<!DOCTYPE",
        b"<![CDATA[",
        b"]]>",
        b"<?",
        b"<%",
        b"%>",
        b"/>",
        b"script",
        b"svg",
        b"onload",
        b"onx",
        b"href",
        b"style",
        b"xmlns",
        b"attributeName",
        b"javascript:",
        b"&#106;",
        b"&#x6A;",
        b"&#",
    ];
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..24).prop_map(|parts| {
        let mut v = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            if i % 3 == 1 {
                v.push(b' ');
            }
            v.extend_from_slice(p);
        }
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(input in prop::collection::vec(any::<u8>(), 0..256)) {
        let r = detect_sqli(&input);
        prop_assert!(r.fingerprint.len() <= 5);
        let _ = detect_xss(&input);
    }

    #[test]
    fn fragment_sequences_never_panic(input in fragments()) {
        let r = detect_sqli(&input);
        prop_assert!(r.fingerprint.len() <= 5);
        let _ = detect_xss(&input);
    }

    #[test]
    fn syntax_heavy_bytes_never_panic(input in interesting_bytes()) {
        let r = detect_sqli(&input);
        prop_assert!(r.fingerprint.len() <= 5);
        let _ = detect_xss(&input);
        for flags in [FLAG_NONE, FLAG_QUOTE_DOUBLE | FLAG_SQL_MYSQL] {
            for t in Tokenizer::new(&input, flags) {
                prop_assert!(t.len <= 31);
            }
            let mut s = SqliState::new(&input, flags);
            // At most MAX_TOKENS (5), plus one when MySQL's `{ ``` ends folding
            // early: libinjection returns `left + 2` there (its fingerprint is X).
            prop_assert!(s.fold() <= 6);
        }
        for flags in [Html5Flags::DataState, Html5Flags::ValueNoQuote, Html5Flags::ValueBackQuote] {
            for t in Html5Tokenizer::new(&input, flags) {
                prop_assert!(t.start + t.bytes.len() <= input.len());
            }
        }
    }
}

#[test]
fn evil_brace_after_four_tokens() {
    // folding stops with six tokens here; the fingerprint is "X"
    let r = detect_sqli(b"SELECT SELECT SELECT SELECT { ``");
    assert!(r.is_sqli);
    assert_eq!(r.fingerprint.as_str(), "X");
}

#[test]
fn long_pathological_inputs() {
    // patterns that chain tokenizer states without producing tokens
    let patterns: [&[u8]; 8] = [
        b"</>", b"/ ", b"<a/", b"'\\", b"/*", b"((((", b"-- \n", b"$$",
    ];
    for p in patterns {
        let input: Vec<u8> = p.iter().copied().cycle().take(1 << 20).collect();
        let _ = detect_sqli(&input);
        let _ = detect_xss(&input);
    }
}

/// Regression (found by `syntax_heavy_bytes_never_panic`): MySQL's `{ ``` ends
/// folding early with `left + 2` tokens, one more than MAX_TOKENS, as in C.
#[test]
fn evil_brace_sequence_folds_to_six_tokens_and_fingerprint_x() {
    let input = b"0/''/0a)}/{`";
    let mut s = SqliState::new(input, FLAG_NONE);
    assert!(s.fold() <= 6);
    assert!(detect_sqli(input).fingerprint.len() <= 5);
}
