//! The `psim` command line: a thin layer over the library.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use psim::config::Scenario;
use psim::engine::SimOptions;
use psim::progress::Mode;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

mod bench_suite;
mod ckpt_cmd;
mod sweep_cmd;
mod validate_cmd;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's arenas committed page by page as they are used, not whole when
/// reserved: with transparent huge pages, an eagerly committed arena holds
/// whole 2 MiB pages that it barely uses. On the 8192-host NDP run this cuts
/// the peak by 28 MiB (1 x 1) to 50 MiB (2 x 4) (docs/performance.md,
/// "Hints for the events an entity schedules for itself").
/// `MIMALLOC_ARENA_EAGER_COMMIT` in the environment still wins.
#[cfg(target_os = "linux")]
mod lazy_arena_commit {
    // mimalloc's option setter, in the mimalloc library that the global
    // allocator links in; its options are a C enum, an int.
    extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }

    /// `mi_option_arena_eager_commit` in mimalloc v2's `mi_option_e`.
    const ARENA_EAGER_COMMIT: std::ffi::c_int = 4;

    /// Runs as a constructor, before `main`: the first arena is reserved at
    /// the first allocation, which the Rust runtime makes before `main`. So
    /// it must not allocate itself (`getenv`, not `std::env`).
    extern "C" fn set() {
        // SAFETY: `getenv` with a NUL-terminated name, before any thread
        // exists; `mi_option_set` sets one of mimalloc's documented options
        // to a valid value, for the arenas reserved from then on.
        unsafe {
            if libc::getenv(c"MIMALLOC_ARENA_EAGER_COMMIT".as_ptr()).is_null() {
                mi_option_set(ARENA_EAGER_COMMIT, 0);
            }
        }
    }

    #[used]
    #[link_section = ".init_array"]
    static SET: extern "C" fn() = set;
}

/// psim: a parallel, deterministic, packet-level network simulator.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario and write its outputs to a directory.
    Run(RunArgs),
    /// Continue an interrupted run from its last checkpoint (OUT/checkpoint/).
    ///
    /// The scenario file, seed, overrides, shard and rank counts are the
    /// recorded ones; the outputs are byte-identical to an uninterrupted run.
    Resume(ckpt_cmd::ResumeArgs),
    /// Validate a scenario and print a summary.
    Check(ScenarioArgs),
    /// Show how a scenario's network is split into shards.
    Partition(ScenarioArgs),
    /// Print the flow table of an output directory as canonical CSV.
    ///
    /// The run is checked against its manifest first (every part present,
    /// with its recorded rows and checksum, and no other part): a run that
    /// is incomplete or damaged is refused with a message naming the part.
    Flows {
        /// Output directory of a run.
        dir: PathBuf,
        /// Read what is there: each problem becomes a warning on stderr, and
        /// the flows parts that decode are printed.
        #[arg(long)]
        allow_incomplete: bool,
    },
    /// Write a scenario's generated flows to a Parquet or CSV file, for inspection.
    ///
    /// Lists every flow known without running the network: open-loop patterns in
    /// full, and the first round of closed-loop patterns, collectives and
    /// triggered `.cm` flows (later rounds depend on completions).
    Workload {
        #[command(flatten)]
        scn: ScenarioArgs,
        /// Output file: `.parquet` or `.csv`.
        #[arg(long)]
        out: PathBuf,
    },
    /// Measure engine speed on a full-load CBR permutation.
    Bench(BenchArgs),
    /// Run a parameter grid over a base scenario: locally or as a SLURM job array.
    ///
    /// Each task writes to its own directory in the sweep folder, named by its
    /// parameters; a task with a complete run there is skipped, a partial one
    /// is redone. `psim-analyze SWEEP_DIR` tabulates every task.
    Sweep(SweepArgs),
    /// Run the seed papers' reproduction targets (validation/targets.toml) and
    /// compare each with the paper's claim; or list them, or write docs/validation.md.
    Validate(validate_cmd::ValidateArgs),
}

