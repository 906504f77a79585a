//! Fuzz target: `engine::body::parse_cookies` on an arbitrary `Cookie` header value.
#![no_main]

use engine::body::parse_cookies;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::new();
    parse_cookies(data, &mut out);
    let total: usize = out.iter().map(|a| a.name.len() + a.value.len()).sum();
    assert!(total <= data.len(), "output {total} > input {}", data.len());
});
