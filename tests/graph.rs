//! Graph topologies end to end: closed-form timing on a line graph, the
//! shipped Internet2 files across partitions, and one-line errors for bad
//! `[topology]` tables.

use psim::config::Scenario;
use psim_integration_tests::{repo_root, run};
use std::path::Path;

/// Serialisation time in ps of `bytes` at `mbps`, computed independently of psim.
fn ser(bytes: u64, mbps: u64) -> u64 {
    bytes * 8 * 1_000_000 / mbps
}

/// A scenario in `dir` over the graph `graph` (written beside it), one CBR
/// flow of `size` bytes from host 0 to host 1.
fn line_scenario(dir: &Path, graph: &str, size: u64) -> Scenario {
    std::fs::write(dir.join("line.graph"), graph).unwrap();
    let text = format!(
        "seed = 1\n[topology]\nkind = \"graph\"\nfile = \"line.graph\"\n[switch.queue]\nkind = \"droptail\"\n\
         queue_packets = 1000\n[[traffic]]\nprotocol = \"cbr\"\npattern = \"many_to_many\"\nsenders = [0]\n\
         receivers = [1]\nsize_bytes = {size}\n"
    );
    Scenario::from_str(&text, &dir.join("line.toml"), &[]).unwrap_or_else(|e| panic!("{e}"))
}

const LINE: &str = "# h0 -10G, 2us- s0 -1G, 50us- s1 -10G, 3us- h1\nhost h0 h1\nswitch s0 s1\n\
                    link h0 s0 10Gbps 2us\nlink s0 s1 1Gbps 50us\nlink s1 h1 10Gbps 3us\n";

#[test]
fn a_three_hop_line_graph_gives_the_closed_form_completion_time() {
    let dir = tempfile::tempdir().unwrap();
    // One 1500 B packet (1436 B payload + 64 B header): store and forward
    // over three links.
    let scn = line_scenario(dir.path(), LINE, 1436);
    let r = run(&scn, 1, 1);
    let one = ser(1500, 10_000)
        + 2_000_000
        + ser(1500, 1_000)
        + 50_000_000
        + ser(1500, 10_000)
        + 3_000_000;
    assert_eq!(r.flows[0].fct_ps, Some(one));
    assert_eq!(scn.topology.ideal_fct(0, 1, 1436, 1436), one);
    assert_eq!(scn.topology.hops(0, 1), 3);
    // 40 packets: the 1 Gb/s middle link is the bottleneck; the last packet
    // leaves it 39 packet times after the first.
    let n = 40;
    for shards in [1, 2, 3] {
        let scn = line_scenario(dir.path(), LINE, n * 1436);
        let r = run(&scn, shards, 2);
        let want = one + (n - 1) * ser(1500, 1_000);
        assert_eq!(r.flows[0].fct_ps, Some(want), "{shards} shards");
        // The ideal FCT (spec A16) of the same flow is this closed form too.
        assert_eq!(scn.topology.ideal_fct(0, 1, n * 1436, 1436), want);
    }
}

