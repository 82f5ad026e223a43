//! A run directory checked against its manifest before anything is read.
//!
//! The writer records every part after closing it ([`describe_part`]): path,
//! rows, bytes and CRC-32. A reader calls [`check_run`] and refuses the run
//! on the first problem, so a missing manifest, `"complete": false`, a part
//! that is missing, extra, truncated, bit-flipped or has another row count is
//! an error naming the file instead of a partial or wrong table read with
//! exit 0. `--allow-incomplete` (psim flows, psim-analyze) turns the problems
//! into warnings and reads what is there ([`read_flows_checked`]).

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use parquet::file::reader::{FileReader, SerializedFileReader};

use super::flows::{read_part, FlowRecord, FLOWS_DIR};
use super::manifest::{read_manifest, Manifest, PartEntry, MANIFEST_FILE};
use super::OutputError;

/// The subdirectories that hold parts (`part-*`): flows and the traces.
pub const PART_DIRS: [&str; 5] = [FLOWS_DIR, "packets", "queues", "tofino", "record"];

/// The one top-level data file (`[trace.queues] format = "hdf5"`).
pub const H5_PART: &str = "queues.h5";

/// Describes `DIR/rel` as the manifest records it. `rows` is read from the
/// Parquet footer for `.parquet` files; other files take `other_rows`.
pub fn describe_part(dir: &Path, rel: &str, other_rows: u64) -> Result<PartEntry, OutputError> {
    let path = dir.join(rel);
    let (bytes, crc32) = checksum(&path)?;
    let rows = if rel.ends_with(".parquet") {
        parquet_rows(&path)?
    } else {
        other_rows
    };
    Ok(PartEntry {
        path: rel.to_string(),
        rows,
        bytes,
        crc32,
    })
}

/// Size and CRC-32 of a file, read in 1 MiB blocks.
fn checksum(path: &Path) -> Result<(u64, u32), OutputError> {
    let mut f = File::open(path).map_err(|e| OutputError::io(path, e))?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
                bytes += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(OutputError::io(path, e)),
        }
    }
    Ok((bytes, h.finalize()))
}

/// Row count from a Parquet footer.
fn parquet_rows(path: &Path) -> Result<u64, OutputError> {
    let f = File::open(path).map_err(|e| OutputError::io(path, e))?;
    let r = SerializedFileReader::new(f).map_err(|source| OutputError::Parquet {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(r.metadata().file_metadata().num_rows().max(0) as u64)
}

/// What [`check_run`] found: the manifest, if it could be read, and every
/// problem, in the order the manifest lists the parts (extra parts last).
#[derive(Debug)]
pub struct RunCheck {
    /// The manifest (None when missing or unreadable: then `problems` says why).
    pub manifest: Option<Manifest>,
    /// Empty for a run that is complete and agrees with its manifest.
    pub problems: Vec<OutputError>,
}

impl RunCheck {
    /// The manifest if there is no problem, else the first problem.
    pub fn into_result(mut self) -> Result<Manifest, OutputError> {
        if self.problems.is_empty() {
            if let Some(m) = self.manifest {
                return Ok(m);
            }
        }
        Err(self.problems.swap_remove(0))
    }
}

/// Checks `dir` against its manifest: present and readable, `complete`, and
/// every listed part present with the recorded bytes, CRC-32 and rows, and
/// no `part-*` file (nor `queues.h5`) on disk that the manifest does not list.
pub fn check_run(dir: &Path) -> RunCheck {
    let manifest = match read_manifest(dir) {
        Ok(m) => m,
        Err(e) => {
            return RunCheck {
                manifest: None,
                problems: vec![e],
            }
        }
    };
    let mut problems = Vec::new();
    if !manifest.complete {
        problems.push(OutputError::Incomplete {
            path: dir.join(MANIFEST_FILE),
        });
    }
    let mut listed = BTreeSet::new();
    for p in &manifest.parts {
        listed.insert(p.path.clone());
        if let Err(e) = check_part(dir, p) {
            problems.push(e);
        }
    }
    problems.extend(extra_parts(dir, &listed));
    RunCheck {
        manifest: Some(manifest),
        problems,
    }
}

/// [`check_run`], refusing the run on its first problem.
pub fn verify_run(dir: &Path) -> Result<Manifest, OutputError> {
    check_run(dir).into_result()
}

fn check_part(dir: &Path, p: &PartEntry) -> Result<(), OutputError> {
    let rel = Path::new(&p.path);
    if p.path.is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(OutputError::InvalidData {
            path: dir.join(MANIFEST_FILE),
            detail: format!(
                "part {:?} is not a path inside the output directory",
                p.path
            ),
        });
    }
    let path = dir.join(rel);
    if !path.is_file() {
        return Err(OutputError::PartMissing { path });
    }
    let mismatch = |detail: String| OutputError::PartMismatch {
        path: path.clone(),
        detail,
    };
    let (bytes, crc) = checksum(&path)?;
    if bytes != p.bytes {
        return Err(mismatch(format!(
            "{bytes} bytes, the manifest says {} (truncated or replaced)",
            p.bytes
        )));
    }
    if crc != p.crc32 {
        return Err(mismatch(format!(
            "crc32 {crc:#010x}, the manifest says {:#010x} (the file is damaged or was changed)",
            p.crc32
        )));
    }
    if p.path.ends_with(".parquet") {
        let rows = parquet_rows(&path)?;
        if rows != p.rows {
            return Err(mismatch(format!(
                "{rows} rows, the manifest says {}",
                p.rows
            )));
        }
    }
    Ok(())
}

/// `part-*` files in the part directories, and `queues.h5`, that the
/// manifest does not list.
fn extra_parts(dir: &Path, listed: &BTreeSet<String>) -> Vec<OutputError> {
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for sub in PART_DIRS {
        let Ok(entries) = fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("part-") {
                found.push((format!("{sub}/{name}"), e.path()));
            }
        }
    }
    if dir.join(H5_PART).exists() {
        found.push((H5_PART.to_string(), dir.join(H5_PART)));
    }
    found.sort();
    found
        .into_iter()
        .filter(|(rel, _)| !listed.contains(rel))
        .map(|(_, path)| OutputError::PartExtra { path })
        .collect()
}

