//! Shard independence, closed loops, triggers and dependencies with exact timing, `.cm`
//! round trips and error reporting.

use std::collections::BTreeSet;
use std::path::Path;

use workloads::spec::TimeUnit;
use workloads::{
    to_cm, CmFile, FlowGenerator, FlowSpec, GroupCompletion, PatternSpec, Workload, WorkloadEnv,
    WorkloadError,
};

fn env(hosts: u32, stop_ps: Option<u64>, base: &Path) -> WorkloadEnv {
    WorkloadEnv {
        hosts,
        host_link_bps: 10_000_000_000,
        bisection_bps: u64::from(hosts) * 5_000_000_000,
        hosts_per_rack: 4,
        seed: 99,
        stop_ps,
        base_dir: base.to_path_buf(),
    }
}

fn parse(toml_text: &str) -> Result<Vec<PatternSpec>, toml::de::Error> {
    #[derive(serde::Deserialize)]
    struct Doc {
        traffic: Vec<PatternSpec>,
    }
    toml::from_str::<Doc>(toml_text).map(|d| d.traffic)
}

fn workload(toml_text: &str, e: WorkloadEnv) -> Result<Workload, WorkloadError> {
    Workload::new(parse(toml_text).expect("valid TOML"), e)
}

/// A toy engine: a flow of S bytes finishes S ns + 1 µs after it starts (long-lived flows never
/// finish). Every finish is reported to every generator, in (time, id) order, before any flow
/// starting later is popped.
fn drive(gens: &mut [FlowGenerator], horizon: u64) -> (Vec<FlowSpec>, Vec<GroupCompletion>) {
    let mut started = Vec::new();
    let mut finishing: BTreeSet<(u64, u64)> = BTreeSet::new();
    loop {
        let next_start = gens.iter().filter_map(|g| g.peek_start()).min();
        let next_finish = finishing.first().copied();
        match (next_start, next_finish) {
            (None, None) => break,
            (s, Some((t, id))) if s.is_none_or(|s| t <= s) => {
                finishing.pop_first();
                for g in gens.iter_mut() {
                    g.on_finished(id, t);
                }
            }
            (Some(s), _) => {
                if s >= horizon {
                    break;
                }
                let mut batch = Vec::new();
                for g in gens.iter_mut() {
                    g.pop_before(s + 1, &mut batch);
                }
                for f in &batch {
                    if let Some(b) = f.size_bytes {
                        finishing.insert((f.start_ps + b * 1000 + 1_000_000, f.id));
                    }
                }
                started.extend(batch);
            }
            (None, Some(_)) => unreachable!(),
        }
    }
    started.sort_by_key(|f| (f.start_ps, f.id));
    let mut groups: Vec<GroupCompletion> = gens
        .iter()
        .flat_map(|g| g.completed_groups().to_vec())
        .collect();
    groups.sort_by(|a, b| {
        (a.completed_ps, a.entry, a.instance).cmp(&(b.completed_ps, b.entry, b.instance))
    });
    (started, groups)
}

const CM: &str = "\
# a small dependency chain
Nodes 8
Connections 6
Triggers 3
0->1 id 1 start 0 size 1000 send_done_trigger 1
2->3 id 2 start 0.5 size 1000 recv_done_trigger 1
1->2 id 3 trigger 1 size 500 send_done_trigger 2
3->0 id 4 trigger 2 size 500 prio 1 send_done_trigger 3
0->2 id 5 trigger 3 size 100
5->6 id 6 trigger 3 size 100
trigger id 1 barrier count 2
trigger id 2 oneshot
trigger id 3 multishot
";

