//! The Markdown report of a comparison: how it was measured, then tables (maximum
//! throughput with the ratio to the plain proxy, memory, the rate sweep) and the
//! plots written by [`super::plot`]. Skipped targets are listed with their reason.

use std::fmt::Write as _;

use super::{Comparison, RunFigures, TargetResult};

fn mb(kb: u64) -> String {
    format!("{:.1}", kb as f64 / 1024.0)
}

fn us(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1} ms", v / 1000.0)
    } else if v >= 1000.0 {
        format!("{:.2} ms", v / 1000.0)
    } else {
        format!("{v:.0} µs")
    }
}

fn cpus(c: &[usize]) -> String {
    if c.is_empty() {
        "not pinned".into()
    } else {
        super::pin::format_cpus(c)
    }
}

fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The closed-loop rounds' table (with more than one round): requests/s per
/// round and target, and the ratio to the plain proxy per round with its
/// median.
fn rounds(o: &mut String, c: &Comparison, measured: &[&TargetResult]) {
    let n = measured.iter().map(|t| t.rounds.len()).max().unwrap_or(0);
    if n < 2 {
        return;
    }
    let _ = writeln!(o, "## Rounds (closed loop)\n");
    let _ = writeln!(
        o,
        "{n} rounds: in each, every target's closed loop ran in turn (the first round's \
         runs are the table above). The ratio to the plain proxy is taken within each \
         round; their median is the comparison's figure.\n"
    );
    let head: String = (1..=n).map(|r| format!(" round {r} |")).collect();
    let _ = writeln!(
        o,
        "| target |{head} ratio per round | median ratio |\n|---|{}---|---:|",
        "---:|".repeat(n)
    );
    for t in measured {
        let cells: String = (0..n)
            .map(|r| match t.rounds.get(r).and_then(Option::as_ref) {
                Some(f) => format!(" {:.0} |", f.requests_per_second),
                None => " – |".into(),
            })
            .collect();
        let ratios = c.round_ratios(t);
        let list = if ratios.is_empty() {
            "–".to_string()
        } else {
            ratios
                .iter()
                .map(|r| format!("{r:.3}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let med = super::median(&ratios).map_or_else(|| "–".into(), |m| format!("{m:.3}"));
        let _ = writeln!(o, "| {} |{cells} {list} | {med} |", t.label);
    }
    let _ = writeln!(o);
}

fn statuses(f: &RunFigures) -> String {
    format!(
        "{} / {} / {} / {}",
        f.status_2xx, f.status_403, f.status_other, f.errors
    )
}

/// The plots the report shows, by file stem (each written as `.png` and `.svg`).
pub const PLOTS: [(&str, &str); 4] = [
    (
        "latency",
        "Response time vs request rate (p50 solid, p99 dashed)",
    ),
    (
        "memory",
        "Memory (PSS summed over the target's processes) vs request rate",
    ),
    ("throughput", "Maximum requests/s per target (closed loop)"),
    ("ratio", "Requests/s relative to the plain proxy"),
];

/// Renders the report; `plots` are the stems of the plots actually written.
pub fn render(c: &Comparison, plots: &[&str]) -> String {
    let s = &c.settings;
    let mut o = String::new();
    let _ = writeln!(o, "# `palisade bench compare` report\n");
    let _ = writeln!(
        o,
        "Started {}. Machine: {}. Load average before {}, after {}.\n",
        s.started, s.machine, s.load_before, s.load_after
    );
    if !s.command.is_empty() {
        let _ = writeln!(o, "Command:\n\n```sh\n{}\n```\n", s.command);
    }
    if !s.revision.is_empty() {
        let _ = writeln!(o, "Revision: `{}`.\n", s.revision);
    }
    let _ = writeln!(o, "## How it was measured\n");
    let _ = writeln!(o, "| setting | value |\n|---|---|");
    let rows = [
        (
            "corpus",
            format!("`{}` ({} requests, replayed in order, cycling)", s.corpus, s.corpus_requests),
        ),
        ("backend (the same for every target)", s.backend.clone()),
        (
            "targets",
            format!(
                "started by the harness one at a time; {} nginx worker(s) / Palisade thread(s) each",
                s.server_threads
            ),
        ),
        ("target CPUs", cpus(&s.server_cpus)),
        ("backend CPUs", cpus(&s.backend_cpus)),
        (
            "load generator",
            format!(
                "`palisade bench http`'s engine, {} thread(s), CPUs {}",
                s.client_threads,
                cpus(&s.client_cpus)
            ),
        ),
        (
            "rate sweep (open loop)",
            format!(
                "{} requests/s, {} s each, pool of {} keep-alive connections; latency from the intended send time (no coordinated omission)",
                s.rates
                    .iter()
                    .map(|r| format!("{r}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                s.sweep_seconds,
                s.open_connections
            ),
        ),
        (
            "maximum throughput (closed loop)",
            format!(
                "{} keep-alive connections, {} s, {} round(s)",
                s.closed_connections, s.closed_seconds, s.rounds
            ),
        ),
        (
            "memory",
            "RSS and PSS from /proc/PID/smaps_rollup, summed over the target's process tree (nginx master + workers), sampled during each run; the tables give the maximum".into(),
        ),
        (
            "CPU",
            "utime + stime of the target's processes over the run, % of one core".into(),
        ),
    ];
    for (k, v) in rows {
        let _ = writeln!(o, "| {k} | {} |", escape(&v));
    }
    let _ = writeln!(
        o,
        "\nThe machine's cores are shared with other work, so figures move by tens of \
         percent between runs; compare targets within one report, not across reports.\n"
    );

    let _ = writeln!(o, "## Targets\n");
    let _ = writeln!(o, "| target | status | command |\n|---|---|---|");
    for t in &c.targets {
        let status = match &t.skipped {
            Some(r) => format!("**skipped**: {}", escape(r)),
            None => "measured".into(),
        };
        let cmd = t
            .command
            .as_ref()
            .map(|c| format!("`{}`", escape(c)))
            .unwrap_or_default();
        let _ = writeln!(o, "| {} | {status} | {cmd} |", t.label);
    }

    let measured: Vec<&TargetResult> = c.targets.iter().filter(|t| t.skipped.is_none()).collect();
    let baseline = c.baseline_rps();
    let _ = writeln!(o, "\n## Maximum throughput (closed loop)\n");
    if baseline.is_none() {
        let _ = writeln!(
            o,
            "No ratio column: the plain proxy (nginx) was not measured.\n"
        );
    }
    let _ = writeln!(
        o,
        "| target | requests/s | ratio to plain proxy | p50 | p99 | 2xx / 403 / other / errors | CPU % | CPU µs per request | RSS MB | PSS MB |\n|---|---:|---:|---:|---:|---|---:|---:|---:|---:|"
    );
    for t in &measured {
        let Some(f) = &t.closed else { continue };
        let ratio = baseline
            .map(|b| format!("{:.3}", f.requests_per_second / b))
            .unwrap_or_else(|| "–".into());
        let _ = writeln!(
            o,
            "| {} | {:.0} | {ratio} | {} | {} | {} | {:.0} | {:.1} | {} | {} |",
            t.label,
            f.requests_per_second,
            us(f.latency_p50_us),
            us(f.latency_p99_us),
            statuses(f),
            f.usage.cpu_percent,
            if f.requests_per_second > 0.0 {
                f.usage.cpu_percent / 100.0 / f.requests_per_second * 1e6
            } else {
                0.0
            },
            mb(f.usage.rss_kb_max),
            mb(f.usage.pss_kb_max)
        );
    }

    let _ = writeln!(
        o,
        "\nCPU µs per request (the target's CPU time over its responses) moves less with \
         the machine's other load than requests/s does.\n"
    );
    rounds(&mut o, c, &measured);
    let _ = writeln!(o, "## Memory\n");
    let _ = writeln!(
        o,
        "| target | processes | idle RSS MB | idle PSS MB | max RSS MB under load | max PSS MB under load |\n|---|---:|---:|---:|---:|---:|"
    );
    for t in &measured {
        let Some(idle) = &t.idle else { continue };
        let runs = t.sweep.iter().chain(t.closed.iter());
        let rss = runs.clone().map(|f| f.usage.rss_kb_max).max().unwrap_or(0);
        let pss = runs.map(|f| f.usage.pss_kb_max).max().unwrap_or(0);
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} |",
            t.label,
            idle.processes,
            mb(idle.rss_kb_max),
            mb(idle.pss_kb_max),
            mb(rss),
            mb(pss)
        );
    }

    if !s.rates.is_empty() {
        let _ = writeln!(o, "\n## Rate sweep (open loop)\n");
        let _ = writeln!(
            o,
            "| target | offered req/s | achieved req/s | p50 | p90 | p99 | max | 2xx / 403 / other / errors | unsent | CPU % | PSS MB |\n|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"
        );
        for t in &measured {
            for f in &t.sweep {
                let _ = writeln!(
                    o,
                    "| {} | {:.0} | {:.0} | {} | {} | {} | {} | {} | {} | {:.0} | {} |",
                    t.label,
                    f.offered_rate.unwrap_or(0.0),
                    f.requests_per_second,
                    us(f.latency_p50_us),
                    us(f.latency_p90_us),
                    us(f.latency_p99_us),
                    us(f.latency_max_us),
                    statuses(f),
                    f.unsent,
                    f.usage.cpu_percent,
                    mb(f.usage.pss_kb_max)
                );
            }
        }
        let _ = writeln!(
            o,
            "\nAn offered rate above what a target sustains shows as achieved < offered, \
             latency growing with the queue, and unsent requests."
        );
    }

    if !plots.is_empty() {
        let _ = writeln!(o, "\n## Plots\n");
        for (stem, title) in PLOTS.iter().filter(|(s, _)| plots.contains(s)) {
            let _ = writeln!(
                o,
                "### {title}\n\n![{title}]({stem}.png)\n\n([SVG]({stem}.svg))\n"
            );
        }
    }
    let skipped: Vec<&TargetResult> = c.targets.iter().filter(|t| t.skipped.is_some()).collect();
    if !skipped.is_empty() {
        let _ = writeln!(o, "\n## Skipped\n");
        for t in skipped {
            let _ = writeln!(
                o,
                "- {}: {}",
                t.label,
                t.skipped.as_deref().unwrap_or_default()
            );
        }
    }
    o
}
