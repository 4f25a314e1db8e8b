//! Overhead: futures with no work of their own (ready at once, or yielding once)
//! on a tokio current-thread runtime, so the time per item is the adapter's own
//! bookkeeping. `then` (one at a time) is the floor.

#[path = "common/mod.rs"]
mod common;

use common::{Adapter, JobKind, OVERHEAD_WORKERS};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const ITEMS: u64 = 100_000;

fn overhead(c: &mut Criterion) {
    let runtime = common::tokio_runtime();
    for kind in JobKind::ALL {
        let mut group = c.benchmark_group(format!("overhead/{}", kind.name()));
        group.throughput(Throughput::Elements(ITEMS));
        let mut measure = |adapter: Adapter, parameter: String| {
            let run_once = || {
                runtime
                    .block_on(common::run(adapter, common::jobs(ITEMS, kind)))
                    .check(adapter, ITEMS)
            };
            common::size_from_one_run(&mut group, run_once);
            group.bench_function(BenchmarkId::new(adapter.family().name(), parameter), |b| {
                b.iter(run_once)
            });
        };
        // The sequential floor does not depend on the worker count.
        measure(Adapter::Sequential, "any_w".to_owned());
        for w in OVERHEAD_WORKERS {
            for adapter in Adapter::overhead_set(w) {
                measure(adapter, format!("w={w}"));
            }
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = overhead
}
criterion_main!(benches);
