//! The spawned mode's hand-off workloads (the guide's spawned table): `bounded(16,
//! 16).spawn_on(executor)` against the two things a user would write instead,
//! a task per item (`spawn` + `buffer_unordered(16)` over the handles) and
//! tokio's `JoinSet` with a `Semaphore` of 16 permits taken before each
//! spawn; on futures that are ready at once, that yield once, and that burn
//! about 20 µs of CPU; with the consumer in `block_on` on its own thread or as
//! a task on the runtime; on a 2-thread tokio runtime and a 2-thread smol
//! executor. Every run checks that each output came back once.
//!
//! Also the scaling workload (CPU-bound items on 1 and 2 threads, spawned
//! against plain OS threads) and the few-items workload (a huge worker budget
//! over 5 items).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread;

use bounded_buffered::BoundedStreamExt;
use futures::{Stream, StreamExt, stream};

/// The workers (and the task-per-item peers' limit) of the hand-off workload.
pub const HANDOFF_WORKERS: usize = 16;

/// xorshift rounds of the CPU-bound futures: about 20 µs on the 2-core
/// machine the README describes.
pub const CPU_ROUNDS: u32 = 12_000;

/// What each future does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// Nothing: ready on its first poll.
    Ready,
    /// Wakes itself and returns `Pending` once, then is ready.
    YieldOnce,
    /// [`CPU_ROUNDS`] of arithmetic, then ready, without awaiting.
    Cpu,
}

impl Work {
    pub const ALL: [Work; 3] = [Work::Ready, Work::YieldOnce, Work::Cpu];

    pub fn name(self) -> &'static str {
        match self {
            Work::Ready => "ready",
            Work::YieldOnce => "yield_once",
            Work::Cpu => "cpu_20us",
        }
    }

    /// Items per run: enough that a run takes some tens of milliseconds.
    pub fn items(self) -> u64 {
        match self {
            Work::Ready | Work::YieldOnce => 20_000,
            Work::Cpu => 2_000,
        }
    }
}

/// Where the consumer runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consumer {
    /// `block_on` on the calling thread, outside the executor's threads.
    BlockOn,
    /// A task on the executor, waited for from the calling thread.
    Task,
}

impl Consumer {
    pub const ALL: [Consumer; 2] = [Consumer::BlockOn, Consumer::Task];

    pub fn name(self) -> &'static str {
        match self {
            Consumer::BlockOn => "block_on",
            Consumer::Task => "task",
        }
    }
}

/// How the items are run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner {
    /// `bounded(16, 16).spawn_on(executor)`.
    Spawned,
    /// `map(|f| spawn(f)).buffer_unordered(16)`.
    TaskPerItem,
    /// `JoinSet` + `Semaphore(16)`, a permit acquired before each spawn (tokio only).
    JoinSetSemaphore,
}

impl Runner {
    pub const TOKIO: [Runner; 3] = [
        Runner::Spawned,
        Runner::TaskPerItem,
        Runner::JoinSetSemaphore,
    ];
    pub const SMOL: [Runner; 2] = [Runner::Spawned, Runner::TaskPerItem];

    pub fn name(self) -> &'static str {
        match self {
            Runner::Spawned => "spawned",
            Runner::TaskPerItem => "task_per_item",
            Runner::JoinSetSemaphore => "joinset_semaphore",
        }
    }
}

/// `rounds` rounds of xorshift: CPU work the optimiser cannot skip.
pub fn cpu_work(seed: u64, rounds: u32) -> u64 {
    let mut x = seed | 1;
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x)
}

/// One item: completes with its input position after doing its [`Work`].
pub struct Job {
    id: u64,
    work: Work,
    yielded: bool,
}

impl Future for Job {
    type Output = u64;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        match self.work {
            Work::Ready => {}
            Work::YieldOnce if !self.yielded => {
                self.yielded = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Work::YieldOnce => {}
            Work::Cpu => {
                cpu_work(self.id, CPU_ROUNDS);
            }
        }
        Poll::Ready(self.id)
    }
}

pub fn jobs(work: Work, items: u64) -> impl Stream<Item = Job> + Send + 'static {
    stream::iter(0..items).map(move |id| Job {
        id,
        work,
        yielded: false,
    })
}

/// Panics unless `outputs` (count, sum) are exactly `0..items`, each once.
#[track_caller]
fn check(outputs: (u64, u64), items: u64) -> u64 {
    assert_eq!(outputs, (items, items * items.saturating_sub(1) / 2));
    items
}

/// Counts and sums a stream of outputs.
async fn drain(outputs: impl Stream<Item = u64>) -> (u64, u64) {
    outputs
        .fold(
            (0, 0),
            |(count, sum), id| async move { (count + 1, sum + id) },
        )
        .await
}

/// A multi-thread tokio runtime with `threads` worker threads.
pub fn multi_thread_runtime(threads: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .build()
        .expect("a multi-thread runtime builds")
}

/// Runs `items` jobs of `work` through `runner` on `runtime`, the consumer as
/// `consumer` says; returns the items (after checking every output).
pub fn run_tokio(
    runtime: &tokio::runtime::Runtime,
    runner: Runner,
    consumer: Consumer,
    work: Work,
    items: u64,
) -> u64 {
    let handle = runtime.handle().clone();
    let consume = async move {
        let source = jobs(work, items);
        match runner {
            Runner::Spawned => {
                drain(
                    source
                        .bounded(HANDOFF_WORKERS, HANDOFF_WORKERS)
                        .spawn_on(handle),
                )
                .await
            }
            Runner::TaskPerItem => {
                drain(
                    source
                        .map(|job| handle.spawn(job))
                        .buffer_unordered(HANDOFF_WORKERS)
                        .map(|joined| joined.expect("a job does not panic")),
                )
                .await
            }
            Runner::JoinSetSemaphore => joinset_semaphore(source).await,
        }
    };
    let outputs = match consumer {
        Consumer::BlockOn => runtime.block_on(consume),
        Consumer::Task => runtime
            .block_on(runtime.spawn(consume))
            .expect("the consumer does not panic"),
    };
    check(outputs, items)
}

