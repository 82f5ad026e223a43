//! psim: a parallel, deterministic, packet-level simulator of datacenter and
//! HPC networks.
//!
//! The library holds the engine and every model; the `psim` binary is a thin
//! command line over it. Start with [`config::Scenario`] (a scenario file),
//! build an [`engine::Simulation`] from it, run it, and write its outputs
//! with [`run::execute`].

#![warn(missing_docs)]

pub mod config;
pub mod engine;
pub mod net;
pub mod packet;
pub mod progress;
pub mod queue;
pub mod replay;
pub mod rng;
pub mod run;
pub mod slurm;
pub mod sweep;
pub mod topo;
pub mod trace;
pub mod transport;
pub mod units;
pub mod validate;
