//! Checkpoints: a run's dynamic state at a window boundary, on disk.
//!
//! The engine keeps every output row in memory until the run ends, so a
//! checkpoint is the state of every shard (`shard/state.rs`) plus the window
//! loop's counters, taken at the top of the loop, where no packet is between
//! shards. The read-only data (topology, partition, parameters) is rebuilt
//! from the scenario on resume.
//!
//! Layout under the run's output directory:
//!
//! ```text
//! checkpoint/current              the name of the complete set, e.g. "w000000000042"
//! checkpoint/w000000000042/rank-00000.ckpt   one file per MPI rank, its shards
//! checkpoint/w000000000042/meta.json         what is needed to re-run (human-readable)
//! ```
//!
//! A rank file is `MAGIC`, the format version (u32 LE), the header length and
//! its CRC-32 (u32 LE each), the postcard [`Header`], then the postcard body,
//! whose CRC-32 the header holds.
//!
//! Atomicity: every file is written under a temporary name in its own
//! directory, synced, renamed and its directory synced. A new set goes into
//! a new directory; only when every rank has written its file (a collective
//! verdict) does rank 0 write `meta.json`, then replace `current` the same
//! way, and only then delete older sets. A crash at any point leaves
//! `current` naming a complete set.
//!
//! Format version rule: [`FORMAT_VERSION`] changes whenever the layout or
//! any serialised model type changes; a checkpoint is read only by the same
//! format version and the same psim version (derived layouts follow the
//! source, so any other version could misread it).

use super::comm::Comm;
use super::sim::{SimError, Simulation};
use rayon::prelude::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// First bytes of every rank file.
pub const MAGIC: &[u8; 8] = b"PSIMCKPT";
/// Layout version of the rank files and of `meta.json`.
pub const FORMAT_VERSION: u32 = 36;
/// Folder of the checkpoints in a run's output directory.
pub const CHECKPOINT_DIR: &str = "checkpoint";
/// The pointer file naming the complete set.
pub const CURRENT_FILE: &str = "current";
/// The human-readable description of a set.
pub const META_FILE: &str = "meta.json";
/// Exit status of `psim run`/`psim resume` after `--checkpoint-and-exit`:
/// `EX_TEMPFAIL` of sysexits.h ("try again later"), distinct from errors (1).
pub const EXIT_CHECKPOINTED: u8 = 75;

/// A checkpoint that cannot be written or used: one line naming the file.
#[derive(Debug, thiserror::Error)]
#[error("checkpoint {}: {what}", path.display())]
pub struct CheckpointError {
    /// The file or folder.
    pub path: PathBuf,
    /// What is wrong.
    pub what: String,
}

fn bad(path: &Path, what: impl Into<String>) -> CheckpointError {
    CheckpointError {
        path: path.to_path_buf(),
        what: what.into(),
    }
}

/// The header of a rank file.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Header {
    /// The psim version that wrote it.
    pub psim_version: String,
    /// [`scenario_hash`] of the run.
    pub scenario_hash: u64,
    /// Shards of the run.
    pub shards: u32,
    /// MPI ranks of the run.
    pub ranks: u32,
    /// The rank that wrote this file.
    pub rank: u32,
    /// Simulated time of the checkpoint, ps.
    pub sim_ps: u64,
    /// Windows run so far.
    pub windows: u64,
    /// Body length, bytes.
    pub body_len: u64,
    /// CRC-32 of the body.
    pub body_crc: u32,
}

/// What a checkpoint records to re-run: written as `meta.json`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Meta {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// The psim version that wrote it.
    pub psim_version: String,
    /// [`scenario_hash`], hexadecimal.
    pub scenario_hash: String,
    /// The scenario file (absolute).
    pub scenario_path: PathBuf,
    /// Its text when the run started; resume refuses a changed file.
    pub scenario_text: String,
    /// The `--set` overrides (`--seed` included, as `seed=N`).
    pub sets: Vec<String>,
    /// The seed.
    pub seed: u64,
    /// Shards.
    pub shards: u32,
    /// Worker threads (resume may change it).
    pub threads: u32,
    /// MPI ranks.
    pub ranks: u32,
    /// Simulated time of the checkpoint, ps.
    pub sim_ps: u64,
    /// Windows run so far.
    pub windows: u64,
    /// `--checkpoint-every`, seconds, carried over to a resumed run.
    pub checkpoint_every_s: Option<f64>,
    /// `--checkpoint-signal` (None: no signal handler).
    pub signal: Option<String>,
    /// `--checkpoint-and-exit`.
    pub exit_on_signal: bool,
    /// How many times the run had been resumed before this checkpoint.
    pub resumes: u32,
}

