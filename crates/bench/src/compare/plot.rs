//! The report's plots, each written as SVG and PNG with `plotters` (its SVG backend
//! and its bitmap backend, text drawn with `ab_glyph`: pure Rust, no fontconfig).
//! A TrueType font is read from the usual system locations (DejaVu Sans, Liberation
//! Sans ...) or from `PALISADE_PLOT_FONT`; without one no plot is drawn and the
//! caller reports why.

use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{CompareError, Comparison, TargetResult};

/// Font files tried in order (after `PALISADE_PLOT_FONT`).
pub const FONT_CANDIDATES: [&str; 6] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation/LiberationSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
];

/// Registers a font for `sans-serif`; returns its path, or why none was found.
pub fn load_font() -> Result<String, CompareError> {
    let env = std::env::var("PALISADE_PLOT_FONT").ok();
    let candidates = env.iter().map(String::as_str).chain(FONT_CANDIDATES);
    for path in candidates {
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        // plotters keeps registered fonts for the life of the process.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
            return Ok(path.to_string());
        }
    }
    Err(CompareError::Plot {
        file: "(all)".into(),
        reason: "no TrueType font found (install fonts-dejavu-core or set PALISADE_PLOT_FONT)"
            .into(),
    })
}

const W: u32 = 900;
const H: u32 = 520;

const COLORS: [RGBColor; 10] = [
    RGBColor(0x33, 0x33, 0x33),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0xe3, 0x77, 0xc2),
];

fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

type Res = Result<(), String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

fn measured(c: &Comparison) -> Vec<(usize, &TargetResult)> {
    c.targets
        .iter()
        .filter(|t| t.skipped.is_none())
        .enumerate()
        .collect()
}

fn max_rate(c: &Comparison) -> f64 {
    c.targets
        .iter()
        .flat_map(|t| &t.sweep)
        .filter_map(|f| f.offered_rate)
        .fold(1.0, f64::max)
}

fn latency<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, c: &Comparison) -> Res
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let pts = |t: &TargetResult, p99: bool| -> Vec<(f64, f64)> {
        t.sweep
            .iter()
            .filter_map(|f| {
                let y = if p99 {
                    f.latency_p99_us
                } else {
                    f.latency_p50_us
                };
                Some((f.offered_rate?, (y / 1000.0).max(0.001)))
            })
            .collect()
    };
    let all: Vec<f64> = measured(c)
        .iter()
        .flat_map(|(_, t)| pts(t, true).into_iter().chain(pts(t, false)))
        .map(|p| p.1)
        .collect();
    let ymin = all.iter().copied().fold(f64::INFINITY, f64::min).min(0.1);
    // Room above the curves for the legend (log scale).
    let ymax = all.iter().copied().fold(1.0, f64::max) * 40.0;
    let mut chart = ChartBuilder::on(&root)
        .caption("Response time vs request rate", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..max_rate(c) * 1.05, (ymin * 0.8..ymax).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("offered request rate (requests/s)")
        .y_desc("latency (ms, log scale)")
        .light_line_style(RGBColor(235, 235, 235))
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v}"))
        .draw()
        .map_err(err)?;
    for (i, t) in measured(c) {
        solid_and_dashed(
            &mut chart,
            color(i),
            format!("{} p50", t.label),
            pts(t, false),
            pts(t, true),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// One target's curves: `solid` as a labelled line with its points marked,
/// `dashed` as a thin dashed line in the same colour.
fn solid_and_dashed<DB, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
    col: RGBColor,
    label: String,
    solid: Vec<(f64, f64)>,
    dashed: Vec<(f64, f64)>,
) -> Res
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    Y: Ranged<ValueType = f64>,
{
    chart
        .draw_series(LineSeries::new(solid.clone(), col.stroke_width(2)))
        .map_err(err)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
    chart
        .draw_series(solid.into_iter().map(|p| Circle::new(p, 3, col.filled())))
        .map_err(err)?;
    chart
        .draw_series(DashedLineSeries::new(dashed, 6, 4, col.stroke_width(1)))
        .map_err(err)?;
    Ok(())
}

fn memory<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, c: &Comparison) -> Res
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let pts = |t: &TargetResult, rss: bool| -> Vec<(f64, f64)> {
        let idle = t.idle.map(|u| {
            let kb = if rss { u.rss_kb_max } else { u.pss_kb_max };
            (0.0, kb as f64 / 1024.0)
        });
        idle.into_iter()
            .chain(t.sweep.iter().filter_map(|f| {
                let kb = if rss {
                    f.usage.rss_kb_max
                } else {
                    f.usage.pss_kb_max
                };
                Some((f.offered_rate?, kb as f64 / 1024.0))
            }))
            .collect()
    };
    let ymax = measured(c)
        .iter()
        .flat_map(|(_, t)| pts(t, true).into_iter().chain(pts(t, false)))
        .map(|p| p.1)
        .fold(1.0, f64::max)
        * 1.5; // room above the curves for the legend
    let mut chart = ChartBuilder::on(&root)
        .caption("Memory vs request rate", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..max_rate(c) * 1.05, 0.0..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("offered request rate (requests/s; 0 = idle)")
        .y_desc("MB (PSS solid, RSS dashed)")
        .light_line_style(RGBColor(235, 235, 235))
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(err)?;
    for (i, t) in measured(c) {
        solid_and_dashed(
            &mut chart,
            color(i),
            format!("{} PSS", t.label),
            pts(t, false),
            pts(t, true),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

pub(crate) fn bars<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    y_desc: &str,
    bars: &[(String, f64, usize)],
) -> Res
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let n = bars.len().max(1);
    let ymax = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1e-9) * 1.15;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((0..n).into_segmented(), 0.0..ymax)
        .map_err(err)?;
    let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(RGBColor(235, 235, 235))
        .y_desc(y_desc)
        .y_label_formatter(&|v| {
            if ymax >= 10.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            }
        })
        .x_labels(n)
        .x_label_style(("sans-serif", 12))
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                names.get(*i).cloned().unwrap_or_default()
            }
            SegmentValue::Last => String::new(),
        })
        .draw()
        .map_err(err)?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, v, c))| {
            let mut r = Rectangle::new(
                [
                    (SegmentValue::Exact(i), 0.0),
                    (SegmentValue::Exact(i + 1), *v),
                ],
                color(*c).filled(),
            );
            r.set_margin(0, 0, 18, 18);
            r
        }))
        .map_err(err)?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, v, _))| {
            let label = if *v >= 10.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.3}")
            };
            Text::new(
                label,
                (SegmentValue::CenterOf(i), *v + ymax * 0.02),
                ("sans-serif", 13).into_font(),
            )
        }))
        .map_err(err)?;
    root.present().map_err(err)
}

