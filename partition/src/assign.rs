//! Assignment of entities to shards (longest-processing-time greedy).
//!
//! Why LPT: the units to place (whole groups, single ungrouped entities) are
//! few and coarse, and a simple greedy that always fills the lightest shard
//! keeps the heaviest shard within one unit weight of the mean, which is
//! all the balance the simulator needs. It is also trivially deterministic,
//! which matters because the shard layout decides event-tie ordering and
//! therefore reproducibility of a run.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use serde::Serialize;

use crate::{Graph, PartitionError};

/// The result of [`partition`]: which shard every entity lives in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Partition {
    /// `shard_of[e]` is the shard of entity `e`; always `< shards`.
    pub shard_of: Vec<u32>,
    /// Number of shards, including any that received no entity.
    pub shards: u32,
}

impl Partition {
    /// Entities of shard `s`, in ascending id order. Empty for an empty or
    /// non-existent shard.
    pub fn members(&self, s: u32) -> Vec<u32> {
        self.shard_of
            .iter()
            .enumerate()
            .filter(|&(_, &sh)| sh == s)
            .map(|(e, _)| e as u32)
            .collect()
    }
}

/// A unit of placement: either a whole group or one ungrouped entity.
struct Unit {
    /// Sum of member weights (cannot overflow: the graph total was checked).
    weight: u64,
    /// Members in ascending id order; `members[0]` is the tie-break key.
    members: Vec<u32>,
}

impl Unit {
    fn first(&self) -> u32 {
        // Units are only built with at least one member.
        self.members.first().copied().unwrap_or(u32::MAX)
    }
}

/// Current shard loads, able to hand out the lightest shard in
/// `O(log used)` without allocating anything proportional to the shard
/// count: shards that have not received a unit yet all have load 0, and the
/// lowest-indexed of them is simply `next_fresh`.
struct Loads {
    /// `(load, shard)` of every shard that has received at least one unit.
    used: BinaryHeap<Reverse<(u64, u32)>>,
    /// Lowest shard index never handed out; `shards` once all are used.
    next_fresh: u32,
    shards: u32,
}

impl Loads {
    fn new(shards: u32) -> Self {
        Loads {
            used: BinaryHeap::new(),
            next_fresh: 0,
            shards,
        }
    }

    /// Removes and returns the lightest shard as `(load, shard)`; ties go to
    /// the lowest shard index. The caller must [`Loads::put`] it back.
    fn take_lightest(&mut self) -> (u64, u32) {
        let fresh = (self.next_fresh < self.shards).then_some((0u64, self.next_fresh));
        match (self.used.peek().map(|r| r.0), fresh) {
            (Some(u), Some(f)) if u < f => {
                self.used.pop();
                u
            }
            (_, Some(f)) => {
                self.next_fresh += 1;
                f
            }
            (Some(u), None) => {
                self.used.pop();
                u
            }
            // `shards >= 1` and every taken shard is put back, so either a
            // fresh shard or a used one always exists.
            (None, None) => unreachable!("Loads with zero shards"),
        }
    }

    fn put(&mut self, load: u64, shard: u32) {
        self.used.push(Reverse((load, shard)));
    }
}

/// Splits `graph` into `shards` shards.
///
/// Grouped entities are placed group by group so that a group is never
/// split; ungrouped entities are placed one by one afterwards, which spreads
/// core/spine switches over the shards and fills in the imbalance left by
/// the coarse groups. Within each phase units go heaviest first (ties: the
/// unit with the lowest entity id first), each to the currently lightest
/// shard (ties: lowest shard index).
///
/// More shards than units is fine: the surplus shards stay empty.
/// Zero-delay links are not checked here, only by [`Partition::report`],
/// because whether they are cut depends on the result.
pub fn partition(graph: &Graph, shards: u32) -> Result<Partition, PartitionError> {
    if shards == 0 {
        return Err(PartitionError::ZeroShards);
    }
    graph.validate()?;

    let mut groups: BTreeMap<u32, Unit> = BTreeMap::new();
    let mut singles: Vec<Unit> = Vec::new();
    for (id, e) in graph.entities.iter().enumerate() {
        let id = id as u32;
        match e.group {
            Some(g) => {
                let unit = groups.entry(g).or_insert_with(|| Unit {
                    weight: 0,
                    members: Vec::new(),
                });
                // No overflow: the sum of all weights fits in u64 (validated).
                unit.weight += e.weight;
                unit.members.push(id);
            }
            None => singles.push(Unit {
                weight: e.weight,
                members: vec![id],
            }),
        }
    }
    let mut grouped: Vec<Unit> = groups.into_values().collect();

    let mut shard_of = vec![0u32; graph.entities.len()];
    let mut loads = Loads::new(shards);
    for phase in [&mut grouped, &mut singles] {
        phase.sort_by_key(|u| (Reverse(u.weight), u.first()));
        for unit in phase.iter() {
            let (load, shard) = loads.take_lightest();
            for &m in &unit.members {
                shard_of[m as usize] = shard;
            }
            loads.put(load + unit.weight, shard);
        }
    }
    Ok(Partition { shard_of, shards })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_prefers_lowest_index_on_ties_including_fresh_shards() {
        let mut l = Loads::new(3);
        assert_eq!(l.take_lightest(), (0, 0));
        l.put(0, 0); // a zero-weight unit: shard 0 still ties with fresh ones
        assert_eq!(l.take_lightest(), (0, 0));
        l.put(5, 0);
        assert_eq!(l.take_lightest(), (0, 1));
        l.put(3, 1);
        assert_eq!(l.take_lightest(), (0, 2));
        l.put(3, 2);
        assert_eq!(l.take_lightest(), (3, 1));
        l.put(10, 1);
        assert_eq!(l.take_lightest(), (3, 2));
        l.put(4, 2);
        assert_eq!(l.take_lightest(), (4, 2));
    }

    #[test]
    fn huge_shard_count_does_not_allocate_per_shard() {
        let g = Graph {
            entities: (0..3)
                .map(|i| crate::EntityInfo {
                    label: format!("e{i}"),
                    group: None,
                    weight: 1,
                })
                .collect(),
            links: vec![],
        };
        let p = partition(&g, u32::MAX).unwrap();
        assert_eq!(p.shard_of, vec![0, 1, 2]);
        assert_eq!(p.shards, u32::MAX);
    }
}
