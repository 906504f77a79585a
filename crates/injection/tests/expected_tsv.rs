//! Every non-empty line of every libinjection sample file (`data/*.txt`)
//! against the verdicts of the reference C library (`expected/*.tsv`:
//! line number, SQLi verdict, SQLi fingerprint or `-`, XSS verdict).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

mod common;

use injection::{detect_sqli, detect_xss};

struct Row {
    line: usize,
    sqli: bool,
    fingerprint: String,
    xss: bool,
}

fn parse_tsv(text: &str, name: &str) -> Vec<Row> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "{name}: bad row {l:?}");
            Row {
                line: f[0].parse().unwrap(),
                sqli: f[1] == "1",
                fingerprint: f[2].to_owned(),
                xss: f[3] == "1",
            }
        })
        .collect()
}

#[derive(Default)]
struct Totals {
    lines: usize,
    sqli: usize,
    xss: usize,
}

#[test]
fn every_sample_line_matches_reference_verdicts() {
    let dir = common::data_dir();
    let tsvs = common::files("expected", "", ".tsv");
    let mut failures = Vec::new();
    let mut rows_checked = 0usize;
    let mut by_family: std::collections::BTreeMap<&str, Totals> = Default::default();

    for tsv in &tsvs {
        let stem = tsv.file_stem().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(dir.join("data").join(format!("{stem}.txt")))
            .unwrap_or_else(|e| panic!("data file for {stem}: {e}"));
        let rows = parse_tsv(&std::fs::read_to_string(tsv).unwrap(), &stem);

        let lines: Vec<(usize, &[u8])> = data
            .split(|&b| b == b'\n')
            .enumerate()
            .map(|(i, l)| (i + 1, l))
            .filter(|(_, l)| !l.is_empty())
            .collect();
        assert_eq!(
            lines.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            rows.iter().map(|r| r.line).collect::<Vec<_>>(),
            "{stem}: the TSV rows are not the non-empty lines of the data file"
        );

        let family = if stem.starts_with("sqli-") {
            "sqli-*"
        } else if stem.starts_with("xss-") {
            "xss-*"
        } else if stem == "false_positives" {
            "false_positives"
        } else {
            "other"
        };
        let totals = by_family.entry(family).or_default();

        for ((n, line), row) in lines.iter().zip(&rows) {
            rows_checked += 1;
            // The reference verdicts were computed on C strings: a line is
            // cut at its first NUL byte.
            let line = common::c_str(line);
            let s = detect_sqli(line);
            let x = detect_xss(line);
            totals.lines += 1;
            totals.sqli += usize::from(s.is_sqli);
            totals.xss += usize::from(x);
            let fp = if s.is_sqli {
                s.fingerprint.as_str().to_owned()
            } else {
                "-".to_owned()
            };
            if s.is_sqli != row.sqli || fp != row.fingerprint || x != row.xss {
                failures.push(format!(
                    "{stem}.txt:{n}: expected sqli={} fp={} xss={}, got sqli={} fp={} xss={} for {:?}",
                    u8::from(row.sqli),
                    row.fingerprint,
                    u8::from(row.xss),
                    u8::from(s.is_sqli),
                    fp,
                    u8::from(x),
                    String::from_utf8_lossy(line)
                ));
            }
        }
    }

    for (family, t) in &by_family {
        println!(
            "{family}: {} lines, {} detected as SQLi, {} detected as XSS",
            t.lines, t.sqli, t.xss
        );
    }
    println!(
        "tsv rows: {} passed, {} failed",
        rows_checked - failures.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {rows_checked} rows differ from the reference:\n{}",
        failures.len(),
        failures.join("\n")
    );

    // the totals the reference data's README states
    let t = &by_family["sqli-*"];
    assert_eq!((t.lines, t.sqli), (17477, 16444));
    let t = &by_family["xss-*"];
    assert_eq!((t.lines, t.xss), (1913, 1518));
    let t = &by_family["false_positives"];
    assert_eq!((t.lines, t.sqli), (431, 13));
}
