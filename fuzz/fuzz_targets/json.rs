//! Fuzz target: `engine::body::parse_json`. Byte 0 picks the depth limit and byte 1
//! the argument limit (small values exercise the limit paths); the rest is the body.
#![no_main]

use engine::body::{parse_json, JSON_DEPTH_LIMIT_DEFAULT};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [d, m, body @ ..] = data else {
        return;
    };
    let depth = match d {
        0 => JSON_DEPTH_LIMIT_DEFAULT,
        1 => 512,
        n => usize::from(*n % 32),
    };
    let max_args = match m {
        0 => usize::MAX,
        1 => 1000,
        n => usize::from(*n % 64),
    };
    let mut out = Vec::new();
    let _ = parse_json(body, depth, max_args, &mut out);
    assert!(
        out.len() <= max_args,
        "{} args > limit {max_args}",
        out.len()
    );
});
