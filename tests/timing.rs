//! Closed-form checks of the engine: serialisation and propagation
//! arithmetic, line-rate delivery, and conservation of packets.

use psim_integration_tests::{run, scenario};

/// Serialisation time in ps of `bytes` at `gbps`, computed independently of psim.
fn ser(bytes: u64, gbps: u64) -> u64 {
    bytes * 8 * 1000 / gbps
}

fn one_flow(extra: &str, src: u32, dst: u32, size: u64) -> String {
    format!(
        "seed = 1\n{extra}\n[[traffic]]\nprotocol = \"cbr\"\npattern = \"many_to_many\"\nsenders = [{src}]\nreceivers = [{dst}]\nsize_bytes = {size}\n"
    )
}

#[test]
fn one_packet_crosses_six_links_in_six_hops_of_serialisation_plus_propagation() {
    // 1436 B payload + 64 B header = one 1500 B packet, host 0 (pod 0) to host 15 (pod 3).
    let text = one_flow(
        "[topology]\nkind = \"fattree\"\nk = 4\nlink_gbps = 10\nlatency_ns = 1000",
        0,
        15,
        1436,
    );
    for shards in [1, 2, 3, 8] {
        let r = run(&scenario(&text, &[]), shards, 2);
        let f = &r.flows[0];
        assert_eq!(f.packets_received, 1);
        assert_eq!(
            f.fct_ps,
            Some(6 * (ser(1500, 10) + 1_000_000)),
            "{shards} shards"
        );
    }
}

#[test]
fn per_tier_rates_and_latencies_add_up_along_the_path() {
    let topo = "[topology]\nkind = \"fattree\"\nk = 4\n[topology.host_link]\ngbps = 10\nlatency_ns = 500\n\
                [topology.tor_link]\ngbps = 40\nlatency_ns = 1000\n[topology.core_link]\ngbps = 100\nlatency_ns = 2000";
    let r = run(&scenario(&one_flow(topo, 0, 15, 1436), &[]), 4, 2);
    let expect = 2 * (ser(1500, 10) + 500_000)
        + 2 * (ser(1500, 40) + 1_000_000)
        + 2 * (ser(1500, 100) + 2_000_000);
    assert_eq!(r.flows[0].fct_ps, Some(expect));
    // Same ToR: two links. Same pod: four.
    let r = run(&scenario(&one_flow(topo, 0, 1, 1436), &[]), 1, 1);
    assert_eq!(r.flows[0].fct_ps, Some(2 * (ser(1500, 10) + 500_000)));
    let r = run(&scenario(&one_flow(topo, 0, 2, 1436), &[]), 1, 1);
    assert_eq!(
        r.flows[0].fct_ps,
        Some(2 * (ser(1500, 10) + 500_000) + 2 * (ser(1500, 40) + 1_000_000))
    );
}

#[test]
fn a_multi_packet_flow_pipelines_store_and_forward() {
    // n full packets at line rate: the last leaves the source at (n-1) x ser and
    // then needs 6 x (ser + prop); nothing queues because every link has the same rate.
    let n = 50u64;
    let text = one_flow("[topology]\nkind = \"fattree\"\nk = 4", 0, 15, n * 1436);
    let r = run(&scenario(&text, &[]), 2, 2);
    assert_eq!(
        r.flows[0].fct_ps,
        Some((n - 1) * ser(1500, 10) + 6 * (ser(1500, 10) + 1_000_000))
    );
    assert_eq!(r.flows[0].bytes_received, n * 1436);
}

