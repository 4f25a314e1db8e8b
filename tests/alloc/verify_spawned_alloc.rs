//! Allocation bound for the spawned mode: the shared state's storage (waiting
//! queue, held outputs, the tasks' bookkeeping) and the tasks themselves grow
//! once and are then reused, so draining 20 000 or 100 000 items through the
//! same budgets performs the same number of allocations: none per item; with
//! every per-item opt-in on too (`try_bounded`, `max_wait`, `timed`,
//! `adaptive`: contract points 21, 23, 24, 26). Small
//! budgets, and budgets above 1 024 (where the old design's queue allocated a
//! block per 31 items), unordered and ordered.
//!
//! The stream runs on a small executor of the test's own, on the test's thread,
//! which allocates only when a task is spawned; the counting allocator counts
//! per thread, and only on a thread that turned counting on, so libtest's
//! threads and the other test do not disturb the figures.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use std::time::Duration;

use bounded_buffered::{Aimd, BoundedStreamExt, Spawned, Spawner, Stats};
use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{self, Stream, StreamExt};
use futures_test::task::noop_waker;

use crate::counting::{allocations, counting};

/// Completes with its id after waking itself `yields` times. Allocates nothing.
struct YieldThenReady {
    id: u64,
    yields: u32,
}

impl Future for YieldThenReady {
    type Output = u64;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        if self.yields == 0 {
            return Poll::Ready(self.id);
        }
        self.yields -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

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
struct Executor {
    inbox: Arc<Mutex<Vec<BoxFuture<'static, ()>>>>,
    ready: Arc<Mutex<VecDeque<usize>>>,
    /// Every task taken in, by id; `None` once it completed.
    tasks: Vec<Option<Task>>,
}

impl Executor {
    fn new() -> Self {
        Self {
            inbox: Arc::default(),
            ready: Arc::default(),
            tasks: Vec::new(),
        }
    }

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

    fn spawned(&self) -> usize {
        self.tasks.len()
    }
}

fn source(items: u64) -> impl Stream<Item = YieldThenReady> + Send + 'static {
    stream::iter(0..items).map(|id| YieldThenReady {
        id,
        // 0..=4 yields, in a pattern that is not a multiple of the worker count.
        yields: (id * 7 % 5) as u32,
    })
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

/// Allocations made while building the stream and draining `items` items
/// through it with the given budgets; and the tasks it spawned.
fn allocations_for(
    items: u64,
    workers: usize,
    waiting: usize,
    window: Option<usize>,
    settings: Settings,
) -> (u64, usize) {
    let mut executor = Executor::new();
    counting(true);
    let before = allocations();
    let (sum, count, stats) = match settings {
        Settings::Plain => {
            let stream = source(items).bounded(workers, waiting);
            let stream = match window {
                Some(window) => stream.ordered(window),
                None => stream,
            };
            drain(
                stream.spawn_on(executor.spawner()),
                &mut executor,
                window,
                |id| id,
            )
        }
        Settings::AllOptIns => {
            let fallible = source(items).map(|job| Ok::<_, ()>(job.map(Ok::<u64, ()>)));
            let stream = fallible.try_bounded(workers, waiting);
            let stream = match window {
                Some(window) => stream.ordered(window),
                None => stream,
            };
            let stream = stream
                .max_wait(Duration::from_secs(3600))
                .timed()
                .adaptive(Aimd::new(workers, workers), |_: &Result<u64, ()>| false);
            drain(
                stream.spawn_on(executor.spawner()),
                &mut executor,
                window,
                |outcome| {
                    outcome
                        .expect("no error is made")
                        .expect("nothing waits an hour")
                },
            )
        }
    };
    let after = allocations();
    counting(false);
    assert_eq!(count, items);
    assert_eq!(sum, items * (items - 1) / 2);
    assert!(stats.peak_active <= workers && stats.peak_waiting <= waiting);
    (after - before, executor.spawned())
}

/// The consumer takes everything it can, then the tasks get a turn, until the
/// stream ends; returns the sum and count of the ids `id` reads off the
/// outputs, and the final stats.
fn drain<T>(
    mut stream: Spawned<T>,
    executor: &mut Executor,
    window: Option<usize>,
    id: impl Fn(T) -> u64,
) -> (u64, u64, Stats) {
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let (mut sum, mut count, mut next) = (0u64, 0u64, 0u64);
    'run: loop {
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
                Poll::Ready(None) => break 'run,
                Poll::Pending => break,
            }
        }
        executor.run_once();
    }
    (sum, count, stream.stats())
}

fn check(workers: usize, waiting: usize, window: Option<usize>) {
    for settings in [Settings::Plain, Settings::AllOptIns] {
        check_with(workers, waiting, window, settings);
    }
}

fn check_with(workers: usize, waiting: usize, window: Option<usize>, settings: Settings) {
    let (small, small_tasks) = allocations_for(20_000, workers, waiting, window, settings);
    let (large, large_tasks) = allocations_for(100_000, workers, waiting, window, settings);
    println!(
        "bounded({workers}, {waiting}), window {window:?}, {settings:?}: {small} allocations \
         ({small_tasks} tasks) for 20 000 items, {large} ({large_tasks} tasks) for 100 000"
    );
    assert!(large_tasks <= workers, "more tasks than workers");
    assert_eq!(
        small, large,
        "bounded({workers}, {waiting}), window {window:?}, {settings:?}: allocations grow with the items"
    );
    assert!(
        small > 0,
        "the counting allocator saw nothing: the test would prove nothing"
    );
}

#[test]
fn small_budgets_allocate_nothing_per_item() {
    check(4, 8, None);
    check(4, 8, Some(16));
}

#[test]
fn budgets_above_1024_allocate_nothing_per_item() {
    // Many tasks, and a deep waiting queue.
    check(2048, 2048, None);
    check(2048, 4096, Some(3000));
    check(8, 4096, None);
}
