//! The Tofino trimming switch (`psim/src/net/tofino.rs`) in whole runs on
//! [TRIM]'s single 64-port switch, with paced line-rate sources (cbr) so the
//! counts have closed forms: the onset of DoD queueing (trim P6), a 2:1
//! incast within one pipeline, the mode trace, and byte-identical runs.

use psim::net::tofino::ChipCounters;
use psim_integration_tests::{run, scenario, Ran};

/// 1500 B packets per flow.
const PKTS: u64 = 200;

/// Senders to receivers, paced at 100 Gb/s, `PKTS` packets each.
fn cbr(flows: &[(u32, u32)], variant: &str, extra: &str) -> String {
    let mut s = format!(
        "seed = 1\n[topology]\nkind = \"graph\"\nfile = \"scenarios/tofino/single_switch_64.graph\"\n\
         [switch.queue]\nkind = \"ndp\"\nqueue_packets = 10\ntrim_arrival_only = true\n\
         [switch.tofino]\nvariant = \"{variant}\"\n{extra}\n[protocol.cbr]\npacket_bytes = 1500\n\
         [protocol.ndp]\nmtu_bytes = 1436\n" // sizes the data queue (and meter burst) at 10 x 1500 B
    );
    for &(src, dst) in flows {
        s += &format!(
            "[[traffic]]\nprotocol = \"cbr\"\npattern = \"incast\"\nreceiver = {dst}\n\
             sender_hosts = [{src}]\nsize_bytes = {}\n",
            PKTS * 1436
        );
    }
    s
}

/// Senders 0..n, sender i to host i % 16 ([TRIM] §6.2); as in
/// `scenarios/tofino/gen.py`, senders 0..15 rotate (i -> (i + 1) % 16) since
/// a host cannot send to itself: every port still gets one sender per pipeline.
fn perm(n: u32) -> Vec<(u32, u32)> {
    (0..n)
        .map(|i| (i, if i < 16 { (i + 1) % 16 } else { i % 16 }))
        .collect()
}

fn chip(r: &Ran) -> ChipCounters {
    r.outcome.summary.tofino.expect("a chip")
}

/// Trim P6: up to 16 senders nothing is deflected. At 17, sender 16 (on
/// pipeline 1) shares port 0 with sender 15: the TM deflects one line rate,
/// which pipeline 1's DoD port just serves (a queue of at most a packet or
/// two). At 18, pipeline 1 deflects for ports 0 and 1, twice its DoD rate:
/// over the 200-packet flows about 190 packets queue up.
#[test]
fn dod_queueing_starts_at_18_senders() {
    for n in [8, 16] {
        let r = run(&scenario(&cbr(&perm(n), "dod", ""), &[]), 1, 1);
        let c = chip(&r);
        assert_eq!(c, ChipCounters::default(), "{n} senders");
        assert!(r.flows.iter().all(|f| f.bytes_received == PKTS * 1436));
    }
    let r = run(&scenario(&cbr(&perm(17), "dod", ""), &[]), 1, 1);
    let c = chip(&r);
    assert!(c.deflected > PKTS / 2, "{c:?}");
    assert!(c.dod_max_packets <= 2, "{c:?}");
    assert_eq!(
        c.trimmed_ingress, 0,
        "each pipeline's meter sees one line rate"
    );
    assert_eq!(
        c.trimmed_dod, c.deflected,
        "every deflected packet comes out trimmed"
    );
    let r = run(&scenario(&cbr(&perm(18), "dod", ""), &[]), 1, 1);
    let c = chip(&r);
    assert!(c.dod_max_packets >= 150, "{c:?}");
    assert!(r.outcome.summary.conserved());
}

