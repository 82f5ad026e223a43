//! pFabric's transport (`psim/src/transport/pfabric.rs`) over `pfabric`
//! switches, and the edge rank policies (`psim/src/net/edge.rs`), in whole
//! runs on a small leaf-spine.

use psim_integration_tests::{run, scenario};

/// A 2 MB flow 4 → 0 from time 0, and three 20 KB flows to the same
/// receiver from other racks, one every 100 µs: each short flow meets the
/// long one at host 0's ToR port.
fn pfabric(priority: &str) -> String {
    let mut s = format!(
        "seed = 7\n[topology]\nkind = \"leafspine\"\nleaves = 4\nspines = 2\nhosts_per_leaf = 4\n\
         link_gbps = 10\nlatency_ns = 1000\n[topology.uplink]\ngbps = 40\nlatency_ns = 1000\n\
         [switch.queue]\nkind = \"pfabric\"\n[host.queue]\nkind = \"pfabric\"\n\
         [protocol.pfabric]\npriority = \"{priority}\"\n\
         [[traffic]]\nprotocol = \"pfabric\"\npattern = \"incast\"\nreceiver = 0\nsender_hosts = [4]\nsize_bytes = 2000000\n"
    );
    for (i, host) in [8, 12, 5].into_iter().enumerate() {
        s += &format!(
            "[[traffic]]\nprotocol = \"pfabric\"\npattern = \"incast\"\nreceiver = 0\n\
             sender_hosts = [{host}]\nsize_bytes = 20000\nstart_us = {}\n",
            100 * (i + 1)
        );
    }
    s
}

#[test]
fn short_flows_finish_near_their_ideal_fct_while_the_long_one_yields() {
    let r = run(&scenario(&pfabric("remaining"), &[]), 1, 1);
    let s = &r.outcome.summary;
    assert!(s.conserved(), "{s:?}");
    assert_eq!(r.flows.len(), 4);
    for f in &r.flows {
        assert_eq!(
            Some(f.bytes_received),
            f.size_bytes,
            "flow {} completes",
            f.flow_id
        );
    }
    let long = r
        .flows
        .iter()
        .find(|f| f.size_bytes == Some(2_000_000))
        .unwrap();
    let shorts: Vec<_> = r
        .flows
        .iter()
        .filter(|f| f.size_bytes == Some(20_000))
        .collect();
    for f in &shorts {
        let (fct, ideal) = (f.fct_ps.unwrap(), f.ideal_fct_ps.unwrap());
        assert!(
            (fct as f64) < 1.15 * ideal as f64,
            "short flow {}: FCT {fct} ps vs ideal {ideal} ps",
            f.flow_id
        );
        assert!(f.finish_ps < long.finish_ps);
    }
    // The long flow still gets the rest of the link: 2 MB + 60 KB at 10 Gb/s
    // is 1.65 ms of wire; it is done within twice its ideal.
    let (fct, ideal) = (long.fct_ps.unwrap(), long.ideal_fct_ps.unwrap());
    assert!(fct < 2 * ideal, "long flow: {fct} vs {ideal}");
    // Without pFabric's switches and ranks (TCP over drop-tail) the short
    // flows wait behind the long one's queue.
    let tcp = pfabric("remaining")
        .replace(
            "\"pfabric\"\n[host.queue]\nkind = \"pfabric\"",
            "\"droptail\"\nqueue_packets = 100\n[host.queue]\nkind = \"priority\"",
        )
        .replace("protocol = \"pfabric\"", "protocol = \"tcp\"")
        + "[protocol.tcp]\nmss_bytes = 1460\nmin_rto_us = 1000\n";
    let t = run(&scenario(&tcp, &[]), 1, 1);
    let worst = |flows: &[psim::trace::FlowRecord]| {
        flows
            .iter()
            .filter(|f| f.size_bytes == Some(20_000))
            .map(|f| f.fct_ps.unwrap())
            .max()
            .unwrap()
    };
    assert!(
        worst(&r.flows) < worst(&t.flows),
        "pFabric helps the short flows"
    );
}

#[test]
fn absolute_size_also_favours_the_short_flows_and_runs_match_for_any_partition() {
    let scn = scenario(&pfabric("absolute"), &[]);
    let one = run(&scn, 1, 1);
    assert!(one.outcome.summary.conserved());
    for f in one.flows.iter().filter(|f| f.size_bytes == Some(20_000)) {
        assert!((f.fct_ps.unwrap() as f64) < 1.15 * f.ideal_fct_ps.unwrap() as f64);
    }
    let two = run(&scn, 2, 2);
    assert_eq!(one.csv, two.csv);
}

/// Two CBR flows at line rate from two racks into host 0 through `sjf`
/// switches with room for everything: 1 MB from time 0 and 100 KB from
/// 20 µs. CBR stamps no rank; the hosts' `flow_size` policy does.
fn sjf(policy: &str) -> String {
    format!(
        "seed = 2\n[topology]\nkind = \"leafspine\"\nleaves = 4\nspines = 2\nhosts_per_leaf = 4\n\
         link_gbps = 10\nlatency_ns = 1000\n[topology.uplink]\ngbps = 40\nlatency_ns = 1000\n\
         [switch.queue]\nkind = \"sjf\"\nqueue_packets = 100000\n\
         [host.slack]\npolicy = \"{policy}\"\n\
         [[traffic]]\nprotocol = \"cbr\"\npattern = \"incast\"\nreceiver = 0\nsender_hosts = [4]\nsize_bytes = 1000000\n\
         [[traffic]]\nprotocol = \"cbr\"\npattern = \"incast\"\nreceiver = 0\nsender_hosts = [8]\nsize_bytes = 100000\nstart_us = 20\n"
    )
}

#[test]
fn the_flow_size_policy_makes_sjf_switches_serve_the_small_flow_first() {
    let fct = |policy: &str| {
        let r = run(&scenario(&sjf(policy), &[]), 1, 1);
        assert!(r.outcome.summary.conserved());
        assert_eq!(r.outcome.summary.packets.dropped, 0);
        let small = r
            .flows
            .iter()
            .find(|f| f.size_bytes == Some(100_000))
            .unwrap();
        let big = r
            .flows
            .iter()
            .find(|f| f.size_bytes == Some(1_000_000))
            .unwrap();
        (small.fct_ps.unwrap(), big.finish_ps.unwrap())
    };
    // 100 KB in 1500 B packets (1436 B payload + 64) at 10 Gb/s.
    let wire = 100_000u64.div_ceil(1436) * 1500 * 800;
    let (small, big) = fct("flow_size");
    assert!(
        small < wire + 20_000_000,
        "served as if alone: {small} vs {wire}"
    );
    assert!(big > small + 20_000_000);
    // Unstamped (rank 0 for both), sjf is FIFO: the flows share the port.
    let (fifo, _) = fct("none");
    assert!(fifo as f64 > 1.6 * wire as f64, "{fifo} vs {wire}");
}

#[test]
fn a_slack_policy_without_a_discipline_that_reads_it_is_an_error_naming_the_key() {
    let text = sjf("mean_fct").replace("kind = \"sjf\"", "kind = \"droptail\"");
    let path = std::path::Path::new("inline.toml");
    let e = psim::config::Scenario::from_str(&text, path, &[]).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("host.slack.policy") && msg.contains("lstf"),
        "{msg}"
    );
    assert_eq!(msg.lines().count(), 1);
    // With LSTF switches it is accepted.
    let ok = sjf("mean_fct").replace("kind = \"sjf\"", "kind = \"lstf\"");
    assert!(psim::config::Scenario::from_str(&ok, path, &[]).is_ok());
}