/// A closed loop's next flow starts one notice delay (plus its think time)
/// after the last one's last byte arrived: by default the network's longest
/// link delay (50 us on LINE), with `run.notice_delay_us` that delay, and
/// either way the same for any partition (the 50 us link is cut at 2 and 3
/// shards, so a 0.5 us notice shrinks the windows below the lookahead).
#[test]
fn a_closed_loops_next_flow_waits_one_notice_delay_for_any_partition() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("line.graph"), LINE).unwrap();
    let text = "seed = 1\nstop_us = 10000\n[topology]\nkind = \"graph\"\nfile = \"line.graph\"\n[switch.queue]\n\
                kind = \"droptail\"\nqueue_packets = 1000\n[[traffic]]\nprotocol = \"cbr\"\n\
                pattern = \"closed_loop\"\nclient_hosts = [0]\ntarget = 1\nthink_time_us = 2\n\
                think_dist = \"fixed\"\nsize_dist = \"fixed\"\nsize_bytes = 14360\nrequests = 4\n";
    let path = dir.path().join("loop.toml");
    for (sets, notice_ps) in [
        (&[][..], 50_000_000u64),
        (&["run.notice_delay_us=0.5"][..], 500_000),
    ] {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let scn = Scenario::from_str(text, &path, &sets).unwrap_or_else(|e| panic!("{e}"));
        let one = run(&scn, 1, 1);
        let mut flows = one.flows.clone();
        flows.sort_by_key(|f| f.start_ps);
        assert_eq!(flows.len(), 4, "{sets:?}");
        for w in flows.windows(2) {
            let last_byte = w[0].finish_ps.expect("finished");
            assert_eq!(w[1].start_ps, last_byte + notice_ps + 2_000_000, "{sets:?}");
        }
        for shards in [2, 3] {
            let other = run(&scn, shards, 2);
            assert!(
                other.csv == one.csv,
                "{sets:?}: {shards} shards differ from 1"
            );
        }
    }
    for bad in ["0", "-1", "nan"] {
        let set = format!("run.notice_delay_us={bad}");
        let e = Scenario::from_str(text, &path, &[set])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("run.notice_delay_us") && !e.contains('\n'),
            "{bad}: {e}"
        );
    }
}

#[test]
fn internet2_runs_are_identical_for_one_two_and_three_shards() {
    // CBR all-to-all bursts on I2 10G-10G with microsecond delays: flows cross
    // the 1.1 Gb/s core links, queues build, and partitions cut core links.
    let text = "seed = 9\n[topology]\nkind = \"graph\"\nfile = \"scenarios/topologies/i2_10g_10g_us.graph\"\n\
                [switch.queue]\nkind = \"droptail\"\nqueue_packets = 50\n[[traffic]]\nprotocol = \"cbr\"\n\
                pattern = \"permutation\"\nsize_bytes = 300000\n";
    let scn = Scenario::from_str(text, &repo_root().join("inline.toml"), &[]).unwrap();
    let one = run(&scn, 1, 1);
    assert_eq!(one.flows.len(), 100);
    assert!(one.outcome.summary.conserved());
    for shards in [2, 3] {
        let other = run(&scn, shards, 2);
        assert!(other.csv == one.csv, "{shards} shards differ from 1");
        assert_eq!(other.outcome.summary.events, one.outcome.summary.events);
    }
    // The partition cut core links only: 10 us of lookahead.
    let g = scn.topology.partition_graph();
    let report = partition::partition(&g, 3).unwrap().report(&g).unwrap();
    assert_eq!(report.lookahead_ps, Some(10_000_000));
}

#[test]
fn bad_graph_tables_name_the_key_or_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("line.graph"), LINE).unwrap();
    std::fs::write(
        dir.path().join("bad.graph"),
        "host h0 h1\nswitch s0\nlink h0 s0 10Gbps 1us\nlink h1 s9 10Gbps 1us\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("rf.txt"), "r1 r2 2\nr2 r3 1\n").unwrap();
    let load = |topology: &str| {
        let text = format!("[topology]\nkind = \"graph\"\n{topology}\n");
        Scenario::from_str(&text, &dir.path().join("s.toml"), &[]).map(|s| s.topology)
    };
    let err = |topology: &str| load(topology).unwrap_err().to_string();
    let e = err("file = \"line.graph\"\nformat = \"gml\"");
    assert!(
        e.starts_with("topology.format = \"gml\": unknown graph format"),
        "{e}"
    );
    // A psim file read as htsim's: its first statement is not the header.
    let e = err("file = \"line.graph\"\nformat = \"htsim\"");
    assert!(e.ends_with("line.graph:2: expected `Hosts <n>` (an htsim topology starts with Hosts, Switches and Links lines)"), "{e}");
    let e = err("file = \"line.graph\"\nhosts_per_switch = 2");
    assert!(e.starts_with("topology.hosts_per_switch"), "{e}");
    let e = err("file = \"bad.graph\"");
    assert!(
        e.ends_with("bad.graph:4: link names unknown node s9"),
        "{e}"
    );
    let e = err("file = \"missing.graph\"");
    assert!(
        e.contains("missing.graph: cannot read the topology file"),
        "{e}"
    );
    let e = err("file = \"rf.txt\"\nformat = \"rocketfuel\"\nhosts_per_switch = 0");
    assert!(e.starts_with("topology.hosts_per_switch = 0"), "{e}");
    assert!(!e.contains('\n'));
    // A Rocketfuel list with two hosts per router and 1 Gb/s host links.
    let t = load(
        "file = \"rf.txt\"\nformat = \"rocketfuel\"\nhosts_per_switch = 2\nlink_gbps = 40\n\
         [topology.host_link]\ngbps = 1",
    )
    .unwrap();
    assert_eq!((t.hosts(), t.switches()), (6, 3));
    assert_eq!(t.host_link().rate_bps, 1_000_000_000);
    assert_eq!(t.hops(0, 5), 4);
    assert_eq!(t.label(6), "r1");
}

