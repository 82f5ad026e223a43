//! What the binary tests of `psim/tests/` share: the built binary, its output
//! as text, and the smallest scenario that runs real flows.
#![allow(dead_code)] // each test file uses its own subset

use std::process::{Command, Output};

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
