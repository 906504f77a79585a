//! The ablation's charts, in the comparison report's style (the same bar chart,
//! SVG and PNG): mean µs per request of each step, one chart per paranoia level and
//! corpus.

use std::path::Path;

use super::report::{levels, plot_stem, runs_of};
use super::Ablation;
use crate::compare::plot::{bars, draw_both, load_font};
use crate::compare::CompareError;

/// Draws `<stem>.svg` and `<stem>.png` into `dir` for every paranoia level and
/// corpus with figures; returns the stems drawn.
pub fn write_all(a: &Ablation, dir: &Path) -> Result<Vec<String>, CompareError> {
    load_font()?;
    let mut written = Vec::new();
    for pl in levels(a) {
        for (corpus, _) in &a.corpora {
            let data: Vec<(String, f64, usize)> = runs_of(a, pl, corpus)
                .into_iter()
                .enumerate()
                .filter(|(_, r)| r.skipped.is_none())
                .map(|(i, r)| (r.step.clone(), r.us_mean, i))
                .collect();
            if data.is_empty() {
                continue;
            }
            let stem = plot_stem(pl, corpus);
            let title = format!("CRS PL{pl}, {corpus}: mean µs per request by step");
            draw_both(
                dir,
                &stem,
                &|area| bars(area, &title, "µs per request", &data),
                &|area| bars(area, &title, "µs per request", &data),
            )?;
            written.push(stem);
        }
    }
    Ok(written)
}
