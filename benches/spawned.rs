//! Spawned mode against in place, on tokio's multi-threaded runtime with one and
//! with two worker threads:
//!
//! - `spawned/cpu_bound`: every future does a fixed amount of CPU work
//!   (`CPU_ROUNDS` xorshift rounds) without awaiting. In place, all of it runs on the consumer's thread; spawned, it
//!   spreads over the runtime's worker threads, so two threads should take about
//!   half the time of one (on a machine with at least two free cores).
//! - `spawned/cpu_bound/std_threads`: the same work split over plain threads,
//!   the machine's own parallel speed-up: if two threads are not faster than
//!   one there (other load on the cores), spawned mode cannot be either.
//! - `spawned/simulated_io`: every future sleeps 1 ms. The timers dominate, so
//!   this shows what spawned mode's tasks, channel and locks cost per item
//!   compared with polling in place.
//! - `spawned/ready`: futures with nothing to do, so only the hand-offs count;
//!   against the peer a user would write instead, `tokio::spawn` per item and
//!   `buffer_unordered` over the join handles (`spawn_each`).
//!
//! `cargo bench --bench spawned`; the figures measured so far are in the README.

use std::hint::black_box;
use std::time::Duration;

use bounded_buffered::BoundedStreamExt;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::{Stream, StreamExt, stream};

const CPU_ITEMS: u64 = 256;
const CPU_WORKERS: usize = 4;
/// xorshift rounds per item: enough that the work dwarfs the per-item cost of
/// either mode.
const CPU_ROUNDS: u32 = 40_000;

const READY_ITEMS: u64 = 20_000;
const READY_WORKERS: usize = 16;

const IO_ITEMS: u64 = 4_096;
const IO_WORKERS: usize = 64;
const IO_DELAY: Duration = Duration::from_millis(1);

#[derive(Clone, Copy, Debug)]
enum Mode {
    InPlace,
    Spawned,
}

impl Mode {
    const ALL: [Mode; 2] = [Mode::InPlace, Mode::Spawned];

    fn name(self) -> &'static str {
        match self {
            Mode::InPlace => "in_place",
            Mode::Spawned => "spawned",
        }
    }
}

fn runtime(threads: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_time()
        .build()
        .unwrap()
}

fn cpu_work(seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..CPU_ROUNDS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    black_box(x)
}

/// The CPU workload without any adapter: items dealt round-robin to `threads`
/// plain threads.
fn on_threads(threads: usize) -> u64 {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads as u64)
            .map(|first| {
                scope.spawn(move || {
                    (first..CPU_ITEMS)
                        .step_by(threads)
                        .map(|seed| {
                            cpu_work(seed);
                            1
                        })
                        .sum::<u64>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .sum()
    })
}

fn cpu_source() -> impl Stream<Item = impl Future<Output = u64> + Send + 'static> + Send + 'static {
    stream::iter(0..CPU_ITEMS).map(|seed| async move { cpu_work(seed) })
}

fn ready_source() -> impl Stream<Item = impl Future<Output = u64> + Send + 'static> + Send + 'static
{
    stream::iter(0..READY_ITEMS).map(|n| async move { n })
}

/// The peer: a task per item, at most `workers` at once.
fn run_spawn_each(runtime: &tokio::runtime::Runtime, workers: usize) -> u64 {
    runtime.block_on(
        ready_source()
            .map(tokio::spawn)
            .buffer_unordered(workers)
            .fold(0, |count, joined| async move {
                joined.expect("a ready future does not panic");
                count + 1
            }),
    )
}

fn io_source() -> impl Stream<Item = impl Future<Output = u64> + Send + 'static> + Send + 'static {
    stream::iter(0..IO_ITEMS).map(|n| async move {
        tokio::time::sleep(IO_DELAY).await;
        n
    })
}

/// Runs every item of `source` through the adapter in `mode` and counts them.
fn run<S>(runtime: &tokio::runtime::Runtime, mode: Mode, source: S, workers: usize) -> u64
where
    S: Stream + Send + 'static,
    S::Item: Future<Output = u64> + Send + 'static,
{
    let bounded = source.bounded(workers, workers);
    runtime.block_on(async {
        match mode {
            Mode::InPlace => bounded.fold(0, |count, _| async move { count + 1 }).await,
            Mode::Spawned => {
                let spawned = bounded.spawn_on(tokio::runtime::Handle::current());
                spawned.fold(0, |count, _| async move { count + 1 }).await
            }
        }
    })
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("spawned/cpu_bound");
    group.throughput(Throughput::Elements(CPU_ITEMS));
    for threads in [1, 2] {
        let id = BenchmarkId::new("std_threads", format!("threads={threads}"));
        group.bench_function(id, |b| {
            b.iter(|| assert_eq!(on_threads(threads), CPU_ITEMS))
        });
        let runtime = runtime(threads);
        for mode in Mode::ALL {
            let id = BenchmarkId::new(mode.name(), format!("threads={threads}"));
            group.bench_function(id, |b| {
                b.iter(|| assert_eq!(run(&runtime, mode, cpu_source(), CPU_WORKERS), CPU_ITEMS))
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("spawned/ready");
    group.throughput(Throughput::Elements(READY_ITEMS));
    for threads in [1, 2] {
        let runtime = runtime(threads);
        for mode in Mode::ALL {
            let id = BenchmarkId::new(mode.name(), format!("threads={threads}"));
            group.bench_function(id, |b| {
                b.iter(|| {
                    assert_eq!(
                        run(&runtime, mode, ready_source(), READY_WORKERS),
                        READY_ITEMS
                    )
                })
            });
        }
        let id = BenchmarkId::new("spawn_each", format!("threads={threads}"));
        group.bench_function(id, |b| {
            b.iter(|| assert_eq!(run_spawn_each(&runtime, READY_WORKERS), READY_ITEMS))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("spawned/simulated_io");
    group.throughput(Throughput::Elements(IO_ITEMS));
    for threads in [1, 2] {
        let runtime = runtime(threads);
        for mode in Mode::ALL {
            let id = BenchmarkId::new(mode.name(), format!("threads={threads}"));
            group.bench_function(id, |b| {
                b.iter(|| assert_eq!(run(&runtime, mode, io_source(), IO_WORKERS), IO_ITEMS))
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