const MIX: &str = r#"
[[traffic]]
pattern = "permutation"
size_bytes = 20000
jitter_us = 3.0
[[traffic]]
pattern = "random"
flows_per_host = 2
size_bytes = 7000
[[traffic]]
pattern = "incast"
senders = 5
receiver = 3
size_bytes = 9000
repeat = 3
gap_us = 2.0
jitter_us = 1.0
first_sender_priority = 1
[[traffic]]
pattern = "incast"
senders = 4
receiver = 10
size_bytes = 1000
mode = "open"
repeat = 5
period_us = 7.0
resample_senders = true
[[traffic]]
pattern = "all_to_all"
group_size = 4
size_bytes = 3000
jitter_us = 0.5
[[traffic]]
pattern = "many_to_many"
senders = [1, 2, 3]
receivers = [3, 4, 5]
flows_per_pair = 2
size_bytes = 1500
[[traffic]]
pattern = "sender_limited"
size_bytes = 50000
[[traffic]]
pattern = "background"
flows_per_host = 1
destination = "permutation"
exclude_hosts = [0, 1]
[[traffic]]
pattern = "poisson"
load = 0.3
size_dist = "fb_hadoop"
[[traffic]]
pattern = "closed_loop"
connections_per_host = 2
think_time_us = 5.0
size_dist = "irn_heavy"
[[traffic]]
pattern = "collective"
algorithm = "ring_allreduce"
first_host = 4
hosts = 6
size_bytes = 60000
iterations = 2
[[traffic]]
pattern = "collective"
algorithm = "recursive_doubling_allreduce"
hosts = 8
size_bytes = 4000
[[traffic]]
pattern = "collective"
algorithm = "all_to_all"
hosts = 5
size_bytes = 5000
[[traffic]]
pattern = "collective"
algorithm = "neighbour_exchange"
hosts = 3
size_bytes = 2000
iterations = 3
[[traffic]]
pattern = "cm_file"
path = "chain.cm"
time_unit = "us"
trigger_delay_us = 0.25
"#;

#[test]
fn flows_do_not_depend_on_the_partition() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("chain.cm"), CM).unwrap();
    let horizon = 400_000_000; // 400 µs
    let w = workload(MIX, env(16, Some(horizon), dir.path())).unwrap();
    assert_eq!(w.entries(), 15);
    let mut one = vec![w.generator(&|_| true)];
    let (f1, g1) = drive(&mut one, horizon);
    let mut three: Vec<FlowGenerator> = (0..3).map(|k| w.generator(&move |h| h % 3 == k)).collect();
    let (f3, g3) = drive(&mut three, horizon);
    let mut uneven = vec![w.generator(&|h| h < 5), w.generator(&|h| h >= 5)];
    let (f2, g2) = drive(&mut uneven, horizon);
    assert!(f1.len() > 500, "{} flows", f1.len());
    assert_eq!(f1, f3);
    assert_eq!(f1, f2);
    assert_eq!(g1, g3);
    assert_eq!(g1, g2);
    // Every entry produced flows, ids are unique and every closed loop made progress.
    let classes: BTreeSet<u16> = f1.iter().map(|f| f.class).collect();
    assert_eq!(classes.len(), 15);
    let ids: BTreeSet<u64> = f1.iter().map(|f| f.id).collect();
    assert_eq!(ids.len(), f1.len());
    let names: BTreeSet<&str> = g1.iter().map(|g| g.name.as_str()).collect();
    for n in [
        "incast",
        "ring_allreduce",
        "recursive_doubling_allreduce",
        "all_to_all",
        "neighbour_exchange",
    ] {
        assert!(names.contains(n), "{n} never completed: {names:?}");
    }
    // Closed incast: 3 rounds, open incast: 5 rounds.
    assert_eq!(g1.iter().filter(|g| g.name == "incast").count(), 8);
}

