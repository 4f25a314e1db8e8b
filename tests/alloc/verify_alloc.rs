//! Contract point 13, the allocation bound, in both modes (17 spawned): the
//! stream's storage (slots, wakers, waiting queue, reorder window, ready list;
//! spawned, the shared state and the tasks themselves) grows to its budgets
//! once and is then reused, so draining 1 000 or 20 000 items (20 000 or
//! 50 000 for large budgets) through the same budgets performs the same
//! number of allocations: none per item; with
//! every per-item opt-in on too (`try_bounded`, `max_wait`, `timed`,
//! `adaptive`: contract points 21, 23, 24, 26), and with the time budgets
//! (items' own deadlines, a timer, a rate that binds and a run deadline:
//! points 31 to 34). Small budgets, and budgets
//! above 1 024 (where an old design's queue allocated a block per 31 items),
//! unordered and ordered.
//!
//! The opt-ins run on clocks of the test's own, one steady and one jittery,
//! and must allocate as often on both: nothing may allocate by how run times
//! fall. (On the real clock, `Aimd` once grew its storage by the run times it
//! saw, and this test failed now and then on a loaded machine; the jittery
//! clock shows that every time.)
//!
//! The counting allocator counts per thread, and only on a thread that turned
//! counting on, so libtest's threads and the other tests do not disturb the
//! figures. Spawned, the stream runs on the step-by-step executor
//! (`support::drive!`), on the test's thread, which allocates only when a
//! task is spawned.
//!
//! `BB_ALLOC_ITEMS` sets the larger count of both comparisons (the defaults
//! keep the debug `cargo test` quick; `.ci/run` also runs this crate in
//! release with 200 000). A per-item allocation, or storage that keeps
//! growing, shows at either count: the smaller count already fills every
//! budget, and the default larger one is 20 or 2.5 times it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

use bounded_buffered::{Aimd, BoundedStreamExt, Deadline, Stats, Tenants};
use futures::FutureExt;
use futures::stream::{self, Stream, StreamExt};
use support::{Driven, Mode, OrderedIf, both_modes, drive, yield_then};

use crate::counting::{allocations, counting};

/// Items that complete with their id after waking themselves 0..=4 times, in
/// a pattern that is not a multiple of the worker count: they finish out of
/// input order, slots are woken and reused, and ordered outputs are held.
/// `yield_then` allocates nothing.
fn source(
    items: u64,
) -> impl Stream<Item = impl Future<Output = u64> + Send + Unpin> + Send + Unpin {
    stream::iter(0..items).map(|id| yield_then((id * 7 % 5) as usize, id))
}

/// Tenant `t`'s share of [`source`]'s items: the ids `t`, `t + 3`, ...
fn tenant_source(
    items: u64,
    t: u64,
) -> impl Stream<Item = impl Future<Output = u64> + Send + Unpin> + Send + Unpin {
    stream::iter((t..items).step_by(3)).map(|id| yield_then((id * 7 % 5) as usize, id))
}

/// What the stream is built with besides its budgets.
#[derive(Clone, Copy, Debug)]
enum Settings {
    /// `bounded`.
    Plain,
    /// `try_bounded` with `max_wait` (a day: nothing expires), `timed` and
    /// an adaptive controller that keeps the limit where it is: every
    /// per-item path of the opt-ins runs, and none may allocate per item. On
    /// a clock of its own, read by the stream alone: a steady one, ticking a
    /// microsecond per reading, or a jittery one, ticking up to 2 ms in a
    /// seeded pseudo-random pattern. The same count on both, at every item
    /// count, says nothing allocates by how run times fall (a controller's
    /// storage); and no run can pass or fail by chance.
    AllOptIns { jittery: bool },
    /// `bounded` with the time budgets (contract points 31 to 34): items'
    /// own deadlines, a timer on a ticking clock, a start rate that binds
    /// (a start every 5 µs of a clock that ticks 1 µs a reading, bursts of
    /// 4) and a run deadline a day away. The timer's sleep is armed and
    /// re-armed, and the rate waits, item after item.
    TimeBudgets,
    /// [`Tenants`]: the items dealt to three tenants (weights 1, 2, 3) by
    /// their id, with a cap of 2 and a waiting budget per tenant: the
    /// fair-share rule's per-item paths (tags, ranks, counts, the source's
    /// round robin and the engine's hook) allocate nothing per item.
    Tenants,
}

