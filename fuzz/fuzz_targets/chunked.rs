//! Fuzz target: `ftw::chunked::decode_chunked` on an arbitrary body.
#![no_main]

use ftw::chunked::decode_chunked;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(out) = decode_chunked(data) {
        assert!(out.len() <= data.len());
    }
});