#[test]
fn many_to_many_opens_flows_per_pair_connections_to_each_receiver() {
    let dir = tempfile::tempdir().unwrap();
    // The TIMELY testbed's incast ([TH] Ch. 3): clients with 4 connections each to one server.
    let text = "[[traffic]]\npattern = \"many_to_many\"\nsenders = [1, 2, 3]\nreceivers = [3, 0]\nflows_per_pair = 4\n";
    let w = workload(text, env(4, Some(1_000_000), dir.path())).unwrap();
    let (flows, _) = drive(&mut [w.generator(&|_| true)], 1_000_000);
    let mut pairs: Vec<(u32, u32)> = flows.iter().map(|f| (f.src, f.dst)).collect();
    pairs.sort();
    let mut want = Vec::new();
    for (s, d) in [(1, 0), (1, 3), (2, 0), (2, 3), (3, 0)] {
        want.extend([(s, d); 4]);
    }
    assert_eq!(pairs, want);
    let ids: BTreeSet<u64> = flows.iter().map(|f| f.id).collect();
    assert_eq!(ids.len(), 20, "every connection is a flow of its own");
    assert!(flows
        .iter()
        .all(|f| f.size_bytes.is_none() && f.start_ps == 0));
    let m = err_of(
        "[[traffic]]\npattern = \"many_to_many\"\nsenders = [1]\nreceivers = [0]\nflows_per_pair = 0\n",
        env(4, None, dir.path()),
    );
    assert!(m.contains("flows_per_pair"), "{m}");
}

#[test]
fn pop_before_yields_in_start_id_order_and_peek_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("chain.cm"), CM).unwrap();
    let w = workload(MIX, env(16, Some(200_000_000), dir.path())).unwrap();
    let mut g = w.generator(&|h| h % 2 == 0);
    let mut t = 0;
    let mut all = Vec::new();
    while let Some(p) = g.peek_start() {
        assert!(p >= t);
        let mut out = Vec::new();
        g.pop_before(p + 1, &mut out);
        assert!(!out.is_empty(), "peek_start promised a flow at {p}");
        assert!(out.iter().all(|f| f.start_ps == p && f.src % 2 == 0));
        t = p;
        all.extend(out);
    }
    assert!(all
        .windows(2)
        .all(|w| (w[0].start_ps, w[0].id) < (w[1].start_ps, w[1].id)));
}

#[test]
fn cm_triggers_fire_in_order_with_exact_timing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("chain.cm"), CM).unwrap();
    let w = workload(
        "[[traffic]]\npattern = \"cm_file\"\npath = \"chain.cm\"\ntime_unit = \"us\"\ntrigger_delay_us = 0.25\n",
        env(8, None, dir.path()),
    )
    .unwrap();
    let mut g = w.generator(&|_| true);
    let mut out = Vec::new();
    g.pop_before(u64::MAX, &mut out);
    let id = |cm_index: usize, out: &[FlowSpec]| out[cm_index].id;
    assert_eq!(out.len(), 2);
    assert_eq!((out[0].src, out[0].dst, out[0].start_ps), (0, 1, 0));
    assert_eq!((out[1].src, out[1].dst, out[1].start_ps), (2, 3, 500_000)); // 0.5 µs
    let (f1, f2) = (id(0, &out), id(1, &out));
    // Barrier of 2: the first activation releases nothing.
    g.on_finished(f1, 1_000_000);
    assert_eq!(g.peek_start(), None);
    g.on_finished(f2, 3_000_000);
    assert_eq!(g.peek_start(), Some(3_250_000));
    out.clear();
    g.pop_before(u64::MAX, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].src, out[0].dst, out[0].size_bytes, out[0].start_ps),
        (1, 2, Some(500), 3_250_000)
    );
    // Oneshot: released by flow 3's finish; prio 1 carries over.
    g.on_finished(out[0].id, 7_000_000);
    out.clear();
    g.pop_before(u64::MAX, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].src, out[0].dst, out[0].priority, out[0].start_ps),
        (3, 0, 1, 7_250_000)
    );
    // Multishot: one activation releases only its first target (0->2), not 5->6.
    g.on_finished(out[0].id, 9_000_000);
    out.clear();
    g.pop_before(u64::MAX, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].src, out[0].dst, out[0].start_ps), (0, 2, 9_250_000));
    // An unknown id changes nothing.
    g.on_finished(12345, 10_000_000);
    assert_eq!(g.peek_start(), None);
    let fired: Vec<(String, u64)> = g
        .completed_groups()
        .iter()
        .map(|c| (c.name.clone(), c.completed_ps))
        .collect();
    assert_eq!(fired.len(), 2);
    assert!(
        fired[0].0.ends_with("trigger 1") && fired[0].1 == 3_000_000,
        "{fired:?}"
    );
    assert!(
        fired[1].0.ends_with("trigger 2") && fired[1].1 == 7_000_000,
        "{fired:?}"
    );
}

