//! PFC (`psim/src/net/pfc.rs`) in whole runs: a CBR incast at line rate
//! over drop-tail loses packets; with PFC every byte arrives, pause frames
//! flow and spread back to the senders' NICs, and the run is the same for
//! any partition.

use psim_integration_tests::{repo_root, run, scenario};

fn incast(pfc: bool) -> String {
    format!(
        "seed = 5\n[topology]\nkind = \"fattree\"\nk = 4\n\
         [switch.queue]\nkind = \"droptail\"\nqueue_bytes = {}\n\
         [switch.pfc]\nenabled = {pfc}\nbuffer_bytes = 40000\nheadroom_bytes = 15000\n\
         [[traffic]]\nprotocol = \"cbr\"\npattern = \"incast\"\nreceiver = 0\nsenders = 6\nsize_bytes = 300000\n",
        // Without PFC a 40 KB egress buffer; with it the MMU decides and the egress never fills.
        if pfc { 10_000_000 } else { 40_000 }
    )
}

#[test]
fn without_pfc_the_incast_drops_with_it_nothing_is_lost() {
    let lossy = run(&scenario(&incast(false), &[]), 1, 1);
    assert!(lossy.outcome.summary.packets.dropped > 0);
    let r = run(&scenario(&incast(true), &[]), 1, 1);
    let s = &r.outcome.summary;
    assert!(s.conserved(), "{s:?}");
    assert_eq!(s.packets.dropped, 0);
    assert_eq!(s.ports.dropped, 0);
    for f in &r.flows {
        assert_eq!(Some(f.bytes_received), f.size_bytes, "flow {}", f.flow_id);
    }
    // Every frame sent arrives (none is in flight at the end), and pauses
    // reach the senders: ports spent time paused.
    assert!(s.ports.pause_sent > 0);
    assert_eq!(s.ports.pause_sent, s.ports.pause_received);
    assert_eq!(s.packets.frames_sent, s.packets.frames_received);
    assert!(s.ports.paused_ps > 0);
}

/// Six senders at 10 Gb/s into one 10 Gb/s port: lossless, the receiver
/// gets its 1.8 MB at line rate, so the last byte cannot arrive before
/// 1.8 MB / 10 Gb/s = 1.44 ms, and PFC must not idle the bottleneck much
/// beyond it: the run ends within 5% of that bound.
#[test]
fn the_paused_incast_still_fills_the_bottleneck() {
    let r = run(&scenario(&incast(true), &[]), 1, 1);
    let last = r.flows.iter().filter_map(|f| f.finish_ps).max().unwrap();
    let wire: u64 = r.flows.iter().map(|f| f.bytes_sent).sum();
    let bound = wire * 8 * 1000 / 10; // ps at 10 Gb/s
    assert!(last >= bound, "{last} < {bound}");
    assert!((last as f64) < bound as f64 * 1.05, "{last} vs {bound}");
}

#[test]
fn pfc_runs_are_identical_for_any_partition() {
    let scn = scenario(&incast(true), &[]);
    let one = run(&scn, 1, 1);
    for shards in [2, 3] {
        let r = run(&scn, shards, 2);
        assert_eq!(r.csv, one.csv, "{shards} shards");
        assert_eq!(r.outcome.summary.ports, one.outcome.summary.ports);
        assert_eq!(r.outcome.summary.packets, one.outcome.summary.packets);
    }
}

#[test]
fn impossible_pfc_settings_name_the_key() {
    let path = repo_root().join("inline.toml");
    for (set, key) in [
        ("switch.pfc.headroom_bytes=100", "switch.pfc.headroom_bytes"),
        ("switch.pfc.xoff_bytes=39000", "switch.pfc.xoff_bytes"),
        ("switch.pfc.lossless=[9]", "switch.pfc.lossless"),
        ("switch.pfc.lossless=[]", "switch.pfc.lossless"),
        ("switch.pfc.alpha=-1.0", "switch.pfc.alpha"),
        ("switch.queue={kind=\"ndp\"}", "switch.queue.kind"),
        (
            "switch.tor.queue={kind=\"random\"}",
            "switch.tor.queue.kind",
        ),
    ] {
        let e = psim::config::Scenario::from_str(&incast(true), &path, &[set.to_string()])
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{set}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}
