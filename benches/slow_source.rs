//! Slow source: a paged source of 64 items a page, each page fetched by an
//! async delay as long as 16 workers take to process one page of 1 ms
//! handlers (four handler times). `buffer_unordered(16)` asks the source for
//! more only when a slot frees up, so page fetches and work take turns;
//! `bounded(16, q)` keeps pulling while the workers are busy, and with q >= 16
//! fetches the next page while the current one is being worked on.

#[path = "common/mod.rs"]
mod common;

use common::{PAGE_LEN, PAGES};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn slow_source(c: &mut Criterion) {
    let runtime = common::tokio_runtime();
    let items = PAGES * PAGE_LEN;
    let mut group = c.benchmark_group("slow_source");
    group.throughput(Throughput::Elements(items));
    for adapter in common::slow_source_set() {
        let run_once = || {
            runtime
                .block_on(common::run(adapter, common::paged_source(PAGES)))
                .check(adapter, items)
        };
        common::size_from_one_run(&mut group, run_once);
        group.bench_function(
            BenchmarkId::new(adapter.family().name(), adapter.parameters()),
            |b| b.iter(run_once),
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = slow_source
}
criterion_main!(benches);
