//! `psim bench --suite`: the engine benchmark suite of issue 17, one command
//! and one table (`docs/performance.md`).
//!
//! Each case is a scenario run in a child process (`psim run`), so that its
//! peak memory (the child's `VmHWM`, the kernel's figure behind getrusage's
//! `ru_maxrss`, from the manifest) is its own. The table gives, per case:
//! events, data packets (the flows' `packets_sent`, retransmissions
//! included), events per data packet, windows, simulated time, wall time of
//! the window loop, events/s and peak memory. Sizes keep the whole suite at
//! a few minutes in release on a 2-core machine.
//!
//! | case | what | why |
//! |---|---|---|
//! | `ndp-perm-k16` | NDP permutation, FatTree k = 16 (1024 hosts), 500 KB flows | the NDP permutation of `scenarios/bench/ndp_perm_8192.toml`, smaller |
//! | `ndp-perm-k32` | the same at k = 32 (8192 hosts), 100 KB flows | 8192 hosts: the event heap and port state leave the cache |
//! | `dctcp-perm-k16` | DCTCP permutation, k = 16, 500 KB flows, ECN at K = 30 of 200 packets | a window-based transport: ACK-clocked, with RTO timers |
//! | `ndp-incast-k16` | 1000 NDP senders x 100 KB into host 0, k = 16 | all work in one pod (load balance) |
//! | `cbr-k16` | full-load CBR permutation, k = 16, 20 us (the `psim bench` scenario) | the engine's bare per-packet cost |

use anyhow::{bail, Context, Result};
use psim::engine::event::EventCounts;
use std::path::Path;
use std::process::Command;

/// One case: a name and its scenario text.
struct Case {
    name: &'static str,
    k: u64,
    toml: String,
}

/// The NDP switch and transport settings of `scenarios/bench/ndp_perm_8192.toml`.
const NDP: &str = "[switch.queue]\nkind = \"ndp\"\nqueue_packets = 35\n\
                   [protocol.ndp]\nmtu_bytes = 4000\niw_packets = 50\n";

fn fattree(k: u32) -> String {
    format!("[topology]\nkind = \"fattree\"\nk = {k}\nlink_gbps = 100\nlatency_ns = 1000\n")
}

fn cases() -> Vec<Case> {
    let perm = |proto: &str, size: u64| {
        format!(
            "[[traffic]]\nprotocol = \"{proto}\"\npattern = \"permutation\"\nsize_bytes = {size}\n"
        )
    };
    vec![
        Case {
            name: "ndp-perm-k16",
            k: 16,
            toml: format!("{}{NDP}{}", fattree(16), perm("ndp", 500_000)),
        },
        Case {
            name: "ndp-perm-k32",
            k: 32,
            toml: format!("{}{NDP}{}", fattree(32), perm("ndp", 100_000)),
        },
        Case {
            name: "dctcp-perm-k16",
            k: 16,
            toml: format!(
                "{}[switch.queue]\nkind = \"ecn\"\nqueue_packets = 200\necn_threshold = 30\n\
                 [protocol.tcp]\nmin_rto_us = 1000\ninitial_rto_us = 1000\n{}",
                fattree(16),
                perm("dctcp", 500_000)
            ),
        },
        Case {
            name: "ndp-incast-k16",
            k: 16,
            toml: format!(
                "{}{NDP}[[traffic]]\nprotocol = \"ndp\"\npattern = \"incast\"\nreceiver = 0\n\
                 senders = 1000\nsize_bytes = 100000\n",
                fattree(16)
            ),
        },
        Case {
            name: "cbr-k16",
            k: 16,
            toml: format!(
                "stop_us = 20\n{}[protocol.cbr]\npacket_bytes = 1500\n[[traffic]]\n\
                 protocol = \"cbr\"\npattern = \"permutation\"\n",
                fattree(16)
            ),
        },
    ]
}

/// Runs the suite at `threads` x `shards` and prints the table.
pub fn run(threads: u32, shards: u32) -> Result<()> {
    let exe = std::env::current_exe().context("finding the psim binary")?;
    let dir = std::env::temp_dir().join(format!("psim-bench-suite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let result = run_in(&exe, &dir, threads, shards);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_in(exe: &Path, dir: &Path, threads: u32, shards: u32) -> Result<()> {
    println!("# psim bench --suite: {threads} thread(s) x {shards} shard(s), seed 1");
    println!(
        "| case | hosts | events | data packets | events/packet | windows | simulated us \
         | wall s | M events/s | peak MiB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut kinds = Vec::new();
    for case in cases() {
        let file = dir.join(format!("{}.toml", case.name));
        let text = format!("name = \"bench-{}\"\nseed = 1\n{}", case.name, case.toml);
        std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
        let out = dir.join(case.name);
        let ran = Command::new(exe)
            .arg("run")
            .arg(&file)
            .arg("--out")
            .arg(&out)
            .args(["--force", "--quiet", "--threads"])
            .arg(threads.to_string())
            .arg("--shards")
            .arg(shards.to_string())
            .output()
            .with_context(|| format!("running case {}", case.name))?;
        if !ran.status.success() {
            bail!(
                "case {} failed ({}): {}",
                case.name,
                ran.status,
                String::from_utf8_lossy(&ran.stderr).trim()
            );
        }
        let m: serde_json::Value = serde_json::from_slice(
            &std::fs::read(out.join("manifest.json")).context("reading the case's manifest")?,
        )
        .context("parsing the case's manifest")?;
        let flows = psim::trace::read_flows_checked(&out, false, &mut |_| {})?;
        let data: u64 = flows.iter().map(|f| f.packets_sent).sum();
        let num = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
        let events = num(&m["events"]);
        let wall = num(&m["wall_s"]);
        let hosts = case.k * case.k * case.k / 4;
        println!(
            "| {} | {hosts} | {events:.0} | {data} | {:.2} | {} | {:.1} | {wall:.2} | {:.2} | {:.0} |",
            case.name,
            events / data as f64,
            m["packets"]["windows"],
            num(&m["sim_end_ps"]) / 1e6,
            events / wall / 1e6,
            num(&m["peak_rss_bytes"]) / (1024.0 * 1024.0),
        );
        let by_kind = &m["packets"]["events_by_kind"];
        kinds.push((
            case.name,
            EventCounts::NAMES.map(|n| num(&by_kind[n]) / data as f64),
        ));
        let _ = std::fs::remove_dir_all(&out);
    }
    println!("\n# events per data packet, by kind (docs/engine.md)");
    println!("| case | {} |", EventCounts::NAMES.join(" | "));
    println!("|---|{}", "---:|".repeat(EventCounts::KINDS));
    for (name, per) in kinds {
        let cells: Vec<String> = per.iter().map(|v| format!("{v:.2}")).collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    Ok(())
}
