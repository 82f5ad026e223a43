//! Packet-event traces and queue time series agree with the flow table, the
//! engine's counters and each other, and do not depend on the partition.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use psim::config::Scenario;
use psim::engine::SimOptions;
use psim::run::{execute, RunOutcome};
use psim::trace::spec::sample_hash;
use psim::trace::{
    read_flows, read_manifest, read_packets, read_queues, FlowRecord, Manifest, PacketEvent,
    PacketRow, QueueSample,
};
use psim::units::tx_time_ps;
use psim_integration_tests::{assert_no_flow_beats_ideal, repo_root};

struct Traced {
    outcome: RunOutcome,
    manifest: Manifest,
    flows: Vec<FlowRecord>,
    packets: Vec<PacketRow>,
    queues: Option<(u64, Vec<QueueSample>)>,
}

fn load(name: &str, sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Scenario::load(&repo_root().join("scenarios/small").join(name), &sets)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn run(scn: &Scenario, shards: u32) -> Traced {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let outcome = execute(
        scn,
        SimOptions { shards, threads: 2 },
        &out,
        false,
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("{}: {e}", scn.path.display()));
    let queues = scn
        .trace
        .queues
        .as_ref()
        .map(|_| read_queues(&out).unwrap());
    let flows = read_flows(&out).unwrap();
    assert_no_flow_beats_ideal(&flows, &scn.path.display().to_string());
    Traced {
        flows,
        packets: read_packets(&out).unwrap(),
        queues,
        manifest: read_manifest(&out).unwrap(),
        outcome,
    }
}

const FULL: [&str; 2] = ["trace.packets.enabled=true", "trace.queues.enabled=true"];

/// Every small scenario with every packet and queue traced, at 3 shards: run
/// once for the three tests that read them (the runs are most of this file's
/// time).
fn fully_traced() -> &'static [(String, Scenario, Traced)] {
    static RUNS: OnceLock<Vec<(String, Scenario, Traced)>> = OnceLock::new();
    RUNS.get_or_init(|| {
        scenarios()
            .into_iter()
            .map(|name| {
                let scn = load(&name, &FULL);
                let t = run(&scn, 3);
                (name, scn, t)
            })
            .collect()
    })
}

/// Every shipped small scenario (`scenarios/small/`): drops (CBR over
/// drop-tail), trims (NDP, CP), ECN marks (DCTCP), stop times with packets
/// still on the wires, collectives.
fn scenarios() -> Vec<String> {
    let v: Vec<String> = psim_integration_tests::small_scenarios()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(v.len() >= 9, "{v:?}");
    v
}

#[test]
fn bytes_dequeued_towards_receivers_equal_bytes_delivered() {
    for (name, scn, t) in fully_traced() {
        let name = name.as_str();
        let topo = &scn.topology;
        // An RDMA Read's data goes to its source, the requester; the flow
        // id's top byte is its [[traffic]] entry.
        let read = |f: &psim::trace::FlowRecord| scn.traffic_reads[(f.flow_id >> 56) as usize];
        let receiver: BTreeMap<u64, u32> = t
            .flows
            .iter()
            .map(|f| (f.flow_id, if read(f) { f.src } else { f.dst }))
            .collect();
        // Packets put on a link that ends at their flow's receiver; with a
        // stop time, only those that arrive before it (the engine processes
        // events before the stop).
        let stop = scn.stop_ps.unwrap_or(u64::MAX);
        let mut payload: BTreeMap<u64, BTreeMap<u64, u64>> = BTreeMap::new(); // flow -> seq -> bytes
        let mut copies: BTreeMap<u64, u64> = BTreeMap::new();
        let mut data_rows = 0;
        for r in &t.packets {
            let link = topo.port(r.entity, r.port);
            let arrive = r.time_ps
                + tx_time_ps(r.size_bytes as u64, link.link.rate_bps)
                + link.link.delay_ps;
            if r.event != PacketEvent::Dequeue
                || link.peer != r.dst
                || receiver.get(&r.flow) != Some(&r.dst)
                || arrive >= stop
            {
                continue;
            }
            if matches!(r.kind, "data" | "header") {
                *copies.entry(r.flow).or_default() += 1;
            }
            if r.kind == "data" {
                data_rows += 1;
                // A retransmitted duplicate delivers no new bytes, nor
                // does a header-only probe at a seq already delivered
                // (pFabric's probe mode).
                let b = payload.entry(r.flow).or_default().entry(r.seq).or_default();
                *b = (*b).max(r.payload_bytes as u64);
            }
        }
        let mut delivered_total = 0;
        for f in &t.flows {
            let bytes: u64 = payload.get(&f.flow_id).map_or(0, |m| m.values().sum());
            if f.protocol == "mptcp" {
                // MPTCP counts each data sequence number once; a reinjected
                // copy travels under another subflow's seq, so when it and
                // its original both arrive the rows hold those bytes twice.
                assert!(bytes >= f.bytes_received, "{name}: flow {}", f.flow_id);
            } else {
                assert_eq!(bytes, f.bytes_received, "{name}: flow {}", f.flow_id);
            }
            let arrived = copies.get(&f.flow_id).copied().unwrap_or(0);
            assert_eq!(arrived, f.packets_received, "{name}: flow {}", f.flow_id);
            delivered_total += f.bytes_received;
        }
        assert!(delivered_total > 0 && data_rows > 0, "{name}");
        assert!(payload.keys().all(|k| receiver.contains_key(k)), "{name}");
    }
}

