//! Workloads and adapters shared by the criterion benches and by the tools in
//! `tools/compare` (the comparison and the profiling harness), so that all of
//! them measure exactly the same code. Each binary includes this file as a
//! module of its own (`#[path]`) and so compiles the workloads into its own
//! crate, as the benches always have, rather than calling into a library
//! compiled apart (where less of them could be inlined).
//!
//! Every workload is a stream of futures whose outputs are the input positions
//! `0..n`; [`run`] drains it through one [`Adapter`] and checks that every output
//! came back exactly once (and in input order for the ordered adapters), so a
//! benchmark cannot report a fast time for a wrong answer.

// Each bench target includes this module for the part it measures.
#![allow(dead_code)]

pub mod spawned;

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bounded_buffered::{BoundedStreamExt, Stats};
use futures::{Stream, StreamExt, stream};
use futures_buffered::BufferedStreamExt;

/// The worker counts of the overhead workload.
pub const OVERHEAD_WORKERS: [usize; 4] = [1, 16, 256, 4096];

/// One way to run a stream of futures. Unordered adapters first, then ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adapter {
    /// `.then(|f| f)`: one future at a time, the floor any adapter adds cost to.
    Sequential,
    /// `.bounded(workers, waiting)`.
    Bounded { workers: usize, waiting: usize },
    /// `.bounded(workers, waiting).ordered(window)`.
    Ordered {
        workers: usize,
        waiting: usize,
        window: usize,
    },
    /// futures' `buffer_unordered(n)`.
    BufferUnordered(usize),
    /// futures' `buffered(n)`.
    Buffered(usize),
    /// futures-buffered's `buffered_unordered(n)`.
    FbUnordered(usize),
    /// futures-buffered's `buffered_ordered(n)`.
    FbOrdered(usize),
    /// `.bounded(workers, waiting)` with the opt-in that costs per item: a
    /// clock for timings, `max_wait`, or an adaptive controller.
    Clocked {
        workers: usize,
        waiting: usize,
        with: Clocking,
    },
}

/// What a [`Adapter::Clocked`] stream reads the clock for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clocking {
    /// `.timed()`.
    Timed,
    /// `.max_wait(1 s)`: no item expires, each pays the check.
    MaxWait,
    /// `.adaptive(Aimd::new(workers, workers), ..)`: the controller hears every
    /// completion; its bounds keep the limit at `workers`.
    Adaptive,
}

impl Adapter {
    /// The concurrent adapters of the overhead workload at `w` workers:
    /// `bounded` with a waiting budget of `w` (prefetch on, as a user would
    /// write it) and of 0 (the like-for-like match for `buffer_unordered`, which
    /// never pulls ahead), the ordered adapters with a window of `w`, and the peers.
    pub fn overhead_set(w: usize) -> [Adapter; 7] {
        [
            Adapter::Bounded {
                workers: w,
                waiting: w,
            },
            Adapter::Bounded {
                workers: w,
                waiting: 0,
            },
            Adapter::Ordered {
                workers: w,
                waiting: w,
                window: w,
            },
            Adapter::BufferUnordered(w),
            Adapter::Buffered(w),
            Adapter::FbUnordered(w),
            Adapter::FbOrdered(w),
        ]
    }

    /// `bounded` with each per-item opt-in, at `w` workers and a waiting budget
    /// of `w`: what `drain_once` can count besides the overhead set.
    pub fn opt_in_set(w: usize) -> [Adapter; 3] {
        [Clocking::Timed, Clocking::MaxWait, Clocking::Adaptive].map(|with| Adapter::Clocked {
            workers: w,
            waiting: w,
            with,
        })
    }

    /// The adapter without its budgets: what the benches' ids, the
    /// comparison's columns and the profiling harness are keyed by.
    pub fn family(&self) -> Family {
        match self {
            Adapter::Sequential => Family::Sequential,
            Adapter::Bounded { waiting: 0, .. } => Family::BoundedNoPrefetch,
            Adapter::Bounded { .. } => Family::Bounded,
            Adapter::Ordered { .. } => Family::BoundedOrdered,
            Adapter::BufferUnordered(_) => Family::BufferUnordered,
            Adapter::Buffered(_) => Family::Buffered,
            Adapter::FbUnordered(_) => Family::FbUnordered,
            Adapter::FbOrdered(_) => Family::FbOrdered,
            Adapter::Clocked { with, .. } => match with {
                Clocking::Timed => Family::BoundedTimed,
                Clocking::MaxWait => Family::BoundedMaxWait,
                Clocking::Adaptive => Family::BoundedAdaptive,
            },
        }
    }

