//! Contract point 13, the allocation bound, in both modes (17 spawned): the
//! stream's storage (slots, wakers, waiting queue, reorder window, ready list;
//! spawned, the shared state and the tasks themselves) grows to its budgets
//! once and is then reused, so draining 1 000 or 200 000 items (20 000 or
//! 100 000 for large budgets) through the same budgets performs the same number of allocations: none per item; with
//! every per-item opt-in on too (`try_bounded`, `max_wait`, `timed`,
//! `adaptive`: contract points 21, 23, 24, 26). Small budgets, and budgets
//! above 1 024 (where an old design's queue allocated a block per 31 items),
//! unordered and ordered.
//!
//! The counting allocator counts per thread, and only on a thread that turned
//! counting on, so libtest's threads and the other tests do not disturb the
//! figures. Spawned, the stream runs on a small executor of the test's own,
//! on the test's thread, which allocates only when a task is spawned.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use bounded_buffered::{Aimd, BoundedStreamExt, Spawner, Stats};
use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{self, Stream, StreamExt};
use futures_test::task::noop_waker;
use support::{Mode, Observe, OrderedIf, both_modes, yield_then};

use crate::counting::{allocations, counting};

/// A task's waker: lists the task as ready, once.
struct TaskWake {
    id: usize,
    listed: AtomicBool,
    ready: Arc<Mutex<VecDeque<usize>>>,
}

impl Wake for TaskWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.listed.swap(true, Relaxed) {
            self.ready.lock().unwrap().push_back(self.id);
        }
    }
}