#[test]
fn event_counts_match_the_port_counters_and_queue_lengths_replay() {
    for (name, _, t) in fully_traced() {
        let name = name.as_str();
        let s = &t.outcome.summary;
        let count = |e: PacketEvent| t.packets.iter().filter(|r| r.event == e).count() as u64;
        let admitted = count(PacketEvent::Enqueue) + count(PacketEvent::Trim);
        assert_eq!(admitted, s.ports.enqueued, "{name}");
        assert_eq!(count(PacketEvent::Trim), s.ports.trimmed, "{name}");
        assert_eq!(count(PacketEvent::Dequeue), s.ports.dequeued, "{name}");
        assert_eq!(count(PacketEvent::Drop), s.ports.dropped, "{name}");
        assert_eq!(count(PacketEvent::Bounce), s.ports.bounced, "{name}");
        assert_eq!(count(PacketEvent::EcnMark), s.ports.marked, "{name}");
        // Evictions and drops at dequeue (pFabric, CoDel) discard packets
        // already admitted.
        assert_eq!(
            admitted - count(PacketEvent::Dequeue) - s.ports.discarded,
            s.queued,
            "{name}"
        );
        let wire: u64 = t
            .packets
            .iter()
            .filter(|r| r.event == PacketEvent::Dequeue)
            .map(|r| r.size_bytes as u64)
            .sum();
        assert_eq!(wire, s.ports.dequeued_bytes, "{name}");
        match name {
            "cbr_incast_leafspine.toml" => assert!(s.ports.dropped > 0, "{name} should drop"),
            "ndp_incast_k4.toml" => assert!(s.ports.trimmed > 0, "{name} should trim"),
            "dctcp_permutation_k4.toml" => assert!(s.ports.marked > 0, "{name} should mark"),
            "pfabric_websearch_k4.toml" => assert!(s.ports.discarded > 0, "{name} should evict"),
            _ => {}
        }

        // Replaying admissions and departures in the trace's order gives the
        // queue length each row reports: the length after the operation
        // that reported it. A drop row is a refused arrival, or a queued
        // packet discarded (pFabric's eviction, CoDel's drop at dequeue);
        // the rows of one such operation (one port, one time, in a run)
        // all show the length after it, so from a drop row on the count is
        // checked at the end of the run, where what it lacks is the run's
        // discards: at most its drop rows, and in all the port counters'.
        let mut discarded = 0;
        let mut drops_in_run = 0;
        let mut pkts: BTreeMap<(u32, u16), i64> = BTreeMap::new();
        let mut seqs: BTreeMap<u32, u64> = BTreeMap::new();
        let rows = &t.packets;
        for (i, r) in rows.iter().enumerate() {
            let prev = seqs.insert(r.entity, r.entity_seq);
            assert_eq!(prev.map_or(1, |p| p + 1), r.entity_seq, "{name}: {r:?}");
            let n = pkts.entry((r.entity, r.port)).or_default();
            match r.event {
                PacketEvent::Enqueue | PacketEvent::Trim => *n += 1,
                PacketEvent::Dequeue => *n -= 1,
                PacketEvent::Drop => drops_in_run += 1,
                _ => {}
            }
            if drops_in_run == 0 {
                assert_eq!(*n, r.queue_pkts as i64, "{name}: {r:?}");
            }
            let run_ends = rows
                .get(i + 1)
                .is_none_or(|x| (x.entity, x.port, x.time_ps) != (r.entity, r.port, r.time_ps));
            if run_ends {
                let gone = *n - r.queue_pkts as i64;
                assert!((0..=drops_in_run).contains(&gone), "{name}: {r:?}");
                *n -= gone;
                discarded += gone as u64;
                drops_in_run = 0;
            }
        }
        assert_eq!(discarded, s.ports.discarded, "{name}");
    }
}

