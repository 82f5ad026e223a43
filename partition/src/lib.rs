//! Partitioning of psim's simulated entities into shards and MPI ranks.
//!
//! psim runs a conservative parallel discrete-event simulation: entities
//! (hosts and switches) are split into shards, each shard runs on its own
//! thread, and shards are later grouped into MPI ranks. This crate decides
//! the split. It is topology-agnostic: psim describes the network as a
//! [`Graph`] of entities (with optional *groups* that must never be split,
//! e.g. a FatTree pod or a leaf switch with its hosts, and a weight that
//! estimates simulation work) and links (with propagation delays).
//!
//! * [`partition`] assigns entities to shards with a deterministic
//!   heaviest-first greedy (LPT): whole groups first, then ungrouped
//!   entities (core / spine switches) one by one.
//! * [`Partition::report`] computes the *lookahead* (the minimum delay of
//!   any link between shards, which bounds how far shards may run ahead of
//!   each other), cut-link counts and per-shard load; it rejects zero-delay
//!   cut links because they would leave no lookahead at all.
//! * [`rank_of_shards`] maps shards to MPI ranks in contiguous blocks.
//!
//! Everything is deterministic: no randomness, no hash-map iteration, and
//! ties are broken by entity id and shard index, so the same graph and shard
//! count always give the same partition.

#![warn(missing_docs)]

mod assign;
mod error;
mod graph;
mod ranks;
mod report;

pub use assign::{partition, Partition};
pub use error::PartitionError;
pub use graph::{EntityInfo, Graph, LinkInfo};
pub use ranks::rank_of_shards;
pub use report::{format_ps, Report, ShardLoad};
