//! Fuzz target: `engine::body::parse_multipart`.
//!
//! Byte 0 selects the limits and where the Content-Type comes from:
//! - bit 0 set: the Content-Type is the first line of the rest (up to `\n`), the body
//!   follows it;
//! - bit 0 clear: the Content-Type is `multipart/form-data; boundary=B` where `B` is
//!   the body's first line without its leading `--` (so a valid body seeds well);
//! - bits 1-3: small part / file limits, file extraction, partial bodies.
#![no_main]

use engine::body::{parse_multipart, MultipartLimits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let (content_type, body): (Vec<u8>, &[u8]) = if sel & 1 == 1 {
        match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (rest[..i].to_vec(), &rest[i + 1..]),
            None => (rest.to_vec(), &[][..]),
        }
    } else {
        let first = rest.split(|&b| b == b'\n').next().unwrap_or_default();
        let first = first.strip_suffix(b"\r").unwrap_or(first);
        let boundary = first.strip_prefix(b"--").unwrap_or(first);
        let mut ct = b"multipart/form-data; boundary=".to_vec();
        ct.extend_from_slice(boundary);
        (ct, rest)
    };
    let mut limits = MultipartLimits::default();
    if sel & 2 != 0 {
        limits.max_parts = 3;
        limits.max_file_content = 16;
        limits.file_limit = 1;
    }
    limits.extract_files = sel & 4 != 0;
    limits.allow_partial = sel & 8 != 0;
    let r = parse_multipart(body, &content_type, &limits);
    let _ = r.strict_error();
    let _ = r.crlf_lf_lines();
    let _ = r.files_combined_size();
    assert!(r.args.len() + r.files.len() <= limits.max_parts.max(1) + 1);
    for f in &r.files {
        assert!(f.content.len() <= limits.max_file_content);
    }
});
