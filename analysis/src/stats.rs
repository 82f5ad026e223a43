//! The numbers: FCT and slowdown percentiles by flow-size bucket, per-host
//! goodput, utilisation, incast/group completion, retransmission statistics.
//! Every query is a Polars lazy query over the run's flows parts. Definitions
//! (units, formulas, the percentile rule) are in `docs/analysis.md`.

use std::path::{Path, PathBuf};

use polars::prelude::*;
use psim::trace::GroupRecord;

use crate::error::{AnalysisError, Result};
use crate::flows::{collect, scan_flows};
use crate::runs::{differing_params, discover_runs, hosts_and_rate, load_run, Run};
use crate::sweep::{is_sweep, load_sweep, TaskStatus};

/// The percentiles reported, as fractions.
pub const QUANTILES: [f64; 3] = [0.5, 0.99, 0.999];

/// Default flow-size bucket edges, bytes (see [`Options::buckets`]).
pub const DEFAULT_BUCKETS: [u64; 4] = [10_000, 100_000, 1_000_000, 10_000_000];

/// What to compute.
#[derive(Clone, Debug)]
pub struct Options {
    /// Upper edges of the flow-size buckets, bytes, strictly increasing.
    /// Bucket `i` holds sizes in `(edge[i-1], edge[i]]` (the first starts at
    /// 0 inclusive); one more, open-ended bucket holds sizes above the last
    /// edge. So 4 edges make 5 buckets.
    pub buckets: Vec<u64>,
    /// Read runs that are incomplete or disagree with their manifest, with
    /// warnings (see [`crate::runs::load_run`]).
    pub allow_incomplete: bool,
    /// At most this many points per run in the FCT CDF and the slowdown
    /// scatter kept for plots (evenly spaced by rank / by flow id).
    pub plot_points: usize,
    /// Which completion time FCTs count from (`--fct`).
    pub fct: FctBy,
}

/// The completion an FCT ends at (`docs/outputs.md`, "Two completion times").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FctBy {
    /// The last byte reached the receiver: `finish_ps`, `fct_ps` (psim's
    /// definition, the default).
    #[default]
    Receiver,
    /// The sender learned that the last byte was acknowledged:
    /// `sender_finish_ps`, FCT = `sender_finish_ps - start_ps` (htsim's
    /// definition). Flows without it (CBR, unacknowledged) are unfinished.
    Sender,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            buckets: DEFAULT_BUCKETS.to_vec(),
            allow_incomplete: false,
            plot_points: 5000,
            fct: FctBy::Receiver,
        }
    }
}

impl Options {
    fn check(&self) -> Result<()> {
        if self.buckets.windows(2).any(|w| w[0] >= w[1]) {
            return Err(AnalysisError::Invalid(format!(
                "--buckets must be strictly increasing, got {:?}",
                self.buckets
            )));
        }
        Ok(())
    }
}

/// p50, p99 and p99.9 (linear interpolation, see [`percentile`]); `None`
/// when no value went in.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// 99.9th percentile.
    pub p999: Option<f64>,
}

/// FCT and slowdown statistics of one flow-size bucket (or of all flows).
#[derive(Clone, Debug, PartialEq)]
pub struct BucketStats {
    /// `"(lo, hi]"` in bytes, `"> lo"` for the open bucket, `"all"` for every flow.
    pub label: String,
    /// Exclusive lower edge, bytes (0 for the first bucket: sizes from 0 inclusive).
    pub lo_bytes: u64,
    /// Inclusive upper edge, bytes; `None` for the open-ended bucket and "all".
    pub hi_bytes: Option<u64>,
    /// Finished flows in the bucket (non-null `fct_ps`).
    pub flows: u64,
    /// FCT percentiles, microseconds.
    pub fct_us: Percentiles,
    /// Mean FCT, microseconds (`None` when no flow finished).
    pub fct_mean_us: Option<f64>,
    /// Finished flows with a slowdown (non-null, non-zero `ideal_fct_ps`).
    pub slowdown_flows: u64,
    /// Slowdown (`fct_ps / ideal_fct_ps`) percentiles.
    pub slowdown: Percentiles,
    /// Mean slowdown, the "average normalized FCT" of pFabric's and
    /// pHost's figures (`None` when no flow has one).
    pub slowdown_mean: Option<f64>,
}

