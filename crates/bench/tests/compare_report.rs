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
        rounds: Vec::new(),
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
            rounds: 1,
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

/// `c` with three rounds: the plain proxy at 40000, 50000 and 30000 requests/s,
/// Palisade CRS at 20000, 20000 and 18000 (ratios 0.5, 0.4, 0.6), and the
/// engine-Off target missing its third round.
fn with_rounds(mut c: Comparison) -> Comparison {
    c.settings.rounds = 3;
    for t in c.targets.iter_mut().filter(|t| t.skipped.is_none()) {
        let rps: [Option<f64>; 3] = match t.kind {
            Kind::Nginx => [Some(40_000.0), Some(50_000.0), Some(30_000.0)],
            Kind::PalisadeCrs(_) => [Some(20_000.0), Some(20_000.0), Some(18_000.0)],
            _ => [Some(30_000.0), Some(45_000.0), None],
        };
        t.rounds = rps
            .iter()
            .map(|r| r.map(|r| run(None, r, 500.0, 10)))
            .collect();
        t.closed = t.rounds[0].clone();
    }
    c
}

#[test]
fn rounds_give_a_ratio_per_round_and_their_median() {
    let c = with_rounds(comparison(true));
    let crs = c
        .targets
        .iter()
        .find(|t| t.kind == Kind::PalisadeCrs(1))
        .unwrap();
    let ratios = c.round_ratios(crs);
    assert_eq!(ratios.len(), 3);
    for (got, want) in ratios.iter().zip([0.5, 0.4, 0.6]) {
        assert!((got - want).abs() < 1e-9, "{ratios:?}");
    }
    // A round without a run gives no ratio.
    let off = c
        .targets
        .iter()
        .find(|t| t.kind == Kind::PalisadeOff)
        .unwrap();
    assert_eq!(c.round_ratios(off), vec![0.75, 0.9]);
    let md = report::render(&c, &[]);
    assert!(md.contains("## Rounds (closed loop)"), "{md}");
    assert!(
        md.contains("32 keep-alive connections, 10 s, 3 round(s)"),
        "{md}"
    );
    assert!(
        md.contains("| Palisade, CRS PL1 | 20000 | 20000 | 18000 | 0.500, 0.400, 0.600 | 0.500 |"),
        "{md}"
    );
    assert!(
        md.contains("| Palisade, engine Off | 30000 | 45000 | – | 0.750, 0.900 | 0.825 |"),
        "{md}"
    );
    assert!(
        md.contains(
            "| nginx (plain proxy) | 40000 | 50000 | 30000 | 1.000, 1.000, 1.000 | 1.000 |"
        ),
        "{md}"
    );
    // One round: no rounds table, and the one ratio is the closed loop's.
    let one = comparison(true);
    assert!(!report::render(&one, &[]).contains("## Rounds"));
    let crs = one
        .targets
        .iter()
        .find(|t| t.kind == Kind::PalisadeCrs(1))
        .unwrap();
    assert_eq!(one.round_ratios(crs), vec![0.1]);
    // Without the plain proxy there is no ratio in any round.
    let c = with_rounds(comparison(false));
    assert!(c.round_ratios(&c.targets[1]).is_empty());
    assert!(report::render(&c, &[]).contains("| – |"));
}

#[test]
fn the_median_takes_the_middle_or_the_mean_of_the_middle_two() {
    use bench::compare::median;
    assert_eq!(median(&[]), None);
    assert_eq!(median(&[0.3]), Some(0.3));
    assert_eq!(median(&[0.5, 0.1, 0.3]), Some(0.3));
    assert_eq!(median(&[0.4, 0.1, 0.3, 0.2]), Some(0.25));
    assert_eq!(median(&[f64::NAN, 0.2]), Some(0.2));
}

#[test]
fn reports_written_before_rounds_still_parse() {
    let c = with_rounds(comparison(true));
    let mut v: serde_json::Value = serde_json::to_value(&c).unwrap();
    v["settings"].as_object_mut().unwrap().remove("rounds");
    for t in v["targets"].as_array_mut().unwrap() {
        t.as_object_mut().unwrap().remove("rounds");
    }
    let back: Comparison = serde_json::from_value(v).unwrap();
    assert_eq!(back.settings.rounds, 1);
    assert!(back.targets.iter().all(|t| t.rounds.is_empty()));
    let round_trip: Comparison = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
    assert_eq!(round_trip, c);
}
