//! Rendering a [`Report`] as markdown or as CSV files. Both renderings come
//! from the same tables ([`tables`]), so they always hold the same columns.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{AnalysisError, Result};
use crate::stats::{BucketStats, Percentiles, Report, RunAnalysis};

/// One output table: a name (the CSV file stem), a header and rows of cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// File stem of the CSV (`summary` → `summary.csv`).
    pub name: &'static str,
    /// Column names.
    pub header: Vec<String>,
    /// Rows, one cell per column; an empty cell is a missing value.
    pub rows: Vec<Vec<String>>,
}

/// How numbers are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Shortest exact representation (`f64` `Display`), for CSV.
    Exact,
    /// Rounded for reading: 3 decimals (4 for Gb/s and utilisation).
    Rounded,
}

fn f(x: Option<f64>, style: Style, decimals: usize) -> String {
    match (x, style) {
        (None, _) => String::new(),
        (Some(v), Style::Exact) => format!("{v}"),
        (Some(v), Style::Rounded) => format!("{v:.decimals$}"),
    }
}

fn pct(p: &Percentiles, style: Style) -> [String; 3] {
    [f(p.p50, style, 3), f(p.p99, style, 3), f(p.p999, style, 3)]
}

fn run_name(r: &RunAnalysis) -> String {
    r.dir.display().to_string()
}

fn us(ps: Option<u64>) -> Option<f64> {
    ps.map(|p| p as f64 / 1e6)
}

