//! Model-checks the spawned mode's hand-offs with loom, through the public API.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom_spawned`
//! (see `.ci/loom.sh`). Under `--cfg loom` the spawned mode's mutex, flags and
//! task wakers are loom's, and each worker task runs on its own loom thread
//! (`loom::future::block_on`), so loom explores every interleaving of the
//! consumer, the tasks and the test's threads, up to the preemption bound.
//!
//! The consumer (the model's main thread) polls by hand and, on `Pending`,
//! blocks until its waker fires: a lost wake leaves every thread blocked, which
//! loom reports as a deadlock. At the end the consumer joins every task the
//! stream spawned: a task that is never told to stop (a lost cancellation
//! wake) is a deadlock too. This file is its own test binary because a loom
//! failure aborts the whole binary.
#![cfg(loom)]

use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::task::{Context, Poll, Waker};

use bounded_buffered::{BoundedStreamExt, Keyed, Shed, Spawned, Tenants};
use futures::future::BoxFuture;
use futures::stream::{self, Stream, StreamExt};
use loom::sync::{Mutex, Notify};
use loom::thread::{self, JoinHandle};

#[path = "../loom/model.rs"]
mod model;

use model::{drain, model, model_at_most, next};

/// An executor made of loom threads: each spawned task runs on a thread of its
/// own until it completes. Keeps the threads' handles so the model can join them.
#[derive(Clone, Default)]
struct Threads(Arc<std::sync::Mutex<Vec<JoinHandle<()>>>>);

