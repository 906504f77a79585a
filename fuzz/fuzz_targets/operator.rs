//! Fuzz target: every operator of `seclang::names::OPERATORS`, built with
//! `engine::operator::build` from an arbitrary argument and evaluated on an arbitrary
//! input, with and without captures.
//!
//! For the file operators (`@pmFromFile`, `@pmf`, `@ipMatchFromFile`, `@ipMatchF`)
//! the argument is the *content* of the data file: it is written to a file in a
//! per-process temporary directory, and the operator is built with that file's name
//! (relative to `OperatorEnv::rule_dir`), so no other file is ever read.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use arbitrary::Arbitrary;
use engine::operator::{build, Captures, OperatorEnv};
use libfuzzer_sys::fuzz_target;
use seclang::names::OPERATORS;

#[derive(Arbitrary, Debug)]
struct Case {
    operator: u8,
    match_limit: u8,
    argument: String,
    input: Vec<u8>,
}

const FILE_OPERATORS: &[&str] = &["pmFromFile", "pmf", "ipMatchFromFile", "ipMatchF"];

fn data_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("palisade-fuzz-op-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the fuzz data directory");
        dir
    })
}

fuzz_target!(|case: Case| {
    let (name, _) = OPERATORS[usize::from(case.operator) % OPERATORS.len()];
    let mut env = OperatorEnv {
        match_limit: u64::from(case.match_limit) * 10,
        ..OperatorEnv::default()
    };
    let argument = if FILE_OPERATORS.contains(&name) {
        let dir = data_dir();
        if std::fs::write(dir.join("data.txt"), case.argument.as_bytes()).is_err() {
            return;
        }
        env.rule_dir = dir.clone();
        "data.txt".to_string()
    } else {
        case.argument
    };
    let Ok(op) = build(name, &argument, &env) else {
        return;
    };
    let _ = op.regex_engine();
    let plain = op.evaluate(&case.input, None);
    let mut captures = Captures::default();
    let captured = op.evaluate(&case.input, Some(&mut captures));
    assert_eq!(
        plain, captured,
        "@{name} {argument:?}: captures change the result"
    );
    assert!(captures.len() <= 10);
    for i in 0..captures.len() {
        let _ = captures.get(i);
    }
});
