//! `psim-analyze DIR... [--out REPORT_DIR] [--format md|csv] [--buckets E1,E2,...]
//! [--fct receiver|sender]`
//!
//! Analyses psim output directories (or folders of them, such as a sweep)
//! and prints a markdown report, or writes CSV tables; with `--out` it also
//! writes PNG and SVG plots. See `docs/analysis.md`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};

/// Which completion an FCT ends at.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Fct {
    /// The last byte reached the receiver (`finish_ps`).
    Receiver,
    /// The sender learned the last byte was acknowledged (`sender_finish_ps`, as htsim).
    Sender,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    /// Markdown on stdout (and OUT/report.md with --out).
    Md,
    /// CSV files in OUT (needs --out).
    Csv,
}

/// Analyse psim runs: FCT and slowdown by flow size, per-host goodput,
/// utilisation, incast completion, retransmissions; runs side by side.
#[derive(Parser, Debug)]
#[command(name = "psim-analyze", version)]
struct Cli {
    /// Run directories (holding manifest.json), or folders of them (a sweep).
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Folder for CSV tables, report.md and the PNG/SVG plots (created if missing).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Table format.
    #[arg(long, value_enum, default_value = "md")]
    format: Format,
    /// Upper edges of the flow-size buckets in bytes, increasing; one more
    /// bucket holds the larger flows.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10000,100000,1000000,10000000"
    )]
    buckets: Vec<u64>,
    /// Read runs that are incomplete or disagree with their manifest (complete
    /// = false, a part missing, extra or damaged): each problem is a warning on
    /// stderr and the flows parts that decode are analysed.
    #[arg(long)]
    allow_incomplete: bool,
    /// Do not write plots (with --out).
    #[arg(long)]
    no_plots: bool,
    /// FCT by the receiver's completion (default) or the sender's.
    #[arg(long, value_enum, default_value = "receiver")]
    fct: Fct,
}

fn run(cli: Cli) -> anyhow::Result<()> {
    if matches!(cli.format, Format::Csv) && cli.out.is_none() {
        bail!("--format csv writes files: give --out REPORT_DIR");
    }
    let opts = analysis::Options {
        buckets: cli.buckets,
        allow_incomplete: cli.allow_incomplete,
        fct: match cli.fct {
            Fct::Receiver => analysis::FctBy::Receiver,
            Fct::Sender => analysis::FctBy::Sender,
        },
        ..Default::default()
    };
    let report = analysis::analyze(&cli.dirs, &opts)?;
    for w in &report.warnings {
        eprintln!("psim-analyze: warning: {w}");
    }
    match cli.format {
        Format::Md => {
            let md = analysis::render_markdown(&report);
            print!("{md}");
            if let Some(out) = &cli.out {
                std::fs::create_dir_all(out)
                    .with_context(|| format!("creating {}", out.display()))?;
                let p = out.join("report.md");
                std::fs::write(&p, md).with_context(|| format!("writing {}", p.display()))?;
            }
        }
        Format::Csv => {
            let out = cli.out.as_deref().expect("checked above");
            for p in analysis::write_csv(&report, out)? {
                eprintln!("wrote {}", p.display());
            }
        }
    }
    if let (Some(out), false) = (&cli.out, cli.no_plots) {
        for p in analysis::write_plots(&report, out)? {
            eprintln!("wrote {}", p.display());
        }
        if !analysis::plots::text_available() {
            eprintln!(
                "note: no font found (set PSIM_PLOT_FONT to a .ttf file): plots have no text"
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let msg = format!("{e:#}");
            eprintln!(
                "psim-analyze: error: {}",
                msg.split_whitespace().collect::<Vec<_>>().join(" ")
            );
            ExitCode::FAILURE
        }
    }
}
