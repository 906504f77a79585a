//! Fuzz target: `engine::body::parse_xml` and `XmlDoc::select`.
//!
//! If the input contains a NUL byte, the text before the first NUL is an XPath
//! expression (validated with `validate_xpath`, then selected); the rest is the
//! document. Every document is also queried with the expressions CRS and common
//! rules use.
#![no_main]

use engine::body::{parse_xml, validate_xpath};
use libfuzzer_sys::fuzz_target;

const XPATHS: &[&str] = &[
    "/*", "//@*", "//*", "/*/*", "//text()", "/a/b", "//a/*", "/a/@x", "//@x",
];

fuzz_target!(|data: &[u8]| {
    let (xpath, doc) = match data.iter().position(|&b| b == 0) {
        Some(i) => (Some(String::from_utf8_lossy(&data[..i])), &data[i + 1..]),
        None => (None, data),
    };
    if let Some(x) = &xpath {
        let _ = validate_xpath(x);
    }
    let Ok(doc) = parse_xml(doc) else {
        return;
    };
    let mut out = Vec::new();
    for x in XPATHS {
        out.clear();
        let _ = doc.select(x, &mut out);
    }
    if let Some(x) = &xpath {
        out.clear();
        let _ = doc.select(x, &mut out);
    }
});
