//! Hand-checked partitions of small FatTree and leaf-spine graphs.
//!
//! Expected assignments and cut counts below are derived by hand from the
//! LPT rule described in the crate docs, never produced by running the code.

use partition::{
    partition, rank_of_shards, EntityInfo, Graph, LinkInfo, Partition, PartitionError,
};
use std::collections::BTreeMap;

const US: u64 = 1_000_000;
const HOST_DELAY: u64 = 500_000;

/// Entity ids of the k=4 FatTree built by [`fattree4`].
fn host(h: u32) -> u32 {
    h
}
fn edge(pod: u32, j: u32) -> u32 {
    16 + pod * 2 + j
}
fn agg(pod: u32, j: u32) -> u32 {
    24 + pod * 2 + j
}
fn core(c: u32) -> u32 {
    32 + c
}

/// k=4 FatTree: 16 hosts (0..16), 8 edge (16..24), 8 agg (24..32) and
/// 4 core switches (32..36). Host links 500 ns, all others 1 µs. Core `c`
/// connects to aggregation switch `c / 2` of every pod.
fn fattree4(host_w: u64, switch_w: u64, core_w: u64) -> Graph {
    let mut entities = Vec::new();
    for h in 0..16 {
        entities.push(EntityInfo {
            label: format!("host{h}"),
            group: Some(h / 4),
            weight: host_w,
        });
    }
    for i in 0..8 {
        entities.push(EntityInfo {
            label: format!("edge{i}"),
            group: Some(i / 2),
            weight: switch_w,
        });
    }
    for i in 0..8 {
        entities.push(EntityInfo {
            label: format!("agg{i}"),
            group: Some(i / 2),
            weight: switch_w,
        });
    }
    for c in 0..4 {
        entities.push(EntityInfo {
            label: format!("core{c}"),
            group: None,
            weight: core_w,
        });
    }
    let mut links = Vec::new();
    for h in 0..16 {
        links.push(LinkInfo {
            a: host(h),
            b: edge(h / 4, (h % 4) / 2),
            delay_ps: HOST_DELAY,
        });
    }
    for p in 0..4 {
        for j in 0..2 {
            for m in 0..2 {
                links.push(LinkInfo {
                    a: edge(p, j),
                    b: agg(p, m),
                    delay_ps: US,
                });
            }
        }
    }
    for p in 0..4 {
        for c in 0..4 {
            links.push(LinkInfo {
                a: agg(p, c / 2),
                b: core(c),
                delay_ps: US,
            });
        }
    }
    Graph { entities, links }
}

fn pod_of(e: u32) -> Option<u32> {
    match e {
        0..=15 => Some(e / 4),
        16..=23 => Some((e - 16) / 2),
        24..=31 => Some((e - 24) / 2),
        _ => None,
    }
}

/// Expected shard of every entity given the shard of each pod and core.
fn expected(pod_shard: [u32; 4], core_shard: [u32; 4]) -> Vec<u32> {
    (0..36)
        .map(|e| match pod_of(e) {
            Some(p) => pod_shard[p as usize],
            None => core_shard[(e - 32) as usize],
        })
        .collect()
}

/// Cut links counted straight from the link list, independent of `report`.
fn count_cut(g: &Graph, shard_of: &[u32]) -> u64 {
    g.links
        .iter()
        .filter(|l| shard_of[l.a as usize] != shard_of[l.b as usize])
        .count() as u64
}

fn assert_groups_whole(g: &Graph, p: &Partition) {
    let mut seen: BTreeMap<u32, u32> = BTreeMap::new();
    for (e, info) in g.entities.iter().enumerate() {
        if let Some(grp) = info.group {
            let s = *seen.entry(grp).or_insert(p.shard_of[e]);
            assert_eq!(s, p.shard_of[e], "group {grp} split at {}", info.label);
        }
    }
}

fn assert_each_assigned_once(g: &Graph, p: &Partition) {
    let mut all: Vec<u32> = (0..p.shards).flat_map(|s| p.members(s)).collect();
    assert_eq!(all.len(), g.entities.len());
    all.sort_unstable();
    assert_eq!(all, (0..g.entities.len() as u32).collect::<Vec<_>>());
}

