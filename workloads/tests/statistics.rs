//! Statistical checks against closed forms: offered load, size distributions, derangements.

use std::path::PathBuf;

use proptest::prelude::*;
use workloads::{FlowSpec, PatternSpec, SizeDist, Workload, WorkloadEnv};

fn env(hosts: u32, seed: u64, stop_ps: Option<u64>) -> WorkloadEnv {
    WorkloadEnv {
        hosts,
        host_link_bps: 10_000_000_000,
        bisection_bps: u64::from(hosts) * 10_000_000_000 / 2,
        hosts_per_rack: 8,
        seed,
        stop_ps,
        base_dir: PathBuf::from("."),
    }
}

fn entries(toml_text: &str) -> Vec<PatternSpec> {
    #[derive(serde::Deserialize)]
    struct Doc {
        traffic: Vec<PatternSpec>,
    }
    toml::from_str::<Doc>(toml_text)
        .expect("valid TOML")
        .traffic
}

fn flows(toml_text: &str, e: WorkloadEnv) -> Vec<FlowSpec> {
    Workload::new(entries(toml_text), e)
        .expect("valid workload")
        .open_loop_flows()
}

/// Offered bytes / (duration × host rate × hosts) over a long run must be within 2% of the
/// target. The run is long enough (~300k flows) that the heavy-tailed web-search sum has a
/// relative standard deviation of about 0.45%, so 2% is over 4 sigma.
#[test]
fn poisson_offered_load_matches_target() {
    let stop_ps = 13_000_000_000_000u64; // 13 s
    let hosts = 64u32;
    for (dist, load, load_of, target, extra) in [
        ("websearch", 0.5, "host_link", 0.5, ""),
        ("irn_heavy", 0.7, "host_link", 0.7, ""),
        ("websearch", 0.8, "bisection", 0.8 * 0.5, ""),
        // Rounding every size up to 100 KB multiples raises the mean by
        // about half (the half of the flows under 1 KB become 100 KB): λ
        // must use the rounded mean for the load to hold.
        (
            "irn_heavy",
            0.7,
            "host_link",
            0.7,
            "size_quantum_bytes = 100000",
        ),
    ] {
        let fl = flows(
            &format!(
                "[[traffic]]\npattern = \"poisson\"\nload = {load}\nload_of = \"{load_of}\"\nsize_dist = \"{dist}\"\n{extra}\n"
            ),
            env(hosts, 42, Some(stop_ps)),
        );
        let bytes: u128 = fl.iter().map(|f| u128::from(f.size_bytes.unwrap())).sum();
        let capacity = 10e9 / 8.0 * (stop_ps as f64 * 1e-12) * f64::from(hosts);
        let offered = bytes as f64 / capacity;
        assert!(fl.len() > 100_000, "{dist}: only {} flows", fl.len());
        assert!(
            (offered / target - 1.0).abs() < 0.02,
            "{dist} {load_of}: offered {offered}, target {target}"
        );
        assert!(fl.iter().all(|f| f.src != f.dst && f.start_ps < stop_ps));
    }
}

/// Kolmogorov–Smirnov statistic of integer samples against `cdf_at` (the exact CDF of the
/// sampled integers): the largest gap between the empirical CDF and the CDF, checked just
/// below and at every distinct sample value.
fn ks_statistic(samples: &mut [u64], d: &SizeDist) -> f64 {
    samples.sort_unstable();
    let n = samples.len() as f64;
    let mut dmax: f64 = 0.0;
    let mut i = 0;
    while i < samples.len() {
        let v = samples[i];
        let mut j = i;
        while j < samples.len() && samples[j] == v {
            j += 1;
        }
        let below = if v == 0 { 0.0 } else { d.cdf_at(v - 1) };
        dmax = dmax.max((i as f64 / n - below).abs());
        dmax = dmax.max((j as f64 / n - d.cdf_at(v)).abs());
        i = j;
    }
    dmax
}

#[test]
fn sampled_sizes_pass_kolmogorov_smirnov() {
    let cases = [
        ("size_dist = \"websearch\"", SizeDist::websearch()),
        ("size_dist = \"fb_hadoop\"", SizeDist::fb_hadoop()),
        ("size_dist = \"ali_storage\"", SizeDist::ali_storage()),
        ("size_dist = \"fb_web\"", SizeDist::fb_web()),
        (
            "size_dist = \"websearch_pfabric\"",
            SizeDist::websearch_pfabric(),
        ),
        ("size_dist = \"datamining\"", SizeDist::datamining()),
        ("size_dist = \"imc10\"", SizeDist::imc10()),
        ("size_dist = \"irn_heavy\"", SizeDist::IrnHeavy),
        (
            "size_dist = \"uniform\"\nmin_size_bytes = 500000\nmax_size_bytes = 5000000",
            SizeDist::Uniform {
                min: 500_000,
                max: 5_000_000,
            },
        ),
    ];
    for (keys, dist) in cases {
        // Fixed number of flows regardless of the mean: stop after enough arrivals.
        let per_host_rate = 10e9 / 8.0 * 0.5 / dist.mean_bytes(); // flows per second
        let stop_ps = (30_000.0 / (16.0 * per_host_rate) * 1e12) as u64;
        let fl = flows(
            &format!("[[traffic]]\npattern = \"poisson\"\nload = 0.5\n{keys}\n"),
            env(16, 7, Some(stop_ps)),
        );
        let mut s: Vec<u64> = fl.iter().map(|f| f.size_bytes.unwrap()).collect();
        let n = s.len();
        assert!(n > 20_000, "{keys}: {n} samples");
        let d = ks_statistic(&mut s, &dist);
        let critical = 1.63 / (n as f64).sqrt();
        assert!(d < critical, "{keys}: KS D = {d} >= {critical} (n = {n})");
    }
}

