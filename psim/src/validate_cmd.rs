//! `psim validate`: the command-line side of [`psim::validate`]. Runs the
//! targets here, or hands them to SLURM as a job array (one task per
//! target) and collects the tasks' results; writes the figures and the doc.

use anyhow::{bail, Context, Result};
use clap::Args;
use psim::engine::SimOptions;
use psim::slurm::Submitted;
use psim::validate::{self, array, figures, report, Results, Scale, Target, Verdict};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use super::Backend;

#[derive(Args)]
pub(crate) struct ValidateArgs {
    /// List the targets with their status and checks; run nothing.
    #[arg(long)]
    list: bool,
    /// Only these targets, e.g. --only V15,V21.
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    only: Option<Vec<String>>,
    /// The quick scale: seconds per target (the default).
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// The full scale: the paper's sizes where psim can run them.
    #[arg(long)]
    full: bool,
    /// Where runs, results (quick.json, full.json) and figures (plots/ID.svg) go.
    #[arg(long, default_value = "target/validate")]
    out: PathBuf,
    /// Number of shards per run (results do not depend on it).
    #[arg(long, default_value_t = 2)]
    shards: u32,
    /// Worker threads per run (with --backend slurm: each task's CPUs).
    #[arg(long, default_value_t = 2)]
    threads: u32,
    /// Keep each run's output directory under OUT/SCALE/ID/RUN.
    #[arg(long)]
    keep_runs: bool,
    /// Write docs/validation.md and DIR/plots/ID.svg from the results in
    /// this directory; run nothing.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["list", "check_doc"])]
    write_doc: Option<PathBuf>,
    /// After the pass, fail if the quick column of this generated doc disagrees with it.
    #[arg(long, value_name = "FILE", conflicts_with = "full")]
    check_doc: Option<PathBuf>,
    /// Where the targets run: `local` (here, one after another) or `slurm`
    /// (a job array, one task per target, results merged into OUT).
    #[arg(long, value_enum, default_value_t = Backend::Local, conflicts_with_all = ["check_doc", "list"])]
    backend: Backend,
    /// With --backend slurm: write OUT/validate.sbatch and print the sbatch
    /// line without submitting.
    #[arg(long)]
    dry_run: bool,
    /// With --backend slurm: wait for the array to end (`sbatch --wait`),
    /// then collect its results.
    #[arg(long)]
    wait: bool,
    /// Merge the results of the last array submitted into OUT into
    /// OUT/quick.json or OUT/full.json, naming every target that left none.
    #[arg(long, conflicts_with_all = ["list", "write_doc", "check_doc", "dry_run", "wait"])]
    collect: bool,
    /// Run only the target at this position of the table, into
    /// OUT/tasks/ID/ (what each job-array task does).
    #[arg(long, value_name = "ID", conflicts_with_all = ["list", "write_doc", "check_doc", "collect"])]
    task: Option<usize>,
    /// With --backend slurm: `sbatch --partition`.
    #[arg(long)]
    partition: Option<String>,
    /// With --backend slurm: `sbatch --account`.
    #[arg(long)]
    account: Option<String>,
    /// With --backend slurm: `sbatch --time` of each task (default: the
    /// script's 00:30:00).
    #[arg(long)]
    time: Option<String>,
    /// With --backend slurm: another sbatch option, verbatim (repeatable).
    #[arg(long = "sbatch-arg", value_name = "ARG", allow_hyphen_values = true)]
    sbatch_args: Vec<String>,
}

