//! Table-driven test of malformed configurations: each case in
//! `data/malformed.txt` must produce its first error of exactly the named kind at
//! exactly the named line and column.

#![allow(clippy::unwrap_used)] // tests fail by panicking

struct Case {
    name: String,
    kind: String,
    line: u32,
    col: u32,
    text: String,
}

fn cases() -> Vec<Case> {
    let data = include_str!("data/malformed.txt");
    let mut out = Vec::new();
    for block in data.split("\n=== ").skip(1) {
        let (name, rest) = block.split_once('\n').unwrap();
        let (expect, text) = rest.split_once('\n').unwrap();
        let expect = expect.strip_prefix("expect: ").unwrap();
        let (kind, pos) = expect.split_once(' ').unwrap();
        let (line, col) = pos.split_once(':').unwrap();
        out.push(Case {
            name: name.trim().to_string(),
            kind: kind.to_string(),
            line: line.parse().unwrap(),
            col: col.parse().unwrap(),
            text: text.trim_end().to_string() + "\n",
        });
    }
    out
}

#[test]
fn malformed_configurations_report_exact_kind_and_position() {
    let cases = cases();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let loaded = seclang::parse_str("case.conf", &case.text);
        let Some(first) = loaded.errors.first() else {
            failures.push(format!("{}: no error reported", case.name));
            continue;
        };
        let (line, col) = first.span.map_or((0, 0), |s| (s.line, s.col));
        if first.kind.name() != case.kind || line != case.line || col != case.col {
            failures.push(format!(
                "{}: expected {} {}:{}, got {} {}:{} ({})",
                case.name, case.kind, case.line, case.col, first.kind, line, col, first.message
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn all_errors_are_collected_not_only_the_first() {
    let text = "SecRuleEngin On\nSecRule ARGZ \"@rx a\" \"id:1,phase:2\"\nSecRule ARGS \"@rxx a\" \"id:2,phase:2\"\nSecAction \"id:3,phase:9\"\n";
    let loaded = seclang::parse_str("many.conf", text);
    let kinds: Vec<&str> = loaded.errors.iter().map(|e| e.kind.name()).collect();
    assert_eq!(
        kinds,
        [
            "unknown-directive",
            "unknown-variable",
            "unknown-operator",
            "phase-out-of-range"
        ]
    );
}
