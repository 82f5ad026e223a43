//! Plots of a [`Report`], each written as PNG and SVG: the FCT CDF, slowdown
//! against flow size, and sorted per-host goodput. One colour per run, named
//! in a legend panel right of the plot; beyond [`HIGHLIGHTED`] runs only the
//! runs with the largest p99 FCT are coloured and the rest drawn in grey.
//!
//! Text (title, axis names, tick labels, legend) needs a font. So that the
//! crate builds and runs without fontconfig or system font libraries, a
//! TrueType font is looked up at run time ([`font_path`]) and rendered with
//! `ab_glyph`; where none is found the plots are drawn without any text
//! (frame and data only) rather than failing.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::{AnalysisError, Result};
use crate::stats::Report;

/// Image size, pixels.
pub const SIZE: (u32, u32) = (960, 640);

/// Width of the legend panel right of the plot (when there are several runs).
pub const LEGEND_W: u32 = 280;

/// With more runs than this, only the this many with the largest p99 FCT are
/// coloured and named in the legend; the others are drawn thin and grey, so
/// a 50-run sweep stays readable.
pub const HIGHLIGHTED: usize = 10;

/// Legend labels longer than this are cut (with `…`).
const LABEL_CHARS: usize = 36;

/// The plots written, as file stems (each gives `STEM.png` and `STEM.svg`).
pub const PLOTS: [&str; 3] = ["fct_cdf", "slowdown_vs_size", "goodput_sorted"];

const FONT_CANDIDATES: [&str; 8] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "/Library/Fonts/Arial.ttf",
];

/// The font used for text: `$PSIM_PLOT_FONT` if set, else the first of a few
/// common system paths (DejaVu Sans, Liberation Sans, FreeSans, Arial) that
/// exists. `None`: plots carry no text.
pub fn font_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PSIM_PLOT_FONT") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    FONT_CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// Registers the font once per process; true when text can be drawn.
pub fn text_available() -> bool {
    static FONT: OnceLock<bool> = OnceLock::new();
    *FONT.get_or_init(|| {
        let Some(bytes) = font_path().and_then(|p| std::fs::read(p).ok()) else {
            return false;
        };
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
    })
}

#[derive(Clone, Copy)]
enum Kind {
    FctCdf,
    SlowdownVsSize,
    GoodputSorted,
}

fn labels(rep: &Report) -> Vec<String> {
    rep.runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            // Few differing parameters label the runs; many would not fit.
            let vals = rep
                .param_values
                .get(i)
                .filter(|v| !v.is_empty() && v.len() <= 3);
            match vals {
                Some(v) => rep
                    .param_keys
                    .iter()
                    .zip(v)
                    .map(|(k, v)| format!("{}={v}", k.rsplit('.').next().unwrap_or(k)))
                    .collect::<Vec<_>>()
                    .join(" "),
                None => r
                    .dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| r.dir.display().to_string()),
            }
        })
        .collect()
}

/// Per run, its colour slot, or `None` for a grey run: every run when there
/// are at most [`HIGHLIGHTED`], else the [`HIGHLIGHTED`] runs with the
/// largest p99 FCT (ties by order), numbered in run order.
pub fn highlighted(rep: &Report) -> Vec<Option<usize>> {
    let n = rep.runs.len();
    let mut keep = vec![n <= HIGHLIGHTED; n];
    if n > HIGHLIGHTED {
        let mut order: Vec<usize> = (0..n).collect();
        let p99 = |i: usize| rep.runs[i].all.fct_us.p99.unwrap_or(f64::NEG_INFINITY);
        order.sort_by(|&a, &b| p99(b).total_cmp(&p99(a)).then(a.cmp(&b)));
        for &i in &order[..HIGHLIGHTED] {
            keep[i] = true;
        }
    }
    let mut slot = 0;
    keep.into_iter()
        .map(|k| {
            k.then(|| {
                slot += 1;
                slot - 1
            })
        })
        .collect()
}

fn color_of(slot: Option<usize>) -> RGBAColor {
    match slot {
        Some(k) => Palette99::pick(k).to_rgba(),
        None => RGBColor(150, 150, 150).mix(0.5),
    }
}

fn short(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        return label.to_string();
    }
    let mut s: String = label.chars().take(LABEL_CHARS - 1).collect();
    s.push('…');
    s
}

/// The legend in its own panel right of the plot: one entry per coloured
/// run, then a grey entry counting the others.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    names: &[String],
    slots: &[Option<usize>],
) -> DrawResult {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let font = ("sans-serif", 13).into_font().color(&BLACK);
    let greys = slots.iter().filter(|s| s.is_none()).count();
    let head = if greys > 0 {
        format!("top {HIGHLIGHTED} runs by p99 FCT")
    } else {
        "runs".to_string()
    };
    area.draw(&Text::new(head, (8, 40), font.clone()))
        .map_err(e)?;
    let mut y = 64;
    for (name, slot) in names.iter().zip(slots) {
        if slot.is_none() {
            continue;
        }
        let c = color_of(*slot);
        area.draw(&PathElement::new([(8, y), (30, y)], c.stroke_width(3)))
            .map_err(e)?;
        area.draw(&Text::new(short(name), (36, y - 7), font.clone()))
            .map_err(e)?;
        y += 20;
    }
    if greys > 0 {
        let c = color_of(None);
        area.draw(&PathElement::new([(8, y), (30, y)], c.stroke_width(3)))
            .map_err(e)?;
        area.draw(&Text::new(format!("{greys} other runs"), (36, y - 7), font))
            .map_err(e)?;
    }
    Ok(())
}

