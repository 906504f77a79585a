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

/// Optimisations never change a result: the whole suite with every optimisation on
/// (prefilter, pre-pruning) gives the same status and matched rules, stage by
/// stage, as plain sequential evaluation; and in verification mode (every skipped
/// or folded evaluation re-checked against the operator) nothing differs either.
#[test]
fn crs_suite_results_are_identical_with_and_without_optimisations() {
    let crs = shared();
    let text = ftw::crs_config::test_config(&crs).unwrap();
    let plain = engine::Program::from_str_with("crs-test.conf", &text, &engine::Options::none())
        .unwrap_or_else(|e| panic!("{e}"));
    let fast = engine::Program::from_str_with("crs-test.conf", &text, &engine::Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(fast.prefilter.is_some());
    let folded = fast
        .rules
        .iter()
        .filter(|r| r.static_result.is_some())
        .count();
    assert!(folded > 100, "only {folded} rules folded at load time");
    let verified = engine::Options {
        verify: true,
        ..engine::Options::default()
    };
    let checked = engine::Program::from_str_with("crs-test.conf", &text, &verified)
        .unwrap_or_else(|e| panic!("{e}"));
    let suite = load_suite(&crs.join("tests/regression/tests")).unwrap();
    let a = run_suite(
        &suite,
        &Filter::default(),
        &mut EngineTarget::new(plain),
        &mut |_| {},
    );
    let b = run_suite(
        &suite,
        &Filter::default(),
        &mut EngineTarget::new(fast),
        &mut |_| {},
    );
    // Panics inside on any difference the verification finds.
    let c = run_suite(
        &suite,
        &Filter::default(),
        &mut EngineTarget::new(checked),
        &mut |_| {},
    );
    assert_eq!(a.len(), c.len());
    assert_eq!(a.len(), b.len());
    let mut differences = Vec::new();
    for (x, y) in a.iter().zip(&b) {
        for (sx, sy) in x.stages.iter().zip(&y.stages) {
            let ox = sx
                .outcome
                .as_ref()
                .map(|o| (o.status, o.matched_ids.clone()));
            let oy = sy
                .outcome
                .as_ref()
                .map(|o| (o.status, o.matched_ids.clone()));
            if ox != oy {
                differences.push(format!("{} stage {}: {:?} vs {:?}", x.id, sx.index, ox, oy));
            }
        }
    }
    assert!(
        differences.is_empty(),
        "{} differences:\n{}",
        differences.len(),
        differences.join("\n")
    );
}
