//! Fuzz target: every transformation in `Transformation::ALL` applied to the input
//! (checking `apply`'s contract: `false` leaves `out` empty, `true` means the output
//! differs), then a chain of up to three transformations picked by the first bytes.
#![no_main]

use engine::transform::Transformation;
use libfuzzer_sys::fuzz_target;

fn check(t: Transformation, input: &[u8], out: &mut Vec<u8>) -> bool {
    let changed = t.apply(input, out);
    if changed {
        assert!(out.as_slice() != input, "{}: true but unchanged", t.name());
        // No transformation expands more than 6x (hexEncode 2x, urlEncode 3x,
        // utf8toUnicode `%uXXXX` per byte 6x) plus a constant (length, md5, sha1).
        assert!(
            out.len() <= input.len() * 6 + 64,
            "{}: {} bytes from {}",
            t.name(),
            out.len(),
            input.len()
        );
    } else {
        assert!(out.is_empty(), "{}: false with output", t.name());
    }
    changed
}

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::new();
    for &t in Transformation::ALL {
        out.clear();
        check(t, data, &mut out);
        let _ = t.apply_to_vec(data);
    }
    let n = Transformation::ALL.len();
    let [a, b, c, rest @ ..] = data else {
        return;
    };
    let mut value = rest.to_vec();
    for sel in [a, b, c] {
        let t = Transformation::ALL[usize::from(*sel) % n];
        let mut next = Vec::new();
        if check(t, &value, &mut next) {
            value = next;
        }
    }
});
