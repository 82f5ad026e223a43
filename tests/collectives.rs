//! Dependencies and triggers through the engine, with exact timing on an idle
//! network: a ring allreduce whose every step is one packet per host.

use psim_integration_tests::{run, scenario};

/// One 1500 B packet at 10 Gb/s with 1 us links: 1.2 us + 1 us per hop.
const HOP_PS: u64 = 1_200_000 + 1_000_000;
/// Completion notices travel one maximum link delay (docs/engine.md).
const NOTICE_PS: u64 = 1_000_000;

/// Links between hosts of a k = 4 FatTree: 2 under one ToR, 4 in one pod, else 6.
fn hops(a: u32, b: u32) -> u64 {
    if a / 2 == b / 2 {
        2
    } else if a / 4 == b / 4 {
        4
    } else {
        6
    }
}

#[test]
fn ring_allreduce_steps_follow_the_dependency_recurrence_exactly() {
    let n = 16u32;
    // 16 x 1436 B buffer: every step moves 1436 B of payload, one 1500 B packet.
    let text = "seed = 4\n[topology]\nkind = \"fattree\"\nk = 4\n[[traffic]]\nprotocol = \"cbr\"\npattern = \"collective\"\n\
                algorithm = \"ring_allreduce\"\nsize_bytes = 22976\n";
    let steps = 2 * (n as usize - 1);
    // Independent recurrence: host i sends step k to i+1 when its step k-1 send
    // and its step k-1 receive (from i-1) are both known to have finished.
    let mut start = vec![vec![0u64; n as usize]; steps];
    let mut fin = vec![vec![0u64; n as usize]; steps];
    for k in 0..steps {
        for i in 0..n as usize {
            if k > 0 {
                let prev = (i + n as usize - 1) % n as usize;
                start[k][i] = fin[k - 1][i].max(fin[k - 1][prev]) + NOTICE_PS;
            }
            fin[k][i] = start[k][i] + hops(i as u32, (i as u32 + 1) % n) * HOP_PS;
        }
    }
    for shards in [1, 3, 8] {
        let r = run(&scenario(text, &[]), shards, 2);
        assert_eq!(r.flows.len(), steps * n as usize);
        for i in 0..n {
            let mut mine: Vec<_> = r.flows.iter().filter(|f| f.src == i).collect();
            mine.sort_by_key(|f| f.start_ps);
            assert_eq!(mine.len(), steps);
            for (k, f) in mine.iter().enumerate() {
                assert_eq!(f.dst, (i + 1) % n);
                assert_eq!(f.size_bytes, Some(1436));
                assert_eq!(
                    f.start_ps, start[k][i as usize],
                    "host {i} step {k} start ({shards} shards)"
                );
                assert_eq!(
                    f.finish_ps,
                    Some(fin[k][i as usize]),
                    "host {i} step {k} finish ({shards} shards)"
                );
            }
        }
        let groups = &r.outcome.manifest.groups;
        assert_eq!(groups.len(), 1, "{groups:?}");
        let last = fin[steps - 1].iter().copied().max().unwrap();
        assert_eq!(groups[0].completed_ps, last, "collective completion time");
        assert!(r.outcome.summary.conserved());
    }
}

#[test]
fn closed_loop_incast_rounds_start_after_the_previous_round_is_known_to_be_done() {
    // 3 senders x 1 packet into host 0, repeated in 3 closed-loop rounds.
    let text = "seed = 9\nstop_us = 500\n[topology]\nkind = \"fattree\"\nk = 4\n[[traffic]]\nprotocol = \"cbr\"\n\
                pattern = \"incast\"\nreceiver = 0\nsenders = 3\nsize_bytes = 1436\nmode = \"closed\"\nrepeat = 3\n";
    let r = run(&scenario(text, &[]), 2, 2);
    let mut starts: Vec<u64> = r.flows.iter().map(|f| f.start_ps).collect();
    starts.sort();
    starts.dedup();
    assert_eq!(starts.len(), 3, "three rounds: {starts:?}");
    for w in starts.windows(2) {
        let round_end = r
            .flows
            .iter()
            .filter(|f| f.start_ps == w[0])
            .filter_map(|f| f.finish_ps)
            .max()
            .unwrap();
        // gap_us = 0: the next round starts exactly when the last completion is known.
        assert_eq!(
            w[1],
            round_end + NOTICE_PS,
            "round start vs previous round's end {round_end}"
        );
    }
}

/// Collectives run over the RDMA transports as over CBR (issue 14): a ring
/// allreduce of 16 KB steps (16 packets of RoCE's 1 KB MTU) over go-back-N
/// RoCE, IRN, and RoCE + DCQCN on marking switches. Every step's flow
/// delivers its bytes, starts exactly one notice delay after both flows it
/// waits on finished (the recurrence above, on the run's own finish times),
/// and the run is the same on 1 and 3 shards.
#[test]
fn ring_allreduce_runs_over_roce_irn_and_dcqcn() {
    let n = 16u32;
    let steps = 2 * (n as usize - 1);
    for (proto, switch) in [
        ("roce", "droptail"),
        ("irn", "droptail"),
        ("dcqcn", "ecn_ramp"),
    ] {
        let text = format!(
            "seed = 4\n[topology]\nkind = \"fattree\"\nk = 4\n[switch.queue]\nkind = \"{switch}\"\n\
             [[traffic]]\nprotocol = \"{proto}\"\npattern = \"collective\"\n\
             algorithm = \"ring_allreduce\"\nsize_bytes = 256000\n"
        );
        let scn = scenario(&text, &[]);
        let one = run(&scn, 1, 1);
        assert_eq!(one.flows.len(), steps * n as usize, "{proto}");
        assert!(one.outcome.summary.conserved(), "{proto}");
        // finish[k][i]: when host i's step-k flow's last byte arrived.
        let mut finish = vec![vec![0u64; n as usize]; steps];
        let mut start = vec![vec![0u64; n as usize]; steps];
        for i in 0..n {
            let mut mine: Vec<_> = one.flows.iter().filter(|f| f.src == i).collect();
            mine.sort_by_key(|f| f.start_ps);
            assert_eq!(mine.len(), steps, "{proto} host {i}");
            for (k, f) in mine.iter().enumerate() {
                assert_eq!(f.dst, (i + 1) % n, "{proto}");
                assert_eq!(f.size_bytes, Some(16_000), "{proto}");
                assert_eq!(f.bytes_received, 16_000, "{proto} host {i} step {k}");
                finish[k][i as usize] = f.finish_ps.expect("every step finishes");
                start[k][i as usize] = f.start_ps;
            }
        }
        for k in 1..steps {
            for i in 0..n as usize {
                let prev = (i + n as usize - 1) % n as usize;
                assert_eq!(
                    start[k][i],
                    finish[k - 1][i].max(finish[k - 1][prev]) + NOTICE_PS,
                    "{proto}: host {i} step {k}"
                );
            }
        }
        let other = run(&scn, 3, 2);
        assert!(other.csv == one.csv, "{proto}: 3 shards differ from 1");
    }
}
