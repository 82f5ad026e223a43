//! Record and replay ([TH] §5.1–5.2; psim/src/replay.rs): a schedule with
//! one congestion point per packet replays exactly, whatever made it; a
//! FIFO schedule on Internet2 replays with few packets late; priority =
//! o(p) misses far more than LSTF; network-wide EDF replays as LSTF does;
//! any discipline replays its own schedule exactly; preemptive LSTF
//! replays SJF and LIFO far better than LSTF without; bad input is refused
//! by key.

use psim::config::Scenario;
use psim::replay::ReplayReport;
use psim_integration_tests::{repo_root, run, scenario};

fn report(scn: &Scenario) -> ReplayReport {
    let ran = run(scn, 1, 1);
    let r = ran.outcome.manifest.packets.get("replay").expect("replay");
    serde_json::from_value(r.clone()).expect("a replay report")
}

/// Every one of more than `min_packets` packets compared, none late, and
/// the replay's queueing the original's: exactly the original schedule.
fn assert_replays_exactly(r: &ReplayReport, min_packets: u64, what: &str) {
    assert!(r.packets > min_packets, "{what}: {r:?}");
    assert_eq!(r.packets, r.recorded, "{what}: every packet compared");
    assert_eq!(r.overdue, 0, "{what}: {r:?}");
    assert_eq!(
        r.replay_mean_queueing_us, r.original_mean_queueing_us,
        "{what}: exactly the original schedule"
    );
}

/// Seven senders, one 60 KB CBR flow each, to host 0 through one switch:
/// the switch's port to host 0 is the only queue any packet meets (each
/// NIC sends one flow, paced at its line rate).
const INCAST: &str = r#"
seed = 4
[topology]
kind = "leafspine"
leaves = 1
spines = 1
hosts_per_leaf = 8
link_gbps = 10
latency_ns = 1000
[switch.queue]
kind = "random"
queue_packets = 100000
[host.queue]
kind = "droptail"
queue_packets = 100000
[replay]
threshold_us = 1.2
[[traffic]]
protocol = "cbr"
pattern = "incast"
receiver = 0
sender_hosts = [1, 2, 3, 4, 5, 6, 7]
size_bytes = 60000
jitter_us = 30
"#;

#[test]
fn one_congestion_point_replays_exactly_whatever_the_original() {
    // At one queue, LSTF's key is the packet's arrival plus its recorded wait
    // plus its transmission time: the time its last bit left in the
    // original. The replay serves in that order, so by induction every
    // packet exits exactly when it did ([TH] App. A: one congestion point).
    // Any error in t_min, the slack or the key breaks the equality.
    for (kind, slack) in [
        ("random", "none"),
        ("lifo", "none"),
        ("droptail", "none"),
        ("lstf", "mean_fct"),
    ] {
        let sets = [
            format!("switch.queue.kind={kind}"),
            format!("host.slack.policy={slack}"),
        ];
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let r = report(&scenario(INCAST, &sets));
        assert_eq!(r.original[1], kind);
        assert!(r.packets > 200, "{kind}: {r:?}");
        assert_eq!(r.packets, r.recorded, "{kind}: every packet compared");
        assert!(
            r.original_mean_queueing_us > 20.0,
            "{kind}: the packets queue (else the test proves nothing): {r:?}"
        );
        assert_eq!(r.overdue, 0, "{kind}: {r:?}");
        assert_eq!(r.max_late_us, 0.0, "{kind}");
        // No packet late and the same total queueing: none early either.
        assert_eq!(
            r.replay_mean_queueing_us, r.original_mean_queueing_us,
            "{kind}: exactly the original schedule"
        );
    }
}