/// `(lo, hi)` for a log axis over the positive values: whole decades, so
/// that the axis always has labelled ticks.
fn log_range(vals: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in vals.filter(|v| *v > 0.0 && v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (1.0, 10.0);
    }
    let lo = 10f64.powf(lo.log10().floor());
    let hi = 10f64.powf(hi.log10().ceil()).max(lo * 10.0);
    (lo, hi)
}

/// Tick labels of a log axis: powers of ten only (the other ticks keep their
/// grid line but no label, which would crowd the decade's right end).
fn decades(v: &f64) -> String {
    let e = v.log10();
    if (e - e.round()).abs() > 1e-9 {
        return String::new();
    }
    let e = e.round() as i32;
    if (-3..=6).contains(&e) {
        format!("{}", 10f64.powi(e))
    } else {
        format!("1e{e}")
    }
}

fn lin_max(vals: impl Iterator<Item = f64>) -> f64 {
    let m = vals.filter(|v| v.is_finite()).fold(0.0f64, f64::max);
    if m > 0.0 {
        m * 1.05
    } else {
        1.0
    }
}

type DrawResult = std::result::Result<(), String>;

/// Mesh and axis names, when text can be drawn (the legend has its own
/// panel, [`draw_legend`]).
macro_rules! finish {
    ($chart:expr, $text:expr, $xdesc:expr, $ydesc:expr, $xfmt:expr) => {{
        let r: DrawResult = (|| {
            if $text {
                $chart
                    .configure_mesh()
                    .x_desc($xdesc)
                    .y_desc($ydesc)
                    .x_label_formatter($xfmt)
                    .label_style(("sans-serif", 14))
                    .draw()
                    .map_err(|e| e.to_string())?;
            }
            Ok(())
        })();
        r
    }};
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, rep: &Report, kind: Kind) -> DrawResult {
    let text = text_available();
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let names = labels(rep);
    let slots = highlighted(rep);
    // Grey runs first, so the coloured ones are drawn on top.
    let mut order: Vec<usize> = (0..rep.runs.len()).collect();
    order.sort_by_key(|&i| slots[i].is_some());
    let legend = rep.runs.len() > 1 && text;
    let (plot, side) = root.split_horizontally(if legend { SIZE.0 - LEGEND_W } else { SIZE.0 });
    if legend {
        draw_legend(&side, &names, &slots)?;
    }
    let root = &plot;
    let title = match kind {
        Kind::FctCdf => "FCT CDF (finished flows)",
        Kind::SlowdownVsSize => "Slowdown against flow size",
        Kind::GoodputSorted => "Per-host goodput, sorted",
    };
    let mut builder = ChartBuilder::on(root);
    builder.margin(20);
    if text {
        builder
            .caption(title, ("sans-serif", 22))
            .x_label_area_size(50)
            .y_label_area_size(70);
    } else {
        root.draw(&Rectangle::new(
            [(0, 0), (SIZE.0 as i32 - 1, SIZE.1 as i32 - 1)],
            BLACK.stroke_width(1),
        ))
        .map_err(e)?;
    }
    match kind {
        Kind::FctCdf => {
            let (lo, hi) = log_range(rep.runs.iter().flat_map(|r| r.fct_cdf.iter().map(|p| p.0)));
            let mut chart = builder
                .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)
                .map_err(e)?;
            if !text {
                draw_frame(&mut chart).map_err(e)?;
            }
            for &i in &order {
                let (r, color) = (&rep.runs[i], color_of(slots[i]));
                let w = if slots[i].is_some() { 2 } else { 1 };
                let pts: Vec<(f64, f64)> =
                    r.fct_cdf.iter().copied().filter(|p| p.0 > 0.0).collect();
                chart
                    .draw_series(LineSeries::new(pts, color.stroke_width(w)))
                    .map_err(e)?;
            }
            finish!(chart, text, "FCT (µs, log)", "fraction of flows", &decades)
        }
        Kind::SlowdownVsSize => {
            let pts = || rep.runs.iter().flat_map(|r| r.slowdown_points.iter());
            let (lo, hi) = log_range(pts().map(|p| p.0 as f64));
            let ymax = lin_max(pts().map(|p| p.1));
            let mut chart = builder
                .build_cartesian_2d((lo..hi).log_scale(), 0.0..ymax)
                .map_err(e)?;
            if !text {
                draw_frame(&mut chart).map_err(e)?;
            }
            for &i in &order {
                let (r, color) = (&rep.runs[i], color_of(slots[i]));
                let radius = if slots[i].is_some() { 3 } else { 2 };
                chart
                    .draw_series(
                        r.slowdown_points
                            .iter()
                            .filter(|p| p.0 > 0)
                            .map(move |&(x, y)| Circle::new((x as f64, y), radius, color.filled())),
                    )
                    .map_err(e)?;
            }
            finish!(
                chart,
                text,
                "flow size (bytes, log)",
                "slowdown (FCT / ideal FCT)",
                &decades
            )
        }
        Kind::GoodputSorted => {
            let n = rep
                .runs
                .iter()
                .map(|r| r.goodput.len())
                .max()
                .unwrap_or(0)
                .max(1);
            let ymax = lin_max(
                rep.runs
                    .iter()
                    .flat_map(|r| r.goodput.iter().map(|h| h.gbps)),
            );
            let mut chart = builder
                .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..ymax)
                .map_err(e)?;
            if !text {
                draw_frame(&mut chart).map_err(e)?;
            }
            for &i in &order {
                let (r, color) = (&rep.runs[i], color_of(slots[i]));
                let (w, radius) = if slots[i].is_some() { (2, 3) } else { (1, 2) };
                let pts: Vec<(f64, f64)> = r
                    .goodput
                    .iter()
                    .enumerate()
                    .map(|(k, h)| (k as f64, h.gbps))
                    .collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(w)))
                    .map_err(e)?;
                chart
                    .draw_series(
                        pts.into_iter()
                            .map(move |p| Circle::new(p, radius, color.filled())),
                    )
                    .map_err(e)?;
            }
            finish!(
                chart,
                text,
                "host rank (ascending goodput)",
                "goodput (Gb/s)",
                &|v: &f64| if (v - v.round()).abs() < 1e-9 {
                    format!("{v:.0}")
                } else {
                    String::new()
                }
            )
        }
    }
}