/// What a rank file's body holds.
#[derive(serde::Serialize, serde::Deserialize)]
struct RankBody {
    windows: u64,
    now: u64,
    watch: (u64, u64),
    /// (global shard id, its state).
    shards: Vec<(u32, Vec<u8>)>,
}

/// A 64-bit FNV-1a hash of what determines a run: the scenario text, the
/// overrides, the seed and the resolved configuration.
pub fn scenario_hash(text: &str, sets: &[String], seed: u64, resolved: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: &[u8]| {
        for &x in b.iter().chain(&[0xff]) {
            h ^= u64::from(x);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    eat(text.as_bytes());
    for s in sets {
        eat(s.as_bytes());
    }
    eat(&seed.to_le_bytes());
    eat(resolved.as_bytes());
    h
}

/// When to take checkpoints in a run, and where.
pub struct Policy {
    /// The run's output directory.
    pub out: PathBuf,
    /// Wall time between checkpoints (None: only on the signal).
    pub every: Option<Duration>,
    /// Set by the signal handler; polled at window boundaries.
    pub signal: Option<Arc<AtomicBool>>,
    /// Exit after the checkpoint a signal asked for.
    pub exit_on_signal: bool,
    /// The description written with each set (times filled in per set).
    pub meta: Meta,
    /// [`scenario_hash`] of the run, written in every rank file.
    pub hash: u64,
    /// Rank 0 says on stderr when it wrote or read a checkpoint, its size
    /// and how long it took.
    pub log: bool,
    last: Instant,
    taken: u64,
    /// The window count of the last checkpoint written or resumed from: a
    /// set holds one window's state, so it is not written again.
    last_window: Option<u64>,
    /// Test hook `PSIM_CKPT_EXIT_AFTER=N`: exit after the Nth checkpoint, as
    /// if signalled, so tests interrupt runs at chosen windows.
    exit_after: Option<u64>,
    /// Test hook `PSIM_CKPT_PAUSE_MS=N`: pause halfway through writing each
    /// rank file, so a test can kill the process mid-write.
    pause_ms: Option<u64>,
}

impl Policy {
    /// A policy; the test hooks are read from the environment here.
    pub fn new(
        out: PathBuf,
        every: Option<Duration>,
        signal: Option<Arc<AtomicBool>>,
        exit_on_signal: bool,
        meta: Meta,
        hash: u64,
    ) -> Policy {
        let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
        Policy {
            out,
            every,
            signal,
            exit_on_signal,
            meta,
            hash,
            log: false,
            last: Instant::now(),
            taken: 0,
            last_window: None,
            exit_after: env("PSIM_CKPT_EXIT_AFTER"),
            pause_ms: env("PSIM_CKPT_PAUSE_MS"),
        }
    }

    /// This rank's wishes at a window boundary: (take a checkpoint, then exit).
    pub(super) fn poll(&mut self) -> (bool, bool) {
        let signalled = self
            .signal
            .as_ref()
            .is_some_and(|s| s.swap(false, Ordering::Relaxed));
        let timer = self.every.is_some_and(|d| self.last.elapsed() >= d);
        (signalled || timer, signalled && self.exit_on_signal)
    }
}

/// Parses a wall-time duration: a number with `ms`, `s`, `m` or `h`, e.g.
/// `90s`, `30m`, `1.5h`; `0s` checkpoints at every window (for tests).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit {
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "`{s}`: give a number and a unit: ms, s, m or h (e.g. 90s, 30m)"
            ))
        }
    };
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v * scale < 1e9 => {
            Ok(Duration::from_secs_f64(v * scale))
        }
        _ => Err(format!(
            "`{s}`: `{num}` is not a non-negative number (e.g. 90s, 30m)"
        )),
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same folder,
/// synced, renamed, and the folder synced. `pause_ms` pauses halfway (test hook).
fn write_atomic(path: &Path, bytes: &[u8], pause_ms: Option<u64>) -> Result<(), CheckpointError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!("{}.tmp", name.unwrap_or_default()));
    let io = |e: std::io::Error| bad(path, e.to_string());
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    let half = bytes.len() / 2;
    f.write_all(&bytes[..half]).map_err(io)?;
    if let Some(ms) = pause_ms {
        f.flush().map_err(io)?;
        std::thread::sleep(Duration::from_millis(ms));
    }
    f.write_all(&bytes[half..]).map_err(io)?;
    f.sync_all().map_err(io)?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(io)?;
    sync_dir(dir).map_err(io)
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// A rank file: magic, version, header length and CRC, header, body.
fn encode(header: &Header, body: &[u8]) -> Vec<u8> {
    let h = postcard::to_stdvec(header).expect("a header always serialises");
    let mut v = Vec::with_capacity(20 + h.len() + body.len());
    v.extend_from_slice(MAGIC);
    v.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    v.extend_from_slice(&(h.len() as u32).to_le_bytes());
    v.extend_from_slice(&crc32fast::hash(&h).to_le_bytes());
    v.extend_from_slice(&h);
    v.extend_from_slice(body);
    v
}

