//! A shard's dynamic state, for checkpoints (`engine/checkpoint.rs`).
//!
//! Everything a shard holds except its id and the read-only [`Shared`]
//! data, which a resumed run rebuilds from the scenario. One list of fields
//! generates a borrowing view to write and an owned copy to read, so the two
//! cannot drift apart. What is shared between entities (the workload plan,
//! the packet-trace filter) is left out of the body and re-attached from the
//! freshly built shard, so the checkpoint holds it once, in the scenario.
//!
//! Determinism of the rebuilt containers: serde writes a `BinaryHeap` in its
//! internal array order and reads it back by pushing in that order, which
//! rebuilds the same array; every heap the models pop is ordered on a key
//! that is total anyway (event keys, flow ids, arrival numbers). The hash
//! maps in the models (`FxHashMap`) are only looked up, never iterated, so
//! their rebuilt layout cannot change a result.
//!
//! [`Shared`]: super::Shared

use super::{PacketCounters, Shard, ShardError};
use crate::engine::event::{EventCounts, EventQueue};
use crate::net::{Inbound, Message, Node, PacketPool};
use crate::packet::Packet;
use crate::queue::Report;

macro_rules! shard_state {
    ($( $f:ident: $t:ty, )*) => {
        /// A shard's dynamic state, borrowed for writing.
        #[derive(serde::Serialize)]
        struct StateRef<'a> {
            $( $f: &'a $t, )*
        }

        /// A shard's dynamic state, read back.
        #[derive(serde::Deserialize)]
        struct State {
            $( $f: $t, )*
        }

        impl Shard {
            /// The shard's dynamic state as a postcard body.
            pub fn save_state(&self) -> Result<Vec<u8>, postcard::Error> {
                postcard::to_stdvec(&StateRef { $( $f: &self.$f, )* })
            }

            /// Replaces the dynamic state of this freshly built shard with
            /// `bytes` (from [`Shard::save_state`] of the same shard of the
            /// same scenario), re-attaching the shared parts.
            pub fn restore_state(&mut self, bytes: &[u8]) -> Result<(), postcard::Error> {
                let st: State = postcard::from_bytes(bytes)?;
                let fresh = State { $( $f: std::mem::replace(&mut self.$f, st.$f), )* };
                self.reattach(&fresh);
                Ok(())
            }
        }
    };
}

shard_state! {
    nodes: Vec<Node>,
    inbound: Inbound,
    pool: PacketPool,
    events: EventQueue,
    outbox: Vec<Vec<Message>>,
    generator: workloads::FlowGenerator,
    pending: Vec<Option<workloads::FlowSpec>>,
    pending_free: Vec<u32>,
    flow_buf: Vec<workloads::FlowSpec>,
    scratch: Vec<Packet>,
    reports: Vec<Report>,
    bounced: Vec<(u16, Packet)>,
    finished_out: Vec<(u64, u64)>,
    events_processed: u64,
    event_counts: EventCounts,
    flows: (u64, u64),
    last_event_ps: u64,
    horizon: u64,
    counters: PacketCounters,
    error: Option<ShardError>,
    trace: Option<Box<crate::trace::ShardTrace>>,
}

impl Shard {
    /// Gives the restored state the shared parts of the fresh one.
    fn reattach(&mut self, fresh: &State) {
        let events = std::mem::take(&mut self.events);
        self.events = events.reshaped(fresh.events.slot_shift());
        self.generator.reattach(&fresh.generator);
        let fresh_tracer = fresh.trace.as_ref().and_then(|t| t.packets.as_ref());
        let tracer = self.trace.as_mut().and_then(|t| t.packets.as_mut());
        if let (Some(t), Some(f)) = (tracer, fresh_tracer) {
            t.reattach(f);
        }
    }
}
