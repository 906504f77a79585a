//! Long values in the Rule Result Cache: response bodies and long request headers
//! that repeat are cached like short values (within the cache's byte budgets),
//! and CRS PL1 with all optimisations gives the plain results on them — clean
//! pages and pages that leak SQL errors, PHP source, Java exceptions or a
//! directory index, each served many times.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bench::corpus::Request;
use bench::verify::{diff, Mode, Outcome};
use engine::{Options, Program};

fn crs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/crs")
}

fn compile(options: &Options) -> Arc<Program> {
    let text = ftw::crs_config::crs_config(&crs(), 1, false).unwrap();
    Program::from_str_with("crs.conf", &text, options).unwrap_or_else(|e| panic!("{e}"))
}

/// An HTML page of about `len` bytes with `inner` in its middle.
fn page(len: usize, title: &str, inner: &str) -> Vec<u8> {
    let mut s = format!("<html><head><title>{title}</title></head><body>\n");
    let mut i = 0;
    while s.len() < len / 2 {
        s.push_str(&format!(
            "<p class=\"row\">Item {i}: a plain line of shop text.</p>\n"
        ));
        i += 1;
    }
    s.push_str(inner);
    while s.len() < len {
        s.push_str(&format!("<li><a href=\"/item/{i}\">item {i}</a></li>\n"));
        i += 1;
    }
    s.push_str("</body></html>\n");
    s.into_bytes()
}

/// Most rounds over the pages: the misses are reported by one transaction in
/// four, at random, and a value is admitted once a window saw it twice.
const ROUNDS_MAX: usize = 400;

fn request(target: &str, cookie: &str) -> Request {
    Request {
        name: "long".into(),
        method: "GET".into(),
        target: target.into(),
        version: "HTTP/1.1".into(),
        headers: vec![
            ("Host".into(), "shop.example.com".into()),
            (
                "User-Agent".into(),
                "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0".into(),
            ),
            ("Accept".into(), "text/html".into()),
            ("Cookie".into(), cookie.into()),
        ],
        body: String::new(),
        resp_len: 0,
    }
}

#[test]
fn repeated_long_values_are_cached_and_give_the_plain_results() {
    let optimised = compile(&Options::default());
    // Windows rebuilt on this thread: what is admitted depends on the requests alone.
    optimised.caches.set_synchronous(true);
    let plain = compile(&Options::none());
    let pages = [
        page(10 * 1024, "Shop", "<p>Welcome back.</p>"),
        page(3000, "Catalogue", "<p>Twelve items.</p>"),
        page(
            6000,
            "Error",
            "<b>Warning</b>: You have an error in your SQL syntax; check the manual that \
             corresponds to your MySQL server version for the right syntax",
        ),
        page(5000, "Source", "<?php echo $secret; ?>"),
        page(
            7000,
            "Oops",
            "java.lang.NullPointerException\n\tat com.shop.Cart.add(Cart.java:42)",
        ),
        page(
            4000,
            "Index of /backup",
            "<h1>Index of /backup</h1><a href=\"db.sql\">db.sql</a>",
        ),
        page(
            8000,
            "Oracle",
            "ORA-01756: quoted string not properly terminated",
        ),
    ];
    // Long cookie headers (past the short-value length), two visitors.
    let cookies: Vec<String> = (0..2)
        .map(|v| {
            let mut c = format!("session=visitor{v}");
            for k in 0..12 {
                c.push_str(&format!("; pref_{k}=value-{v}-{k}-abcdefghij"));
            }
            c
        })
        .collect();
    assert!(cookies
        .iter()
        .all(|c| c.len() > engine::value_cache::SHORT_VALUE_LEN));
    let mut leaks = 0;
    let mut cached_since = None;
    let all_cached = || {
        pages.iter().all(|b| optimised.caches.lookup(b).is_some())
            && cookies
                .iter()
                .all(|c| optimised.caches.lookup(c.as_bytes()).is_some())
    };
    for round in 0..ROUNDS_MAX {
        for (p, body) in pages.iter().enumerate() {
            let req = request(&format!("/page/{p}?r={}", round % 3), &cookies[p % 2]);
            let want = Outcome::observe(&plain, &req, body);
            let got = Outcome::observe(&optimised, &req, body);
            let findings = diff::compare(&want, &got, Mode::Exact);
            assert!(findings.is_empty(), "round {round}, page {p}: {findings:?}");
            if round == 0 && !want.matched.is_empty() {
                leaks += 1;
            }
        }
        // Three rounds more once every value is cached: their results are the
        // cached ones.
        match cached_since {
            None if all_cached() => cached_since = Some(round),
            Some(r) if round >= r + 3 => break,
            _ => {}
        }
    }
    // The leaking pages are caught (outbound rules matched) in the plain run.
    assert_eq!(leaks, 5);
    // The pages and the long cookie headers were admitted.
    assert!(cached_since.is_some(), "not all long values were admitted");
}