#[test]
fn fattree_shape_is_as_described() {
    let g = fattree4(1, 1, 1);
    assert_eq!(g.entities.len(), 36);
    // 16 host links + 4 pods * 2 edge * 2 agg + 4 pods * 4 cores.
    assert_eq!(g.links.len(), 16 + 16 + 16);
}

#[test]
fn pods_never_split_and_every_entity_assigned_once() {
    let g = fattree4(1, 4, 4);
    for shards in 1..=40 {
        let p = partition(&g, shards).unwrap();
        assert_eq!(p.shards, shards);
        assert_eq!(p.shard_of.len(), 36);
        assert!(p.shard_of.iter().all(|&s| s < shards));
        assert_groups_whole(&g, &p);
        assert_each_assigned_once(&g, &p);
        let r = p.report(&g).unwrap();
        assert_eq!(r.per_shard.len(), shards as usize);
        assert_eq!(r.entities(), 36);
    }
}

#[test]
fn one_shard_has_no_lookahead_and_no_cut() {
    let g = fattree4(1, 4, 4);
    let p = partition(&g, 1).unwrap();
    assert_eq!(p.shard_of, vec![0; 36]);
    let r = p.report(&g).unwrap();
    assert_eq!(r.lookahead_ps, None);
    assert_eq!(r.cut_links, 0);
    assert_eq!(r.total_links, 48);
    assert_eq!(r.per_shard[0].entities, 36);
    assert_eq!(r.per_shard[0].weight, 16 + 16 * 4 + 4 * 4);
    assert!(r.to_string().contains("lookahead: none"));
}

#[test]
fn two_shards_by_hand() {
    // Pod weight 4*1 + 4*4 = 20, core weight 4. Pods tie on weight, so they
    // go in entity-id order to the lightest shard: 0->s0, 1->s1, 2->s0,
    // 3->s1 (loads 40/40). Cores then alternate: 0->s0, 1->s1, 2->s0, 3->s1.
    let g = fattree4(1, 4, 4);
    let p = partition(&g, 2).unwrap();
    assert_eq!(p.shard_of, expected([0, 1, 0, 1], [0, 1, 0, 1]));
    // By hand: every core touches one agg in each pod; two of those pods are
    // in the other shard, so 4 cores * 2 = 8 cut links, all 1 µs.
    assert_eq!(count_cut(&g, &p.shard_of), 8);
    let r = p.report(&g).unwrap();
    assert_eq!(r.cut_links, 8);
    assert_eq!(r.lookahead_ps, Some(US));
    for s in &r.per_shard {
        assert_eq!(s.entities, 2 * 8 + 2);
        assert_eq!(s.weight, 2 * 20 + 2 * 4);
        assert_eq!(s.cut_links, 8);
    }
    let text = r.to_string();
    assert!(text.contains("1.000000 µs (1000.000 ns)"), "{text}");
    assert!(text.contains("cut links: 8 of 48"), "{text}");
    assert!(text.contains("imbalance (max/mean): 1.000"), "{text}");
}

#[test]
fn four_shards_are_balanced() {
    // One pod per shard, then core c to shard c (all shards tie at 20).
    let g = fattree4(1, 4, 4);
    let p = partition(&g, 4).unwrap();
    assert_eq!(p.shard_of, expected([0, 1, 2, 3], [0, 1, 2, 3]));
    // Each core reaches the three pods outside its shard: 4 * 3 = 12.
    assert_eq!(count_cut(&g, &p.shard_of), 12);
    let r = p.report(&g).unwrap();
    assert_eq!(r.cut_links, 12);
    assert_eq!(r.lookahead_ps, Some(US));
    assert!(r
        .per_shard
        .iter()
        .all(|s| s.weight == 24 && s.entities == 9));
    assert_eq!(r.max_weight(), 24);
    assert_eq!(r.imbalance(), Some(1.0));
    // Shard c: 3 links of its own core leave it, and each of the 3 other
    // cores has one link into shard c's pod: 6.
    assert!(r.per_shard.iter().all(|s| s.cut_links == 6));
}