#[derive(Args)]
struct SweepArgs {
    /// Sweep file (TOML: base, out, [grid], optional [local] and [slurm]).
    sweep: PathBuf,
    /// Sweep folder (default: the sweep file's `out`, relative to the sweep file).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Where the tasks run: `local` (child processes here) or `slurm` (a job array).
    #[arg(long, value_enum, default_value_t = Backend::Local)]
    backend: Backend,
    /// Local tasks run at once (default: [local] jobs, else the number of cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Worker threads per task (default: [local] threads, else cores / jobs).
    #[arg(long)]
    threads: Option<u32>,
    /// Run only the task with this index (what each job-array task does).
    /// SIGUSR1 is passed on to the task's psim, which checkpoints and
    /// stops; the command then exits with status 75.
    #[arg(long, value_name = "ID")]
    task: Option<usize>,
    /// Validate and list what would run; with --backend slurm, write the
    /// script and print the sbatch line without submitting.
    #[arg(long)]
    dry_run: bool,
    /// With --backend slurm: wait for the job array to end (`sbatch --wait`)
    /// and check every task's outputs.
    #[arg(long)]
    wait: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Backend {
    Local,
    Slurm,
}

#[derive(Args)]
struct ScenarioArgs {
    /// Scenario file (TOML).
    scenario: PathBuf,
    /// Number of shards (default: the scenario's [run] shards, else the thread count).
    #[arg(long)]
    shards: Option<u32>,
    /// Worker threads (default: the scenario's [run] threads, else the number of cores).
    #[arg(long)]
    threads: Option<u32>,
    /// Override the scenario seed: 0 to 2^63 - 1, the range of the
    /// scenario's `seed` key (a TOML integer is signed 64-bit).
    #[arg(long, value_parser = parse_seed)]
    seed: Option<u64>,
    /// Override a scenario key, e.g. --set topology.k=8 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    scn: ScenarioArgs,
    /// Output directory (refused if it exists and is not empty, unless --force).
    #[arg(long)]
    out: PathBuf,
    /// Replace psim's outputs in a non-empty output directory.
    #[arg(long)]
    force: bool,
    /// No progress display (a bar on a terminal, else a line every 30 s).
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    ckpt: ckpt_cmd::CheckpointArgs,
}

#[derive(Args)]
struct BenchArgs {
    /// FatTree radix (k = 16 is 1024 hosts).
    #[arg(long, default_value_t = 16)]
    k: u32,
    /// Simulated time per run, microseconds.
    #[arg(long, default_value_t = 100.0)]
    us: f64,
    /// Thread counts to measure.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<u32>,
    /// Shard counts to measure (each at least the thread count).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    shards: Vec<u32>,
    /// Link rate, Gb/s.
    #[arg(long, default_value_t = 100.0)]
    gbps: f64,
    /// Run the engine suite instead (NDP permutations at k = 16 and 32, a
    /// DCTCP permutation, an NDP incast, CBR) at the first of --threads and
    /// of --shards (default 1 x 1), one table (docs/performance.md).
    #[arg(long)]
    suite: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<Checkpointed>() => {
            ExitCode::from(psim::engine::checkpoint::EXIT_CHECKPOINTED)
        }
        Err(e) if e.is::<Reported>() => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {}", one_line(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, skipping causes that the message
/// already quotes (typed errors embed their cause in their own message).
fn one_line(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if !msg.contains(&c) {
            if !msg.is_empty() {
                msg.push_str(": ");
            }
            msg.push_str(&c);
        }
    }
    msg.replace('\n', " ")
}

fn dispatch(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Run(a) => run(a),
        Cmd::Resume(a) => resume(a),
        Cmd::Check(a) => check(a),
        Cmd::Partition(a) => show_partition(a),
        Cmd::Flows {
            dir,
            allow_incomplete,
        } => print_flows(&dir, allow_incomplete),
        Cmd::Workload { scn, out } => write_workload(&scn, &out),
        Cmd::Bench(a) => bench(a),
        Cmd::Sweep(a) => sweep_cmd::sweep(a),
        Cmd::Validate(a) => validate_cmd::validate(a),
    }
}

/// `psim flows`: the checked flows table as CSV on stdout. A reader that
/// closes the pipe early (`psim flows DIR | head`) ends it quietly.
fn print_flows(dir: &Path, allow_incomplete: bool) -> Result<()> {
    use std::io::Write;
    let recs =
        psim::trace::read_flows_checked(dir, allow_incomplete, &mut |w| eprintln!("warning: {w}"))?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = psim::trace::flows_to_csv(&recs, &mut out).and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing CSV to stdout"),
    }
}

