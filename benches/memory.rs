//! Memory: spawning a tokio task per item, each waiting for a `Semaphore` permit
//! (the usual way to bound concurrency), against `bounded` and the stream
//! adapters, for 1e4, 1e5 and 1e6 yield-once items with 16 workers.
//!
//! A counting global allocator measures allocations and peak live bytes; they
//! are printed as a table first (spawn-all grows with N; `bounded` does not),
//! then criterion times the same runs. The allocator's counters cost every
//! implementation the same few atomic operations per allocation.

#[path = "common/mod.rs"]
mod common;

use common::{CountingAllocator, MEMORY_SIZES, MemoryCase};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn memory(c: &mut Criterion) {
    let runtime = common::tokio_runtime();
    println!(
        "memory: {:<28} {:>9} {:>12} {:>16}",
        "implementation", "N", "allocations", "peak live bytes"
    );
    for case in MemoryCase::all() {
        // The first run grows the adapter's storage and the runtime's internals,
        // so every measured run starts from the same warm state.
        case.run(&runtime, MEMORY_SIZES[0]);
        for n in MEMORY_SIZES {
            let report = common::count_allocations(|| case.run(&runtime, n));
            println!(
                "memory: {:<28} {:>9} {:>12} {:>16}",
                case.label(),
                n,
                report.allocations,
                report.peak_bytes
            );
        }
    }

    for n in MEMORY_SIZES {
        let mut group = c.benchmark_group(format!("memory/n={n}"));
        group.throughput(Throughput::Elements(n));
        for case in MemoryCase::all() {
            common::size_from_one_run(&mut group, || case.run(&runtime, n));
            group.bench_function(BenchmarkId::from_parameter(case.name()), |b| {
                b.iter(|| case.run(&runtime, n))
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = memory
}
criterion_main!(benches);
