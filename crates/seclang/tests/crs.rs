//! The whole OWASP CRS tree (from `../shared/crs`) parses with zero errors, and the
//! counts of rules and markers equal an independent count taken straight from the
//! files' text.

#![allow(clippy::unwrap_used)] // tests fail by panicking

use std::collections::BTreeSet;
use std::path::PathBuf;

use seclang::{load_paths, Summary};

fn crs_dir() -> PathBuf {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/crs"));
    assert!(
        dir.join("rules").is_dir(),
        "the CRS test data is missing: expected {} (../shared beside the repository)",
        dir.display()
    );
    dir
}

fn crs_files() -> Vec<PathBuf> {
    let dir = crs_dir();
    let mut files = vec![dir.join("crs-setup.conf.example")];
    let mut rules: Vec<PathBuf> = std::fs::read_dir(dir.join("rules"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "conf"))
        .collect();
    rules.sort();
    files.extend(rules);
    files
}

/// Counts `id:N` in SecRule/SecAction directives and SecMarker lines with plain text
/// processing: join continuation lines, drop comments, and look for patterns.
fn independent_counts(files: &[PathBuf]) -> (BTreeSet<u32>, usize, usize) {
    let mut ids = BTreeSet::new();
    let mut total_ids = 0;
    let mut markers = 0;
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        let joined = text.replace("\\\n", "");
        for line in joined.lines() {
            let t = line.trim_start();
            if t.starts_with('#') {
                continue;
            }
            if t.starts_with("SecMarker") {
                markers += 1;
            }
            if t.starts_with("SecRule") || t.starts_with("SecAction") {
                // the id is `id:N` preceded by a quote, comma or blank
                let mut rest = t;
                while let Some(pos) = rest.find("id:") {
                    let before = rest[..pos].chars().last();
                    let digits: String = rest[pos + 3..]
                        .chars()
                        .take_while(char::is_ascii_digit)
                        .collect();
                    if matches!(before, Some('"' | ',' | ' ' | '\'')) && !digits.is_empty() {
                        ids.insert(digits.parse::<u32>().unwrap());
                        total_ids += 1;
                        break;
                    }
                    rest = &rest[pos + 3..];
                }
            }
        }
    }
    (ids, total_ids, markers)
}

#[test]
fn whole_crs_parses_without_errors_and_counts_match() {
    let files = crs_files();
    let loaded = load_paths(&files);
    assert!(loaded.is_ok(), "CRS errors:\n{}", loaded.render_errors());
    let summary = Summary::of(&loaded);
    let (ids, total_ids, markers) = independent_counts(&files);
    assert_eq!(ids.len(), total_ids, "ids are unique in CRS");
    assert_eq!(summary.rules, ids.len(), "rules with an id");
    assert_eq!(summary.markers, markers, "markers");
    assert!(summary.rules > 500, "CRS has hundreds of rules");
    let parsed_ids: BTreeSet<u32> = loaded
        .config
        .items
        .iter()
        .filter_map(|i| match &i.directive {
            seclang::Directive::Rule(r) => r.id(),
            _ => None,
        })
        .collect();
    assert_eq!(parsed_ids, ids);
}

#[test]
fn crs_round_trips_through_the_printer() {
    let loaded = load_paths(&crs_files());
    let printed = loaded.config.to_string();
    let reparsed = seclang::parse_str("printed.conf", &printed);
    assert!(reparsed.is_ok(), "{}", reparsed.render_errors());
    let mut a = loaded.config.clone();
    let mut b = reparsed.config;
    a.clear_spans();
    b.clear_spans();
    assert_eq!(a.items.len(), b.items.len());
    for (x, y) in a.items.iter().zip(&b.items) {
        assert_eq!(x, y);
    }
}
