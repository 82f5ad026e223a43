//! NDP reproductions (Handley et al., SIGCOMM 2017; validation
//! targets V1-V27 and decisions A1-A20 in docs/references.md) at a scale that runs in seconds. Each test names
//! its figure. Defaults everywhere: 10 Gb/s, 1 µs links, 9000 B payloads
//! (9064 B on the wire), 8-packet data queues, IW 23 unless stated.

use psim_integration_tests::{fct_extremes, goodput_gbps, optimum, run, scenario, ser10, Ran};

fn ndp(k: u32, traffic: &str, extra: &[&str]) -> Ran {
    let text = format!(
        "seed = 1\n[topology]\nkind = \"fattree\"\nk = {k}\n[switch.queue]\nkind = \"ndp\"\n{traffic}"
    );
    run(&scenario(&text, extra), 2, 2)
}

#[test]
fn a_lone_flow_finishes_at_the_store_and_forward_optimum() {
    // 1 MB across the core of an idle k = 4 FatTree: the sender's NIC is busy
    // back to back and the last (short) packet trails the full one before it on
    // every hop, so completion = all wire bytes + 5 full-packet hops + 6 props.
    let r = ndp(4, "[[traffic]]\nprotocol = \"ndp\"\npattern = \"many_to_many\"\nsenders = [0]\nreceivers = [10]\nsize_bytes = 1000000\n", &[]);
    let f = &r.flows[0];
    assert_eq!(f.fct_ps, Some(optimum(&r.flows)));
    // The ideal FCT is a lower bound over every schedule (topo/path.rs): the
    // last full packet, then 5 full-packet hops, had the 1064 B tail (1 MB =
    // 111 full packets + 1000 B) overtaken it on another path.
    assert_eq!(f.ideal_fct_ps, Some(optimum(&r.flows) - ser10(1064)));
    assert_eq!((f.trims, f.retransmissions, f.timeouts), (0, 0, 0));
}