fn write_workload(a: &ScenarioArgs, out: &Path) -> Result<()> {
    let (scn, _) = load(a)?;
    let flows = scn.workload.open_loop_flows();
    let parquet = match out.extension().and_then(|e| e.to_str()) {
        Some("parquet") => true,
        Some("csv") => false,
        _ => bail!(
            "--out {}: the file name must end in .parquet or .csv",
            out.display()
        ),
    };
    // Written under a temporary name and renamed, so a partial file never looks complete.
    let tmp = out.with_extension(if parquet { "parquet.tmp" } else { "csv.tmp" });
    let file =
        std::fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let written = if parquet {
        workloads::write_flows_parquet(&flows, file).map_err(anyhow::Error::from)
    } else {
        workloads::write_flows_csv(&flows, std::io::BufWriter::new(file))
            .map_err(anyhow::Error::from)
    };
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.context(format!("writing {}", out.display())));
    }
    std::fs::rename(&tmp, out)
        .with_context(|| format!("cannot rename {} to {}", tmp.display(), out.display()))?;
    eprintln!("{} flows written to {}", flows.len(), out.display());
    Ok(())
}

/// `--seed`: a scenario's `seed` is a TOML integer, signed 64-bit, so the
/// command line takes the same range; a resolved scenario (the manifest's
/// `config`) can then always be written back as TOML and rerun.
fn parse_seed(s: &str) -> Result<u64, String> {
    let v: u64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number from 0 to 2^63 - 1"))?;
    if v > i64::MAX as u64 {
        return Err(format!(
            "{v} is 2^63 or more; seeds are 0 to 2^63 - 1 = {} (a scenario's seed key is a TOML integer, signed 64-bit)",
            i64::MAX
        ));
    }
    Ok(v)
}

/// Most worker threads per core: more only adds switching (every thread
/// runs at least one shard, and shards synchronise every lookahead window).
const THREADS_PER_CORE: u32 = 4;

/// Checks `threads` before any thread exists: at most the larger of
/// [`THREADS_PER_CORE`] x `cores` and the shard count the user gave
/// (`given_shards`; a thread per shard is how a determinism check runs).
/// `name` is how the user gave the thread count (`--threads 8` or
/// `run.threads = 8`), for the message.
fn check_threads(
    threads: u32,
    shards: u32,
    given_shards: Option<u32>,
    cores: u32,
    name: &str,
) -> Result<()> {
    if threads == 0 || shards == 0 {
        bail!("--threads and --shards (run.threads, run.shards) must be at least 1");
    }
    let per_core = THREADS_PER_CORE.saturating_mul(cores.max(1));
    let cap = per_core.max(given_shards.unwrap_or(0));
    if threads > cap {
        bail!(
            "{name}: at most {cap} (the larger of {THREADS_PER_CORE} x {cores} cores and the shard count); more threads only contend"
        );
    }
    Ok(())
}

fn load(a: &ScenarioArgs) -> Result<(Scenario, SimOptions)> {
    let mut sets = Vec::new();
    if let Some(s) = a.seed {
        sets.push(format!("seed={s}"));
    }
    sets.extend(a.sets.iter().cloned());
    let scn = Scenario::load(&a.scenario, &sets)?;
    let cores = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    let threads = a.threads.or(scn.file.run.threads).unwrap_or(cores);
    let given_shards = a.shards.or(scn.file.run.shards);
    let shards = given_shards.unwrap_or(threads);
    let name = match a.threads {
        Some(t) => format!("--threads {t}"),
        None => format!("run.threads = {threads}"),
    };
    check_threads(threads, shards, given_shards, cores, &name)?;
    let entities = scn.topology.entities();
    if given_shards.is_some_and(|s| s > entities) {
        // Every shard holds at least one host or switch; the engine's
        // per-shard state grows with the shard count (100000 shards of a
        // 36-node FatTree took 23 GB).
        let name = match a.shards {
            Some(s) => format!("--shards {s}"),
            None => format!("run.shards = {shards}"),
        };
        bail!(
            "{name}: at most {entities}, the number of hosts and switches ({})",
            scn.topology.describe()
        );
    }
    Ok((
        scn,
        SimOptions {
            shards,
            threads: threads.min(shards),
        },
    ))
}

/// The communicator: MPI when built with the `mpi` feature (a run started
/// without `mpirun` is a single rank), else one process.
fn make_comm() -> Box<dyn psim::engine::Comm> {
    #[cfg(feature = "mpi")]
    if let Some(c) = psim::engine::comm::mpi_comm::MpiComm::init() {
        return Box::new(c);
    }
    Box::new(psim::engine::SingleProcess)
}