#[test]
fn the_control_side_queue_still_replays_one_point_exactly() {
    // UPS's Random and LSTF queues send packets under a size bound first,
    // first come, first served (`control_below_bytes`). With it in both
    // runs, each dequeue at the one queue finds the same packets: both take
    // the earliest short one if any, else LSTF takes the packet the
    // original sent then. Each 60 KB flow ends in a 1188 B packet (41 of
    // 1436 B payload, then 1124 B), under the bound of 1500.
    let on = [
        "switch.queue.control_below_bytes=1500",
        "replay.control_below_bytes=1500",
    ];
    let r = report(&scenario(INCAST, &on));
    assert_eq!(r.packets, r.recorded);
    assert_eq!(r.overdue, 0, "{r:?}");
    assert_eq!(r.replay_mean_queueing_us, r.original_mean_queueing_us);
    // The side queue did change the original: the short packets skipped
    // their queue, so the total queueing differs from the run without.
    let off = report(&scenario(INCAST, &[]));
    assert_eq!(off.packets, r.packets);
    assert_ne!(off.original_mean_queueing_us, r.original_mean_queueing_us);
    // A priority replay has no side queue: refused by key.
    let e = Scenario::from_str(
        INCAST,
        &repo_root().join("inline.toml"),
        &[
            "replay.discipline=\"priority\"".to_string(),
            "replay.control_below_bytes=1500".to_string(),
        ],
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(e.contains("replay.control_below_bytes"), "{e}");
    // Its end time (`lstf.cc`'s `control_packets_time_`) needs the side
    // queue, and a positive time: refused by key otherwise.
    for sets in [
        &["replay.control_below_until_us=100"][..],
        &[
            "replay.control_below_bytes=1500",
            "replay.control_below_until_us=0",
        ][..],
    ] {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let e = Scenario::from_str(INCAST, &repo_root().join("inline.toml"), &sets)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("replay.control_below_until_us"), "{sets:?}: {e}");
    }
}

