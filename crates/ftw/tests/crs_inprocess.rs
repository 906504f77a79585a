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

/// Pre-pruning folds every paranoia-level gate (`TX:DETECTION_PARANOIA_LEVEL "@lt N"`)
/// of a production configuration, in every phase: a rule that can end phase 1
/// (a `deny` in REQUEST-901) but is itself folded to "never matches" does not make
/// the state at the start of phase 2 unknown.
#[test]
fn production_config_folds_every_paranoia_gate() {
    let crs = shared();
    let text = ftw::crs_config::crs_config(&crs, 1, false).unwrap();
    let program = engine::Program::from_str_with("crs.conf", &text, &engine::Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let gates: Vec<_> = program
        .rules
        .iter()
        .filter(|r| {
            r.operator.name == "lt"
                && r.targets.len() == 1
                && format!("{:?}", r.targets[0])
                    .to_ascii_lowercase()
                    .contains("detection_paranoia_level")
        })
        .collect();
    assert!(gates.len() > 100, "only {} gates found", gates.len());
    let phases: std::collections::BTreeSet<u8> = gates.iter().map(|r| r.phase).collect();
    assert!(phases.contains(&2) && phases.contains(&4), "{phases:?}");
    let unfolded: Vec<u32> = gates
        .iter()
        .filter(|r| r.static_result.is_none())
        .map(|r| r.id)
        .collect();
    assert!(
        unfolded.is_empty(),
        "paranoia gates not folded: {unfolded:?}"
    );
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

/// Early exit (opt-in) on the CRS: the compiler finds the blocking evaluation of
/// phase 2, and every stage of the suite, run with the engine On (the suite's own
/// configuration is DetectionOnly, where nothing exits), gets the same status as
/// without it (every stage that blocks still blocks with its status); the
/// rules it reports are a subset of the full evaluation's (exactly what early exit
/// allows: the detection rules after the threshold was reached are skipped).
#[test]
fn crs_suite_decisions_are_identical_with_early_exit() {
    let crs = shared();
    let text = ftw::crs_config::test_config(&crs)
        .unwrap()
        .replace("ctl:ruleEngine=DetectionOnly", "ctl:ruleEngine=On");
    let full = engine::Program::from_str_with("crs-test.conf", &text, &engine::Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let options = engine::Options::parse("all,early_exit").unwrap_or_else(|e| panic!("{e}"));
    let early = engine::Program::from_str_with("crs-test.conf", &text, &options)
        .unwrap_or_else(|e| panic!("{e}"));
    let exit = early.ordering.early_exit[1]
        .as_ref()
        .unwrap_or_else(|| panic!("no early exit in phase 2"));
    assert!(exit.target - exit.from > 100, "region {exit:?}");
    let suite = load_suite(&crs.join("tests/regression/tests")).unwrap();
    let a = run_suite(
        &suite,
        &Filter::default(),
        &mut EngineTarget::new(full),
        &mut |_| {},
    );
    let b = run_suite(
        &suite,
        &Filter::default(),
        &mut EngineTarget::new(early),
        &mut |_| {},
    );
    assert_eq!(a.len(), b.len());
    let mut differences = Vec::new();
    let mut fewer = 0;
    let mut blocked = 0;
    for (x, y) in a.iter().zip(&b) {
        for (sx, sy) in x.stages.iter().zip(&y.stages) {
            let (Some(ox), Some(oy)) = (sx.outcome.as_ref(), sy.outcome.as_ref()) else {
                if sx.outcome.is_some() != sy.outcome.is_some() {
                    differences.push(format!("{} stage {}: outcome presence", x.id, sx.index));
                }
                continue;
            };
            if ox.status != oy.status || !oy.matched_ids.iter().all(|i| ox.matched_ids.contains(i))
            {
                differences.push(format!(
                    "{} stage {}: {:?} {:?} vs {:?} {:?}",
                    x.id, sx.index, ox.status, ox.matched_ids, oy.status, oy.matched_ids
                ));
            }
            fewer += usize::from(oy.matched_ids.len() < ox.matched_ids.len());
            blocked += usize::from(ox.status == Some(403));
        }
    }
    assert!(
        differences.is_empty(),
        "{} differences:\n{}",
        differences.len(),
        differences.join("\n")
    );
    assert!(blocked > 1000, "only {blocked} stages blocked");
    assert!(
        fewer > 100,
        "early exit skipped matches in only {fewer} stages"
    );
    eprintln!("{blocked} stages blocked, {fewer} with fewer matched rules under early exit");
}
