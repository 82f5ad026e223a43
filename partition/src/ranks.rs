//! Grouping of shards into MPI ranks.
//!
//! Contiguous blocks keep neighbouring shard indices on one rank. Because
//! [`crate::partition`] hands shards out in index order, low-indexed shards
//! tend to hold the earliest-placed (heaviest) units, and block sizes that
//! differ by at most one keep the shard count per rank balanced.

use crate::PartitionError;

/// Maps each shard to an MPI rank: `result[s]` is the rank of shard `s`.
///
/// Ranks own contiguous blocks of shards; the first `shards % ranks` ranks
/// own one shard more than the others, so block sizes differ by at most one
/// and the result is non-decreasing. Every rank owns at least one shard,
/// hence `ranks > shards` is an error, as is `ranks == 0`.
pub fn rank_of_shards(shards: u32, ranks: u32) -> Result<Vec<u32>, PartitionError> {
    if ranks == 0 {
        return Err(PartitionError::ZeroRanks);
    }
    if ranks > shards {
        return Err(PartitionError::MoreRanksThanShards { ranks, shards });
    }
    // u64 so that `r * (q + 1)` cannot overflow for large counts.
    let (shards64, ranks64) = (u64::from(shards), u64::from(ranks));
    let q = shards64 / ranks64; // >= 1 because ranks <= shards
    let r = shards64 % ranks64; // ranks 0..r own q + 1 shards
    let big = r * (q + 1); // shards owned by the larger blocks
    Ok((0..shards64)
        .map(|s| {
            let rank = if s < big {
                s / (q + 1)
            } else {
                r + (s - big) / q
            };
            rank as u32
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_and_uneven_blocks() {
        assert_eq!(rank_of_shards(4, 2).unwrap(), vec![0, 0, 1, 1]);
        assert_eq!(rank_of_shards(5, 2).unwrap(), vec![0, 0, 0, 1, 1]);
        assert_eq!(rank_of_shards(7, 3).unwrap(), vec![0, 0, 0, 1, 1, 2, 2]);
        assert_eq!(rank_of_shards(3, 3).unwrap(), vec![0, 1, 2]);
        assert_eq!(rank_of_shards(3, 1).unwrap(), vec![0, 0, 0]);
        assert_eq!(rank_of_shards(1, 1).unwrap(), vec![0]);
    }

    #[test]
    fn errors() {
        assert_eq!(rank_of_shards(4, 0), Err(PartitionError::ZeroRanks));
        assert_eq!(rank_of_shards(0, 0), Err(PartitionError::ZeroRanks));
        assert_eq!(
            rank_of_shards(2, 3),
            Err(PartitionError::MoreRanksThanShards {
                ranks: 3,
                shards: 2
            })
        );
        assert_eq!(
            rank_of_shards(0, 1),
            Err(PartitionError::MoreRanksThanShards {
                ranks: 1,
                shards: 0
            })
        );
    }
}