fn internet2(sets: &[&str]) -> Scenario {
    let path = repo_root().join("scenarios/ups/i2_1g10g_replay.toml");
    let mut all = vec!["traffic.0.stop_us=2000".to_string()];
    all.extend(sets.iter().map(|s| s.to_string()));
    Scenario::load(&path, &all).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_fifo_schedule_on_internet2_replays_mostly_on_time() {
    // [TH] Table 5.1: FIFO replayed by LSTF at 70% is 1.4% overdue, 0.06%
    // by more than T. Here 10 ms of arrivals (about 58,000 packets; with the
    // IMC 2010 sizes 2 ms leaves no queue to speak of): several congestion
    // points per packet, so LSTF is not exact, but close.
    let r = report(&internet2(&[
        "switch.queue.kind=droptail",
        "host.queue.kind=droptail",
        "traffic.0.stop_us=10000",
    ]));
    assert!(r.packets > 50_000, "{r:?}");
    assert!(r.overdue > 0, "several congestion points: not exact");
    assert!(r.overdue_fraction < 0.02, "{r:?}");
    assert!(r.overdue_beyond_t_fraction < 0.002, "{r:?}");
}

#[test]
fn network_wide_edf_replays_exactly_as_lstf_does() {
    // [TH] App. A.4: EDF with priority(p, α) = o(p) − t_min(p, α, dest) +
    // T(p, α) gives LSTF's schedule. psim's EDF replay stamps o(p) and keys
    // each hop by that priority from the packet's path; LSTF keys by
    // arrival + slack + T, which equals it at every hop. A FIFO original on
    // I2 with 10 ms of arrivals has several congestion points, so LSTF
    // leaves packets late: EDF must leave the same packets exactly as late,
    // every flow finishing at the same picosecond, with and without
    // preemption. A key off by any hop's propagation or transmission time
    // would reorder some queue: paths here cross 4 or more links of 1 to
    // 14.4 Gb/s and 10 ms, and flows of 1000-byte payloads end in short
    // packets.
    for pre in ["false", "true"] {
        let sets = [
            "switch.queue.kind=droptail".to_string(),
            "traffic.0.stop_us=10000".to_string(),
            "traffic.0.packet_payload_bytes=1000".to_string(),
            format!("replay.preemptive={pre}"),
        ];
        let with = |d: &str| {
            let mut v: Vec<String> = sets.to_vec();
            v.push(format!("replay.discipline=\"{d}\""));
            v
        };
        let run_one = |d: &str| {
            let v = with(d);
            let refs: Vec<&str> = v.iter().map(String::as_str).collect();
            let scn = internet2(&refs);
            let ran = run(&scn, 1, 1);
            let r = ran.outcome.manifest.packets.get("replay").expect("replay");
            let r: ReplayReport = serde_json::from_value(r.clone()).expect("a report");
            (r, ran.csv)
        };
        let (lstf, lstf_flows) = run_one("lstf");
        let (edf, edf_flows) = run_one("edf");
        assert_eq!(edf.replay, "edf");
        assert!(lstf.packets > 50_000, "preemptive {pre}: {lstf:?}");
        if pre == "false" {
            assert!(
                lstf.overdue > 100,
                "not exact: a test of the keys: {lstf:?}"
            );
        }
        let numbers = |r: &ReplayReport| {
            (
                r.packets,
                r.overdue,
                r.overdue_beyond_t,
                r.max_late_us,
                r.replay_mean_queueing_us,
            )
        };
        assert_eq!(numbers(&edf), numbers(&lstf), "preemptive {pre}");
        assert_eq!(edf_flows, lstf_flows, "preemptive {pre}");
    }
}

#[test]
fn any_discipline_replays_and_replays_itself_exactly() {
    // `discipline = "queue"` runs [replay.queue] at the switch ports. A
    // deterministic discipline replaying its own schedule (same packets,
    // same times, same paths) reproduces it exactly: FIFO, and SJF with its
    // flow-size stamps kept from the original's edge policy (without them
    // SJF would be FIFO and miss). FIFO replaying a Random original does
    // far worse than LSTF: [TH] §5.1's point that the rule matters.
    let queue = |kind: &str| {
        vec![
            "replay.discipline=\"queue\"".to_string(),
            format!("replay.queue.kind=\"{kind}\""),
            "replay.queue.queue_packets=100000000".to_string(),
            "traffic.0.stop_us=10000".to_string(),
        ]
    };
    let go = |v: Vec<String>| {
        let r: Vec<&str> = v.iter().map(String::as_str).collect();
        report(&internet2(&r))
    };
    let mut fifo = queue("droptail");
    fifo.push("switch.queue.kind=droptail".into());
    let r = go(fifo);
    assert_eq!(r.replay, "droptail");
    assert_replays_exactly(&r, 50_000, "fifo by fifo");
    let mut sjf = queue("sjf");
    sjf.push("switch.queue.kind=sjf".into());
    sjf.push("host.slack.policy=flow_size".into());
    let sjf_itself = go(sjf.clone());
    assert_replays_exactly(&sjf_itself, 50_000, "sjf by sjf");
    // The same SJF original replayed by LSTF is not exact.
    let lstf = go(sjf[3..].to_vec());
    assert_eq!(lstf.replay, "lstf");
    assert!(lstf.overdue > 0, "{lstf:?}");
    // A Random original: FIFO misses more than ten times as many as LSTF.
    let by_fifo = go(queue("droptail"));
    let by_lstf = go(vec!["traffic.0.stop_us=10000".into()]);
    assert_eq!(by_fifo.packets, by_lstf.packets);
    assert!(
        by_fifo.overdue > 10 * by_lstf.overdue.max(1),
        "{by_fifo:?} against {by_lstf:?}"
    );
}

#[test]
fn priority_by_exit_time_misses_far_more_than_lstf() {
    // [TH] §5.1 (T34): priority = o(p) leaves 21% of packets overdue (20.69%
    // by more than T), LSTF 0.21% (0.02%).
    let lstf = report(&internet2(&[]));
    let prio = report(&internet2(&["replay.discipline=priority"]));
    assert_eq!(lstf.packets, prio.packets);
    assert!(
        prio.overdue_beyond_t_fraction > 0.05,
        "priority = o(p): {prio:?}"
    );
    assert!(
        prio.overdue_beyond_t_fraction > 20.0 * lstf.overdue_beyond_t_fraction.max(1e-4),
        "{prio:?} {lstf:?}"
    );
}

#[test]
fn exit_time_priority_replays_one_congestion_point_exactly() {
    // [TH] App. A.5: simple priorities replay every schedule with one
    // congestion point when the priority is o(p) − t_min(p, α, dest) +
    // T(p, α) at that point. In the incast every packet leaves the one
    // congested port over the same last link, so that is o(p) less a
    // constant: priority = o(p) replays it exactly. The relative forms
    // (`slack`, `delay`: o less the packet's own send time) are not o(p)
    // plus a constant, and leave packets late.
    let base = ["replay.nic=\"fifo\"", "replay.discipline=\"priority\""];
    let exit = report(&scenario(INCAST, &base));
    assert_replays_exactly(&exit, 250, "priority = o(p)");
    for form in ["slack", "delay"] {
        let set = format!("replay.priority=\"{form}\"");
        let r = report(&scenario(INCAST, &[base[0], base[1], &set]));
        assert_eq!(r.packets, exit.packets, "{form}");
        assert!(r.overdue > 0, "{form}: {r:?}");
    }
}

#[test]
fn preemption_rescues_sjf_and_lifo_replays() {
    // [TH] §5.1.3 (T34): non-preemptive LSTF replays SJF and LIFO worst
    // (18.33% and 14.77% overdue) because a packet with little slack waits
    // for one already on the wire; preemptive LSTF cuts that to 0.24% and
    // 0.25%, some sixtyfold. Short runs show less of it: on I2 1G-10G SJF
    // needs 10 ms of arrivals (2.3% late, none preemptive) and LIFO 200 ms
    // (12.2% against 1.1%; 100 ms gives only 9.9% against 1.4%, and the
    // full second of T34 14.9% against 0.24%), for the tenfold cut to show.
    for (kind, slack, stop_us) in [("sjf", "flow_size", 10_000), ("lifo", "none", 200_000)] {
        let sets = [
            format!("switch.queue.kind={kind}"),
            format!("host.slack.policy={slack}"),
            format!("traffic.0.stop_us={stop_us}"),
        ];
        let mut with: Vec<&str> = sets.iter().map(String::as_str).collect();
        let plain = report(&internet2(&with));
        with.push("replay.preemptive=true");
        let pre = report(&internet2(&with));
        assert_eq!(plain.packets, pre.packets, "{kind}");
        // Enough late packets for the cut to show.
        assert!(plain.overdue >= 1000, "{kind}: {plain:?}");
        assert!(
            pre.overdue_fraction < plain.overdue_fraction / 10.0,
            "{kind}: {pre:?} against {plain:?}"
        );
    }
}

/// The incast twice over: each sender's two flows share its NIC, so the
/// NICs queue as well as the switch's port to host 0.
fn incast_twice() -> String {
    let second = INCAST
        .split("[[traffic]]")
        .nth(1)
        .expect("one traffic table");
    format!("{INCAST}[[traffic]]{second}")
}

#[test]
fn fifo_nics_replay_exactly_when_the_switch_is_the_one_other_queue() {
    // With `nic = "fifo"` each NIC serves its two flows in the order it did
    // in the original (FIFO, the same arrivals), so the packets reach the
    // switch as they did, with their NIC waits charged to their slacks;
    // the switch's port is then the one LSTF point, which replays exactly.
    // Were a NIC's wait not charged, the switch's keys would be off by it.
    let two = incast_twice();
    for kind in ["random", "lifo"] {
        let sets = [
            format!("switch.queue.kind={kind}"),
            "replay.nic=\"fifo\"".to_string(),
        ];
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        assert_replays_exactly(&report(&scenario(&two, &sets)), 400, kind);
    }
    // A FIFO NIC cannot replay a NIC that was not FIFO: refused by key.
    let sets = vec![
        "host.queue.kind=random".to_string(),
        "replay.nic=\"fifo\"".to_string(),
    ];
    let e = Scenario::from_str(&two, &repo_root().join("inline.toml"), &sets)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("replay.nic") && e.contains("droptail"), "{e}");
}