impl Threads {
    fn spawner(&self) -> impl Fn(BoxFuture<'static, ()>) + Send + 'static {
        let threads = self.clone();
        move |task| {
            let thread = thread::spawn(move || loom::future::block_on(task));
            threads.0.lock().unwrap().push(thread);
        }
    }

    /// Joins every task spawned so far, and any they spawn meanwhile; returns
    /// how many there were.
    fn join_all(&self) -> usize {
        let mut joined = 0;
        loop {
            let next = self.0.lock().unwrap().pop();
            let Some(thread) = next else {
                return joined;
            };
            thread.join().unwrap();
            joined += 1;
        }
    }
}

/// A future that wakes itself and returns `Pending` once, then its id: the
/// worker task goes back through the executor between two polls.
struct YieldOnce {
    id: usize,
    yielded: bool,
}

impl Future for YieldOnce {
    type Output = usize;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        if self.yielded {
            return Poll::Ready(self.id);
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn yielding(items: usize) -> impl Stream<Item = YieldOnce> + Send + 'static {
    stream::iter(0..items).map(|id| YieldOnce { id, yielded: false })
}

/// Claim, pull and hand-out: two workers pull three items from the source
/// themselves (one pulled ahead), run them, and hand them to the consumer,
/// which takes them while the second task is being sent for. Every output
/// arrives once, no wake is lost, and no more than two tasks are spawned.
#[test]
fn claim_pull_and_hand_out_lose_no_wake() {
    model("claim, pull, hand out", || {
        let threads = Threads::default();
        let stream = stream::iter(0..3usize)
            .map(|n| async move { n })
            .bounded(2, 1)
            .spawn_on(threads.spawner());
        let mut out = drain(stream, |_| {});
        out.sort_unstable();
        assert_eq!(out, [0, 1, 2]);
        assert!(threads.join_all() <= 2);
    });
}

/// A one-shot gate: `Pending` until opened, then `Ready`.
#[derive(Default)]
struct Gate {
    state: Mutex<(bool, Option<Waker>)>,
}

impl Gate {
    fn open(&self) {
        let waker = {
            let mut state = self.state.lock().unwrap();
            state.0 = true;
            state.1.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    fn poll_open(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.state.lock().unwrap();
        if state.0 {
            return Poll::Ready(());
        }
        state.1 = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Two items: item 0 completes only once item 1 ran (item 1 opens its gate),
/// so item 1 must start while item 0 waits.
fn gated_pair(gate: &Arc<Gate>) -> impl Stream<Item = BoxFuture<'static, usize>> + Send + 'static {
    let gate = Arc::clone(gate);
    stream::iter(0..2usize).map(move |id| {
        let gate = Arc::clone(&gate);
        Box::pin(async move {
            if id == 0 {
                std::future::poll_fn(|cx| gate.poll_open(cx)).await;
            } else {
                gate.open();
            }
            id
        }) as BoxFuture<'static, usize>
    })
}

/// Tasks grow on demand: item 0 completes only once item 1 ran, so the second
/// task must be spawned (by the first task, while the consumer may still hold
/// the spawner) and run while the first waits. A spawn counted and never made
/// would leave item 0 waiting forever.
#[test]
fn the_second_task_is_spawned_while_the_first_waits() {
    model("spawn on demand", || {
        let threads = Threads::default();
        let gate = Arc::new(Gate::default());
        let items = gated_pair(&gate);
        let mut out = drain(items.bounded(2, 0).spawn_on(threads.spawner()), |_| {});
        out.sort_unstable();
        assert_eq!(out, [0, 1]);
        assert_eq!(threads.join_all(), 2);
    });
}

/// Ordered, with futures that yield once: the worker tasks go back through the
/// executor between polls, outputs complete out of order and wait in the
/// window, and come out in input order.
#[test]
fn ordered_hand_out_with_yielding_futures_loses_no_wake() {
    model("ordered, yielding", || {
        let threads = Threads::default();
        let stream = yielding(3)
            .bounded(2, 0)
            .ordered(2)
            .spawn_on(threads.spawner());
        assert_eq!(drain(stream, |_| {}), [0, 1, 2]);
        threads.join_all();
    });
}

/// Counts drops of the source and of every item the source made.
#[derive(Default)]
struct Drops {
    source: AtomicUsize,
    items: AtomicUsize,
}

struct Counted<T> {
    value: T,
    drops: Arc<Drops>,
    item: bool,
}

impl<T> Drop for Counted<T> {
    fn drop(&mut self) {
        let counter = if self.item {
            &self.drops.items
        } else {
            &self.drops.source
        };
        counter.fetch_add(1, Relaxed);
    }
}

impl<F: Future + Unpin> Future for Counted<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        Pin::new(&mut self.value).poll(cx)
    }
}

/// Items that never complete, each counted when dropped, from a source that
/// is counted when dropped; returns the source and how many it made so far.
fn never_completing(
    items: usize,
    drops: &Arc<Drops>,
) -> (
    impl Stream<Item = Counted<std::future::Pending<usize>>> + Send + 'static,
    Arc<AtomicUsize>,
) {
    let made = Arc::new(AtomicUsize::new(0));
    let source = Counted {
        value: (),
        drops: Arc::clone(drops),
        item: false,
    };
    let (counter, drops) = (Arc::clone(&made), Arc::clone(drops));
    let stream = stream::iter(0..items).map(move |_| {
        let _ = &source;
        counter.fetch_add(1, Relaxed);
        Counted {
            value: std::future::pending(),
            drops: Arc::clone(&drops),
            item: true,
        }
    });
    (stream, made)
}

/// Cancellation on drop: the consumer drops the stream while its tasks start
/// and park on futures that never complete. Every task still ends (each is
/// woken to stop), and the source and every item pulled are dropped once.
#[test]
fn dropping_the_stream_ends_every_task_and_drops_everything_once() {
    model("cancel on drop", || {
        let threads = Threads::default();
        let drops = Arc::new(Drops::default());
        let (source, made) = never_completing(4, &drops);
        let mut stream = source.bounded(2, 1).spawn_on(threads.spawner());
        let waker = futures::task::noop_waker();
        assert!(
            Pin::new(&mut stream)
                .poll_next(&mut Context::from_waker(&waker))
                .is_pending()
        );
        drop(stream);
        threads.join_all();
        assert_eq!(drops.source.load(Relaxed), 1);
        assert_eq!(drops.items.load(Relaxed), made.load(Relaxed));
        assert!(made.load(Relaxed) <= 3);
    });
}

/// Items 0 and 1, each the future `item` makes for its id, counted when made
/// and when dropped.
fn counted_pair<T: 'static>(
    drops: &Arc<Drops>,
    made: &Arc<AtomicUsize>,
    item: impl Fn(usize) -> BoxFuture<'static, T> + Send + 'static,
) -> impl Stream<Item = Counted<BoxFuture<'static, T>>> + Send + 'static {
    let (drops, made) = (Arc::clone(drops), Arc::clone(made));
    stream::iter(0..2usize).map(move |id| {
        made.fetch_add(1, Relaxed);
        Counted {
            value: item(id),
            drops: Arc::clone(&drops),
            item: true,
        }
    })
}

/// A failure racing a completion: item 0 panics in its first poll while item
/// 1 completes on the other task. The consumer sees the panic (never a clean
/// end), every task ends, and everything is dropped once.
#[test]
fn a_failure_racing_a_completion_reaches_the_consumer() {
    quiet_injected_panics();
    model("failure and completion", || {
        let threads = Threads::default();
        let drops = Arc::new(Drops::default());
        let made = Arc::new(AtomicUsize::new(0));
        let items = counted_pair(&drops, &made, |id| {
            Box::pin(async move {
                if id == 0 {
                    panic!("injected: item 0 fails");
                }
                id
            })
        });
        let mut stream: Spawned<usize> = items.bounded(2, 0).spawn_on(threads.spawner());
        let notify = Arc::new(Notify::new());
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            let mut out = Vec::new();
            while let Some(id) = next(&mut stream, &notify) {
                out.push(id);
            }
            out
        }));
        let message = outcome.expect_err("the stream ended cleanly although an item panicked");
        assert_eq!(
            message.downcast_ref::<&str>(),
            Some(&"injected: item 0 fails")
        );
        drop(stream);
        threads.join_all();
        // Item 1 was pulled unless the failure came first; either way every
        // item made was dropped once.
        assert_eq!(drops.items.load(Relaxed), made.load(Relaxed));
    });
}

