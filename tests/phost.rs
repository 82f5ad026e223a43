//! pHost (`psim/src/transport/phost/`) in whole runs: a lone flow at the
//! closed form, on free tokens and token-clocked; a permutation and an
//! incast over 8-packet drop-tail buffers that lose packets and still
//! complete; the same results whatever the shard and thread counts.

use psim_integration_tests::{run, scenario, ser10};

/// Two leaves of two hosts, two spines, 10 Gb/s and 1 µs everywhere: a flow
/// from host 2 to host 0 crosses 4 links.
const LEAFSPINE: &str = "seed = 3\n[topology]\nkind = \"leafspine\"\nleaves = 2\nspines = 2\n\
    hosts_per_leaf = 2\nlink_gbps = 10\nlatency_ns = 1000\n[topology.uplink]\ngbps = 10\n\
    latency_ns = 1000\n";
const LINKS: u64 = 4;
const LATENCY: u64 = 1_000_000;

fn lone(size: u64, phost: &str) -> u64 {
    let text = format!(
        "{LEAFSPINE}[protocol.phost]\n{phost}\n[[traffic]]\nprotocol = \"phost\"\n\
         pattern = \"incast\"\nreceiver = 0\nsender_hosts = [2]\nsize_bytes = {size}\n"
    );
    let r = run(&scenario(&text, &[]), 1, 1);
    assert_eq!(r.flows.len(), 1);
    let f = &r.flows[0];
    assert_eq!(f.bytes_received, size);
    assert_eq!(f.retransmissions, 0);
    f.fct_ps.expect("finished")
}

#[test]
fn a_lone_short_flow_on_free_tokens_completes_at_the_closed_form() {
    // 7000 B = 4 full packets (1460 + 64 B) and one of 1160 + 64 B, all on
    // free tokens. The 64 B RTS leaves first, the data follows back to back.
    // Every later hop forwards the full packets back to back too, so the
    // short last packet, right behind them, ends one full packet's time
    // after its predecessor at every hop: it reaches the receiver 3 full
    // packet times after it leaves the NIC, plus every link's latency.
    let fct = lone(7_000, "");
    let leaves_nic = ser10(64) + 4 * ser10(1_524) + ser10(1_224);
    assert_eq!(
        fct,
        leaves_nic + (LINKS - 1) * ser10(1_524) + LINKS * LATENCY
    );
}

#[test]
fn a_lone_long_flow_is_token_clocked_at_line_rate() {
    // 100 full packets, no free tokens: the RTS crosses, the receiver sends
    // one token per slot (a full packet's time), each token crosses back and
    // releases one data packet. A window above the RTT and timeouts above it
    // keep the downgrade and the resend out of the way.
    let fct = lone(
        146_000,
        "window_packets = 64\nwindow_timeout_slots = 200\nresend_timeout_slots = 40",
    );
    let control = LINKS * ser10(64) + LINKS * LATENCY;
    let data = LINKS * ser10(1_524) + LINKS * LATENCY;
    assert_eq!(fct, control + 99 * ser10(1_524) + control + data);
}

/// `phost` in the NDP paper's setting ([P] §6.2): every flow bursts 23
/// packets of 9000 B in its first RTT, over 8-packet drop-tail FIFOs.
fn over_drop_tail(traffic: &str) -> String {
    format!(
        "seed = 9\n[topology]\nkind = \"fattree\"\nk = 4\n[switch.queue]\nkind = \"droptail\"\n\
         queue_packets = 8\n[protocol.phost]\nmss_bytes = 9000\nfree_tokens = \"first_rtt\"\n\
         initial_packets = 23\nwindow_packets = 16\nctrl_timeout_us = 200\n{traffic}"
    )
}

fn completes_with_losses(text: &str) {
    let r = run(&scenario(text, &[]), 1, 1);
    assert!(r.outcome.summary.conserved());
    assert!(!r.flows.is_empty());
    for f in &r.flows {
        assert_eq!(Some(f.bytes_received), f.size_bytes, "flow {}", f.flow_id);
    }
    let resent: u64 = r.flows.iter().map(|f| f.retransmissions).sum();
    assert!(
        resent > 0,
        "drop-tail lost nothing: the test shows no recovery"
    );
    for (shards, threads) in [(2, 1), (4, 2)] {
        let other = run(&scenario(text, &[]), shards, threads);
        assert_eq!(other.csv, r.csv, "{shards} shards x {threads} threads");
    }
}

#[test]
fn an_incast_over_drop_tail_loses_its_first_rtt_and_completes() {
    completes_with_losses(&over_drop_tail(
        "[[traffic]]\nprotocol = \"phost\"\npattern = \"incast\"\nreceiver = 0\nsenders = 15\n\
         size_bytes = 450000\n",
    ));
}

#[test]
fn a_permutation_over_drop_tail_loses_packets_and_completes() {
    completes_with_losses(&over_drop_tail(
        "[[traffic]]\nprotocol = \"phost\"\npattern = \"permutation\"\nsize_bytes = 2000000\n",
    ));
}