#[test]
fn line_rate_cbr_delivers_exactly_the_expected_bytes_by_time_t() {
    // A long-lived flow at 10 Gb/s from host 0 to host 15; stop at t = 100 us.
    // Packet i is sent at i x 1.2 us and arrives at 13.2 us + i x 1.2 us; events
    // at or after the stop time are not processed.
    let text = "seed = 1\nstop_us = 100\n[topology]\nkind = \"fattree\"\nk = 4\n[[traffic]]\nprotocol = \"cbr\"\n\
         pattern = \"background\"\nflows_per_host = 1\ndestination = \"permutation\"\n";
    let stop = 100_000_000u64;
    let r = run(&scenario(text, &[]), 3, 2);
    for f in &r.flows {
        let per = ser(1500, 10);
        let hops = match (f.src / 4 == f.dst / 4, f.src / 2 == f.dst / 2) {
            (_, true) => 2,
            (true, false) => 4,
            (false, false) => 6,
        };
        let first = hops * (per + 1_000_000);
        let sent = stop.div_ceil(per);
        let expected_delivered = (stop - first).div_ceil(per);
        assert_eq!(
            f.packets_sent, sent,
            "flow {} {}->{}",
            f.flow_id, f.src, f.dst
        );
        // Flows sharing a link (ECMP collisions) queue, so they may deliver less, never more.
        assert!(
            f.packets_received <= expected_delivered,
            "flow {}: {} > {}",
            f.flow_id,
            f.packets_received,
            expected_delivered
        );
        assert_eq!(f.bytes_received, f.packets_received * 1436);
    }
    // At least one flow has its path to itself and meets the bound exactly.
    assert!(r.flows.iter().any(|f| {
        let hops = if f.src / 2 == f.dst / 2 {
            2
        } else if f.src / 4 == f.dst / 4 {
            4
        } else {
            6
        };
        f.packets_received == (stop - hops * (ser(1500, 10) + 1_000_000)).div_ceil(ser(1500, 10))
    }));
    assert!(r.outcome.summary.conserved());
}

#[test]
fn an_incast_never_beats_the_receivers_line_rate() {
    // 8 senders at 10 Gb/s into one 10 Gb/s receiver for 200 us, large buffers.
    let text = "seed = 2\nstop_us = 200\n[topology]\nkind = \"fattree\"\nk = 4\n[switch.queue]\nkind = \"droptail\"\nqueue_packets = 1000\n\
                [[traffic]]\nprotocol = \"cbr\"\npattern = \"incast\"\nreceiver = 0\nsenders = 8\nsize_bytes = 10000000\n";
    let r = run(&scenario(text, &[]), 2, 2);
    let received: u64 = r.flows.iter().map(|f| f.packets_received).sum();
    // The receiver link carries at most one 1500 B packet per 1.2 us after the first arrival (>= 2 hops).
    let bound = (200_000_000 - 2 * (ser(1500, 10) + 1_000_000)) / ser(1500, 10) + 1;
    assert!(received <= bound, "{received} > {bound}");
    // With queues this large the receiver link is saturated once the first
    // packets arrive: at most a few packets short of the bound (the senders sit
    // 2 to 6 hops away, so the link starts at most 4 x 2.2 us = 8 packets late).
    assert!(received + 8 >= bound, "{received} far below {bound}");
    let s = &r.outcome.summary;
    assert_eq!(s.packets.dropped, 0);
    assert!(s.conserved());
    assert!(s.queued > 0, "the receiver's ToR port must hold a backlog");
}

#[test]
fn drops_are_counted_and_conserved() {
    let text = "seed = 2\nstop_us = 100\n[topology]\nkind = \"fattree\"\nk = 4\n[switch.queue]\nkind = \"droptail\"\nqueue_packets = 4\n\
                [[traffic]]\nprotocol = \"cbr\"\npattern = \"incast\"\nreceiver = 0\nsenders = 8\nsize_bytes = 1000000\n";
    let r = run(&scenario(text, &[]), 3, 2);
    let s = &r.outcome.summary;
    assert!(s.packets.dropped > 0);
    assert_eq!(s.packets.dropped, s.ports.dropped);
    assert!(s.conserved(), "{s:?}");
    let sent: u64 = r.flows.iter().map(|f| f.packets_sent).sum();
    assert_eq!(sent, s.packets.created);
}