/// A task with its waker.
type Task = (BoxFuture<'static, ()>, Waker, Arc<TaskWake>);

/// Polls ready tasks first in, first out. Allocates when a task is spawned
/// (its waker, and room in its lists), never when one is woken.
#[derive(Default)]
struct Executor {
    inbox: Arc<Mutex<Vec<BoxFuture<'static, ()>>>>,
    ready: Arc<Mutex<VecDeque<usize>>>,
    /// Every task taken in, by id; `None` once it completed.
    tasks: Vec<Option<Task>>,
}

impl Executor {
    fn spawner(&self) -> impl Spawner + use<> {
        let inbox = Arc::clone(&self.inbox);
        move |task: BoxFuture<'static, ()>| inbox.lock().unwrap().push(task)
    }

    /// Takes in the tasks spawned since; returns their ids.
    fn take_in(&mut self) -> Vec<usize> {
        let spawned: Vec<_> = self.inbox.lock().unwrap().drain(..).collect();
        let mut ids = Vec::new();
        for task in spawned {
            let wake = Arc::new(TaskWake {
                id: self.tasks.len(),
                listed: AtomicBool::new(false),
                ready: Arc::clone(&self.ready),
            });
            ids.push(wake.id);
            self.tasks
                .push(Some((task, Waker::from(Arc::clone(&wake)), wake)));
        }
        ids
    }

    fn poll(&mut self, id: usize) {
        if let Some((task, waker, wake)) = &mut self.tasks[id] {
            wake.listed.store(false, Relaxed);
            if task
                .as_mut()
                .poll(&mut Context::from_waker(waker))
                .is_ready()
            {
                self.tasks[id] = None;
            }
        }
    }

    /// Polls every task that is ready now, once each; a task spawned meanwhile
    /// is polled at once, so tasks that grow on demand reach their number in
    /// one round.
    fn run_once(&mut self) {
        let mut fresh = self.take_in();
        let listed = self.ready.lock().unwrap().len();
        for _ in 0..listed {
            let Some(id) = self.ready.lock().unwrap().pop_front() else {
                break;
            };
            self.poll(id);
            fresh.extend(self.take_in());
            while let Some(id) = fresh.pop() {
                self.poll(id);
                fresh.extend(self.take_in());
            }
        }
        while let Some(id) = fresh.pop() {
            self.poll(id);
            fresh.extend(self.take_in());
        }
    }
}

/// Items that complete with their id after waking themselves 0..=4 times, in
/// a pattern that is not a multiple of the worker count: they finish out of
/// input order, slots are woken and reused, and ordered outputs are held.
/// `yield_then` allocates nothing.
fn source(
    items: u64,
) -> impl Stream<Item = impl Future<Output = u64> + Send + Unpin> + Send + Unpin {
    stream::iter(0..items).map(|id| yield_then((id * 7 % 5) as usize, id))
}

/// What the stream is built with besides its budgets.
#[derive(Clone, Copy, Debug)]
enum Settings {
    /// `bounded`.
    Plain,
    /// `try_bounded` with `max_wait` (an hour: nothing expires), `timed` and
    /// an adaptive controller that keeps the limit where it is: every
    /// per-item path of the opt-ins runs, and none may allocate per item.
    AllOptIns,
}

/// Drains `$stream` in `$mode` (spawned on `$executor`): the sum and count of
/// the ids `$id` reads off the outputs, and the final stats.
macro_rules! drained {
    ($mode:expr, $stream:expr, $executor:expr, $window:expr, $id:expr) => {
        match $mode {
            Mode::InPlace => drain($stream, None, $window, $id),
            Mode::Spawned => {
                let spawner = $executor.spawner();
                drain($stream.spawn_on(spawner), Some($executor), $window, $id)
            }
        }
    };
}

/// Allocations made while building the stream and draining `items` items
/// through it with the given budgets; and the tasks it spawned.
fn allocations_for(
    mode: Mode,
    items: u64,
    (workers, waiting, window): (usize, usize, Option<usize>),
    settings: Settings,
) -> (u64, usize) {
    let mut executor = Executor::default();
    counting(true);
    let before = allocations();
    let (sum, count, stats) = match settings {
        Settings::Plain => {
            let stream = source(items).bounded(workers, waiting).ordered_if(window);
            drained!(mode, stream, &mut executor, window, |id| id)
        }
        Settings::AllOptIns => {
            let fallible = source(items).map(|job| Ok::<_, ()>(job.map(Ok::<u64, ()>)));
            let stream = fallible
                .try_bounded(workers, waiting)
                .ordered_if(window)
                .max_wait(Duration::from_secs(3600))
                .timed()
                .adaptive(Aimd::new(workers, workers), |_: &Result<u64, ()>| false);
            let id = |outcome: Result<Result<u64, _>, ()>| {
                let outcome = outcome.expect("no error is made");
                outcome.expect("nothing waits an hour")
            };
            drained!(mode, stream, &mut executor, window, id)
        }
    };
    let after = allocations();
    counting(false);
    assert_eq!(count, items);
    assert_eq!(sum, items * (items - 1) / 2);
    assert!(stats.peak_active <= workers && stats.peak_waiting <= waiting);
    (after - before, executor.tasks.len())
}

/// The consumer takes everything it can (in place, the futures wake
/// themselves), then spawned the tasks get a turn, until the stream ends;
/// returns the sum and count of the ids `id` reads off the outputs, and the
/// final stats. Polls with a waker that does not allocate.
fn drain<T, S: Observe<T> + Unpin>(
    mut stream: S,
    mut executor: Option<&mut Executor>,
    window: Option<usize>,
    id: impl Fn(T) -> u64,
) -> (u64, u64, Stats) {
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let (mut sum, mut count, mut next) = (0u64, 0u64, 0u64);
    loop {
        match stream.poll_next_unpin(&mut cx) {
            Poll::Ready(Some(output)) => {
                let id = id(output);
                if window.is_some() {
                    assert_eq!(id, next, "ordered output out of order");
                    next += 1;
                }
                sum += id;
                count += 1;
            }
            Poll::Ready(None) => break,
            Poll::Pending => {
                if let Some(executor) = executor.as_deref_mut() {
                    executor.run_once();
                }
            }
        }
    }
    (sum, count, stream.stats())
}

/// The allocations for `small` and `large` items are the same (`small`
/// is enough items to grow the storage to the budgets).
fn check(mode: Mode, budgets: (usize, usize, Option<usize>), (small, large): (u64, u64)) {
    for settings in [Settings::Plain, Settings::AllOptIns] {
        let (fewer, fewer_tasks) = allocations_for(mode, small, budgets, settings);
        let (more, more_tasks) = allocations_for(mode, large, budgets, settings);
        let context = format!("{mode:?} {budgets:?} {settings:?}");
        println!(
            "{context}: {fewer} allocations ({fewer_tasks} tasks) for {small} items, {more} \
             ({more_tasks} tasks) for {large}"
        );
        assert!(more_tasks <= budgets.0, "more tasks than workers");
        assert_eq!(fewer, more, "{context}: allocations grow with the items");
        assert!(
            fewer > 0,
            "the counting allocator saw nothing: the test would prove nothing"
        );
    }
}

both_modes! {
    fn small_budgets_allocate_nothing_per_item(mode) {
        for window in [None, Some(4), Some(16)] {
            check(mode, (4, 8, window), (1_000, 200_000));
        }
    }

    fn budgets_above_1024_allocate_nothing_per_item(mode) {
        // Many workers (spawned, many tasks), and a deep waiting queue.
        for budgets in [(2048, 2048, None), (2048, 4096, Some(3000)), (8, 4096, None)] {
            check(mode, budgets, (20_000, 100_000));
        }
    }
}