#[test]
fn three_shards_follow_lpt() {
    // Pods: 0->s0, 1->s1, 2->s2, 3->s0 (all at 20, lowest index) => 40/20/20.
    // Cores: 0->s1 (24), 1->s2 (24), 2->s1 (28), 3->s2 (28).
    let g = fattree4(1, 4, 4);
    let p = partition(&g, 3).unwrap();
    assert_eq!(p.shard_of, expected([0, 1, 2, 0], [1, 2, 1, 2]));
    let r = p.report(&g).unwrap();
    let weights: Vec<u64> = r.per_shard.iter().map(|s| s.weight).collect();
    assert_eq!(weights, vec![40, 28, 28]);
    // Cut by hand: core0 (s1) reaches pods 0,2,3 outside s1 => 3; core1 (s2)
    // reaches pods 0,1,3 => 3; core2 (s1) => 3; core3 (s2) => 3.
    assert_eq!(r.cut_links, 12);
    assert_eq!(count_cut(&g, &p.shard_of), 12);
}

#[test]
fn unequal_pods_four_shards_by_hand() {
    // Make pod weights 40, 30, 20, 10 via host weights; cores weigh 5.
    let mut g = fattree4(0, 0, 5);
    for (pod, w) in [(0u32, 10u64), (1, 7), (2, 5), (3, 2)] {
        for h in 0..4 {
            g.entities[(pod * 4 + h) as usize].weight = w;
        }
        g.entities[edge(pod, 0) as usize].weight = [0, 2, 0, 2][pod as usize];
    }
    // Pod weights: 40, 30, 20, 10. Each gets its own shard.
    // Cores: 0->s3 (15), 1->s3 (20), 2->s2 (tie 20/20, lower index: 25),
    // 3->s3 (25).
    let p = partition(&g, 4).unwrap();
    assert_eq!(p.shard_of, expected([0, 1, 2, 3], [3, 3, 2, 3]));
    let r = p.report(&g).unwrap();
    let weights: Vec<u64> = r.per_shard.iter().map(|s| s.weight).collect();
    assert_eq!(weights, vec![40, 30, 25, 25]);
    assert_eq!(r.max_weight(), 40);
    assert_eq!(r.mean_weight(), 30.0);
}

#[test]
fn eight_shards_put_cores_alone() {
    let g = fattree4(1, 4, 4);
    let p = partition(&g, 8).unwrap();
    assert_eq!(p.shard_of, expected([0, 1, 2, 3], [4, 5, 6, 7]));
    for c in 0..4 {
        assert_eq!(p.members(4 + c), vec![core(c)]);
    }
    let r = p.report(&g).unwrap();
    // Every agg-core link is cut, nothing else.
    assert_eq!(r.cut_links, 16);
    assert_eq!(r.lookahead_ps, Some(US));
    assert_eq!(r.empty_shards(), 0);
    for c in 4..8 {
        assert_eq!(r.per_shard[c].cut_links, 4);
        assert_eq!(r.per_shard[c].entities, 1);
    }
    for s in 0..4 {
        assert_eq!(r.per_shard[s].cut_links, 4);
    }
}

#[test]
fn more_shards_than_units_leaves_empty_shards() {
    let g = fattree4(1, 4, 4);
    let p = partition(&g, 10).unwrap();
    assert_eq!(p.shard_of, expected([0, 1, 2, 3], [4, 5, 6, 7]));
    assert!(p.members(8).is_empty() && p.members(9).is_empty());
    assert!(p.members(1000).is_empty());
    let r = p.report(&g).unwrap();
    assert_eq!(r.empty_shards(), 2);
    let text = r.to_string();
    assert!(text.contains("10 shards (2 empty)"), "{text}");
    assert_eq!(text.matches("(empty)").count(), 2, "{text}");
}