fn run(a: RunArgs) -> Result<()> {
    let comm = make_comm();
    let (rank, ranks) = (comm.rank(), comm.size());
    let result = (|| -> Result<()> {
        let (scn, mut opts) = load(&a.scn)?;
        if a.scn.shards.is_none() && scn.file.run.shards.is_none() {
            // By default every rank runs one shard per thread.
            opts.shards = opts.threads * ranks;
        }
        let sets = a.scn.seed.map(|s| format!("seed={s}")).into_iter();
        let sets = sets.chain(a.scn.sets.iter().cloned()).collect();
        let ckpt = ckpt_cmd::policy(
            &a.ckpt,
            &a.scn.scenario,
            sets,
            &scn,
            (opts, ranks),
            &a.out,
            a.quiet,
        )?;
        finish(&scn, opts, &a.out, a.force, a.quiet, rank, comm, ckpt)
    })();
    report(result, rank, ranks)
}

/// `psim resume DIR`.
fn resume(a: ckpt_cmd::ResumeArgs) -> Result<()> {
    let comm = make_comm();
    let (rank, ranks) = (comm.rank(), comm.size());
    let result = (|| -> Result<()> {
        let (scn, opts, ckpt) = ckpt_cmd::prepare(&a, ranks)?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        let name = format!("--threads {}", opts.threads);
        check_threads(opts.threads, opts.shards, Some(opts.shards), cores, &name)?;
        finish(&scn, opts, &a.dir, false, a.quiet, rank, comm, ckpt)
    })();
    report(result, rank, ranks)
}

/// The warning for a run without a stop time that ran out of events with
/// flows unfinished: nothing was left that could finish them (a lost packet
/// that no timer covers, as RoCE's with `pfc = true`, or NDP's under
/// `profile = "htsim"`). The flow table records them unfinished; this line
/// says why the run ended anyway.
fn stuck_flows_warning(stop_ps: Option<u64>, m: &psim::trace::Manifest) -> Option<String> {
    let stuck = m.flows_started.saturating_sub(m.flows_finished);
    if stop_ps.is_some() || stuck == 0 {
        return None;
    }
    let dropped = m
        .packets
        .get("dropped")
        .and_then(|v| v.as_u64())
        .unwrap_or(0);
    Some(format!(
        "warning: {stuck} of {} flows never finished and the run had nothing left to do: {dropped} packets were dropped, and a loss that no timer covers is never recovered (RoCE with pfc = true has no timeout; NDP with timeout_resends, keep_early_pulls or resend_last_pull false, as under profile = \"htsim\", has gaps)",
        m.flows_started
    ))
}

/// Runs (or resumes) and prints the closing line.
#[allow(clippy::too_many_arguments)]
fn finish(
    scn: &Scenario,
    opts: SimOptions,
    out: &Path,
    force: bool,
    quiet: bool,
    rank: u32,
    comm: Box<dyn psim::engine::Comm>,
    ckpt: psim::run::Checkpointing,
) -> Result<()> {
    let a_out = out;
    {
        let mode = Mode::choose(quiet, rank == 0, std::io::stderr().is_terminal())
            .map_err(|e| anyhow::anyhow!(e))?;
        let mut progress = mode.reporter();
        let outcome = match psim::run::execute_checkpointed(
            scn,
            opts,
            a_out,
            force,
            &mut *progress,
            comm,
            ckpt,
        ) {
            Err(psim::run::RunError::Sim(psim::engine::SimError::Checkpointed { sim_ps })) => {
                if rank == 0 {
                    eprintln!(
                        "checkpointed at {} simulated and stopped (exit status {}); continue with: psim resume {}",
                        psim::units::fmt_ps(sim_ps),
                        psim::engine::checkpoint::EXIT_CHECKPOINTED,
                        a_out.display()
                    );
                }
                return Err(Checkpointed.into());
            }
            other => other?,
        };
        let m = &outcome.manifest;
        if rank == 0 {
            eprintln!(
                "done: {} simulated, {} events in {:.2} s ({:.2} M events/s), {} of {} flows finished, {} rank(s) x {} shards, outputs in {}",
                psim::units::fmt_ps(m.sim_end_ps),
                m.events,
                m.wall_s,
                m.events_per_s / 1e6,
                m.flows_finished,
                m.flows_started,
                m.ranks,
                m.shards,
                a_out.display()
            );
            if let Some(w) = stuck_flows_warning(scn.stop_ps, m) {
                eprintln!("{w}");
            }
            if let Some(r) = m
                .packets
                .get("replay")
                .and_then(|r| serde_json::from_value::<psim::replay::ReplayReport>(r.clone()).ok())
            {
                eprintln!("{}", r.line());
            }
        }
        Ok(())
    }
}

