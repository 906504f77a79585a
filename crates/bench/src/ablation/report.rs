//! The ablation's Markdown report: per paranoia level and corpus, one row per step
//! with mean and p50 µs per request and the speedup over the baseline.

use std::fmt::Write as _;

use super::{Ablation, Run};

/// The plot of a paranoia level and corpus (without extension).
pub fn plot_stem(paranoia: u8, corpus: &str) -> String {
    let safe: String = corpus
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("pl{paranoia}-{safe}")
}

/// The runs of one paranoia level and corpus, in step order.
pub fn runs_of<'a>(a: &'a Ablation, paranoia: u8, corpus: &str) -> Vec<&'a Run> {
    a.runs
        .iter()
        .filter(|r| r.paranoia == paranoia && r.corpus == corpus)
        .collect()
}

/// The paranoia levels measured, in order of appearance.
pub fn levels(a: &Ablation) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::new();
    for r in &a.runs {
        if !out.contains(&r.paranoia) {
            out.push(r.paranoia);
        }
    }
    out
}

fn speedup(base: Option<f64>, v: f64) -> String {
    match base {
        Some(b) if v > 0.0 && !b.is_nan() => format!("{:.2}x", b / v),
        _ => "—".into(),
    }
}

/// Renders `report.md`; `plots` are the stems drawn (see [`plot_stem`]).
pub fn render(a: &Ablation, plots: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Ablation: the engine's optimisations one after another\n"
    );
    let _ = writeln!(
        s,
        "Revision `{}`. Each row is a separate `palisade bench engine --json` run \
         (one warm-up pass, then {} passes over the corpus, in order, one thread); \
         steps are cumulative, in the RuleCache paper's order. Speedup = baseline / step.\n",
        a.revision, a.iterations
    );
    if !a.command.is_empty() {
        let _ = writeln!(s, "```sh\n{}\n```\n", a.command);
    }
    let _ = writeln!(s, "Corpora:\n");
    for (name, file) in &a.corpora {
        let base = std::path::Path::new(file)
            .file_name()
            .map_or_else(|| file.clone(), |f| f.to_string_lossy().into_owned());
        let _ = writeln!(s, "- `{name}`: `{base}`");
    }
    if !a.notes.is_empty() {
        let _ = writeln!(s);
        for n in &a.notes {
            let _ = writeln!(s, "{n}");
        }
    }
    let skipped: Vec<&Run> = a
        .runs
        .iter()
        .filter(|r| r.optimizations.is_empty() && r.skipped.is_some())
        .collect();
    let mut notes: Vec<String> = Vec::new();
    for r in skipped {
        let n = format!("`{}`: {}", r.step, r.skipped.as_deref().unwrap_or_default());
        if !notes.contains(&n) {
            notes.push(n);
        }
    }
    if !notes.is_empty() {
        let _ = writeln!(
            s,
            "\nSkipped steps (the engine has no such optimisation):\n"
        );
        for n in notes {
            let _ = writeln!(s, "- {n}");
        }
    }
    for pl in levels(a) {
        for (corpus, _) in &a.corpora {
            let runs = runs_of(a, pl, corpus);
            if runs.is_empty() {
                continue;
            }
            let _ = writeln!(s, "\n## Paranoia level {pl}, corpus `{corpus}`\n");
            let base = runs
                .iter()
                .find(|r| r.optimizations == "none" && r.skipped.is_none());
            let (bm, bp) = (base.map(|b| b.us_mean), base.map(|b| b.us_p50));
            let _ = writeln!(
                s,
                "| step | --optimizations | mean µs | p50 µs | p99 µs | speedup (mean) | speedup (p50) | blocked |"
            );
            let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|");
            for r in runs {
                match &r.skipped {
                    Some(why) => {
                        let _ = writeln!(
                            s,
                            "| {} | {} | skipped: {why} | | | | | |",
                            r.step, r.optimizations
                        );
                    }
                    None => {
                        let _ = writeln!(
                            s,
                            "| {} | `{}` | {:.1} | {:.1} | {:.1} | {} | {} | {} of {} |",
                            r.step,
                            r.optimizations,
                            r.us_mean,
                            r.us_p50,
                            r.us_p99,
                            speedup(bm, r.us_mean),
                            speedup(bp, r.us_p50),
                            r.blocked,
                            r.requests
                        );
                    }
                }
            }
            let stem = plot_stem(pl, corpus);
            if plots.contains(&stem) {
                let _ = writeln!(s, "\n![PL{pl} {corpus}]({stem}.svg)");
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(step: &str, opt: &str, mean: f64, skipped: Option<&str>) -> Run {
        Run {
            paranoia: 1,
            corpus: "benign".into(),
            step: step.into(),
            optimizations: opt.into(),
            requests: 100,
            us_mean: mean,
            us_p50: mean / 2.0,
            us_p99: mean * 2.0,
            blocked: 0,
            skipped: skipped.map(Into::into),
        }
    }

    #[test]
    fn tables_show_speedups_and_skipped_steps() {
        let a = Ablation {
            command: "palisade bench ablation".into(),
            revision: "abc".into(),
            corpora: vec![("benign".into(), "b.jsonl".into())],
            iterations: 2,
            notes: vec!["made by hand".into()],
            runs: vec![
                run("baseline", "none", 300.0, None),
                run(
                    "+memo",
                    "",
                    0.0,
                    Some("--optimizations does not accept `memo`"),
                ),
                run("all", "all", 100.0, None),
            ],
        };
        let md = render(&a, &["pl1-benign".into()]);
        assert!(md.contains("| baseline | `none` | 300.0 | 150.0 | 600.0 | 1.00x | 1.00x |"));
        assert!(md.contains("| all | `all` | 100.0 | 50.0 | 200.0 | 3.00x | 3.00x |"));
        assert!(md.contains("- `+memo`: --optimizations does not accept `memo`"));
        assert!(md.contains("![PL1 benign](pl1-benign.svg)"));
        assert!(md.contains("\nmade by hand\n"));
    }
}
