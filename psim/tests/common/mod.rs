//! What the binary tests of `psim/tests/` share: the built binary, its output
//! as text, the smallest scenario that runs real flows, and a slowed-down
//! checkpointing run to signal or kill.
#![allow(dead_code)] // each test file uses its own subset

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A k = 4 FatTree (16 hosts) with a CBR permutation over 50 µs: well under
/// a second even in a debug build.
pub const CBR_K4: &str = r#"seed = 1
stop_us = 50
[topology]
kind = "fattree"
k = 4
[[traffic]]
protocol = "cbr"
pattern = "permutation"
size_bytes = 20000
"#;

/// Runs the built `psim` with `args`, without a backtrace on errors.
pub fn psim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_psim"))
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("start psim")
}

/// Output bytes as text, for messages and asserts.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Asserts that a psim command succeeded without a panic, and returns its stdout.
pub fn assert_ok(out: &Output) -> String {
    let stderr = text(&out.stderr);
    assert!(
        out.status.success(),
        "psim failed with {:?}\nstderr:\n{stderr}\nstdout:\n{}",
        out.status.code(),
        text(&out.stdout)
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    text(&out.stdout)
}

/// `psim run SCENARIO --out OUT --quiet --checkpoint-every 0s` plus `extra`,
/// not started, with every checkpoint paused `pause_ms` halfway through its
/// write (the test hook `PSIM_CKPT_PAUSE_MS`): a run that checkpoints at
/// every window and lasts long enough to be signalled or killed while it
/// runs, whatever the machine's speed.
pub fn paused_run(scenario: &Path, out: &Path, pause_ms: u32, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_psim"));
    c.arg("run")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .args(["--quiet", "--checkpoint-every", "0s"])
        .args(extra)
        .env_remove("RUST_BACKTRACE")
        .env_remove("PSIM_CKPT_EXIT_AFTER")
        .env("PSIM_CKPT_PAUSE_MS", pause_ms.to_string());
    c
}

/// Polls `f` every 5 ms until it gives a value; fails after 60 s.
pub fn wait_for<T>(mut f: impl FnMut() -> Option<T>) -> T {
    let t = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "timed out");
        std::thread::sleep(Duration::from_millis(5));
    }
}