/// Passes a run's result on; an MPI rank prints its own error first.
fn report(result: Result<()>, rank: u32, ranks: u32) -> Result<()> {
    if ranks > 1 {
        if let Some(e) = result.as_ref().err().filter(|e| !e.is::<Checkpointed>()) {
            // Every rank reports its own failure, named by rank, at once: mpirun
            // aborts the job when the first rank exits, so wait a moment for the
            // others, which usually fail the same way, to say so too.
            eprintln!("error: rank {rank}/{ranks}: {}", one_line(e));
            std::thread::sleep(std::time::Duration::from_millis(500));
            return Err(Reported.into());
        }
    }
    result
}

/// The run stopped after a checkpoint, as asked: exit status
/// [`psim::engine::checkpoint::EXIT_CHECKPOINTED`].
#[derive(Debug)]
struct Checkpointed;

impl std::fmt::Display for Checkpointed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stopped after a checkpoint")
    }
}

impl std::error::Error for Checkpointed {}

/// An error this process has already printed (an MPI rank's own line).
#[derive(Debug)]
struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("reported above")
    }
}

impl std::error::Error for Reported {}

fn check(a: ScenarioArgs) -> Result<()> {
    let (scn, opts) = load(&a)?;
    let t = &scn.topology;
    let graph = t.partition_graph();
    let part = partition::partition(&graph, opts.shards)?;
    let report = part.report(&graph)?;
    println!("scenario   {}", scn.path.display());
    println!("topology   {}", t.describe());
    println!("hosts      {}", t.hosts());
    println!("switches   {}", t.switches());
    println!("links      {} (directed)", t.links());
    println!("traffic    {} entries", scn.traffic_protocols.len());
    println!("seed       {}", scn.seed);
    println!(
        "stop       {}",
        scn.stop_ps
            .map(psim::units::fmt_ps)
            .unwrap_or_else(|| "when all flows finish".into())
    );
    println!("shards     {} on {} threads", opts.shards, opts.threads);
    println!(
        "lookahead  {}",
        report
            .lookahead_ps
            .map(psim::units::fmt_ps)
            .unwrap_or_else(|| "unbounded (nothing cut)".into())
    );
    Ok(())
}

fn show_partition(a: ScenarioArgs) -> Result<()> {
    let (scn, opts) = load(&a)?;
    let graph = scn.topology.partition_graph();
    let part = partition::partition(&graph, opts.shards)?;
    let report = part.report(&graph)?;
    println!("{report}");
    Ok(())
}

fn bench(a: BenchArgs) -> Result<()> {
    if a.suite {
        let threads = a.threads.first().copied().unwrap_or(1);
        let shards = a.shards.first().copied().unwrap_or(1).max(threads);
        return bench_suite::run(threads, shards);
    }
    let text = format!(
        "name = \"bench-cbr-k{k}\"\nseed = 1\nstop_us = {us}\n[topology]\nkind = \"fattree\"\nk = {k}\nlink_gbps = {g}\nlatency_ns = 1000\n\
         [protocol.cbr]\npacket_bytes = 1500\n[[traffic]]\nprotocol = \"cbr\"\npattern = \"permutation\"\n",
        k = a.k,
        us = a.us,
        g = a.gbps
    );
    let scn = Scenario::from_str(&text, Path::new("<bench>"), &[])?;
    println!(
        "# full-load CBR permutation, fattree k={} ({} hosts), {} Gb/s, {} us simulated",
        a.k,
        scn.topology.hosts(),
        a.gbps,
        a.us
    );
    println!("| threads | shards | events | wall s | M events/s | M events/s per thread |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for &threads in &a.threads {
        for &shards in a.shards.iter().filter(|&&s| s >= threads) {
            let mut sim = psim::engine::Simulation::new(&scn, SimOptions { shards, threads })?;
            let t = Instant::now();
            let s = sim.run(&mut |_| {})?;
            let wall = t.elapsed().as_secs_f64();
            let rate = s.events as f64 / wall / 1e6;
            println!(
                "| {threads} | {shards} | {} | {wall:.3} | {rate:.2} | {:.2} |",
                s.events,
                rate / threads as f64
            );
        }
    }
    Ok(())
}