/// The flows of a run, checked against its manifest first: any problem is
/// an error, unless `allow_incomplete`, in which case each problem is handed
/// to `warn` and every `flows/part-*.parquet` on disk that decodes is read
/// (a part that does not is skipped with a warning). Sorted by `flow_id`.
pub fn read_flows_checked(
    dir: &Path,
    allow_incomplete: bool,
    warn: &mut dyn FnMut(String),
) -> Result<Vec<FlowRecord>, OutputError> {
    let check = check_run(dir);
    if !allow_incomplete {
        check.into_result()?;
        return super::flows::read_flows(dir);
    }
    let n = check.problems.len();
    for p in check.problems {
        warn(p.to_string());
    }
    let mut records = Vec::new();
    let mut read = 0usize;
    match super::flows::FLOWS.parts(dir) {
        Ok(parts) => {
            for part in parts {
                let before = records.len();
                match read_part(&part, &mut records) {
                    Ok(()) => read += 1,
                    Err(e) => {
                        records.truncate(before);
                        warn(format!("skipped: {e}"));
                    }
                }
            }
        }
        Err(e) => warn(format!("skipped: {e}")),
    }
    if n > 0 {
        warn(format!(
            "--allow-incomplete: {n} problem(s) with {}; read {read} flows part(s), {} rows: the table may be partial or wrong",
            dir.display(),
            records.len()
        ));
    }
    records.sort_by_key(|r| r.flow_id);
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{write_flows_part, write_manifest};

    fn run_with(dir: &Path, parts: Vec<PartEntry>) {
        let m: Manifest = serde_json::from_value(serde_json::json!({
            "psim_version": "0", "git_commit": null, "scenario_path": "x.toml",
            "config": {}, "seed": 1, "ranks": 1, "shards": 1, "threads": 1,
            "lookahead_ps": null, "sim_end_ps": 0, "events": 0, "wall_s": 0.0,
            "events_per_s": 0.0, "peak_rss_bytes": null, "flows_started": 0,
            "flows_finished": 0, "packets": {}, "parts": parts, "complete": true
        }))
        .unwrap();
        write_manifest(dir, &m).unwrap();
    }

    #[test]
    fn describe_matches_the_file_and_zlib() {
        let t = tempfile::tempdir().unwrap();
        fs::write(t.path().join(H5_PART), b"123456789").unwrap();
        let e = describe_part(t.path(), H5_PART, 4).unwrap();
        // The CRC-32 check value of "123456789" (zlib.crc32 gives the same).
        assert_eq!((e.rows, e.bytes, e.crc32), (4, 9, 0xcbf4_3926));
        write_flows_part(t.path(), 0, &[]).unwrap();
        let f = describe_part(t.path(), "flows/part-00000.parquet", 99).unwrap();
        assert_eq!(f.rows, 0, "rows of a Parquet part come from its footer");
        run_with(t.path(), vec![e, f]);
        verify_run(t.path()).unwrap();
        // A damaged non-Parquet part is caught by its checksum alone.
        fs::write(t.path().join(H5_PART), b"123456780").unwrap();
        let err = verify_run(t.path()).unwrap_err().to_string();
        assert!(err.contains("queues.h5") && err.contains("crc32"), "{err}");
    }

    #[test]
    fn parts_outside_the_directory_are_refused() {
        let t = tempfile::tempdir().unwrap();
        for bad in ["../flows/part-00000.parquet", "/etc/passwd", ""] {
            run_with(
                t.path(),
                vec![PartEntry {
                    path: bad.into(),
                    rows: 0,
                    bytes: 0,
                    crc32: 0,
                }],
            );
            let err = verify_run(t.path()).unwrap_err().to_string();
            assert!(err.contains("not a path inside"), "{err}");
        }
    }

    #[test]
    fn every_problem_is_listed() {
        let t = tempfile::tempdir().unwrap();
        write_flows_part(t.path(), 0, &[]).unwrap();
        write_flows_part(t.path(), 1, &[]).unwrap();
        let p0 = describe_part(t.path(), "flows/part-00000.parquet", 0).unwrap();
        let mut gone = p0.clone();
        gone.path = "flows/part-00005.parquet".into();
        run_with(t.path(), vec![p0, gone]);
        let c = check_run(t.path());
        let msgs: Vec<String> = c.problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert!(msgs[0].contains("part-00005") && msgs[0].contains("missing"));
        assert!(msgs[1].contains("part-00001") && msgs[1].contains("not listed"));
    }
}