/// A 2:1 incast within pipeline 0: the line-rate meter passes one line
/// rate plus its burst (10 packets) and trims the rest in ingress. With a
/// data queue deeper than the burst the TM overflows at most by the few
/// packets the two synchronised senders' bursts add while it fills;
/// every packet arrives whole or as a header.
#[test]
fn the_meter_trims_a_2_to_1_incast_in_ingress() {
    let two = [(1, 5), (2, 5)];
    let sets = [
        "switch.queue.queue_packets=12",
        "switch.tofino.meter_burst_bytes=15000",
    ];
    let r = run(&scenario(&cbr(&two, "dod", ""), &sets), 1, 1);
    let c = chip(&r);
    assert!((PKTS - 12..=PKTS - 8).contains(&c.trimmed_ingress), "{c:?}");
    assert!(c.deflected <= 10, "{c:?}");
    let s = &r.outcome.summary;
    assert!(s.conserved());
    assert_eq!(s.packets.dropped, 0);
    // The ideal switch trims the excess too, at its full queue: at most
    // one flow's worth, less what the queue absorbed.
    let r = run(&scenario(&cbr(&two, "ideal", ""), &[]), 1, 1);
    let i = chip(&r);
    assert!((PKTS - 12..=PKTS).contains(&i.trimmed_overflow), "{i:?}");
}

/// `full` at 18 senders: DoD dequeues send notices, pipelines 0 and 1
/// turn pessimistic on ports 1 and 2, which caps the DoD queue far below
/// `dod`'s; the trace shows the modes and the queue.
#[test]
fn the_control_loop_keeps_the_dod_queue_small() {
    let r = run(
        &scenario(&cbr(&perm(18), "full", ""), &["trace.tofino.enabled=true"]),
        1,
        1,
    );
    let c = chip(&r);
    assert!(c.notices > 0 && c.dod_max_packets < 50, "{c:?}");
    assert!(c.trimmed_ingress > 0);
    assert!(r.outcome.summary.conserved());
    let parts = &r.outcome.manifest.parts;
    assert!(
        parts.iter().any(|p| p == "tofino/part-00000.parquet"),
        "{parts:?}"
    );
}

/// A FatTree whose ToRs are Tofino chips runs the same for any partition.
#[test]
fn fattree_tors_as_tofino_are_partition_free() {
    let text = "seed = 2\n[topology]\nkind = \"fattree\"\nk = 4\n\
                [switch.queue]\nkind = \"ndp\"\nqueue_packets = 8\ntrim_arrival_only = true\n\
                [switch.tofino]\nvariant = \"full\"\n[protocol.ndp]\niw_packets = 30\n\
                [[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 15\nsize_bytes = 200000\n";
    let scn = scenario(text, &[]);
    let one = run(&scn, 1, 1);
    assert!(chip(&one).trimmed_ingress + chip(&one).deflected > 0);
    for shards in [2, 4] {
        let r = run(&scn, shards, 2);
        assert_eq!(r.csv, one.csv, "{shards} shards");
        assert_eq!(chip(&r), chip(&one));
    }
}

/// Without the NDP discipline the chip is refused, naming the key.
#[test]
fn the_chip_needs_ndp_ports() {
    let text = "[topology]\nkind = \"fattree\"\nk = 4\n[switch.tofino]\nvariant = \"dod\"\n\
                [[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 3\nsize_bytes = 1000\n";
    let sets: Vec<String> = Vec::new();
    let e = psim::config::Scenario::from_str(
        text,
        &psim_integration_tests::repo_root().join("x.toml"),
        &sets,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("switch.tofino"), "{e}");
}

/// Every shipped Tofino scenario (shortened to 20 µs) is byte-identical
/// for 1, 2 and 4 shards and 1 or 2 threads, and conserves packets.
#[test]
fn every_tofino_scenario_is_identical_across_partitions() {
    let files = psim_integration_tests::scenario_files("scenarios/tofino");
    assert!(files.len() >= 10, "{files:?}");
    let sets = vec!["stop_us=20".to_string()];
    for path in files {
        let scn = psim::config::Scenario::load(&path, &sets).unwrap_or_else(|e| panic!("{e}"));
        let one = run(&scn, 1, 1);
        assert!(one.outcome.summary.conserved(), "{}", path.display());
        for (shards, threads) in [(2, 1), (4, 2)] {
            let r = run(&scn, shards, threads);
            assert_eq!(r.csv, one.csv, "{}: {shards} shards", path.display());
            assert_eq!(chip(&r), chip(&one), "{}", path.display());
        }
    }
}
