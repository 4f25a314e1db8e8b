//! Slow head, ordered output: 16 workers, timer-based handlers of one 1 ms
//! sleep, and the first item of every 16 taking 50 such sleeps.
//! `buffered(16)` waits behind each slow head item; `bounded(16, 16).ordered(r)`
//! keeps the other workers going up to `r` items ahead, holding at most `r`
//! outputs. (futures-buffered's `buffered_ordered(16)` caps running futures
//! only, so it also keeps going, holding outputs without a bound.) After the
//! timings, the peak number of held outputs that `stats()` reported is printed
//! for each window.

#[path = "common/mod.rs"]
mod common;

use common::SLOW_HEAD_ITEMS;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn slow_head(c: &mut Criterion) {
    let runtime = common::tokio_runtime();
    let mut group = c.benchmark_group("slow_head");
    group.throughput(Throughput::Elements(SLOW_HEAD_ITEMS));
    let mut peaks = Vec::new();
    for adapter in common::slow_head_set() {
        let run_once = || {
            let source = common::slow_head_source(SLOW_HEAD_ITEMS);
            let outcome = runtime.block_on(common::run(adapter, source));
            outcome.check(adapter, SLOW_HEAD_ITEMS);
            outcome
        };
        common::size_from_one_run(&mut group, || {
            if let Some(stats) = run_once().stats {
                peaks.push((adapter, stats));
            }
        });
        group.bench_function(
            BenchmarkId::new(adapter.family().name(), adapter.parameters()),
            |b| b.iter(run_once),
        );
    }
    group.finish();
    for (adapter, stats) in peaks {
        println!(
            "slow_head: {:<32} peak_held = {:>3}, peak_active = {:>2}",
            adapter.label(),
            stats.peak_held,
            stats.peak_active
        );
    }
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = slow_head
}
criterion_main!(benches);