fn throughput_bars(c: &Comparison) -> Vec<(String, f64, usize)> {
    measured(c)
        .into_iter()
        .filter_map(|(i, t)| {
            // Short names so that nine bars' labels fit.
            let name = t.kind.id().replace("modsecurity", "modsec");
            Some((name, t.closed.as_ref()?.requests_per_second, i))
        })
        .collect()
}

pub(crate) fn draw_both(
    dir: &Path,
    stem: &str,
    f: &dyn Fn(DrawingArea<SVGBackend, Shift>) -> Res,
    g: &dyn Fn(DrawingArea<BitMapBackend, Shift>) -> Res,
) -> Result<(), CompareError> {
    let svg = dir.join(format!("{stem}.svg"));
    let png = dir.join(format!("{stem}.png"));
    let plot_err = |file: &Path, reason: String| CompareError::Plot {
        file: file.display().to_string(),
        reason,
    };
    f(SVGBackend::new(&svg, (W, H)).into_drawing_area()).map_err(|r| plot_err(&svg, r))?;
    g(BitMapBackend::new(&png, (W, H)).into_drawing_area()).map_err(|r| plot_err(&png, r))?;
    Ok(())
}

/// Writes the plots into `dir` (`<stem>.svg` and `<stem>.png` for each stem of
/// [`super::report::PLOTS`] that has data) and returns the stems written.
pub fn write_all(c: &Comparison, dir: &Path) -> Result<Vec<&'static str>, CompareError> {
    load_font()?;
    let mut written = Vec::new();
    let has_sweep = c
        .targets
        .iter()
        .any(|t| t.skipped.is_none() && !t.sweep.is_empty());
    if has_sweep {
        draw_both(dir, "latency", &|a| latency(a, c), &|a| latency(a, c))?;
        written.push("latency");
        draw_both(dir, "memory", &|a| memory(a, c), &|a| memory(a, c))?;
        written.push("memory");
    }
    let tp = throughput_bars(c);
    if !tp.is_empty() {
        let t = "Maximum throughput (closed loop)";
        draw_both(
            dir,
            "throughput",
            &|a| bars(a, t, "requests/s", &tp),
            &|a| bars(a, t, "requests/s", &tp),
        )?;
        written.push("throughput");
    }
    if let Some(base) = c.baseline_rps() {
        let ratio: Vec<(String, f64, usize)> = tp
            .iter()
            .map(|(n, v, i)| (n.clone(), v / base, *i))
            .collect();
        let t = "Requests/s relative to the plain proxy (nginx = 1)";
        draw_both(dir, "ratio", &|a| bars(a, t, "ratio", &ratio), &|a| {
            bars(a, t, "ratio", &ratio)
        })?;
        written.push("ratio");
    }
    Ok(written)
}
