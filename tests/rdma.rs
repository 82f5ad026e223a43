//! RoCE, DCQCN and TIMELY on a small FatTree ([TH] Ch. 3–4; docs/rdma.md),
//! at a scale that runs in seconds.

use psim_integration_tests::{run, scenario, Ran};

/// An 8-to-1 incast of 1 MB flows on a k = 4 FatTree (10 Gb/s) over
/// `ecn_ramp` switches with 300 KB per port (thresholds 40/160 KB at 10 Gb/s).
fn incast(proto: &str) -> Ran {
    let text = format!(
        "seed = 5\nstop_us = 200000\n[topology]\nkind = \"fattree\"\nk = 4\n\
         [switch.queue]\nkind = \"ecn_ramp\"\nqueue_bytes = 300000\n\
         [[traffic]]\nprotocol = \"{proto}\"\npattern = \"incast\"\nreceiver = 0\nsenders = 8\nsize_bytes = 1000000\n"
    );
    run(&scenario(&text, &[]), 2, 1)
}

#[test]
fn dcqcn_incast_marks_and_slows_the_senders_down() {
    let d = incast("dcqcn");
    let r = incast("roce");
    for ran in [&d, &r] {
        let s = &ran.outcome.summary;
        assert!(s.conserved(), "{s:?}");
        assert_eq!(ran.flows.len(), 8);
        assert!(
            ran.flows.iter().all(|f| f.bytes_received == 1_000_000),
            "{:?}",
            ran.flows
        );
    }
    let (sd, sr) = (&d.outcome.summary, &r.outcome.summary);
    assert!(sd.ports.marked > 100, "marks: {}", sd.ports.marked);
    // Plain RoCE data is not ECN-capable: never marked.
    assert_eq!(sr.ports.marked, 0);
    // At line rate the 8 senders overflow 300 KB and go back N; DCQCN's cut
    // rates keep the queue under the buffer: far fewer drops and resends.
    let retx = |ran: &Ran| ran.flows.iter().map(|f| f.retransmissions).sum::<u64>();
    assert!(sr.ports.dropped > 100, "roce drops: {}", sr.ports.dropped);
    assert!(
        sd.ports.dropped * 10 < sr.ports.dropped,
        "{} vs {}",
        sd.ports.dropped,
        sr.ports.dropped
    );
    assert!(retx(&d) * 10 < retx(&r), "{} vs {}", retx(&d), retx(&r));
    // Eight flows share 10 Gb/s: each gets about an eighth; under DCQCN the
    // 8 MB still take at least their serialisation (6.8 ms).
    let last = d.flows.iter().filter_map(|f| f.finish_ps).max().unwrap();
    assert!(last > 6_800_000_000, "{last}");
}

#[test]
fn roce_permutation_over_small_drop_tail_queues_completes_by_go_back_n() {
    let text = "seed = 9\nstop_us = 500000\n[topology]\nkind = \"fattree\"\nk = 4\n\
         [switch.queue]\nkind = \"droptail\"\nqueue_packets = 8\n\
         [[traffic]]\nprotocol = \"roce\"\npattern = \"permutation\"\nsize_bytes = 300000\n\
         [[traffic]]\nprotocol = \"roce\"\npattern = \"incast\"\nreceiver = 3\nsenders = 3\nsize_bytes = 100000\n";
    let ran = run(&scenario(text, &[]), 2, 1);
    assert!(ran.outcome.summary.conserved());
    assert!(ran.outcome.summary.ports.dropped > 0);
    let retx: u64 = ran.flows.iter().map(|f| f.retransmissions).sum();
    assert!(retx > 0);
    for f in &ran.flows {
        assert!(f.finish_ps.is_some(), "{f:?}");
        assert_eq!(Some(f.bytes_received), f.size_bytes);
    }
}