#[test]
fn ring_allreduce_steps_wait_for_send_and_receive() {
    let w = workload(
        "[[traffic]]\npattern = \"collective\"\nalgorithm = \"ring_allreduce\"\nsize_bytes = 4000\nstart_us = 1\nstep_delay_us = 1\n",
        env(4, None, Path::new(".")),
    )
    .unwrap();
    let mut g = w.generator(&|_| true);
    let mut out = Vec::new();
    g.pop_before(u64::MAX, &mut out);
    // Step 0: i -> i+1, 1000 bytes each, at 1 µs.
    let pairs: Vec<(u32, u32, Option<u64>, u64)> = out
        .iter()
        .map(|f| (f.src, f.dst, f.size_bytes, f.start_ps))
        .collect();
    assert_eq!(
        pairs,
        vec![
            (0, 1, Some(1000), 1_000_000),
            (1, 2, Some(1000), 1_000_000),
            (2, 3, Some(1000), 1_000_000),
            (3, 0, Some(1000), 1_000_000)
        ]
    );
    let step0: Vec<u64> = out.iter().map(|f| f.id).collect();
    // Finish 0->1 at 2 µs: host 1 has received but not sent; host 0 has sent but not received.
    g.on_finished(step0[0], 2_000_000);
    assert_eq!(g.peek_start(), None);
    // 1->2 at 3 µs: host 1 now has both -> step 1 at 3 + 1 µs.
    g.on_finished(step0[1], 3_000_000);
    assert_eq!(g.peek_start(), Some(4_000_000));
    g.on_finished(step0[2], 5_000_000); // host 2 -> step 1 at 6 µs
    g.on_finished(step0[3], 8_000_000); // hosts 3 and 0 -> step 1 at 9 µs
    out.clear();
    g.pop_before(u64::MAX, &mut out);
    let got: Vec<(u32, u64)> = out.iter().map(|f| (f.src, f.start_ps)).collect();
    assert_eq!(
        got,
        vec![
            (1, 4_000_000),
            (2, 6_000_000),
            (0, 9_000_000),
            (3, 9_000_000)
        ]
    );
    // Steps 2..=4 with every flow taking 1 µs; the collective completes after step 5 (2(n-1) = 6 steps).
    let mut pending = out;
    let mut now = 9_000_000;
    for _ in 0..4 {
        now += 1_000_000;
        for f in std::mem::take(&mut pending) {
            g.on_finished(f.id, f.start_ps.max(now - 1_000_000) + 1_000_000);
        }
        g.pop_before(u64::MAX, &mut pending);
        now = pending.iter().map(|f| f.start_ps).max().unwrap_or(now);
    }
    assert!(g.completed_groups().is_empty());
    let last = pending.iter().map(|f| f.start_ps).max().unwrap();
    for f in std::mem::take(&mut pending) {
        g.on_finished(f.id, last + 1_000_000);
    }
    assert_eq!(g.peek_start(), None);
    let c = g.completed_groups();
    assert_eq!(c.len(), 1);
    assert_eq!(
        (c[0].name.as_str(), c[0].instance, c[0].completed_ps),
        ("ring_allreduce", 0, last + 1_000_000)
    );
}

