//! The run manifest (`DIR/manifest.json`) and the process facts it records.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};

use super::outdir::write_atomic;
use super::OutputError;

/// File name of the manifest inside an output directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// Everything needed to reproduce and judge a run. Written to
/// `DIR/manifest.json` LAST, after every data file, so that the presence of
/// a manifest with `complete: true` is the single signal that the directory
/// holds a finished run.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Manifest {
    /// psim version.
    pub psim_version: String,
    /// Git commit psim was built from.
    pub git_commit: Option<String>,
    /// Scenario file.
    pub scenario_path: String,
    /// The fully resolved scenario.
    pub config: serde_json::Value,
    /// Global seed.
    pub seed: u64,
    /// MPI ranks.
    pub ranks: u32,
    /// Shards.
    pub shards: u32,
    /// Worker threads.
    pub threads: u32,
    /// Lookahead, ps (None when nothing is cut).
    pub lookahead_ps: Option<u64>,
    /// Simulated time at the end, ps.
    pub sim_end_ps: u64,
    /// Events processed.
    pub events: u64,
    /// JSON has no NaN or infinity: a non-finite value is written as `null`
    /// and read back as NaN, rather than making the manifest unreadable.
    #[serde(deserialize_with = "f64_or_nan")]
    pub wall_s: f64,
    /// See `wall_s` (a zero wall time makes this infinite).
    #[serde(deserialize_with = "f64_or_nan")]
    pub events_per_s: f64,
    /// Peak resident memory, bytes.
    pub peak_rss_bytes: Option<u64>,
    /// Flows started.
    pub flows_started: u64,
    /// Flows finished.
    pub flows_finished: u64,
    /// Packet conservation counters (sent, received, dropped, queued,
    /// in_flight); free-form so the engine can add counters without a format
    /// change.
    pub packets: serde_json::Value,
    /// Every data file the run wrote, with its row count and checksum
    /// (see [`PartEntry`]); the readers refuse a run whose files disagree.
    pub parts: Vec<PartEntry>,
    /// Workload groups that completed: collective iterations, incast rounds,
    /// `.cm` trigger groups. Sorted by completion time.
    #[serde(default)]
    pub groups: Vec<GroupRecord>,
    /// Simulated time of the checkpoint the run last resumed from
    /// (`psim resume`); absent for a run that was never interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from_ps: Option<u64>,
    /// How many times the run was resumed; absent when never.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resumes: u32,
    /// True once every file is written.
    pub complete: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One data file of a run, as the manifest records it after the file was
/// closed: readers compare all four fields with what is on disk
/// (`super::verify`), so a missing, truncated, replaced or bit-flipped part
/// is refused instead of read as wrong numbers.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PartEntry {
    /// Path relative to the output directory, `/`-separated
    /// (`flows/part-00000.parquet`, `queues.h5`).
    pub path: String,
    /// Rows: the Parquet footer's row count; for `queues.h5`, the number of
    /// ports (rows of its 2-D datasets).
    pub rows: u64,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// CRC-32 (IEEE 802.3, as `zlib.crc32`) of the file's bytes.
    pub crc32: u32,
}

impl AsRef<Path> for PartEntry {
    fn as_ref(&self) -> &Path {
        Path::new(&self.path)
    }
}

impl PartialEq<str> for PartEntry {
    fn eq(&self, other: &str) -> bool {
        self.path == other
    }
}

impl PartialEq<&str> for PartEntry {
    fn eq(&self, other: &&str) -> bool {
        self.path == *other
    }
}

impl PartialEq<String> for PartEntry {
    fn eq(&self, other: &String) -> bool {
        &self.path == other
    }
}

/// One completed workload group.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct GroupRecord {
    /// Index of the `[[traffic]]` entry that defines the group.
    pub entry: u16,
    /// Group name (collective algorithm or its `name`, `incast`, `.cm` trigger).
    pub name: String,
    /// Which occurrence: collective iteration, incast round, or 0.
    pub instance: u64,
    /// When the group's last flow finished (its last byte arrived), ps.
    pub completed_ps: u64,
}

fn f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Write `m` as pretty JSON (with a trailing newline) to `DIR/manifest.json`,
/// atomically. Call it after every data file is in place.
pub fn write_manifest(dir: &Path, m: &Manifest) -> Result<PathBuf, OutputError> {
    let path = dir.join(MANIFEST_FILE);
    let mut bytes = serde_json::to_vec_pretty(m).map_err(|source| OutputError::Json {
        path: path.clone(),
        source,
    })?;
    bytes.push(b'\n');
    write_atomic(&path, |f| {
        f.write_all(&bytes).map_err(|e| OutputError::io(&path, e))
    })
}

/// Read `DIR/manifest.json`. A missing file is
/// [`OutputError::MissingManifest`] (an incomplete run), distinct from an
/// unreadable or malformed one.
pub fn read_manifest(dir: &Path) -> Result<Manifest, OutputError> {
    let path = dir.join(MANIFEST_FILE);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(OutputError::MissingManifest { path })
        }
        Err(e) => return Err(OutputError::io(path, e)),
    };
    serde_json::from_slice(&bytes).map_err(|source| OutputError::Json { path, source })
}

/// Peak resident set size of this process in bytes (`VmHWM` from
/// `/proc/self/status`), `None` where that file does not exist (non-Linux) or
/// cannot be parsed. Recorded so that memory scaling can be compared across
/// runs without an external profiler.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_hwm(&status)
}

