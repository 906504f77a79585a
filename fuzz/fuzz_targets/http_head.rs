//! Fuzz target: `ftw::http_head::parse_request` on raw request bytes; an accepted head
//! then goes through the front door policy (`front::check_request`) and, when chunked,
//! its body through `ftw::chunked::decode_chunked`.
#![no_main]

use ftw::chunked::{decode_chunked, is_chunked};
use ftw::http_head::parse_request;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(req) = parse_request(data) else {
        return;
    };
    assert!(req.body.len() <= data.len());
    let _ = req.header("Host");
    let _ = req.header_values("Content-Length").count();
    let headers: Vec<(&[u8], &[u8])> = req
        .headers
        .iter()
        .map(|h| (h.name.as_slice(), h.value.as_slice()))
        .collect();
    let _ = front::check_request(&req.method, &req.uri, &req.version, &headers);
    if is_chunked(&req) {
        let _ = decode_chunked(&req.body);
    }
});
