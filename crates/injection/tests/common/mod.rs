//! Shared helpers for the data-driven tests: locating libinjection's reference
//! data (in /work/shared, next to the repository) and parsing its test files.

#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::PathBuf;

/// The reference data directory. Panics (failing the test loudly) when it is
/// missing: these tests must never pass by skipping.
pub fn data_dir() -> PathBuf {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/libinjection"
    ));
    assert!(
        dir.join("README.md").is_file(),
        "libinjection reference data not found at {} (expected shared/libinjection next to the repository)",
        dir.display()
    );
    dir
}

/// Sorted list of files in `sub` whose name starts with `prefix` and ends with `suffix`.
pub fn files(sub: &str, prefix: &str, suffix: &str) -> Vec<PathBuf> {
    let dir = data_dir().join(sub);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with(prefix) && n.ends_with(suffix)
        })
        .collect();
    v.sort();
    assert!(
        !v.is_empty(),
        "no {prefix}*{suffix} files in {}",
        dir.display()
    );
    v
}

/// A unit test vector: the input and the expected output.
pub struct Vector {
    pub name: String,
    pub input: Vec<u8>,
    pub expected: String,
}

/// Trailing space, tab, newline and carriage return removed (the C test
/// driver's `modp_rtrim`).
pub fn rtrim(mut b: &[u8]) -> &[u8] {
    while let Some((&last, rest)) = b.split_last() {
        if matches!(last, b' ' | b'\t' | b'\n' | b'\r') {
            b = rest;
        } else {
            break;
        }
    }
    b
}

/// Parses a `--TEST--` / `--INPUT--` / `--EXPECTED--` file as the C test driver does.
pub fn read_vector(path: &std::path::Path) -> Vector {
    let raw = std::fs::read(path).unwrap();
    let mut section = 0;
    let (mut input, mut expected) = (Vec::new(), Vec::new());
    for line in raw.split_inclusive(|&b| b == b'\n') {
        if section == 0 && line == b"--TEST--\n" {
            section = 1;
        } else if section == 1 && line == b"--INPUT--\n" {
            section = 2;
        } else if section == 2 && line == b"--EXPECTED--\n" {
            section = 3;
        } else if section == 2 {
            input.extend_from_slice(line);
        } else if section == 3 {
            expected.extend_from_slice(line);
        }
    }
    assert_eq!(section, 3, "{}: malformed test file", path.display());
    Vector {
        name: path.file_name().unwrap().to_string_lossy().into_owned(),
        input: rtrim(&input).to_vec(),
        expected: String::from_utf8_lossy(rtrim(&expected)).into_owned(),
    }
}

/// Bytes up to the first NUL, as C's `printf("%s")` prints them.
pub fn c_str(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(i) => &b[..i],
        None => b,
    }
}
