//! `psim validate`'s quick rows in docs/validation.md agree with a fresh run.
//!
//! The whole quick set reruns here in process (about 20 s with the
//! workspace's test profile on 2 cores), and every check's quick cell in the
//! doc must equal the fresh one: value and verdict. The same comparison from
//! the command line: `psim validate --quick --check-doc docs/validation.md`.

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
            shards: 2,
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
