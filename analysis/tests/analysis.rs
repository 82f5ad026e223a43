//! The analysis on hand-made inputs with known answers, its errors, its
//! plots, the pinned schema, the binary, and one real (tiny) simulation.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use analysis::{
    analyze, analyze_dir, differing_params, flatten_config, hosts_and_rate, percentile,
    render_markdown, write_csv, write_plots, AnalysisError, Options, REQUIRED_COLUMNS,
};
use psim::trace::{write_flows_part, write_manifest, FlowRecord, GroupRecord, Manifest};
use serde_json::{json, Value};

const US: u64 = 1_000_000; // ps

#[allow(clippy::too_many_arguments)]
fn rec(
    id: u64,
    dst: u32,
    size: Option<u64>,
    fct: Option<u64>,
    ideal: Option<u64>,
    recv: u64,
) -> FlowRecord {
    FlowRecord {
        flow_id: id,
        src: 100 + dst,
        dst,
        protocol: "ndp".into(),
        priority: 0,
        size_bytes: size,
        start_ps: 10 * US,
        finish_ps: fct.map(|f| 10 * US + f),
        fct_ps: fct,
        ideal_fct_ps: ideal,
        bytes_sent: recv,
        bytes_received: recv,
        packets_sent: 1,
        packets_received: 1,
        retransmissions: 0,
        trims: 0,
        bounces: 0,
        timeouts: 0,
        // The ACK of the last byte is back 3 µs after it arrived.
        sender_finish_ps: fct.map(|f| 10 * US + f + 3 * US),
        rtt_samples: 0,
        rtt_mean_ps: None,
    }
}

fn fattree(k: u32) -> Value {
    json!({"name": "t", "seed": 1, "topology": {"kind": "fattree", "k": k, "oversubscription": 1,
           "link_gbps": 10.0, "host_link": {"gbps": null, "latency_ns": null}},
           "traffic": [{"protocol": "ndp", "load": 0.4}]})
}

/// Writes a run: one flows part per element of `parts`, then the manifest.
fn write_run(
    dir: &Path,
    parts: &[Vec<FlowRecord>],
    config: Value,
    sim_end_ps: u64,
    groups: Vec<GroupRecord>,
) {
    let mut names = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let path = write_flows_part(dir, i as u32, p).unwrap();
        let rel = path.strip_prefix(dir).unwrap().display().to_string();
        names.push(psim::trace::describe_part(dir, &rel, 0).unwrap());
    }
    let n: u64 = parts.iter().map(|p| p.len() as u64).sum();
    let m = Manifest {
        psim_version: "0.1.0".into(),
        git_commit: None,
        scenario_path: "inline.toml".into(),
        config,
        seed: 1,
        ranks: 1,
        shards: parts.len() as u32,
        threads: 1,
        lookahead_ps: None,
        sim_end_ps,
        events: 0,
        wall_s: 1.0,
        events_per_s: 0.0,
        peak_rss_bytes: None,
        flows_started: n,
        flows_finished: n,
        packets: json!({}),
        parts: names,
        groups,
        resumed_from_ps: None,
        resumes: 0,
        complete: true,
    };
    write_manifest(dir, &m).unwrap();
}

/// Records the parts now on disk in the manifest again (rows and
/// checksums), as if psim had written them: for the tests of what the
/// reader finds inside a part whose manifest entry agrees with it.
fn rerecord(dir: &Path) {
    let mut m = psim::trace::read_manifest(dir).unwrap();
    for p in &mut m.parts {
        *p = psim::trace::describe_part(dir, &p.path, 0).unwrap();
    }
    write_manifest(dir, &m).unwrap();
}

/// 1000 finished flows of 5000 B with FCT 1..1000 µs and ideal 1 µs (so
/// slowdown = FCT in µs), over 3 parts, plus 5 unfinished and 1 long-lived.
fn thousand(dir: &Path) {
    let mut parts = vec![Vec::new(), Vec::new(), Vec::new()];
    for i in 1..=1000u64 {
        // Shuffle the values over parts so no part is sorted by FCT.
        let fct = (i * 7919) % 1000 + 1;
        parts[(i % 3) as usize].push(rec(
            i,
            (i % 4) as u32,
            Some(5000),
            Some(fct * US),
            Some(US),
            5000,
        ));
    }
    for i in 0..5 {
        parts[0].push(rec(2000 + i, 0, Some(5000), None, Some(US), 100));
    }
    parts[1].push(rec(3000, 1, None, None, None, 777));
    write_run(dir, &parts, fattree(4), 2000 * US, vec![]);
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 1e-9 * b.abs().max(1.0))
}

#[test]
fn percentiles_of_a_hand_made_table_are_linear_interpolation() {
    let t = tempfile::tempdir().unwrap();
    thousand(t.path());
    let r = analyze_dir(t.path(), &Options::default()).unwrap();
    // Linear interpolation over 1..=1000: h = 999 q.
    for s in [&r.by_size[0], &r.all] {
        assert_eq!(s.flows, 1000);
        assert_eq!(s.slowdown_flows, 1000);
        assert!(close(s.fct_us.p50, 500.5), "{s:?}");
        assert!(close(s.fct_us.p99, 990.01), "{s:?}");
        assert!(close(s.fct_us.p999, 999.001), "{s:?}");
        assert!(close(s.slowdown.p50, 500.5) && close(s.slowdown.p99, 990.01));
        assert!(close(s.slowdown.p999, 999.001));
        // The means of 1..=1000 µs over a 1 µs ideal: 1001 / 2.
        assert!(close(s.fct_mean_us, 500.5) && close(s.slowdown_mean, 500.5));
    }
    // The reference implementation agrees.
    let v: Vec<f64> = (1..=1000).map(|x| x as f64).collect();
    assert!(close(percentile(&v, 0.99), 990.01));
    assert!(close(percentile(&v, 0.5), 500.5));
    assert_eq!(percentile(&[], 0.5), None);
    // Other buckets are present and empty.
    assert_eq!(r.by_size.len(), 5);
    for b in &r.by_size[1..] {
        assert_eq!((b.flows, b.fct_us.p50), (0, None));
        assert_eq!((b.fct_mean_us, b.slowdown_mean), (None, None));
    }
    assert_eq!(r.counters.flows, 1006);
    assert_eq!(r.counters.finished, 1000);
    // The CDF ends at the largest FCT with fraction 1.
    let last = *r.fct_cdf.last().unwrap();
    assert!(close(Some(last.0), 1000.0) && close(Some(last.1), 1.0));
    assert_eq!(r.slowdown_points.len(), 1000);
}

