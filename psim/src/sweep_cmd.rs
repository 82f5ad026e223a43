//! `psim sweep`: the command-line side of [`psim::sweep`]. Chooses what to
//! run, runs it locally or hands it to SLURM, and reports.

use anyhow::{bail, Context, Result};
use psim::sweep::{shell_quote, ChildOptions, Sweep, TaskOutcome, TaskState, SCRIPT_FILE};
use rayon::prelude::*;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use super::{Backend, SweepArgs};

pub(crate) fn sweep(a: SweepArgs) -> Result<()> {
    let mut sw = Sweep::load(&a.sweep)?;
    if let Some(out) = &a.out {
        sw = sw.with_out(out)?;
    }
    if a.threads == Some(0) || a.jobs == Some(0) {
        bail!("--threads and --jobs must be at least 1");
    }
    let exe = std::env::current_exe().context("cannot locate the psim binary")?;
    if let Some(id) = a.task {
        sw.validate_task(id)?;
        return one_task(&sw, &exe, id, a.threads);
    }
    sw.validate()?;
    sw.write_index()?;
    let total = sw.tasks.len();
    let pending: Vec<usize> = sw
        .tasks
        .iter()
        .filter(|t| sw.state(t) != TaskState::Complete)
        .map(|t| t.id)
        .collect();
    let skipped = total - pending.len();
    println!(
        "sweep {}: {total} tasks, {skipped} complete, {} to run; outputs in {}",
        sw.path.display(),
        pending.len(),
        sw.out.display()
    );
    let stale = pending
        .iter()
        .filter(|&&id| sw.state(&sw.tasks[id]) == TaskState::Stale)
        .count();
    if stale > 0 {
        println!(
            "{stale} of them hold a complete run of another scenario (the base scenario or psim changed): redone"
        );
    }
    let resumable = pending
        .iter()
        .filter(|&&id| sw.resumable(&sw.tasks[id]))
        .count();
    if resumable > 0 {
        println!("{resumable} of them resume from a checkpoint");
    }
    match a.backend {
        Backend::Local => local(&sw, &exe, &a, &pending),
        Backend::Slurm => slurm(&sw, &exe, &a, &pending),
    }
}

/// One task (a job-array element): skipped when already complete. A
/// `SIGUSR1` (SLURM's warning before the time limit, passed on by
/// `sweep_array.sbatch`) is passed on to the child psim, which checkpoints
/// and stops; this then exits with status 75 so that the script requeues
/// the job, and the requeued task resumes from the checkpoint.
fn one_task(sw: &Sweep, exe: &Path, id: usize, threads: Option<u32>) -> Result<()> {
    let t = &sw.tasks[id];
    if sw.state(t) == TaskState::Complete {
        println!("task {id} ({}): skipped (complete)", t.dir);
        return Ok(());
    }
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, flag.clone())
        .context("cannot install the SIGUSR1 handler")?;
    let opts = ChildOptions {
        threads,
        forward: Some(flag),
    };
    let start = Instant::now();
    match sw.run_task(exe, t, &opts).map_err(anyhow::Error::msg)? {
        TaskOutcome::Done => {
            println!(
                "task {id} ({}): done in {:.1} s",
                t.dir,
                start.elapsed().as_secs_f64()
            );
            Ok(())
        }
        TaskOutcome::Stopped => {
            println!(
                "task {id} ({}): stopped by SIGUSR1 after {:.1} s; its next run resumes from its last checkpoint",
                t.dir,
                start.elapsed().as_secs_f64()
            );
            Err(super::Checkpointed.into())
        }
    }
}

fn local(sw: &Sweep, exe: &Path, a: &SweepArgs, pending: &[usize]) -> Result<()> {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let jobs = a.jobs.or(sw.file.local.jobs).unwrap_or(cores);
    let threads = a
        .threads
        .or(sw.file.local.threads)
        .unwrap_or_else(|| (cores / jobs).max(1) as u32);
    let total = sw.tasks.len();
    let skipped = total - pending.len();
    if a.dry_run {
        for &id in pending {
            let t = &sw.tasks[id];
            println!("would run task {id} ({})", t.dir);
        }
        println!("dry run: {} to run, skipped {skipped}", pending.len());
        return Ok(());
    }
    // A pool of `jobs` threads, each waiting on one child process at a time.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .context("cannot start the task pool")?;
    let failures: Vec<String> = pool.install(|| {
        pending
            .par_iter()
            .with_max_len(1)
            .filter_map(|&id| {
                let t = &sw.tasks[id];
                let start = Instant::now();
                let opts = ChildOptions {
                    threads: Some(threads),
                    forward: None,
                };
                match sw.run_task(exe, t, &opts) {
                    Ok(_) => {
                        println!(
                            "task {id} ({}): done in {:.1} s",
                            t.dir,
                            start.elapsed().as_secs_f64()
                        );
                        None
                    }
                    Err(e) => {
                        // On stdout with the other task lines: stderr keeps
                        // the single error line of the whole command.
                        println!("{e}");
                        Some(t.dir.clone())
                    }
                }
            })
            .collect()
    });
    println!(
        "sweep: {total} tasks: ran {}, skipped {skipped}, failed {}",
        pending.len() - failures.len(),
        failures.len()
    );
    if !failures.is_empty() {
        bail!(
            "{}: {} of {total} tasks failed: {} (each task's psim.log has the details)",
            sw.path.display(),
            failures.len(),
            failures.join(" ")
        );
    }
    Ok(())
}

/// SLURM's `MaxArraySize` when `scontrol` cannot say: its default.
const DEFAULT_MAX_ARRAY_SIZE: usize = 1001;

