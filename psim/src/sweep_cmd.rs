//! `psim sweep`: the command-line side of [`psim::sweep`]. Chooses what to
//! run, runs it locally or hands it to SLURM, and reports.

use anyhow::{bail, Context, Result};
use psim::slurm::Submitted;
use psim::sweep::{ChildOptions, Sweep, TaskOutcome, TaskState};
use rayon::prelude::*;
use std::path::Path;
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

fn slurm(sw: &Sweep, exe: &Path, a: &SweepArgs, pending: &[usize]) -> Result<()> {
    let total = sw.tasks.len();
    if pending.is_empty() {
        println!("sweep: all {total} tasks complete (skipped {total}); nothing submitted");
        return Ok(());
    }
    let job = sw.array_job(exe);
    let logs = job.logs();
    let Submitted::Ended { sbatch_ok } = job
        .submit_array(pending, a.dry_run, a.wait, &mut |l| println!("{l}"))
        .map_err(anyhow::Error::msg)?
    else {
        return Ok(());
    };
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
    if !sbatch_ok {
        bail!("sbatch --wait failed although every task completed");
    }
    Ok(())
}