pub(crate) fn validate(a: ValidateArgs) -> Result<()> {
    let cwd = std::env::current_dir().context("current directory")?;
    let root = validate::find_root(&cwd).with_context(|| {
        format!(
            "no {} in {} or above: run psim validate in the repository",
            validate::TARGETS_FILE,
            cwd.display()
        )
    })?;
    let table = validate::targets::load(&root.join(validate::TARGETS_FILE), &root)
        .map_err(anyhow::Error::msg)?;
    if let Some(dir) = &a.write_doc {
        return write_doc(&table.targets, &root, dir);
    }
    if a.collect {
        return collect(&table.targets, &a.out);
    }
    if a.backend == Backend::Local && (a.dry_run || a.wait) {
        bail!("--dry-run and --wait go with --backend slurm");
    }
    let selected =
        validate::select(&table.targets, a.only.as_deref()).map_err(anyhow::Error::msg)?;
    if a.list {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        for t in &selected {
            // A closed pipe (`| head`) ends the listing quietly.
            if writeln!(
                out,
                "{:<5} {:<14} {:<17} {} ({} checks)",
                t.id,
                t.figure,
                t.status.words(),
                t.title,
                t.checks.len()
            )
            .is_err()
            {
                break;
            }
        }
        return Ok(());
    }
    if a.threads == 0 || a.shards == 0 {
        bail!("--threads and --shards must be at least 1");
    }
    let scale = if a.full { Scale::Full } else { Scale::Quick };
    if let Some(i) = a.task {
        return task(&table.targets, i, &a, scale, root);
    }
    if a.backend == Backend::Slurm {
        return slurm(&table.targets, &selected, &a, scale, &root);
    }
    let opts = validate::Options {
        scale,
        only: a.only.clone(),
        out: a.out.clone(),
        sim: sim(&a),
        root,
        keep_runs: a.keep_runs,
    };
    let started = Instant::now();
    let results = validate::run_all(&selected, &opts, &mut |m| eprintln!("{m}"))
        .map_err(anyhow::Error::msg)?;
    eprintln!(
        "{} targets at {} scale in {:.1} s; results in {}",
        results.targets.len(),
        scale.name(),
        started.elapsed().as_secs_f64(),
        Results::path(&a.out, scale).display()
    );
    plots(&table.targets, &a.out)?;
    let failed = failed_checks(&results);
    if let Some(doc) = &a.check_doc {
        let text = std::fs::read_to_string(doc)
            .with_context(|| format!("cannot read {}", doc.display()))?;
        let bad = report::quick_mismatches(&text, &results);
        if !bad.is_empty() {
            bail!("{} is stale: {}", doc.display(), bad.join("; "));
        }
        eprintln!("{}: the quick column agrees with this run", doc.display());
        // The doc records its misses; agreeing with it is the verdict.
        if !failed.is_empty() {
            eprintln!(
                "checks that miss the paper (recorded in the doc): {}",
                failed.join(", ")
            );
        }
        return Ok(());
    }
    if !failed.is_empty() {
        bail!(
            "{} checks fail their paper tolerance: {}",
            failed.len(),
            failed.join(", ")
        );
    }
    Ok(())
}

fn sim(a: &ValidateArgs) -> SimOptions {
    SimOptions {
        shards: a.shards,
        threads: a.threads.min(a.shards),
    }
}

fn failed_checks(results: &Results) -> Vec<String> {
    results
        .targets
        .values()
        .flat_map(|r| r.checks.iter())
        .filter(|c| c.verdict == Verdict::Fail)
        .map(|c| c.key.clone())
        .collect()
}

/// `--write-doc DIR`: docs/validation.md and DIR/plots/ from DIR's results.
fn write_doc(targets: &[Target], root: &Path, dir: &Path) -> Result<()> {
    let quick = Results::read(dir, Scale::Quick).map_err(anyhow::Error::msg)?;
    let full = Results::read(dir, Scale::Full).map_err(anyhow::Error::msg)?;
    if quick.is_none() && full.is_none() {
        bail!(
            "--write-doc {}: no quick.json or full.json there",
            dir.display()
        );
    }
    let closed = std::fs::read_to_string(root.join(report::CLOSED_FORMS_FILE))
        .with_context(|| format!("cannot read {}", report::CLOSED_FORMS_FILE))?;
    let written = figures::write_all(targets, quick.as_ref(), full.as_ref(), dir)
        .map_err(anyhow::Error::msg)?;
    // Linked from the doc where they are in the repository (the committed results).
    let (d, r) = (
        std::fs::canonicalize(dir).ok(),
        std::fs::canonicalize(root).ok(),
    );
    let link = d
        .zip(r)
        .and_then(|(d, r)| d.strip_prefix(r).ok().map(Path::to_path_buf))
        .map(|rel| format!("../{}/{}", rel.display(), figures::PLOTS_DIR));
    let doc = report::render(
        targets,
        quick.as_ref(),
        full.as_ref(),
        &closed,
        link.as_deref(),
    );
    let path = root.join("docs/validation.md");
    std::fs::write(&path, doc).with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!(
        "wrote {} and {} figures in {}",
        path.display(),
        written.len(),
        dir.join(figures::PLOTS_DIR).display()
    );
    Ok(())
}

/// The figures of every target with paper points, from OUT's merged results.
fn plots(targets: &[Target], out: &Path) -> Result<()> {
    let quick = Results::read(out, Scale::Quick).map_err(anyhow::Error::msg)?;
    let full = Results::read(out, Scale::Full).map_err(anyhow::Error::msg)?;
    let written = figures::write_all(targets, quick.as_ref(), full.as_ref(), out)
        .map_err(anyhow::Error::msg)?;
    if !written.is_empty() {
        eprintln!(
            "{} figures in {}",
            written.len(),
            out.join(figures::PLOTS_DIR).display()
        );
    }
    Ok(())
}