/// Goodput received by one destination host.
#[derive(Clone, Debug, PartialEq)]
pub struct HostGoodput {
    /// Host index (`dst`).
    pub host: u32,
    /// Sum of `bytes_received` over flows to this host.
    pub bytes_received: u64,
    /// `bytes_received x 8 / sim_end_ps`, in Gb/s.
    pub gbps: f64,
}

/// Network utilisation: delivered goodput over what the hosts' links could carry.
#[derive(Clone, Debug, PartialEq)]
pub struct Utilisation {
    /// Hosts in the topology (from the manifest's config).
    pub hosts: u64,
    /// Host link rate, Gb/s.
    pub host_link_gbps: f64,
    /// Total goodput, Gb/s: all `bytes_received` x 8 / `sim_end_ps`.
    pub goodput_gbps: f64,
    /// `goodput_gbps / (hosts x host_link_gbps)`, a fraction.
    pub utilisation: f64,
}

/// Completion of the run's flows and workload groups (incasts, collectives).
#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    /// The manifest's completed groups, sorted by time.
    pub groups: Vec<GroupRecord>,
    /// Earliest `start_ps` of any flow.
    pub first_start_ps: Option<u64>,
    /// Latest `finish_ps` of any flow.
    pub last_finish_ps: Option<u64>,
    /// Largest `ideal_fct_ps` of any flow.
    pub max_ideal_fct_ps: Option<u64>,
    /// The receiver-link bound: the largest, over destination hosts, of the
    /// bytes of all flows to that host (`size_bytes`) serialised at the host
    /// link rate, ps. An incast cannot finish before it. `None` without a
    /// host link rate or sized flows.
    pub receiver_bound_ps: Option<u64>,
}

impl Completion {
    /// `last_finish_ps - first_start_ps`: how long the whole workload took.
    pub fn span_ps(&self) -> Option<u64> {
        Some(self.last_finish_ps?.saturating_sub(self.first_start_ps?))
    }
    /// The ideal completion of the whole workload:
    /// `max(max_ideal_fct_ps, receiver_bound_ps)`.
    pub fn ideal_ps(&self) -> Option<u64> {
        self.max_ideal_fct_ps.max(self.receiver_bound_ps)
    }
    /// `span_ps / ideal_ps`.
    pub fn span_over_ideal(&self) -> Option<f64> {
        let ideal = self.ideal_ps().filter(|&i| i > 0)?;
        Some(self.span_ps()? as f64 / ideal as f64)
    }
}

/// Flow counts and the loss-recovery counters, summed over all flows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Rows in the flows table.
    pub flows: u64,
    /// Rows with a non-null `finish_ps`.
    pub finished: u64,
    /// Sum of `retransmissions` (packets).
    pub retransmissions: u64,
    /// Sum of `trims` (packets).
    pub trims: u64,
    /// Sum of `bounces` (packets).
    pub bounces: u64,
    /// Sum of `timeouts` (events).
    pub timeouts: u64,
}

impl Counters {
    /// `total / flows`, the mean per flow (0 for an empty table).
    pub fn per_flow(&self, total: u64) -> f64 {
        if self.flows == 0 {
            0.0
        } else {
            total as f64 / self.flows as f64
        }
    }
}

