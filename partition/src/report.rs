//! Quality report of a partition: lookahead, cut links, per-shard load.
//!
//! The lookahead is what makes conservative parallel simulation possible:
//! a shard may safely process events up to `now + lookahead` because no
//! message from another shard can arrive earlier than the smallest
//! propagation delay of a link between shards. The report computes it from
//! the actual assignment and refuses zero-delay cut links.

use std::fmt;

use serde::Serialize;

use crate::{Graph, Partition, PartitionError};

/// Load and cut statistics of one shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShardLoad {
    /// Shard index.
    pub shard: u32,
    /// Number of entities placed in the shard.
    pub entities: u64,
    /// Sum of the weights of those entities.
    pub weight: u64,
    /// Cut links with one end in this shard. A cut link is counted once in
    /// each of its two shards, so these sum to twice `Report::cut_links`.
    pub cut_links: u64,
}

/// Summary of a partition of a particular graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Number of shards, empty ones included.
    pub shards: u32,
    /// Minimum propagation delay over links whose ends are in different
    /// shards, in picoseconds. `None` when no link is cut (one shard, or
    /// shards that share no link), i.e. shards never constrain each other.
    pub lookahead_ps: Option<u64>,
    /// Number of links whose ends are in different shards.
    pub cut_links: u64,
    /// Number of links in the graph.
    pub total_links: u64,
    /// One entry per shard, in shard order.
    pub per_shard: Vec<ShardLoad>,
}

impl Partition {
    /// Computes lookahead, cut links and per-shard load of this partition
    /// of `graph`.
    ///
    /// Fails if the partition does not fit the graph (wrong length, shard
    /// index out of range), if the graph is invalid, or if a zero-delay link
    /// is cut (the lowest such link index is named). Allocates one
    /// [`ShardLoad`] per shard, so the shard count should be reasonable.
    pub fn report(&self, graph: &Graph) -> Result<Report, PartitionError> {
        if self.shards == 0 {
            return Err(PartitionError::ZeroShards);
        }
        graph.validate()?;
        if self.shard_of.len() != graph.entities.len() {
            return Err(PartitionError::EntityCountMismatch {
                assigned: self.shard_of.len(),
                entities: graph.entities.len(),
            });
        }
        let mut per_shard: Vec<ShardLoad> = (0..self.shards)
            .map(|shard| ShardLoad {
                shard,
                entities: 0,
                weight: 0,
                cut_links: 0,
            })
            .collect();
        for (e, (&s, info)) in self.shard_of.iter().zip(&graph.entities).enumerate() {
            let Some(load) = per_shard.get_mut(s as usize) else {
                return Err(PartitionError::ShardOutOfRange {
                    entity: e as u32,
                    label: info.label.clone(),
                    shard: s,
                    shards: self.shards,
                });
            };
            load.entities += 1;
            // No overflow: the graph's total weight fits in u64 (validated).
            load.weight += info.weight;
        }

        let mut lookahead_ps: Option<u64> = None;
        let mut cut_links = 0u64;
        for (i, l) in graph.links.iter().enumerate() {
            // Endpoints and shard indices were validated above.
            let (sa, sb) = (self.shard_of[l.a as usize], self.shard_of[l.b as usize]);
            if sa == sb {
                continue;
            }
            if l.delay_ps == 0 {
                return Err(PartitionError::ZeroDelayCutLink {
                    link: i,
                    a: l.a,
                    b: l.b,
                    a_name: graph.entities[l.a as usize].label.clone(),
                    b_name: graph.entities[l.b as usize].label.clone(),
                    shard_a: sa,
                    shard_b: sb,
                });
            }
            cut_links += 1;
            per_shard[sa as usize].cut_links += 1;
            per_shard[sb as usize].cut_links += 1;
            lookahead_ps = Some(lookahead_ps.map_or(l.delay_ps, |m| m.min(l.delay_ps)));
        }

        Ok(Report {
            shards: self.shards,
            lookahead_ps,
            cut_links,
            total_links: graph.links.len() as u64,
            per_shard,
        })
    }
}

impl Report {
    /// Total number of entities over all shards.
    pub fn entities(&self) -> u64 {
        self.per_shard.iter().map(|s| s.entities).sum()
    }

