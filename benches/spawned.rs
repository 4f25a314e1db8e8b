//! Spawned mode against what a user would write instead, and against itself in
//! place. The workloads live in `benches/common/spawned.rs`, shared with
//! `tools/compare` (`cargo run --release -p compare`), whose spawned section
//! prints the same figures as a table with ratios and a chart.
//!
//! - `spawned/handoff` (the guide's spawned table): `bounded(16, 16).spawn_on(handle)`
//!   against a task per item (`spawn` + `buffer_unordered(16)`) and tokio's
//!   `JoinSet` + `Semaphore(16)`, on ready, yield-once and 20 µs CPU futures,
//!   with the consumer in `block_on` or as a task, on a 2-thread tokio
//!   runtime. `spawned/handoff_smol`: the same on a 2-thread smol executor,
//!   without the `JoinSet` column.
//! - `spawned/cpu_scaling`: CPU-bound items on a 1- and a 2-thread runtime,
//!   and the same work on 1 and 2 plain OS threads: the speed-up spawned mode
//!   gets against the machine's own.
//! - `spawned/few_items`: `bounded(100_000, 0)` against `bounded(5, 0)` over 5
//!   items: tasks grow with demand, so a huge budget costs nothing up front.
//! - `spawned/simulated_io`: every future sleeps 1 ms; in place against
//!   spawned, on 1 and 2 threads. The timers dominate.
//!
//! `cargo bench --bench spawned`; the figures measured so far are in the README.

mod common;

use std::time::Duration;

use bounded_buffered::BoundedStreamExt;
use common::spawned::{
    Consumer, FEW_ITEMS, Runner, SCALING_ITEMS, SmolPool, Work, cpu_on_threads, cpu_spawned,
    multi_thread_runtime, run_few_items, run_smol, run_tokio,
};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::{Stream, StreamExt, stream};

const IO_ITEMS: u64 = 4_096;
const IO_WORKERS: usize = 64;
const IO_DELAY: Duration = Duration::from_millis(1);

fn handoff(c: &mut Criterion) {
    let runtime = multi_thread_runtime(2);
    let mut group = c.benchmark_group("spawned/handoff");
    for work in Work::ALL {
        group.throughput(Throughput::Elements(work.items()));
        for consumer in Consumer::ALL {
            for runner in Runner::TOKIO {
                let id = BenchmarkId::new(
                    runner.name(),
                    format!("{}/{}", work.name(), consumer.name()),
                );
                group.bench_function(id, |b| {
                    b.iter(|| run_tokio(&runtime, runner, consumer, work, work.items()))
                });
            }
        }
    }
    group.finish();
    drop(runtime);

    let pool = SmolPool::new(2);
    let mut group = c.benchmark_group("spawned/handoff_smol");
    for work in Work::ALL {
        group.throughput(Throughput::Elements(work.items()));
        for consumer in Consumer::ALL {
            for runner in Runner::SMOL {
                let id = BenchmarkId::new(
                    runner.name(),
                    format!("{}/{}", work.name(), consumer.name()),
                );
                group.bench_function(id, |b| {
                    b.iter(|| run_smol(&pool, runner, consumer, work, work.items()))
                });
            }
        }
    }
    group.finish();
}

fn cpu_scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("spawned/cpu_scaling");
    group.throughput(Throughput::Elements(SCALING_ITEMS));
    for threads in [1, 2] {
        let id = BenchmarkId::new("std_threads", format!("threads={threads}"));
        group.bench_function(id, |b| {
            b.iter(|| assert_eq!(cpu_on_threads(threads), SCALING_ITEMS))
        });
        let runtime = multi_thread_runtime(threads);
        let id = BenchmarkId::new("spawned", format!("threads={threads}"));
        group.bench_function(id, |b| {
            b.iter(|| assert_eq!(cpu_spawned(&runtime), SCALING_ITEMS))
        });
    }
    group.finish();
}

fn few_items(c: &mut Criterion) {
    let runtime = multi_thread_runtime(2);
    let mut group = c.benchmark_group("spawned/few_items");
    group.throughput(Throughput::Elements(FEW_ITEMS));
    for workers in [FEW_ITEMS as usize, 100_000] {
        let id = BenchmarkId::new("bounded", format!("workers={workers}"));
        group.bench_function(id, |b| {
            b.iter(|| run_few_items(&runtime, workers, FEW_ITEMS))
        });
    }
    group.finish();
}

fn io_source() -> impl Stream<Item = impl Future<Output = u64> + Send + 'static> + Send + 'static {
    stream::iter(0..IO_ITEMS).map(|n| async move {
        tokio::time::sleep(IO_DELAY).await;
        n
    })
}

fn simulated_io(c: &mut Criterion) {
    let mut group = c.benchmark_group("spawned/simulated_io");
    group.throughput(Throughput::Elements(IO_ITEMS));
    for threads in [1, 2] {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_time()
            .build()
            .expect("a multi-thread runtime builds");
        let id = BenchmarkId::new("in_place", format!("threads={threads}"));
        group.bench_function(id, |b| {
            b.iter(|| {
                let count = runtime.block_on(io_source().bounded(IO_WORKERS, IO_WORKERS).count());
                assert_eq!(count as u64, IO_ITEMS);
            })
        });
        let id = BenchmarkId::new("spawned", format!("threads={threads}"));
        group.bench_function(id, |b| {
            b.iter(|| {
                let spawned = io_source()
                    .bounded(IO_WORKERS, IO_WORKERS)
                    .spawn_on(runtime.handle().clone());
                assert_eq!(runtime.block_on(spawned.count()) as u64, IO_ITEMS);
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = handoff, cpu_scaling, few_items, simulated_io
}
criterion_main!(benches);
