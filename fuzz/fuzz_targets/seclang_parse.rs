//! Fuzz target: arbitrary bytes as a SecLang configuration. Parsing, validating,
//! rendering every diagnostic, printing the tree and re-parsing the printed text
//! must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seclang::{parse_str_with, Options};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let options = Options {
        follow_includes: false,
    };
    let loaded = parse_str_with("fuzz.conf", &text, &options);
    for e in &loaded.errors {
        let _ = e.render(&loaded.sources);
    }
    let printed = loaded.config.to_string();
    let again = parse_str_with("printed.conf", &printed, &options);
    let _ = again.render_errors();
});