/// RDMA Reads (psim/src/transport/roce/read.rs) over small drop-tail queues:
/// every read completes with all its bytes, RoCE's by its requester's NACKs
/// and timeouts, IRN's by its responders' selective repeat, and so under
/// TIMELY's paced requests; the records
/// carry the responders' counters (bytes sent), no flow beats its ideal time
/// (for a read, the request's trip plus the data's; checked by `run`), and
/// the result is the same for any partition.
#[test]
fn reads_over_lossy_queues_complete_and_keep_the_responders_counters() {
    for proto in ["roce", "irn", "timely", "irn_timely"] {
        let text = format!(
            "seed = 4\nstop_us = 500000\n[topology]\nkind = \"fattree\"\nk = 4\n\
             [switch.queue]\nkind = \"droptail\"\nqueue_packets = 8\n\
             [[traffic]]\nprotocol = \"{proto}\"\nverb = \"read\"\npattern = \"permutation\"\nsize_bytes = 300000\n\
             [[traffic]]\nprotocol = \"{proto}\"\npattern = \"permutation\"\nsize_bytes = 300000\n"
        );
        let ran = run(&scenario(&text, &[]), 2, 1);
        assert!(ran.outcome.summary.conserved());
        assert!(ran.outcome.summary.ports.dropped > 0, "{proto}: lossy");
        assert_eq!(ran.flows.len(), 32, "{proto}");
        for f in &ran.flows {
            assert!(f.finish_ps.is_some(), "{proto}: {f:?}");
            assert_eq!(Some(f.bytes_received), f.size_bytes);
            assert!(
                f.bytes_sent >= 300_000,
                "{proto}: the sender's counters: {f:?}"
            );
        }
        let retx: u64 = ran.flows.iter().map(|f| f.retransmissions).sum();
        assert!(retx > 0, "{proto}");
        let again = run(&scenario(&text, &[]), 4, 2);
        assert_eq!(again.csv, ran.csv, "{proto}: partitions");
    }
}

#[test]
fn timely_incast_completes_and_is_deterministic_across_shards() {
    let text = "seed = 2\nstop_us = 200000\n[topology]\nkind = \"fattree\"\nk = 4\n\
         [switch.queue]\nkind = \"droptail\"\nqueue_bytes = 300000\n\
         [[traffic]]\nprotocol = \"timely\"\npattern = \"incast\"\nreceiver = 0\nsenders = 4\nsize_bytes = 500000\n";
    let a = run(&scenario(text, &[]), 1, 1);
    let b = run(&scenario(text, &[]), 3, 1);
    assert_eq!(a.csv, b.csv);
    assert!(a.flows.iter().all(|f| f.finish_ps.is_some()));
}

/// Settings that cannot work are refused with the key at fault: DCQCN over
/// switches that never mark, and TIMELY without ACKs.
#[test]
fn dcqcn_without_marks_and_timely_without_acks_are_refused() {
    let text = |proto: &str, kind: &str, extra: &str| {
        format!(
            "[topology]\nkind = \"fattree\"\nk = 4\n[switch.queue]\nkind = \"{kind}\"\n{extra}\
             [[traffic]]\nprotocol = \"{proto}\"\npattern = \"incast\"\nreceiver = 0\nsenders = 2\nsize_bytes = 10000\n"
        )
    };
    let load = |t: &str| {
        psim::config::Scenario::from_str(t, std::path::Path::new("s.toml"), &[])
            .map(drop)
            .map_err(|e| e.to_string())
    };
    for proto in ["dcqcn", "irn_dcqcn", "irn_dctcp", "roce_dctcp"] {
        let e = load(&text(proto, "droptail", "")).unwrap_err();
        assert!(
            e.contains("switch.queue.kind") && e.contains("never marks ECN"),
            "{e}"
        );
        load(&text(proto, "ecn_ramp", "")).unwrap();
    }
    let no_acks = "[protocol.roce]\nack_every = 0\npfc = true\n";
    let e = load(&text("timely", "droptail", no_acks)).unwrap_err();
    assert!(
        e.contains("protocol.roce.ack_every") && e.contains("TIMELY"),
        "{e}"
    );
    // A window opens on ACKs.
    for proto in ["roce_aimd", "roce_dctcp"] {
        let e = load(&text(proto, "ecn_ramp", no_acks)).unwrap_err();
        assert!(e.contains("protocol.roce.ack_every"), "{e}");
    }
    // IRN ACKs every packet whatever ack_every says; plain RoCE may go without.
    load(&text("irn_timely", "droptail", no_acks)).unwrap();
    // RoCE with `pfc = true` has no timeout: it needs PFC on the switches.
    let no_acks_over_pfc = format!("{no_acks}[switch.pfc]\nenabled = true\n");
    load(&text("roce", "droptail", &no_acks_over_pfc)).unwrap();
    let e = load(&text("roce", "droptail", no_acks)).unwrap_err();
    assert!(e.starts_with("protocol.roce.pfc"), "{e}");
}

