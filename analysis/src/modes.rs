//! The Tofino trimming switch's control loop over time ([TRIM] Fig 7, §6.2),
//! from the chip trace (`DIR/tofino/part-*.parquet`, `[trace.tofino]`; the
//! schema is in docs/tofino.md): a mode timeline per (switch, pipeline,
//! egress port), the share of the run it spends in each mode, and a plot.
//!
//! A pair is optimistic until its first mode row, then in the mode of its
//! latest row until the run's end (`sim_end_ps`). Pairs that never leave
//! optimistic have no rows and are not listed.

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
pub const MODE_PLOT: &str = "mode_timeline";

/// The modes, by their trace value (docs/tofino.md, "Trace").
pub const MODES: [&str; 4] = ["optimistic", "half_pessimistic", "pessimistic", "trim_all"];

/// Lanes drawn in the plot: the pairs that spend longest outside optimistic.
pub const TOP_LANES: usize = 16;

/// One (switch, pipeline, egress port)'s modes over a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    /// The switch (node id).
    pub switch: u32,
    /// The ingress pipeline.
    pub pipeline: u16,
    /// The egress port.
    pub port: u16,
    /// `(from_ps, mode)`: the mode from that time until the next step, in
    /// time order; optimistic before the first.
    pub steps: Vec<(u64, u32)>,
    /// The run's end, ps: the last step holds until it.
    pub end_ps: u64,
}

impl Timeline {
    /// Picoseconds spent in each mode over `[0, end_ps)`, indexed as
    /// [`MODES`] (a mode value beyond them counts in none).
    pub fn mode_ps(&self) -> [u64; 4] {
        let mut ps = [0u64; 4];
        let mut add = |mode: u32, from: u64, to: u64| {
            if let Some(x) = ps.get_mut(mode as usize) {
                *x += to.saturating_sub(from);
            }
        };
        let mut since = 0;
        let mut cur = 0;
        for &(t, mode) in &self.steps {
            let t = t.min(self.end_ps);
            add(cur, since, t);
            (since, cur) = (t, mode);
        }
        add(cur, since, self.end_ps);
        ps
    }

    /// Each mode's share of `[0, end_ps)`, indexed as [`MODES`].
    pub fn shares(&self) -> [f64; 4] {
        self.mode_ps().map(|x| {
            if self.end_ps == 0 {
                0.0
            } else {
                x as f64 / self.end_ps as f64
            }
        })
    }
}

/// The timelines of the run in `dir` that ended at `end_ps`, ordered by
/// (switch, pipeline, port); None when the run has no chip trace. Read errors
/// name the file.
pub fn timelines(dir: &Path, end_ps: u64) -> Result<Option<Vec<Timeline>>> {
    if !dir.join(psim::trace::TOFINO.dir).exists() {
        return Ok(None);
    }
    let rows = psim::trace::read_tofino(dir)?;
    let mut by_pair: BTreeMap<(u32, u16, u16), Vec<(u64, u32)>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.series == 0) {
        by_pair
            .entry((r.switch, r.pipeline, r.port))
            .or_default()
            .push((r.time_ps, r.value));
    }
    Ok(Some(
        by_pair
            .into_iter()
            .map(|((switch, pipeline, port), mut steps)| {
                // Rows are in time order per part; keep same-time rows in trace order.
                steps.sort_by_key(|s| s.0);
                Timeline {
                    switch,
                    pipeline,
                    port,
                    steps,
                    end_ps,
                }
            })
            .collect(),
    ))
}

/// A lane of the plot: its label and timeline.
type Lane = (String, Timeline);