/// `--fct sender`: the same flows, each FCT 3 µs longer (its ACK's return),
/// so every percentile moves by exactly 3 µs and the span by 3 µs too.
#[test]
fn fcts_by_the_senders_completion_use_sender_finish_ps() {
    let t = tempfile::tempdir().unwrap();
    thousand(t.path());
    let sender = Options {
        fct: analysis::FctBy::Sender,
        ..Options::default()
    };
    let rx = analyze_dir(t.path(), &Options::default()).unwrap();
    let tx = analyze_dir(t.path(), &sender).unwrap();
    assert!(close(rx.all.fct_us.p50, 500.5) && close(tx.all.fct_us.p50, 503.5));
    assert!(close(tx.all.fct_us.p99, 993.01) && close(tx.all.fct_us.p999, 1002.001));
    assert!(
        close(tx.all.slowdown.p50, 503.5),
        "slowdown follows the FCT"
    );
    assert_eq!((tx.counters.finished, tx.counters.flows), (1000, 1006));
    assert_eq!(
        tx.completion.last_finish_ps,
        rx.completion.last_finish_ps.map(|f| f + 3 * US)
    );
}

#[test]
fn buckets_have_inclusive_upper_edges_and_an_open_last_bucket() {
    let t = tempfile::tempdir().unwrap();
    let flows = vec![
        rec(1, 0, Some(10), Some(3 * US), Some(US), 10),
        rec(2, 0, Some(100), Some(5 * US), Some(US), 100),
        rec(3, 0, Some(101), Some(7 * US), None, 101),
        rec(4, 0, Some(1000), Some(9 * US), Some(0), 1000),
        rec(5, 0, Some(1001), Some(11 * US), Some(2 * US), 1001),
        rec(
            6,
            0,
            Some(1_000_000),
            Some(13 * US),
            Some(2 * US),
            1_000_000,
        ),
    ];
    write_run(t.path(), &[flows], fattree(4), 100 * US, vec![]);
    let opts = Options {
        buckets: vec![100, 1000],
        ..Default::default()
    };
    let r = analyze_dir(t.path(), &opts).unwrap();
    let b = &r.by_size;
    assert_eq!(b.len(), 3);
    assert_eq!((b[0].label.as_str(), b[0].flows), ("[0, 100]", 2));
    assert_eq!(
        (b[1].label.as_str(), b[1].lo_bytes, b[1].hi_bytes),
        ("(100, 1000]", 100, Some(1000))
    );
    assert_eq!(b[1].flows, 2);
    // A null or zero ideal FCT gives no slowdown.
    assert_eq!(b[1].slowdown_flows, 0);
    assert_eq!(b[1].slowdown.p50, None);
    assert!(close(b[1].fct_us.p50, 8.0));
    assert_eq!(
        (b[2].label.as_str(), b[2].hi_bytes, b[2].flows),
        ("> 1000", None, 2)
    );
    assert!(close(b[2].slowdown.p50, 6.0)); // 5.5 and 6.5
    assert!(close(b[0].slowdown.p50, 4.0)); // 3 and 5
                                            // Decreasing edges are refused.
    let bad = Options {
        buckets: vec![1000, 100],
        ..Default::default()
    };
    assert!(matches!(
        analyze_dir(t.path(), &bad),
        Err(AnalysisError::Invalid(_))
    ));
}

#[test]
fn goodput_is_per_destination_sorted_ascending_and_utilisation_uses_the_manifest() {
    let t = tempfile::tempdir().unwrap();
    // sim_end 1 ms: 125 000 B = 1 Gb/s.
    let flows = vec![
        rec(1, 3, Some(1_250_000), Some(US), Some(US), 1_250_000), // host 3: 10 Gb/s
        rec(2, 1, Some(125_000), Some(US), Some(US), 125_000),     // host 1: 1 Gb/s
        rec(3, 2, Some(250_000), Some(US), Some(US), 250_000),     // host 2: 2 + 1 Gb/s
        rec(4, 2, Some(200_000), None, Some(US), 125_000),         // unfinished: its bytes count
    ];
    write_run(t.path(), &[flows], fattree(4), 1000 * US, vec![]);
    let r = analyze_dir(t.path(), &Options::default()).unwrap();
    let hosts: Vec<u32> = r.goodput.iter().map(|h| h.host).collect();
    assert_eq!(hosts, vec![1, 2, 3]);
    let g: Vec<f64> = r.goodput.iter().map(|h| h.gbps).collect();
    assert!(
        close(Some(g[0]), 1.0) && close(Some(g[1]), 3.0) && close(Some(g[2]), 10.0),
        "{g:?}"
    );
    assert_eq!(r.goodput[1].bytes_received, 375_000);
    let u = r.utilisation.as_ref().unwrap();
    assert_eq!(u.hosts, 16); // k = 4: k^3/4
    assert_eq!(u.host_link_gbps, 10.0);
    assert!(close(Some(u.goodput_gbps), 14.0));
    assert!(close(Some(u.utilisation), 14.0 / 160.0));
}

#[test]
fn host_count_and_rate_come_from_the_config() {
    let mut c = fattree(8);
    assert_eq!(hosts_and_rate(&c), Some((128, 10.0)));
    c["topology"]["oversubscription"] = json!(2);
    c["topology"]["host_link"]["gbps"] = json!(40.0);
    assert_eq!(hosts_and_rate(&c), Some((256, 40.0)));
    let ls = json!({"topology": {"kind": "leafspine", "leaves": 4, "spines": 2, "hosts_per_leaf": 8, "link_gbps": 25.0}});
    assert_eq!(hosts_and_rate(&ls), Some((32, 25.0)));
    assert_eq!(
        hosts_and_rate(&json!({"topology": {"kind": "torus"}})),
        None
    );
}

