//! `[trace.queues] format = "hdf5"` writes the same values as the Parquet long
//! format of the same run, with the run's metadata as attributes. Built and run
//! only with `--features hdf5` (CI: `cargo test -p psim --features hdf5 --test hdf5`).
#![cfg(feature = "hdf5")]

use std::path::Path;

use psim::config::Scenario;
use psim::engine::SimOptions;
use psim::run::execute;
use psim::trace::hdf5::{read_queues_h5, write_queues_h5, H5Meta, QUEUES_H5};
use psim::trace::PortSeries;
use psim::trace::{read_manifest, read_queues};

const SCENARIO: &str = "name = \"h5-incast\"\nseed = 7\n[topology]\nkind = \"fattree\"\nk = 4\n\
    [switch.queue]\nkind = \"ndp\"\nqueue_packets = 8\n\
    [[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 6\nsize_bytes = 90000\n\
    [trace.queues]\nenabled = true\ninterval_us = 4\n";

fn run(format: &str, shards: u32, out: &Path) -> Scenario {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let set = format!("trace.queues.format=\"{format}\"");
    let scn = Scenario::from_str(SCENARIO, &root.join("inline.toml"), &[set]).unwrap();
    execute(
        &scn,
        SimOptions { shards, threads: 1 },
        out,
        false,
        &mut |_| {},
    )
    .unwrap();
    scn
}

#[test]
fn hdf5_holds_the_same_series_as_parquet() {
    let t = tempfile::tempdir().unwrap();
    let (pq, h5) = (t.path().join("pq"), t.path().join("h5"));
    let scn = run("parquet", 2, &pq);
    run("hdf5", 3, &h5);

    let m = read_manifest(&h5).unwrap();
    assert!(m.parts.iter().any(|p| p == "queues.h5"), "{:?}", m.parts);
    assert!(!h5.join("queues").exists() && !h5.join("queues.h5.tmp").exists());

    let (meta, series) = read_queues_h5(&h5).unwrap();
    // The manifest records the file: its rows are its ports, and it checks.
    let entry = m.parts.iter().find(|p| *p == "queues.h5").unwrap();
    assert_eq!(entry.rows, series.len() as u64);
    psim::trace::verify_run(&h5).unwrap();
    assert_eq!(meta.scenario, "h5-incast");
    assert_eq!(meta.seed, 7);
    assert_eq!(meta.interval_ps, 4_000_000);
    assert_eq!(meta.sim_end_ps, m.sim_end_ps);

    let (interval, rows) = read_queues(&pq).unwrap();
    assert_eq!(interval, meta.interval_ps);
    let n = (m.sim_end_ps / interval + 1) as usize;
    let ports: usize = (0..scn.topology.entities())
        .map(|e| scn.topology.port_count(e) as usize)
        .sum();
    assert_eq!(series.len(), ports);
    assert_eq!(rows.len(), ports * n);
    let mut busiest = 0;
    for (p, chunk) in series.iter().zip(rows.chunks(n)) {
        assert_eq!(p.queue_bytes.len(), n);
        for (k, r) in chunk.iter().enumerate() {
            assert_eq!((r.node, r.port, r.peer), (p.node, p.port, p.peer));
            assert_eq!(r.time_ps, k as u64 * interval);
            let paused: [u64; 8] = std::array::from_fn(|prio| p.paused_in(k, prio as u8));
            assert_eq!(
                r.paused_ps, paused,
                "port {}:{} interval {k}",
                p.node, p.port
            );
            assert_eq!(
                (r.queue_bytes, r.queue_pkts, r.tx_bytes, r.busy_ps),
                (
                    p.queue_bytes[k],
                    p.queue_pkts[k],
                    p.tx_bytes[k],
                    p.busy_ps[k]
                ),
                "port {}:{} interval {k}",
                p.node,
                p.port
            );
        }
        busiest = busiest.max(*p.queue_bytes.iter().max().unwrap());
    }
    assert!(busiest > 9000, "the incast should build a queue: {busiest}");
}

#[test]
fn round_trip_and_errors_name_the_file() {
    let t = tempfile::tempdir().unwrap();
    let s = |node, port| PortSeries {
        node,
        port,
        peer: 9,
        queue_bytes: vec![1, 2, 3],
        queue_pkts: vec![4, 5, 6],
        tx_bytes: vec![7, 8, u64::MAX],
        busy_ps: vec![0, 10, 20],
        paused_ps: if port == 1 {
            vec![[0; 8], [0, 0, 0, 4, 0, 0, 0, 0], [0; 8]]
        } else {
            Vec::new()
        },
    };
    let meta = H5Meta {
        scenario: "x".into(),
        seed: 5,
        interval_ps: 10,
        sim_end_ps: 25,
    };
    write_queues_h5(t.path(), &meta, &[s(3, 1), s(2, 0)]).unwrap();
    let (m, back) = read_queues_h5(t.path()).unwrap();
    assert_eq!(m, meta);
    assert_eq!(back, vec![s(2, 0), s(3, 1)]);
    let names: Vec<_> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![QUEUES_H5]);

    std::fs::write(t.path().join(QUEUES_H5), b"not hdf5").unwrap();
    let err = read_queues_h5(t.path()).unwrap_err().to_string();
    assert!(err.contains("queues.h5") && !err.contains('\n'), "{err}");
}