/// The tables of a report: `summary` (one row per run, keyed by the
/// differing parameters), `fct_by_size`, `goodput` (sorted ascending per
/// run), `groups`, `utilisation`, and `mode_shares` when a run has a
/// Tofino chip trace. Columns are documented in `docs/analysis.md`.
pub fn tables(rep: &Report, style: Style) -> Vec<Table> {
    let strs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();

    let mut header = vec!["run".to_string()];
    header.extend(rep.param_keys.iter().cloned());
    header.extend(strs(&[
        "status",
        "flows",
        "finished",
        "fct_p50_us",
        "fct_p99_us",
        "fct_p999_us",
        "slowdown_p50",
        "slowdown_p99",
        "slowdown_p999",
        "goodput_min_gbps",
        "goodput_mean_gbps",
        "goodput_max_gbps",
        "utilisation",
        "span_us",
        "max_ideal_fct_us",
        "receiver_bound_us",
        "span_over_ideal",
        "retransmissions",
        "trims",
        "bounces",
        "timeouts",
        "retransmissions_per_flow",
        "trims_per_flow",
        "bounces_per_flow",
        "timeouts_per_flow",
    ]));
    let mut rows = Vec::new();
    for (i, r) in rep.runs.iter().enumerate() {
        let c = &r.counters;
        let g: Vec<f64> = r.goodput.iter().map(|h| h.gbps).collect();
        let mean = (!g.is_empty()).then(|| g.iter().sum::<f64>() / g.len() as f64);
        let mut row = vec![run_name(r)];
        row.extend(rep.param_values.get(i).cloned().unwrap_or_default());
        row.push(r.status.to_string());
        row.push(c.flows.to_string());
        row.push(c.finished.to_string());
        row.extend(pct(&r.all.fct_us, style));
        row.extend(pct(&r.all.slowdown, style));
        row.push(f(g.first().copied(), style, 4));
        row.push(f(mean, style, 4));
        row.push(f(g.last().copied(), style, 4));
        row.push(f(r.utilisation.as_ref().map(|u| u.utilisation), style, 4));
        row.push(f(us(r.completion.span_ps()), style, 3));
        row.push(f(us(r.completion.max_ideal_fct_ps), style, 3));
        row.push(f(us(r.completion.receiver_bound_ps), style, 3));
        row.push(f(r.completion.span_over_ideal(), style, 3));
        for t in [c.retransmissions, c.trims, c.bounces, c.timeouts] {
            row.push(t.to_string());
        }
        for t in [c.retransmissions, c.trims, c.bounces, c.timeouts] {
            row.push(f(Some(c.per_flow(t)), style, 4));
        }
        rows.push(row);
    }
    // Sweep tasks that could not be analysed: their status, no numbers.
    for (i, t) in rep.skipped.iter().enumerate() {
        let mut row = vec![t.dir.display().to_string()];
        row.extend(rep.skipped_values.get(i).cloned().unwrap_or_default());
        row.push(t.status.to_string());
        row.resize(header.len(), String::new());
        rows.push(row);
    }
    let summary = Table {
        name: "summary",
        header,
        rows,
    };

    let bucket_row = |r: &RunAnalysis, b: &BucketStats| {
        let mut row = vec![
            run_name(r),
            b.label.clone(),
            b.lo_bytes.to_string(),
            b.hi_bytes.map(|h| h.to_string()).unwrap_or_default(),
            b.flows.to_string(),
        ];
        row.extend(pct(&b.fct_us, style));
        row.push(b.slowdown_flows.to_string());
        row.extend(pct(&b.slowdown, style));
        row.push(f(b.fct_mean_us, style, 3));
        row.push(f(b.slowdown_mean, style, 3));
        row
    };
    let fct = Table {
        name: "fct_by_size",
        header: strs(&[
            "run",
            "bucket",
            "lo_bytes",
            "hi_bytes",
            "flows",
            "fct_p50_us",
            "fct_p99_us",
            "fct_p999_us",
            "slowdown_flows",
            "slowdown_p50",
            "slowdown_p99",
            "slowdown_p999",
            "fct_mean_us",
            "slowdown_mean",
        ]),
        rows: rep
            .runs
            .iter()
            .flat_map(|r| {
                r.by_size
                    .iter()
                    .chain(std::iter::once(&r.all))
                    .map(move |b| bucket_row(r, b))
            })
            .collect(),
    };

    let goodput = Table {
        name: "goodput",
        header: strs(&["run", "rank", "host", "bytes_received", "goodput_gbps"]),
        rows: rep
            .runs
            .iter()
            .flat_map(|r| {
                r.goodput.iter().enumerate().map(move |(i, h)| {
                    vec![
                        run_name(r),
                        i.to_string(),
                        h.host.to_string(),
                        h.bytes_received.to_string(),
                        f(Some(h.gbps), style, 4),
                    ]
                })
            })
            .collect(),
    };

    let groups = Table {
        name: "groups",
        header: strs(&["run", "entry", "name", "instance", "completed_us"]),
        rows: rep
            .runs
            .iter()
            .flat_map(|r| {
                r.completion.groups.iter().map(move |g| {
                    vec![
                        run_name(r),
                        g.entry.to_string(),
                        g.name.clone(),
                        g.instance.to_string(),
                        f(us(Some(g.completed_ps)), style, 3),
                    ]
                })
            })
            .collect(),
    };

    let util = Table {
        name: "utilisation",
        header: strs(&[
            "run",
            "hosts",
            "host_link_gbps",
            "goodput_gbps",
            "utilisation",
            "sim_end_us",
        ]),
        rows: rep
            .runs
            .iter()
            .map(|r| {
                let u = r.utilisation.as_ref();
                vec![
                    run_name(r),
                    u.map(|u| u.hosts.to_string()).unwrap_or_default(),
                    f(u.map(|u| u.host_link_gbps), style, 3),
                    f(u.map(|u| u.goodput_gbps), style, 4),
                    f(u.map(|u| u.utilisation), style, 4),
                    f(us(Some(r.sim_end_ps)), style, 3),
                ]
            })
            .collect(),
    };
    let mut all = vec![summary, fct, goodput, groups, util];
    if rep.runs.iter().any(|r| r.modes.is_some()) {
        let mut header = strs(&["run", "switch", "pipeline", "port"]);
        header.extend(crate::modes::MODES.iter().map(|m| format!("{m}_share")));
        all.push(Table {
            name: "mode_shares",
            header,
            rows: rep
                .runs
                .iter()
                .flat_map(|r| {
                    r.modes.iter().flatten().map(|t| {
                        let mut row = vec![
                            run_name(r),
                            t.switch.to_string(),
                            t.pipeline.to_string(),
                            t.port.to_string(),
                        ];
                        row.extend(t.shares().iter().map(|x| f(Some(*x), style, 4)));
                        row
                    })
                })
                .collect(),
        });
    }
    all
}

fn md_table(out: &mut String, header: &[String], rows: &[Vec<String>]) {
    let cell = |s: &str| {
        if s.is_empty() {
            "–".to_string()
        } else {
            s.replace('|', "\\|")
        }
    };
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(
        out,
        "|{}",
        header.iter().map(|_| "---|").collect::<String>()
    );
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
}