#[test]
fn zero_delay_cut_link_names_both_ends() {
    let mut g = fattree4(1, 4, 4);
    // agg0 (pod 0, shard 0) -- core1 (shard 1 with two shards).
    let i = g
        .links
        .iter()
        .position(|l| l.a == agg(0, 0) && l.b == core(1))
        .unwrap();
    g.links[i].delay_ps = 0;
    // One shard: nothing cut, fine.
    assert_eq!(
        partition(&g, 1).unwrap().report(&g).unwrap().lookahead_ps,
        None
    );
    let err = partition(&g, 2).unwrap().report(&g).unwrap_err();
    assert_eq!(
        err,
        PartitionError::ZeroDelayCutLink {
            link: i,
            a: agg(0, 0),
            b: core(1),
            a_name: "agg0".into(),
            b_name: "core1".into(),
            shard_a: 0,
            shard_b: 1,
        }
    );
    let msg = err.to_string();
    assert!(msg.contains("agg0") && msg.contains("core1"), "{msg}");
    assert!(msg.contains(&format!("link {i}")), "{msg}");
}

#[test]
fn zero_delay_inside_a_pod_is_fine() {
    let mut g = fattree4(1, 4, 4);
    for l in g.links.iter_mut().filter(|l| l.a < 16) {
        l.delay_ps = 0; // host links: always inside a pod
    }
    let r = partition(&g, 4).unwrap().report(&g).unwrap();
    assert_eq!(r.lookahead_ps, Some(US));
}

#[test]
fn lookahead_is_min_over_cut_links_only() {
    let mut g = fattree4(1, 4, 4);
    // Make one agg-core link shorter: it is cut with 4 shards (core3 in
    // shard 3, agg0 in pod 0, shard 0) ...
    let i = g
        .links
        .iter()
        .position(|l| l.a == agg(0, 1) && l.b == core(3))
        .unwrap();
    g.links[i].delay_ps = 300_000;
    let r = partition(&g, 4).unwrap().report(&g).unwrap();
    assert_eq!(r.lookahead_ps, Some(300_000));
    // ... but with 2 shards core3 is in shard 1 with pod 1 and 3, agg(0,1)
    // in shard 0: still cut. Move to a link that is not cut with 2 shards:
    // agg(1,1) -- core3, both in shard 1.
    g.links[i].delay_ps = US;
    let j = g
        .links
        .iter()
        .position(|l| l.a == agg(1, 1) && l.b == core(3))
        .unwrap();
    g.links[j].delay_ps = 1;
    let r = partition(&g, 2).unwrap().report(&g).unwrap();
    assert_eq!(r.lookahead_ps, Some(US));
}

#[test]
fn heavy_ungrouped_entity_is_placed_after_groups() {
    // Groups weigh 10 and 5, the ungrouped entity 100. Groups first: 10->s0,
    // 5->s1; then 100->s1 (lighter). Pure LPT would have put 100 first.
    let g = Graph {
        entities: vec![
            EntityInfo {
                label: "big".into(),
                group: None,
                weight: 100,
            },
            EntityInfo {
                label: "g0".into(),
                group: Some(0),
                weight: 10,
            },
            EntityInfo {
                label: "g1".into(),
                group: Some(1),
                weight: 5,
            },
        ],
        links: vec![],
    };
    let p = partition(&g, 2).unwrap();
    assert_eq!(p.shard_of, vec![1, 0, 1]);
}

#[test]
fn equal_weight_groups_tie_break_on_lowest_entity_id() {
    // Group 7 holds entity 0, group 3 holds entities 1 and 2; same weight.
    // Group 7 has the lower entity id, so it goes first, to shard 0.
    let e = |g, w| EntityInfo {
        label: format!("e{g}"),
        group: Some(g),
        weight: w,
    };
    let g = Graph {
        entities: vec![e(7, 4), e(3, 2), e(3, 2)],
        links: vec![],
    };
    assert_eq!(partition(&g, 2).unwrap().shard_of, vec![0, 1, 1]);
}