    /// The budgets, for criterion ids (no spaces or parentheses).
    pub fn parameters(&self) -> String {
        match *self {
            Adapter::Sequential => "sequential".to_owned(),
            Adapter::Bounded { workers, waiting }
            | Adapter::Clocked {
                workers, waiting, ..
            } => {
                format!("w={workers},q={waiting}")
            }
            Adapter::Ordered {
                workers,
                waiting,
                window,
            } => format!("w={workers},q={waiting},r={window}"),
            Adapter::BufferUnordered(n)
            | Adapter::Buffered(n)
            | Adapter::FbUnordered(n)
            | Adapter::FbOrdered(n) => format!("w={n}"),
        }
    }

    /// The call as a user would write it.
    pub fn label(&self) -> String {
        match *self {
            Adapter::Sequential => "then(|f| f)".to_owned(),
            Adapter::Bounded { workers, waiting } => format!("bounded({workers}, {waiting})"),
            Adapter::Ordered {
                workers,
                waiting,
                window,
            } => format!("bounded({workers}, {waiting}).ordered({window})"),
            Adapter::BufferUnordered(n) => format!("buffer_unordered({n})"),
            Adapter::Buffered(n) => format!("buffered({n})"),
            Adapter::FbUnordered(n) => format!("fb::buffered_unordered({n})"),
            Adapter::FbOrdered(n) => format!("fb::buffered_ordered({n})"),
            Adapter::Clocked {
                workers,
                waiting,
                with,
            } => match with {
                Clocking::Timed => format!("bounded({workers}, {waiting}).timed()"),
                Clocking::MaxWait => format!("bounded({workers}, {waiting}).max_wait(1 s)"),
                Clocking::Adaptive => {
                    format!(
                        "bounded({workers}, {waiting}).adaptive(Aimd::new({workers}, {workers}))"
                    )
                }
            },
        }
    }

    pub fn is_ordered(&self) -> bool {
        matches!(
            self,
            Adapter::Sequential
                | Adapter::Ordered { .. }
                | Adapter::Buffered(_)
                | Adapter::FbOrdered(_)
        )
    }
}

/// An [`Adapter`] without its budgets. Results are looked up by this key, not by
/// name, so that a mistyped key fails to compile instead of finding nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Sequential,
    /// `bounded(w, q)` with `q > 0`.
    Bounded,
    /// `bounded(w, 0)`.
    BoundedNoPrefetch,
    BoundedOrdered,
    BufferUnordered,
    Buffered,
    FbUnordered,
    FbOrdered,
    BoundedTimed,
    BoundedMaxWait,
    BoundedAdaptive,
}

impl Family {
    /// Every family, in the order of the overhead workload's columns.
    pub const ALL: [Family; 11] = [
        Family::Sequential,
        Family::Bounded,
        Family::BoundedNoPrefetch,
        Family::BoundedOrdered,
        Family::BufferUnordered,
        Family::Buffered,
        Family::FbUnordered,
        Family::FbOrdered,
        Family::BoundedTimed,
        Family::BoundedMaxWait,
        Family::BoundedAdaptive,
    ];

    /// A short name that does not mention the budgets: criterion ids, and the
    /// names `tools/compare`'s `drain_once` accepts.
    pub fn name(self) -> &'static str {
        match self {
            Family::Sequential => "then",
            Family::Bounded => "bounded",
            Family::BoundedNoPrefetch => "bounded_no_prefetch",
            Family::BoundedOrdered => "bounded_ordered",
            Family::BufferUnordered => "buffer_unordered",
            Family::Buffered => "buffered",
            Family::FbUnordered => "fb_buffered_unordered",
            Family::FbOrdered => "fb_buffered_ordered",
            Family::BoundedTimed => "bounded_timed",
            Family::BoundedMaxWait => "bounded_max_wait",
            Family::BoundedAdaptive => "bounded_adaptive",
        }
    }
}