/// The KS check has power: web-search samples fail against the Hadoop CDF.
#[test]
fn kolmogorov_smirnov_rejects_the_wrong_distribution() {
    let fl = flows(
        "[[traffic]]\npattern = \"poisson\"\nload = 0.5\nsize_dist = \"websearch\"\n",
        env(16, 7, Some(2_000_000_000_000)),
    );
    let mut s: Vec<u64> = fl.iter().map(|f| f.size_bytes.unwrap()).collect();
    let n = s.len() as f64;
    assert!(ks_statistic(&mut s, &SizeDist::fb_hadoop()) > 1.63 / n.sqrt());
}

fn check_derangement(fl: &[FlowSpec], participants: &[u32]) {
    let mut out = std::collections::BTreeMap::new();
    let mut inn = std::collections::BTreeMap::new();
    for f in fl {
        assert_ne!(f.src, f.dst, "host {} sends to itself", f.src);
        *out.entry(f.src).or_insert(0) += 1;
        *inn.entry(f.dst).or_insert(0) += 1;
    }
    for h in participants {
        assert_eq!(out.get(h), Some(&1), "host {h} sends once");
        assert_eq!(inn.get(h), Some(&1), "host {h} receives once");
    }
    assert_eq!(out.len(), participants.len());
    assert_eq!(inn.len(), participants.len());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn permutation_is_always_a_derangement(hosts in 2u32..300, seed in any::<u64>(), excl in 0u32..3) {
        // Exclude a few hosts when there are enough left.
        let excluded: Vec<u32> = if hosts > 4 { (0..excl).map(|i| i * 2 + 1).collect() } else { vec![] };
        let fl = flows(
            &format!("[[traffic]]\npattern = \"permutation\"\nsize_bytes = 1000\nexclude_hosts = {excluded:?}\n"),
            env(hosts, seed, None),
        );
        let parts: Vec<u32> = (0..hosts).filter(|h| !excluded.contains(h)).collect();
        check_derangement(&fl, &parts);
    }
}

/// A Poisson entry's `priority` reaches every flow of that entry, and no other.
#[test]
fn poisson_priority_marks_its_entry_only() {
    let fl = flows(
        "[[traffic]]\npattern = \"poisson\"\nload = 0.1\nsize_dist = \"websearch\"\npriority = 1\n\
         [[traffic]]\npattern = \"poisson\"\nload = 0.1\nsize_dist = \"websearch\"\n",
        env(16, 3, Some(100_000_000_000)),
    );
    let by = |class: u16| fl.iter().filter(move |f| f.class == class);
    assert!(by(0).count() > 10 && by(1).count() > 10);
    assert!(by(0).all(|f| f.priority == 1));
    assert!(by(1).all(|f| f.priority == 0));
}

/// `far_group_size`: every random destination lies outside the sender's group
/// of consecutive hosts, and every host outside it is reached (uniform among
/// them: 4 groups of 8, so each of the 24 far hosts gets about 1/24 of a
/// sender's flows; 200 draws per sender leave each count above 0 with
/// probability 1 - 24 (23/24)^200 > 0.9995).
#[test]
fn far_group_size_sends_outside_the_senders_group() {
    let fl = flows(
        "[[traffic]]\npattern = \"background\"\nflows_per_host = 200\nfar_group_size = 8\n\
         [[traffic]]\npattern = \"poisson\"\nload = 0.5\nsize_dist = \"websearch\"\nfar_group_size = 8\n",
        env(32, 7, Some(2_000_000_000_000)),
    );
    for class in [0u16, 1] {
        let mine: Vec<&FlowSpec> = fl.iter().filter(|f| f.class == class).collect();
        assert!(mine.len() > 1000, "entry {class}: {} flows", mine.len());
        assert!(mine.iter().all(|f| f.src / 8 != f.dst / 8));
    }
    for src in 0..32u32 {
        let mut hit = [false; 32];
        for f in fl.iter().filter(|f| f.class == 0 && f.src == src) {
            hit[f.dst as usize] = true;
        }
        let far = (0..32u32).filter(|&d| d / 8 != src / 8);
        assert!(far.clone().all(|d| hit[d as usize]), "host {src}");
    }
}

/// `far_group_size` that leaves no destination, or that asks a permutation
/// for random destinations, is refused with the key named.
#[test]
fn impossible_far_group_size_is_refused() {
    for (text, want) in [
        ("pattern = \"background\"\nfar_group_size = 16", "far_group_size"),
        ("pattern = \"background\"\nfar_group_size = 0", "far_group_size"),
        (
            "pattern = \"background\"\nfar_group_size = 8\nexclude_hosts = [8, 9, 10, 11, 12, 13, 14, 15]",
            "no destination outside",
        ),
        (
            "pattern = \"background\"\ndestination = \"permutation\"\nfar_group_size = 8",
            "not to a permutation",
        ),
    ] {
        let err = Workload::new(entries(&format!("[[traffic]]\n{text}\n")), env(16, 1, Some(1)))
            .expect_err(text)
            .to_string();
        assert!(err.contains(want), "{text}: {err}");
    }
}
