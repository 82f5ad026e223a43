//! RC3 (`psim/src/transport/rc3/`) in whole runs: over strict-priority,
//! priority-dropping switches and NICs, with random loss on every link,
//! every flow completes, RC3 finishes a many-to-one burst sooner than TCP
//! with the same MSS and initial window, and runs are identical for any
//! partition.

use psim_integration_tests::{run, scenario};

fn burst(proto: &str, loss: f64) -> String {
    format!(
        "seed = 9\n[topology]\nkind = \"fattree\"\nk = 4\nlink_gbps = 1\nlatency_ns = 2000000\n\
         [switch.queue]\nkind = \"prio_drop\"\nqueue_bytes = 1000000\n\
         [host.queue]\nkind = \"prio_drop\"\nqueue_packets = 100000\n\
         [link]\nloss_rate = {loss}\n\
         [protocol.tcp]\nmss_bytes = 1460\niw_packets = 4\nmin_rto_us = 200000\n\
         [[traffic]]\nprotocol = \"{proto}\"\npattern = \"many_to_many\"\nsenders = [1, 5, 9]\nreceivers = [0, 14]\nsize_bytes = 400000\n"
    )
}

#[test]
fn rc3_completes_under_loss_and_beats_slow_start() {
    let mean_fct = |proto: &str, loss: f64| {
        let r = run(&scenario(&burst(proto, loss), &[]), 1, 1);
        let s = &r.outcome.summary;
        assert!(s.conserved(), "{s:?}");
        if loss > 0.0 {
            assert!(s.packets.lost_on_link > 0, "{proto}");
        }
        assert!(!r.flows.is_empty());
        for f in &r.flows {
            assert_eq!(
                Some(f.bytes_received),
                f.size_bytes,
                "{proto} flow {}",
                f.flow_id
            );
        }
        let fcts: Vec<u64> = r
            .flows
            .iter()
            .map(|f| f.finish_ps.unwrap() - f.start_ps)
            .collect();
        fcts.iter().sum::<u64>() as f64 / fcts.len() as f64
    };
    let (tcp, rc3) = (mean_fct("tcp", 0.0), mean_fct("rc3", 0.0));
    assert!(rc3 < 0.7 * tcp, "rc3 {rc3} tcp {tcp}");
    mean_fct("rc3", 0.002);
    let mut p = burst("rc3", 0.002);
    p.push_str("[protocol.rc3]\nsack = false\n");
    mean_fct_of(&p);
}

fn mean_fct_of(text: &str) {
    let r = run(&scenario(text, &[]), 1, 1);
    for f in &r.flows {
        assert_eq!(
            Some(f.bytes_received),
            f.size_bytes,
            "no sack, flow {}",
            f.flow_id
        );
    }
}

#[test]
fn rc3_runs_are_identical_for_any_partition() {
    let scn = scenario(&burst("rc3", 0.002), &[]);
    let one = run(&scn, 1, 1);
    for (shards, threads) in [(2, 1), (4, 2)] {
        let r = run(&scn, shards, threads);
        assert_eq!(r.csv, one.csv, "{shards} shards");
        assert_eq!(r.outcome.summary.packets, one.outcome.summary.packets);
    }
}

/// The shipped Internet-2 scenarios (arrivals cut to 0.1 s; RC3, TCP, the
/// critical-flow and the mixed variants) give the same
/// flow table, events and counters for 1, 2 and 4 shards and 1 or 2 threads,
/// with priorities ignored on half the switches and loss on every link.
#[test]
fn the_shipped_rc3_scenarios_are_identical_across_partitions() {
    use psim::config::Scenario;
    use psim_integration_tests::repo_root;
    let sets: Vec<String> = [
        "traffic.0.stop_us=100000",
        "stop_us=1500000",
        "switch.queue.ignore_priorities_fraction=0.5",
        "link.loss_rate=0.001",
    ]
    .map(String::from)
    .to_vec();
    for (name, entries) in [("i2_rc3", 1), ("i2_tcp", 1), ("i2_qos", 2), ("i2_mixed", 2)] {
        let path = repo_root().join(format!("scenarios/rc3/{name}.toml"));
        let mut sets = sets.clone();
        if entries == 2 {
            sets.push("traffic.1.stop_us=100000".into());
        }
        let scn = Scenario::load(&path, &sets).unwrap_or_else(|e| panic!("{e}"));
        let one = run(&scn, 1, 1);
        assert!(one.flows.len() > 100, "{name}");
        let s = &one.outcome.summary;
        assert!(s.conserved() && s.packets.lost_on_link > 0, "{name}: {s:?}");
        for (shards, threads) in [(2, 1), (2, 2), (4, 1), (4, 2)] {
            let r = run(&scn, shards, threads);
            let o = &r.outcome.summary;
            assert!(r.csv == one.csv, "{name}: {shards} x {threads} differs");
            assert_eq!((o.events, o.packets), (s.events, s.packets), "{name}");
        }
    }
}