#[test]
fn closed_loop_incast_and_clients_release_after_finish() {
    let w = workload(
        r#"
[[traffic]]
pattern = "incast"
sender_hosts = [1, 2, 3]
receiver = 0
size_bytes = 1000
first_sender_size_bytes = 200000
first_sender_priority = 1
repeat = 2
gap_us = 10
[[traffic]]
pattern = "closed_loop"
think_time_us = 4
think_dist = "fixed"
size_dist = "fixed"
size_bytes = 777
stop_us = 100
"#,
        env(4, None, Path::new(".")),
    )
    .unwrap();
    let mut g = w.generator(&|_| true);
    let mut out = Vec::new();
    g.pop_before(1, &mut out);
    let incast: Vec<&FlowSpec> = out.iter().filter(|f| f.class == 0).collect();
    assert_eq!(incast.len(), 3);
    assert_eq!(
        (incast[0].src, incast[0].size_bytes, incast[0].priority),
        (1, Some(200_000), 1)
    );
    assert!(incast[1..]
        .iter()
        .all(|f| f.size_bytes == Some(1000) && f.priority == 0 && f.dst == 0));
    let ids: Vec<u64> = incast.iter().map(|f| f.id).collect();
    g.on_finished(ids[1], 5_000_000);
    g.on_finished(ids[2], 6_000_000);
    // Closed-loop clients start one fixed think time (4 µs) after start; nothing else is due.
    assert_eq!(g.peek_start(), Some(4_000_000));
    out.clear();
    g.pop_before(4_000_001, &mut out);
    assert_eq!(out.len(), 4);
    assert!(out
        .iter()
        .all(|f| f.class == 1 && f.size_bytes == Some(777) && f.src != f.dst));
    // Client on host 2 finishes at 20 µs: its next flow starts at 24 µs.
    let c2 = out.iter().find(|f| f.src == 2).unwrap().id;
    g.on_finished(c2, 20_000_000);
    g.on_finished(ids[0], 30_000_000); // last incast flow: round 2 at 40 µs
    out.clear();
    g.pop_before(u64::MAX, &mut out);
    let got: Vec<(u16, u32, u64)> = out.iter().map(|f| (f.class, f.src, f.start_ps)).collect();
    assert_eq!(
        got,
        vec![
            (1, 2, 24_000_000),
            (0, 1, 40_000_000),
            (0, 2, 40_000_000),
            (0, 3, 40_000_000)
        ]
    );
    let c = g.completed_groups();
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].instance, c[0].completed_ps), (0, 30_000_000));
}

#[test]
fn cm_file_round_trips() {
    let f = CmFile::parse(CM, Path::new("chain.cm"), TimeUnit::Us).unwrap();
    for unit in [TimeUnit::Ps, TimeUnit::Ns, TimeUnit::Us] {
        let text = f.to_cm(unit);
        assert_eq!(
            CmFile::parse(&text, Path::new("again.cm"), unit).unwrap(),
            f,
            "{text}"
        );
    }
    // Flows generated from a pattern, written as .cm and read back, are the same flows.
    let dir = tempfile::tempdir().unwrap();
    let w = workload(
        "[[traffic]]\npattern = \"permutation\"\nsize_bytes = 5000\njitter_us = 2.5\nflows_per_host = 2\n[[traffic]]\npattern = \"incast\"\nsenders = 4\nfirst_sender_priority = 1\n",
        env(12, None, dir.path()),
    )
    .unwrap();
    let original = w.open_loop_flows();
    for unit in [TimeUnit::Ps, TimeUnit::Us] {
        let unit_name = if unit == TimeUnit::Ps { "ps" } else { "us" };
        std::fs::write(dir.path().join("out.cm"), to_cm(&original, 12, unit)).unwrap();
        let back = workload(
            &format!("[[traffic]]\npattern = \"cm_file\"\npath = \"out.cm\"\ntime_unit = \"{unit_name}\"\n"),
            env(12, None, dir.path()),
        )
        .unwrap()
        .open_loop_flows();
        let key = |f: &FlowSpec| (f.start_ps, f.src, f.dst, f.size_bytes, f.priority);
        let mut a: Vec<_> = original.iter().map(key).collect();
        let mut b: Vec<_> = back.iter().map(key).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b);
    }
}