/// Without text there is no mesh; a light frame around the plotting area
/// stands in for the axes.
pub(crate) fn draw_frame<DB: DrawingBackend, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let area = chart.plotting_area();
    let (w, h) = area.dim_in_pixel();
    area.strip_coord_spec().draw(&Rectangle::new(
        [(0, 0), (w as i32 - 1, h as i32 - 1)],
        BLACK.mix(0.6).stroke_width(1),
    ))
}

fn write_one(out: &Path, stem: &str, rep: &Report, kind: Kind) -> Result<Vec<PathBuf>> {
    write_png_and_svg(out, stem, |r| draw(r, rep, kind), |r| draw(r, rep, kind))
}

/// The upper-right legend of the queue and mode plots: a framed,
/// translucent box of the series labels.
pub(crate) fn legend_upper_right<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> std::result::Result<(), String> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| e.to_string())
}

/// `label`, prefixed with run `i`'s label when the report has several runs.
pub(crate) fn run_prefixed(rep: &Report, labels: &[String], i: usize, label: String) -> String {
    match (rep.runs.len() > 1, labels.get(i)) {
        (true, Some(run)) => format!("{run}: {label}"),
        _ => label,
    }
}

/// Draws one plot twice, as `OUT/STEM.png` and `OUT/STEM.svg` (each closure
/// draws on its backend's root area), and returns the two paths; a failure
/// is an error naming the file.
pub(crate) fn write_png_and_svg(
    out: &Path,
    stem: &str,
    png_draw: impl FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> std::result::Result<(), String>,
    svg_draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> std::result::Result<(), String>,
) -> Result<Vec<PathBuf>> {
    let fail = |path: &PathBuf| {
        let path = path.clone();
        move |detail| AnalysisError::Plot { path, detail }
    };
    let png = out.join(format!("{stem}.png"));
    {
        let root = BitMapBackend::new(&png, SIZE).into_drawing_area();
        png_draw(&root)
            .and_then(|_| root.present().map_err(|e| e.to_string()))
            .map_err(fail(&png))?;
    }
    let svg = out.join(format!("{stem}.svg"));
    {
        let root = SVGBackend::new(&svg, SIZE).into_drawing_area();
        svg_draw(&root)
            .and_then(|_| root.present().map_err(|e| e.to_string()))
            .map_err(fail(&svg))?;
    }
    Ok(vec![png, svg])
}

/// Writes every plot of [`PLOTS`] as `OUT/STEM.png` and `OUT/STEM.svg`
/// (creating `OUT`), [`QUEUE_PLOT`] when a run has queue traces, and
/// [`crate::modes::MODE_PLOT`] when a run has a chip trace with mode changes.
/// Returns the files written.
pub fn write_plots(rep: &Report, out: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).map_err(|e| AnalysisError::io(out, e))?;
    let mut files = Vec::new();
    for (stem, kind) in PLOTS
        .iter()
        .zip([Kind::FctCdf, Kind::SlowdownVsSize, Kind::GoodputSorted])
    {
        files.extend(write_one(out, stem, rep, kind)?);
    }
    files.extend(crate::queues::write_queue_plot(rep, out, &labels(rep))?);
    files.extend(crate::modes::write_mode_plot(rep, out, &labels(rep))?);
    Ok(files)
}