#[test]
fn queue_series_agree_with_the_packet_trace_and_the_counters() {
    for (name, scn, t) in fully_traced() {
        let name = name.as_str();
        let (interval, rows) = t.queues.as_ref().unwrap();
        let interval = *interval;
        let s = &t.outcome.summary;
        let n = (s.sim_end_ps / interval + 1) as usize;
        let ports: u64 = (0..scn.topology.entities())
            .map(|e| scn.topology.port_count(e) as u64)
            .sum();
        assert_eq!(
            rows.len() as u64,
            ports * n as u64,
            "{name}: dense long format"
        );
        // Links carry the dequeued packets and the PFC frames (64 B each).
        assert_eq!(
            rows.iter().map(|r| r.tx_bytes).sum::<u64>(),
            s.ports.dequeued_bytes + s.ports.pause_sent * psim::packet::HEADER_BYTES as u64
        );
        assert!(rows.iter().all(|r| r.busy_ps <= interval));
        if s.ports.dropped + s.ports.trimmed > 0 {
            assert!(
                rows.iter().any(|r| r.queue_pkts > 1),
                "{name}: no queue built"
            );
        }

        // The queue at each boundary is what the last packet event before it left.
        let mut by_port: BTreeMap<(u32, u16), Vec<&PacketRow>> = BTreeMap::new();
        for r in &t.packets {
            by_port.entry((r.entity, r.port)).or_default().push(r);
        }
        let mut tx: BTreeMap<(u32, u16), u64> = BTreeMap::new();
        for r in &t.packets {
            // A port sends its queue's packets and its own PFC frames.
            if matches!(r.event, PacketEvent::Dequeue | PacketEvent::Pause) {
                *tx.entry((r.entity, r.port)).or_default() += r.size_bytes as u64;
            }
        }
        let mut busy_total = 0;
        for q in rows {
            let events = by_port.get(&(q.node, q.port)).map_or(&[][..], |v| &v[..]);
            let before = events.partition_point(|r| r.time_ps < q.time_ps);
            let (bytes, pkts) = match before {
                0 => (0, 0),
                i => (events[i - 1].queue_bytes, events[i - 1].queue_pkts),
            };
            assert_eq!(
                (q.queue_bytes, q.queue_pkts),
                (bytes, pkts),
                "{name}: {q:?}"
            );
            assert_eq!(scn.topology.port(q.node, q.port).peer, q.peer);
            busy_total += q.busy_ps;
        }
        for ((node, port), bytes) in tx {
            let sum: u64 = rows
                .iter()
                .filter(|q| (q.node, q.port) == (node, port))
                .map(|q| q.tx_bytes)
                .sum();
            assert_eq!(sum, bytes, "{name}: port {node}:{port}");
        }
        assert!(busy_total > 0);

        let m = &t.manifest;
        for p in ["packets/part-00002.parquet", "queues/part-00000.parquet"] {
            assert!(
                m.parts.iter().any(|x| x == p),
                "{name}: {p} not in manifest"
            );
        }
    }
}