    /// Total weight over all shards (u128 so that a hand-built report
    /// cannot overflow it).
    pub fn total_weight(&self) -> u128 {
        self.per_shard.iter().map(|s| s.weight as u128).sum()
    }

    /// Weight of the heaviest shard; 0 when there are no shards.
    pub fn max_weight(&self) -> u64 {
        self.per_shard.iter().map(|s| s.weight).max().unwrap_or(0)
    }

    /// Mean weight per shard, counting empty shards (they are idle threads,
    /// so they do lower the achievable speed-up). 0 when there are no shards.
    pub fn mean_weight(&self) -> f64 {
        if self.per_shard.is_empty() {
            0.0
        } else {
            self.total_weight() as f64 / self.per_shard.len() as f64
        }
    }

    /// `max_weight / mean_weight`: 1.0 is perfect balance, and the parallel
    /// speed-up is at most `shards / imbalance`. `None` when the total
    /// weight is zero (nothing to balance).
    pub fn imbalance(&self) -> Option<f64> {
        let mean = self.mean_weight();
        (mean > 0.0).then(|| self.max_weight() as f64 / mean)
    }

    /// Number of shards that received no entity.
    pub fn empty_shards(&self) -> u64 {
        self.per_shard.iter().filter(|s| s.entities == 0).count() as u64
    }
}

/// Formats picoseconds exactly as microseconds and nanoseconds, e.g.
/// `1.000000 µs (1000.000 ns)`; integer arithmetic, so no rounding.
pub fn format_ps(ps: u64) -> String {
    format!(
        "{}.{:06} µs ({}.{:03} ns)",
        ps / 1_000_000,
        ps % 1_000_000,
        ps / 1_000,
        ps % 1_000
    )
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "partition: {} shards ({} empty), {} entities, total weight {}",
            self.shards,
            self.empty_shards(),
            self.entities(),
            self.total_weight()
        )?;
        match self.lookahead_ps {
            Some(ps) => writeln!(f, "lookahead: {}", format_ps(ps))?,
            None => writeln!(f, "lookahead: none (no link crosses shards)")?,
        }
        if self.total_links == 0 {
            writeln!(f, "cut links: 0 of 0")?;
        } else {
            writeln!(
                f,
                "cut links: {} of {} ({:.1}%)",
                self.cut_links,
                self.total_links,
                100.0 * self.cut_links as f64 / self.total_links as f64
            )?;
        }
        writeln!(
            f,
            "{:>6}  {:>10}  {:>14}  {:>10}",
            "shard", "entities", "weight", "cut links"
        )?;
        for s in &self.per_shard {
            write!(
                f,
                "{:>6}  {:>10}  {:>14}  {:>10}",
                s.shard, s.entities, s.weight, s.cut_links
            )?;
            if s.entities == 0 {
                write!(f, "  (empty)")?;
            }
            writeln!(f)?;
        }
        match self.imbalance() {
            Some(r) => write!(
                f,
                "weight imbalance (max/mean): {r:.3} (max {}, mean {:.2})",
                self.max_weight(),
                self.mean_weight()
            ),
            None => write!(f, "weight imbalance (max/mean): n/a (total weight 0)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_ps_is_exact() {
        assert_eq!(format_ps(1_000_000), "1.000000 µs (1000.000 ns)");
        assert_eq!(format_ps(500_000), "0.500000 µs (500.000 ns)");
        assert_eq!(format_ps(1_234_567), "1.234567 µs (1234.567 ns)");
        assert_eq!(format_ps(1), "0.000001 µs (0.001 ns)");
    }

    #[test]
    fn imbalance_of_hand_built_report() {
        let r = Report {
            shards: 2,
            lookahead_ps: None,
            cut_links: 0,
            total_links: 0,
            per_shard: vec![
                ShardLoad {
                    shard: 0,
                    entities: 1,
                    weight: 3,
                    cut_links: 0,
                },
                ShardLoad {
                    shard: 1,
                    entities: 1,
                    weight: 1,
                    cut_links: 0,
                },
            ],
        };
        assert_eq!(r.max_weight(), 3);
        assert_eq!(r.mean_weight(), 2.0);
        assert_eq!(r.imbalance(), Some(1.5));
        assert_eq!(r.empty_shards(), 0);
    }
}