#[test]
fn a_replay_needs_open_loop_traffic_and_sane_keys() {
    let err = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Scenario::from_str(INCAST, &repo_root().join("inline.toml"), &sets)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let e = err(&["traffic.0.protocol=tcp"]);
    assert!(e.contains("replay") && e.contains("open-loop"), "{e}");
    let e = err(&["replay.max_packets=0"]);
    assert!(e.contains("replay.max_packets"), "{e}");
    let e = err(&["replay.threshold_us=-1"]);
    assert!(e.contains("replay.threshold_us"), "{e}");
    let e = err(&["replay.discipline=\"priority\"", "replay.preemptive=true"]);
    assert!(e.contains("replay.preemptive"), "{e}");
    let e = err(&["replay.priority=\"slack\""]);
    assert!(
        e.contains("replay.priority") && e.contains("priority"),
        "{e}"
    );
    let e = err(&["replay.discipline=\"priority\"", "replay.priority=\"o\""]);
    assert!(
        e.contains("replay.priority") || e.contains("priority"),
        "{e}"
    );
    // A queue replay needs its table, and the table needs that replay.
    let e = err(&["replay.discipline=\"queue\""]);
    assert!(e.contains("replay.queue") && e.contains("missing"), "{e}");
    let e = err(&["replay.queue.kind=\"fq\""]);
    assert!(e.contains("replay.queue") && e.contains("lstf"), "{e}");
    let e = err(&[
        "replay.discipline=\"queue\"",
        "replay.queue.kind=\"droptail\"",
        "replay.queue.queue_packets=0",
    ]);
    assert!(e.contains("replay.queue.queue_packets"), "{e}");
    // The original's edge policy is kept, and harmless where the replay's
    // discipline ignores it (an SJF original replayed by FIFO).
    assert_eq!(
        err(&[
            "switch.queue.kind=\"sjf\"",
            "host.slack.policy=\"flow_size\"",
            "replay.discipline=\"queue\"",
            "replay.queue.kind=\"droptail\"",
        ]),
        ""
    );
    // EDF preempts as LSTF does, but has no control side queue.
    assert_eq!(
        err(&["replay.discipline=\"edf\"", "replay.preemptive=true"]),
        ""
    );
    let e = err(&[
        "replay.discipline=\"edf\"",
        "replay.control_below_bytes=1000",
    ]);
    assert!(e.contains("replay.control_below_bytes"), "{e}");
    let e = err(&["replay.discipline=\"fifo\""]);
    assert!(
        e.contains("replay.discipline") || e.contains("discipline"),
        "{e}"
    );
}

