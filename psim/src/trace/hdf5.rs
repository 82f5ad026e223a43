//! The queue series as dense arrays in one HDF5 file, `DIR/queues.h5`
//! (`[trace.queues] format = "hdf5"`, built with `--features hdf5`).
//!
//! Layout (documented in `docs/outputs.md`): 2-D datasets `[port][interval]`
//! `queue_bytes`, `queue_pkts`, `tx_bytes`, `busy_ps`; the 3-D dataset
//! `paused_ps` `[port][interval][priority]`; 1-D port index
//! datasets `node`, `port`, `peer`; run metadata as root attributes. Ports are
//! sorted by (node, port), so the file is the same for any partition. The
//! file is written under a `.tmp` name and renamed, like every output.

use std::path::{Path, PathBuf};

use hdf5::types::VarLenUnicode;

use super::outdir::{tmp_path, write_atomic};
use super::queues::{PortSeries, QUEUES_SCHEMA_VERSION};
use super::OutputError;

/// File name inside the output directory.
pub const QUEUES_H5: &str = "queues.h5";

/// Run metadata stored as attributes of the root group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct H5Meta {
    /// Scenario `name` (empty if none).
    pub scenario: String,
    /// Global seed.
    pub seed: u64,
    /// Interval, ps.
    pub interval_ps: u64,
    /// End of the run, ps.
    pub sim_end_ps: u64,
}

fn h5err(path: &Path, e: hdf5::Error) -> OutputError {
    OutputError::InvalidData {
        path: path.to_path_buf(),
        detail: format!("HDF5: {}", e.to_string().replace('\n', " ")),
    }
}

/// Writes `series` (every traced port, any order) to `DIR/queues.h5`.
pub fn write_queues_h5(
    dir: &Path,
    meta: &H5Meta,
    series: &[PortSeries],
) -> Result<PathBuf, OutputError> {
    let path = dir.join(QUEUES_H5);
    let mut order: Vec<&PortSeries> = series.iter().collect();
    order.sort_by_key(|p| (p.node, p.port));
    let n = order.first().map_or(0, |p| p.queue_bytes.len());
    if let Some(p) = order.iter().find(|p| p.queue_bytes.len() != n) {
        return Err(OutputError::InvalidData {
            path,
            detail: format!("port {}:{} has a series of another length", p.node, p.port),
        });
    }
    let tmp = tmp_path(&path);
    // write_atomic holds the temporary file open; HDF5 truncates and fills the
    // same inode by name, which write_atomic then fsyncs and renames.
    write_atomic(&path, |_| {
        let e = |err| h5err(&tmp, err);
        let f = hdf5::File::create(&tmp).map_err(e)?;
        let ports = order.len();
        macro_rules! dense {
            ($name:literal, $t:ty, $field:ident) => {{
                let flat: Vec<$t> = order
                    .iter()
                    .flat_map(|p| p.$field.iter().copied())
                    .collect();
                f.new_dataset::<$t>()
                    .shape((ports, n))
                    .create($name)
                    .and_then(|d| d.write_raw(&flat[..]))
                    .map_err(e)?;
            }};
        }
        dense!("queue_bytes", u64, queue_bytes);
        dense!("queue_pkts", u32, queue_pkts);
        dense!("tx_bytes", u64, tx_bytes);
        dense!("busy_ps", u64, busy_ps);
        let paused: Vec<u64> = order
            .iter()
            .flat_map(|p| (0..n).flat_map(move |k| (0..8).map(move |prio| p.paused_in(k, prio))))
            .collect();
        f.new_dataset::<u64>()
            .shape((ports, n, 8))
            .create("paused_ps")
            .and_then(|d| d.write_raw(&paused[..]))
            .map_err(e)?;
        macro_rules! index {
            ($name:literal, $t:ty, $field:ident) => {{
                let v: Vec<$t> = order.iter().map(|p| p.$field).collect();
                f.new_dataset::<$t>()
                    .shape(ports)
                    .create($name)
                    .and_then(|d| d.write_raw(&v[..]))
                    .map_err(e)?;
            }};
        }
        index!("node", u32, node);
        index!("port", u16, port);
        index!("peer", u32, peer);
        for (name, v) in [
            ("seed", meta.seed),
            ("interval_ps", meta.interval_ps),
            ("sim_end_ps", meta.sim_end_ps),
            ("schema_version", QUEUES_SCHEMA_VERSION as u64),
        ] {
            f.new_attr::<u64>()
                .create(name)
                .and_then(|a| a.write_scalar(&v))
                .map_err(e)?;
        }
        let scenario: VarLenUnicode =
            meta.scenario
                .parse()
                .map_err(|_| OutputError::InvalidData {
                    path: tmp.clone(),
                    detail: "scenario name is not valid HDF5 text".into(),
                })?;
        f.new_attr::<VarLenUnicode>()
            .create("scenario")
            .and_then(|a| a.write_scalar(&scenario))
            .map_err(e)?;
        f.close().map_err(e)
    })
}