/// Everything computed for one run.
#[derive(Clone, Debug)]
pub struct RunAnalysis {
    /// The run directory.
    pub dir: PathBuf,
    /// Simulated time at the end of the run, ps (the goodput denominator).
    pub sim_end_ps: u64,
    /// Counts and loss-recovery totals.
    pub counters: Counters,
    /// One entry per flow-size bucket, in order (empty buckets included).
    pub by_size: Vec<BucketStats>,
    /// The same statistics over every finished flow.
    pub all: BucketStats,
    /// Per destination host, sorted by ascending goodput (ties by host).
    pub goodput: Vec<HostGoodput>,
    /// `None` when the manifest's config does not give the host count.
    pub utilisation: Option<Utilisation>,
    /// Groups and overall completion.
    pub completion: Completion,
    /// The FCT CDF: `(fct_us, fraction of finished flows with an FCT <= it)`,
    /// sorted, at most `plot_points` points evenly spaced by rank (first and
    /// last kept).
    pub fct_cdf: Vec<(f64, f64)>,
    /// `(size_bytes, slowdown)` of finished sized flows with an ideal FCT, at
    /// most `plot_points`, evenly spaced in flow-id order.
    pub slowdown_points: Vec<(u64, f64)>,
    /// `ok`, or `allowed` for a run with problems read under
    /// `--allow-incomplete`.
    pub status: &'static str,
    /// The Tofino chip's mode timelines (`crate::modes`); None without a
    /// chip trace.
    pub modes: Option<Vec<crate::modes::Timeline>>,
}

/// Several runs side by side.
#[derive(Clone, Debug)]
pub struct Report {
    /// The flow-size bucket edges used.
    pub buckets: Vec<u64>,
    /// Dotted config keys whose values differ between the runs.
    pub param_keys: Vec<String>,
    /// Per run, its values for `param_keys`.
    pub param_values: Vec<Vec<String>>,
    /// The runs, in the order found.
    pub runs: Vec<RunAnalysis>,
    /// Sweep tasks that could not be analysed, with their status; each is a
    /// row of the summary table and a line of `warnings`.
    pub skipped: Vec<TaskStatus>,
    /// Per skipped task, its values for `param_keys` (from `sweep.json`).
    pub skipped_values: Vec<Vec<String>>,
    /// One line per problem (a skipped task, a run read under
    /// `--allow-incomplete`), for stderr.
    pub warnings: Vec<String>,
}

/// The `q`-quantile of **sorted** values by linear interpolation (the rule
/// Polars uses with `QuantileMethod::Linear`, Python polars with
/// `interpolation="linear"`, numpy by default): with `n` values `x[0..n]`,
/// `h = (n - 1) q`, result `x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h])`.
/// A reference implementation for tests and users; the analysis computes
/// percentiles in Polars.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

fn polars_err(run: &Run, what: &str) -> impl Fn(PolarsError) -> AnalysisError {
    let context = format!("computing {what} for {}", run.dir.display());
    move |e| AnalysisError::Polars {
        context: context.clone(),
        detail: crate::error::one_line(e),
    }
}

fn bucket_expr(edges: &[u64]) -> Expr {
    let mut e = lit(edges.len() as u32);
    for (i, edge) in edges.iter().enumerate().rev() {
        e = when(col("size_bytes").lt_eq(lit(*edge)))
            .then(lit(i as u32))
            .otherwise(e);
    }
    e
}

fn stat_aggs() -> Vec<Expr> {
    let mut v = vec![
        col("fct_us").count().cast(DataType::UInt64).alias("flows"),
        col("slowdown")
            .count()
            .cast(DataType::UInt64)
            .alias("slowdown_flows"),
    ];
    v.push(col("fct_us").mean().alias("fct_mean"));
    v.push(col("slowdown").mean().alias("sd_mean"));
    for (i, q) in QUANTILES.iter().enumerate() {
        v.push(
            col("fct_us")
                .quantile(lit(*q), QuantileMethod::Linear)
                .cast(DataType::Float64)
                .alias(format!("fct_q{i}")),
        );
        v.push(
            col("slowdown")
                .quantile(lit(*q), QuantileMethod::Linear)
                .cast(DataType::Float64)
                .alias(format!("sd_q{i}")),
        );
    }
    v
}

fn finished_with_derived(lf: LazyFrame) -> LazyFrame {
    let fct = col("fct_ps").cast(DataType::Float64);
    let ideal = col("ideal_fct_ps").cast(DataType::Float64);
    lf.filter(col("fct_ps").is_not_null()).with_columns([
        (fct.clone() / lit(1e6)).alias("fct_us"),
        when(col("ideal_fct_ps").gt(lit(0u64)))
            .then(fct / ideal)
            .otherwise(lit(NULL).cast(DataType::Float64))
            .alias("slowdown"),
    ])
}