#[test]
fn a_lone_flows_send_to_ack_latency_is_serialisation_and_propagation() {
    // Fig. 4's metric (V3) on an idle k = 4 FatTree: 5 full packets from
    // host 0 to host 10 (6 links each way), all in the first window, so the
    // sender hands all 5 to its NIC at 0. Packet i leaves the NIC after i
    // others, crosses 6 store-and-forward links (6 x 9064 B + 6 x 1 µs), and
    // its 64 B ACK comes straight back over 6 links (6 x 64 B + 6 x 1 µs).
    let traffic = "[[traffic]]\nprotocol = \"ndp\"\npattern = \"many_to_many\"\nsenders = [0]\nreceivers = [10]\nsize_bytes = 45000\n";
    let scn = scenario(
        &format!("seed = 1\n[topology]\nkind = \"fattree\"\nk = 4\n[switch.queue]\nkind = \"ndp\"\n{traffic}"),
        &["trace.packets.enabled=true", "trace.packets.events=[\"enqueue\", \"dequeue\"]"],
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    psim::run::execute(
        &scn,
        psim::engine::SimOptions {
            shards: 2,
            threads: 2,
        },
        &out,
        false,
        &mut |_| {},
    )
    .unwrap();
    let rows = psim::trace::read_packets(&out).unwrap();
    let l = psim::validate::ack_latency::ack_latencies(&rows, &scn.topology);
    let rtt = 6 * ser10(9064) + 6 * ser10(64) + 12 * 1_000_000;
    let expected: Vec<u64> = (0..5).map(|i| i * ser10(9064) + rtt).collect();
    let mut got = l.send_to_ack_ps.clone();
    got.sort_unstable();
    assert_eq!(got, expected);
    // Each was sent once: its RTT, from the NIC's dequeue, is the same.
    assert_eq!(l.rtt_ps, vec![rtt; 5]);
}

#[test]
fn v15_incast_is_within_about_1_percent_of_optimal_and_fair() {
    // Fig. 16 at reduced scale: 12 senders in other pods, 450 KB each, into host 0.
    // Paper: NDP within about 1% of optimal; slowest flow <= 1.2x the fastest.
    let r = ndp(
        4,
        "[[traffic]]\nprotocol = \"ndp\"\npattern = \"many_to_many\"\nsenders = [4,5,6,7,8,9,10,11,12,13,14,15]\nreceivers = [0]\nsize_bytes = 450000\n",
        &[],
    );
    let (first, last) = fct_extremes(&r.flows);
    let opt = optimum(&r.flows);
    assert!(
        last >= opt,
        "faster than the line-rate bound: {last} < {opt}"
    );
    // "About 1%" over optimal, an overhead: at most 1% + 20% (validation/targets.toml's rule).
    assert!(
        (last as f64) <= opt as f64 * 1.012,
        "last flow {last} ps vs optimum {opt} ps"
    );
    assert!(
        last as f64 <= first as f64 * 1.2,
        "slowest {last} vs fastest {first}"
    );
    assert!(
        r.flows.iter().map(|f| f.trims).sum::<u64>() > 0,
        "the first window must be trimmed"
    );
}

#[test]
fn v21_v22_large_incast_uses_return_to_sender_and_stays_near_optimal() {
    // Fig. 20 at reduced scale: 127 -> 1 of 270,000 B (30 packets), IW 23, k = 8.
    // Paper: within 2% of optimal with IW 23; return-to-sender dominates above 100 flows.
    let r = ndp(8, "[[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 127\nsize_bytes = 270000\n", &[]);
    assert_eq!(r.flows.len(), 127);
    let (_, last) = fct_extremes(&r.flows);
    let opt = optimum(&r.flows);
    assert!(
        last >= opt && (last as f64) <= opt as f64 * 1.02,
        "last {last} vs optimum {opt}"
    );
    let bounces: u64 = r.flows.iter().map(|f| f.bounces).sum();
    assert!(
        bounces > 100,
        "header queue overflow must return headers to senders: {bounces}"
    );
    assert!(r.outcome.summary.ports.bounced >= bounces);
    // Every packet delivered exactly once, whatever was trimmed or bounced.
    assert!(r.flows.iter().all(|f| f.bytes_received == 270_000));
}

#[test]
#[ignore = "psim misses the paper's ratio (3.3x, not 10x): known difference V8 in docs/validation.md; the model fix is the fidelity issue's"]
fn v8_receiver_priority_shortens_the_prioritised_flow() {
    // Fig. 10: 1 short (200 KB) + 6 long flows into one host, all starting together.
    // Paper: with priority the short flow's FCT rises over idle by ~50 us, without by ~500 us.
    let traffic = "[[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 7\nsize_bytes = 3000000\n\
                   first_sender_size_bytes = 200000\nfirst_sender_priority = 1\n";
    let short = |r: &Ran| {
        r.flows
            .iter()
            .find(|f| f.size_bytes == Some(200_000))
            .unwrap()
            .clone()
    };
    let with = short(&ndp(4, traffic, &[]));
    let without = short(&ndp(4, traffic, &["traffic.0.first_sender_priority=0"]));
    let idle = with.ideal_fct_ps.unwrap();
    let rise_with = with.fct_ps.unwrap() - idle;
    let rise_without = without.fct_ps.unwrap() - idle;
    // Paper: ≈ 50 µs against ≈ 500 µs, a factor of 10 (±20%: at least 8).
    assert!(
        rise_with * 8 < rise_without,
        "priority rise {rise_with} ps vs {rise_without} ps without"
    );
}

/// Mean and worst per-flow goodput of a long-lived permutation between 1 and 3 ms.
fn permutation_steady_state(k: u32, extra: &[&str]) -> (f64, f64, u64) {
    let traffic = "[[traffic]]\nprotocol = \"ndp\"\npattern = \"permutation\"\n";
    let mut sets = vec!["stop_us=1000"];
    sets.extend_from_slice(extra);
    let early = ndp(k, traffic, &sets);
    sets[0] = "stop_us=3000";
    let late = ndp(k, traffic, &sets);
    let g: Vec<f64> = early
        .flows
        .iter()
        .zip(&late.flows)
        .map(|(a, b)| {
            assert_eq!(a.flow_id, b.flow_id);
            (b.bytes_received - a.bytes_received) as f64 * 8.0 / 2e-3 / 1e9
        })
        .collect();
    let trims = late.flows.iter().map(|f| f.trims).sum();
    (
        g.iter().sum::<f64>() / g.len() as f64,
        g.iter().cloned().fold(f64::MAX, f64::min),
        trims,
    )
}

#[test]
fn v19_v20_permutation_of_128_hosts_reaches_95_percent() {
    // Figs. 14, 17 and §6.2 at 128 hosts (k = 8), IW 30, 8-packet queues:
    // paper 98% utilisation at 128 nodes and > 95% with 8-packet buffers; worst flow >= 9 Gb/s (Fig. 14).
    let (mean, worst, _) = permutation_steady_state(8, &["protocol.ndp.iw_packets=30"]);
    assert!(mean >= 9.5, "mean {mean:.3} Gb/s");
    assert!(worst >= 9.0, "worst {worst:.3} Gb/s");
}

#[test]
fn v4_sender_path_permutation_gives_more_capacity_than_random_spraying() {
    // [O], [P] §3.1.1: path permutation gives more capacity than random choice
    // with 8-packet queues (128 hosts, IW 30).
    let (mean_perm, _, _) = permutation_steady_state(8, &["protocol.ndp.iw_packets=30"]);
    let (mean_rand, _, _) = permutation_steady_state(
        8,
        &[
            "protocol.ndp.iw_packets=30",
            "protocol.ndp.spray=\"random\"",
        ],
    );
    assert!(mean_perm > mean_rand, "{mean_perm:.3} vs {mean_rand:.3}");
}

#[test]
#[ignore = "psim trims 9.6x less with path permutation, not the paper's 240x (nor 10x): known difference V4 in docs/validation.md"]
fn v4_sender_path_permutation_trims_far_less_than_random_spraying() {
    // §3.2 / §3.1.1: 0.01% of packets trimmed on uplinks with sender path permutation
    // vs 2.4% with per-packet random load balancing (128 hosts): read as at
    // least 10x fewer trims.
    let (_, _, trims_perm) = permutation_steady_state(8, &["protocol.ndp.iw_packets=30"]);
    let (_, _, trims_rand) = permutation_steady_state(
        8,
        &[
            "protocol.ndp.iw_packets=30",
            "protocol.ndp.spray=\"random\"",
        ],
    );
    assert!(
        trims_rand > 10 * trims_perm.max(1),
        "random {trims_rand} vs permuted {trims_perm}"
    );
}

#[test]
fn v9_throughput_rises_with_the_initial_window_then_plateaus() {
    // Fig. 11 / Fig. 17 shape on a 16-host permutation of 2 MB flows.
    let traffic = "[[traffic]]\nprotocol = \"ndp\"\npattern = \"permutation\"\n";
    let mean = |iw: u32| {
        let r = ndp(
            4,
            traffic,
            &["stop_us=3000", &format!("protocol.ndp.iw_packets={iw}")],
        );
        r.flows
            .iter()
            .map(|f| goodput_gbps(f, 3_000_000_000))
            .sum::<f64>()
            / r.flows.len() as f64
    };
    let (g2, g15, g30, g40) = (mean(2), mean(15), mean(30), mean(40));
    assert!(
        g2 < g15 && g15 <= g30 * 1.01,
        "rising: {g2:.2} {g15:.2} {g30:.2}"
    );
    assert!(
        (g40 - g30).abs() / g30 < 0.03,
        "plateau: {g30:.2} vs {g40:.2}"
    );
}

#[test]
fn v23_sender_limited_flows_saturate_both_bottlenecks() {
    // Fig. 21: A -> B, C, D, E and F -> E. A's uplink and E's downlink are both saturated.
    let r = ndp(
        8,
        "[[traffic]]\nprotocol = \"ndp\"\npattern = \"sender_limited\"\nhosts = [0, 20, 40, 60, 80, 100]\n",
        &["stop_us=3000"],
    );
    let over = 3_000_000_000;
    let a: Vec<f64> = r
        .flows
        .iter()
        .filter(|f| f.src == 0)
        .map(|f| goodput_gbps(f, over))
        .collect();
    let into_e: f64 = r
        .flows
        .iter()
        .filter(|f| f.dst == 80)
        .map(|f| goodput_gbps(f, over))
        .sum();
    assert_eq!(a.len(), 4);
    let a_total: f64 = a.iter().sum();
    // Payload maximum is 10 x 9000/9064 = 9.93 Gb/s; allow the first-RTT start-up.
    assert!(a_total >= 9.4, "A's uplink {a_total:.2} Gb/s");
    assert!(into_e >= 9.4, "E's downlink {into_e:.2} Gb/s");
    let (lo, hi) = (
        a.iter().cloned().fold(f64::MAX, f64::min),
        a.iter().cloned().fold(0.0, f64::max),
    );
    assert!(hi <= lo * 1.5, "A's flows share roughly equally: {a:?}");
}

#[test]
fn ndp_runs_are_identical_across_shard_counts() {
    let text = "seed = 3\n[topology]\nkind = \"fattree\"\nk = 4\n[switch.queue]\nkind = \"ndp\"\n[[traffic]]\nprotocol = \"ndp\"\n\
                pattern = \"incast\"\nreceiver = 5\nsenders = 15\nsize_bytes = 300000\n";
    let s = scenario(text, &[]);
    let one = run(&s, 1, 1);
    for (shards, threads) in [(2, 2), (3, 1), (8, 2)] {
        assert_eq!(run(&s, shards, threads).csv, one.csv, "{shards} shards");
    }
}

#[test]
fn v10_pulls_are_spaced_one_mtu_at_the_receivers_link_rate() {
    // Fig. 12: median inter-PULL gap 7.2 us with 9000 B packets and 1.2 us with
    // 1500 B on 10 Gb/s. A 6 -> 1 incast keeps the receiver's pull queue busy.
    for (mtu, gap) in [(9000u64, 7_200_000u64), (1500, 1_200_000)] {
        let r = ndp(
            4,
            "[[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 6\nsize_bytes = 2000000\n",
            &[&format!("protocol.ndp.mtu_bytes={mtu}")],
        );
        let p = r.outcome.summary.pulls;
        assert_eq!(p.interval_ps, gap);
        assert_eq!(
            p.min_gap_ps,
            Some(gap),
            "no two PULLs closer than the interval"
        );
        // The median gap is the interval: well over half the gaps are exactly it.
        assert!(p.gaps_at_interval * 10 >= p.gaps * 9, "{p:?}");
    }
}

#[test]
fn v2_a_trimmed_packet_is_retransmitted_before_the_receiver_link_idles() {
    // Fig. 3: 9 senders under the receiver's ToR send one 9 KB packet each; the
    // 9th does not fit (queue_packets = 7 plus the one in service models the
    // figure's 8-packet port) and is trimmed. Its header overtakes the queued
    // data, the NACK and PULL bring the retransmission back before the queue
    // drains, so the receiver link never idles: the last packet lands exactly
    // 9 serialisations (and the one 64 B header) after the first starts.
    let text = "seed = 1\n[topology]\nkind = \"leafspine\"\nleaves = 2\nspines = 1\nhosts_per_leaf = 10\n\
                [switch.queue]\nkind = \"ndp\"\nqueue_packets = 7\n[[traffic]]\nprotocol = \"ndp\"\npattern = \"many_to_many\"\n\
                senders = [1,2,3,4,5,6,7,8,9]\nreceivers = [0]\nsize_bytes = 9000\n";
    let r = run(&scenario(text, &[]), 2, 2);
    let trimmed: Vec<_> = r.flows.iter().filter(|f| f.trims > 0).collect();
    assert_eq!(trimmed.len(), 1, "exactly one packet is trimmed");
    assert_eq!(trimmed[0].retransmissions, 1);
    let first_arrival_at_tor = ser10(9064) + 1_000_000;
    let last = r.flows.iter().map(|f| f.finish_ps.unwrap()).max().unwrap();
    assert_eq!(
        last,
        first_arrival_at_tor + 9 * ser10(9064) + ser10(64) + 1_000_000
    );
}

#[test]
fn v7_testbed_incast_last_flow_within_5_percent_of_optimal() {
    // Fig. 9: 7 -> 1 incast on the 8-server two-tier testbed (4 ToRs x 2 hosts, 2 spines),
    // responses of 10 KB to 1 MB. Paper: NDP's last flow within 5% of optimal.
    for size in [10_000u64, 100_000, 1_000_000] {
        let text = format!(
            "seed = 1\n[topology]\nkind = \"leafspine\"\nleaves = 4\nspines = 2\nhosts_per_leaf = 2\n[switch.queue]\nkind = \"ndp\"\n\
             [[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 7\nsize_bytes = {size}\n"
        );
        let r = run(&scenario(&text, &[]), 2, 2);
        // Strict lower bound: the first packet of the closest sender (same leaf)
        // reaches the receiver link after one serialisation and one propagation;
        // from then on every wire byte crosses that link back to back.
        let packets = size.div_ceil(9000);
        let wire = 7 * (size + packets * 64);
        let bound = ser10(size.min(9000) + 64) + 1_000_000 + ser10(wire) + 1_000_000;
        let last = r.flows.iter().map(|f| f.fct_ps.unwrap()).max().unwrap();
        assert!(last >= bound, "{size} B: faster than the bound");
        // NDP paces PULLs one MTU apart whatever they fetch, so each flow's
        // short last packet leaves the receiver link idle for the rest of its
        // 7.2 us pull slot (NDP behaviour, [P] §3.2; htsim paces the same way).
        let short = size - (packets - 1) * 9000;
        let slack = if short < 9000 {
            7 * (7_200_000 - ser10(short + 64))
        } else {
            0
        };
        assert!(
            last as f64 <= (bound + slack) as f64 * 1.05,
            "{size} B: last {last} vs bound {bound} + slack {slack}"
        );
        if size == 1_000_000 {
            assert!(
                last as f64 <= bound as f64 * 1.05,
                "1 MB: paper's 5% holds outright: {last} vs {bound}"
            );
        }
    }
}

#[test]
fn v3c_hundred_to_one_incast_of_135_kb_is_near_the_theoretical_best() {
    // Fig. 4(c) at reduced scale (k = 8 instead of 432 hosts): 100 -> 1 of 135 KB,
    // whole file in the first RTT (IW 23 > 15 packets). Paper: last packet 2% later
    // than the theoretical best, with many headers returned to sender.
    let r = ndp(8, "[[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 100\nsize_bytes = 135000\n", &[]);
    let last = r.flows.iter().map(|f| f.fct_ps.unwrap()).max().unwrap();
    let opt = optimum(&r.flows);
    assert!(
        last >= opt && last as f64 <= opt as f64 * 1.03,
        "last {last} vs optimum {opt}"
    );
    assert!(r.flows.iter().map(|f| f.bounces).sum::<u64>() > 0);
}

#[test]
fn v24_path_penalty_protects_flows_from_a_degraded_core_link() {
    // Fig. 22 at reduced scale: a k = 4 permutation with one core-pod link at
    // 1 Gb/s, IW 15, 20 ms. Paper: with path penalty NDP handles it well; without,
    // some flows fall to a fraction of line rate. Here with htsim's
    // return-to-sender only (A12, V24's *_rts runs): no timer runs, so the
    // penalty acts on NACKs and bounces alone. With timer resends the lift is
    // smaller at this scale (V24's status note in docs/validation.md).
    let traffic = "[[topology.degraded_links]]\ncore = 1\npod = 1\ngbps = 1\n";
    let text = format!(
        "seed = 1\nstop_us = 20000\n[topology]\nkind = \"fattree\"\nk = 4\n{traffic}[switch.queue]\nkind = \"ndp\"\n\
         [protocol.ndp]\niw_packets = 15\ntimeout_resends = false\n[[traffic]]\nprotocol = \"ndp\"\npattern = \"permutation\"\n"
    );
    let worst = |pen: bool| {
        let r = run(
            &scenario(&text, &[&format!("protocol.ndp.path_penalty={pen}")]),
            2,
            2,
        );
        assert!(r.flows.iter().all(|f| f.timeouts == 0));
        r.flows
            .iter()
            .map(|f| goodput_gbps(f, 20_000_000_000))
            .fold(f64::MAX, f64::min)
    };
    let (with, without) = (worst(true), worst(false));
    assert!(
        with > without + 1.0,
        "worst flow {with:.2} Gb/s with penalty vs {without:.2} without"
    );
}

#[test]
fn v1_cut_payload_collapses_where_ndp_does_not() {
    // Fig. 2: n unresponsive flows converge on one 10 Gb/s link (9 KB packets).
    // CP cuts payloads into the same FIFO, so headers take over the link and
    // phase effects starve some flows; NDP keeps every flow near its fair share.
    let share = |queue: &str, proto: &str, n: u32| -> (f64, f64) {
        let senders: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
        let text = format!(
            "seed = 1\nstop_us = 3000\n[topology]\nkind = \"leafspine\"\nleaves = 1\nspines = 1\nhosts_per_leaf = 33\n\
             [switch.queue]\nkind = \"{queue}\"\n[protocol.cbr]\npacket_bytes = 9064\n[[traffic]]\nprotocol = \"{proto}\"\n\
             pattern = \"many_to_many\"\nsenders = [{}]\nreceivers = [0]\nsize_bytes = 100000000\n",
            senders.join(",")
        );
        let r = run(&scenario(&text, &[]), 1, 1);
        let mut g: Vec<f64> = r
            .flows
            .iter()
            .map(|f| goodput_gbps(f, 3_000_000_000) / (10.0 / n as f64))
            .collect();
        g.sort_by(f64::total_cmp);
        let worst = g[..(g.len() / 10).max(1)].iter().sum::<f64>() / (g.len() / 10).max(1) as f64;
        (g.iter().sum::<f64>() / g.len() as f64, worst)
    };
    let (cp4, _) = share("cp", "cbr", 4);
    let (cp32, cp32_worst) = share("cp", "cbr", 32);
    let (ndp32, ndp32_worst) = share("ndp", "ndp", 32);
    assert!(
        cp32 < cp4 - 0.05,
        "CP's mean share must fall with more flows: {cp4:.2} -> {cp32:.2}"
    );
    assert!(cp32_worst < 0.25, "CP's worst 10% starve: {cp32_worst:.2}");
    assert!(
        ndp32 > 0.95 && ndp32_worst > 0.8,
        "NDP mean {ndp32:.2}, worst 10% {ndp32_worst:.2}"
    );
}

#[test]
fn v11_v12_jittered_pull_pacing_changes_little() {
    // §6 / Fig. 13: jittered pull spacing changes permutation throughput by about 1.2%,
    // and an incast's last-flow FCT shows "no discernible difference". The measured
    // jitter distribution is not given; we use uniform +-30% of the interval.
    let incast = "[[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 15\nsize_bytes = 450000\n";
    let last = |j: &str| {
        let r = ndp(4, incast, &[&format!("protocol.ndp.pull_jitter={j}")]);
        let p = r.outcome.summary.pulls;
        let at_interval = p.gaps_at_interval as f64 / p.gaps as f64;
        let fct = r.flows.iter().map(|f| f.fct_ps.unwrap()).max().unwrap() as f64;
        (fct, at_interval)
    };
    let ((perfect, exact0), (jittered, exact3)) = (last("0"), last("0.3"));
    // Guard: jitter must move the pulls, or "no difference" proves nothing.
    assert!(exact0 > 0.9, "perfect pacing: {exact0} of gaps exact");
    assert!(
        exact3 < 0.1,
        "jittered pacing: {exact3} of gaps still exact"
    );
    assert!(
        (jittered / perfect - 1.0).abs() < 0.01,
        "incast {perfect} vs {jittered}"
    );
    let perm = "[[traffic]]\nprotocol = \"ndp\"\npattern = \"permutation\"\n";
    let mean = |j: &str| {
        let r = ndp(
            4,
            perm,
            &[
                "stop_us=3000",
                "protocol.ndp.mtu_bytes=1500",
                &format!("protocol.ndp.pull_jitter={j}"),
            ],
        );
        r.flows
            .iter()
            .map(|f| goodput_gbps(f, 3_000_000_000))
            .sum::<f64>()
            / r.flows.len() as f64
    };
    let (p, q) = (mean("0"), mean("0.3"));
    // Not the paper's claim (a 1.2% change, V11: a known difference, since the
    // paper's jitter distribution is not given); this only bounds the change.
    assert!(
        (q / p - 1.0).abs() < 0.02,
        "permutation {p:.3} vs {q:.3} Gb/s"
    );
}

#[test]
fn v16_phost_over_drop_tail_recovers_by_timeouts_where_ndp_does_not() {
    // §6.2: pHost on 8-packet drop-tail buffers loses the first-RTT burst and must
    // time out; NDP's trimming turns the same overload into NACKs.
    let traffic = "[[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 15\nsize_bytes = 450000\n";
    let n = ndp(4, traffic, &[]);
    let p = ndp(
        4,
        traffic,
        &[
            "traffic.0.protocol=\"phost_standin\"",
            "switch.queue.kind=\"droptail\"",
            "switch.queue.queue_packets=8",
        ],
    );
    let timeouts = |r: &Ran| r.flows.iter().map(|f| f.timeouts).sum::<u64>();
    let last = |r: &Ran| r.flows.iter().map(|f| f.fct_ps.unwrap()).max().unwrap();
    assert_eq!(timeouts(&n), 0);
    assert!(timeouts(&p) > 100, "pHost timeouts {}", timeouts(&p));
    assert!(r_trims(&p) == 0 && r_trims(&n) > 0);
    assert!(
        last(&p) >= last(&n),
        "pHost {} vs NDP {}",
        last(&p),
        last(&n)
    );
}

fn r_trims(r: &Ran) -> u64 {
    r.flows.iter().map(|f| f.trims).sum()
}

#[test]
fn v3d_after_the_first_window_a_large_incast_barely_trims() {
    // Fig. 4(d) at reduced scale (k = 8): 100 -> 1 of 1350 KB. Paper: the first
    // window behaves like (c); the rest has no trimming. Without per-packet
    // timestamps (issue 6) we check the count: packets trimmed (NACKed or
    // bounced) over the whole run barely exceed the 100 x 23 first-window packets,
    // i.e. almost none of the remaining ~12,700 packets is trimmed.
    let r = ndp(8, "[[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 100\nsize_bytes = 1350000\n", &[]);
    let trimmed: u64 = r.flows.iter().map(|f| f.trims + f.bounces).sum();
    let first_window = 100 * 23;
    let rest = 100 * 150 - first_window;
    assert!(
        trimmed <= first_window + rest / 20,
        "{trimmed} trimmed packets: more than 5% of the post-first-window packets"
    );
    let last = r.flows.iter().map(|f| f.fct_ps.unwrap()).max().unwrap();
    let opt = optimum(&r.flows);
    assert!(
        last >= opt && last as f64 <= opt as f64 * 1.01,
        "last {last} vs optimum {opt}"
    );
}

#[test]
#[ignore = "fails: unresponsive CBR through the NDP switch starves its worst 10% (V1.5 in docs/validation.md); the model fix is the fidelity issue's"]
fn v1_unresponsive_cbr_through_the_ndp_switch_keeps_every_flow_near_its_share() {
    // Fig. 2's NDP half: the same 32 unresponsive CBR flows, through NDP's
    // switch (trimming, 10:1 round robin, the tail/head coin) instead of CP's.
    let senders: Vec<String> = (1..=32).map(|i| i.to_string()).collect();
    let text = format!(
        "seed = 1\nstop_us = 3000\n[topology]\nkind = \"leafspine\"\nleaves = 1\nspines = 1\nhosts_per_leaf = 33\n\
         [switch.queue]\nkind = \"ndp\"\n[protocol.cbr]\npacket_bytes = 9064\n[[traffic]]\nprotocol = \"cbr\"\n\
         pattern = \"many_to_many\"\nsenders = [{}]\nreceivers = [0]\nsize_bytes = 100000000\n",
        senders.join(",")
    );
    let r = run(&scenario(&text, &[]), 1, 1);
    let mut share: Vec<f64> = r
        .flows
        .iter()
        .map(|f| goodput_gbps(f, 3_000_000_000) / (10.0 / 32.0))
        .collect();
    share.sort_by(f64::total_cmp);
    let mean = share.iter().sum::<f64>() / share.len() as f64;
    // "NDP avoids both": mean within 10% of the fair share, worst 10% within 20% of the mean.
    assert!(mean > 0.9, "mean share {mean:.2}");
    assert!(share[3] > 0.8 * mean, "worst 10%: {:?}", &share[..4]);
}

/// Must show 1 of issue 19: with `profile = "htsim"`, one 2 MB NDP flow
/// across the core of the 432-host FatTree (k = 12, 100 Gb/s, 4000 B
/// payloads, IW 50, 35-packet queues, 1 µs links) completes exactly at the
/// closed form below, at the receiver and at the sender. Nothing here is
/// taken from psim's output; the derivation:
///
/// * A data packet is 4000 + 64 B: S = 4064·8 bits at 100 Gb/s = 325.12 ns
///   per hop; a header (ACK, PULL) h = 64·8 bits = 5.12 ns. Six hops each
///   way (host, ToR, agg, core, agg, ToR, host), D = 1 µs each.
/// * The htsim profile paces pulls at one packet with its header at 0.99 of
///   the link rate: I = round(S / 0.99) = 328.404 ns > S.
/// * The sender puts its 50-packet first window on the NIC at 0; packet i
///   leaves the NIC at (i+1)·S as long as each later packet's PULL is back
///   before the NIC would idle (checked below). Every path has the same six
///   hops and packets leave S apart, so none waits in the fabric: packet i
///   arrives at a_i = (i+6)·S + 6·D.
/// * The receiver ACKs each packet at once. The first ACK carries PULL 1;
///   its pacer sends PULL k at a_0 + (k−1)·I while requests are pending
///   (they are: packets arrive every S < I). ACKs and PULLs share the
///   receiver's NIC, first come first served, h each; beyond it they keep
///   their spacing (≥ h) on equal-length paths, so each reaches the sender
///   6·(h + D) after it left the receiver's NIC queue.
/// * Receiver completion: a_499. Sender completion: ACK 499's arrival, after
///   any PULL still on the receiver's NIC when it was sent.
#[test]
fn lone_flow_under_the_htsim_profile_completes_at_the_closed_form() {
    const PKTS: u64 = 500; // 2,000,000 B in 4000 B payloads
    const IW: u64 = 50;
    let s: u64 = 4064 * 8 * 10; // ps at 100 Gb/s (10 ps per bit)
    let h: u64 = 64 * 8 * 10;
    let d: u64 = 1_000_000;
    let pull = (s as f64 / 0.99).round() as u64;
    let arrive = |i: u64| (i + 6) * s + 6 * d;
    let pull_at = |k: u64| arrive(0) + (k - 1) * pull;

    // The receiver's NIC: ACK i at arrive(i) (ACK 0 is PULL 1), PULL k ≥ 2 at
    // pull_at(k), served in order of emission, h each. (time, is_ack, index).
    let mut emitted: Vec<(u64, bool, u64)> = (0..PKTS).map(|i| (arrive(i), true, i)).collect();
    emitted.extend(
        (2..)
            .map(|k| (pull_at(k), false, k))
            .take_while(|&(t, _, _)| t < arrive(PKTS - 1)),
    );
    emitted.sort();
    let mut free = 0u64;
    let mut ack_left = vec![0; PKTS as usize];
    let mut pull_left = vec![u64::MAX; PKTS as usize + 1];
    for &(t, is_ack, i) in &emitted {
        free = free.max(t) + h;
        if is_ack {
            ack_left[i as usize] = free;
        } else {
            pull_left[i as usize] = free;
        }
    }
    pull_left[1] = ack_left[0];
    let back = 6 * (h + d) - h; // from the end of the receiver NIC's serialisation
                                // The premise: PULL k (which releases packet IW + k − 1) reaches the sender
                                // before that packet's turn on the back-to-back NIC.
    for k in 1..=PKTS - IW {
        assert!(
            pull_left[k as usize] + back <= (IW + k - 1) * s,
            "PULL {k} would leave the sender's NIC idle"
        );
    }
    let rx = arrive(PKTS - 1);
    let tx = ack_left[PKTS as usize - 1] + back;
    // 170.1856 µs and 176.218136 µs: the last ACK waited 1.816 ns behind PULL 495.
    assert_eq!((rx, tx), (170_185_600, 176_218_136));

    let text = "seed = 1\nprofile = \"htsim\"\n\
        [topology]\nkind = \"fattree\"\nk = 12\nlink_gbps = 100\nlatency_ns = 1000\n\
        [switch.queue]\nkind = \"ndp\"\nqueue_packets = 35\n\
        [protocol.ndp]\niw_packets = 50\nmtu_bytes = 4000\n\
        [[traffic]]\nprotocol = \"ndp\"\npattern = \"many_to_many\"\nsenders = [0]\n\
        receivers = [431]\nsize_bytes = 2000000\n";
    let r = run(&scenario(text, &[]), 1, 1);
    let f = &r.flows[0];
    assert_eq!((f.src, f.dst, f.start_ps), (0, 431, 0));
    assert_eq!((f.trims, f.retransmissions, f.bounces), (0, 0, 0));
    assert_eq!(f.packets_sent, PKTS);
    assert_eq!(f.finish_ps, Some(rx), "receiver side");
    assert_eq!(f.sender_finish_ps, Some(tx), "sender side");
}

#[test]
fn a_failed_core_link_is_left_out_after_a_few_losses() {
    // [P] §3.2.3: packets that reach a failed link before routing removes it
    // are lost, and the sender's path loss counter takes that path out of its
    // list. One 4 MB flow (445 packets, IW 23) from pod 0 to pod 3 of a k = 4
    // FatTree (4 paths, one per core); core 1's link to pod 3 loses
    // everything, both ways. ACKs return on their data packet's path
    // (`control_spray = false`): the loss counter is the sender's, and a
    // receiver spraying its ACKs over all paths would lose a quarter of them
    // to the failed link whatever the sender does.
    let text = "seed = 1\n[topology]\nkind = \"fattree\"\nk = 4\n\
                [[topology.degraded_links]]\ncore = 1\npod = 3\nloss_rate = 1.0\n\
                [switch.queue]\nkind = \"ndp\"\n[protocol.ndp]\ncontrol_spray = false\n\
                [[traffic]]\nprotocol = \"ndp\"\npattern = \"many_to_many\"\n\
                senders = [0]\nreceivers = [12]\nsize_bytes = 4000000\n";
    let (packets, iw) = (4_000_000u64.div_ceil(9000), 23u64);
    let go = |pen: bool| {
        let r = run(
            &scenario(text, &[&format!("protocol.ndp.path_penalty={pen}")]),
            2,
            2,
        );
        let f = &r.flows[0];
        (
            f.fct_ps.expect("the flow finishes"),
            f.timeouts,
            optimum(&r.flows),
        )
    };
    let (fct, timeouts, opt) = go(true);
    // A lost packet returns no pull, so at most one window (IW) is lost before
    // the first timeout; once the path is an outlier only one probe goes to
    // it per doubling of its exclusion (2, 4, 8, ... reshuffles).
    let bound = iw + (packets as f64).log2().ceil() as u64 + 1;
    assert!(timeouts <= bound, "{timeouts} timeouts, bound {bound}");
    // One stall of at most one RTO (1 ms, +25% jitter) over the optimum.
    assert!(fct <= opt + 1_250_000_000, "FCT {fct} vs optimum {opt}");
    // Without the penalty a quarter of the packets keep going to the failed
    // link, and each stalls the flow's window until its timeout.
    let (fct_off, timeouts_off, _) = go(false);
    assert!(
        timeouts_off >= packets / 8,
        "{timeouts_off} timeouts without the penalty"
    );
    assert!(
        fct_off > opt + 1_250_000_000,
        "FCT without the penalty {fct_off} vs {opt}"
    );
}

#[test]
fn every_flow_finishes_although_its_last_pull_is_lost_on_a_failed_link() {
    // Two failed core links of a k = 4 FatTree, websearch flows back to
    // back from every host: the receivers spray their PULLs over every path
    // (A19), so some PULLs are lost. The next PULL's counter makes up for a
    // lost one, but a flow's last PULL has no next, and the NACKed packets
    // it would have pulled have no timer. The receiver resends its last
    // PULL after an RTO of silence (`resend_last_pull`, the default) and
    // every flow finishes; without it, as in htsim, some never do.
    let text = "seed = 2\n[topology]\nkind = \"fattree\"\nk = 4\n\
                [[topology.degraded_links]]\ncore = 1\npod = 3\nloss_rate = 1.0\n\
                [[topology.degraded_links]]\ncore = 2\npod = 1\nloss_rate = 1.0\n\
                [switch.queue]\nkind = \"ndp\"\n\
                [[traffic]]\nprotocol = \"ndp\"\npattern = \"closed_loop\"\n\
                connections_per_host = 1\nthink_time_us = 10\nsize_dist = \"websearch\"\nstop_us = 20000\n";
    let run_with = |on: bool| {
        run(
            &scenario(text, &[&format!("protocol.ndp.resend_last_pull={on}")]),
            2,
            2,
        )
    };
    let on = run_with(true);
    assert!(
        on.outcome.summary.packets.dropped > 0,
        "the failed links drop"
    );
    assert!(on.flows.len() > 50);
    assert!(on.flows.iter().all(|f| f.fct_ps.is_some()));
    let off = run_with(false);
    let stalled = off.flows.iter().filter(|f| f.fct_ps.is_none()).count();
    assert!(stalled > 0, "a last PULL is lost in this setting");
}

#[test]
fn every_flow_of_an_overloaded_closed_loop_finishes_although_pulls_overtake_nacks() {
    // V25's workload (Fig. 23) on the 64-host, 4:1 oversubscribed tree: a
    // trimmed packet's PULL can reach the sender before its NACK, over
    // another path. Kept for that NACK (`keep_early_pulls`, the default),
    // every flow finishes; spent on nothing, as htsim does, some flows
    // wait for ever for a PULL already spent (no timer runs on a NACKed
    // packet, and nothing is dropped here).
    let traffic = "[[traffic]]\nprotocol = \"ndp\"\npattern = \"closed_loop\"\nconnections_per_host = 5\nthink_time_us = 1442.7\nsize_dist = \"fb_web\"\nstop_us = 10000\n";
    let run_with = |keep: &str| {
        let text = format!(
            "seed = 1\n[topology]\nkind = \"fattree\"\nk = 4\noversubscription = 4\n[switch.queue]\nkind = \"ndp\"\n{traffic}"
        );
        run(
            &scenario(&text, &[&format!("protocol.ndp.keep_early_pulls={keep}")]),
            2,
            2,
        )
    };
    let kept = run_with("true");
    assert_eq!(kept.outcome.summary.packets.dropped, 0);
    assert!(kept.flows.len() > 1000);
    assert!(kept.flows.iter().all(|f| f.fct_ps.is_some()));
    let spent = run_with("false");
    assert_eq!(spent.outcome.summary.packets.dropped, 0);
    let stalled = spent.flows.iter().filter(|f| f.fct_ps.is_none()).count();
    assert!(stalled > 0, "the race does occur in this setting");
}