#[test]
fn leaf_spine() {
    // 4 leaves (ids 0..4) each with 3 hosts, 2 spines; leaf i's hosts are
    // ids 4+3i..7+3i; spines 16, 17.
    let mut entities = Vec::new();
    for i in 0..4 {
        entities.push(EntityInfo {
            label: format!("leaf{i}"),
            group: Some(i),
            weight: 3,
        });
    }
    for h in 0..12 {
        entities.push(EntityInfo {
            label: format!("host{h}"),
            group: Some(h / 3),
            weight: 1,
        });
    }
    for s in 0..2 {
        entities.push(EntityInfo {
            label: format!("spine{s}"),
            group: None,
            weight: 2,
        });
    }
    let mut links = Vec::new();
    for h in 0..12 {
        links.push(LinkInfo {
            a: 4 + h,
            b: h / 3,
            delay_ps: 100_000,
        });
    }
    for l in 0..4 {
        for s in 0..2 {
            links.push(LinkInfo {
                a: l,
                b: 16 + s,
                delay_ps: 2 * US,
            });
        }
    }
    let g = Graph { entities, links };
    let p = partition(&g, 2).unwrap();
    // Leaves 0,2 -> s0; 1,3 -> s1; spine0 -> s0, spine1 -> s1.
    let mut want = vec![0, 1, 0, 1];
    want.extend((0..12).map(|h| [0, 1, 0, 1][h / 3]));
    want.extend([0, 1]);
    assert_eq!(p.shard_of, want);
    let r = p.report(&g).unwrap();
    // Each spine reaches 2 leaves in the other shard: 4 cut links.
    assert_eq!(r.cut_links, 4);
    assert_eq!(r.lookahead_ps, Some(2 * US));
}

#[test]
fn deterministic() {
    let g = fattree4(3, 7, 11);
    for shards in [1, 2, 3, 5, 8] {
        assert_eq!(partition(&g, shards), partition(&g.clone(), shards));
    }
}

#[test]
fn invalid_inputs_are_typed_errors() {
    let g = fattree4(1, 4, 4);
    assert_eq!(partition(&g, 0), Err(PartitionError::ZeroShards));

    let mut bad = g.clone();
    bad.links.push(LinkInfo {
        a: 3,
        b: 36,
        delay_ps: 1,
    });
    let err = partition(&bad, 2).unwrap_err();
    assert_eq!(
        err,
        PartitionError::LinkEndpointOutOfRange {
            link: 48,
            a: 3,
            b: 36,
            endpoint: 36,
            entities: 36
        }
    );
    assert!(err.to_string().contains("link 48"));

    let mut heavy = g.clone();
    heavy.entities[0].weight = u64::MAX;
    assert!(matches!(
        partition(&heavy, 2),
        Err(PartitionError::WeightOverflow { entity: 1, .. })
    ));

    let p = partition(&g, 2).unwrap();
    let mut short = p.clone();
    short.shard_of.pop();
    assert_eq!(
        short.report(&g),
        Err(PartitionError::EntityCountMismatch {
            assigned: 35,
            entities: 36
        })
    );
    let mut out = p.clone();
    out.shard_of[5] = 2;
    let err = out.report(&g).unwrap_err();
    assert!(err.to_string().contains("host5"), "{err}");
    let zero = Partition {
        shard_of: vec![],
        shards: 0,
    };
    assert_eq!(
        zero.report(&Graph::default()),
        Err(PartitionError::ZeroShards)
    );
}

#[test]
fn empty_graph() {
    let g = Graph::default();
    let p = partition(&g, 3).unwrap();
    assert!(p.shard_of.is_empty());
    let r = p.report(&g).unwrap();
    assert_eq!(r.empty_shards(), 3);
    assert_eq!(r.imbalance(), None);
    assert!(r.to_string().contains("n/a"));
}

#[test]
fn ranks_for_shards() {
    assert_eq!(rank_of_shards(8, 2).unwrap(), vec![0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(rank_of_shards(8, 3).unwrap(), vec![0, 0, 0, 1, 1, 1, 2, 2]);
    assert_eq!(rank_of_shards(8, 8).unwrap(), (0..8).collect::<Vec<_>>());
    assert_eq!(rank_of_shards(8, 0), Err(PartitionError::ZeroRanks));
    let err = rank_of_shards(2, 4).unwrap_err();
    assert_eq!(
        err,
        PartitionError::MoreRanksThanShards {
            ranks: 4,
            shards: 2
        }
    );
    assert!(err.to_string().contains('4') && err.to_string().contains('2'));
}
