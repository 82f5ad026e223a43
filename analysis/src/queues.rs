//! The queue-occupancy-over-time plot, from psim's queue traces
//! (`DIR/queues/part-*.parquet`, `[trace.queues]`; see `docs/outputs.md`).
//!
//! A network has far too many ports to draw them all, and most queues stay
//! empty; the plot shows, per run, the [`TOP_PORTS`] ports whose queue grew
//! largest, which is where congestion happened.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::Result;
use crate::plots::{
    draw_frame, legend_upper_right, run_prefixed, text_available, write_png_and_svg,
};
use crate::stats::Report;

/// File stem of the plot (`STEM.png`, `STEM.svg`).
pub const QUEUE_PLOT: &str = "queue_occupancy";

/// Ports drawn per run.
pub const TOP_PORTS: usize = 5;

/// One line of the plot: a label and `(time_us, queue_kb)` points.
pub type Line = (String, Vec<(f64, f64)>);

/// The busiest ports of the run in `dir` (largest maximum `queue_bytes`;
/// ties by node then port; ports whose queue never held a byte are left
/// out), as lines of queue kilobytes (1000 bytes) against time in µs. None
/// when the run has no queue traces. Read errors name the file.
pub fn busiest_ports(dir: &Path, top: usize) -> Result<Option<Vec<Line>>> {
    if !dir.join(psim::trace::QUEUES.dir).exists() {
        return Ok(None);
    }
    let (_, rows) = psim::trace::read_queues(dir)?;
    let mut by_port: BTreeMap<(u32, u16), Vec<(f64, f64)>> = BTreeMap::new();
    let mut max: BTreeMap<(u32, u16), u64> = BTreeMap::new();
    for r in &rows {
        by_port
            .entry((r.node, r.port))
            .or_default()
            .push((r.time_ps as f64 / 1e6, r.queue_bytes as f64 / 1e3));
        let m = max.entry((r.node, r.port)).or_default();
        *m = (*m).max(r.queue_bytes);
    }
    let mut order: Vec<((u32, u16), u64)> = max.into_iter().filter(|(_, m)| *m > 0).collect();
    order.sort_by_key(|&(k, m)| (std::cmp::Reverse(m), k));
    Ok(Some(
        order
            .into_iter()
            .take(top)
            .map(|(k, _)| {
                (
                    format!("node {} port {}", k.0, k.1),
                    by_port.remove(&k).unwrap_or_default(),
                )
            })
            .collect(),
    ))
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    lines: &[Line],
) -> std::result::Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let text = text_available();
    root.fill(&WHITE).map_err(e)?;
    let pts = || lines.iter().flat_map(|l| l.1.iter());
    // Queues are often busy only early in a run: end the axis shortly after
    // the last non-empty sample rather than at the end of the run.
    let busy_until = pts().filter(|p| p.1 > 0.0).map(|p| p.0).fold(0.0, f64::max);
    let end = pts().map(|p| p.0).fold(0.0, f64::max);
    let xmax = if busy_until > 0.0 {
        (busy_until * 1.2).min(end)
    } else {
        end
    }
    .max(1e-3);
    let ymax = pts().map(|p| p.1).fold(0.0, f64::max).max(1e-3) * 1.05;
    let mut builder = ChartBuilder::on(root);
    builder.margin(20);
    if text {
        builder
            .caption(
                "Queue occupancy over time (busiest ports)",
                ("sans-serif", 22),
            )
            .x_label_area_size(50)
            .y_label_area_size(70);
    }
    let mut chart = builder
        .build_cartesian_2d(0.0..xmax, 0.0..ymax)
        .map_err(e)?;
    if !text {
        draw_frame(&mut chart).map_err(e)?;
    }
    for (i, (label, p)) in lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        // A step line: the queue holds its sampled value for the interval.
        let mut steps = Vec::with_capacity(2 * p.len());
        for w in p.windows(2) {
            steps.push(w[0]);
            steps.push((w[1].0, w[0].1));
        }
        steps.extend(p.last());
        chart
            .draw_series(LineSeries::new(steps, color.stroke_width(2)))
            .map_err(e)?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color));
    }
    if text {
        chart
            .configure_mesh()
            .x_desc("time (µs)")
            .y_desc("queue (KB)")
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(|e| e.to_string())?;
        legend_upper_right(&mut chart)?;
    }
    Ok(())
}

/// Writes `OUT/queue_occupancy.png` and `.svg` when at least one run of
/// `rep` has queue traces: the [`TOP_PORTS`] busiest ports of each run,
/// labelled with the run's label when there are several runs. Returns the
/// files written (none without queue traces).
pub fn write_queue_plot(rep: &Report, out: &Path, labels: &[String]) -> Result<Vec<PathBuf>> {
    let mut lines = Vec::new();
    let mut any = false;
    for (i, r) in rep.runs.iter().enumerate() {
        let Some(ls) = busiest_ports(&r.dir, TOP_PORTS)? else {
            continue;
        };
        any = true;
        for (label, pts) in ls {
            lines.push((run_prefixed(rep, labels, i, label), pts));
        }
    }
    if !any {
        return Ok(Vec::new());
    }
    write_png_and_svg(out, QUEUE_PLOT, |r| draw(r, &lines), |r| draw(r, &lines))
}