/// Hosts per run above which the markdown goodput table shows only selected
/// ranks (the CSV always has every host).
pub const MD_GOODPUT_ROWS: usize = 64;

/// The report as markdown: the summary table, then per section one table
/// with a `run` column. Empty cells are shown as `–`.
pub fn render_markdown(rep: &Report) -> String {
    let t = tables(rep, Style::Rounded);
    let mut out = String::from("# psim analysis\n\n");
    let (summary, fct, goodput, groups, util) = (&t[0], &t[1], &t[2], &t[3], &t[4]);
    if !rep.param_keys.is_empty() {
        let _ = writeln!(
            out,
            "Runs are keyed by the scenario parameters that differ between them: {}.\n",
            rep.param_keys
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out.push_str("## Summary\n\nFCT in µs, slowdown = fct / ideal fct, percentiles by linear interpolation; goodput in Gb/s per destination host.\n\n");
    md_table(&mut out, &summary.header, &summary.rows);

    out.push_str("## FCT and slowdown by flow size\n\nBuckets in bytes: (lo, hi]; `all` is every finished flow.\n\n");
    md_table(&mut out, &fct.header, &fct.rows);

    out.push_str("## Per-host goodput, sorted ascending\n\n");
    let mut rows = Vec::new();
    for r in &rep.runs {
        let name = run_name(r);
        let mine: Vec<&Vec<String>> = goodput.rows.iter().filter(|row| row[0] == name).collect();
        let n = mine.len();
        if n <= MD_GOODPUT_ROWS {
            rows.extend(mine.into_iter().cloned());
        } else {
            let mut ranks: Vec<usize> = [
                0,
                n / 100,
                n / 10,
                n / 4,
                n / 2,
                3 * n / 4,
                9 * n / 10,
                n - 1,
            ]
            .to_vec();
            ranks.dedup();
            rows.extend(ranks.into_iter().map(|i| mine[i].clone()));
        }
    }
    if rep.runs.iter().any(|r| r.goodput.len() > MD_GOODPUT_ROWS) {
        let _ = writeln!(
            out,
            "Runs with more than {MD_GOODPUT_ROWS} hosts show selected ranks only; `goodput.csv` (`--format csv`) has every host.\n"
        );
    }
    md_table(&mut out, &goodput.header, &rows);

    out.push_str(
        "## Network utilisation\n\nutilisation = total goodput / (hosts × host link rate).\n\n",
    );
    md_table(&mut out, &util.header, &util.rows);

    out.push_str("## Workload groups (incast rounds, collective iterations)\n\n");
    if groups.rows.is_empty() {
        out.push_str("No run recorded a completed group.\n\n");
    } else {
        md_table(&mut out, &groups.header, &groups.rows);
    }
    out.push_str("Overall completion against the ideal: `span_us` (last finish − first start), `max_ideal_fct_us`, `receiver_bound_us` (the most bytes sent to one host at the host link rate) and `span_over_ideal` = span / max(max ideal FCT, receiver bound), in the summary.\n");
    if let Some(modes) = t.get(5) {
        out.push_str("\n## Tofino control loop: time in each mode\n\nPer (switch, ingress pipeline, egress port) that left optimistic: the share of the run in each mode ([TRIM] §6.2; docs/tofino.md).\n\n");
        md_table(&mut out, &modes.header, &modes.rows);
    }
    out
}

/// Writes every table as `OUT/NAME.csv` (created with its parents), exact
/// numbers, empty fields for missing values. Returns the files written.
pub fn write_csv(rep: &Report, out: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).map_err(|e| AnalysisError::io(out, e))?;
    let mut written = Vec::new();
    for t in tables(rep, Style::Exact) {
        let path = out.join(format!("{}.csv", t.name));
        let csv_err = |source| AnalysisError::Csv {
            path: path.clone(),
            source,
        };
        let mut w = csv::Writer::from_path(&path).map_err(csv_err)?;
        w.write_record(&t.header).map_err(csv_err)?;
        for r in &t.rows {
            w.write_record(r).map_err(csv_err)?;
        }
        w.flush().map_err(|e| AnalysisError::io(&path, e))?;
        written.push(path);
    }
    Ok(written)
}