#[test]
fn differing_parameters_key_the_runs() {
    let a = fattree(4);
    let mut b = fattree(8);
    b["traffic"][0]["load"] = json!(0.6);
    let flat = flatten_config(&a);
    assert_eq!(flat["topology.kind"], "fattree");
    assert_eq!(flat["traffic.0.load"], "0.4");
    assert_eq!(flat["topology.host_link.gbps"], "null");
    let (keys, vals) = differing_params(&[&a, &b]);
    assert_eq!(keys, vec!["topology.k", "traffic.0.load"]);
    assert_eq!(vals, vec![vec!["4", "0.4"], vec!["8", "0.6"]]);
    let (keys, _) = differing_params(&[&a, &a.clone()]);
    assert!(keys.is_empty());
    // A key only one run has differs too.
    let mut c = a.clone();
    c["stop_us"] = json!(500);
    let (keys, vals) = differing_params(&[&a, &c]);
    assert_eq!(keys, vec!["stop_us"]);
    assert_eq!(vals, vec![vec![""], vec!["500"]]);
}

fn sweep(root: &Path) {
    for (name, k) in [("run-a", 4), ("run-b", 8)] {
        let dir = root.join(name);
        let flows = vec![
            rec(1, 0, Some(5000), Some(k as u64 * US), Some(US), 5000),
            rec(
                2,
                1,
                Some(50_000),
                Some(2 * k as u64 * US),
                Some(US),
                50_000,
            ),
        ];
        let groups = vec![GroupRecord {
            entry: 0,
            name: "incast".into(),
            instance: 0,
            completed_ps: 10 * US + 2 * k as u64 * US,
        }];
        write_run(&dir, &[flows], fattree(k), 100 * US, groups);
    }
    // Not a run: ignored by the expansion.
    std::fs::create_dir_all(root.join("notes")).unwrap();
}

#[test]
fn a_sweep_folder_expands_to_its_runs_side_by_side() {
    let t = tempfile::tempdir().unwrap();
    sweep(t.path());
    let rep = analyze(&[t.path().to_path_buf()], &Options::default()).unwrap();
    assert_eq!(rep.runs.len(), 2);
    assert_eq!(rep.param_keys, vec!["topology.k"]);
    assert_eq!(rep.param_values, vec![vec!["4"], vec!["8"]]);
    let md = render_markdown(&rep);
    assert!(md.contains("| run | topology.k | status | flows |"), "{md}");
    assert!(md.contains("## Workload groups"));
    // Completion: span = last finish - first start = 2k µs; max ideal 1 µs;
    // receiver bound: 50 kB to host 1 at 10 Gb/s = 40 µs.
    let c = &rep.runs[1].completion;
    assert_eq!(c.span_ps(), Some(16 * US));
    assert_eq!(c.receiver_bound_ps, Some(40 * US));
    assert_eq!(c.span_over_ideal(), Some(16.0 / 40.0));
    assert_eq!(c.groups.len(), 1);

    let out = t.path().join("report");
    let files = write_csv(&rep, &out).unwrap();
    assert_eq!(files.len(), 5);
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let mut lines = summary.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("run,topology.k,status,flows,finished,fct_p50_us,"));
    let row = lines.next().unwrap();
    assert!(row.contains(",4,ok,2,2,6,"), "{row}"); // k=4: FCTs 4 and 8 µs, p50 6
    let groups = std::fs::read_to_string(out.join("groups.csv")).unwrap();
    assert!(groups.contains(",0,incast,0,18\n"), "{groups}");
    let fct = std::fs::read_to_string(out.join("fct_by_size.csv")).unwrap();
    assert_eq!(fct.lines().count(), 1 + 2 * 6);
}

#[test]
fn loss_recovery_counters_have_totals_and_per_flow_means() {
    let t = tempfile::tempdir().unwrap();
    let mut flows = Vec::new();
    for i in 0..4u64 {
        let mut r = rec(i, 0, Some(9000), Some(US), Some(US), 9000);
        r.retransmissions = i;
        r.trims = 2 * i;
        r.bounces = 1;
        r.timeouts = if i == 3 { 1 } else { 0 };
        flows.push(r);
    }
    write_run(t.path(), &[flows], fattree(4), 100 * US, vec![]);
    let r = analyze_dir(t.path(), &Options::default()).unwrap();
    let c = r.counters;
    assert_eq!(
        (c.retransmissions, c.trims, c.bounces, c.timeouts),
        (6, 12, 4, 1)
    );
    assert_eq!(c.per_flow(c.retransmissions), 1.5);
    assert_eq!(c.per_flow(c.timeouts), 0.25);
}

fn png_is_drawn(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.len() > 1000, "{} too small", path.display());
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        path.display()
    );
    let img = image::load_from_memory(&bytes).unwrap().to_rgb8();
    assert_eq!(img.dimensions(), analysis::plots::SIZE);
    let background = *img.get_pixel(img.width() / 2, 1);
    assert!(
        img.pixels().any(|p| *p != background),
        "{}: blank",
        path.display()
    );
    // Frame, mesh and text are grey; data are drawn in colour.
    let coloured = img
        .pixels()
        .filter(|p| p[0] != p[1] || p[1] != p[2])
        .count();
    assert!(
        coloured > 20,
        "{}: only {coloured} coloured pixels: no data drawn",
        path.display()
    );
}

