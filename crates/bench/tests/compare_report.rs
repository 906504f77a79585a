//! Report rendering and plotting of `palisade bench compare` from synthetic results.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use bench::compare::sampler::Usage;
use bench::compare::targets::{parse_targets, Kind};
use bench::compare::{report, Comparison, RunFigures, Settings, TargetResult};

fn usage(pss_mb: u64) -> Usage {
    Usage {
        samples: 10,
        processes: 2,
        rss_kb_max: pss_mb * 2048,
        pss_kb_max: pss_mb * 1024,
        rss_kb_mean: pss_mb * 2000,
        pss_kb_mean: pss_mb * 1000,
        cpu_percent: 42.0,
    }
}

fn run(rate: Option<f64>, rps: f64, p50: f64, pss_mb: u64) -> RunFigures {
    RunFigures {
        mode: if rate.is_some() { "open" } else { "closed" }.into(),
        offered_rate: rate,
        connections: 32,
        requests: (rps * 5.0) as u64,
        requests_per_second: rps,
        latency_mean_us: p50 * 1.2,
        latency_p50_us: p50,
        latency_p90_us: p50 * 2.0,
        latency_p99_us: p50 * 5.0,
        latency_max_us: p50 * 9.0,
        status_2xx: (rps * 5.0) as u64 - 10,
        status_403: 10,
        status_other: 0,
        errors: 0,
        unsent: 0,
        usage: usage(pss_mb),
    }
}

fn measured(kind: Kind, max_rps: f64, p50: f64, pss_mb: u64) -> TargetResult {
    TargetResult {
        kind,
        label: kind.label(),
        skipped: None,
        command: Some(format!("run {}", kind.id())),
        idle: Some(usage(pss_mb / 2)),
        sweep: [500.0, 1000.0, 2000.0]
            .iter()
            .map(|r| run(Some(*r), r.min(max_rps), p50 * r / 500.0, pss_mb))
            .collect(),
        closed: Some(run(None, max_rps, p50, pss_mb)),
    }
}

fn comparison(with_nginx: bool) -> Comparison {
    let mut targets = Vec::new();
    if with_nginx {
        targets.push(measured(Kind::Nginx, 40_000.0, 300.0, 6));
    }
    targets.push(measured(Kind::PalisadeOff, 30_000.0, 500.0, 20));
    targets.push(measured(Kind::PalisadeCrs(1), 4_000.0, 4000.0, 140));
    targets.push(TargetResult::skipped(
        Kind::ModSecurity(1),
        "/usr/lib/nginx/modules/ngx_http_modsecurity_module.so not found",
    ));
    targets.push(TargetResult::skipped(Kind::Coraza, "no Coraza server"));
    Comparison {
        settings: Settings {
            corpus: "corpus.jsonl".into(),
            corpus_requests: 1000,
            rates: vec![500.0, 1000.0, 2000.0],
            sweep_seconds: 5.0,
            closed_seconds: 10.0,
            closed_connections: 32,
            open_connections: 64,
            client_threads: 1,
            server_cpus: vec![0],
            client_cpus: vec![1],
            backend_cpus: vec![1],
            server_threads: 1,
            backend: "nginx".into(),
            machine: "test machine".into(),
            load_before: "1.0".into(),
            load_after: "1.1".into(),
            started: "2026-01-01 00:00 UTC".into(),
            command: "palisade bench compare --corpus corpus.jsonl".into(),
            revision: "abc1234-dirty".into(),
        },
        targets,
    }
}