/// Fail fast racing a completion (`try_bounded`): item 0 returns `Err` while
/// item 1, on the other task, yields once and completes. The consumer gets at
/// most item 1's output and then the error, never a clean end without it;
/// every task ends (the cancellation's wakes reach them), and every item made
/// is dropped once.
#[test]
fn a_fail_fast_error_racing_a_completion_ends_the_run() {
    model("fail fast and completion", || {
        let threads = Threads::default();
        let drops = Arc::new(Drops::default());
        let made = Arc::new(AtomicUsize::new(0));
        let items = counted_pair(&drops, &made, |id| {
            Box::pin(async move {
                if id == 0 {
                    return Err(id);
                }
                YieldOnce { id, yielded: false }.await;
                Ok(id)
            })
        })
        .map(Ok::<_, usize>);
        let out = drain(items.try_bounded(2, 0).spawn_on(threads.spawner()), |_| {});
        assert!(out == [Err(0)] || out == [Ok(1), Err(0)], "outputs {out:?}");
        threads.join_all();
        assert_eq!(drops.items.load(Relaxed), made.load(Relaxed));
    });
}

fn quiet_injected_panics() {
    let default = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let injected = info
            .payload()
            .downcast_ref::<&str>()
            .is_some_and(|message| message.starts_with("injected"));
        if !injected {
            default(info);
        }
    }));
}

/// A source fed by another thread: `Pending` until an item arrives, then
/// `None` once closed. It wakes the task that polled it last.
#[derive(Default)]
struct Feed {
    state: Mutex<FeedState>,
}

#[derive(Default)]
struct FeedState {
    items: VecDeque<usize>,
    closed: bool,
    waker: Option<Waker>,
}

