//! `psim validate`'s quick rows in docs/validation.md agree with a fresh run,
//! and every validation run is byte-identical whatever the partition.
//!
//! The whole quick set reruns here in process (3–4 minutes with the
//! workspace's test profile on 2 cores), and every check's quick cell in the
//! doc must equal the fresh one: value and verdict. The same comparison from
//! the command line: `psim validate --quick --check-doc docs/validation.md`.
//!
//! The committed validation/results/quick.json is made at 1 shard x 1 thread
//! (`psim validate --quick --shards 1 --threads 1 --out validation/results`);
//! this pass runs at 3 shards x 2 threads, and each run's event count, end
//! time and flow-table CRC must equal the committed ones. That puts every
//! scenario of validation/scenarios/, at its quick settings, under the
//! determinism rule at no extra simulation.

use psim::engine::SimOptions;
use psim::validate::{self, report, Options, Results, Scale};
use psim_integration_tests::repo_root;

#[test]
fn the_docs_quick_column_agrees_with_a_fresh_quick_run() {
    let root = repo_root();
    let table = validate::targets::load(&root.join(validate::TARGETS_FILE), &root)
        .unwrap_or_else(|e| panic!("{e}"));
    let selected = validate::select(&table.targets, None).unwrap();
    let out = tempfile::tempdir().unwrap();
    let opts = Options {
        scale: Scale::Quick,
        only: None,
        out: out.path().to_path_buf(),
        sim: SimOptions {
            shards: 3,
            threads: 2,
        },
        root: root.clone(),
        keep_runs: false,
    };
    let mut log = Vec::new();
    let fresh: Results =
        validate::run_all(&selected, &opts, &mut |l| log.push(l.to_string())).unwrap();
    // A run that several targets read (same scenario, same sets) runs once:
    // T24 reuses T21's IRN run, figures and all.
    assert!(
        log.iter().any(|l| l == "T24 irn: same run as irn"),
        "{log:#?}"
    );
    assert_eq!(fresh.targets["T24"].runs[0], fresh.targets["T21"].runs[0]);
    let with_checks = table
        .targets
        .iter()
        .filter(|t| !t.checks.is_empty())
        .count();
    assert_eq!(fresh.targets.len(), with_checks);
    let doc = std::fs::read_to_string(root.join("docs/validation.md")).unwrap();
    let stale = report::quick_mismatches(&doc, &fresh);
    assert!(
        stale.is_empty(),
        "docs/validation.md is stale (regenerate with `psim validate --quick --out validation/results` \
         and `psim validate --write-doc validation/results`): {stale:#?}"
    );
    // Same runs as the committed 1-shard results, byte for byte.
    let committed = Results::read(&root.join("validation/results"), Scale::Quick)
        .unwrap()
        .expect("validation/results/quick.json");
    let mut compared = 0;
    let mut differ = Vec::new();
    for (id, t) in &fresh.targets {
        let Some(old) = committed.targets.get(id) else {
            differ.push(format!("{id}: not in the committed results"));
            continue;
        };
        for r in &t.runs {
            let Some(o) = old.runs.iter().find(|o| o.name == r.name) else {
                differ.push(format!("{id} {}: not in the committed results", r.name));
                continue;
            };
            assert!(r.flows_crc32.is_some());
            compared += 1;
            if (o.events, o.sim_end_ps, o.flows_crc32) != (r.events, r.sim_end_ps, r.flows_crc32) {
                differ.push(format!(
                    "{id} {}: 1 shard {:?}, 3 shards {:?} (events, end ps, flows CRC)",
                    r.name,
                    (o.events, o.sim_end_ps, o.flows_crc32),
                    (r.events, r.sim_end_ps, r.flows_crc32)
                ));
            }
        }
    }
    assert!(compared >= 100, "{compared} runs compared");
    assert!(
        differ.is_empty(),
        "validation runs differ from validation/results/quick.json (1 shard; regenerate it with \
         `psim validate --quick --shards 1 --threads 1 --out validation/results` only if the \
         change is meant): {differ:#?}"
    );
    // The results file was written and reads back (floats to within JSON's rounding).
    let back = Results::read(out.path(), Scale::Quick)
        .unwrap()
        .expect("quick.json");
    let shown = |r: &Results| -> Vec<(String, String)> {
        r.targets
            .values()
            .flat_map(|t| t.checks.iter().map(|c| (c.key.clone(), c.shown.clone())))
            .collect()
    };
    assert_eq!(shown(&back), shown(&fresh));
}
