//! The conservative parallel discrete-event engine.
//!
//! - [`event`]: event keys and their partition-independent total order;
//! - [`shard`]: one shard's entities, event queue and inbound links;
//! - [`sim`]: the window loop that runs shards on threads and exchanges
//!   packets that cross shard boundaries.
//!
//! One shard runs the same code as many: there is no separate sequential
//! engine.

pub mod as_json;
pub mod checkpoint;
pub mod comm;
pub mod event;
pub mod prefetch;
pub mod shard;
pub mod sim;
mod stall;
pub mod wire;

pub use comm::{Comm, SingleProcess};
pub use sim::{Progress, RankFigures, RunSummary, SimError, SimOptions, Simulation};