/// Extract `VmHWM` (reported by the kernel in kB, i.e. KiB) as bytes.
fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let mut words = line["VmHWM:".len()..].split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => value.checked_mul(1024),
        _ => None,
    }
}

/// The git commit psim was built from, baked in at compile time from the
/// `PSIM_GIT_COMMIT` environment variable (set by the build script). Read at
/// build time, not run time, because the binary may run far from its source
/// tree or after the tree has moved on.
pub fn git_commit() -> Option<String> {
    option_env!("PSIM_GIT_COMMIT")
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Manifest {
        Manifest {
            psim_version: "0.1.0".into(),
            git_commit: Some("abc123".into()),
            scenario_path: "scenarios/fat_tree_k4.toml".into(),
            config: json!({"topology": {"kind": "fat_tree", "k": 4}, "seed": 7}),
            seed: 7,
            ranks: 1,
            shards: 4,
            threads: 2,
            lookahead_ps: Some(1_000_000),
            sim_end_ps: 10_000_000_000,
            events: 123_456_789,
            wall_s: 12.5,
            events_per_s: 9_876_543.12,
            peak_rss_bytes: Some(1 << 30),
            flows_started: 100,
            flows_finished: 98,
            packets: json!({"sent": 10, "received": 8, "dropped": 1, "queued": 1, "in_flight": 0}),
            resumed_from_ps: None,
            resumes: 0,
            parts: vec![
                PartEntry {
                    path: "flows/part-00000.parquet".into(),
                    rows: 3,
                    bytes: 1234,
                    crc32: 0xdead_beef,
                },
                PartEntry {
                    path: "flows/part-00001.parquet".into(),
                    rows: 0,
                    bytes: 999,
                    crc32: 7,
                },
            ],
            groups: vec![],
            complete: true,
        }
    }

    fn same(a: &Manifest, b: &Manifest) -> bool {
        serde_json::to_value(a).unwrap() == serde_json::to_value(b).unwrap()
    }

    #[test]
    fn round_trip_pretty_and_atomic() {
        let t = tempfile::tempdir().unwrap();
        let m = sample();
        let p = write_manifest(t.path(), &m).unwrap();
        assert_eq!(p, t.path().join("manifest.json"));
        let text = fs::read_to_string(&p).unwrap();
        assert!(text.contains("\n  \"psim_version\": \"0.1.0\""), "{text}");
        assert!(text.ends_with("}\n"));
        let back = read_manifest(t.path()).unwrap();
        assert!(same(&m, &back));
        assert_eq!(back.wall_s, 12.5);
        let names: Vec<_> = fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec!["manifest.json"]);
    }

    #[test]
    fn nulls_round_trip() {
        let t = tempfile::tempdir().unwrap();
        let mut m = sample();
        m.git_commit = None;
        m.lookahead_ps = None;
        m.peak_rss_bytes = None;
        m.complete = false;
        write_manifest(t.path(), &m).unwrap();
        let back = read_manifest(t.path()).unwrap();
        assert!(same(&m, &back));
        assert!(back.git_commit.is_none() && !back.complete);
    }

    #[test]
    fn non_finite_rates_stay_readable() {
        let t = tempfile::tempdir().unwrap();
        let mut m = sample();
        m.wall_s = 0.0;
        m.events_per_s = f64::INFINITY;
        write_manifest(t.path(), &m).unwrap();
        let back = read_manifest(t.path()).unwrap();
        assert_eq!(back.wall_s, 0.0);
        assert!(back.events_per_s.is_nan());
    }

    #[test]
    fn missing_manifest_means_incomplete() {
        let t = tempfile::tempdir().unwrap();
        let err = read_manifest(t.path()).unwrap_err();
        assert!(
            matches!(err, OutputError::MissingManifest { .. }),
            "{err:?}"
        );
        assert!(err
            .to_string()
            .contains(&t.path().join("manifest.json").display().to_string()));
    }

    #[test]
    fn malformed_manifest_names_the_file() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("manifest.json");
        for bad in ["{\"psim_version\": ", "[]", "{\"psim_version\": \"x\"}"] {
            fs::write(&p, bad).unwrap();
            let err = read_manifest(t.path()).unwrap_err();
            assert!(matches!(err, OutputError::Json { .. }), "{err:?}");
            let msg = err.to_string();
            assert!(msg.contains(&p.display().to_string()), "{msg}");
            assert!(!msg.contains('\n'), "{msg}");
        }
    }

    #[test]
    fn write_into_missing_dir_names_the_file() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("nope");
        let err = write_manifest(&dir, &sample()).unwrap_err();
        assert!(
            err.to_string().contains(&dir.display().to_string()),
            "{err}"
        );
    }

    #[test]
    fn vm_hwm_parsing() {
        let status = "Name:\tpsim\nVmPeak:\t  999 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 1 kB\n";
        assert_eq!(parse_vm_hwm(status), Some(2048 * 1024));
        assert_eq!(parse_vm_hwm("Name: x\n"), None);
        assert_eq!(parse_vm_hwm("VmHWM: lots kB\n"), None);
        assert_eq!(parse_vm_hwm("VmHWM: 12 MB\n"), None);
        assert_eq!(parse_vm_hwm("VmHWM: 18446744073709551615 kB\n"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn peak_rss_is_available_on_linux() {
        let rss = peak_rss_bytes().expect("VmHWM on Linux");
        assert!(rss > 1024 * 1024, "{rss}");
    }

    #[test]
    fn git_commit_is_never_empty() {
        if let Some(c) = git_commit() {
            assert!(!c.is_empty());
        }
    }
}
