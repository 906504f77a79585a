//! Fuzz target: `engine::body::parse_xml`, `XPath::compile` and
//! `XmlDoc::select` / `XmlDoc::evaluate`.
//!
//! If the input contains a NUL byte, the text before the first NUL is an XPath
//! expression (validated with `validate_xpath`, then selected, and compiled with
//! the prefix `n` bound); the rest is the document. Every document is also queried
//! with the expressions CRS and common rules use, and with namespaced ones.
#![no_main]

use engine::body::{parse_xml, validate_xpath, XPath};
use libfuzzer_sys::fuzz_target;

const XPATHS: &[&str] = &[
    "/*", "//@*", "//*", "/*/*", "//text()", "/a/b", "//a/*", "/a/@x", "//@x",
];

/// Namespaced expressions, with `n` bound to `urn:n`.
const NS_XPATHS: &[&str] = &["//n:*", "/n:a/n:b", "//@n:*", "//@n:x", "/*/n:a/text()"];

fuzz_target!(|data: &[u8]| {
    let ns = [("n".to_string(), "urn:n".to_string())];
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
    for x in NS_XPATHS {
        if let Ok(path) = XPath::compile(x, &ns) {
            out.clear();
            doc.evaluate(&path, &mut out);
        }
    }
    if let Some(x) = &xpath {
        out.clear();
        let _ = doc.select(x, &mut out);
        if let Ok(path) = XPath::compile(x, &ns) {
            out.clear();
            doc.evaluate(&path, &mut out);
        }
    }
});