impl Feed {
    fn push(&self, item: Option<usize>) {
        let waker = {
            let mut state = self.state.lock().unwrap();
            match item {
                Some(item) => state.items.push_back(item),
                None => state.closed = true,
            }
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

struct FeedStream(Arc<Feed>);

impl Stream for FeedStream {
    type Item = YieldOnce;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut state = self.0.state.lock().unwrap();
        if let Some(item) = state.items.pop_front() {
            return Poll::Ready(Some(YieldOnce {
                id: item,
                yielded: false,
            }));
        }
        if state.closed {
            return Poll::Ready(None);
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// A source that is pending when the task pulls: its wake (from the feeding
/// thread) reaches the task it holds, which lets the source be pulled again,
/// whether that task is idle or busy with an item (its items yield once, so the
/// wake can come while one runs). Every item arrives, then the end.
#[test]
fn a_pending_source_wakes_the_task_that_pulled() {
    model("pending source", || {
        let threads = Threads::default();
        let feed = Arc::new(Feed::default());
        let stream = FeedStream(Arc::clone(&feed))
            .bounded(1, 1)
            .spawn_on(threads.spawner());
        let feeder = {
            let feed = Arc::clone(&feed);
            thread::spawn(move || {
                feed.push(Some(0));
                feed.push(Some(1));
                feed.push(None);
            })
        };
        assert_eq!(drain(stream, |_| {}), [0, 1]);
        feeder.join().unwrap();
        assert_eq!(threads.join_all(), 1);
    });
}

/// A `Limits` raise from another thread, racing the first task's park: with
/// one worker, item 0 completes only once item 1 ran, so only the raise to two
/// workers can let the run finish. A raise the tasks never hear of (applied
/// after the task looked, with nobody sent for the freed start) leaves item 0
/// waiting forever, which loom reports as a deadlock.
#[test]
fn a_raise_from_another_thread_racing_a_park_is_not_lost() {
    model("limits raise", || {
        let threads = Threads::default();
        let gate = Arc::new(Gate::default());
        let items = gated_pair(&gate);
        let stream = items.bounded(1, 0).spawn_on(threads.spawner());
        let limits = stream.limits();
        let raiser = thread::spawn(move || limits.set_workers(2));
        let mut out = drain(stream, |_| {});
        out.sort_unstable();
        assert_eq!(out, [0, 1]);
        raiser.join().unwrap();
        assert_eq!(threads.join_all(), 2);
    });
}

/// The refill: a raise of `waiting` from another thread while the only task
/// is busy with item 0, which completes only once item 1 was pulled (the pull
/// opens its gate). Nothing is idle and nothing completes, so only the busy
/// task, flagged and woken to pull, can let the run finish; a refill request
/// it never hears of leaves item 0 waiting forever (a deadlock for loom).
#[test]
fn a_raise_of_waiting_with_the_task_busy_is_pulled_by_it() {
    model("refill a busy task", || {
        let threads = Threads::default();
        let gate = Arc::new(Gate::default());
        let items = {
            let gate = Arc::clone(&gate);
            stream::iter(0..2usize).map(move |id| {
                if id == 1 {
                    gate.open();
                }
                let gate = Arc::clone(&gate);
                Box::pin(async move {
                    if id == 0 {
                        std::future::poll_fn(|cx| gate.poll_open(cx)).await;
                    }
                    id
                }) as BoxFuture<'static, usize>
            })
        };
        let stream = items.bounded(1, 0).spawn_on(threads.spawner());
        let limits = stream.limits();
        let raiser = thread::spawn(move || limits.set_waiting(1));
        assert_eq!(drain(stream, |_| {}), [0, 1]);
        raiser.join().unwrap();
        assert_eq!(threads.join_all(), 1);
    });
}

/// Per key: every item has one key, at most one of which runs. Item 1 waits,
/// blocked by its key, beside a free worker, until item 0 completes on its
/// task; that completion must start it (the completing task takes it, or one
/// is sent for it), and so on for item 2. A freed key nobody acts on leaves
/// item 1 waiting forever, a deadlock for loom. One at a time, the outputs
/// come in input order.
#[test]
fn a_completion_that_frees_a_key_starts_the_item_it_blocked() {
    model("per key hand-off", || {
        let threads = Threads::default();
        let stream = yielding(3)
            .map(|item| Keyed::new(0u8, item))
            .bounded(2, 1)
            .per_key(1)
            .spawn_on(threads.spawner());
        assert_eq!(drain(stream, |_| {}), [0, 1, 2]);
        assert!(threads.join_all() <= 2);
    });
}

/// Shedding: one worker, one waiting place, so items are handed back while
/// the consumer takes them; each rejection taken frees the allowance, and the
/// tasks must hear of it to pull again (rule 2's refill). Every item comes
/// back once, run or rejected, and the run ends.
#[test]
fn taking_a_rejection_lets_the_tasks_pull_again() {
    model("shed and take", || {
        let threads = Threads::default();
        let stream = yielding(4)
            .bounded(1, 1)
            .shed(Shed::Newest)
            .spawn_on(threads.spawner());
        let mut ids: Vec<usize> = drain(stream, |_| {})
            .into_iter()
            .map(|outcome| outcome.unwrap_or_else(|rejected| rejected.into_inner().id))
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, [0, 1, 2, 3]);
        assert_eq!(threads.join_all(), 1);
    });
}

/// A clock the model drives: a fixed start plus the milliseconds another
/// thread adds.
#[derive(Clone)]
struct ModelClock {
    start: std::time::Instant,
    millis: Arc<loom::sync::atomic::AtomicU64>,
}

impl ModelClock {
    fn new() -> Self {
        Self {
            start: std::time::Instant::now(),
            millis: Arc::default(),
        }
    }

    fn now(&self) -> std::time::Instant {
        let millis = self.millis.load(std::sync::atomic::Ordering::SeqCst);
        self.start + std::time::Duration::from_millis(millis)
    }

    fn advance(&self, millis: u64) {
        self.millis
            .fetch_add(millis, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Expiry at pickup while the consumer is parked: one worker runs item 0,
/// item 1 waits; another thread moves the clock past `max_wait` and then
/// lets item 0 finish. The task that completes item 0 picks item 1 up in the
/// same lock section and, if it was pulled before the clock moved, hands it
/// back expired instead of starting it, and wakes the parked consumer for
/// it. Every item comes back once, no wake is lost, and an expired item
/// waited exactly as long as the clock moved.
#[test]
fn an_item_expiring_at_the_front_while_the_consumer_parks_reaches_it() {
    model("expiry at pickup, consumer parked", || {
        let threads = Threads::default();
        let clock = ModelClock::new();
        let gate = Arc::new(Gate::default());
        let items = {
            let gate = Arc::clone(&gate);
            stream::iter(0..2usize).map(move |id| {
                let gate = Arc::clone(&gate);
                Box::pin(async move {
                    if id == 0 {
                        std::future::poll_fn(|cx| gate.poll_open(cx)).await;
                    }
                    id
                }) as BoxFuture<'static, usize>
            })
        };
        let reading = clock.clone();
        let stream = items
            .bounded(1, 1)
            .max_wait(std::time::Duration::from_millis(5))
            .clock(move || reading.now())
            .spawn_on(threads.spawner());
        let mover = {
            let (clock, gate) = (clock.clone(), Arc::clone(&gate));
            thread::spawn(move || {
                clock.advance(10);
                gate.open();
            })
        };
        let out = drain(stream, |_| {});
        mover.join().unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].as_ref().ok(), Some(&0), "item 0 completes first");
        match &out[1] {
            Ok(id) => assert_eq!(*id, 1),
            Err(expired) => assert_eq!(expired.waited(), std::time::Duration::from_millis(10)),
        }
        threads.join_all();
    });
}

/// A timer on a [`ModelClock`]: a sleep completes once the clock reached its
/// instant, checked and registered under one lock, so that a thread that
/// moves the clock and then fires the timer never misses a sleeper.
#[derive(Clone)]
struct ModelTimer {
    clock: ModelClock,
    sleepers: Arc<Mutex<Vec<Waker>>>,
}

impl ModelTimer {
    fn new(clock: ModelClock) -> Self {
        Self {
            clock,
            sleepers: Arc::default(),
        }
    }

    /// Moves the clock, then wakes every sleeper.
    fn advance(&self, millis: u64) {
        self.clock.advance(millis);
        let sleepers = std::mem::take(&mut *self.sleepers.lock().unwrap());
        for sleeper in sleepers {
            sleeper.wake();
        }
    }
}

struct ModelSleep {
    timer: ModelTimer,
    at: std::time::Instant,
}

impl Future for ModelSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut sleepers = self.timer.sleepers.lock().unwrap();
        if self.timer.clock.now() >= self.at {
            return Poll::Ready(());
        }
        sleepers.push(cx.waker().clone());
        Poll::Pending
    }
}

impl bounded_buffered::Timer for ModelTimer {
    type Sleep = ModelSleep;

    fn now(&self) -> std::time::Instant {
        self.clock.now()
    }

    fn sleep_until(&self, at: std::time::Instant) -> ModelSleep {
        ModelSleep {
            timer: self.clone(),
            at,
        }
    }
}

/// The run's deadline fires while a worker task completes: one worker runs
/// item 0, item 1 waits; a thread moves the clock to the deadline and fires
/// the timer (the alarm task stops the run), then lets item 0 finish (its
/// task hands the output over and may start item 1). Whatever
/// comes first, every item pulled comes back exactly once (item 0 done or
/// cancelled, item 1 done or late; nothing is pulled if the timer fires
/// before the first poll), the deadline's outcome comes last if the run was
/// stopped, no wake is lost, and the alarm task ends with the run.
#[test]
fn the_deadline_firing_while_a_worker_completes_loses_nothing() {
    use bounded_buffered::Unfinished;

    model("deadline and completion", || {
        let threads = Threads::default();
        let clock = ModelClock::new();
        let timer = ModelTimer::new(clock.clone());
        let gate = Arc::new(Gate::default());
        let items = {
            let gate = Arc::clone(&gate);
            stream::iter(0..2usize).map(move |id| {
                let gate = Arc::clone(&gate);
                Box::pin(async move {
                    if id == 0 {
                        std::future::poll_fn(|cx| gate.poll_open(cx)).await;
                    }
                    id
                }) as BoxFuture<'static, usize>
            })
        };
        let deadline = clock.now() + std::time::Duration::from_millis(10);
        let stream = items
            .bounded(1, 1)
            .timer(timer.clone())
            .deadline(deadline)
            .spawn_on(threads.spawner());
        // One thread fires the timer, then lets item 0 finish: the alarm
        // task's section and the worker's completion race all the same.
        let mover = {
            let gate = Arc::clone(&gate);
            thread::spawn(move || {
                timer.advance(10);
                gate.open();
            })
        };
        let out = drain(stream, |_| {});
        mover.join().unwrap();
        let mut seen = [0; 2];
        let mut stopped = false;
        for (at, outcome) in out.iter().enumerate() {
            let id = match outcome {
                Ok(id) => *id,
                Err(Unfinished::Cancelled(item)) => item.position() as usize,
                Err(Unfinished::Late(item)) => item.position() as usize,
                Err(Unfinished::Deadline(_)) => {
                    assert_eq!(at, out.len() - 1, "the deadline last");
                    stopped = true;
                    continue;
                }
                Err(other) => panic!("unexpected {other}"),
            };
            seen[id] += 1;
        }
        // Each item pulled comes back once; the timer may fire before the
        // first pull, and then nothing is pulled at all.
        assert!(seen[0] <= 1 && seen[1] <= seen[0], "{out:?}");
        if !stopped {
            assert_eq!(seen, [1, 1], "{out:?}");
            assert!(out.iter().all(Result::is_ok), "{out:?}");
        }
        threads.join_all();
    });
}

/// Tenants (contract point 35): two workers, one waiting place per tenant;
/// tenant `a` has four items, tenant `b`'s source stays pending until the
/// consumer has all of `a`'s outputs (only then does another thread feed
/// it). `a`'s place fills and frees while `b`'s pending source holds the
/// waker of whichever task pulled last: when a start frees `a`'s place, the
/// engine lets the source be pulled again though it said `Pending` (only
/// the engine knows a place freed), and a task that pulls then takes over
/// the source's wakes. A freed place nobody pulls for, or a wake left with
/// a task that no longer waits, leaves `a`'s last items unpulled and `b`
/// unfed: a deadlock for loom (as it is with the engine's hook taken out).
/// At most one preemption: 95,035 interleavings, 10 s; at two the search
/// ran for more than ten minutes.
#[test]
fn a_tenants_freed_place_and_another_tenants_wake_lose_nothing() {
    model_at_most("tenants hand-off", 1, || {
        let threads = Threads::default();
        let feed = Arc::new(Feed::default());
        // `a`'s items complete at their first poll: fewer steps to explore.
        let ready = (0..4).map(|id| YieldOnce { id, yielded: true });
        let a: stream::BoxStream<'static, YieldOnce> = stream::iter(ready).boxed();
        let b: stream::BoxStream<'static, YieldOnce> = FeedStream(Arc::clone(&feed)).boxed();
        let stream = Tenants::new()
            .with('a', 1, a)
            .with('b', 1, b)
            .bounded(2, 1)
            .spawn_on(threads.spawner());
        let mut seen_of_a = 0;
        let mut feeder = None;
        let mut outputs = drain(stream, |&output| {
            if output < 10 {
                seen_of_a += 1;
            }
            if seen_of_a == 4 && feeder.is_none() {
                let feed = Arc::clone(&feed);
                feeder = Some(thread::spawn(move || {
                    feed.push(Some(10));
                    feed.push(None);
                }));
            }
        });
        outputs.sort_unstable();
        assert_eq!(outputs, [0, 1, 2, 3, 10]);
        feeder.expect("fed").join().unwrap();
        threads.join_all();
    });
}
