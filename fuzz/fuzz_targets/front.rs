//! Fuzz target: `front::check_request` on an arbitrary request head (method, target,
//! version and header fields as independent byte strings).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Version {
    Http10,
    Http11,
    Other(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Head {
    method: Vec<u8>,
    target: Vec<u8>,
    version: Version,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
}

fuzz_target!(|head: Head| {
    let version: &[u8] = match &head.version {
        Version::Http10 => b"HTTP/1.0",
        Version::Http11 => b"HTTP/1.1",
        Version::Other(v) => v,
    };
    let headers: Vec<(&[u8], &[u8])> = head
        .headers
        .iter()
        .map(|(n, v)| (n.as_slice(), v.as_slice()))
        .collect();
    let _ = front::check_request(&head.method, &head.target, version, &headers);
});
