//! PFC (`psim/src/net/pfc.rs`) in whole runs: a CBR incast at line rate
//! over drop-tail loses packets; with PFC every byte arrives, pause frames
//! flow and spread back to the senders' NICs, and the run is the same for
//! any partition.

use psim_integration_tests::{repo_root, run, scenario};

fn incast(pfc: bool) -> String {
    format!(
        "seed = 5\n[topology]\nkind = \"fattree\"\nk = 4\n\
         [switch.queue]\nkind = \"droptail\"\nqueue_bytes = {}\n\
         [switch.pfc]\nenabled = {pfc}\nbuffer_bytes = 40000\nheadroom_bytes = 15000\n\
         [[traffic]]\nprotocol = \"cbr\"\npattern = \"incast\"\nreceiver = 0\nsenders = 6\nsize_bytes = 300000\n",
        // Without PFC a 40 KB egress buffer; with it the MMU decides and the egress never fills.
        if pfc { 10_000_000 } else { 40_000 }
    )
}

#[test]
fn without_pfc_the_incast_drops_with_it_nothing_is_lost() {
    let lossy = run(&scenario(&incast(false), &[]), 1, 1);
    assert!(lossy.outcome.summary.packets.dropped > 0);
    let r = run(&scenario(&incast(true), &[]), 1, 1);
    let s = &r.outcome.summary;
    assert!(s.conserved(), "{s:?}");
    assert_eq!(s.packets.dropped, 0);
    assert_eq!(s.ports.dropped, 0);
    for f in &r.flows {
        assert_eq!(Some(f.bytes_received), f.size_bytes, "flow {}", f.flow_id);
    }
    // Every frame sent arrives (none is in flight at the end), and pauses
    // reach the senders: ports spent time paused.
    assert!(s.ports.pause_sent > 0);
    assert_eq!(s.ports.pause_sent, s.ports.pause_received);
    assert_eq!(s.packets.frames_sent, s.packets.frames_received);
    assert!(s.ports.paused_ps > 0);
}

/// Six senders at 10 Gb/s into one 10 Gb/s port: lossless, the receiver
/// gets its 1.8 MB at line rate, so the last byte cannot arrive before
/// 1.8 MB / 10 Gb/s = 1.44 ms, and PFC must not idle the bottleneck much
/// beyond it: the run ends within 5% of that bound.
#[test]
fn the_paused_incast_still_fills_the_bottleneck() {
    let r = run(&scenario(&incast(true), &[]), 1, 1);
    let last = r.flows.iter().filter_map(|f| f.finish_ps).max().unwrap();
    let wire: u64 = r.flows.iter().map(|f| f.bytes_sent).sum();
    let bound = wire * 8 * 1000 / 10; // ps at 10 Gb/s
    assert!(last >= bound, "{last} < {bound}");
    assert!((last as f64) < bound as f64 * 1.05, "{last} vs {bound}");
}

#[test]
fn pfc_runs_are_identical_for_any_partition() {
    let scn = scenario(&incast(true), &[]);
    let one = run(&scn, 1, 1);
    for shards in [2, 3] {
        let r = run(&scn, shards, 2);
        assert_eq!(r.csv, one.csv, "{shards} shards");
        assert_eq!(r.outcome.summary.ports, one.outcome.summary.ports);
        assert_eq!(r.outcome.summary.packets, one.outcome.summary.packets);
    }
}

