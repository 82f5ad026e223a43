//! Traffic generation for psim.
//!
//! A scenario's `[[traffic]]` tables become [`PatternSpec`]s; [`Workload::new`] validates them
//! against the topology ([`WorkloadEnv`]) once, and every shard then asks for its own lazy
//! [`FlowGenerator`] with [`Workload::generator`]. A generator only ever produces flows whose
//! source host its shard owns, and produces them as simulated time advances, so an 8192-host
//! workload never materialises more than a handful of pending flows per owned host.
//!
//! # Determinism without coordination
//!
//! Every random decision is drawn from a stream keyed by *what* is being decided: `(seed,
//! entry, host)` for a host's arrivals, `(seed, entry, host, counter)` for one closed-loop flow,
//! `(seed, entry)` for global structure such as a derangement. Global structure is O(hosts) and
//! recomputed identically by every shard. Flow ids are `entry << 56 | src << 32 | counter`, the
//! counter running per `(entry, src)`. Hence the flows of host `h` do not depend on which other
//! hosts a generator owns, and the union over any partition of the hosts is the same.
//!
//! # Closed loops
//!
//! Patterns that react to the network (closed-loop incast, closed-loop clients, collectives,
//! `.cm` triggers) learn about completions through [`FlowGenerator::on_finished`], which the
//! engine calls on *every* shard's generator for *every* finished flow. Each generator therefore
//! sees the same global completion history; it acts only for the hosts it owns, and completion
//! records ([`GroupCompletion`]) are kept only by the generator owning the group's designated
//! host, so that their union over shards has no duplicates.

#![warn(missing_docs)]

pub mod cm;
mod error;
pub mod files;
mod generator;
mod plan;
mod rng;
pub mod sizes;
pub mod spec;

use std::path::PathBuf;
use std::sync::Arc;

pub use cm::{to_cm, CmFile, CmFlow, CmTrigger, TriggerKind};
pub use error::WorkloadError;
pub use files::{
    parse_flows_csv, read_flows_csv, read_flows_parquet, write_flows_csv, write_flows_parquet,
    ListedFlow,
};
pub use generator::FlowGenerator;
pub use sizes::{EmpiricalCdf, SizeDist};
pub use spec::PatternSpec;

/// One flow to simulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FlowSpec {
    /// Unique, deterministic id: `entry << 56 | src << 32 | per-(entry, src) counter`.
    pub id: u64,
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Bytes to transfer; `None` = long-lived flow that runs to the end of the simulation.
    pub size_bytes: Option<u64>,
    /// Start time in picoseconds.
    pub start_ps: u64,
    /// Index of the `[[traffic]]` entry that produced it (psim maps it to a protocol).
    pub class: u16,
    /// 0 normal; 1 prioritised (NDP V8/V15 prioritised sender).
    pub priority: u8,
}

/// What the workload needs to know about the simulated system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadEnv {
    /// Number of hosts; host ids are `0..hosts`.
    pub hosts: u32,
    /// Every host's NIC rate in bits per second.
    pub host_link_bps: u64,
    /// Network bisection bandwidth in bits per second, for loads given as a fraction of it.
    pub bisection_bps: u64,
    /// Hosts under one ToR.
    pub hosts_per_rack: u32,
    /// Scenario seed.
    pub seed: u64,
    /// Generation horizon: no flow starts at or after it. Open-loop patterns need it (or their
    /// own `stop_us`).
    pub stop_ps: Option<u64>,
    /// Folder that relative file paths (flow lists, `.cm`, CDF files) resolve against.
    pub base_dir: PathBuf,
}

/// A collective, incast round or `.cm` trigger group that completed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GroupCompletion {
    /// Index of the `[[traffic]]` entry.
    pub entry: u16,
    /// Human-readable group name (collective name, `incast`, `.cm` file / trigger).
    pub name: String,
    /// Which occurrence: collective iteration, incast round, or 0.
    pub instance: u64,
    /// When the group's last flow finished (or the trigger fired), in ps.
    pub completed_ps: u64,
}

/// Builds a flow id from its parts (see [`FlowSpec::id`]).
pub fn flow_id(entry: u16, src: u32, counter: u32) -> u64 {
    (u64::from(entry) << 56) | (u64::from(src) << 32) | u64::from(counter)
}

/// Splits a flow id into `(entry, src, counter)`.
pub fn split_flow_id(id: u64) -> (u16, u32, u32) {
    (
        (id >> 56) as u16,
        ((id >> 32) & 0xFF_FFFF) as u32,
        id as u32,
    )
}

/// A validated traffic section: immutable, cheap to clone, shared by all shards.
#[derive(Clone, Debug)]
pub struct Workload {
    inner: Arc<plan::Inner>,
}

impl Workload {
    /// Validates the entries against the environment and precomputes the global structure
    /// (derangements, sender sets, parsed files). Errors name the entry, key, file and line.
    pub fn new(entries: Vec<PatternSpec>, env: WorkloadEnv) -> Result<Workload, WorkloadError> {
        Ok(Workload {
            inner: Arc::new(plan::Inner::new(entries, env)?),
        })
    }

    /// A lazy generator for the flows whose source host satisfies `owns`.
    pub fn generator(&self, owns: &dyn Fn(u32) -> bool) -> FlowGenerator {
        FlowGenerator::new(self.inner.clone(), owns)
    }

    /// Number of `[[traffic]]` entries.
    pub fn entries(&self) -> usize {
        self.inner.plans.len()
    }

    /// Every flow of a workload without closed-loop feedback, for inspection: one generator
    /// owning all hosts, drained to the horizon. Closed-loop patterns contribute only the flows
    /// that need no completion.
    pub fn open_loop_flows(&self) -> Vec<FlowSpec> {
        let mut g = self.generator(&|_| true);
        let mut out = Vec::new();
        g.pop_before(u64::MAX, &mut out);
        out
    }
}
