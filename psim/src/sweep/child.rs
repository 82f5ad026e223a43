//! One sweep task as a child `psim` process: the command (`psim run`, or
//! `psim resume` when the task's directory holds a checkpoint), its log, and,
//! for `psim sweep --task` under SLURM, the time-limit signal passed on to
//! the child so that it checkpoints and stops (docs/checkpoint.md).

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{Sweep, Task, TaskState, TASK_LOG};

/// How often a waiting `psim sweep --task` looks for a signal to pass on.
const FORWARD_POLL: Duration = Duration::from_millis(50);

/// How a task's child runs.
#[derive(Clone, Debug, Default)]
pub struct ChildOptions {
    /// Worker threads of the child (`--threads`; default: psim's).
    pub threads: Option<u32>,
    /// Set by `psim sweep --task`'s `SIGUSR1` handler: the child runs with
    /// `--checkpoint-and-exit` and gets the signal passed on.
    pub forward: Option<Arc<AtomicBool>>,
}

/// How a task's child ended, when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskOutcome {
    /// The run completed.
    Done,
    /// The child was passed `SIGUSR1` and stopped (after a checkpoint, or
    /// before its handler was installed); the next run of the task resumes
    /// from the task's last checkpoint, or starts again if it has none.
    Stopped,
}

/// Exit status of `psim run --checkpoint-and-exit` stopped by its signal
/// (`EX_TEMPFAIL`, engine/checkpoint.rs).
const EXIT_CHECKPOINTED: i32 = crate::engine::checkpoint::EXIT_CHECKPOINTED as i32;

impl Sweep {
    /// The child command of task `t`, for the psim binary `exe`: `psim resume`
    /// of its directory when `resume`, else `psim run` of the base scenario
    /// with the task's overrides. Its output is appended to `log`.
    fn child_command(
        &self,
        exe: &Path,
        t: &Task,
        resume: bool,
        o: &ChildOptions,
        log: &File,
    ) -> std::io::Result<Command> {
        let dir = self.task_dir(t);
        let mut cmd = Command::new(exe);
        if resume {
            // The other options are the ones the checkpoint recorded.
            cmd.arg("resume").arg(&dir);
        } else {
            // A leftover directory is a partial run: replace psim's outputs in it.
            cmd.arg("run")
                .arg(&self.base)
                .arg("--out")
                .arg(&dir)
                .arg("--force");
            if let Some(d) = &self.file.checkpoint_every {
                cmd.arg("--checkpoint-every").arg(d);
            }
            for s in t.sets() {
                cmd.arg("--set").arg(s);
            }
        }
        cmd.arg("--quiet");
        if let Some(n) = o.threads {
            cmd.arg("--threads").arg(n.to_string());
        }
        if o.forward.is_some() {
            cmd.arg("--checkpoint-and-exit");
        }
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log.try_clone()?);
        Ok(cmd)
    }

    /// Runs one task as a child process, its output going to the task's
    /// `psim.log`. A task with a checkpoint resumes from it; if the resume
    /// fails (a checkpoint of another scenario or psim version, a damaged
    /// file), the log says so and the task runs again from the start, which
    /// removes the checkpoint. An error names the task and quotes the log's
    /// last line.
    pub fn run_task(&self, exe: &Path, t: &Task, o: &ChildOptions) -> Result<TaskOutcome, String> {
        let dir = self.task_dir(t);
        let fail = |m: String| format!("task {} ({}) FAILED: {m}", t.id, t.dir);
        std::fs::create_dir_all(&dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
        let log_path = dir.join(TASK_LOG);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| fail(format!("{}: {e}", log_path.display())))?;
        let run = |resume: bool| -> Result<(ExitStatus, bool), String> {
            let child = self
                .child_command(exe, t, resume, o, &log)
                .and_then(|mut c| c.spawn())
                .map_err(|e| fail(format!("cannot start {}: {e}", exe.display())))?;
            wait(child, o.forward.as_deref())
                .map_err(|e| fail(format!("waiting for {}: {e}", exe.display())))
        };
        let mut ended = None;
        if self.resumable(t) {
            let (s, passed) = run(true)?;
            if s.success() || stopped(s, passed) {
                ended = Some((s, passed));
            } else {
                use std::io::Write as _;
                let _ = writeln!(
                    &mut &log,
                    "psim sweep: the resume failed ({s}); running the task again from the start"
                );
            }
        }
        let (status, passed) = match ended {
            Some(e) => e,
            None => run(false)?,
        };
        if stopped(status, passed) {
            return Ok(TaskOutcome::Stopped);
        }
        if status.success() && self.state(t) == TaskState::Complete {
            return Ok(TaskOutcome::Done);
        }
        let last = std::fs::read_to_string(&log_path)
            .ok()
            .and_then(|s| {
                s.lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        Err(fail(format!(
            "psim run {status}: {last} (log: {})",
            log_path.display()
        )))
    }
}

/// Whether a child that was passed the signal (`passed`) stopped because of
/// it: checkpointed (status 75), or killed by it before psim had installed
/// its handler (then the task's previous checkpoint, if any, is the one to
/// resume from).
fn stopped(s: ExitStatus, passed: bool) -> bool {
    use std::os::unix::process::ExitStatusExt as _;
    passed && (s.code() == Some(EXIT_CHECKPOINTED) || s.signal() == Some(libc::SIGUSR1))
}

/// Waits for `child`; while it runs, a raised `forward` flag is passed on
/// to it as `SIGUSR1`. Returns its status and whether it was passed one.
fn wait(mut child: Child, forward: Option<&AtomicBool>) -> std::io::Result<(ExitStatus, bool)> {
    let Some(flag) = forward else {
        return Ok((child.wait()?, false));
    };
    let mut passed = false;
    loop {
        if let Some(s) = child.try_wait()? {
            return Ok((s, passed));
        }
        if flag.swap(false, Ordering::Relaxed) {
            let pid = libc::pid_t::try_from(child.id()).expect("a pid fits pid_t");
            // SAFETY: kill(2) has no memory effects; `pid` is our own child,
            // not yet reaped (try_wait above saw it running), so not reused.
            if unsafe { libc::kill(pid, libc::SIGUSR1) } == 0 {
                passed = true;
            }
        }
        std::thread::sleep(FORWARD_POLL);
    }
}