#[test]
fn plots_are_written_as_non_empty_png_and_svg() {
    let t = tempfile::tempdir().unwrap();
    thousand(&t.path().join("a"));
    sweep(&t.path().join("b"));
    let rep = analyze(
        &[t.path().join("a"), t.path().join("b")],
        &Options::default(),
    )
    .unwrap();
    let out = t.path().join("plots");
    let files = write_plots(&rep, &out).unwrap();
    assert_eq!(files.len(), 6);
    for stem in analysis::PLOTS {
        png_is_drawn(&out.join(format!("{stem}.png")));
        let svg = std::fs::read_to_string(out.join(format!("{stem}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{stem}.svg");
        assert!(svg.len() > 500, "{stem}.svg has {} bytes", svg.len());
        assert!(
            svg.contains("<polyline") || svg.contains("<circle"),
            "{stem}.svg draws no data"
        );
    }
}

#[test]
fn the_columns_read_are_pinned_to_psims_flow_schema() {
    let schema = psim::trace::flows_schema();
    for (name, ty) in &REQUIRED_COLUMNS {
        let f = schema
            .field_with_name(name)
            .unwrap_or_else(|_| panic!("psim's flows table lost `{name}`"));
        assert_eq!(
            format!("{:?}", f.data_type()),
            format!("{ty:?}"),
            "type of `{name}`"
        );
    }
    let names: Vec<&str> = REQUIRED_COLUMNS.iter().map(|c| c.0).collect();
    assert_eq!(
        names,
        [
            "flow_id",
            "src",
            "dst",
            "size_bytes",
            "start_ps",
            "finish_ps",
            "fct_ps",
            "ideal_fct_ps",
            "bytes_received",
            "retransmissions",
            "trims",
            "bounces",
            "timeouts",
            "sender_finish_ps"
        ]
    );
    // Version 3 added rtt_samples and rtt_mean_ps at the end; the analysis
    // reads its columns by name and needs neither.
    assert_eq!(
        psim::trace::FLOWS_SCHEMA_VERSION,
        3,
        "a new schema version needs the analysis reviewed"
    );
}

/// A part with psim's columns, version tag and values, but `drop` removed and
/// `retype` stored as UInt32.
fn write_odd_part(path: &Path, drop: Option<&str>, retype: Option<&str>, version: Option<&str>) {
    use arrow::array::{ArrayRef, StringArray, UInt32Array, UInt64Array, UInt8Array};
    use arrow::datatypes::{DataType, Field, Schema};
    let psim_schema = psim::trace::flows_schema();
    let mut fields = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    for f in psim_schema.fields() {
        if Some(f.name().as_str()) == drop {
            continue;
        }
        let ty = if Some(f.name().as_str()) == retype {
            DataType::UInt32
        } else {
            f.data_type().clone()
        };
        cols.push(match ty {
            DataType::UInt64 => Arc::new(UInt64Array::from(vec![1u64])),
            DataType::UInt32 => Arc::new(UInt32Array::from(vec![1u32])),
            DataType::UInt8 => Arc::new(UInt8Array::from(vec![0u8])),
            _ => Arc::new(StringArray::from(vec!["ndp"])),
        });
        fields.push(Field::new(f.name(), ty, f.is_nullable()));
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = arrow::record_batch::RecordBatch::try_new(schema.clone(), cols).unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_key_value_metadata(version.map(|v| {
            vec![parquet::file::metadata::KeyValue::new(
                psim::trace::SCHEMA_VERSION_KEY.to_string(),
                v.to_string(),
            )]
        }))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn err_of(dir: &Path) -> String {
    analyze(&[dir.to_path_buf()], &Options::default())
        .map(|_| ())
        .expect_err("must fail")
        .to_string()
}

#[test]
fn a_schema_mismatch_is_an_error_naming_the_part_and_the_column() {
    let t = tempfile::tempdir().unwrap();
    thousand(t.path());
    let part = t.path().join("flows/part-00001.parquet");
    let cur = psim::trace::FLOWS_SCHEMA_VERSION.to_string();
    let cur = Some(cur.as_str());
    for (drop, retype, version, expect) in [
        (Some("trims"), None, cur, "column `trims` is missing"),
        (
            None,
            Some("fct_ps"),
            cur,
            "column `fct_ps` is UInt32, expected UInt64",
        ),
        (None, None, Some("1"), "psim.schema_version is 1"),
        (None, None, None, "psim.schema_version is missing"),
    ] {
        write_odd_part(&part, drop, retype, version);
        rerecord(t.path());
        let e = err_of(t.path());
        assert!(
            e.starts_with(&format!("schema mismatch in {}", part.display())),
            "{e}"
        );
        assert!(e.contains(expect), "{e}");
        assert!(!e.contains('\n'));
    }
    // An unchanged layout with the right tag reads fine.
    write_odd_part(&part, None, None, cur);
    rerecord(t.path());
    analyze(&[t.path().to_path_buf()], &Options::default()).unwrap();
}

#[test]
fn corrupt_truncated_or_missing_parts_give_errors_naming_the_file() {
    let t = tempfile::tempdir().unwrap();
    thousand(t.path());
    let part = t.path().join("flows/part-00002.parquet");
    let good = std::fs::read(&part).unwrap();

    // The manifest's checksum finds any change to the bytes.
    std::fs::write(&part, b"this is not parquet at all").unwrap();
    let e = err_of(t.path());
    assert!(
        e.starts_with(&format!(
            "part {} does not match the manifest",
            part.display()
        )),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");

    std::fs::write(&part, &good[..good.len() / 2]).unwrap();
    let e = err_of(t.path());
    assert!(
        e.contains(&part.display().to_string()) && e.contains("bytes"),
        "{e}"
    );

    // Data pages damaged, footer intact, and the manifest made to agree:
    // found when the data is read, still naming the part.
    let mut bad = good.clone();
    for b in &mut bad[8..good.len() / 2] {
        *b = 0xA5;
    }
    std::fs::write(&part, &bad).unwrap();
    let e = err_of(t.path());
    assert!(e.contains("crc32"), "{e}");
    rerecord(t.path());
    let e = err_of(t.path());
    assert!(
        e.starts_with(&format!(
            "corrupt or unreadable parquet file {}",
            part.display()
        )),
        "{e}"
    );

    std::fs::remove_file(&part).unwrap();
    let e = err_of(t.path());
    assert!(
        e.starts_with(&format!(
            "part {} is listed in the manifest but missing",
            part.display()
        )),
        "{e}"
    );
}

#[test]
fn missing_directories_and_manifests_are_named() {
    let t = tempfile::tempdir().unwrap();
    let missing = t.path().join("nope");
    assert_eq!(
        err_of(&missing),
        format!("{} does not exist", missing.display())
    );
    let empty = t.path().join("empty");
    std::fs::create_dir_all(empty.join("flows")).unwrap();
    let e = err_of(&empty);
    assert!(
        e.starts_with(&format!(
            "no manifest at {}",
            empty.join("manifest.json").display()
        )),
        "{e}"
    );
    // An incomplete run is refused unless allowed.
    let run = t.path().join("run");
    thousand(&run);
    let text = std::fs::read_to_string(run.join("manifest.json")).unwrap();
    std::fs::write(
        run.join("manifest.json"),
        text.replace("\"complete\": true", "\"complete\": false"),
    )
    .unwrap();
    assert!(err_of(&run).contains("incomplete"));
    let opts = Options {
        allow_incomplete: true,
        ..Default::default()
    };
    analyze(std::slice::from_ref(&run), &opts).unwrap();
    // A malformed manifest names the file.
    std::fs::write(run.join("manifest.json"), "{").unwrap();
    assert!(err_of(&run).contains(&run.join("manifest.json").display().to_string()));
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_psim-analyze"))
}

#[test]
fn the_binary_prints_markdown_writes_csv_and_plots_and_fails_in_one_line() {
    let t = tempfile::tempdir().unwrap();
    sweep(t.path());
    let o = bin().arg(t.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = String::from_utf8(o.stdout).unwrap();
    assert!(
        md.starts_with("# psim analysis") && md.contains("## Per-host goodput"),
        "{md}"
    );

    let out = t.path().join("rep");
    let o = bin()
        .args([t.path().join("run-a"), t.path().join("run-b")])
        .arg("--out")
        .arg(&out)
        .args(["--format", "csv", "--buckets", "10000,100000"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in [
        "summary.csv",
        "fct_by_size.csv",
        "goodput.csv",
        "groups.csv",
        "utilisation.csv",
        "fct_cdf.png",
        "goodput_sorted.svg",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let fct = std::fs::read_to_string(out.join("fct_by_size.csv")).unwrap();
    assert!(
        fct.contains(",\"(10000, 100000]\",10000,100000,1,"),
        "{fct}"
    );

    let missing: PathBuf = t.path().join("missing");
    let o = bin().arg(&missing).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(
        err,
        format!(
            "psim-analyze: error: {} does not exist\n",
            missing.display()
        )
    );
    let o = bin()
        .arg(t.path())
        .args(["--format", "csv"])
        .output()
        .unwrap();
    assert!(!o.status.success());
}

#[test]
fn a_real_ndp_incast_analyses_consistently() {
    let text = "name = \"tiny-incast\"\nseed = 3\n[topology]\nkind = \"fattree\"\nk = 4\n[switch.queue]\nkind = \"ndp\"\nqueue_packets = 8\n\
                [[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 6\nsize_bytes = 90000\n";
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let scn = psim::config::Scenario::from_str(text, &root.join("inline.toml"), &[]).unwrap();
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("run");
    let outcome = psim::run::execute(
        &scn,
        psim::engine::SimOptions {
            shards: 2,
            threads: 1,
        },
        &out,
        false,
        &mut |_| {},
    )
    .unwrap();
    let flows = psim::trace::read_flows(&out).unwrap();
    let r = analyze_dir(&out, &Options::default()).unwrap();
    assert_eq!(r.counters.flows, flows.len() as u64);
    assert_eq!(r.counters.finished, 6);
    // 90 kB flows all land in the (10 kB, 100 kB] bucket.
    assert_eq!(r.by_size[1].flows, 6);
    assert_eq!(r.by_size.iter().map(|b| b.flows).sum::<u64>(), 6);
    // Slowdowns are >= 1 (up to rounding of the ideal), and the tail is the largest.
    let s = r.all.slowdown;
    assert!(
        s.p50.unwrap() >= 0.99 && s.p999.unwrap() >= s.p50.unwrap(),
        "{s:?}"
    );
    // One receiver: all goodput at host 0, equal to the delivered bytes.
    assert_eq!(r.goodput.len(), 1);
    assert_eq!(r.goodput[0].host, 0);
    assert_eq!(r.goodput[0].bytes_received, 6 * 90_000);
    let u = r.utilisation.unwrap();
    assert_eq!(u.hosts, 16);
    // The incast cannot beat the receiver's link: 540 kB at 10 Gb/s = 432 µs.
    assert_eq!(r.completion.receiver_bound_ps, Some(432 * US));
    assert!(r.completion.span_ps().unwrap() >= 432 * US);
    assert!(r.completion.span_over_ideal().unwrap() >= 1.0);
    assert_eq!(r.completion.groups.len(), outcome.manifest.groups.len());
    let rep = analyze(std::slice::from_ref(&out), &Options::default()).unwrap();
    write_plots(&rep, &t.path().join("plots")).unwrap();
    png_is_drawn(&t.path().join("plots/goodput_sorted.png"));
}

/// The folder `psim sweep` writes (task directories named `key=value,...`,
/// `sweep.json`, `logs/`, a `psim.log` in each task, and here one unfinished
/// task) analyses as one table: one row per finished task, keyed by exactly
/// the swept parameters, with each task's own values.
#[test]
fn a_psim_sweep_folder_is_one_table_keyed_by_the_swept_parameters() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let t = tempfile::tempdir().unwrap();
    let sweep_file = t.path().join("sweep.toml");
    std::fs::write(
        &sweep_file,
        format!(
            "base = {:?}\nout = \"out\"\n[grid]\n\"traffic.0.senders\" = [2, 3]\n\"protocol.ndp.iw_packets\" = [4, 23]\nseed = [1, 2, 3]\n",
            root.join("scenarios/small/ndp_incast_k4.toml").display().to_string()
        ),
    )
    .unwrap();
    let mut sw = psim::sweep::Sweep::load(&sweep_file).unwrap();
    sw.validate().unwrap();
    sw.write_index().unwrap();
    std::fs::create_dir_all(sw.out.join("logs")).unwrap();
    let (done, unfinished) = sw.tasks.split_at(sw.tasks.len() - 1);
    for task in done {
        let scn = psim::config::Scenario::load(&sw.base, &task.sets()).unwrap();
        let dir = sw.task_dir(task);
        let opts = psim::engine::SimOptions {
            shards: 2,
            threads: 1,
        };
        psim::run::execute(&scn, opts, &dir, false, &mut |_| {}).unwrap();
        std::fs::write(dir.join(psim::sweep::TASK_LOG), "done\n").unwrap();
    }
    // The last task was cut short: flows written, no manifest.
    std::fs::create_dir_all(sw.task_dir(&unfinished[0]).join("flows")).unwrap();

    let rep = analyze(std::slice::from_ref(&sw.out), &Options::default()).unwrap();
    assert_eq!(rep.runs.len(), 11);
    // sweep.json lists the unfinished task: it is a row with its status.
    assert_eq!(rep.skipped.len(), 1);
    assert_eq!(rep.skipped[0].status, "failed");
    assert_eq!(rep.skipped[0].dir, sw.task_dir(&unfinished[0]));
    assert_eq!(rep.warnings.len(), 1);
    assert!(
        rep.warnings[0].contains("is failed: no manifest"),
        "{:?}",
        rep.warnings
    );
    assert_eq!(
        rep.param_keys,
        ["protocol.ndp.iw_packets", "seed", "traffic.0.senders"]
    );
    for (run, values) in rep.runs.iter().zip(&rep.param_values) {
        let name = run.dir.file_name().unwrap().to_str().unwrap();
        let task = done.iter().find(|t| t.dir == name).expect(name);
        let expected: Vec<&String> = task.params.values().collect();
        assert_eq!(values.iter().collect::<Vec<_>>(), expected, "{name}");
        // An incast of N senders is N flows.
        assert_eq!(
            run.counters.flows.to_string(),
            task.params["traffic.0.senders"]
        );
    }
}

#[test]
fn queue_occupancy_is_plotted_from_the_queue_traces() {
    let text = "name = \"tiny-incast-queues\"\nseed = 3\n[topology]\nkind = \"fattree\"\nk = 4\n[switch.queue]\nkind = \"ndp\"\nqueue_packets = 8\n\
                [[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\nsenders = 6\nsize_bytes = 90000\n\
                [trace.queues]\nenabled = true\ninterval_us = 5\n";
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let scn = psim::config::Scenario::from_str(text, &root.join("inline.toml"), &[]).unwrap();
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("run");
    let opts = psim::engine::SimOptions {
        shards: 2,
        threads: 1,
    };
    psim::run::execute(&scn, opts, &out, false, &mut |_| {}).unwrap();

    // The lines are the ports with the highest peaks, highest first, checked
    // against psim's own reader of the same parts.
    let lines = analysis::queues::busiest_ports(&out, 3).unwrap().unwrap();
    assert_eq!(lines.len(), 3);
    let (_, rows) = psim::trace::read_queues(&out).unwrap();
    let mut peaks: std::collections::BTreeMap<(u32, u16), u64> = Default::default();
    for r in &rows {
        let p = peaks.entry((r.node, r.port)).or_default();
        *p = (*p).max(r.queue_bytes);
    }
    let mut order: Vec<_> = peaks.into_iter().collect();
    order.sort_by_key(|&(k, m)| (std::cmp::Reverse(m), k));
    for (line, ((node, port), peak)) in lines.iter().zip(&order) {
        assert_eq!(line.0, format!("node {node} port {port}"));
        let drawn = line.1.iter().map(|p| p.1).fold(0.0, f64::max);
        assert_eq!(drawn, *peak as f64 / 1e3);
    }
    assert!(order[0].1 >= 9000, "an incast builds queues: {order:?}");

    let rep = analyze(std::slice::from_ref(&out), &Options::default()).unwrap();
    let plots = t.path().join("plots");
    let files = write_plots(&rep, &plots).unwrap();
    assert_eq!(files.len(), 8);
    png_is_drawn(&plots.join(format!("{}.png", analysis::queues::QUEUE_PLOT)));
    let svg = std::fs::read_to_string(plots.join("queue_occupancy.svg")).unwrap();
    assert!(
        svg.contains("<polyline"),
        "queue_occupancy.svg draws no data"
    );

    // A damaged queue part is an error naming it, not a silently missing plot.
    let part = out.join("queues/part-00001.parquet");
    std::fs::write(&part, b"PAR1 truncated").unwrap();
    let e = write_plots(&rep, &plots).unwrap_err().to_string();
    assert!(e.contains(&part.display().to_string()), "{e}");
}

/// Every way a run can disagree with its manifest, each on a fresh run:
/// refused by the library and by the binary (exit 1, one line naming the
/// part).
#[test]
fn runs_that_disagree_with_their_manifest_are_refused_naming_the_part() {
    type Damage = fn(&Path);
    let cases: [(&str, Damage, &[&str]); 7] = [
        (
            "missing part",
            |d| std::fs::remove_file(d.join("flows/part-00001.parquet")).unwrap(),
            &["flows/part-00001.parquet", "missing"],
        ),
        (
            "extra part",
            |d| {
                std::fs::copy(
                    d.join("flows/part-00000.parquet"),
                    d.join("flows/part-00007.parquet"),
                )
                .map(|_| ())
                .unwrap()
            },
            &["flows/part-00007.parquet", "not listed"],
        ),
        (
            "no manifest",
            |d| std::fs::remove_file(d.join("manifest.json")).unwrap(),
            &["no manifest", "manifest.json"],
        ),
        (
            "complete false",
            |d| {
                let p = d.join("manifest.json");
                let m = std::fs::read_to_string(&p).unwrap();
                std::fs::write(&p, m.replace("\"complete\": true", "\"complete\": false")).unwrap()
            },
            &["incomplete", "manifest.json"],
        ),
        (
            "truncated part",
            |d| {
                let p = d.join("flows/part-00002.parquet");
                let b = std::fs::read(&p).unwrap();
                std::fs::write(&p, &b[..b.len() - 100]).unwrap()
            },
            &["flows/part-00002.parquet", "truncated"],
        ),
        (
            "bit flip",
            |d| {
                let p = d.join("flows/part-00002.parquet");
                let mut b = std::fs::read(&p).unwrap();
                let i = b.len() / 3;
                b[i] ^= 1;
                std::fs::write(&p, &b).unwrap()
            },
            &["flows/part-00002.parquet", "crc32"],
        ),
        (
            "wrong rows",
            |d| {
                let mut m = psim::trace::read_manifest(d).unwrap();
                m.parts[1].rows += 1;
                write_manifest(d, &m).unwrap();
            },
            &["flows/part-00001.parquet", "rows"],
        ),
    ];
    for (name, damage, needles) in cases {
        let t = tempfile::tempdir().unwrap();
        thousand(t.path());
        damage(t.path());
        let e = err_of(t.path());
        for n in needles {
            assert!(e.contains(n), "{name}: `{n}` not in {e}");
        }
        let o = bin().arg(t.path()).output().unwrap();
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(o.stdout.is_empty(), "{name}: printed a report");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.starts_with("psim-analyze: error: "), "{name}: {err}");
        for n in needles {
            assert!(err.contains(n), "{name}: `{n}` not in {err}");
        }
    }
}

/// `--allow-incomplete` analyses what is there and says so on stderr.
#[test]
fn allow_incomplete_reads_what_is_there_with_warnings() {
    let t = tempfile::tempdir().unwrap();
    thousand(t.path());
    std::fs::remove_file(t.path().join("flows/part-00000.parquet")).unwrap();
    let opts = Options {
        allow_incomplete: true,
        ..Default::default()
    };
    let rep = analyze(&[t.path().to_path_buf()], &opts).unwrap();
    assert_eq!(rep.runs[0].status, "allowed");
    // Part 0 held a third of the 1000 flows and the 5 unfinished ones.
    assert!(
        rep.runs[0].counters.flows < 700,
        "{:?}",
        rep.runs[0].counters
    );
    assert!(rep.warnings.iter().any(|w| w.contains("part-00000")));
    let o = bin()
        .arg(t.path())
        .arg("--allow-incomplete")
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("psim-analyze: warning: part"), "{err}");
    assert!(err.contains("--allow-incomplete"), "{err}");
    assert!(String::from_utf8(o.stdout).unwrap().contains("| allowed |"));
}

/// A sweep folder whose `sweep.json` lists a task that never ran, one that
/// failed (no manifest) and one with a damaged part: one row each with its
/// status, and one warning line each.
#[test]
fn failed_and_missing_sweep_tasks_are_rows_with_their_status() {
    let t = tempfile::tempdir().unwrap();
    let names = ["k=4", "k=8", "k=16", "k=32", "k=64"];
    for (i, n) in names.iter().enumerate().take(2) {
        let dir = t.path().join(n);
        let f = vec![rec(
            1,
            0,
            Some(5000),
            Some((i as u64 + 1) * US),
            Some(US),
            5000,
        )];
        write_run(&dir, &[f], fattree(4 << i), 100 * US, vec![]);
    }
    std::fs::create_dir_all(t.path().join("k=16/flows")).unwrap();
    std::fs::write(t.path().join("k=16/psim.log"), "error: boom\n").unwrap();
    let damaged = t.path().join("k=64");
    write_run(
        &damaged,
        &[vec![rec(1, 0, Some(1), Some(US), Some(US), 1)]],
        fattree(64),
        US,
        vec![],
    );
    std::fs::remove_file(damaged.join("flows/part-00000.parquet")).unwrap();
    let tasks: Vec<Value> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            json!({"id": i, "dir": n, "params": {"topology.k": n[2..].to_string()},
                             "overrides": {"topology.k": n[2..].to_string()}})
        })
        .collect();
    std::fs::write(
        t.path().join("sweep.json"),
        serde_json::to_string(&json!({"tasks": tasks})).unwrap(),
    )
    .unwrap();

    let rep = analyze(&[t.path().to_path_buf()], &Options::default()).unwrap();
    assert_eq!(rep.runs.len(), 2);
    let st: Vec<(&str, u64)> = rep.skipped.iter().map(|s| (s.status, s.id)).collect();
    assert_eq!(st, [("failed", 2), ("missing", 3), ("damaged", 4)]);
    assert_eq!(rep.warnings.len(), 3);
    let summary = &analysis::tables(&rep, analysis::Style::Exact)[0];
    let rows: Vec<String> = summary.rows.iter().map(|r| r[..3].join(",")).collect();
    let dir = |n: &str| t.path().join(n).display().to_string();
    assert_eq!(
        rows,
        [
            format!("{},4,ok", dir("k=4")),
            format!("{},8,ok", dir("k=8")),
            format!("{},16,failed", dir("k=16")),
            format!("{},32,missing", dir("k=32")),
            format!("{},64,damaged", dir("k=64")),
        ]
    );
    assert!(summary.rows[2][3..].iter().all(String::is_empty));

    let o = bin().arg(t.path()).output().unwrap();
    assert!(o.status.success());
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 3, "{err}");
    assert!(
        err.contains("psim-analyze: warning: sweep task 3 ("),
        "{err}"
    );
    assert!(err.contains("is missing: no task directory"), "{err}");
    let md = String::from_utf8(o.stdout).unwrap();
    assert!(
        md.contains("| failed |") && md.contains("| damaged |"),
        "{md}"
    );
}

/// 50 runs: the legend sits in its own panel, naming the 10 runs with the
/// largest p99 FCT; the rest are grey. `PSIM_KEEP_PLOTS=DIR` keeps the PNGs
/// to look at.
#[test]
fn fifty_runs_stay_readable() {
    let t = tempfile::tempdir().unwrap();
    for i in 0..50u64 {
        let flows: Vec<FlowRecord> = (0..40)
            .map(|f| {
                let fct = (f + 1) * (i + 1) * US / 4 + US;
                rec(
                    f,
                    (f % 16) as u32,
                    Some(5000 * (f + 1)),
                    Some(fct),
                    Some(US),
                    5000 * (f + 1),
                )
            })
            .collect();
        let mut cfg = fattree(4);
        cfg["traffic"][0]["load"] = json!(0.01 * (i + 1) as f64);
        cfg["seed"] = json!(i);
        write_run(
            &t.path().join(format!("load={i:02}")),
            &[flows],
            cfg,
            100_000 * US,
            vec![],
        );
    }
    let rep = analyze(&[t.path().to_path_buf()], &Options::default()).unwrap();
    assert_eq!(rep.runs.len(), 50);
    let slots = analysis::plots::highlighted(&rep);
    let coloured: Vec<usize> = (0..50).filter(|&i| slots[i].is_some()).collect();
    // Run i has FCTs growing with i: the top 10 by p99 are the last 10.
    assert_eq!(coloured, (40..50).collect::<Vec<_>>());
    let out = std::env::var_os("PSIM_KEEP_PLOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| t.path().join("plots"));
    write_plots(&rep, &out).unwrap();
    for stem in analysis::PLOTS {
        png_is_drawn(&out.join(format!("{stem}.png")));
    }
    if analysis::plots::text_available() {
        // The legend panel is right of the plot: its text is there, and
        // nothing of the legend is drawn over the data.
        let svg = std::fs::read_to_string(out.join("fct_cdf.svg")).unwrap();
        assert!(svg.contains("top 10 runs by p99 FCT"), "no legend title");
        assert!(svg.contains("40 other runs"));
    }
}

/// The Tofino control loop of a real run ([TRIM] Fig 7's 18-sender incast,
/// cut to 100 µs): `mode_shares` has a row per (switch, pipeline, port) that
/// left optimistic, each row's shares sum to 1, their mean over a port's
/// pipelines is `psim validate`'s `mode_share` of that port (a separate
/// implementation over the same trace), some port spends time pessimistic,
/// and the timeline is drawn. A run without a chip trace has no such table.
#[test]
fn a_tofino_runs_mode_timeline_is_tabulated_and_drawn() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let scn = psim::config::Scenario::load(
        &root.join("scenarios/tofino/senders_18.toml"),
        &["stop_us=100".into(), "trace.tofino.enabled=true".into()],
    )
    .unwrap();
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("run");
    psim::run::execute(
        &scn,
        psim::engine::SimOptions {
            shards: 2,
            threads: 1,
        },
        &out,
        false,
        &mut |_| {},
    )
    .unwrap();
    let rep = analyze(std::slice::from_ref(&out), &Options::default()).unwrap();
    let r = &rep.runs[0];
    let lines = r.modes.as_ref().expect("a chip trace");
    assert!(!lines.is_empty());
    let rows = psim::trace::read_tofino(&out).unwrap();
    let mut ports: Vec<u16> = lines.iter().map(|l| l.port).collect();
    ports.dedup();
    let mut pessimistic = 0.0f64;
    for port in ports {
        let mine: Vec<_> = lines.iter().filter(|l| l.port == port).collect();
        for (m, _) in analysis::modes::MODES.iter().enumerate() {
            let mean = mine.iter().map(|l| l.shares()[m]).sum::<f64>() / mine.len() as f64;
            let theirs = psim::validate::traced::mode_share(&rows, port, m as u32, r.sim_end_ps);
            assert!(
                (mean - theirs).abs() < 1e-9,
                "port {port} mode {m}: {mean} vs {theirs}"
            );
        }
        pessimistic = pessimistic.max(mine.iter().map(|l| l.shares()[2]).fold(0.0, f64::max));
    }
    for l in lines {
        let s: f64 = l.shares().iter().sum();
        assert!((s - 1.0).abs() < 1e-9, "{l:?}");
    }
    assert!(pessimistic > 0.0, "no port was ever pessimistic");
    let tables = analysis::tables(&rep, analysis::Style::Exact);
    let modes = tables.iter().find(|t| t.name == "mode_shares").unwrap();
    assert_eq!(modes.rows.len(), lines.len());
    assert!(render_markdown(&rep).contains("## Tofino control loop"));
    let plots = t.path().join("plots");
    let files = write_plots(&rep, &plots).unwrap();
    assert!(
        files.contains(&plots.join("mode_timeline.svg")),
        "{files:?}"
    );
    png_is_drawn(&plots.join("mode_timeline.png"));
    // Without a chip trace: no table, no plot.
    let plain = t.path().join("plain");
    thousand(&plain);
    let rep = analyze(std::slice::from_ref(&plain), &Options::default()).unwrap();
    assert!(rep.runs[0].modes.is_none());
    let tables = analysis::tables(&rep, analysis::Style::Exact);
    assert!(tables.iter().all(|t| t.name != "mode_shares"));
}

/// A sweep's bundle axis names task directories such as `row=load30`:
/// polars would read that as a hive partition and, trying the value as a
/// date, panic. The flows are read with hive partitioning off.
#[test]
fn a_task_directory_named_like_a_hive_partition_is_read() {
    let text = "seed = 3\n[topology]\nkind = \"fattree\"\nk = 4\n[[traffic]]\nprotocol = \"ndp\"\n\
                pattern = \"incast\"\nreceiver = 0\nsenders = 3\nsize_bytes = 9000\n";
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let scn = psim::config::Scenario::from_str(text, &root.join("inline.toml"), &[]).unwrap();
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("row=load30");
    let opts = psim::engine::SimOptions {
        shards: 1,
        threads: 1,
    };
    psim::run::execute(&scn, opts, &out, false, &mut |_| {}).unwrap();
    let rep = analyze(std::slice::from_ref(&out), &Options::default()).unwrap();
    assert_eq!(rep.runs.len(), 1);
    assert_eq!(rep.runs[0].counters.flows, 3);
}