#[test]
fn the_record_limit_is_an_error_naming_its_key() {
    let scn = scenario(INCAST, &["replay.max_packets=100"]);
    let dir = tempfile::tempdir().unwrap();
    let e = psim::run::execute(
        &scn,
        psim::engine::SimOptions {
            shards: 1,
            threads: 1,
        },
        &dir.path().join("out"),
        false,
        &mut |_| {},
    )
    .expect_err("over the limit");
    assert!(e.to_string().contains("replay.max_packets = 100"), "{e}");
}

/// Runs `scn` into `out` (one shard), returning its replay report.
fn run_into(scn: &Scenario, out: &std::path::Path) -> Result<ReplayReport, String> {
    let opts = psim::engine::SimOptions {
        shards: 1,
        threads: 1,
    };
    let outcome =
        psim::run::execute(scn, opts, out, false, &mut |_| {}).map_err(|e| e.to_string())?;
    let r = outcome.manifest.packets.get("replay").expect("replay");
    Ok(serde_json::from_value(r.clone()).expect("a replay report"))
}

/// `write_record` writes the original's record (listed in the manifest,
/// so `psim verify` checks it); `from_record` replays it without running
/// the original, to the same report and flows; a record from another
/// network is refused naming the key, the file and the row.
#[test]
fn a_written_record_replays_like_the_original_and_must_match_the_topology() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    let original = run_into(&scenario(INCAST, &["replay.write_record=true"]), &first).unwrap();
    psim::trace::verify_run(&first).expect("the record part is listed and intact");
    let rows = psim::trace::read_record(&first).unwrap();
    assert_eq!(rows.len() as u64, original.recorded);
    assert!(rows
        .windows(2)
        .all(|w| (w[0].flow, w[0].seq) < (w[1].flow, w[1].seq)));
    // The incast's packets all cross two links of 10 Gb/s and 1 µs.
    let r = &rows[0];
    let tx = |b: u64| b * 8 * 100; // ps at 10 Gb/s
    assert_eq!(
        psim::trace::record::t_min_of(r),
        2 * (tx(r.size as u64) + 1_000_000)
    );

    let from = format!("replay.from_record=\"{}\"", first.display());
    let second = dir.path().join("second");
    let again = run_into(&scenario(INCAST, &[&from]), &second).unwrap();
    assert_eq!(again, original);
    let flows = |d: &std::path::Path| psim::trace::read_flows(d).unwrap();
    assert_eq!(flows(&second), flows(&first));
    // Record once, replay under several disciplines: EDF from the record
    // is the LSTF replay again; FIFO from the record leaves packets late
    // (the incast's one queue ran Random).
    let edf = run_into(
        &scenario(INCAST, &[&from, "replay.discipline=\"edf\""]),
        &dir.path().join("edf"),
    )
    .unwrap();
    assert_eq!(edf.replay, "edf");
    assert_eq!(
        (edf.overdue, edf.replay_mean_queueing_us),
        (original.overdue, original.replay_mean_queueing_us)
    );
    let fifo = run_into(
        &scenario(
            INCAST,
            &[
                &from,
                "replay.discipline=\"queue\"",
                "replay.queue.kind=\"droptail\"",
                "replay.queue.queue_packets=100000",
            ],
        ),
        &dir.path().join("fifo"),
    )
    .unwrap();
    assert_eq!(
        (fifo.replay.as_str(), fifo.packets),
        ("droptail", original.packets)
    );
    assert!(fifo.overdue > 0, "{fifo:?}");

    // A faster network: every t_min differs.
    let faster = scenario(INCAST, &[&from, "topology.link_gbps=25"]);
    let e = run_into(&faster, &dir.path().join("third")).unwrap_err();
    assert!(
        e.contains("replay.from_record") && e.contains("row 0"),
        "{e}"
    );
    assert!(e.contains("t_min"), "{e}");
    let e = run_into(
        &scenario(INCAST, &["replay.from_record=\"no/such/run\""]),
        &dir.path().join("fourth"),
    )
    .unwrap_err();
    assert!(
        e.contains("replay.from_record") && e.contains("record"),
        "{e}"
    );
    let e = Scenario::from_str(
        INCAST,
        &repo_root().join("inline.toml"),
        &[from.clone(), "replay.write_record=true".into()],
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("replay.write_record"), "{e}");
}
