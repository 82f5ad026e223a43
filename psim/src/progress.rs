//! Progress reports of `psim run` on stderr, so that a run is seen alive or
//! stuck (issue 18): a redrawn bar on a terminal, and without one (a SLURM
//! job, a pipe) one plain line every [`BATCH_EVERY`] of wall time, which a
//! log keeps. `--quiet` turns both off. Reports never touch the outputs.
//!
//! | setting | default | why |
//! |---|---|---|
//! | bar redraw | at most every 200 ms | a terminal, not a log |
//! | batch line | every 30 s of wall time ([`BATCH_EVERY`]) | a SLURM log stays short over days |
//! | `PSIM_PROGRESS_SECS` | unset | overrides the batch interval, in seconds (tests use a short one) |

use crate::engine::Progress;
use crate::units::fmt_ps;
use std::time::{Duration, Instant};

/// Wall time between two progress lines in batch mode.
pub const BATCH_EVERY: Duration = Duration::from_secs(30);

/// How a run shows its progress.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Mode {
    /// Nothing (`--quiet`, or a rank other than 0).
    Off,
    /// A redrawn spinner line (stderr is a terminal).
    Bar,
    /// One line every so often (stderr is a file or a pipe).
    Lines(Duration),
}

impl Mode {
    /// The display for rank 0 of a run (`rank0`), asked to be quiet or not,
    /// whose stderr is a terminal or not. `PSIM_PROGRESS_SECS` (seconds, a
    /// decimal) overrides the batch interval.
    pub fn choose(quiet: bool, rank0: bool, terminal: bool) -> Result<Mode, String> {
        if quiet || !rank0 {
            return Ok(Mode::Off);
        }
        if terminal {
            return Ok(Mode::Bar);
        }
        let every = match std::env::var("PSIM_PROGRESS_SECS") {
            Ok(v) => v
                .parse::<f64>()
                .ok()
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .ok_or_else(|| {
                    format!("PSIM_PROGRESS_SECS = {v:?}: expected a number of seconds >= 0")
                })?,
            Err(_) => BATCH_EVERY,
        };
        Ok(Mode::Lines(every))
    }

    /// A reporter to hand to the engine.
    pub fn reporter(self) -> Box<dyn FnMut(Progress)> {
        match self {
            Mode::Off => Box::new(|_| {}),
            Mode::Bar => bar(),
            Mode::Lines(every) => {
                let mut lines = Lines::new(every);
                Box::new(move |p| {
                    if let Some(l) = lines.line(p, Instant::now()) {
                        eprintln!("{l}");
                    }
                })
            }
        }
    }
}

/// "12 of 40 flows finished": started flows only, since a workload may start
/// more later; an MPI run counts rank 0's shards.
fn flows(p: &Progress) -> String {
    let whose = if p.partial { " (rank 0's shards)" } else { "" };
    format!("{} of {} flows finished{whose}", p.flows.1, p.flows.0)
}

/// The batch-mode reporter: a line when `every` has passed since the last.
struct Lines {
    every: Duration,
    start: Instant,
    last: Instant,
    last_events: u64,
}

impl Lines {
    fn new(every: Duration) -> Lines {
        let now = Instant::now();
        Lines {
            every,
            start: now,
            last: now,
            last_events: 0,
        }
    }

    /// The line to print at wall time `now`, if one is due. Events/s are over
    /// the interval since the last line, so that a stuck run shows as one.
    fn line(&mut self, p: Progress, now: Instant) -> Option<String> {
        let since = now.duration_since(self.last);
        if since < self.every {
            return None;
        }
        let rate = (p.events - self.last_events) as f64 / since.as_secs_f64().max(1e-9);
        (self.last, self.last_events) = (now, p.events);
        let stop = p.stop_ps.map(|s| format!(" of {}", fmt_ps(s)));
        Some(format!(
            "progress: simulated {}{}, {}, {:.3} M events/s, {:.0} s wall",
            fmt_ps(p.sim_ps),
            stop.unwrap_or_default(),
            flows(&p),
            rate / 1e6,
            now.duration_since(self.start).as_secs_f64(),
        ))
    }
}

/// A progress bar on stderr: simulated time, flows, events/s and, when the
/// stop time is known, an ETA. Redrawn at most 5 times a second.
fn bar() -> Box<dyn FnMut(Progress)> {
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
            .expect("valid template"),
    );
    let start = Instant::now();
    let mut last = Instant::now();
    Box::new(move |p: Progress| {
        if last.elapsed() < Duration::from_millis(200) {
            return;
        }
        last = Instant::now();
        let wall = start.elapsed().as_secs_f64();
        let eta = p.stop_ps.filter(|_| p.sim_ps > 0).map(|stop| {
            let left = (stop.saturating_sub(p.sim_ps)) as f64 / p.sim_ps as f64 * wall;
            format!(", ETA {left:.0} s")
        });
        bar.set_message(format!(
            "simulated {} | {} | {:.2} M events/s{}",
            fmt_ps(p.sim_ps),
            flows(&p),
            p.events as f64 / wall.max(1e-9) / 1e6,
            eta.unwrap_or_default()
        ));
        bar.tick();
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(sim_ps: u64, events: u64) -> Progress {
        Progress {
            sim_ps,
            stop_ps: None,
            events,
            flows: (40, 12),
            partial: false,
        }
    }

    #[test]
    fn a_line_comes_once_per_interval_with_the_rate_since_the_last() {
        let mut l = Lines::new(Duration::from_secs(30));
        let t0 = l.start;
        assert_eq!(
            l.line(at(1_000_000, 10), t0 + Duration::from_secs(29)),
            None
        );
        let first = l.line(at(2_000_000, 3_000_000), t0 + Duration::from_secs(30));
        assert_eq!(
            first.as_deref(),
            Some("progress: simulated 2.000 us, 12 of 40 flows finished, 0.100 M events/s, 30 s wall")
        );
        assert_eq!(
            l.line(at(3_000_000, 3_000_000), t0 + Duration::from_secs(31)),
            None
        );
        // A stuck run: no events in the next interval.
        let stuck = l.line(at(3_000_000, 3_000_000), t0 + Duration::from_secs(60));
        assert!(stuck.unwrap().contains(" 0.000 M events/s, 60 s wall"));
    }

    #[test]
    fn quiet_and_other_ranks_show_nothing_and_a_terminal_gets_the_bar() {
        assert_eq!(Mode::choose(true, true, false), Ok(Mode::Off));
        assert_eq!(Mode::choose(false, false, false), Ok(Mode::Off));
        assert_eq!(Mode::choose(false, true, true), Ok(Mode::Bar));
    }
}