/// What draining a stream through an adapter produced.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    pub outputs: u64,
    pub sum: u64,
    pub in_input_order: bool,
    /// The adapter's own counters (`bounded` only).
    pub stats: Option<Stats>,
}

impl Outcome {
    /// Panics unless the outputs are exactly `0..n`, each once (their sum and
    /// count; in input order if the adapter promises it).
    #[track_caller]
    pub fn check(&self, adapter: Adapter, n: u64) {
        assert_eq!(
            self.outputs,
            n,
            "{}: wrong number of outputs",
            adapter.label()
        );
        assert_eq!(
            self.sum,
            n * n.saturating_sub(1) / 2,
            "{}: wrong outputs",
            adapter.label()
        );
        assert!(
            self.in_input_order || !adapter.is_ordered(),
            "{}: outputs out of input order",
            adapter.label()
        );
    }
}

async fn drain<S: Stream<Item = u64>>(stream: Pin<&mut S>) -> Outcome {
    let mut stream = stream;
    let (mut outputs, mut sum, mut in_input_order) = (0, 0, true);
    while let Some(value) = stream.next().await {
        in_input_order &= value == outputs;
        outputs += 1;
        sum += value;
    }
    Outcome {
        outputs,
        sum,
        in_input_order,
        stats: None,
    }
}

/// Drains `source` through `adapter`; runs on any executor.
pub async fn run<S>(adapter: Adapter, source: S) -> Outcome
where
    S: Stream,
    S::Item: Future<Output = u64>,
{
    match adapter {
        Adapter::Sequential => drain(pin!(source.then(|future| future))).await,
        Adapter::Bounded { workers, waiting } => {
            let mut stream = pin!(source.bounded(workers, waiting));
            let outcome = drain(stream.as_mut()).await;
            Outcome {
                stats: Some(stream.stats()),
                ..outcome
            }
        }
        Adapter::Ordered {
            workers,
            waiting,
            window,
        } => {
            let mut stream = pin!(source.bounded(workers, waiting).ordered(window));
            let outcome = drain(stream.as_mut()).await;
            Outcome {
                stats: Some(stream.stats()),
                ..outcome
            }
        }
        Adapter::BufferUnordered(n) => drain(pin!(source.buffer_unordered(n))).await,
        Adapter::Buffered(n) => drain(pin!(source.buffered(n))).await,
        Adapter::FbUnordered(n) => {
            drain(pin!(BufferedStreamExt::buffered_unordered(source, n))).await
        }
        Adapter::FbOrdered(n) => drain(pin!(BufferedStreamExt::buffered_ordered(source, n))).await,
        Adapter::Clocked {
            workers,
            waiting,
            with,
        } => {
            let stream = source.bounded(workers, waiting);
            match with {
                Clocking::Timed => drain(pin!(stream.timed())).await,
                Clocking::MaxWait => {
                    let stream = stream.max_wait(Duration::from_secs(1));
                    drain(pin!(stream.map(|output| output.expect("no item expires")))).await
                }
                Clocking::Adaptive => {
                    let aimd = bounded_buffered::Aimd::new(workers, workers);
                    drain(pin!(stream.adaptive(aimd, |_: &u64| false))).await
                }
            }
        }
    }
}

/// A current-thread tokio runtime with timers, as the workloads use.
pub fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime builds")
}

// ---------------------------------------------------------------------------
// Overhead: futures with no work of their own, so what is measured is the
// adapter's bookkeeping per item.

/// A future that returns its input position, either at once or after waking
/// itself and returning `Pending` once (as a future does whose I/O is ready by
/// the time the executor comes back to it).
#[derive(Debug)]
pub struct Job {
    value: u64,
    yield_first: bool,
}

impl Future for Job {
    type Output = u64;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        if self.yield_first {
            self.yield_first = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(self.value)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    Ready,
    YieldOnce,
}

impl JobKind {
    pub const ALL: [JobKind; 2] = [JobKind::Ready, JobKind::YieldOnce];

    pub fn name(self) -> &'static str {
        match self {
            JobKind::Ready => "ready",
            JobKind::YieldOnce => "yield_once",
        }
    }
}

