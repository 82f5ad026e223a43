//! The checkpoint options of `psim run` and the `psim resume` command
//! (docs/checkpoint.md).

use anyhow::{bail, Context, Result};
use clap::Args;
use psim::config::Scenario;
use psim::engine::checkpoint::{self, Meta, Policy, FORMAT_VERSION};
use psim::engine::SimOptions;
use psim::run::{Checkpointing, Resume};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Checkpoint options of `psim run`.
#[derive(Args)]
pub struct CheckpointArgs {
    /// Write a checkpoint to OUT/checkpoint/ every DURATION of wall time
    /// (e.g. 90s, 30m, 2h), at the next window boundary.
    #[arg(long, value_name = "DURATION", value_parser = checkpoint::parse_duration)]
    pub checkpoint_every: Option<Duration>,
    /// The signal that asks for a checkpoint at the next window boundary:
    /// USR1, USR2, HUP, INT or TERM, or `none`.
    #[arg(long, value_name = "NAME", default_value = "USR1")]
    pub checkpoint_signal: String,
    /// After the checkpoint the signal asked for, stop with exit status 75
    /// without writing outputs (SLURM: checkpoint before the time limit).
    #[arg(long)]
    pub checkpoint_and_exit: bool,
}

/// `psim resume`'s arguments.
#[derive(Args)]
pub struct ResumeArgs {
    /// Output directory of an interrupted run (it holds checkpoint/).
    pub dir: PathBuf,
    /// Worker threads (default: the interrupted run's; results do not depend on it).
    #[arg(long)]
    pub threads: Option<u32>,
    /// Replace the interrupted run's --checkpoint-every (0s: at every window).
    #[arg(long, value_name = "DURATION", value_parser = checkpoint::parse_duration)]
    pub checkpoint_every: Option<Duration>,
    /// After the checkpoint the signal asked for, stop with exit status 75,
    /// even if the interrupted run did not (`psim sweep --task` passes it).
    #[arg(long)]
    pub checkpoint_and_exit: bool,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The signal number of `name`, None for `none`.
fn signal_number(name: &str) -> Result<Option<i32>> {
    use signal_hook::consts::*;
    let n = name.trim().to_ascii_uppercase();
    Ok(Some(match n.strip_prefix("SIG").unwrap_or(&n) {
        "NONE" => return Ok(None),
        "USR1" => SIGUSR1,
        "USR2" => SIGUSR2,
        "HUP" => SIGHUP,
        "INT" => SIGINT,
        "TERM" => SIGTERM,
        _ => bail!("--checkpoint-signal {name}: one of USR1, USR2, HUP, INT, TERM or none"),
    }))
}

/// Installs the handler: the signal only sets the returned flag, which the
/// window loop polls (the one piece of process-wide state, by necessity).
fn install(name: Option<&str>) -> Result<Option<Arc<AtomicBool>>> {
    let Some(sig) = name.map(signal_number).transpose()?.flatten() else {
        return Ok(None);
    };
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(sig, flag.clone())
        .with_context(|| format!("cannot install the handler of signal {sig}"))?;
    Ok(Some(flag))
}

fn hash_of(scn: &Scenario, text: &str, sets: &[String]) -> u64 {
    checkpoint::scenario_hash(text, sets, scn.seed, &scn.resolved_json().to_string())
}

/// The checkpoint policy of a fresh `psim run`.
pub fn policy(
    a: &CheckpointArgs,
    scenario: &Path,
    sets: Vec<String>,
    scn: &Scenario,
    (opts, ranks): (SimOptions, u32),
    out: &Path,
    quiet: bool,
) -> Result<Checkpointing> {
    let signal =
        (!a.checkpoint_signal.eq_ignore_ascii_case("none")).then(|| a.checkpoint_signal.clone());
    let flag = install(signal.as_deref())?;
    let path = std::fs::canonicalize(scenario)
        .with_context(|| format!("cannot resolve {}", scenario.display()))?;
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let hash = hash_of(scn, &text, &sets);
    let meta = Meta {
        format_version: FORMAT_VERSION,
        psim_version: env!("CARGO_PKG_VERSION").into(),
        scenario_hash: format!("{hash:016x}"),
        scenario_path: path,
        scenario_text: text,
        sets,
        seed: scn.seed,
        shards: opts.shards,
        threads: opts.threads,
        ranks,
        sim_ps: 0,
        windows: 0,
        checkpoint_every_s: a.checkpoint_every.map(|d| d.as_secs_f64()),
        signal,
        exit_on_signal: a.checkpoint_and_exit,
        resumes: 0,
    };
    let mut policy = Policy::new(
        out.to_path_buf(),
        a.checkpoint_every,
        flag,
        a.checkpoint_and_exit,
        meta,
        hash,
    );
    policy.log = !quiet;
    Ok(Checkpointing {
        policy: Some(policy),
        resume: None,
    })
}

/// What `psim resume DIR` runs: the scenario as recorded, checked against
/// the checkpoint, the options, and where to start.
pub fn prepare(a: &ResumeArgs, ranks: u32) -> Result<(Scenario, SimOptions, Checkpointing)> {
    let (set, meta) = checkpoint::current(&a.dir)?;
    let meta_path = set.join(checkpoint::META_FILE);
    let p = &meta.scenario_path;
    let text = std::fs::read_to_string(p).with_context(|| {
        format!(
            "cannot read the scenario {} that {} names",
            p.display(),
            meta_path.display()
        )
    })?;
    if text != meta.scenario_text {
        bail!(
            "{}: the scenario file changed since the checkpoint (its text differs from the one in {}); restore it to resume",
            p.display(),
            meta_path.display()
        );
    }
    if ranks != meta.ranks {
        bail!(
            "{}: the checkpoint was taken with {} MPI rank(s); resume with the same number (this is {ranks})",
            meta_path.display(),
            meta.ranks
        );
    }
    let scn = Scenario::load(p, &meta.sets)?;
    let hash = hash_of(&scn, &text, &meta.sets);
    if format!("{hash:016x}") != meta.scenario_hash {
        bail!(
            "{}: the scenario resolves differently now (an included file or psim changed); cannot resume",
            meta_path.display()
        );
    }
    let threads = a.threads.unwrap_or(meta.threads);
    if threads == 0 {
        bail!("--threads must be at least 1");
    }
    let opts = SimOptions {
        shards: meta.shards,
        threads: threads.min(meta.shards),
    };
    let every = a
        .checkpoint_every
        .or(meta.checkpoint_every_s.map(Duration::from_secs_f64));
    let flag = install(meta.signal.as_deref())?;
    let resume = Resume {
        set,
        hash,
        sim_ps: meta.sim_ps,
        resumes: meta.resumes,
    };
    let next = Meta {
        threads: opts.threads,
        checkpoint_every_s: every.map(|d| d.as_secs_f64()),
        resumes: meta.resumes + 1,
        exit_on_signal: meta.exit_on_signal || a.checkpoint_and_exit,
        ..meta
    };
    let mut policy = Policy::new(a.dir.clone(), every, flag, next.exit_on_signal, next, hash);
    policy.log = !a.quiet;
    Ok((
        scn,
        opts,
        Checkpointing {
            policy: Some(policy),
            resume: Some(resume),
        },
    ))
}
