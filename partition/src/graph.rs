//! The topology-agnostic description of a simulated network.
//!
//! psim turns whatever topology it builds (FatTree, leaf-spine, ...) into this
//! plain graph so that the partitioner never needs to know what a pod or a
//! spine is: it only sees entities, optional groups that must not be split,
//! weights, and links with propagation delays.

use crate::PartitionError;

/// One simulated entity (a host or a switch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityInfo {
    /// Human-readable name used in reports and error messages, e.g.
    /// `"host12"` or `"core3"`.
    pub label: String,
    /// Entities sharing a group id are always placed in the same shard (a
    /// FatTree pod, or a leaf switch with its hosts). Traffic inside a group
    /// is heavy and its links are short, so cutting through it would cost
    /// both lookahead and cross-shard messages. `None` (core / spine
    /// switches) means the entity is placed on its own.
    pub group: Option<u32>,
    /// Relative amount of simulation work the entity is expected to cause,
    /// in any unit; only ratios matter. Used to balance shards.
    pub weight: u64,
}

/// An undirected link between two entities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkInfo {
    /// Index of one end in `Graph::entities`.
    pub a: u32,
    /// Index of the other end in `Graph::entities`. Direction is irrelevant.
    pub b: u32,
    /// Propagation delay in picoseconds. If the link ends up between two
    /// shards this bounds the lookahead, so it must be positive then.
    pub delay_ps: u64,
}

/// The whole network as the partitioner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Graph {
    /// Entities; an entity's id is its index here.
    pub entities: Vec<EntityInfo>,
    /// Links between entity ids.
    pub links: Vec<LinkInfo>,
}

impl Graph {
    /// Checks that every id fits in `u32`, every link endpoint names an
    /// existing entity and the total weight fits in `u64`.
    ///
    /// Returns the total weight, so that callers can rely on per-shard sums
    /// never overflowing. Link errors name the lowest offending link index,
    /// which keeps the message deterministic.
    pub fn validate(&self) -> Result<u64, PartitionError> {
        let n = self.entities.len();
        if n > u32::MAX as usize {
            return Err(PartitionError::TooManyEntities { entities: n });
        }
        for (i, l) in self.links.iter().enumerate() {
            let bad = [l.a, l.b].into_iter().find(|&e| e as usize >= n);
            if let Some(endpoint) = bad {
                return Err(PartitionError::LinkEndpointOutOfRange {
                    link: i,
                    a: l.a,
                    b: l.b,
                    endpoint,
                    entities: n,
                });
            }
        }
        let mut total: u64 = 0;
        for (i, e) in self.entities.iter().enumerate() {
            total = total
                .checked_add(e.weight)
                .ok_or_else(|| PartitionError::WeightOverflow {
                    entity: i as u32,
                    label: e.label.clone(),
                })?;
        }
        Ok(total)
    }
}