/// What a rank file must match.
pub struct Expect {
    /// [`scenario_hash`].
    pub hash: u64,
    /// Shards.
    pub shards: u32,
    /// Ranks.
    pub ranks: u32,
    /// This rank.
    pub rank: u32,
}

/// Checks a rank file and returns its header and body.
fn decode<'a>(
    path: &Path,
    b: &'a [u8],
    ex: &Expect,
) -> Result<(Header, &'a [u8]), CheckpointError> {
    if b.len() < 20 || &b[..8] != MAGIC {
        return Err(bad(path, "not a psim checkpoint (bad magic or truncated)"));
    }
    let word = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    if word(8) != FORMAT_VERSION {
        return Err(bad(
            path,
            format!(
                "format version {} (this psim reads {FORMAT_VERSION})",
                word(8)
            ),
        ));
    }
    let hlen = word(12) as usize;
    let hb = b
        .get(20..20 + hlen)
        .ok_or_else(|| bad(path, "truncated header"))?;
    if crc32fast::hash(hb) != word(16) {
        return Err(bad(path, "header checksum mismatch (corrupted)"));
    }
    let h: Header = postcard::from_bytes(hb).map_err(|e| bad(path, format!("header: {e}")))?;
    let me = env!("CARGO_PKG_VERSION");
    if h.psim_version != me {
        return Err(bad(
            path,
            format!("written by psim {} (this is psim {me})", h.psim_version),
        ));
    }
    if h.scenario_hash != ex.hash {
        return Err(bad(path, "written for another scenario, seed or overrides"));
    }
    if (h.shards, h.ranks, h.rank) != (ex.shards, ex.ranks, ex.rank) {
        return Err(bad(
            path,
            format!(
                "written with {} shards on {} ranks (rank {}); this run has {} shards on {} ranks (rank {})",
                h.shards, h.ranks, h.rank, ex.shards, ex.ranks, ex.rank
            ),
        ));
    }
    let body = &b[20 + hlen..];
    if body.len() as u64 != h.body_len {
        return Err(bad(
            path,
            format!(
                "truncated: body of {} bytes, header says {}",
                body.len(),
                h.body_len
            ),
        ));
    }
    if crc32fast::hash(body) != h.body_crc {
        return Err(bad(path, "body checksum mismatch (corrupted)"));
    }
    Ok((h, body))
}

/// The file of `rank` in a set.
fn rank_file(set: &Path, rank: u32) -> PathBuf {
    set.join(format!("rank-{rank:05}.ckpt"))
}

/// The complete set of a run's output directory and its description.
pub fn current(out: &Path) -> Result<(PathBuf, Meta), CheckpointError> {
    let dir = out.join(CHECKPOINT_DIR);
    let ptr = dir.join(CURRENT_FILE);
    let name = std::fs::read_to_string(&ptr).map_err(|e| {
        bad(
            &ptr,
            format!("cannot read ({e}); was the run checkpointed?"),
        )
    })?;
    let name = name.trim();
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return Err(bad(&ptr, format!("names no checkpoint set (`{name}`)")));
    }
    let set = dir.join(name);
    let mp = set.join(META_FILE);
    let text = std::fs::read_to_string(&mp).map_err(|e| bad(&mp, format!("cannot read ({e})")))?;
    let meta: Meta =
        serde_json::from_str(&text).map_err(|e| bad(&mp, format!("unreadable: {e}")))?;
    if meta.format_version != FORMAT_VERSION {
        return Err(bad(
            &mp,
            format!(
                "format version {} (this psim reads {FORMAT_VERSION})",
                meta.format_version
            ),
        ));
    }
    Ok((set, meta))
}

