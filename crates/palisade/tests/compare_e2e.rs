//! A small end-to-end comparison with a Palisade target (engine Off) in front of the
//! built-in backend: a sweep of one rate and a closed loop, sampled, a second round
//! of the closed loop, then the report.
//!
//! It runs the `palisade` binary this package builds (`CARGO_BIN_EXE_palisade`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use bench::compare::sweep::{BackendChoice, CompareConfig};
use bench::compare::targets::Kind;

#[test]
fn palisade_off_end_to_end() {
    let palisade = std::path::PathBuf::from(env!("CARGO_BIN_EXE_palisade"));
    let work = tempfile::tempdir().unwrap();
    let cfg = CompareConfig {
        palisade,
        crs: "/nonexistent".into(),
        corpus_name: "standard-requests.json".into(),
        targets: vec![Kind::PalisadeOff, Kind::Coraza],
        rates: vec![100.0],
        sweep_duration: Duration::from_millis(1000),
        closed_duration: Duration::from_millis(1000),
        rounds: 2,
        closed_connections: 4,
        open_connections: 4,
        client_threads: 1,
        timeout: Duration::from_secs(5),
        server_cpus: None,
        client_cpus: None,
        backend_cpus: None,
        server_threads: 1,
        backend: BackendChoice::Builtin,
        work_dir: work.path().to_path_buf(),
        sample_interval: Duration::from_millis(100),
    };
    let corpus = bench::corpus::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/bench/standard-requests.json"
    )))
    .unwrap();
    let c = bench::compare::run(&cfg, &corpus, &|m| eprintln!("{m}")).unwrap();
    let t = &c.targets[0];
    assert_eq!(t.skipped, None, "{t:?}");
    let idle = t.idle.unwrap();
    assert_eq!(idle.processes, 1);
    assert!(idle.pss_kb_max > 0 && idle.rss_kb_max >= idle.pss_kb_max);
    assert_eq!(t.sweep.len(), 1);
    let s = &t.sweep[0];
    assert!(s.requests >= 90, "{s:?}");
    assert_eq!(s.status_2xx, s.requests);
    assert_eq!(s.errors, 0);
    let closed = t.closed.as_ref().unwrap();
    assert!(closed.requests > 50, "{closed:?}");
    assert!(closed.usage.cpu_percent > 0.0);
    // The second round started the target again and ran its closed loop.
    assert_eq!(t.rounds.len(), 2);
    assert_eq!(t.rounds[0].as_ref(), Some(closed));
    let second = t.rounds[1].as_ref().unwrap();
    assert!(second.requests > 50 && second.errors == 0, "{second:?}");
    assert_eq!(second.status_2xx, second.requests);
    assert!(c.targets[1].skipped.is_some() && c.targets[1].rounds.is_empty());
    let md = bench::compare::report::render(&c, &[]);
    assert!(md.contains("| Palisade, engine Off | "));
    assert!(md.contains("No ratio column"));
    assert!(md.contains("## Rounds (closed loop)"), "{md}");
    assert!(md.contains(&format!(
        "| Palisade, engine Off | {:.0} | {:.0} | – | – |",
        closed.requests_per_second, second.requests_per_second
    )));
}
