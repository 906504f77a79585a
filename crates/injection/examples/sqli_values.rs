//! Instruction-count harness for `detect_sqli` (and `detect_xss`) on ordinary
//! benign request values.
//!
//! Builds a fixed list of realistic inputs from the standard benchmark requests
//! (`/work/shared/bench/standard-requests.json`, or the path given as the
//! second argument): every R2 query argument name and value, R2's cookie names
//! and values, every R3 form field name and value (urlencoded, decoded), every
//! JSON scalar of R4's body with its dotted name `json.a.b`, and the
//! User-Agent. It then calls `detect_sqli` on each of them N times (N is the
//! first argument, default 100) and prints a checksum so nothing is optimised
//! away. With `xss` as the third argument it calls `detect_xss` instead, on
//! the values the rule engine's prefilter lets through (those holding `<` or
//! `=`).
//! `SQLI_VALUES_VERBOSE=1` prints each input with its verdict and fingerprint;
//! `SQLI_VALUES_ONLY=i` keeps only input `i`.
//!
//! Measure instructions per call with callgrind at two values of N:
//!
//! ```text
//! cargo build --release -p injection --example sqli_values
//! valgrind --tool=callgrind target/release/examples/sqli_values 20
//! valgrind --tool=callgrind target/release/examples/sqli_values 120
//! ```
//!
//! (difference of the totals / 100 / number of inputs, which is printed).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a harness

use std::hint::black_box;

use injection::{detect_sqli, detect_xss};

/// Decodes `%XX` and `+` as a urlencoded form or query string does.
fn url_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(b[i + 1]), hex(b[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// Pushes every `name=value` pair of a `&`-separated string, decoded.
fn push_pairs(out: &mut Vec<Vec<u8>>, s: &str, sep: char) {
    for pair in s.split(sep) {
        let pair = pair.trim();
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        out.push(url_decode(k));
        out.push(url_decode(v));
    }
}

/// Pushes every scalar of `v` (as text) and its dotted name.
fn push_json(out: &mut Vec<Vec<u8>>, name: &str, v: &serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                push_json(out, &format!("{name}.{k}"), v);
            }
        }
        Value::Array(a) => {
            for v in a {
                push_json(out, name, v);
            }
        }
        Value::String(s) => {
            out.push(name.as_bytes().to_vec());
            out.push(s.as_bytes().to_vec());
        }
        Value::Null => {
            out.push(name.as_bytes().to_vec());
            out.push(b"null".to_vec());
        }
        other => {
            out.push(name.as_bytes().to_vec());
            out.push(other.to_string().into_bytes());
        }
    }
}

fn inputs(path: &str) -> Vec<Vec<u8>> {
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("read requests")).expect("json");
    let mut out = Vec::new();
    for req in json.as_array().expect("array") {
        let name = req["name"].as_str().unwrap_or("");
        let header = |h: &str| {
            req["headers"].as_array().and_then(|hs| {
                hs.iter()
                    .find(|p| p[0].as_str().is_some_and(|n| n.eq_ignore_ascii_case(h)))
                    .and_then(|p| p[1].as_str())
            })
        };
        match name {
            "R1" => {
                if let Some(ua) = header("User-Agent") {
                    out.push(ua.as_bytes().to_vec());
                }
            }
            "R2" => {
                let uri = req["uri"].as_str().unwrap_or("");
                if let Some((_, q)) = uri.split_once('?') {
                    push_pairs(&mut out, q, '&');
                }
                if let Some(c) = header("Cookie") {
                    push_pairs(&mut out, c, ';');
                }
            }
            "R3" => push_pairs(&mut out, req["body"].as_str().unwrap_or(""), '&'),
            "R4" => {
                let body: serde_json::Value =
                    serde_json::from_str(req["body"].as_str().unwrap_or("")).expect("R4 body");
                push_json(&mut out, "json", &body);
            }
            _ => {}
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    let path = args
        .get(2)
        .map(String::as_str)
        .unwrap_or("/work/shared/bench/standard-requests.json");
    let xss = args.get(3).is_some_and(|a| a == "xss");
    let mut inputs = inputs(path);
    if xss {
        // the rule engine's prefilter calls @detectXSS only on values with one
        // of these bytes
        inputs.retain(|v| {
            v.iter()
                .any(|b| injection::xss::XSS_NEEDS_ONE_OF.contains(b))
        });
    }
    // SQLI_VALUES_ONLY=i keeps only input i (to cost inputs one by one)
    if let Some(i) = std::env::var("SQLI_VALUES_ONLY")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        inputs = inputs.get(i).cloned().into_iter().collect();
    }
    let verbose = std::env::var_os("SQLI_VALUES_VERBOSE").is_some();
    let mut sum = 0u64;
    for _ in 0..n {
        for input in &inputs {
            if xss {
                sum += u64::from(detect_xss(black_box(input)));
            } else {
                let r = detect_sqli(black_box(input));
                sum = sum
                    .wrapping_mul(31)
                    .wrapping_add(u64::from(r.is_sqli))
                    .wrapping_add(r.fingerprint.as_bytes().iter().map(|&b| u64::from(b)).sum());
            }
        }
    }
    if verbose {
        for input in &inputs {
            let r = detect_sqli(input);
            println!(
                "{:5} {:6} {}",
                r.is_sqli,
                r.fingerprint.as_str(),
                String::from_utf8_lossy(input)
            );
        }
    }
    println!(
        "inputs {} calls {} checksum {sum}",
        inputs.len(),
        inputs.len() * n
    );
}
