//! NDP reproductions (Handley et al., SIGCOMM 2017; targets from
//! shared/spec/ndp.md §3) at a scale that runs in seconds. Each test names
//! its figure. Defaults everywhere: 10 Gb/s, 1 µs links, 9000 B payloads
//! (9064 B on the wire), 8-packet data queues, IW 23 unless stated.

use psim::trace::FlowRecord;
use psim_integration_tests::{run, scenario, Ran};

/// Serialisation of `bytes` at 10 Gb/s, ps.
fn ser10(bytes: u64) -> u64 {
    bytes * 800
}

/// Spec A16, computed here independently of psim: every wire byte crosses the
/// receiver's link back to back, plus one full packet's store-and-forward on
/// the 5 other hops and 6 propagation delays.
fn optimum(flows: &[FlowRecord]) -> u64 {
    let wire: u64 = flows
        .iter()
        .map(|f| f.size_bytes.unwrap() + f.size_bytes.unwrap().div_ceil(9000) * 64)
        .sum();
    ser10(wire) + 5 * ser10(9064) + 6 * 1_000_000
}

fn ndp(k: u32, traffic: &str, extra: &[&str]) -> Ran {
    let text = format!(
        "seed = 1\n[topology]\nkind = \"fattree\"\nk = {k}\n[switch]\nqueue = \"ndp\"\n{traffic}"
    );
    run(&scenario(&text, extra), 2, 2)
}

fn goodput_gbps(f: &FlowRecord, over_ps: u64) -> f64 {
    f.bytes_received as f64 * 8.0 / (over_ps as f64 / 1e12) / 1e9
}

#[test]
fn a_lone_flow_finishes_at_the_store_and_forward_optimum() {
    // 1 MB across the core of an idle k = 4 FatTree: the sender's NIC is busy
    // back to back and the last (short) packet trails the full one before it on
    // every hop, so completion = all wire bytes + 5 full-packet hops + 6 props.
    let r = ndp(4, "[[traffic]]\nprotocol = \"ndp\"\npattern = \"many_to_many\"\nsenders = [0]\nreceivers = [10]\nsize_bytes = 1000000\n", &[]);
    let f = &r.flows[0];
    assert_eq!(f.fct_ps, Some(optimum(&r.flows)));
    assert_eq!(f.ideal_fct_ps, f.fct_ps);
    assert_eq!((f.trims, f.retransmissions, f.timeouts), (0, 0, 0));
}

#[test]
fn v15_incast_is_within_2_percent_of_optimal_and_fair() {
    // Fig. 16 at reduced scale: 12 senders in other pods, 450 KB each, into host 0.
    // Paper: NDP within about 1% of optimal; slowest flow <= 1.2x the fastest.
    let r = ndp(
        4,
        "[[traffic]]\nprotocol = \"ndp\"\npattern = \"many_to_many\"\nsenders = [4,5,6,7,8,9,10,11,12,13,14,15]\nreceivers = [0]\nsize_bytes = 450000\n",
        &[],
    );
    let fcts: Vec<u64> = r
        .flows
        .iter()
        .map(|f| f.fct_ps.expect("finished"))
        .collect();
    let last = *fcts.iter().max().unwrap();
    let first = *fcts.iter().min().unwrap();
    let opt = optimum(&r.flows);
    assert!(
        last >= opt,
        "faster than the line-rate bound: {last} < {opt}"
    );
    assert!(
        (last as f64) <= opt as f64 * 1.02,
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
    let last = r
        .flows
        .iter()
        .map(|f| f.fct_ps.expect("finished"))
        .max()
        .unwrap();
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
    assert!(
        rise_with * 2 < rise_without,
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
fn v4_sender_path_permutation_trims_far_less_than_random_spraying() {
    // §3.2 / §3.1.1: 0.01% of packets trimmed on uplinks with sender path permutation
    // vs 2.4% with per-packet random load balancing (128 hosts).
    let (mean_perm, _, trims_perm) = permutation_steady_state(8, &["protocol.ndp.iw_packets=30"]);
    let (mean_rand, _, trims_rand) = permutation_steady_state(
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
    // [O]/§3.1.1: path permutation gives more capacity than random choice with 8-packet queues.
    assert!(mean_perm > mean_rand, "{mean_perm:.3} vs {mean_rand:.3}");
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
    let text = "seed = 3\n[topology]\nkind = \"fattree\"\nk = 4\n[switch]\nqueue = \"ndp\"\n[[traffic]]\nprotocol = \"ndp\"\n\
                pattern = \"incast\"\nreceiver = 5\nsenders = 15\nsize_bytes = 300000\n";
    let s = scenario(text, &[]);
    let one = run(&s, 1, 1);
    for (shards, threads) in [(2, 2), (3, 1), (8, 2)] {
        assert_eq!(run(&s, shards, threads).csv, one.csv, "{shards} shards");
    }
}
