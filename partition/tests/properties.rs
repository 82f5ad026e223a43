//! Property tests on random graphs: every result is checked against a
//! brute-force recomputation from the raw link list.

use partition::{partition, rank_of_shards, EntityInfo, Graph, LinkInfo, PartitionError};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn arb_graph() -> impl Strategy<Value = Graph> {
    (1usize..40).prop_flat_map(|n| {
        let ents = prop::collection::vec((prop::option::weighted(0.7, 0u32..6), 0u64..50), n);
        let links = prop::collection::vec((0..n as u32, 0..n as u32, 0u64..6), 0..80);
        (ents, links).prop_map(|(ents, links)| Graph {
            entities: ents
                .into_iter()
                .enumerate()
                .map(|(i, (group, weight))| EntityInfo {
                    label: format!("e{i}"),
                    group,
                    weight,
                })
                .collect(),
            links: links
                .into_iter()
                // Delays 0..6 * 100 ns: about one in six links is zero-delay.
                .map(|(a, b, d)| LinkInfo {
                    a,
                    b,
                    delay_ps: d * 100_000,
                })
                .collect(),
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn partition_properties(g in arb_graph(), shards in 1u32..12) {
        let p = partition(&g, shards).unwrap();
        let n = g.entities.len();

        // Every entity assigned exactly once, to an existing shard.
        prop_assert_eq!(p.shard_of.len(), n);
        prop_assert!(p.shard_of.iter().all(|&s| s < shards));
        let mut all: Vec<u32> = Vec::new();
        for s in 0..shards {
            let m = p.members(s);
            prop_assert!(m.windows(2).all(|w| w[0] < w[1]));
            all.extend(m);
        }
        all.sort_unstable();
        prop_assert_eq!(all, (0..n as u32).collect::<Vec<_>>());

        // Groups whole; collect unit weights for the balance bound.
        let mut group_shard: BTreeMap<u32, u32> = BTreeMap::new();
        let mut unit_weight: BTreeMap<(bool, u32), u64> = BTreeMap::new();
        for (e, info) in g.entities.iter().enumerate() {
            match info.group {
                Some(grp) => {
                    let s = *group_shard.entry(grp).or_insert(p.shard_of[e]);
                    prop_assert_eq!(s, p.shard_of[e]);
                    *unit_weight.entry((true, grp)).or_default() += info.weight;
                }
                None => {
                    unit_weight.insert((false, e as u32), info.weight);
                }
            }
        }

        // Deterministic.
        prop_assert_eq!(&partition(&g, shards).unwrap(), &p);

        // Brute force over the link list.
        let cut: Vec<(usize, &LinkInfo)> = g
            .links
            .iter()
            .enumerate()
            .filter(|(_, l)| p.shard_of[l.a as usize] != p.shard_of[l.b as usize])
            .collect();
        let first_zero = cut.iter().find(|(_, l)| l.delay_ps == 0);
        match (p.report(&g), first_zero) {
            (Err(PartitionError::ZeroDelayCutLink { link, a, b, a_name, b_name, .. }), Some(&(i, l))) => {
                prop_assert_eq!(link, i);
                prop_assert_eq!((a, b), (l.a, l.b));
                prop_assert_eq!(a_name, format!("e{}", l.a));
                prop_assert_eq!(b_name, format!("e{}", l.b));
            }
            (Ok(r), None) => {
                let min = cut.iter().map(|(_, l)| l.delay_ps).min();
                prop_assert_eq!(r.lookahead_ps, min);
                prop_assert_eq!(r.cut_links, cut.len() as u64);
                prop_assert_eq!(r.total_links, g.links.len() as u64);
                let mut w = vec![0u64; shards as usize];
                let mut c = vec![0u64; shards as usize];
                let mut k = vec![0u64; shards as usize];
                for (e, info) in g.entities.iter().enumerate() {
                    w[p.shard_of[e] as usize] += info.weight;
                    c[p.shard_of[e] as usize] += 1;
                }
                for (_, l) in &cut {
                    k[p.shard_of[l.a as usize] as usize] += 1;
                    k[p.shard_of[l.b as usize] as usize] += 1;
                }
                for (s, load) in r.per_shard.iter().enumerate() {
                    prop_assert_eq!(load.shard, s as u32);
                    prop_assert_eq!(load.weight, w[s]);
                    prop_assert_eq!(load.entities, c[s]);
                    prop_assert_eq!(load.cut_links, k[s]);
                }
                // Greedy list-scheduling bound: the last unit put on the
                // heaviest shard found it lightest, i.e. at most the mean,
                // so max <= total / shards + heaviest unit.
                let total: u64 = w.iter().sum();
                let max_unit = unit_weight.values().copied().max().unwrap_or(0);
                prop_assert!(r.max_weight() * shards as u64 <= total + max_unit * shards as u64);
            }
            (got, want) => prop_assert!(false, "report {:?}, zero-delay cut link {:?}", got, want),
        }
    }

    #[test]
    fn rank_blocks(shards in 1u32..300, ranks_seed in 0u32..300) {
        let ranks = ranks_seed % shards + 1;
        let m = rank_of_shards(shards, ranks).unwrap();
        prop_assert_eq!(m.len(), shards as usize);
        prop_assert_eq!(m[0], 0);
        prop_assert_eq!(*m.last().unwrap(), ranks - 1);
        prop_assert!(m.windows(2).all(|w| w[1] == w[0] || w[1] == w[0] + 1));
        let mut sizes = vec![0u32; ranks as usize];
        for &r in &m {
            sizes[r as usize] += 1;
        }
        let q = shards / ranks;
        // Larger blocks (q + 1) first, then blocks of q.
        let want: Vec<u32> = (0..ranks).map(|r| if r < shards % ranks { q + 1 } else { q }).collect();
        prop_assert_eq!(sizes, want);
    }
}