fn agreed(comm: &mut dyn Comm, r: Result<(), CheckpointError>) -> Result<(), SimError> {
    let failed = comm.all_min(&[u64::from(r.is_ok())])[0] == 0;
    match r {
        Err(e) => Err(SimError::Checkpoint(e.to_string())),
        Ok(()) if failed => Err(SimError::Checkpoint(format!(
            "rank {}: another rank failed to write its checkpoint",
            comm.rank()
        ))),
        Ok(()) => Ok(()),
    }
}

/// This rank's wishes at a window boundary, as allreduce-min inputs:
/// [0 if it wants a checkpoint, 0 if it wants to exit after it].
pub(super) fn wishes(policy: &mut Option<Policy>) -> [u64; 2] {
    let (want, exit) = policy.as_mut().map_or((false, false), |p| p.poll());
    [u64::from(!want), u64::from(!exit)]
}

impl Simulation {
    /// Takes checkpoints as `policy` says.
    pub fn set_checkpoints(&mut self, policy: Policy) {
        self.checkpoints = Some(policy);
    }

    /// Writes this rank's part of a checkpoint set and, once every rank's is
    /// complete, makes it current. Returns whether the policy asks to exit.
    pub(super) fn take_checkpoint(&mut self) -> Result<bool, SimError> {
        let Some(mut policy) = self.checkpoints.take() else {
            return Ok(false);
        };
        let r = self.write_checkpoint(&mut policy);
        self.checkpoints = Some(policy);
        r
    }

    fn write_checkpoint(&mut self, p: &mut Policy) -> Result<bool, SimError> {
        if p.last_window == Some(self.windows) {
            return Ok(false);
        }
        let hash = p.hash;
        let started = Instant::now();
        let mut size = 0;
        let (rank, ranks) = (self.comm.rank(), self.comm.size());
        let name = format!("w{:012}", self.windows);
        let dir = p.out.join(CHECKPOINT_DIR);
        let set = dir.join(&name);
        let states: Result<Vec<(u32, Vec<u8>)>, postcard::Error> = self.pool.install(|| {
            self.shards
                .par_iter()
                .map(|s| s.save_state().map(|b| (s.id, b)))
                .collect()
        });
        let written = states
            .map_err(|e| bad(&set, format!("cannot serialise: {e}")))
            .and_then(|shards| {
                let body = postcard::to_stdvec(&RankBody {
                    windows: self.windows,
                    now: self.now,
                    watch: self.watch,
                    shards,
                })
                .map_err(|e| bad(&set, format!("cannot serialise: {e}")))?;
                let header = Header {
                    psim_version: env!("CARGO_PKG_VERSION").into(),
                    scenario_hash: hash,
                    shards: self.opts.shards,
                    ranks,
                    rank,
                    sim_ps: self.now,
                    windows: self.windows,
                    body_len: body.len() as u64,
                    body_crc: crc32fast::hash(&body),
                };
                std::fs::create_dir_all(&set).map_err(|e| bad(&set, e.to_string()))?;
                let file = encode(&header, &body);
                size = file.len();
                write_atomic(&rank_file(&set, rank), &file, p.pause_ms)
            });
        agreed(&mut *self.comm, written)?;
        let published = if rank == 0 {
            p.meta.sim_ps = self.now;
            p.meta.windows = self.windows;
            let json = serde_json::to_string_pretty(&p.meta).expect("meta serialises");
            write_atomic(&set.join(META_FILE), json.as_bytes(), None)
                .and_then(|()| write_atomic(&dir.join(CURRENT_FILE), name.as_bytes(), None))
                .map(|()| remove_old_sets(&dir, &name))
        } else {
            Ok(())
        };
        agreed(&mut *self.comm, published)?;
        if p.log && rank == 0 {
            eprintln!(
                "checkpoint {name} at {} simulated: {size} bytes (rank 0) in {:.2} s",
                crate::units::fmt_ps(self.now),
                started.elapsed().as_secs_f64()
            );
        }
        p.taken += 1;
        p.last = Instant::now();
        p.last_window = Some(self.windows);
        Ok(p.exit_after.is_some_and(|n| p.taken >= n))
    }