/// A timer on the steady ticking clock: a sleep is ready once the clock
/// reached its instant, and wakes its task at once otherwise (the clock
/// moves only as it is read), unless its instant is more than a second
/// away (the run's deadline, a day off): that one never fires here.
#[derive(Clone)]
struct TickingTimer(std::sync::Arc<dyn Fn() -> Instant + Send + Sync>);

struct TickingSleep {
    now: std::sync::Arc<dyn Fn() -> Instant + Send + Sync>,
    at: Instant,
}

impl Future for TickingSleep {
    type Output = ();

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        let now = (self.now)();
        if now >= self.at {
            return Poll::Ready(());
        }
        if self.at - now < Duration::from_secs(1) {
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

impl bounded_buffered::Timer for TickingTimer {
    type Sleep = TickingSleep;

    fn now(&self) -> Instant {
        (self.0)()
    }

    fn sleep_until(&self, at: Instant) -> TickingSleep {
        TickingSleep {
            now: std::sync::Arc::clone(&self.0),
            at,
        }
    }
}

/// Allocations made while building the stream and draining `items` items
/// through it with the given budgets; and the tasks it spawned.
fn allocations_for(
    mode: Mode,
    items: u64,
    (workers, waiting, window): (usize, usize, Option<usize>),
    settings: Settings,
) -> (u64, usize) {
    counting(true);
    let before = allocations();
    let (sum, count, stats, tasks) = match settings {
        Settings::Plain => {
            let stream = source(items).bounded(workers, waiting).ordered_if(window);
            drain(drive!(mode, stream), window, |id| id)
        }
        Settings::AllOptIns { jittery } => {
            let fallible = source(items).map(|job| Ok::<_, ()>(job.map(Ok::<u64, ()>)));
            let stream = fallible
                .try_bounded(workers, waiting)
                .ordered_if(window)
                .max_wait(Duration::from_secs(86_400))
                .timed()
                .clock(ticking(jittery))
                .adaptive(Aimd::new(workers, workers), |_: &Result<u64, ()>| false);
            let id = |outcome: Result<Result<u64, _>, ()>| {
                let outcome = outcome.expect("no error is made");
                outcome.expect("nothing waits a day")
            };
            drain(drive!(mode, stream), window, id)
        }
        Settings::Tenants => {
            let tenants = (0..3u64).fold(Tenants::new(), |tenants, t| {
                tenants.with(t, t as u32 + 1, tenant_source(items, t))
            });
            // A third of the waiting places each: as many in all as the
            // other settings have (a pick looks at every waiting item).
            let stream = tenants
                .cap(2)
                .bounded(workers, waiting.div_ceil(3))
                .ordered_if(window);
            // Ordered, outputs come in pull order, which is not id order.
            drain(drive!(mode, stream), None, |id| id)
        }
        Settings::TimeBudgets => {
            let timer = TickingTimer(std::sync::Arc::new(ticking(false)));
            let far = Instant::now() + Duration::from_secs(86_400);
            let stream = source(items)
                .map(move |job| Deadline::new(far, job))
                .bounded(workers, waiting)
                .ordered_if(window)
                .item_deadlines()
                .timer(timer)
                .rate(1, Duration::from_micros(5))
                .burst(4)
                .deadline(far);
            let id = |outcome: Result<u64, _>| outcome.expect("nothing is late");
            drain(drive!(mode, stream), window, id)
        }
    };
    let after = allocations();
    counting(false);
    assert_eq!(count, items);
    assert_eq!(sum, items * (items - 1) / 2);
    // Items' own deadlines keep one waiting place, as keys do; tenants one
    // each, three in all.
    let places = if let Settings::Tenants = settings {
        3
    } else {
        1
    };
    assert!(stats.peak_active <= workers && stats.peak_waiting <= waiting.max(1) * places);
    (after - before, tasks)
}

/// A clock that moves each time it is read: by a microsecond, or if
/// `jittery` by 0 to 2 ms in a seeded pseudo-random pattern. The same
/// readings on every run of the same schedule.
fn ticking(jittery: bool) -> impl Fn() -> Instant + Send + Sync + 'static {
    let start = Instant::now();
    let (reads, micros) = (AtomicU64::new(0), AtomicU64::new(0));
    move || {
        let read = reads.fetch_add(1, Ordering::Relaxed);
        let step = if jittery {
            // A multiplicative hash of the reading's number.
            read.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 53
        } else {
            1
        };
        start + Duration::from_micros(micros.fetch_add(step, Ordering::Relaxed) + step)
    }
}

/// Takes every output as an executor would (in place, the futures wake
/// themselves; spawned, the tasks run on a `StepExecutor` on this thread,
/// which allocates only when a task is spawned): the sum and count of the
/// ids `id` reads off the outputs, the final stats, and the tasks spawned.
fn drain<T>(
    mut run: Driven<'_, T>,
    window: Option<usize>,
    id: impl Fn(T) -> u64,
) -> (u64, u64, Stats, usize) {
    let (mut sum, mut count, mut next) = (0u64, 0u64, 0u64);
    while let Poll::Ready(Some(output)) = run.poll_woken() {
        let id = id(output);
        if window.is_some() {
            assert_eq!(id, next, "ordered output out of order");
            next += 1;
        }
        sum += id;
        count += 1;
    }
    assert!(run.is_terminated(), "parked before the end");
    let tasks = if run.mode().is_spawned() {
        run.spawns()
    } else {
        0
    };
    (sum, count, run.stats(), tasks)
}

/// `BB_ALLOC_ITEMS`, or `default`: the larger item count of a comparison.
fn large(default: u64) -> u64 {
    std::env::var("BB_ALLOC_ITEMS")
        .ok()
        .and_then(|items| items.parse().ok())
        .unwrap_or(default)
}

/// The allocations for `small` and `large` items are the same (`small`
/// is enough items to grow the storage to the budgets).
fn check(mode: Mode, budgets: (usize, usize, Option<usize>), (small, large): (u64, u64)) {
    assert!(
        large > small,
        "{large} items cannot show growth beyond {small} (BB_ALLOC_ITEMS too low)"
    );
    let mut opt_ins = None;
    let all = [
        Settings::Plain,
        Settings::AllOptIns { jittery: false },
        Settings::AllOptIns { jittery: true },
        Settings::TimeBudgets,
        Settings::Tenants,
    ];
    for settings in all {
        let (fewer, fewer_tasks) = allocations_for(mode, small, budgets, settings);
        let (more, more_tasks) = allocations_for(mode, large, budgets, settings);
        let context = format!("{mode:?} {budgets:?} {settings:?}");
        println!(
            "{context}: {fewer} allocations ({fewer_tasks} tasks) for {small} items, {more} \
             ({more_tasks} tasks) for {large}"
        );
        assert!(more_tasks <= budgets.0, "more tasks than workers");
        assert_eq!(fewer, more, "{context}: allocations grow with the items");
        if let Settings::AllOptIns { .. } = settings {
            let steady = *opt_ins.get_or_insert(fewer);
            assert_eq!(
                fewer, steady,
                "{context}: allocations depend on how run times fall"
            );
        }
        assert!(
            fewer > 0,
            "the counting allocator saw nothing: the test would prove nothing"
        );
    }
}

both_modes! {
    fn small_budgets_allocate_nothing_per_item(mode) {
        for window in [None, Some(4), Some(16)] {
            check(mode, (4, 8, window), (1_000, large(20_000)));
        }
    }

    fn budgets_above_1024_allocate_nothing_per_item(mode) {
        // Many workers (spawned, many tasks), and a deep waiting queue.
        for budgets in [(2048, 2048, None), (2048, 4096, Some(3000)), (8, 4096, None)] {
            check(mode, budgets, (20_000, large(50_000)));
        }
    }
}
