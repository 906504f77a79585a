//! The prefilter's scan of a long response body (CRS PL1's response-body
//! automaton): four interleaved pieces (`Prefilter::scan_long_into`) against the
//! one-piece loop (`scan_long_into_sequential`), in one run on one machine.
//! `cargo bench -p engine --bench long_scan`.

#![allow(clippy::unwrap_used, missing_docs)] // a benchmark fails by panicking

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use engine::Program;

/// A deterministic HTML page of about `len` bytes (text, tags, attributes).
fn page(len: usize) -> Vec<u8> {
    let words = [
        "shoes",
        "running",
        "price",
        "<a href=\"/item/42\">",
        "</a>",
        "<div class=\"card\">",
        "</div>",
        "sale",
        "delivery",
        "<span>",
        "</span>",
        "size",
        "colour",
        "review",
    ];
    let mut out = b"<!DOCTYPE html><html><head><title>Shop</title></head><body>".to_vec();
    let mut i = 7usize;
    while out.len() < len {
        i = i.wrapping_mul(1_103_515_245).wrapping_add(12_345) % 65_536;
        out.extend_from_slice(words[i % words.len()].as_bytes());
        out.push(b' ');
    }
    out.truncate(len);
    out
}

fn bench(c: &mut Criterion) {
    let crs = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/crs"));
    let program =
        Program::from_paths(&[crs.join("crs-setup.conf.example"), crs.join("rules")]).unwrap();
    let pf = program.prefilter.as_ref().unwrap();
    let mut g = c.benchmark_group("response body scan");
    for len in [2 << 10, 10 << 10, 100 << 10] {
        let body = page(len);
        let mut a = vec![0u64; pf.scan_words()];
        let mut b = vec![0u64; pf.scan_words()];
        pf.scan_long_into(&body, &mut a);
        pf.scan_long_into_sequential(&body, &mut b);
        assert_eq!(a, b, "the two scans set different bits");
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(format!("{} KB, one piece", len >> 10), |bn| {
            bn.iter(|| {
                b.iter_mut().for_each(|w| *w = 0);
                pf.scan_long_into_sequential(black_box(&body), &mut b);
            })
        });
        g.bench_function(format!("{} KB, four interleaved pieces", len >> 10), |bn| {
            bn.iter(|| {
                a.iter_mut().for_each(|w| *w = 0);
                pf.scan_long_into(black_box(&body), &mut a);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