#[test]
fn flow_lists_read_csv_and_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let w = workload(
        "[[traffic]]\npattern = \"random\"\nsize_bytes = 5000\njitter_us = 2\n[[traffic]]\npattern = \"background\"\n",
        env(10, None, dir.path()),
    )
    .unwrap();
    let original = w.open_loop_flows();
    let mut csv = Vec::new();
    workloads::write_flows_csv(&original, &mut csv).unwrap();
    std::fs::write(dir.path().join("f.csv"), &csv).unwrap();
    let pq = std::fs::File::create(dir.path().join("f.parquet")).unwrap();
    workloads::write_flows_parquet(&original, pq).unwrap();
    for file in ["f.csv", "f.parquet"] {
        let back = workload(
            &format!("[[traffic]]\npattern = \"flow_list\"\npath = \"{file}\"\n"),
            env(10, None, dir.path()),
        )
        .unwrap()
        .open_loop_flows();
        let key = |f: &FlowSpec| (f.start_ps, f.src, f.dst, f.size_bytes, f.priority);
        let mut a: Vec<_> = original.iter().map(key).collect();
        let mut b: Vec<_> = back.iter().map(key).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "{file}");
    }
}

/// A listed flow that names a host the topology lacks, or that goes from a
/// host to itself, is refused when the scenario loads, naming the file and
/// the row, not when the flow starts mid-run.
#[test]
fn flow_lists_refuse_missing_hosts_and_self_flows() {
    let dir = tempfile::tempdir().unwrap();
    let header = "src,dst,size_bytes,start_ps,priority\n";
    for (rows, expect) in [
        (
            "0,5,100,0,0\n3,10,100,0,0\n",
            "flow 1 (0-based row) names host 10, the topology has 10 hosts",
        ),
        (
            "0,5,100,0,0\n4,4,100,0,0\n",
            "flow 1 (0-based row) goes from host 4 to itself",
        ),
    ] {
        std::fs::write(dir.path().join("f.csv"), format!("{header}{rows}")).unwrap();
        let Err(err) = workload(
            "[[traffic]]\npattern = \"flow_list\"\npath = \"f.csv\"\n",
            env(10, None, dir.path()),
        ) else {
            panic!("{rows}: accepted");
        };
        let err = err.to_string();
        assert!(err.contains("f.csv") && err.contains(expect), "{err}");
        assert!(!err.contains('\n'), "one line: {err}");
    }
}

/// Closed loops to one server ([TRIM] §8's memcslap): hosts 2 and 3 each
/// run one loop of 3 requests to host 0, 4 µs of think time apart; host 1
/// runs none. After its third request a loop sends nothing more.
#[test]
fn closed_loops_to_a_target_stop_after_their_requests() {
    let w = workload(
        r#"
[[traffic]]
pattern = "closed_loop"
think_time_us = 4
think_dist = "fixed"
size_dist = "fixed"
size_bytes = 100
client_hosts = [2, 3]
target = 0
requests = 3
"#,
        env(4, Some(1_000_000_000), Path::new(".")),
    )
    .unwrap();
    let mut g = w.generator(&|_| true);
    let mut sent = Vec::new();
    loop {
        let mut out = Vec::new();
        g.pop_before(u64::MAX, &mut out);
        if out.is_empty() {
            break;
        }
        for f in out {
            assert_eq!((f.dst, f.size_bytes), (0, Some(100)));
            sent.push((f.src, f.start_ps));
            // Each request takes 10 µs.
            g.on_finished(f.id, f.start_ps + 10_000_000);
        }
    }
    sent.sort();
    let want: Vec<(u32, u64)> = [2, 3]
        .into_iter()
        .flat_map(|h| [(h, 4_000_000), (h, 18_000_000), (h, 32_000_000)])
        .collect();
    assert_eq!(sent, want);
    for (text, key) in [
        ("target = 9", "`target`"),
        ("target = 2", "host 2 is the target"),
        ("target = 0\nexclude_hosts = [1]", "not both"),
        ("requests = 0", "`requests`"),
    ] {
        let m = err_of(
            &format!(
                "[[traffic]]\npattern = \"closed_loop\"\nthink_time_us = 4\nsize_dist = \"fixed\"\nsize_bytes = 100\nclient_hosts = [2, 3]\n{text}\n"
            ),
            env(4, Some(1_000_000_000), Path::new(".")),
        );
        assert!(m.contains(key), "{text}: {m}");
    }
}