fn get_u64(df: &DataFrame, name: &str, row: usize) -> Option<u64> {
    df.column(name)
        .ok()?
        .cast(&DataType::UInt64)
        .ok()?
        .u64()
        .ok()?
        .get(row)
}

fn get_f64(df: &DataFrame, name: &str, row: usize) -> Option<f64> {
    df.column(name)
        .ok()?
        .cast(&DataType::Float64)
        .ok()?
        .f64()
        .ok()?
        .get(row)
        .filter(|x| x.is_finite())
}

fn row_stats(df: &DataFrame, row: usize, label: String, lo: u64, hi: Option<u64>) -> BucketStats {
    let p = |prefix: &str| Percentiles {
        p50: get_f64(df, &format!("{prefix}0"), row),
        p99: get_f64(df, &format!("{prefix}1"), row),
        p999: get_f64(df, &format!("{prefix}2"), row),
    };
    BucketStats {
        label,
        lo_bytes: lo,
        hi_bytes: hi,
        flows: get_u64(df, "flows", row).unwrap_or(0),
        fct_us: p("fct_q"),
        fct_mean_us: get_f64(df, "fct_mean", row),
        slowdown_flows: get_u64(df, "slowdown_flows", row).unwrap_or(0),
        slowdown: p("sd_q"),
        slowdown_mean: get_f64(df, "sd_mean", row),
    }
}

fn empty_bucket(label: String, lo: u64, hi: Option<u64>) -> BucketStats {
    BucketStats {
        label,
        lo_bytes: lo,
        hi_bytes: hi,
        flows: 0,
        fct_us: Percentiles::default(),
        fct_mean_us: None,
        slowdown_flows: 0,
        slowdown: Percentiles::default(),
        slowdown_mean: None,
    }
}

/// Evenly spaced sample (by index) of at most `n` items, first and last kept.
fn thin<T: Clone>(v: &[T], n: usize) -> Vec<T> {
    if v.len() <= n || n < 2 {
        return v.to_vec();
    }
    (0..n)
        .map(|i| v[i * (v.len() - 1) / (n - 1)].clone())
        .collect()
}