/// `n` futures of one kind, in a stream whose type does not depend on the kind
/// (one instantiation of every adapter serves both).
pub fn jobs(n: u64, kind: JobKind) -> impl Stream<Item = Job> {
    let yield_first = kind == JobKind::YieldOnce;
    stream::iter(0..n).map(move |value| Job { value, yield_first })
}

// ---------------------------------------------------------------------------
// Timer-bound work: each future sleeps, as a request or a query waits on I/O.

async fn tokio_sleep_then(value: u64, delay: Duration) -> u64 {
    tokio::time::sleep(delay).await;
    value
}

async fn smol_sleep_then(value: u64, delay: Duration) -> u64 {
    smol::Timer::after(delay).await;
    value
}

/// `n` futures, the one at position `i` sleeping `delay(i)` on tokio's timer.
pub fn tokio_sleeps(
    n: u64,
    delay: fn(u64) -> Duration,
) -> impl Stream<Item = impl Future<Output = u64>> {
    stream::iter(0..n).map(move |i| tokio_sleep_then(i, delay(i)))
}

/// `n` futures, the one at position `i` sleeping `delay(i)` on smol's timer.
pub fn smol_sleeps(
    n: u64,
    delay: fn(u64) -> Duration,
) -> impl Stream<Item = impl Future<Output = u64>> {
    stream::iter(0..n).map(move |i| smol_sleep_then(i, delay(i)))
}

/// Simulated I/O, the setup futures-buffered publishes: 65,536 futures each
/// sleeping 100 µs, 256 at a time.
pub const IO_FUTURES: u64 = 65_536;
pub const IO_WORKERS: usize = 256;

/// Every simulated I/O future sleeps the same 100 µs.
pub fn io_delay(_: u64) -> Duration {
    Duration::from_micros(100)
}

// ---------------------------------------------------------------------------
// Timed work for the slow-head and slow-source workloads, counted in units of
// one timer sleep of `HANDLER_TIME`. tokio's timer rounds every sleep up to its
// next millisecond tick, so a 50 ms sleep is not 50 times a 1 ms one; 50 sleeps
// of 1 ms are, whatever the rounding. Durations that must be "n times a
// handler" are therefore built from `n` handler sleeps.

pub const HANDLER_TIME: Duration = Duration::from_millis(1);

/// Sleeps `units` times `HANDLER_TIME` on tokio's timer, then returns `value`.
async fn tokio_work(value: u64, units: u32) -> u64 {
    for _ in 0..units {
        tokio::time::sleep(HANDLER_TIME).await;
    }
    value
}

// ---------------------------------------------------------------------------
// Slow head: with ordered output, one item in every `SLOW_EVERY` takes 50 times
// longer than the rest, and it is the first of each run of `SLOW_EVERY`, so a
// window of `SLOW_EVERY` items always has a slow item at its head.

pub const SLOW_HEAD_WORKERS: usize = 16;
pub const SLOW_EVERY: u64 = 16;
pub const SLOW_HEAD_ITEMS: u64 = 256;

fn slow_head_units(i: u64) -> u32 {
    if i % SLOW_EVERY == 0 { 50 } else { 1 }
}

/// `n` handlers in the slow-head pattern.
pub fn slow_head_source(n: u64) -> impl Stream<Item = impl Future<Output = u64>> {
    stream::iter(0..n).map(|i| tokio_work(i, slow_head_units(i)))
}

/// The adapters the slow-head workload compares: `buffered(w)` and its
/// futures-buffered twin against `bounded(w, w).ordered(r)` for r in {w, 4w, 16w}.
pub fn slow_head_set() -> [Adapter; 5] {
    let w = SLOW_HEAD_WORKERS;
    let ordered = |window| Adapter::Ordered {
        workers: w,
        waiting: w,
        window,
    };
    [
        Adapter::Buffered(w),
        Adapter::FbOrdered(w),
        ordered(w),
        ordered(4 * w),
        ordered(16 * w),
    ]
}

// ---------------------------------------------------------------------------
// Slow source: a paginated source (a database cursor, a paged API). Each page
// of `PAGE_LEN` items costs an async fetch as long as the workers take to
// process one page (`PAGE_LEN / workers` handler times), so the source keeps up
// with the workers only if the next page is fetched while the current one is
// being worked on.