    /// Replaces the dynamic state of this freshly built simulation with the
    /// checkpoint set `set`; returns the size of this rank's file.
    pub fn restore(&mut self, set: &Path, hash: u64) -> Result<u64, CheckpointError> {
        let ex = Expect {
            hash,
            shards: self.opts.shards,
            ranks: self.comm.size(),
            rank: self.comm.rank(),
        };
        let path = rank_file(set, ex.rank);
        let bytes = std::fs::read(&path).map_err(|e| bad(&path, format!("cannot read ({e})")))?;
        let (_, body) = decode(&path, &bytes, &ex)?;
        let b: RankBody =
            postcard::from_bytes(body).map_err(|e| bad(&path, format!("unreadable body: {e}")))?;
        let mine: Vec<u32> = self.shards.iter().map(|s| s.id).collect();
        let theirs: Vec<u32> = b.shards.iter().map(|s| s.0).collect();
        if mine != theirs {
            return Err(bad(
                &path,
                format!("holds shards {theirs:?}, this rank runs {mine:?}"),
            ));
        }
        let restored: Result<(), postcard::Error> = self.pool.install(|| {
            self.shards
                .par_iter_mut()
                .zip(&b.shards)
                .try_for_each(|(s, (_, st))| s.restore_state(st))
        });
        restored.map_err(|e| bad(&path, format!("unreadable shard state: {e}")))?;
        self.windows = b.windows;
        self.now = b.now;
        self.watch = b.watch;
        if let Some(p) = &mut self.checkpoints {
            p.last_window = Some(b.windows);
        }
        Ok(bytes.len() as u64)
    }
}

/// Deletes the sets other than `keep` (best effort: a leftover set is only
/// disk space, never read, since `current` names the one to use).
fn remove_old_sets(dir: &Path, keep: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n != keep && n.starts_with('w') && e.path().is_dir() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(body: &[u8]) -> Header {
        Header {
            psim_version: env!("CARGO_PKG_VERSION").into(),
            scenario_hash: 7,
            shards: 3,
            ranks: 1,
            rank: 0,
            sim_ps: 5,
            windows: 2,
            body_len: body.len() as u64,
            body_crc: crc32fast::hash(body),
        }
    }

    const EX: Expect = Expect {
        hash: 7,
        shards: 3,
        ranks: 1,
        rank: 0,
    };

    #[test]
    fn a_file_reads_back_and_any_damage_is_named() {
        let body = b"some state".to_vec();
        let f = encode(&header(&body), &body);
        let p = Path::new("rank-00000.ckpt");
        let (h, b) = decode(p, &f, &EX).expect("reads back");
        assert_eq!((h, b), (header(&body), &body[..]));
        for i in 0..f.len() {
            let mut g = f.clone();
            g[i] ^= 0x10;
            let e = decode(p, &g, &EX).expect_err("a flipped byte is found");
            assert!(
                e.to_string().starts_with("checkpoint rank-00000.ckpt: "),
                "{e}"
            );
        }
        for n in 0..f.len() {
            assert!(decode(p, &f[..n], &EX).is_err(), "truncated to {n}");
        }
        let other = Expect { shards: 2, ..EX };
        let e = decode(p, &f, &other).expect_err("shard count");
        assert!(e.to_string().contains("3 shards on 1 ranks"), "{e}");
        let other = Expect { hash: 8, ..EX };
        assert!(decode(p, &f, &other)
            .expect_err("hash")
            .to_string()
            .contains("another scenario"));
    }

    #[test]
    fn durations_parse_with_units_and_refuse_the_rest() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for b in ["90", "s", "-1s", "1x", "nanh", ""] {
            assert!(parse_duration(b).is_err(), "{b}");
        }
    }

    #[test]
    fn the_hash_sees_every_input() {
        let base = scenario_hash("a", &["x=1".into()], 1, "{}");
        assert_ne!(base, scenario_hash("b", &["x=1".into()], 1, "{}"));
        assert_ne!(base, scenario_hash("a", &["x=2".into()], 1, "{}"));
        assert_ne!(base, scenario_hash("a", &["x=1".into()], 2, "{}"));
        assert_ne!(base, scenario_hash("a", &["x=1".into()], 1, "{ }"));
        assert_ne!(base, scenario_hash("ax=1", &[], 1, "{}"));
    }
}