/// Analyses one loaded run.
pub fn analyze_run(run: &Run, opts: &Options) -> Result<RunAnalysis> {
    opts.check()?;
    let flows = scan_flows(run)?;
    let flows = match opts.fct {
        FctBy::Receiver => flows,
        // Every query below reads `finish_ps` and `fct_ps`: redefine both.
        FctBy::Sender => flows.with_columns([
            col("sender_finish_ps").alias("finish_ps"),
            (col("sender_finish_ps") - col("start_ps")).alias("fct_ps"),
        ]),
    };
    let sim_end_ps = run.manifest.sim_end_ps;

    // FCT and slowdown by size bucket, and over all finished flows.
    let finished = finished_with_derived(flows.clone());
    let by_bucket = collect(
        run,
        finished
            .clone()
            .filter(col("size_bytes").is_not_null())
            .with_column(bucket_expr(&opts.buckets).alias("bucket"))
            .group_by([col("bucket")])
            .agg(stat_aggs()),
        "FCT percentiles by size",
    )?;
    let all_df = collect(run, finished.clone().select(stat_aggs()), "FCT percentiles")?;
    let bucket_col = by_bucket
        .column("bucket")
        .and_then(|c| c.cast(&DataType::UInt32))
        .map_err(polars_err(run, "FCT percentiles by size"))?;
    let bucket_ids: Vec<Option<u32>> = bucket_col
        .u32()
        .map_err(polars_err(run, "FCT percentiles by size"))?
        .downcast_iter()
        .flat_map(|a| a.iter().map(|o| o.copied()))
        .collect();
    let mut by_size = Vec::new();
    for i in 0..=opts.buckets.len() {
        let lo = if i == 0 { 0 } else { opts.buckets[i - 1] };
        let hi = opts.buckets.get(i).copied();
        let label = match hi {
            Some(h) if i == 0 => format!("[0, {h}]"),
            Some(h) => format!("({lo}, {h}]"),
            None => format!("> {lo}"),
        };
        by_size.push(match bucket_ids.iter().position(|b| *b == Some(i as u32)) {
            Some(row) => row_stats(&by_bucket, row, label, lo, hi),
            None => empty_bucket(label, lo, hi),
        });
    }
    let all = row_stats(&all_df, 0, "all".into(), 0, None);

    // Per-host goodput.
    let gp = collect(
        run,
        flows
            .clone()
            .group_by([col("dst")])
            .agg([
                col("bytes_received")
                    .sum()
                    .cast(DataType::UInt64)
                    .alias("bytes"),
                col("size_bytes")
                    .sum()
                    .cast(DataType::UInt64)
                    .alias("sized"),
            ])
            .sort(["dst"], Default::default()),
        "per-host goodput",
    )?;
    let to_gbps = |bytes: u64| {
        if sim_end_ps == 0 {
            0.0
        } else {
            bytes as f64 * 8.0 / sim_end_ps as f64 * 1000.0
        }
    };
    let mut goodput: Vec<HostGoodput> = (0..gp.height())
        .map(|r| {
            let bytes = get_u64(&gp, "bytes", r).unwrap_or(0);
            HostGoodput {
                host: get_u64(&gp, "dst", r).unwrap_or(0) as u32,
                bytes_received: bytes,
                gbps: to_gbps(bytes),
            }
        })
        .collect();
    goodput.sort_by(|a, b| a.gbps.total_cmp(&b.gbps).then(a.host.cmp(&b.host)));

    // Totals.
    let t = collect(
        run,
        flows.clone().select([
            len().cast(DataType::UInt64).alias("flows"),
            col("fct_ps")
                .count()
                .cast(DataType::UInt64)
                .alias("finished"),
            col("bytes_received")
                .sum()
                .cast(DataType::UInt64)
                .alias("bytes"),
            col("retransmissions")
                .sum()
                .cast(DataType::UInt64)
                .alias("retx"),
            col("trims").sum().cast(DataType::UInt64).alias("trims"),
            col("bounces").sum().cast(DataType::UInt64).alias("bounces"),
            col("timeouts")
                .sum()
                .cast(DataType::UInt64)
                .alias("timeouts"),
            col("start_ps").min().alias("first_start"),
            col("finish_ps").max().alias("last_finish"),
            col("ideal_fct_ps").max().alias("max_ideal"),
        ]),
        "totals",
    )?;
    let counters = Counters {
        flows: get_u64(&t, "flows", 0).unwrap_or(0),
        finished: get_u64(&t, "finished", 0).unwrap_or(0),
        retransmissions: get_u64(&t, "retx", 0).unwrap_or(0),
        trims: get_u64(&t, "trims", 0).unwrap_or(0),
        bounces: get_u64(&t, "bounces", 0).unwrap_or(0),
        timeouts: get_u64(&t, "timeouts", 0).unwrap_or(0),
    };
    let utilisation = hosts_and_rate(&run.manifest.config).map(|(hosts, rate)| {
        let goodput_gbps = to_gbps(get_u64(&t, "bytes", 0).unwrap_or(0));
        let cap = hosts as f64 * rate;
        Utilisation {
            hosts,
            host_link_gbps: rate,
            goodput_gbps,
            utilisation: if cap > 0.0 { goodput_gbps / cap } else { 0.0 },
        }
    });
    let max_sized = (0..gp.height())
        .filter_map(|r| get_u64(&gp, "sized", r))
        .max()
        .filter(|&b| b > 0);
    let receiver_bound_ps = match (max_sized, hosts_and_rate(&run.manifest.config)) {
        (Some(b), Some((_, rate))) if rate > 0.0 => {
            Some((b as f64 * 8.0 * 1000.0 / rate).round() as u64)
        }
        _ => None,
    };
    let mut groups = run.manifest.groups.clone();
    groups.sort_by_key(|g| (g.completed_ps, g.entry, g.instance));
    let completion = Completion {
        groups,
        first_start_ps: get_u64(&t, "first_start", 0),
        last_finish_ps: get_u64(&t, "last_finish", 0),
        max_ideal_fct_ps: get_u64(&t, "max_ideal", 0),
        receiver_bound_ps,
    };

    // Points for the plots.
    let cdf = collect(
        run,
        finished
            .clone()
            .select([col("fct_us")])
            .sort(["fct_us"], Default::default()),
        "the FCT CDF",
    )?;
    let fcts: Vec<(f64, f64)> = cdf
        .column("fct_us")
        .and_then(|c| c.f64().cloned())
        .map_err(polars_err(run, "the FCT CDF"))?
        .downcast_iter()
        .flat_map(|a| a.iter().flatten().copied().collect::<Vec<f64>>())
        .collect::<Vec<f64>>()
        .into_iter()
        .enumerate()
        .map(|(i, x)| (x, (i + 1) as f64 / cdf.height() as f64))
        .collect();
    let sd = collect(
        run,
        finished
            .filter(
                col("slowdown")
                    .is_not_null()
                    .and(col("size_bytes").is_not_null()),
            )
            .sort(["flow_id"], Default::default())
            .select([col("size_bytes"), col("slowdown")]),
        "slowdown against size",
    )?;
    let points: Vec<(u64, f64)> = (0..sd.height())
        .filter_map(|r| Some((get_u64(&sd, "size_bytes", r)?, get_f64(&sd, "slowdown", r)?)))
        .collect();

    Ok(RunAnalysis {
        dir: run.dir.clone(),
        sim_end_ps,
        counters,
        by_size,
        all,
        goodput,
        utilisation,
        completion,
        fct_cdf: thin(&fcts, opts.plot_points),
        slowdown_points: thin(&points, opts.plot_points),
        status: if run.warnings.is_empty() {
            "ok"
        } else {
            "allowed"
        },
        modes: crate::modes::timelines(&run.dir, sim_end_ps)?,
    })
}