#[test]
fn report_has_the_tables_ratios_and_skips() {
    let c = comparison(true);
    let md = report::render(&c, &["latency", "throughput"]);
    assert!(md.contains("## Maximum throughput (closed loop)"));
    // Ratio to the plain proxy: 30000 / 40000 and 4000 / 40000.
    assert!(
        md.contains("| Palisade, engine Off | 30000 | 0.750 |"),
        "{md}"
    );
    assert!(md.contains("| Palisade, CRS PL1 | 4000 | 0.100 |"), "{md}");
    assert!(
        md.contains("| nginx (plain proxy) | 40000 | 1.000 |"),
        "{md}"
    );
    // Memory: idle PSS is half the loaded one in the synthetic data.
    assert!(
        md.contains("| Palisade, CRS PL1 | 2 | 140.0 | 70.0 | 280.0 | 140.0 |"),
        "{md}"
    );
    // Sweep rows: every rate of every measured target.
    // Targets, throughput, memory, and three sweep rows.
    assert_eq!(md.matches("| Palisade, CRS PL1 | ").count(), 1 + 1 + 1 + 3);
    // Skipped targets are listed with their reason, and have no figures.
    assert!(
        md.contains("**skipped**: /usr/lib/nginx/modules/ngx_http_modsecurity_module.so not found")
    );
    assert!(md.contains("- Coraza: no Coraza server"));
    assert!(!md.contains("| nginx + ModSecurity v3, CRS PL1 | 0"));
    // Only the plots written are linked.
    assert!(md.contains("(latency.png)") && md.contains("(throughput.svg)"));
    assert!(!md.contains("memory.png"));
    assert!(md.contains("CPUs 1"));
    assert!(md.contains("```sh\npalisade bench compare --corpus corpus.jsonl\n```"));
    assert!(md.contains("Revision: `abc1234-dirty`."));
}

#[test]
fn without_the_plain_proxy_there_is_no_ratio() {
    let c = comparison(false);
    assert_eq!(c.baseline_rps(), None);
    let md = report::render(&c, &[]);
    assert!(md.contains("No ratio column"));
    assert!(md.contains("| Palisade, engine Off | 30000 | – |"), "{md}");
    assert!(!md.contains("## Plots"));
}

#[test]
fn results_round_trip_through_json() {
    let c = comparison(true);
    let text = serde_json::to_string(&c).unwrap();
    let back: Comparison = serde_json::from_str(&text).unwrap();
    assert_eq!(back, c);
}

#[test]
fn plots_are_written_as_svg_and_png() {
    if bench::compare::plot::load_font().is_err() {
        eprintln!("no TrueType font on this machine: plot test skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let c = comparison(true);
    let written = bench::compare::plot::write_all(&c, dir.path()).unwrap();
    assert_eq!(written, vec!["latency", "memory", "throughput", "ratio"]);
    for stem in written {
        for ext in ["svg", "png"] {
            let p = dir.path().join(format!("{stem}.{ext}"));
            let len = std::fs::metadata(&p).unwrap().len();
            assert!(
                len > 1000 && len < 300_000,
                "{} is {len} bytes",
                p.display()
            );
        }
    }
    let svg = std::fs::read_to_string(dir.path().join("latency.svg")).unwrap();
    assert!(svg.contains("Palisade, CRS PL1 p50"));
    let png = std::fs::read(dir.path().join("ratio.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // Without the plain proxy there is no ratio plot.
    let dir2 = tempfile::tempdir().unwrap();
    let written = bench::compare::plot::write_all(&comparison(false), dir2.path()).unwrap();
    assert_eq!(written, vec!["latency", "memory", "throughput"]);
}

#[test]
fn targets_expand_over_paranoia_levels() {
    let all = parse_targets(&["all".into()], &[1, 2]).unwrap();
    let ids: Vec<String> = all.iter().map(Kind::id).collect();
    assert_eq!(
        ids,
        [
            "nginx",
            "palisade-off",
            "palisade-pl1",
            "palisade-pl2",
            "modsecurity-pl1",
            "modsecurity-pl2",
            "coraza"
        ]
    );
    let some = parse_targets(&["palisade-crs,nginx".into()], &[4]).unwrap();
    assert_eq!(some, vec![Kind::PalisadeCrs(4), Kind::Nginx]);
    assert!(parse_targets(&["apache".into()], &[1]).is_err());
    assert!(parse_targets(&["palisade-crs".into()], &[5]).is_err());
}