/// [`LINE`] with `option` on its 1 Gb/s middle link, s0 - s1.
fn line_with(option: &str) -> String {
    LINE.replace(
        "link s0 s1 1Gbps 50us",
        &format!("link s0 s1 1Gbps 50us {option}"),
    )
}

#[test]
fn a_links_queue_size_replaces_the_disciplines_capacity_at_its_ports() {
    let dir = tempfile::tempdir().unwrap();
    // 40 packets at 10 Gb/s into the 1 Gb/s link: a queue of up to 36 builds
    // at s0, so 5 packets (or 7,500 bytes) of room drop some of them.
    let size = 40 * 1436;
    let with_size = |graph: &str, queue: &str| {
        std::fs::write(dir.path().join("line.graph"), graph).unwrap();
        let text = format!(
            "seed = 1\n[topology]\nkind = \"graph\"\nfile = \"line.graph\"\n[switch.queue]\n\
             kind = \"droptail\"\n{queue}\n[[traffic]]\nprotocol = \"cbr\"\npattern = \"many_to_many\"\n\
             senders = [0]\nreceivers = [1]\nsize_bytes = {size}\n"
        );
        let scn = Scenario::from_str(&text, &dir.path().join("line.toml"), &[])
            .unwrap_or_else(|e| panic!("{e}"));
        run(&scn, 1, 1)
    };
    let roomy = with_size(LINE, "queue_packets = 1000");
    assert_eq!(roomy.flows[0].bytes_received, size);
    for (option, scenario_wide) in [
        ("queue=5pkts", "queue_packets = 5"),
        ("queue=7500B", "queue_bytes = 7500"),
    ] {
        let sized = with_size(&line_with(option), "queue_packets = 1000");
        let want = with_size(LINE, scenario_wide);
        assert!(
            sized.flows[0].bytes_received < size,
            "{option}: nothing dropped"
        );
        // Only s0's port towards s1 ever queues, so its size alone decides.
        assert_eq!(sized.csv, want.csv, "{option}");
    }
    // [[switch.named]] gives s0 alone the small queue: the same flows again.
    let named = with_size(
        LINE,
        "queue_packets = 1000\n[[switch.named]]\nswitches = [\"s0\"]\n\
         [switch.named.queue]\nkind = \"droptail\"\nqueue_packets = 5",
    );
    assert_eq!(named.csv, with_size(LINE, "queue_packets = 5").csv);
    // Named, s1 (whose ports never queue) changes nothing.
    let idle_named = with_size(
        LINE,
        "queue_packets = 1000\n[[switch.named]]\nswitches = [\"s1\"]\n\
         [switch.named.queue]\nkind = \"droptail\"\nqueue_packets = 2",
    );
    assert_eq!(idle_named.csv, roomy.csv);
    // A size on a link that never queues changes nothing.
    let idle = with_size(
        &LINE.replace("link s1 h1 10Gbps 3us", "link s1 h1 10Gbps 3us queue=2pkts"),
        "queue_packets = 1000",
    );
    assert_eq!(idle.csv, roomy.csv);
}

