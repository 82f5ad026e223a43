//! Analysis of psim outputs.
//!
//! Scope: the Polars pipeline over psim's Parquet datasets (FCT and slowdown
//! tables, goodput, utilisation, plots). **Not yet implemented**: tracked by
//! issue 6. The crate exists so that the workspace has its final layout and so
//! that engine and model crates never depend on Polars.