/// [TH] §3.2.3's rate engine on the TIMELY testbed incast
/// (scenarios/rdma/timely_testbed.toml): a client's NIC sends whole 16 KB
/// segments, each as one burst of 16 packets back to back at 10 Gb/s, and the
/// bursts of its 4 connections take turns (round robin) instead of
/// interleaving packet by packet. Without PFC and with the first 300 µs only,
/// before the 4 MB switch queue fills.
#[test]
fn timely_segments_leave_the_nic_as_whole_bursts_that_take_turns() {
    use psim::trace::{read_packets, PacketEvent};
    let path = psim_integration_tests::repo_root().join("scenarios/rdma/timely_testbed.toml");
    let sets: Vec<String> = [
        "stop_us=300",
        "switch.pfc.enabled=false",
        "protocol.roce.pfc=false",
        "trace.packets.enabled=true",
        "trace.packets.entities=[1]",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let scn = psim::config::Scenario::load(&path, &sets).unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let opts = psim::engine::SimOptions {
        shards: 2,
        threads: 1,
    };
    psim::run::execute(&scn, opts, &out, false, &mut |_| {}).unwrap();
    let rows: Vec<_> = read_packets(&out)
        .unwrap()
        .into_iter()
        .filter(|r| r.event == PacketEvent::Dequeue && r.entity == 1 && r.kind == "data")
        .collect();
    // 1024 + 64 bytes at 10 Gb/s: 870.4 ns, and the NIC never idles.
    let gap = psim::units::tx_time_ps(1088, 10_000_000_000);
    assert_eq!(gap, 870_400);
    assert!(rows.len() > 200, "{} packets", rows.len());
    assert!(rows.windows(2).all(|w| w[1].time_ps - w[0].time_ps == gap));
    // Runs of one flow: 16 packets each (the trace may end inside the last).
    let mut bursts: Vec<(u64, usize)> = Vec::new();
    for r in &rows {
        match bursts.last_mut() {
            Some((f, n)) if *f == r.flow => *n += 1,
            _ => bursts.push((r.flow, 1)),
        }
    }
    let (last, whole) = bursts.split_last().unwrap();
    assert!(whole.iter().all(|&(_, n)| n == 16), "{bursts:?}");
    assert!(last.1 <= 16);
    // Round robin: every 4 consecutive bursts are the 4 connections.
    for w in whole.chunks(4).filter(|c| c.len() == 4) {
        let mut flows: Vec<u64> = w.iter().map(|b| b.0).collect();
        flows.sort();
        flows.dedup();
        assert_eq!(flows.len(), 4, "{bursts:?}");
    }
}

/// An application-limited flow (`app`, transport/app.rs) sends exactly what
/// its application handed over: a 64 KB message every 65536 × 8 / 2 Gb/s =
/// 262.144 µs from t = 0 arrives 39 times by 10.1 ms (the 39th at 9961.5 µs;
/// the 40th at 10223.6 µs, after the stop). Each message takes 64 × 1088 B at
/// 10 Gb/s = 55.7 µs plus a few µs of path, so all 39 are delivered by the
/// stop and none of the 40th: bytes received = 39 × 65536 for each RoCE
/// sender, the same at 1 shard and at 3.
#[test]
fn app_limited_roce_flows_deliver_exactly_the_released_messages() {
    for proto in ["roce", "timely", "irn"] {
        let text = format!(
            "seed = 3\nstop_us = 10100\n[topology]\nkind = \"fattree\"\nk = 4\n\
             [protocol.roce]\nmtu_bytes = 1024\n\
             [[traffic]]\nprotocol = \"{proto}\"\npattern = \"many_to_many\"\nsenders = [0, 1]\nreceivers = [15]\n\
             app = {{ message_bytes = 65536, gbps = 2.0, arrivals = \"periodic\" }}\n"
        );
        let scn = scenario(&text, &[]);
        let one = run(&scn, 1, 1);
        assert_eq!(one.flows.len(), 2, "{proto}");
        for f in &one.flows {
            assert_eq!(f.bytes_received, 39 * 65_536, "{proto}: {f:?}");
        }
        let three = run(&scn, 3, 2);
        assert_eq!(one.csv, three.csv, "{proto}: 3 shards differ");
    }
}

/// IRN's `CW` variant (`[protocol.irn] cw_compat`, docs/rdma.md) with
/// DCQCN over a lossy fabric whose 17 KB queues never reach the ECN
/// ramp's 16.9 KB Kmin (an arrival finds at most 17 KB less its own
/// size; a Kmax above the buffer is refused), so no switch marks: every
/// flow still completes with
/// every byte, and it is identical across partitions. The thesis's IRN
/// never hears a CNP and keeps line rate; `CW`'s receiver flags every NACK
/// as a CNP, so DCQCN cuts on losses (the spec's pitfall 3: loss recovery
/// coupled to DCQCN), and far fewer packets are dropped.
#[test]
fn irn_cw_variant_cuts_dcqcn_on_nacks_and_is_deterministic() {
    let text = "seed = 4\nstop_us = 200000\n[topology]\nkind = \"fattree\"\nk = 4\n\
         [switch.queue]\nkind = \"ecn_ramp\"\nqueue_bytes = 17000\nscale_with_rate = false\nkmin_kb = 16.9\nkmax_kb = 17\n\
         [[traffic]]\nprotocol = \"irn_dcqcn\"\npattern = \"incast\"\nreceiver = 0\nsenders = 6\nsize_bytes = 300000\n\
         [[traffic]]\nprotocol = \"irn_dcqcn\"\npattern = \"permutation\"\nsize_bytes = 200000\n";
    let thesis = run(&scenario(text, &[]), 1, 1);
    let cw_sets = ["protocol.irn.cw_compat=true"];
    let cw = run(&scenario(text, &cw_sets), 1, 1);
    let cw3 = run(&scenario(text, &cw_sets), 3, 2);
    assert_eq!(cw.csv, cw3.csv, "identical across partitions");
    for ran in [&thesis, &cw] {
        let s = &ran.outcome.summary;
        assert!(s.conserved());
        assert_eq!(s.ports.marked, 0, "no switch marks");
        for f in &ran.flows {
            assert!(f.finish_ps.is_some(), "{f:?}");
            assert_eq!(Some(f.bytes_received), f.size_bytes);
        }
    }
    let (dt, dc) = (
        thesis.outcome.summary.ports.dropped,
        cw.outcome.summary.ports.dropped,
    );
    assert!(dc > 0 && 2 * dc < dt, "drops: CW {dc}, thesis {dt}");
}

/// Host 0 sends three RoCE flows of 100 KB (100 packets of 1,064 B on the
/// wire) to hosts 1–3 through one switch, all 10 Gb/s and 1 µs links, the
/// NIC a 5 KB drop-tail FIFO, the switch a 10 MB one. `nic_packets` is the
/// NIC's fetch (`[protocol.roce]`).
fn three_flows_from_one_nic(dir: &std::path::Path, nic_packets: u32) -> String {
    let file = dir.join("star.graph");
    let g = "host h0 h1 h2 h3\nswitch s0\nlink h0 s0 10Gbps 1us\nlink h1 s0 10Gbps 1us\n\
             link h2 s0 10Gbps 1us\nlink h3 s0 10Gbps 1us\n";
    std::fs::write(&file, g).unwrap();
    format!(
        "seed = 1\n[topology]\nkind = \"graph\"\nfile = \"{}\"\n\
         [switch.queue]\nkind = \"droptail\"\nqueue_bytes = 10000000\n\
         [host.queue]\nkind = \"droptail\"\nqueue_bytes = 5000\n\
         [protocol.roce]\nnic_packets = {nic_packets}\n\
         [[traffic]]\nprotocol = \"roce\"\npattern = \"many_to_many\"\nsenders = [0]\n\
         receivers = [1, 2, 3]\nsize_bytes = 100000\n",
        file.display()
    )
}

/// With `nic_packets = 1` the NIC holds one packet per flow, so its 5 KB
/// never overflow: it serves the three flows in turn with no gap, and the
/// last byte arrives when the NIC's 300 packets are out (300 × 851.2 ns),
/// plus the switch's serialisation of the last one (851.2 ns) and two
/// link delays: 258,211.2 ns; the flows end within two packet times of
/// each other. Without the cap the three line-rate senders overrun the
/// NIC's FIFO and lose packets there. With a cap of 8 the FIFO drops too,
/// and each drop must give the sender its place back, or it would wait
/// forever: every flow still completes. All the same for any partition.
#[test]
fn a_fetching_nic_serves_its_flows_in_turn_and_never_overflows() {
    let dir = tempfile::tempdir().unwrap();
    let scn = scenario(&three_flows_from_one_nic(dir.path(), 1), &[]);
    let one = run(&scn, 1, 1);
    let s = &one.outcome.summary;
    assert!(s.conserved(), "{s:?}");
    assert_eq!(s.packets.dropped, 0);
    let finish: Vec<u64> = one
        .flows
        .iter()
        .map(|f| f.finish_ps.expect("finished"))
        .collect();
    assert_eq!(finish.iter().max(), Some(&258_211_200));
    let spread = finish.iter().max().unwrap() - finish.iter().min().unwrap();
    assert!(spread <= 2 * 851_200, "{finish:?}");
    assert_eq!(run(&scn, 3, 2).csv, one.csv);

    let free = run(
        &scenario(&three_flows_from_one_nic(dir.path(), 0), &[]),
        1,
        1,
    );
    assert!(
        free.outcome.summary.packets.dropped > 0,
        "the NIC's FIFO overflows"
    );

    let eight = scenario(&three_flows_from_one_nic(dir.path(), 8), &[]);
    let r = run(&eight, 1, 1);
    assert!(
        r.outcome.summary.packets.dropped > 0,
        "8 × 3 packets > 5 KB"
    );
    assert!(
        r.flows.iter().all(|f| f.bytes_received == 100_000),
        "{:?}",
        r.flows
    );
    assert_eq!(run(&eight, 2, 2).csv, r.csv);
}