fn err_of(toml_text: &str, e: WorkloadEnv) -> String {
    workload(toml_text, e).unwrap_err().to_string()
}

#[test]
fn bad_input_gets_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("bad.cm"),
        "Nodes 4\nConnections 2\n0->1 id 1 start 0 size 10\n1->2 id 2 start zero size 10\n",
    )
    .unwrap();
    let m = err_of(
        "[[traffic]]\npattern = \"cm_file\"\npath = \"bad.cm\"\ntime_unit = \"ps\"\n",
        env(4, None, d),
    );
    assert!(m.contains("bad.cm:4:") && m.contains("start"), "{m}");

    std::fs::write(
        d.join("bad.cdf"),
        "size_bytes cumulative_percent\n0 0\n1000 60\n2000 40\n3000 100\n",
    )
    .unwrap();
    let m = err_of(
        "[[traffic]]\npattern = \"poisson\"\nload = 0.5\nsize_dist = \"file\"\ncdf_file = \"bad.cdf\"\n",
        env(4, Some(1), d),
    );
    assert!(m.contains("bad.cdf:4") && m.contains("not monotone"), "{m}");

    let m = err_of(
        "[[traffic]]\npattern = \"poisson\"\nload = 1.2\nsize_dist = \"websearch\"\n",
        env(4, Some(1), d),
    );
    assert!(
        m.contains("entry 0 (poisson)") && m.contains("load") && m.contains("1.2"),
        "{m}"
    );

    let m = err_of(
        "[[traffic]]\npattern = \"poisson\"\nload = 0.5\nsize_dist = \"websearch\"\n",
        env(4, None, d),
    );
    assert!(m.contains("horizon"), "{m}");

    let m = err_of(
        "[[traffic]]\npattern = \"collective\"\nalgorithm = \"recursive_doubling_allreduce\"\nhosts = 6\nsize_bytes = 10\n",
        env(8, None, d),
    );
    assert!(m.contains("power-of-two"), "{m}");

    let m = err_of(
        "[[traffic]]\npattern = \"incast\"\nsenders = 3\nreceiver = 9\n",
        env(8, None, d),
    );
    assert!(m.contains("`receiver`") && m.contains("host 9"), "{m}");

    let m = err_of(
        "[[traffic]]\npattern = \"poisson\"\nload = 0.5\nsize_dist = \"fixed\"\n",
        env(4, Some(1), d),
    );
    assert!(m.contains("size_bytes"), "{m}");

    let m = err_of(
        "[[traffic]]\npattern = \"poisson\"\nload = 0.5\nsize_dist = \"irn_heavy\"\nsize_quantum_bytes = 0\n",
        env(4, Some(1), d),
    );
    assert!(
        m.contains("entry 0 (poisson)") && m.contains("size_quantum_bytes"),
        "{m}"
    );

    // A payload for a table in bytes, a zero payload, and a payload beside a quantum.
    let poisson = "[[traffic]]\npattern = \"poisson\"\nload = 0.5\n";
    for (keys, want) in [
        (
            "size_dist = \"irn_heavy\"\npacket_payload_bytes = 1396\n",
            "does not apply",
        ),
        (
            "size_dist = \"imc10\"\npacket_payload_bytes = 0\n",
            "must be in 1..=",
        ),
        (
            "size_dist = \"imc10\"\npacket_payload_bytes = 1396\nsize_quantum_bytes = 1396\n",
            "exclude each other",
        ),
    ] {
        let m = err_of(&format!("{poisson}{keys}"), env(4, Some(1), d));
        assert!(
            m.contains("packet_payload_bytes") && m.contains(want) && !m.contains('\n'),
            "{m}"
        );
    }

    let m = parse("[[traffic]]\npattern = \"tornado\"\n")
        .unwrap_err()
        .to_string();
    assert!(m.contains("unknown variant `tornado`"), "{m}");

    let m = parse("[[traffic]]\npattern = \"incast\"\nsenders = 3\nsize_byte = 10\n")
        .unwrap_err()
        .to_string();
    assert!(m.contains("unknown field `size_byte`"), "{m}");
}
