//! The whole CRS v4 regression suite, in-process, against the engine. Every case
//! that does not pass must be listed in `tests/crs-overrides.yaml` (repository root)
//! with its reason; an unlisted failure or a listed pass (stale override) fails.

#![allow(clippy::unwrap_used)] // tests fail by panicking

use std::path::PathBuf;

use ftw::{load_overrides, load_suite, run_suite, verdict, EngineTarget, Filter, Summary};

fn shared() -> PathBuf {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/crs"));
    assert!(
        dir.join("rules").is_dir(),
        "missing CRS test data at {}",
        dir.display()
    );
    dir
}

#[test]
fn crs_regression_suite_in_process() {
    let crs = shared();
    let text = ftw::crs_config::test_config(&crs).unwrap();
    let program =
        engine::Program::from_str("crs-test.conf", &text).unwrap_or_else(|e| panic!("{e}"));
    let suite = load_suite(&crs.join("tests/regression/tests")).unwrap();
    let mut target = EngineTarget::new(program);
    let results = run_suite(&suite, &Filter::default(), &mut target, &mut |_| {});
    let summary = Summary::of(&results);
    println!("{summary}");
    let overrides_path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/crs-overrides.yaml"
    ));
    let overrides = load_overrides(&overrides_path).unwrap();
    let v = verdict(results.iter().map(|r| (r.id, r.status)), &overrides);
    if !v.is_ok() {
        let mut lines = Vec::new();
        for r in results
            .iter()
            .filter(|r| v.unexpected_failures.contains(&r.id))
            .take(400)
        {
            lines.push(format!(
                "{}: {}",
                r.id,
                r.reason.clone().unwrap_or_default()
            ));
        }
        panic!(
            "{summary}\n{} unexpected failures, {} stale overrides ({:?})\n{}",
            v.unexpected_failures.len(),
            v.stale_overrides.len(),
            v.stale_overrides,
            lines.join("\n")
        );
    }
}
