//! The single error type of the crate.
//!
//! Every failure has its own variant, and every variant names the thing that
//! is wrong (entity label, link index, shard or rank count) so that a user who
//! sees the message in a psim log can find the offending part of the
//! configuration without a debugger.

/// Everything that can go wrong while partitioning a graph, reporting on a
/// partition or mapping shards to MPI ranks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitionError {
    /// `partition` was asked for zero shards, or a [`crate::Partition`] with
    /// zero shards was handed to `report`.
    #[error("shard count must be at least 1, got 0")]
    ZeroShards,

    /// Entity ids are `u32`, so a graph cannot hold more than `u32::MAX`
    /// entities.
    #[error("graph has {entities} entities, more than the {max} that u32 entity ids can address", max = u32::MAX)]
    TooManyEntities {
        /// Number of entities in the graph.
        entities: usize,
    },

    /// A link names an entity index that does not exist.
    #[error(
        "link {link} ({a} -- {b}) names entity {endpoint}, but the graph has only {entities} entities (valid ids are 0..{entities})"
    )]
    LinkEndpointOutOfRange {
        /// Index of the link in `Graph::links`.
        link: usize,
        /// First endpoint as given.
        a: u32,
        /// Second endpoint as given.
        b: u32,
        /// The endpoint that is out of range (`a` if both are).
        endpoint: u32,
        /// Number of entities in the graph.
        entities: usize,
    },

    /// The sum of all entity weights does not fit in a `u64`; shard loads
    /// would overflow.
    #[error("total entity weight overflows u64 when adding entity {entity} `{label}`")]
    WeightOverflow {
        /// Entity whose weight made the running total overflow.
        entity: u32,
        /// Its label.
        label: String,
    },

    /// A partition handed to `report` was computed for a different graph: it
    /// assigns a different number of entities.
    #[error("partition assigns {assigned} entities but the graph has {entities}")]
    EntityCountMismatch {
        /// Length of `Partition::shard_of`.
        assigned: usize,
        /// Number of entities in the graph.
        entities: usize,
    },

    /// A partition handed to `report` puts an entity in a shard that does
    /// not exist.
    #[error("entity {entity} `{label}` is assigned to shard {shard}, but the partition has only {shards} shards")]
    ShardOutOfRange {
        /// Entity id.
        entity: u32,
        /// Entity label.
        label: String,
        /// The shard it was assigned to.
        shard: u32,
        /// Number of shards in the partition.
        shards: u32,
    },

    /// A link with zero propagation delay joins two different shards.
    ///
    /// Conservative synchronisation lets a shard run ahead of its
    /// neighbours by the lookahead, the minimum delay of any cut link; a
    /// zero-delay cut link makes that window empty and the simulation could
    /// not advance, so this is refused rather than silently accepted.
    #[error(
        "link {link} between `{a_name}` (entity {a}, shard {shard_a}) and `{b_name}` (entity {b}, shard {shard_b}) \
         has zero propagation delay but crosses shards; conservative synchronisation needs a positive lookahead, \
         so give the link a delay or keep both ends in one group"
    )]
    ZeroDelayCutLink {
        /// Index of the link in `Graph::links`.
        link: usize,
        /// First endpoint.
        a: u32,
        /// Second endpoint.
        b: u32,
        /// Label of the first endpoint.
        a_name: String,
        /// Label of the second endpoint.
        b_name: String,
        /// Shard of the first endpoint.
        shard_a: u32,
        /// Shard of the second endpoint.
        shard_b: u32,
    },

    /// `rank_of_shards` was asked for zero ranks.
    #[error("MPI rank count must be at least 1, got 0")]
    ZeroRanks,

    /// `rank_of_shards` was asked for more ranks than shards; some rank would
    /// own no shard at all.
    #[error(
        "{ranks} MPI ranks requested for only {shards} shards; every rank needs at least one shard"
    )]
    MoreRanksThanShards {
        /// Requested rank count.
        ranks: u32,
        /// Shard count.
        shards: u32,
    },
}