/// `--task I`: target I of the table into OUT/tasks/ID/. A task that
/// measured its checks succeeds whatever their verdicts (the collect step
/// judges them); only a task that could not measure fails. SLURM's warning
/// before the time limit (SIGUSR1, passed on by the array script) is
/// ignored: a validation run has no checkpoint to stop at, and a requeued
/// task would start again from nothing.
fn task(targets: &[Target], i: usize, a: &ValidateArgs, scale: Scale, root: PathBuf) -> Result<()> {
    let t = targets.get(i).with_context(|| {
        format!(
            "--task {i}: {} has {} targets (0 to {})",
            validate::TARGETS_FILE,
            targets.len(),
            targets.len() - 1
        )
    })?;
    if t.checks.is_empty() {
        bail!("--task {i}: target {} has no checks to run", t.id);
    }
    let warned = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, warned.clone())
        .context("cannot install the SIGUSR1 handler")?;
    let out = array::task_dir(&a.out, &t.id);
    let opts = validate::Options {
        scale,
        only: Some(vec![t.id.clone()]),
        out: out.clone(),
        sim: sim(a),
        root,
        keep_runs: a.keep_runs,
    };
    let started = Instant::now();
    let results = validate::run_all(&[t], &opts, &mut |m| println!("{m}"))
        .map_err(|e| anyhow::anyhow!("task {i} ({}): {e}", t.id))?;
    println!(
        "task {i} ({}): {} scale in {:.1} s; results in {}",
        t.id,
        scale.name(),
        started.elapsed().as_secs_f64(),
        Results::path(&out, scale).display()
    );
    let failed = failed_checks(&results);
    if !failed.is_empty() {
        println!(
            "checks that fail their paper tolerance: {}",
            failed.join(", ")
        );
    }
    if warned.load(std::sync::atomic::Ordering::Relaxed) {
        println!(
            "task {i} ({}): SIGUSR1 (time limit near) ignored: validation tasks do not checkpoint",
            t.id
        );
    }
    Ok(())
}

/// `--backend slurm`: one array task per selected target with checks.
fn slurm(
    all: &[Target],
    selected: &[&Target],
    a: &ValidateArgs,
    scale: Scale,
    root: &Path,
) -> Result<()> {
    let with_checks: Vec<&Target> = selected
        .iter()
        .copied()
        .filter(|t| !t.checks.is_empty())
        .collect();
    if with_checks.is_empty() {
        bail!("no selected target has checks: nothing to submit");
    }
    let ids = array::task_ids(all, &with_checks);
    let out = std::path::absolute(&a.out).with_context(|| format!("--out {}", a.out.display()))?;
    let exe = std::env::current_exe().context("cannot locate the psim binary")?;
    let mut script_args = vec![
        format!("--{}", scale.name()),
        "--out".into(),
        out.display().to_string(),
        "--shards".into(),
        a.shards.to_string(),
    ];
    if a.keep_runs {
        script_args.push("--keep-runs".into());
    }
    let job = psim::slurm::ArrayJob {
        name: "psim-validate".into(),
        settings: psim::slurm::SlurmSettings {
            partition: a.partition.clone(),
            account: a.account.clone(),
            time: a.time.clone(),
            cpus_per_task: Some(a.threads),
            modules: std::env::var("PSIM_MODULES")
                .map(|m| m.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
            max_parallel: None,
            sbatch_args: a.sbatch_args.clone(),
        },
        command: "validate".into(),
        exe,
        dir: out.clone(),
        script: array::SCRIPT_FILE.into(),
        script_args,
        chdir: Some(root.to_path_buf()),
    };
    let names: Vec<&str> = with_checks.iter().map(|t| t.id.as_str()).collect();
    println!(
        "validate: {} targets at {} scale as a job array: {}",
        names.len(),
        scale.name(),
        names.join(" ")
    );
    if !a.dry_run {
        let index = array::ArrayIndex {
            scale,
            targets: names.iter().map(|s| s.to_string()).collect(),
        };
        index.prepare(&out).map_err(anyhow::Error::msg)?;
    }
    match job
        .submit_array(&ids, a.dry_run, a.wait, &mut |l| println!("{l}"))
        .map_err(anyhow::Error::msg)?
    {
        Submitted::DryRun => Ok(()),
        Submitted::Queued => {
            println!(
                "when the array has ended: psim validate --collect --out {}",
                out.display()
            );
            Ok(())
        }
        // The array has ended: judge it by the results, not by sbatch's status.
        Submitted::Ended { .. } => collect(all, &out),
    }
}

/// `--collect`: the array's results merged into OUT, figures written, and
/// the verdict: every target's results present, no check failing.
fn collect(targets: &[Target], out: &Path) -> Result<()> {
    let c = array::collect(out).map_err(anyhow::Error::msg)?;
    let scale = c.results.scale;
    println!(
        "validate: collected {} targets at {} scale into {}; {} without results",
        c.results.targets.len(),
        scale.name(),
        Results::path(out, scale).display(),
        c.missing.len()
    );
    plots(targets, out)?;
    let failed = failed_checks(&c.results);
    let mut problems = Vec::new();
    if !c.missing.is_empty() {
        problems.push(format!(
            "{} targets left no results: {} (their task logs are in {})",
            c.missing.len(),
            c.missing.join(", "),
            out.join("logs").display()
        ));
    }
    if !failed.is_empty() {
        problems.push(format!(
            "{} checks fail their paper tolerance: {}",
            failed.len(),
            failed.join(", ")
        ));
    }
    if !problems.is_empty() {
        bail!("{}", problems.join("; "));
    }
    Ok(())
}