pub const SLOW_SOURCE_WORKERS: usize = 16;
pub const PAGE_LEN: u64 = 64;
pub const PAGES: u64 = 16;

/// `pages` pages of `PAGE_LEN` one-unit handlers; fetching a page starts only
/// when the consumer asks for the first item past the current page, as with a
/// cursor.
pub fn paged_source(pages: u64) -> impl Stream<Item = impl Future<Output = u64>> {
    let fetch_units = (PAGE_LEN / SLOW_SOURCE_WORKERS as u64) as u32;
    stream::iter(0..pages)
        .then(move |page| async move {
            tokio_work(page, fetch_units).await;
            stream::iter(page * PAGE_LEN..(page + 1) * PAGE_LEN)
        })
        .flatten()
        .map(|i| tokio_work(i, 1))
}

/// `buffer_unordered(w)` and its futures-buffered twin against `bounded(w, q)`
/// for q in {0, w, 4w}.
pub fn slow_source_set() -> [Adapter; 5] {
    let w = SLOW_SOURCE_WORKERS;
    let bounded = |waiting| Adapter::Bounded {
        workers: w,
        waiting,
    };
    [
        Adapter::BufferUnordered(w),
        Adapter::FbUnordered(w),
        bounded(0),
        bounded(w),
        bounded(4 * w),
    ]
}

// ---------------------------------------------------------------------------
// Memory: the spawn-per-item anti-pattern (every item spawned at once, each
// task waiting for a semaphore permit before it works) against stream adapters
// that only ever hold a budget's worth of items.

pub const MEMORY_WORKERS: usize = 16;
pub const MEMORY_SIZES: [u64; 3] = [10_000, 100_000, 1_000_000];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryCase {
    /// `tokio::spawn` per item, a `Semaphore` of `MEMORY_WORKERS` permits.
    SpawnAllSemaphore,
    /// Items run through one stream adapter.
    Stream(Adapter),
}

impl MemoryCase {
    /// `bounded(w, w)`, the case whose allocations must not grow with N.
    pub const BOUNDED: MemoryCase = MemoryCase::Stream(Adapter::Bounded {
        workers: MEMORY_WORKERS,
        waiting: MEMORY_WORKERS,
    });

    pub fn all() -> [MemoryCase; 4] {
        let w = MEMORY_WORKERS;
        [
            MemoryCase::SpawnAllSemaphore,
            MemoryCase::BOUNDED,
            MemoryCase::Stream(Adapter::BufferUnordered(w)),
            MemoryCase::Stream(Adapter::FbUnordered(w)),
        ]
    }

    /// A short name that does not mention the budgets, for criterion ids.
    pub fn name(&self) -> &'static str {
        match self {
            MemoryCase::SpawnAllSemaphore => "spawn_all_semaphore",
            MemoryCase::Stream(adapter) => adapter.family().name(),
        }
    }

    pub fn label(&self) -> String {
        match self {
            MemoryCase::SpawnAllSemaphore => format!("spawn + Semaphore({MEMORY_WORKERS})"),
            MemoryCase::Stream(adapter) => adapter.label(),
        }
    }

    /// Runs `n` yield-once items on `runtime` and checks the outputs.
    pub fn run(&self, runtime: &tokio::runtime::Runtime, n: u64) {
        match *self {
            MemoryCase::SpawnAllSemaphore => {
                let sum = runtime.block_on(spawn_all_with_semaphore(n, MEMORY_WORKERS));
                assert_eq!(sum, n * (n - 1) / 2, "spawn-all: wrong outputs");
            }
            MemoryCase::Stream(adapter) => {
                runtime
                    .block_on(run(adapter, jobs(n, JobKind::YieldOnce)))
                    .check(adapter, n);
            }
        }
    }
}

/// The pattern a semaphore invites: spawn a task for every item up front, each
/// acquiring a permit before it works, then join them all.
pub async fn spawn_all_with_semaphore(n: u64, workers: usize) -> u64 {
    let permits = Arc::new(tokio::sync::Semaphore::new(workers));
    let tasks: Vec<_> = (0..n)
        .map(|value| {
            let permits = Arc::clone(&permits);
            tokio::spawn(async move {
                let _permit = permits
                    .acquire()
                    .await
                    .expect("the semaphore is never closed");
                Job {
                    value,
                    yield_first: true,
                }
                .await
            })
        })
        .collect();
    let mut sum = 0;
    for task in tasks {
        sum += task.await.expect("a job never panics");
    }
    sum
}