/// The cluster's `MaxArraySize` (array indices must be below it), from
/// `scontrol show config`; `PSIM_MAX_ARRAY_SIZE` overrides it (tests), and
/// SLURM's default, 1001, stands in where neither answers.
fn max_array_size() -> usize {
    if let Some(n) = std::env::var("PSIM_MAX_ARRAY_SIZE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n >= 1)
    {
        return n;
    }
    Command::new("scontrol")
        .args(["show", "config"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| parse_max_array_size(&String::from_utf8_lossy(&o.stdout)))
        .unwrap_or(DEFAULT_MAX_ARRAY_SIZE)
}

/// `MaxArraySize = N` in `scontrol show config` output.
fn parse_max_array_size(text: &str) -> Option<usize> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "MaxArraySize")
            .then(|| v.trim().parse().ok())
            .flatten()
            .filter(|&n| n >= 1)
    })
}

/// Splits task ids (ascending) into job arrays whose indices stay below
/// `max`: (offset, indices), task id = offset + index. The offsets are
/// multiples of `max`, so that a resubmission splits the same way.
fn split_array(ids: &[usize], max: usize) -> Vec<(usize, Vec<usize>)> {
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    for &id in ids {
        let offset = id / max * max;
        match out.last_mut() {
            Some((o, v)) if *o == offset => v.push(id - offset),
            _ => out.push((offset, vec![id - offset])),
        }
    }
    out
}

fn slurm(sw: &Sweep, exe: &Path, a: &SweepArgs, pending: &[usize]) -> Result<()> {
    let total = sw.tasks.len();
    if pending.is_empty() {
        println!("sweep: all {total} tasks complete (skipped {total}); nothing submitted");
        return Ok(());
    }
    let script = sw.out.join(SCRIPT_FILE);
    psim::sweep::write_atomic(&script, psim::sweep::ARRAY_TEMPLATE.as_bytes())?;
    let logs = sw.out.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let max = max_array_size();
    let arrays = split_array(pending, max);
    if arrays.len() > 1 {
        println!(
            "{} tasks exceed the cluster's MaxArraySize = {max}: {} job arrays",
            pending.len(),
            arrays.len()
        );
    }
    let mut submitted = Vec::new();
    for (offset, ids) in &arrays {
        let args = sw.sbatch_args(ids, &script, a.wait);
        let mut env = sw.sbatch_env(exe);
        env.push(("PSIM_TASK_OFFSET".into(), offset.to_string()));
        let line = env
            .iter()
            .map(|(k, v)| format!("{k}={}", shell_quote(v)))
            .chain(std::iter::once("sbatch".to_string()))
            .chain(args.iter().map(|s| shell_quote(s)))
            .collect::<Vec<_>>()
            .join(" ");
        if a.dry_run {
            println!("{line}");
            continue;
        }
        println!("submitting {} tasks: {line}", ids.len());
        // With --wait every array is waited for at once, not one after another.
        let child = Command::new("sbatch")
            .args(&args)
            .envs(env)
            .spawn()
            .map_err(|e| {
                anyhow::anyhow!(
                    "cannot run sbatch ({e}): is SLURM installed? Use --backend local or --dry-run"
                )
            })?;
        submitted.push(child);
    }
    let mut ok = true;
    for mut child in submitted {
        let status = child.wait().context("waiting for sbatch")?;
        ok &= status.success();
    }
    if a.dry_run {
        return Ok(());
    }
    if !a.wait {
        if !ok {
            bail!("sbatch failed; see its message above");
        }
        return Ok(());
    }
    // The array has ended: judge it by the outputs, not only by sbatch's status.
    let incomplete: Vec<&str> = pending
        .iter()
        .map(|&id| &sw.tasks[id])
        .filter(|t| sw.state(t) != TaskState::Complete)
        .map(|t| t.dir.as_str())
        .collect();
    println!(
        "sweep: {total} tasks: ran {}, skipped {}, failed {}",
        pending.len() - incomplete.len(),
        total - pending.len(),
        incomplete.len()
    );
    if !incomplete.is_empty() {
        bail!(
            "{}: {} of {total} tasks did not complete: {} (logs in {})",
            sw.path.display(),
            incomplete.len(),
            incomplete.join(" "),
            logs.display()
        );
    }
    if !ok {
        bail!("sbatch --wait failed although every task completed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_split_at_multiples_of_the_max_array_size() {
        let ids: Vec<usize> = (0..10).chain(12..14).collect();
        assert_eq!(
            split_array(&ids, 4),
            vec![
                (0, vec![0, 1, 2, 3]),
                (4, vec![0, 1, 2, 3]),
                (8, vec![0, 1]),
                (12, vec![0, 1]),
            ]
        );
        // Resubmitting task 13 alone: the same array, index 1.
        assert_eq!(split_array(&[13], 4), vec![(12, vec![1])]);
        assert_eq!(
            split_array(&[0, 5, 1000], 1001),
            vec![(0, vec![0, 5, 1000])]
        );
        assert_eq!(split_array(&[1001], 1001), vec![(1001, vec![0])]);
    }

    #[test]
    fn max_array_size_is_read_from_scontrol_show_config() {
        let text = "Configuration data as of 2026-11-24T10:00:00\n\
                    MailProg                = /bin/mail\n\
                    MaxArraySize            = 40\n\
                    MaxJobCount             = 10000\n";
        assert_eq!(parse_max_array_size(text), Some(40));
        assert_eq!(parse_max_array_size("MaxArraySize = 0\n"), None);
        assert_eq!(parse_max_array_size("nothing here\n"), None);
    }
}
