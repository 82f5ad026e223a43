//! Analysis of psim outputs: Polars lazy scans over a run's
//! `flows/part-*.parquet`, read together with its `manifest.json`.
//!
//! For each run it computes FCT and slowdown percentiles by flow-size bucket,
//! per-host goodput (sorted, as in NDP Fig. 14), network utilisation,
//! workload-group (incast) completion against the ideal, and retransmission,
//! trim, bounce and timeout statistics; several runs (e.g. a sweep folder)
//! are put side by side, keyed by the scenario parameters that differ between
//! their manifests. The results render as markdown or CSV tables and as PNG
//! and SVG plots. Every output is defined in `docs/analysis.md`.
//!
//! ```no_run
//! use analysis::{analyze, render_markdown, write_plots, Options};
//! let report = analyze(&["out/sweep".into()], &Options::default())?;
//! print!("{}", render_markdown(&report));
//! write_plots(&report, std::path::Path::new("out/report"))?;
//! # Ok::<(), analysis::AnalysisError>(())
//! ```
//!
//! Polars is a dependency of this crate only: psim and the model crates
//! never build it. The command-line front end is the `psim-analyze` binary.

pub mod error;
pub mod flows;
pub mod modes;
pub mod plots;
pub mod queues;
pub mod report;
pub mod runs;
pub mod stats;
pub mod sweep;

pub use error::{AnalysisError, Result};
pub use flows::{scan_flows, validate_part, REQUIRED_COLUMNS};
pub use plots::{write_plots, PLOTS};
pub use report::{render_markdown, tables, write_csv, Style, Table};
pub use runs::{differing_params, discover_runs, flatten_config, hosts_and_rate, load_run, Run};
pub use stats::{
    analyze, analyze_dir, analyze_run, analyze_runs, percentile, BucketStats, Completion, Counters,
    FctBy, HostGoodput, Options, Percentiles, Report, RunAnalysis, Utilisation, DEFAULT_BUCKETS,
    QUANTILES,
};
pub use sweep::{load_sweep, TaskStatus};