#[test]
fn traces_do_not_depend_on_the_partition() {
    for name in scenarios() {
        let name = name.as_str();
        let scn = load(
            name,
            &[
                "trace.packets.enabled=true",
                "trace.packets.sample=0.1",
                "trace.queues.enabled=true",
                "trace.queues.interval_us=3",
            ],
        );
        let one = run(&scn, 1);
        assert!(!one.packets.is_empty());
        for shards in [3, 8] {
            let other = run(&scn, shards);
            assert!(other.packets == one.packets, "{name}: {shards} shards");
            assert!(other.queues == one.queues, "{name}: {shards} shards");
        }
        // Nor on the order of the windows' events (docs/engine.md,
        // "Entity-major windows").
        let mut timed = scn.clone();
        timed.file.run.window_order = Some(psim::config::WindowOrder::Time);
        let other = run(&timed, 3);
        assert!(other.packets == one.packets, "{name}: time order");
        assert!(other.queues == one.queues, "{name}: time order");
    }
}

#[test]
fn sampling_keeps_whole_packets_at_about_the_rate() {
    let name = "ndp_incast_k4.toml";
    let full = run(&load(name, &["trace.packets.enabled=true"]), 2);
    let scn = load(
        name,
        &["trace.packets.enabled=true", "trace.packets.sample=0.1"],
    );
    let sampled = run(&scn, 2);
    let threshold = (0.1 * 18_446_744_073_709_551_616.0) as u64;
    let expected: Vec<&PacketRow> = full
        .packets
        .iter()
        .filter(|r| sample_hash(scn.seed, r.flow, r.seq) < threshold)
        .collect();
    assert_eq!(sampled.packets.iter().collect::<Vec<_>>(), expected);
    let packets = |rows: &[PacketRow]| {
        rows.iter()
            .map(|r| (r.flow, r.seq, r.kind))
            .collect::<std::collections::BTreeSet<_>>()
            .len() as f64
    };
    let (n, k) = (packets(&full.packets), packets(&sampled.packets));
    let sd = (n * 0.1 * 0.9).sqrt();
    assert!((k - 0.1 * n).abs() < 5.0 * sd, "{k} of {n} packets");
    assert!(n > 1000.0, "{n}");
}

#[test]
fn filters_keep_only_what_they_name() {
    let name = "cbr_incast_leafspine.toml";
    let full = run(&load(name, &["trace.packets.enabled=true"]), 2);
    let flow = full.flows[3].flow_id;
    let entity = full.packets[full.packets.len() / 2].entity;
    let scn = load(
        name,
        &[
            "trace.packets.enabled=true",
            &format!("trace.packets.flows=[{flow}]"),
            &format!("trace.packets.entities=[{entity}]"),
            "trace.packets.events=[\"dequeue\", \"drop\"]",
            "trace.packets.start_us=2",
            "trace.packets.end_us=40",
        ],
    );
    let t = run(&scn, 3);
    let expected: Vec<&PacketRow> = full
        .packets
        .iter()
        .filter(|r| {
            r.flow == flow
                && r.entity == entity
                && matches!(r.event, PacketEvent::Dequeue | PacketEvent::Drop)
                && (2_000_000..40_000_000).contains(&r.time_ps)
        })
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(t.packets.iter().collect::<Vec<_>>(), expected);
}

#[test]
fn too_many_rows_is_a_one_line_error() {
    let scn = load(
        "ndp_incast_k4.toml",
        &["trace.packets.enabled=true", "trace.packets.max_rows=100"],
    );
    let dir = tempfile::tempdir().unwrap();
    for shards in [1, 4] {
        let out = dir.path().join(format!("out{shards}"));
        let e = execute(
            &scn,
            SimOptions { shards, threads: 2 },
            &out,
            false,
            &mut |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("trace.packets.max_rows = 100"), "{e}");
        assert!(!e.contains('\n'));
        assert!(
            read_manifest(&out).is_err(),
            "no manifest after a failed run"
        );
    }
}

#[test]
fn tracing_off_writes_no_trace_files() {
    let scn = load("cbr_incast_leafspine.toml", &[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    execute(
        &scn,
        SimOptions {
            shards: 2,
            threads: 1,
        },
        &out,
        false,
        &mut |_| {},
    )
    .unwrap();
    assert!(!out.join("packets").exists() && !out.join("queues").exists());
    let e = read_packets(&out).unwrap_err().to_string();
    assert!(
        e.contains(&out.join("packets").display().to_string()),
        "{e}"
    );
}