#[test]
fn link_queue_sizes_a_discipline_cannot_take_are_refused_with_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let err = |graph: &str, queue: &str| {
        std::fs::write(dir.path().join("line.graph"), graph).unwrap();
        let text = format!(
            "[topology]\nkind = \"graph\"\nfile = \"line.graph\"\n[switch.queue]\n{queue}\n\
             [[traffic]]\nprotocol = \"tcp\"\npattern = \"permutation\"\nsize_bytes = 10000\n"
        );
        Scenario::from_str(&text, &dir.path().join("s.toml"), &[])
            .map(drop)
            .unwrap_err()
            .to_string()
    };
    let e = err(&line_with("queue=1000B"), "kind = \"droptail\"");
    assert!(
        e.ends_with("line.graph:5: the queue of s0 towards s1: 1000 B is smaller than one packet (9064 B: tcp MTU 9000 + header 64)"),
        "{e}"
    );
    let e = err(&line_with("queue=100pkts"), "kind = \"classes\"");
    assert!(e.ends_with("line.graph:5: the queue of s0 towards s1: its discipline (switch.queue, kind = \"classes\") has no single capacity to replace (size its classes in the scenario)"), "{e}");
    let e = err(
        &line_with("queue=20000B"),
        "kind = \"ecn_ramp\"\nqueue_bytes = 1000000\nkmin_kb = 5\nkmax_kb = 200\nscale_with_rate = false",
    );
    assert!(e.contains("line.graph:5: the queue of s0 towards s1: at this size, switch.queue.kmax_kb = 200: must not exceed the buffer (20000 bytes)"), "{e}");
    assert!(!e.contains('\n'));
    // DCTCP's K counts packets, as the table's capacity does: a size in
    // bytes would make K = 20 mean 20 bytes.
    let e = err(
        &line_with("queue=150000B"),
        "kind = \"ecn\"\nqueue_packets = 100\necn_threshold = 20",
    );
    assert!(e.ends_with("line.graph:5: the queue of s0 towards s1: a size in bytes, but switch.queue (kind = \"ecn\") counts its thresholds in packets, as its capacity: give the size in packets, or the table a capacity and thresholds in bytes"), "{e}");
    let e = err(&line_with("queue=4294967296pkts"), "kind = \"droptail\"");
    assert!(e.contains("line.graph:5: queue \"4294967296pkts\""), "{e}");
}

#[test]
fn named_switches_must_exist_once_each() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("line.graph"), LINE).unwrap();
    let load = |named: &str| {
        let text = format!(
            "[topology]\nkind = \"graph\"\nfile = \"line.graph\"\n{named}\n\
             [[traffic]]\nprotocol = \"tcp\"\npattern = \"permutation\"\nsize_bytes = 10000\n"
        );
        Scenario::from_str(&text, &dir.path().join("s.toml"), &[])
    };
    let table = |switches: &str, kind: &str| {
        format!(
            "[[switch.named]]\nswitches = {switches}\n[switch.named.queue]\nkind = \"{kind}\"\n"
        )
    };
    let s = load(&table("[\"s1\"]", "fq")).unwrap();
    let q = &s.queues;
    use psim::topo::EntityKind::Tor;
    let named = |n: &str| (0..s.topology.entities()).find(|&e| s.topology.label(e) == n);
    let (s0, s1) = (named("s0").unwrap(), named("s1").unwrap());
    assert_eq!(q.port_config(Tor, false, s1).name(), "fq");
    assert_eq!(q.port_config(Tor, true, s1).name(), "fq");
    assert_eq!(q.port_config(Tor, false, s0).name(), "droptail");
    // A FatTree's switches by their labels (numbered among all switches).
    let text = format!(
        "[topology]\nkind = \"fattree\"\nk = 4\n{}",
        table("[\"core17\", \"tor0\"]", "lifo")
    );
    let ft = Scenario::from_str(&text, &dir.path().join("f.toml"), &[]).unwrap();
    let lifo: Vec<String> = (0..ft.topology.entities())
        .filter(|&e| ft.queues.port_config(ft.topology.kind(e), false, e).name() == "lifo")
        .map(|e| ft.topology.label(e))
        .collect();
    assert_eq!(lifo, ["tor0", "core17"]);
    let err = |named: &str| load(named).map(drop).unwrap_err().to_string();
    let e = err(&table("[\"s7\"]", "fq"));
    assert_eq!(e, "switch.named[0].switches = \"s7\": names no switch of the topology (names as errors and `psim partition` show them)");
    let e = err(&table("[\"h0\"]", "fq"));
    assert!(
        e.starts_with("switch.named[0].switches = \"h0\": names no switch"),
        "{e}"
    );
    let e = err(&format!(
        "{}{}",
        table("[\"s0\"]", "fq"),
        table("[\"s1\", \"s0\"]", "lifo")
    ));
    assert_eq!(e, "switch.named[1].switches = \"s0\": is named again (first in switch.named[0]): a switch runs one discipline");
    let e = err(&table("[]", "fq"));
    assert_eq!(e, "switch.named[0].switches = []: name at least one switch");
    let e = err("[[switch.named]]\nswitches = [\"s0\"]\n[switch.named.queue]\nkind = \"droptail\"\nqueue_bytes = 100");
    assert!(
        e.starts_with("switch.named[0].queue.queue_bytes = 100: smaller than one packet"),
        "{e}"
    );
}