/// Finds the runs under `paths` (see [`discover_runs`]), analyses each, and
/// keys them by the config parameters that differ between them.
pub fn analyze(paths: &[PathBuf], opts: &Options) -> Result<Report> {
    opts.check()?;
    let (mut runs, mut skipped) = (Vec::new(), Vec::new());
    for p in paths {
        if is_sweep(p) {
            let (r, s) = load_sweep(p, opts.allow_incomplete)?;
            runs.extend(r);
            skipped.extend(s);
        } else {
            for d in discover_runs(std::slice::from_ref(p))? {
                runs.push(load_run(&d, opts.allow_incomplete)?);
            }
        }
    }
    let mut rep = analyze_runs(&runs, opts)?;
    let mut warnings: Vec<String> = skipped.iter().map(TaskStatus::warning).collect();
    warnings.extend(runs.iter().flat_map(|r| r.warnings.iter().cloned()));
    rep.skipped_values = skipped
        .iter()
        .map(|t| {
            rep.param_keys
                .iter()
                .map(|k| t.param(k).unwrap_or_default().to_string())
                .collect()
        })
        .collect();
    rep.skipped = skipped;
    rep.warnings = warnings;
    Ok(rep)
}

/// [`analyze`] for runs already loaded.
pub fn analyze_runs(runs: &[Run], opts: &Options) -> Result<Report> {
    let configs: Vec<&serde_json::Value> = runs.iter().map(|r| &r.manifest.config).collect();
    let (param_keys, param_values) = differing_params(&configs);
    let analyses = runs
        .iter()
        .map(|r| analyze_run(r, opts))
        .collect::<Result<_>>()?;
    Ok(Report {
        buckets: opts.buckets.clone(),
        param_keys,
        param_values,
        runs: analyses,
        skipped: Vec::new(),
        skipped_values: Vec::new(),
        warnings: runs
            .iter()
            .flat_map(|r| r.warnings.iter().cloned())
            .collect(),
    })
}

/// Convenience: analyse a single run directory.
pub fn analyze_dir(dir: &Path, opts: &Options) -> Result<RunAnalysis> {
    analyze_run(&load_run(dir, opts.allow_incomplete)?, opts)
}
