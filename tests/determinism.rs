//! Every shipped small scenario gives byte-identical flow tables whatever the
//! shard and thread counts, and conserves packets.

use std::collections::BTreeMap;

use psim::config::Scenario;
use psim_integration_tests::{assert_time_order_agrees, run, small_scenarios};

#[test]
fn every_small_scenario_is_identical_across_partitions() {
    let scenarios = small_scenarios();
    assert!(
        scenarios.len() >= 5,
        "expected the shipped small scenarios, found {scenarios:?}"
    );
    let mut by_time = Vec::new();
    for path in scenarios {
        let scn = Scenario::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
        let reference = run(&scn, 1, 1);
        assert!(!reference.flows.is_empty(), "{}: no flows", path.display());
        // The windows' order changes nothing either.
        if !assert_time_order_agrees(&scn, &reference, 2, 2) {
            by_time.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
        let s = &reference.outcome.summary;
        assert!(
            s.conserved(),
            "{}: packets not conserved: {s:?}",
            path.display()
        );
        for (shards, threads) in [(2, 1), (2, 2), (3, 2), (8, 1), (8, 2)] {
            let other = run(&scn, shards, threads);
            assert!(
                other.csv == reference.csv,
                "{}: {shards} shards x {threads} threads differs from 1 shard",
                path.display()
            );
            let o = &other.outcome.summary;
            assert!(
                o.conserved(),
                "{}: not conserved with {shards} shards: {o:?}",
                path.display()
            );
            assert_eq!(
                o.events,
                s.events,
                "{}: event count depends on the partition",
                path.display()
            );
            assert_eq!(
                o.sim_end_ps,
                s.sim_end_ps,
                "{}: end time depends on the partition",
                path.display()
            );
            assert_eq!(o.packets, s.packets, "{}", path.display());
        }
    }
    // Entity-major wherever no link is shorter than a window: all but
    // those with links of two delays (a window is the longest).
    assert_eq!(
        by_time,
        ["cbr_incast_leafspine.toml", "cbr_poisson_hadoop_k4.toml"],
        "the runs in time order"
    );
}

/// The [TH] Ch. 4 variants of scenarios/rdma/ (IRN, RoCE, with and without
/// PFC, DCQCN, TIMELY, DCTCP, on the thesis's VOQ switch; IRN on output-queued
/// switches), RoCE with DCQCN on shared-buffer switches, RoCE under AIMD's
/// and DCTCP's windows (T32), and the T27/T28 incasts, cut to k = 4 and
/// 300 µs of arrivals (2 MB incasts) so that they run in a test: byte-identical across shards and threads, conserved,
/// every flow finished. The full-size files are the same but for these two
/// keys (checked at full size by hand: docs/rdma.md, "Reproducing the thesis").
#[test]
fn every_rdma_scenario_is_identical_across_partitions() {
    let testbed = "timely_testbed.toml";
    let paths: Vec<_> = psim_integration_tests::scenario_files("scenarios/rdma")
        .into_iter()
        .filter(|p| !p.ends_with(testbed))
        .collect();
    assert_eq!(paths.len(), 18, "{paths:?}");
    let small = |s: &[&str]| -> Vec<String> { s.iter().map(|x| x.to_string()).collect() };
    let mut runs: Vec<_> = paths
        .into_iter()
        .map(|p| (p, small(&["topology.k=4", "traffic.0.stop_us=300"])))
        .collect();
    // The incasts of T27 and T28 (validation/scenarios/), cut down the same way.
    let v = psim_integration_tests::repo_root().join("validation/scenarios");
    runs.push((
        v.join("t27_incast.toml"),
        small(&["topology.k=4", "traffic.0.total_size_bytes=2000000"]),
    ));
    runs.push((
        v.join("t28_incast_background.toml"),
        small(&[
            "topology.k=4",
            "traffic.0.stop_us=300",
            "traffic.1.senders=6",
            "traffic.1.total_size_bytes=2000000",
        ]),
    ));
    // RoCE under a window (T32's roce_aimd, roce_dctcp), over PFC as T32
    // runs them and roce_aimd without PFC, where NACKs and timeouts cut it;
    // then RoCE, IRN and DCQCN with the fetching NIC.
    let rdma = psim_integration_tests::repo_root().join("scenarios/rdma");
    let cut = ["topology.k=4", "traffic.0.stop_us=300"];
    for (file, extra) in [
        (
            "roce_pfc.toml",
            ["traffic.0.protocol=roce_aimd", "protocol.roce.ack_every=1"],
        ),
        (
            "roce.toml",
            ["traffic.0.protocol=roce_aimd", "protocol.roce.ack_every=1"],
        ),
        (
            "irn_pfc_dctcp.toml",
            ["traffic.0.protocol=roce_dctcp", "protocol.roce.pfc=true"],
        ),
        // The fetching NIC (`nic_packets`, 1 by default, so every RDMA file
        // above runs with it): its notices run after each event, in the
        // order the NIC let the packets go. Also a NIC that prefetches, and
        // none at all (the sender's pacing alone fills the NIC's queue).
        ("roce_dcqcn.toml", ["protocol.roce.nic_packets=2", "seed=2"]),
        ("roce_pfc.toml", ["protocol.roce.nic_packets=0", "seed=2"]),
        ("irn.toml", ["protocol.roce.nic_packets=0", "seed=2"]),
        // The notification point's timer: deferred and delayed CNPs.
        (
            "roce_pfc_dcqcn.toml",
            [
                "protocol.roce.cnp_defer=true",
                "protocol.roce.np_delay_us=5",
            ],
        ),
        (
            "irn_dcqcn.toml",
            [
                "protocol.roce.cnp_defer=true",
                "protocol.roce.np_delay_us=5",
            ],
        ),
        // DCQCN's shift of a pending departure at each rate change: the
        // sender's wakes at its controller's timer-driven changes.
        (
            "roce_dcqcn.toml",
            ["protocol.dcqcn.shift_pending_departure=true", "seed=3"],
        ),
        (
            "irn_dcqcn.toml",
            ["protocol.dcqcn.shift_pending_departure=true", "seed=3"],
        ),
        // DCQCN as ISK runs NV's parameters: integer rates, a CNP per mark.
        (
            "roce_pfc_dcqcn.toml",
            ["protocol.dcqcn.style=isekai", "seed=3"],
        ),
        // RDMA Reads over lossy fabrics: RoCE's requester asks again on
        // gaps and timeouts while DCQCN cuts the responders; IRN's
        // responders recover under DCQCN; TIMELY's requesters pace their
        // requests, lossy and over PFC (the shipped irn_read.toml and
        // roce_pfc_read.toml run above).
        ("roce_dcqcn.toml", ["traffic.0.verb=read", "seed=2"]),
        ("irn_dcqcn.toml", ["traffic.0.verb=read", "seed=2"]),
        ("roce_timely.toml", ["traffic.0.verb=read", "seed=2"]),
        ("irn_pfc_timely.toml", ["traffic.0.verb=read", "seed=2"]),
    ] {
        runs.push((rdma.join(file), small(&[&cut[..], &extra[..]].concat())));
    }
    for (path, sets) in runs {
        let scn = Scenario::load(&path, &sets).unwrap_or_else(|e| panic!("{e}"));
        let reference = run(&scn, 1, 1);
        let s = &reference.outcome.summary;
        assert!(s.conserved(), "{}: {s:?}", path.display());
        assert!(reference.flows.len() >= 10, "{}", path.display());
        assert!(
            reference.flows.iter().all(|f| f.fct_ps.is_some()),
            "{}: a flow did not finish",
            path.display()
        );
        // PFC's pauses, DCQCN's and TIMELY's timers and the fetching NIC
        // run entity by entity as they run in time order.
        assert!(
            assert_time_order_agrees(&scn, &reference, 4, 2),
            "{}: not entity-major",
            path.display()
        );
        for (shards, threads) in [(2, 1), (2, 2), (4, 1), (4, 2)] {
            let other = run(&scn, shards, threads);
            assert!(
                other.csv == reference.csv,
                "{}: {shards} shards x {threads} threads differs from 1 shard",
                path.display()
            );
            assert_eq!(other.outcome.summary.events, s.events, "{}", path.display());
        }
    }
    // The TIMELY testbed incast ([TH] Ch. 3; long-lived flows on a graph):
    // its first 3 ms, with the start-up's PFC pauses and the hosts' segment
    // schedulers, and with RTT noise drawn from the hosts' random streams;
    // then under the `hpcc` (per-packet pacing, once-per-RTT samples) and
    // `patched` update rules.
    let path = psim_integration_tests::repo_root()
        .join("scenarios/rdma")
        .join(testbed);
    let noise = "protocol.timely.rtt_noise_us=20";
    let modes: [&[&str]; 3] = [
        &[noise],
        &[
            noise,
            "protocol.timely.mode=hpcc",
            "protocol.timely.burst=false",
        ],
        &[
            noise,
            "protocol.timely.mode=patched",
            "protocol.timely.beta=0.008",
        ],
    ];
    for mode in modes {
        let mut sets = vec!["stop_us=3000"];
        sets.extend_from_slice(mode);
        let scn = Scenario::load(&path, &small(&sets)).unwrap_or_else(|e| panic!("{e}"));
        let reference = run(&scn, 1, 1);
        let s = &reference.outcome.summary;
        assert!(s.conserved(), "{mode:?}: {s:?}");
        assert_eq!(reference.flows.len(), 40);
        assert!(s.events > 50_000, "{mode:?}: {s:?}");
        for (shards, threads) in [(2, 1), (2, 2), (4, 1), (4, 2)] {
            let other = run(&scn, shards, threads);
            assert!(
                other.csv == reference.csv,
                "{testbed} {mode:?}: {shards} shards x {threads} threads differs from 1 shard"
            );
            assert_eq!(other.outcome.summary.events, s.events);
        }
    }
}

/// The pFabric comparison (scenarios/sweep/pfabric_fct_by_size.toml over
/// scenarios/pfabric/websearch_144.toml): each stack and workload at the
/// sweep's highest load, cut to 1 ms of arrivals, gives the same flow
/// table and event count at 1 shard and at 3 shards x 2 threads.
#[test]
fn the_pfabric_comparison_sweep_is_identical_across_partitions() {
    let root = psim_integration_tests::repo_root();
    let path = root.join("scenarios/sweep/pfabric_fct_by_size.toml");
    let sweep = psim::sweep::Sweep::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let top: Vec<_> = sweep
        .tasks
        .iter()
        .filter(|t| t.overrides.get("traffic.0.load").map(String::as_str) == Some("0.8"))
        .collect();
    assert_eq!(top.len(), 6, "3 stacks x 2 workloads");
    for t in top {
        let mut sets = t.sets();
        sets.extend(["traffic.0.stop_us=1000".to_string(), "stop_us=2000".into()]);
        let scn = Scenario::load(&sweep.base, &sets).unwrap_or_else(|e| panic!("{e}"));
        let reference = run(&scn, 1, 1);
        let s = &reference.outcome.summary;
        assert!(
            reference.flows.len() > 10,
            "{}: {}",
            t.dir,
            reference.flows.len()
        );
        assert!(s.conserved(), "{}: {s:?}", t.dir);
        assert!(
            assert_time_order_agrees(&scn, &reference, 3, 2),
            "{}",
            t.dir
        );
        let other = run(&scn, 3, 2);
        assert!(
            other.csv == reference.csv,
            "{}: 3 shards x 2 threads differs from 1 shard",
            t.dir
        );
        assert_eq!(other.outcome.summary.events, s.events, "{}", t.dir);
    }
}

/// The record-and-replay scenarios of scenarios/ups/ (psim/src/replay.rs),
/// cut to 1 ms of arrivals: the replay run's flows and its comparison with
/// the original are byte-identical across shards and threads. The Random
/// original also runs with flows that end in a short packet (packets of
/// 1000 B counted, sent as 1396 B payloads) and UPS's control side queue in
/// both runs (`control_below_bytes`, which the shipped flows of whole
/// packets never use).
#[test]
fn every_replay_scenario_is_identical_across_partitions() {
    // The folder's other files (T36–T43) run closed-loop TCP and CBR without
    // a replay: the cut-down tests below and tests/validate.rs cover them.
    let paths: Vec<_> = psim_integration_tests::scenario_files("scenarios/ups")
        .into_iter()
        .filter(|p| Scenario::load(p, &[]).is_ok_and(|s| s.replay.is_some()))
        .collect();
    assert_eq!(paths.len(), 3, "{paths:?}");
    let side_queue = [
        "traffic.0.packet_payload_bytes=1000",
        "switch.queue.control_below_bytes=1460",
        "replay.control_below_bytes=1460",
    ];
    // The side queue belongs to UPS's Random and LSTF queues: the default
    // file's original (the mixes run FQ, FIFO+ and classes).
    let runs = paths
        .iter()
        .flat_map(|p| match p.ends_with("i2_1g10g_replay.toml") {
            true => vec![(p, &[][..]), (p, &side_queue[..])],
            false => vec![(p, &[][..])],
        });
    for (path, extra) in runs {
        let entries = Scenario::load(path, &[]).unwrap().file.traffic.len();
        let sets: Vec<String> = (0..entries)
            .map(|i| format!("traffic.{i}.stop_us=1000"))
            .chain(extra.iter().map(|x| x.to_string()))
            .collect();
        let scn = Scenario::load(path, &sets).unwrap_or_else(|e| panic!("{e}"));
        let reference = run(&scn, 1, 1);
        let replay = |r: &psim_integration_tests::Ran| {
            r.outcome.manifest.packets.get("replay").cloned().unwrap()
        };
        assert!(replay(&reference)["packets"].as_u64().unwrap() > 1000);
        for (shards, threads) in [(2, 1), (2, 2), (4, 1), (4, 2)] {
            let other = run(&scn, shards, threads);
            assert!(
                other.csv == reference.csv,
                "{}: {shards} shards x {threads} threads differs from 1 shard",
                path.display()
            );
            assert_eq!(replay(&other), replay(&reference), "{}", path.display());
            assert_eq!(
                other.outcome.summary.events,
                reference.outcome.summary.events
            );
        }
    }
}

/// The shipped scenarios no other determinism check runs (the benchmark,
/// example and full-size reproduction files, the sweep's base, the Tofino
/// sweep points), cut down to a k = 4 FatTree or a short stop time so that
/// they run in a test: byte-identical flow tables and event counts at 1 shard
/// and at 3 shards x 2 threads. The validation scenarios are checked at their
/// quick settings by tests/validate.rs.
#[test]
fn every_other_shipped_scenario_cut_down_is_identical_across_partitions() {
    let root = psim_integration_tests::repo_root();
    let k4 = |extra: &[&str]| -> Vec<String> {
        std::iter::once("topology.k=4")
            .chain(extra.iter().copied())
            .map(String::from)
            .collect()
    };
    let cut: BTreeMap<&str, Vec<String>> = [
        ("bench/cbr_fattree_k16.toml", k4(&["stop_us=50"])),
        (
            "bench/ndp_perm_8192.toml",
            k4(&["traffic.0.size_bytes=200000"]),
        ),
        (
            "bench/roce_dcqcn_perm_8192.toml",
            k4(&["traffic.0.size_bytes=200000"]),
        ),
        ("example/websearch_k8.toml", k4(&["stop_us=1000"])),
        ("ndp/v13_permutation_432.toml", k4(&["stop_us=500"])),
        ("ndp/v20_permutation_8192.toml", k4(&["stop_us=300"])),
        ("ndp/v21_incast_8000.toml", k4(&["traffic.0.senders=15"])),
        ("tcp/v13_dctcp_permutation_432.toml", k4(&["stop_us=2000"])),
        ("tcp/v13_mptcp_permutation_432.toml", k4(&["stop_us=2000"])),
        (
            "tcp/v15_dctcp_incast_432.toml",
            k4(&["traffic.0.senders=15"]),
        ),
    ]
    .into_iter()
    .collect();
    // Every file of these folders is here or is a validation run (a new
    // file needs a cut-down entry above).
    let targets = std::fs::read_to_string(root.join("validation/targets.toml")).unwrap();
    let mut runs = Vec::new();
    for dir in ["bench", "example", "ndp", "tcp"] {
        for path in psim_integration_tests::scenario_files(&format!("scenarios/{dir}")) {
            let name = format!("{dir}/{}", path.file_name().unwrap().to_string_lossy());
            match cut.get(name.as_str()) {
                Some(sets) => runs.push((path, sets.clone())),
                None => assert!(
                    targets.contains(&format!("\"scenarios/{name}\"")),
                    "scenarios/{name}: no determinism check (give it a cut-down entry here)"
                ),
            }
        }
    }
    assert_eq!(runs.len(), cut.len());
    for p in psim_integration_tests::scenario_files("scenarios/tofino") {
        runs.push((p, vec!["stop_us=50".into()]));
    }
    assert!(runs.len() >= 25, "{}", runs.len());
    for (path, sets) in runs {
        let scn = Scenario::load(&path, &sets).unwrap_or_else(|e| panic!("{e}"));
        let reference = run(&scn, 1, 1);
        let s = &reference.outcome.summary;
        assert!(!reference.flows.is_empty(), "{}", path.display());
        assert!(s.conserved(), "{}: {s:?}", path.display());
        // The Tofino chip's lines and notices too.
        assert!(
            assert_time_order_agrees(&scn, &reference, 3, 2),
            "{}: not entity-major",
            path.display()
        );
        let other = run(&scn, 3, 2);
        assert!(
            other.csv == reference.csv,
            "{}: 3 shards x 2 threads differs from 1 shard",
            path.display()
        );
        assert_eq!(other.outcome.summary.events, s.events, "{}", path.display());
        assert_eq!(
            other.outcome.summary.packets,
            s.packets,
            "{}",
            path.display()
        );
    }
}

/// The validation scenario of T36, T40 and T41 runs at full scale only (its
/// queues take hundreds of milliseconds to build), so tests/validate.rs
/// never partitions it: each of its disciplines and slack policies, cut to
/// 30 ms of arrivals (450 ms on T41's slower I2/10 graphs), gives the same
/// flow table and event count at 1 shard and at 3 shards x 2 threads.
#[test]
fn the_full_only_ups_tcp_runs_cut_down_are_identical_across_partitions() {
    let root = psim_integration_tests::repo_root();
    let path = root.join("scenarios/ups/t36_mean_fct.toml");
    let variants: [&[&str]; 10] = [
        &[],
        // T41's edge schemes, on the default graph and on the I2/10 graphs
        // with every delay halved or doubled.
        &[
            "switch.queue.kind=fq",
            "switch.to_host.queue.kind=edge_codel",
            "switch.to_host.queue.used_slack=\"measured\"",
            "topology.file=\"../topologies/i2_div10_halfrtt_routed.graph\"",
            "traffic.0.stop_us=450000",
        ],
        &[
            "switch.queue.kind=lstf",
            "host.slack.policy=fairness",
            "host.slack.r_est_mbps=10",
            "host.slack.at=nic_departure",
            "host.slack.packets=all",
            "host.slack.per_packet_bytes=1460",
            "switch.to_host.queue.kind=edge_codel",
            "switch.to_host.queue.used_slack=\"measured\"",
            "topology.file=\"../topologies/i2_div10_doublertt_routed.graph\"",
            "traffic.0.stop_us=450000",
        ],
        &["switch.queue.kind=srpt", "host.slack.policy=remaining"],
        &["switch.queue.kind=sjf", "host.slack.policy=flow_size"],
        &["switch.queue.kind=lstf", "host.slack.policy=mean_fct"],
        &["switch.queue.kind=fq"],
        &["switch.queue.kind=fq_codel"],
        // The fairness slack stamped at the handoff (the default) and as
        // T40's runs stamp it, at the NIC's departure.
        &[
            "switch.queue.kind=lstf",
            "host.slack.policy=fairness",
            "host.slack.r_est_mbps=100",
        ],
        &[
            "switch.queue.kind=lstf",
            "host.slack.policy=fairness",
            "host.slack.r_est_mbps=100",
            "host.slack.at=nic_departure",
            "host.slack.packets=all",
            "host.slack.per_packet_bytes=1460",
        ],
    ];
    cut_down_runs_agree(
        &path,
        &["traffic.0.stop_us=30000", "stop_us=500000"],
        &variants,
    );
}

/// T37's tail-delay runs (full scale only in `psim validate`): CBR on I2
/// 1G-10G under FIFO and under LSTF with the tail slack, cut down to 20 ms
/// of arrivals, give the same flow table and event count at 1 shard and at
/// 3 shards x 2 threads.
#[test]
fn the_full_only_ups_tail_delay_runs_cut_down_are_identical_across_partitions() {
    let root = psim_integration_tests::repo_root();
    let path = root.join("scenarios/ups/t37_tail_delay.toml");
    let variants: [&[&str]; 2] = [
        &[],
        &[
            "switch.queue.kind=lstf",
            "switch.queue.queue_packets=100000000",
            "host.slack.policy=tail",
        ],
    ];
    cut_down_runs_agree(
        &path,
        &["traffic.0.stop_us=20000", "trace.packets.enabled=false"],
        &variants,
    );
}

/// Runs `path` with `base` and each variant's `--set`s at 1 shard and at 3
/// shards x 2 threads: the same flow table (of over 100 flows) and events.
fn cut_down_runs_agree(path: &std::path::Path, base: &[&str], variants: &[&[&str]]) {
    for v in variants {
        let sets: Vec<String> = base.iter().chain(v.iter()).map(|s| s.to_string()).collect();
        let scn = Scenario::load(path, &sets).unwrap_or_else(|e| panic!("{e}"));
        let reference = run(&scn, 1, 1);
        assert!(reference.flows.len() > 100, "{v:?}");
        let other = run(&scn, 3, 2);
        assert!(
            other.csv == reference.csv,
            "{v:?}: 3 shards x 2 threads differs"
        );
        assert_eq!(
            other.outcome.summary.events, reference.outcome.summary.events,
            "{v:?}"
        );
    }
}

#[test]
fn a_different_seed_gives_a_different_run() {
    // Guards the determinism test against comparing runs that ignore the seed.
    let path = &small_scenarios()[0];
    let a = run(&Scenario::load(path, &[]).unwrap(), 2, 2);
    let b = run(&Scenario::load(path, &["seed=12345".into()]).unwrap(), 2, 2);
    assert_ne!(a.csv, b.csv);
}

#[test]
fn every_shipped_scenario_is_valid() {
    // The large scenarios are too big to run in tests; they must at least load
    // and partition (the checks `psim check` makes).
    let mut n = 0;
    for dir in [
        "small", "example", "bench", "ndp", "tcp", "rdma", "ups", "rc3", "tofino", "pfabric",
    ] {
        for path in psim_integration_tests::scenario_files(&format!("scenarios/{dir}")) {
            let scn = Scenario::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
            let g = scn.topology.partition_graph();
            let part = partition::partition(&g, 4).unwrap();
            part.report(&g)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
    }
    assert!(n >= 38, "{n} scenarios");
}