/// The same incast on shared-buffer switches (`pool = "shared"`, HPCC's
/// dynamic threshold, [RDMA] §2.2): 200 KB per switch, of which 4 x (15 KB
/// headroom + 4 KB reserve) is set aside. Lossless, pausing, the bottleneck
/// still full (the bound of the test above), and the same for any partition.
#[test]
fn a_shared_buffer_switch_is_lossless_and_identical_for_any_partition() {
    let sets = [
        "switch.pfc.pool=\"shared\"",
        "switch.pfc.shared_buffer_bytes=200000",
        "switch.pfc.threshold=\"dynamic\"",
    ];
    let scn = scenario(&incast(true), &sets);
    let one = run(&scn, 1, 1);
    let s = &one.outcome.summary;
    assert!(s.conserved(), "{s:?}");
    assert_eq!((s.packets.dropped, s.ports.dropped), (0, 0));
    assert!(s.ports.pause_sent > 0 && s.ports.paused_ps > 0, "{s:?}");
    for f in &one.flows {
        assert_eq!(Some(f.bytes_received), f.size_bytes, "flow {}", f.flow_id);
    }
    let last = one.flows.iter().filter_map(|f| f.finish_ps).max().unwrap();
    let wire: u64 = one.flows.iter().map(|f| f.bytes_sent).sum();
    let bound = wire * 8 * 1000 / 10;
    assert!(
        last >= bound && (last as f64) < bound as f64 * 1.05,
        "{last} vs {bound}"
    );
    // Not the per-input-port run under another name.
    let per_port = run(&scenario(&incast(true), &[]), 1, 1);
    assert_ne!(per_port.outcome.summary.ports, s.ports);
    for shards in [2, 3] {
        let r = run(&scn, shards, 2);
        assert_eq!(r.csv, one.csv, "{shards} shards");
        assert_eq!(r.outcome.summary.ports, one.outcome.summary.ports);
    }
}

