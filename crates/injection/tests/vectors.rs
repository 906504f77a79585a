//! libinjection's unit test vectors (`tests/test-*.txt`), one test per family.
//! Every failing case is named in the failure message.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

mod common;

use injection::sqli::{SqliState, Token, TokenType, Tokenizer, FLAG_NONE};
use injection::xss::{Html5Flags, Html5Tokenizer};

/// A token printed as the C test driver prints it.
fn print_token(out: &mut Vec<u8>, t: &Token) {
    out.push(t.kind.as_byte());
    out.push(b' ');
    let string = |out: &mut Vec<u8>| {
        if t.str_open != 0 {
            out.push(t.str_open);
        }
        out.extend_from_slice(common::c_str(t.value()));
        if t.str_close != 0 {
            out.push(t.str_close);
        }
    };
    match t.kind {
        TokenType::String => string(out),
        TokenType::Variable => {
            if t.count >= 1 {
                out.push(b'@');
            }
            if t.count == 2 {
                out.push(b'@');
            }
            string(out);
        }
        _ => out.extend_from_slice(common::c_str(t.value())),
    }
    out.push(b'\n');
}

/// Runs every vector of a family through `run` and fails listing the mismatches.
fn check_family(prefix: &str, run: impl Fn(&[u8]) -> Vec<u8>) {
    let files = common::files("tests", prefix, ".txt");
    let mut failures = Vec::new();
    for path in &files {
        let v = common::read_vector(path);
        let actual = run(&v.input);
        let actual = String::from_utf8_lossy(common::rtrim(&actual)).into_owned();
        if actual != v.expected {
            failures.push(format!(
                "{}\n  input:    {:?}\n  expected: {:?}\n  actual:   {:?}",
                v.name,
                String::from_utf8_lossy(&v.input),
                v.expected,
                actual
            ));
        }
    }
    println!(
        "{prefix}*: {} passed, {} failed",
        files.len() - failures.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} {prefix}* vectors failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn sqli_tokenizer_vectors() {
    check_family("test-tokens-", |input| {
        let mut out = Vec::new();
        for t in Tokenizer::new(input, FLAG_NONE) {
            print_token(&mut out, &t);
        }
        out
    });
}

#[test]
fn sqli_folding_vectors() {
    check_family("test-folding-", |input| {
        let mut out = Vec::new();
        let mut state = SqliState::new(input, FLAG_NONE);
        let n = state.fold();
        for i in 0..n {
            print_token(&mut out, state.token(i).unwrap());
        }
        out
    });
}

#[test]
fn sqli_fingerprint_vectors() {
    check_family("test-sqli-", |input| {
        let r = injection::detect_sqli(input);
        if r.is_sqli {
            r.fingerprint.as_str().as_bytes().to_vec()
        } else {
            Vec::new()
        }
    });
}

#[test]
fn html5_tokenizer_vectors() {
    check_family("test-html5-", |input| {
        let mut out = Vec::new();
        for t in Html5Tokenizer::new(input, Html5Flags::DataState) {
            out.extend_from_slice(t.kind.name().as_bytes());
            out.extend_from_slice(format!(",{},", t.bytes.len()).as_bytes());
            out.extend_from_slice(common::c_str(t.bytes));
            out.push(b'\n');
        }
        out
    });
}
