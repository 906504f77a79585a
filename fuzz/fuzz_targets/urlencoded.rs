//! Fuzz target: `engine::body::parse_urlencoded` (query strings and
//! `application/x-www-form-urlencoded` bodies). The first byte picks the argument
//! separator (`&`, `;` or the byte itself); the rest is the input.
#![no_main]

use engine::body::parse_urlencoded;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, input)) = data.split_first() else {
        return;
    };
    let separator = match sel % 4 {
        0 | 1 => b'&',
        2 => b';',
        _ => sel,
    };
    let mut out = Vec::new();
    let _ = parse_urlencoded(input, separator, &mut out);
    // Decoding never grows: every name and value comes from a distinct input slice.
    let total: usize = out.iter().map(|a| a.name.len() + a.value.len()).sum();
    assert!(
        total <= input.len(),
        "output {total} > input {}",
        input.len()
    );
});