fn mode_color(mode: u32) -> RGBColor {
    match mode {
        0 => RGBColor(200, 200, 200),
        1 => RGBColor(250, 170, 60),
        2 => RGBColor(215, 48, 39),
        _ => RGBColor(90, 30, 130),
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    lanes: &[Lane],
) -> std::result::Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let text = text_available();
    root.fill(&WHITE).map_err(e)?;
    let end_us = lanes
        .iter()
        .map(|l| l.1.end_ps as f64 / 1e6)
        .fold(0.0, f64::max)
        .max(1e-3);
    let mut builder = ChartBuilder::on(root);
    builder.margin(20);
    if text {
        builder
            .caption(
                "Tofino control loop: mode of each (pipeline, egress port)",
                ("sans-serif", 22),
            )
            .x_label_area_size(50)
            .y_label_area_size(170);
    }
    let n = lanes.len() as u32;
    let mut chart = builder
        .build_cartesian_2d(0.0..end_us, (0..n).into_segmented())
        .map_err(e)?;
    if !text {
        draw_frame(&mut chart).map_err(e)?;
    }
    // Lane i (top first) is the segment of n - 1 - i.
    let seg = |i: usize| n - 1 - i as u32;
    for (i, (_, t)) in lanes.iter().enumerate() {
        let y = seg(i);
        let mut since = 0;
        let mut cur = 0;
        let mut bars = Vec::new();
        for &(at, mode) in t.steps.iter().chain([(t.end_ps, u32::MAX)].iter()) {
            let at = at.min(t.end_ps);
            if at > since {
                let mut bar = Rectangle::new(
                    [
                        (since as f64 / 1e6, SegmentValue::Exact(y)),
                        (at as f64 / 1e6, SegmentValue::Exact(y + 1)),
                    ],
                    mode_color(cur).filled(),
                );
                bar.set_margin(3, 3, 0, 0);
                bars.push(bar);
            }
            (since, cur) = (at, mode);
        }
        chart.draw_series(bars).map_err(e)?;
    }
    if text {
        for (m, name) in MODES.iter().enumerate() {
            let c = mode_color(m as u32);
            chart
                .draw_series(std::iter::empty::<Rectangle<(f64, SegmentValue<u32>)>>())
                .map_err(e)?
                .label(*name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], c.filled()));
        }
        let labels: Vec<String> = lanes.iter().map(|l| l.0.clone()).collect();
        chart
            .configure_mesh()
            .x_desc("time (µs)")
            .y_labels(lanes.len())
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(y) if *y < n => labels[(n - 1 - y) as usize].clone(),
                _ => String::new(),
            })
            .label_style(("sans-serif", 12))
            .draw()
            .map_err(|e| e.to_string())?;
        legend_upper_right(&mut chart)?;
    }
    Ok(())
}

/// Writes `OUT/mode_timeline.png` and `.svg` when at least one run of `rep`
/// has a chip trace with mode changes: one lane per (pipeline, egress port),
/// coloured by mode, for the [`TOP_LANES`] pairs that spend longest outside
/// optimistic (over all runs; labelled with the run's label when there are
/// several). Returns the files written (none without mode changes).
pub fn write_mode_plot(rep: &Report, out: &Path, labels: &[String]) -> Result<Vec<PathBuf>> {
    let mut lanes: Vec<Lane> = Vec::new();
    for (i, r) in rep.runs.iter().enumerate() {
        for t in r.modes.iter().flatten() {
            let label = format!("sw {} pipe {} port {}", t.switch, t.pipeline, t.port);
            lanes.push((run_prefixed(rep, labels, i, label), t.clone()));
        }
    }
    if lanes.is_empty() {
        return Ok(Vec::new());
    }
    // Longest away from optimistic first; ties keep run, switch, pipeline, port order.
    lanes.sort_by_cached_key(|l| std::cmp::Reverse(l.1.end_ps - l.1.mode_ps()[0]));
    lanes.truncate(TOP_LANES);
    write_png_and_svg(out, MODE_PLOT, |r| draw(r, &lanes), |r| draw(r, &lanes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(steps: &[(u64, u32)], end_ps: u64) -> Timeline {
        Timeline {
            switch: 0,
            pipeline: 0,
            port: 1,
            steps: steps.to_vec(),
            end_ps,
        }
    }

    #[test]
    fn shares_count_optimistic_before_the_first_row_and_the_last_to_the_end() {
        // 0-10 optimistic, 10-30 pessimistic, 30-40 half, 40-100 optimistic.
        let t = line(&[(10, 2), (30, 1), (40, 0)], 100);
        assert_eq!(t.shares(), [0.7, 0.1, 0.2, 0.0]);
        // The last step holds to the end; a row after the end counts nothing.
        let t = line(&[(50, 3), (120, 0)], 100);
        assert_eq!(t.shares(), [0.5, 0.0, 0.0, 0.5]);
        assert_eq!(line(&[], 0).shares(), [0.0; 4]);
    }
}
