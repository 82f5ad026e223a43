//! No idle windows (issue 17): superseded timers are dropped at window
//! boundaries, so the window loop stops once only they remain, and every
//! window starts at a live event. The by-kind event counts add up and do not
//! depend on the partition.

use psim::config::Scenario;
use psim::engine::{SimOptions, Simulation};
use psim_integration_tests::repo_root;

/// With one shard a window is the notice delay (the largest link delay,
/// here 1 µs) and starts at the earliest live event, so a run cannot take
/// more windows than its simulated time holds. Before superseded timers
/// were dropped, `ndp_permutation_k4` took 1360 windows for 1012 µs (the
/// TCP runs stayed under their bound, but they exercise the sweep).
#[test]
fn windows_follow_simulated_time_not_superseded_timers() {
    for name in [
        "ndp_permutation_k4",
        "dctcp_permutation_k4",
        "tcp_incast_k4",
    ] {
        let path = repo_root().join(format!("scenarios/small/{name}.toml"));
        let sets = ["topology.latency_ns=1000".to_string()];
        let scn = Scenario::load(&path, &sets).unwrap_or_else(|e| panic!("{e}"));
        let mut by_partition = Vec::new();
        for (shards, threads) in [(1, 1), (4, 2)] {
            let mut sim = Simulation::new(&scn, SimOptions { shards, threads })
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let s = sim
                .run(&mut |_| {})
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                s.event_counts.total(),
                s.events,
                "{name}: kinds must add up"
            );
            assert!(
                s.event_counts.0[psim::engine::event::EventCounts::TIMER_STALE] > 0,
                "{name}: expected superseded timers to exercise the drop"
            );
            if shards == 1 {
                let bound = s.sim_end_ps / 1_000_000 + 1;
                assert!(
                    s.windows <= bound,
                    "{name}: {} windows for {} ps of 1 µs windows",
                    s.windows,
                    s.sim_end_ps
                );
            }
            by_partition.push((s.events, s.event_counts, s.sim_end_ps));
        }
        assert_eq!(
            by_partition[0], by_partition[1],
            "{name}: partition-dependent"
        );
    }
}
