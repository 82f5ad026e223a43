//! Generating every flow of an 8192-host Poisson workload (web-search sizes, load 0.5 of
//! 100 Gb/s host links) over 10 ms of simulated time. The budget is one second; the
//! generator holds one pending arrival per host, so memory stays O(hosts).

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use workloads::spec::{LoadOf, PoissonSpec, SizeDistName};
use workloads::{PatternSpec, Workload, WorkloadEnv};

fn workload() -> Workload {
    let spec = PatternSpec::Poisson(PoissonSpec {
        priority: 0,
        load: 0.5,
        load_of: LoadOf::HostLink,
        size_dist: SizeDistName::Websearch,
        size_bytes: None,
        min_size_bytes: None,
        max_size_bytes: None,
        cdf_file: None,
        size_quantum_bytes: None,
        packet_payload_bytes: None,
        start_us: 0.0,
        stop_us: None,
        exclude_hosts: Vec::new(),
        far_group_size: None,
    });
    let env = WorkloadEnv {
        hosts: 8192,
        host_link_bps: 100_000_000_000,
        bisection_bps: 8192 * 100_000_000_000 / 2,
        hosts_per_rack: 16,
        seed: 1,
        stop_ps: Some(10_000_000_000), // 10 ms
        base_dir: PathBuf::from("."),
    };
    match Workload::new(vec![spec], env) {
        Ok(w) => w,
        Err(e) => panic!("benchmark workload is invalid: {e}"),
    }
}

fn bench(c: &mut Criterion) {
    let w = workload();
    let flows = w.open_loop_flows().len();
    eprintln!("8192 hosts, 10 ms, websearch at 0.5 x 100 Gb/s: {flows} flows");
    let mut g = c.benchmark_group("poisson");
    g.sample_size(10);
    g.bench_function("8192_hosts_websearch_10ms_all_flows", |b| {
        b.iter(|| {
            let w = workload();
            let mut gen = w.generator(&|_| true);
            let mut out = Vec::new();
            gen.pop_before(u64::MAX, &mut out);
            black_box(out.len())
        })
    });
    g.bench_function("8192_hosts_websearch_10ms_by_1us_steps_4_shards", |b| {
        b.iter(|| {
            let mut gens: Vec<_> = (0..4u32)
                .map(|k| w.generator(&move |h| h % 4 == k))
                .collect();
            let mut out = Vec::new();
            let mut n = 0;
            for step in 1..=10_000u64 {
                for gen in gens.iter_mut() {
                    gen.pop_before(step * 1_000_000, &mut out);
                    n += out.len();
                    out.clear();
                }
            }
            black_box(n)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