/// A global allocator that counts, across all threads, the allocations made and
/// the bytes live, on top of the system allocator. A binary opts in with
/// `#[global_allocator] static ALLOCATOR: CountingAllocator = CountingAllocator;`.
pub struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// Bytes allocated minus bytes freed since counting began: negative when `f`
/// frees more older blocks than it allocates.
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
static PEAK_LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
/// Counting is on only inside [`count_allocations`], so that timings taken
/// elsewhere in the same binary do not charge the counters' atomic operations
/// to the implementations that allocate per item.
static COUNTING: AtomicBool = AtomicBool::new(false);

fn allocated(size: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        let size = size as isize;
        let live = LIVE_BYTES.fetch_add(size, Ordering::Relaxed) + size;
        PEAK_LIVE_BYTES.fetch_max(live, Ordering::Relaxed);
    }
}

fn freed(size: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        LIVE_BYTES.fetch_sub(size as isize, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System` upholds the `GlobalAlloc` contract; the counters only
// observe sizes and never touch the memory.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received; the caller upholds `alloc`'s contract.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            allocated(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            allocated(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        freed(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as received; the caller upholds `realloc`'s contract.
        let new_ptr = unsafe { System.realloc(ptr, layout, new_size) };
        if !new_ptr.is_null() {
            // A move to a new block counts as one allocation, as a `Vec` growing does.
            freed(layout.size());
            allocated(new_size);
        }
        new_ptr
    }
}

/// What one measured closure allocated.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllocationReport {
    /// Calls to `alloc`, `alloc_zeroed` and `realloc`.
    pub allocations: u64,
    /// The most bytes live at once above what was live when measuring began.
    pub peak_bytes: usize,
}

/// Runs `f` and reports its allocations. Panics if this binary does not use
/// [`CountingAllocator`], rather than reporting zeros. Run measurements one at a
/// time: the counters are global.
///
/// The peak is of the bytes live above the level when `f` began.
pub fn count_allocations(f: impl FnOnce()) -> AllocationReport {
    ALLOCATIONS.store(0, Ordering::SeqCst);
    LIVE_BYTES.store(0, Ordering::SeqCst);
    PEAK_LIVE_BYTES.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    drop(std::hint::black_box(Box::new(0u64)));
    assert!(
        ALLOCATIONS.load(Ordering::SeqCst) > 0,
        "count_allocations needs `#[global_allocator] static _: CountingAllocator`"
    );
    ALLOCATIONS.store(0, Ordering::SeqCst);
    PEAK_LIVE_BYTES.store(0, Ordering::SeqCst);
    f();
    COUNTING.store(false, Ordering::SeqCst);
    AllocationReport {
        allocations: ALLOCATIONS.load(Ordering::SeqCst),
        peak_bytes: PEAK_LIVE_BYTES.load(Ordering::SeqCst).max(0) as usize,
    }
}

/// The criterion settings every group starts from: 10 samples and short
/// windows, so that the whole `cargo bench` stays within minutes on 2 cores.
/// The comparisons are between medians of the same run, which these settings
/// keep stable to a few percent on a quiet machine.
pub fn criterion_config() -> criterion::Criterion {
    criterion::Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .nresamples(10_000)
}

/// Runs `one_run` once (its own check and a warm-up) and sizes `group`'s next
/// benchmark from its time: 10 samples of equal iteration counts filling about
/// twelve runs or half a second, whichever is longer. Iterations range from
/// milliseconds to seconds here, and a fixed measurement time would either
/// warn and overrun or spend far too long on the fast ones.
pub fn size_from_one_run<M: criterion::measurement::Measurement>(
    group: &mut criterion::BenchmarkGroup<'_, M>,
    one_run: impl FnOnce(),
) {
    let start = std::time::Instant::now();
    one_run();
    let elapsed = start.elapsed();
    group.sampling_mode(criterion::SamplingMode::Flat);
    group.measurement_time((elapsed * 12).max(Duration::from_millis(500)));
}