/// Reads `DIR/queues.h5` back: metadata and series sorted by (node, port).
/// Errors name the file.
pub fn read_queues_h5(dir: &Path) -> Result<(H5Meta, Vec<PortSeries>), OutputError> {
    let path = dir.join(QUEUES_H5);
    if !path.is_file() {
        return Err(OutputError::io(
            &path,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        ));
    }
    let e = |err| h5err(&path, err);
    let f = hdf5::File::open(&path).map_err(e)?;
    let u64_attr = |name: &str| f.attr(name).and_then(|a| a.read_scalar::<u64>());
    let version = u64_attr("schema_version").map_err(e)?;
    if version != QUEUES_SCHEMA_VERSION as u64 {
        return Err(OutputError::SchemaVersion {
            path: path.clone(),
            found: Some(version.to_string()),
            expected: QUEUES_SCHEMA_VERSION,
        });
    }
    let meta = H5Meta {
        scenario: f
            .attr("scenario")
            .and_then(|a| a.read_scalar::<VarLenUnicode>())
            .map_err(e)?
            .as_str()
            .to_string(),
        seed: u64_attr("seed").map_err(e)?,
        interval_ps: u64_attr("interval_ps").map_err(e)?,
        sim_end_ps: u64_attr("sim_end_ps").map_err(e)?,
    };
    let node: Vec<u32> = f.dataset("node").and_then(|d| d.read_raw()).map_err(e)?;
    let port: Vec<u16> = f.dataset("port").and_then(|d| d.read_raw()).map_err(e)?;
    let peer: Vec<u32> = f.dataset("peer").and_then(|d| d.read_raw()).map_err(e)?;
    let ds = f.dataset("queue_bytes").map_err(e)?;
    let shape = ds.shape();
    let (ports, n) = match shape[..] {
        [p, n] if p == node.len() && p == port.len() && p == peer.len() => (p, n),
        _ => {
            return Err(OutputError::SchemaMismatch {
                path,
                detail: format!(
                    "queue_bytes has shape {shape:?}, expected [{}, _]",
                    node.len()
                ),
            })
        }
    };
    let qb: Vec<u64> = ds.read_raw().map_err(e)?;
    let qp: Vec<u32> = f
        .dataset("queue_pkts")
        .and_then(|d| d.read_raw())
        .map_err(e)?;
    let tx: Vec<u64> = f
        .dataset("tx_bytes")
        .and_then(|d| d.read_raw())
        .map_err(e)?;
    let busy: Vec<u64> = f.dataset("busy_ps").and_then(|d| d.read_raw()).map_err(e)?;
    let paused: Vec<u64> = f
        .dataset("paused_ps")
        .and_then(|d| d.read_raw())
        .map_err(e)?;
    if [qp.len(), tx.len(), busy.len()]
        .iter()
        .any(|&l| l != ports * n)
        || paused.len() != ports * n * 8
    {
        return Err(OutputError::SchemaMismatch {
            path,
            detail: "datasets have different shapes".into(),
        });
    }
    let series = (0..ports)
        .map(|i| PortSeries {
            node: node[i],
            port: port[i],
            peer: peer[i],
            queue_bytes: qb[i * n..(i + 1) * n].to_vec(),
            queue_pkts: qp[i * n..(i + 1) * n].to_vec(),
            tx_bytes: tx[i * n..(i + 1) * n].to_vec(),
            busy_ps: busy[i * n..(i + 1) * n].to_vec(),
            paused_ps: {
                // A port never paused reads back as no series, as written.
                let rows = &paused[i * n * 8..(i + 1) * n * 8];
                if rows.iter().all(|&v| v == 0) {
                    Vec::new()
                } else {
                    rows.chunks_exact(8)
                        .map(|c| c.try_into().expect("eight priorities"))
                        .collect()
                }
            },
        })
        .collect();
    Ok((meta, series))
}