#[test]
fn impossible_pfc_settings_name_the_key() {
    let path = repo_root().join("inline.toml");
    for (set, key) in [
        ("switch.pfc.headroom_bytes=100", "switch.pfc.headroom_bytes"),
        ("switch.pfc.xoff_bytes=39000", "switch.pfc.xoff_bytes"),
        ("switch.pfc.lossless=[9]", "switch.pfc.lossless"),
        ("switch.pfc.alpha=-1.0", "switch.pfc.alpha"),
        ("switch.pfc.egress_alpha=1.0", "switch.pfc.egress_alpha"),
        (
            "switch.pfc={enabled=true,pool=\"shared\",shared_buffer_bytes=50000,headroom_bytes=15000}",
            "switch.pfc.shared_buffer_bytes",
        ),
        ("switch.pfc.pool=\"pooled\"", "switch.pfc.pool"),
        ("switch.queue={kind=\"ndp\"}", "switch.queue.kind"),
        (
            "switch.tor.queue={kind=\"random\"}",
            "switch.tor.queue.kind",
        ),
    ] {
        let e = psim::config::Scenario::from_str(&incast(true), &path, &[set.to_string()])
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{set}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

/// Two hosts burst into one switch whose output to a third host is 1000
/// times slower: `senders` (indices) each send 200 packets of 1500 B, 1436
/// B of payload each, in 24 µs at 100 Gb/s, while the 100 Mb/s output
/// takes 120 µs per packet. So during the bursts the output dequeues only
/// the first packet to arrive, and each input's admissions are set by the
/// buffers alone. `switch` is the `[switch...]` tables.
fn two_bursts_into_a_slow_port(dir: &std::path::Path, senders: &str, switch: &str) -> String {
    let file = dir.join("burst.graph");
    let g = "host h0 h1 h2\nswitch s0\nlink h0 s0 100Gbps 1us\nlink h1 s0 100Gbps 1us\n\
             link h2 s0 100Mbps 1us\n";
    std::fs::write(&file, g).unwrap();
    format!(
        "seed = 1\n[topology]\nkind = \"graph\"\nfile = \"{}\"\n{switch}\
         [[traffic]]\nprotocol = \"cbr\"\npattern = \"many_to_many\"\nsenders = {senders}\n\
         receivers = [2]\nsize_bytes = 287200\n",
        file.display()
    )
}

/// The thesis's switch without PFC: 240 000 B per input port ([TH]
/// §4.3.1), `[switch.pfc] lossless = []`, VOQs at the output. The first
/// packet leaves at once, so its input admits 1 + 240 000 / 1500 = 161
/// packets and the other input its own 160: 79 of the 400 are dropped. One
/// sender alone: 39 of 200. A drop-tail output of the same 240 000 B
/// shared by both inputs admits 161 in all: 239 dropped.
#[test]
fn the_per_input_buffer_drops_at_240_kb_per_input_port() {
    let dir = tempfile::tempdir().unwrap();
    let voq = "[switch.queue]\nkind = \"voq\"\nqueue_bytes = 10000000\n\
               [switch.pfc]\nenabled = true\nlossless = []\nbuffer_bytes = 240000\n";
    let per_output = "[switch.queue]\nkind = \"droptail\"\nqueue_bytes = 240000\n";
    for (senders, n, switch, dropped) in [
        ("[0, 1]", 2, voq, 79),
        ("[0]", 1, voq, 39),
        ("[0, 1]", 2, per_output, 239),
    ] {
        let text = two_bursts_into_a_slow_port(dir.path(), senders, switch);
        let r = run(&scenario(&text, &[]), 1, 1);
        let s = &r.outcome.summary;
        assert!(s.conserved(), "{s:?}");
        assert_eq!(s.packets.dropped, dropped, "{senders} {switch}");
        assert_eq!(s.ports.pause_sent, 0);
        let received: u64 = r.flows.iter().map(|f| f.bytes_received).sum();
        assert_eq!(received, (200 * n - dropped) * 1436, "{senders} {switch}");
    }
}

/// PFC over the thesis's switch: the incast above with `voq` at every
/// switch port loses nothing, pauses, and every charge is released against
/// the input it was made to (a wrong input fails the release's order check,
/// or leaves an input paused and the run deadlocked). The same for any
/// partition.
#[test]
fn pfc_over_voq_is_lossless_and_identical_for_any_partition() {
    let scn = scenario(&incast(true), &["switch.queue.kind=voq"]);
    let one = run(&scn, 1, 1);
    let s = &one.outcome.summary;
    assert!(s.conserved(), "{s:?}");
    assert_eq!((s.packets.dropped, s.ports.dropped), (0, 0));
    assert!(s.ports.pause_sent > 0);
    for f in &one.flows {
        assert_eq!(Some(f.bytes_received), f.size_bytes, "flow {}", f.flow_id);
    }
    let other = run(&scn, 3, 2);
    assert_eq!(other.csv, one.csv);
}

/// A ring of five switches, each with a host, every host sending to the
/// host two switches clockwise: each ring link carries a transit flow and a
/// local one, so every switch pauses its ring neighbour, and the pauses
/// close a cycle of buffer dependencies (the classic PFC deadlock). The run
/// must end with an error that names a cycle of paused ports, not idle.
#[test]
fn a_cyclic_buffer_dependency_deadlocks_and_the_run_names_the_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ring.graph");
    let mut g = String::from("host h0 h1 h2 h3 h4\nswitch s0 s1 s2 s3 s4\n");
    for i in 0..5 {
        g += &format!(
            "link h{i} s{i} 10Gbps 1us\nlink s{i} s{} 10Gbps 1us\n",
            (i + 1) % 5
        );
    }
    std::fs::write(&file, g).unwrap();
    let mut text = format!(
        "seed = 1\n[topology]\nkind = \"graph\"\nfile = \"{}\"\n\
         [switch.queue]\nkind = \"droptail\"\nqueue_bytes = 10000000\n\
         [host.queue]\nkind = \"droptail\"\nqueue_bytes = 100000000\n\
         [switch.pfc]\nenabled = true\nbuffer_bytes = 40000\nheadroom_bytes = 15000\n",
        file.display()
    );
    for i in 0..5 {
        text += &format!(
            "[[traffic]]\nprotocol = \"cbr\"\npattern = \"many_to_many\"\nreceivers = [{}]\nsenders = [{i}]\nsize_bytes = 3000000\n",
            (i + 2) % 5
        );
    }
    let scn = scenario(&text, &[]);
    let one = simulate(&scn, 1).unwrap_err().to_string();
    assert!(one.starts_with("PFC deadlock"), "{one}");
    assert!(one.contains("cycle s"), "{one}");
    assert_eq!(one.lines().count(), 1);
    // Split over shards, the ring's paused ports sit on different shards:
    // the same cycle is found, with the same message.
    for shards in [2, 5] {
        let e = simulate(&scn, shards).unwrap_err().to_string();
        assert_eq!(e, one, "{shards} shards");
    }
}

/// Links that lose (almost) every packet: TCP retries for ever. Without a
/// stop time the run used to race through simulated time; the watchdog ends
/// it with an error that names the likely causes. (A queue smaller than one
/// packet, the first such case, is now rejected before the run:
/// psim/tests/bad_input.rs.)
#[test]
fn a_run_that_delivers_nothing_stops_with_an_error() {
    let text = "seed = 1\n[topology]\nkind = \"fattree\"\nk = 4\n\
                [link]\nloss_rate = 0.99999\n\
                [[traffic]]\nprotocol = \"tcp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 2\nsize_bytes = 100000\n";
    let scn = scenario(text, &["run.watchdog_s=1.0"]);
    let e = simulate(&scn, 2).unwrap_err().to_string();
    assert!(e.contains("no packet reached a host for 1 s"), "{e}");
    assert!(e.contains("switch.queue.queue_bytes"), "{e}");
    // Off: the same run goes on; with a stop time it simply ends there.
    let scn = scenario(text, &["run.watchdog_s=0", "stop_us=2000000"]);
    let s = simulate(&scn, 1).unwrap();
    assert_eq!(s.sim_end_ps, 2_000_000_000_000);
    let path = repo_root().join("inline.toml");
    let e = psim::config::Scenario::from_str(text, &path, &["run.watchdog_s=-1".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("run.watchdog_s"), "{e}");
}

/// RoCE with DCQCN over PFC, the thesis's "RoCE + PFC" setting: an 8-to-1
/// incast over DCQCN's marking switches loses nothing, needs no timeout
/// (RoCE runs without one under PFC), marks, pauses, and every flow finishes.
#[test]
fn dcqcn_over_pfc_is_lossless_and_needs_no_timeout() {
    let text = "seed = 2\n[topology]\nkind = \"fattree\"\nk = 4\n\
                [switch.queue]\nkind = \"ecn_ramp\"\nqueue_bytes = 10000000\n\
                [switch.pfc]\nenabled = true\n\
                [protocol.roce]\npfc = true\n\
                [[traffic]]\nprotocol = \"dcqcn\"\npattern = \"incast\"\nreceiver = 0\nsenders = 8\nsize_bytes = 1000000\n";
    let r = run(&scenario(text, &[]), 2, 1);
    let s = &r.outcome.summary;
    assert!(s.conserved(), "{s:?}");
    assert_eq!((s.packets.dropped, s.ports.dropped), (0, 0));
    assert!(
        s.ports.pause_sent > 0 && s.ports.marked > 0,
        "{:?}",
        s.ports
    );
    assert_eq!(r.flows.len(), 8);
    for f in &r.flows {
        assert!(f.finish_ps.is_some(), "flow {} unfinished", f.flow_id);
        assert_eq!(
            (f.timeouts, f.retransmissions),
            (0, 0),
            "flow {}",
            f.flow_id
        );
    }
}

/// Runs `scn` in memory (no outputs) on `shards` shards: the engine's verdict.
fn simulate(
    scn: &psim::config::Scenario,
    shards: u32,
) -> Result<psim::engine::RunSummary, psim::engine::SimError> {
    let opts = psim::engine::SimOptions { shards, threads: 1 };
    psim::engine::Simulation::new(scn, opts)
        .unwrap()
        .run(&mut |_| {})
}

/// Runs `scn` into a fresh directory (kept alive by the returned handle),
/// for tests that read its traces and manifest.
fn run_to_dir(
    scn: &psim::config::Scenario,
    shards: u32,
    threads: u32,
) -> (tempfile::TempDir, psim::run::RunOutcome) {
    let dir = tempfile::tempdir().unwrap();
    let outcome = psim::run::execute(
        scn,
        psim::engine::SimOptions { shards, threads },
        dir.path(),
        true,
        &mut |_| {},
    )
    .unwrap();
    (dir, outcome)
}

/// Paused time per port and priority: the incast's first sender on
/// priority 3, lossless only there (the others lossy, on 0), with the queue
/// series traced. Every paused picosecond is priority 3's; the series'
/// paused time per priority sums to the manifest's figure, no interval
/// holds more than its length, and the series are the same for any
/// partition; the packet trace has a row for every frame sent and
/// received. With timed pauses (5 µs, refreshed on arrival) the pauses that
/// end by themselves are counted too.
#[test]
fn paused_time_is_kept_per_priority_in_the_counters_and_the_queue_series() {
    for timed in [false, true] {
        let mut sets = vec![
            "traffic.0.first_sender_priority=3",
            "switch.pfc.lossless=[3]",
            "trace.queues.enabled=true",
            "trace.queues.interval_us=20",
            "trace.packets.enabled=true",
        ];
        if timed {
            sets.push("switch.pfc.pause_time_us=5.0");
        }
        let scn = scenario(&incast(true), &sets);
        let mut first = None;
        for (shards, threads) in [(1, 1), (3, 2)] {
            let (dir, outcome) = run_to_dir(&scn, shards, threads);
            let out = dir.path();
            let s = &outcome.summary;
            let by = s.paused_ps_by_priority;
            assert!(by[3] > 0, "timed {timed}: {by:?}");
            assert_eq!(
                by.iter().sum::<u64>(),
                by[3],
                "only priority 3 pauses: {by:?}"
            );
            assert_eq!(s.ports.paused_ps, by[3]);
            let m: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap())
                    .unwrap();
            assert_eq!(
                m["packets"]["ports"]["paused_ps_by_priority"][3].as_u64(),
                Some(by[3])
            );
            let (interval, rows) = psim::trace::read_queues(out).unwrap();
            let mut sums = [0u64; 8];
            for r in &rows {
                for (a, b) in sums.iter_mut().zip(r.paused_ps) {
                    *a += b;
                    assert!(b <= interval, "{r:?}");
                }
            }
            assert_eq!(sums, by, "timed {timed}, {shards} shards");
            // The packet trace has a row per frame sent and per frame received.
            let packets = psim::trace::read_packets(out).unwrap();
            let count =
                |e: psim::trace::PacketEvent| packets.iter().filter(|r| r.event == e).count();
            assert_eq!(
                count(psim::trace::PacketEvent::Pause) as u64,
                s.ports.pause_sent
            );
            assert_eq!(
                count(psim::trace::PacketEvent::PauseReceived) as u64,
                s.ports.pause_received
            );
            match &first {
                None => first = Some(rows),
                Some(one) => assert_eq!(&rows, one, "timed {timed}, {shards} shards"),
            }
        }
    }
}

/// Egress admission on a shared buffer (`egress_alpha`, CW's MMU): the
/// incast's traffic lossy (`lossless = []`), 200 000 B of pool per switch
/// and nothing set aside. A switch queue q admits a packet only while
/// q ≤ 1049 + alpha x (200 000 − shared bytes in use) and the shared use is
/// at least q, so with alpha = 0.25 no switch queue can pass
/// (1049 + 50 000) / 1.25 = 40 839 B. Without egress admission the ingress
/// thresholds alone let the bottleneck queue grow past that. Either way the
/// drops are counted and the run is the same for any partition.
#[test]
fn egress_admission_bounds_a_lossy_queue_in_the_shared_pool() {
    let max_switch_queue = |egress: bool| {
        let mut sets = vec![
            "switch.pfc.pool=\"shared\"",
            "switch.pfc.shared_buffer_bytes=200000",
            "switch.pfc.threshold=\"dynamic\"",
            "switch.pfc.lossless=[]",
            "trace.queues.enabled=true",
            "trace.queues.interval_us=1",
        ];
        if egress {
            sets.push("switch.pfc.egress_alpha=0.25");
        }
        let scn = scenario(&incast(true), &sets);
        let mut first = None;
        let mut max = 0;
        for (shards, threads) in [(1, 1), (3, 2)] {
            let (dir, outcome) = run_to_dir(&scn, shards, threads);
            let out = dir.path();
            let s = &outcome.summary;
            assert!(s.conserved(), "{s:?}");
            assert!(s.ports.dropped > 0, "the lossy incast drops: {s:?}");
            assert_eq!(s.ports.pause_sent, 0, "nothing is lossless");
            let (_, rows) = psim::trace::read_queues(out).unwrap();
            max = rows
                .iter()
                .filter(|r| r.node >= scn.topology.hosts())
                .map(|r| r.queue_bytes)
                .max()
                .unwrap();
            let flows = psim::trace::read_flows(out).unwrap();
            match &first {
                None => first = Some((flows, s.ports)),
                Some((f, p)) => assert_eq!((&flows, &s.ports), (f, p), "{shards} shards"),
            }
        }
        max
    };
    let bounded = max_switch_queue(true);
    let free = max_switch_queue(false);
    assert!(bounded <= 40_839, "{bounded}");
    assert!(free > 40_839, "without egress admission: {free}");
}

/// The thesis's input-queued switch with its crossbar (`voq`'s `crossbar`,
/// psim/src/net/crossbar.rs), against closed forms. Host 0 sends 100
/// packets of 1500 B to host 1 at 10 Gb/s (flow B, 1.2 µs a packet) and
/// 100 to host 2 at 1 Gb/s (flow A, 12 µs), its NIC alternating B1, A1,
/// B2, ...; every link is 1 µs. B1 reaches the switch at 2.2 µs, A1 at
/// 3.4 µs.
/// - Without the crossbar each output serves its VOQs on its own: the slow
///   output sends A1..A100 back to back from 3.4 µs, so A's last bit
///   arrives at 3.4 + 100 x 12 + 1 = 1204.4 µs; B100, the NIC's 199th
///   packet, leaves it at 238.8 µs and arrives at 238.8 + 1 + 1.2 + 1 =
///   242 µs.
/// - With it, input 0 feeds one output at a time: B1 crosses from 2.2 to
///   3.4 µs, A1 from 3.4 to 15.4, then B2, A2, ... alternate, 13.2 µs a
///   pair (a freed input goes to the other output first). A_k is sent by
///   15.4 + (k - 1) x 13.2 µs and B_k (k > 1) by 16.6 + (k - 2) x 13.2, so
///   A ends at 1322.2 + 1 = 1323.2 µs and B at 1310.2 + 1 = 1311.2 µs.
#[test]
fn the_crossbar_moves_one_packet_per_input_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("xbar.graph");
    let g = "host h0 h1 h2\nswitch s0\nlink h0 s0 10Gbps 1us\nlink h1 s0 10Gbps 1us\n\
             link h2 s0 1Gbps 1us\n";
    std::fs::write(&file, g).unwrap();
    let text = |crossbar: bool| {
        format!(
            "seed = 1\n[topology]\nkind = \"graph\"\nfile = \"{}\"\n\
             [switch.queue]\nkind = \"voq\"\nqueue_bytes = 10000000\ncrossbar = {crossbar}\n\
             [host.queue]\nkind = \"droptail\"\nqueue_bytes = 10000000\n\
             [[traffic]]\nprotocol = \"cbr\"\npattern = \"many_to_many\"\nsenders = [0]\n\
             receivers = [1, 2]\nsize_bytes = 143600\n",
            file.display()
        )
    };
    // (B's finish, A's finish), ps.
    let finish = |crossbar: bool| {
        let r = run(&scenario(&text(crossbar), &[]), 1, 1);
        let s = &r.outcome.summary;
        assert!(s.conserved(), "{s:?}");
        assert_eq!(s.packets.dropped, 0);
        let ps = |dst: u32| {
            let f = r.flows.iter().find(|f| f.dst == dst).expect("flow");
            assert_eq!(f.bytes_received, 143_600);
            f.finish_ps.unwrap()
        };
        (ps(1), ps(2))
    };
    assert_eq!(finish(false), (242_000_000, 1_204_400_000));
    assert_eq!(finish(true), (1_311_200_000, 1_323_200_000));
    // The same for any partition.
    let scn = scenario(&text(true), &[]);
    let one = run(&scn, 1, 1);
    assert_eq!(run(&scn, 3, 2).csv, one.csv);
}