/// tokio's documented pattern: a permit per task, acquired before spawning it,
/// so at most 16 run; outputs joined as they come.
async fn joinset_semaphore(source: impl Stream<Item = Job>) -> (u64, u64) {
    let permits = Arc::new(tokio::sync::Semaphore::new(HANDOFF_WORKERS));
    let mut tasks = tokio::task::JoinSet::new();
    let (mut count, mut sum) = (0, 0);
    let mut source = std::pin::pin!(source);
    while let Some(job) = source.next().await {
        let permit = Arc::clone(&permits)
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        tasks.spawn(async move {
            let id = job.await;
            drop(permit);
            id
        });
        while let Some(joined) = tasks.try_join_next() {
            count += 1;
            sum += joined.expect("a job does not panic");
        }
    }
    while let Some(joined) = tasks.join_next().await {
        count += 1;
        sum += joined.expect("a job does not panic");
    }
    (count, sum)
}

/// A smol executor run by `threads` threads until dropped.
pub struct SmolPool {
    pub executor: Arc<smol::Executor<'static>>,
    stop: Option<smol::channel::Sender<()>>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl SmolPool {
    pub fn new(threads: usize) -> Self {
        let executor = Arc::new(smol::Executor::new());
        let (stop, stopped) = smol::channel::bounded::<()>(1);
        let threads = (0..threads)
            .map(|_| {
                let executor = Arc::clone(&executor);
                let stopped = stopped.clone();
                thread::spawn(move || {
                    let _ = smol::block_on(executor.run(stopped.recv()));
                })
            })
            .collect();
        Self {
            executor,
            stop: Some(stop),
            threads,
        }
    }
}

impl Drop for SmolPool {
    fn drop(&mut self) {
        drop(self.stop.take());
        for thread in self.threads.drain(..) {
            thread.join().expect("an executor thread panicked");
        }
    }
}

/// [`run_tokio`] on a smol executor ([`Runner::SMOL`] only).
pub fn run_smol(
    pool: &SmolPool,
    runner: Runner,
    consumer: Consumer,
    work: Work,
    items: u64,
) -> u64 {
    let executor = Arc::clone(&pool.executor);
    let consume = async move {
        let source = jobs(work, items);
        match runner {
            Runner::Spawned => {
                drain(
                    source
                        .bounded(HANDOFF_WORKERS, HANDOFF_WORKERS)
                        .spawn_on(executor),
                )
                .await
            }
            Runner::TaskPerItem => {
                drain(
                    source
                        .map(|job| executor.spawn(job))
                        .buffer_unordered(HANDOFF_WORKERS),
                )
                .await
            }
            Runner::JoinSetSemaphore => unreachable!("JoinSet is tokio's"),
        }
    };
    let outputs = match consumer {
        Consumer::BlockOn => smol::block_on(consume),
        Consumer::Task => smol::block_on(pool.executor.spawn(consume)),
    };
    check(outputs, items)
}

// ---------------------------------------------------------------------------
// Scaling: CPU-bound items, spawned against plain OS threads

/// Items of the scaling workload.
pub const SCALING_ITEMS: u64 = 256;
/// Its workers: more than the threads, so no thread idles for want of one.
pub const SCALING_WORKERS: usize = 4;
/// xorshift rounds per item (about 80 µs here): the work dwarfs the per-item
/// cost, so the speed-up shows the parallelism alone.
pub const SCALING_ROUNDS: u32 = 40_000;

/// The scaling workload without any adapter: items dealt round-robin to
/// `threads` plain threads. Returns the items done.
pub fn cpu_on_threads(threads: usize) -> u64 {
    thread::scope(|scope| {
        let handles: Vec<_> = (0..threads as u64)
            .map(|first| {
                scope.spawn(move || {
                    (first..SCALING_ITEMS)
                        .step_by(threads)
                        .map(|seed| {
                            cpu_work(seed, SCALING_ROUNDS);
                            1
                        })
                        .sum::<u64>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a CPU thread does not panic"))
            .sum()
    })
}

/// The scaling workload through `bounded(SCALING_WORKERS,
/// SCALING_WORKERS).spawn_on(runtime)`, consumed in `block_on`. Returns the
/// items done.
pub fn cpu_spawned(runtime: &tokio::runtime::Runtime) -> u64 {
    let handle = runtime.handle().clone();
    let source =
        stream::iter(0..SCALING_ITEMS).map(|seed| async move { cpu_work(seed, SCALING_ROUNDS) });
    runtime.block_on(
        source
            .bounded(SCALING_WORKERS, SCALING_WORKERS)
            .spawn_on(handle)
            .count(),
    ) as u64
}

// ---------------------------------------------------------------------------
// Few items: a huge worker budget

/// The items of the few-items workload.
pub const FEW_ITEMS: u64 = 5;

/// `bounded(workers, 0).spawn_on(runtime)` over `items` ready futures: what a
/// huge worker budget costs when few items come (tasks grow on demand).
pub fn run_few_items(runtime: &tokio::runtime::Runtime, workers: usize, items: u64) -> u64 {
    let handle = runtime.handle().clone();
    let outputs = runtime.block_on(drain(
        jobs(Work::Ready, items)
            .bounded(workers, 0)
            .spawn_on(handle),
    ));
    check(outputs, items)
}