/// An htsim file's two queues of a cable may differ: each end's port takes
/// its own, and an error about the one back names its own line.
#[test]
fn an_htsim_files_queue_sizes_apply_per_direction() {
    let dir = tempfile::tempdir().unwrap();
    let topo = "Hosts 2\nSwitches 1\nLinks 2\n\
                switch s0, queue s0_h0, queue s0_h1\nhost h0, queue nic0\nhost h1, queue nic1\n\
                queue nic0, type composite, speed 10 Gbps, size 150000, dst p0\n\
                pipe p0, latency 1 us, src h0, dst s0, reverse p0r\n\
                queue s0_h0, type composite, speed 10 Gbps, size 30000, dst p0r\n\
                queue nic1, type composite, speed 10 Gbps, size 500, dst p1\n\
                pipe p1, latency 1 us, src h1, dst s0, reverse p1r\n\
                queue s0_h1, type composite, speed 10 Gbps, size 20000, dst p1r\n";
    std::fs::write(dir.path().join("t.topo"), topo).unwrap();
    let load = |protocol: &str| {
        let text = format!(
            "[topology]\nkind = \"graph\"\nfile = \"t.topo\"\nformat = \"htsim\"\n\
             [[traffic]]\nprotocol = \"{protocol}\"\npattern = \"permutation\"\nsize_bytes = 10000\n"
        );
        Scenario::from_str(&text, &dir.path().join("s.toml"), &[])
    };
    // h1's NIC holds 500 B: refused for 9,064 B TCP packets, on nic1's line.
    let e = load("tcp").map(drop).unwrap_err().to_string();
    assert!(
        e.ends_with("t.topo:10: the queue of h1 towards s0: 500 B is smaller than one packet (9064 B: tcp MTU 9000 + header 64)"),
        "{e}"
    );
    let topo2 = topo.replace("size 500,", "size 10000,");
    std::fs::write(dir.path().join("t.topo"), topo2).unwrap();
    let s = load("tcp").unwrap();
    let t = &s.topology;
    use psim::topo::QueueLimit::Bytes;
    let id = |n: &str| (0..t.entities()).find(|&e| t.label(e) == n).unwrap();
    let port_to = |a: &str, b: &str| {
        let (a, b) = (id(a), id(b));
        (0..t.port_count(a))
            .find(|&p| t.port(a, p).peer == b)
            .unwrap()
    };
    for (a, b, want) in [
        ("h0", "s0", 150_000),
        ("s0", "h0", 30_000),
        ("h1", "s0", 10_000),
        ("s0", "h1", 20_000),
    ] {
        assert_eq!(
            t.port_queue(id(a), port_to(a, b)),
            Some(Bytes(want)),
            "{a} -> {b}"
        );
    }
}