/// PFC over the thesis's switch with its crossbar: the incast of
/// `pfc_over_voq_is_lossless_and_identical_for_any_partition`, lossless,
/// every byte delivered, and the same for any partition.
#[test]
fn pfc_over_the_crossbar_is_lossless_and_identical_for_any_partition() {
    let scn = scenario(
        &incast(true),
        &["switch.queue.kind=voq", "switch.queue.crossbar=true"],
    );
    let one = run(&scn, 1, 1);
    let s = &one.outcome.summary;
    assert!(s.conserved(), "{s:?}");
    assert_eq!((s.packets.dropped, s.ports.dropped), (0, 0));
    for f in &one.flows {
        assert_eq!(Some(f.bytes_received), f.size_bytes, "flow {}", f.flow_id);
    }
    for shards in [2, 3] {
        assert_eq!(run(&scn, shards, 2).csv, one.csv, "{shards} shards");
    }
}

/// Pause frames travel as IEEE 802.1Qbb has them (issue 14, switch item 2):
/// a frame goes out ahead of the data queued at its port, and takes effect
/// at the upstream port exactly its serialisation plus the link's delay
/// after it started (the closed form, computed here). On the small
/// DCQCN + TIMELY incast over PFC (data both ways), every frame the trace
/// shows sent has its arrival row at the link's far port at that time, in
/// order per link; some frames leave while data waits in the port's queue;
/// the same for any partition.
#[test]
fn pause_frames_cross_the_reverse_link_in_its_delay_ahead_of_queued_data() {
    use psim::trace::PacketEvent;
    use std::collections::{HashMap, VecDeque};
    let path = repo_root().join("scenarios/small/rdma_dcqcn_timely_pfc_k4.toml");
    let scn =
        psim::config::Scenario::load(&path, &["trace.packets.enabled=true".to_string()]).unwrap();
    let mut first = None;
    for (shards, threads) in [(1, 1), (3, 2)] {
        let (dir, outcome) = run_to_dir(&scn, shards, threads);
        let rows = psim::trace::read_packets(dir.path()).unwrap();
        let mut due: HashMap<(u32, u16), VecDeque<u64>> = HashMap::new();
        let mut overtook = 0;
        for r in rows.iter().filter(|r| r.event == PacketEvent::Pause) {
            let p = scn.topology.port(r.entity, r.port);
            let wire = (r.size_bytes as u64 * 8 * 1_000_000_000_000).div_ceil(p.link.rate_bps);
            due.entry((p.peer, p.peer_port))
                .or_default()
                .push_back(r.time_ps + wire + p.link.delay_ps);
            overtook += usize::from(r.queue_pkts > 0);
        }
        let mut arrived = 0;
        for r in rows
            .iter()
            .filter(|r| r.event == PacketEvent::PauseReceived)
        {
            let want = due
                .get_mut(&(r.entity, r.port))
                .and_then(VecDeque::pop_front)
                .unwrap_or_else(|| panic!("a frame arrived that was never sent: {r:?}"));
            assert_eq!(r.time_ps, want, "{r:?}");
            arrived += 1;
        }
        assert!(arrived > 10, "{arrived} frames");
        assert_eq!(arrived, outcome.summary.ports.pause_received);
        assert_eq!(arrived, outcome.summary.ports.pause_sent);
        assert!(overtook > 0, "no frame left a port with data queued");
        assert_eq!(outcome.summary.packets.dropped, 0);
        let times: Vec<(u64, u32, u16)> = rows
            .iter()
            .filter(|r| matches!(r.event, PacketEvent::Pause | PacketEvent::PauseReceived))
            .map(|r| (r.time_ps, r.entity, r.port))
            .collect();
        match &first {
            None => first = Some(times),
            Some(one) => assert_eq!(&times, one, "{shards} shards"),
        }
    }
}
