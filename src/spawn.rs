//! Spawned mode: the same budgets, with the producer and the workers running as
//! tasks on an executor instead of inside the consumer's `poll_next`.
//!
//! One producer task pulls from the source into an `async-channel` queue, and
//! `workers` worker tasks take items from it and run them. All admission
//! decisions go through [`Budgets`] under one mutex (short critical sections,
//! never held across an `.await`):
//!
//! - A worker first *claims* a start (`Budgets::may_start`, counting claimed
//!   starts as running), and only then takes the oldest item from the queue, so
//!   an item never leaves the queue before the budgets allow it to start.
//! - The producer pulls one more item only if an idle worker has claimed a start
//!   that no queued item covers yet, or if the items beyond those claims still
//!   fit the waiting budget (`Budgets::may_queue`). This is the in-place rule
//!   "start what may start, then top up the queue", so with every future blocked
//!   the source has advanced exactly `workers + waiting` items
//!   (`min(workers, window) + waiting` when ordered).
//! - Outputs go into the same [`Held`] store as in place, in completion or input
//!   order, and an untaken output counts against the budgets until the consumer
//!   takes it: that is what stops the workers, and through them the producer,
//!   when the consumer falls behind.
//!
//! Every task is wrapped in a [`Task`] that catches panics, watches a shared
//! cancellation flag (set when the stream is dropped, ends or fails) and drops
//! its work as soon as it sees it.

use std::any::Any;
use std::fmt;
use std::mem;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use async_channel::{Receiver, Sender};
use futures_core::stream::{FusedStream, Stream};
use futures_util::StreamExt;
use futures_util::task::AtomicWaker;
use pin_project_lite::pin_project;

use crate::bounded::BoundedBuffered;
use crate::budget::Budgets;
use crate::held::Held;
use crate::index_queue::IndexQueue;
use crate::stats::Stats;

/// Queues up to this many slots are allocated up front (`async-channel`'s bounded
/// queue allocates its whole capacity at once); larger budgets use the channel's
/// growable queue. Either way the admission rule, not the channel, bounds its length.
const PREALLOCATED_QUEUE: usize = 1024;

/// Something that can run a `Send + 'static` future to completion in the
/// background: an executor handle, or a closure that spawns onto one.
///
/// [`spawn_on`](BoundedBuffered::spawn_on) calls [`spawn`](Spawner::spawn) once
/// per worker plus once for the producer, all on the first poll of the
/// [`Spawned`] stream, and never again. The tasks need no join handle: they
/// stop by themselves when the stream is dropped.
///
/// Implemented for any `Fn(Pin<Box<dyn Future<Output = ()> + Send>>)` closure
/// (`futures::future::BoxFuture<'static, ()>` names the same type), for
/// `tokio::runtime::Handle` (feature `tokio`), and for
/// `Arc<smol::Executor<'static>>` and `SmolGlobal` (feature `smol`).
///
/// # Examples
///
/// A closure that spawns on a tokio runtime, without the `tokio` feature:
///
/// ```
/// use bounded_buffered::BoundedStreamExt;
/// use futures::future::BoxFuture;
/// use futures::{StreamExt, stream};
///
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// let handle = runtime.handle().clone();
/// let mut doubled = stream::iter(0..10u32)
///     .map(|n| async move { n * 2 })
///     .bounded(4, 4)
///     .spawn_on(move |task: BoxFuture<'static, ()>| {
///         handle.spawn(task);
///     });
/// let mut sum = 0;
/// runtime.block_on(async {
///     while let Some(n) = doubled.next().await {
///         sum += n;
///     }
/// });
/// assert_eq!(sum, 90);
/// ```
pub trait Spawner: Send + 'static {
    /// Starts `task` in the background. The task must be polled until it
    /// completes; dropping it unfinished (a runtime shutting down, say) makes the
    /// [`Spawned`] stream panic on its next poll instead of losing items quietly.
    fn spawn(&self, task: Pin<Box<dyn Future<Output = ()> + Send>>);
}

impl<F> Spawner for F
where
    F: Fn(Pin<Box<dyn Future<Output = ()> + Send>>) + Send + 'static,
{
    fn spawn(&self, task: Pin<Box<dyn Future<Output = ()> + Send>>) {
        self(task);
    }
}

/// Spawns on the tokio runtime behind the handle; the tasks are detached.
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl Spawner for tokio::runtime::Handle {
    fn spawn(&self, task: Pin<Box<dyn Future<Output = ()> + Send>>) {
        // Dropping the join handle detaches the task; it stops when the stream does.
        drop(tokio::runtime::Handle::spawn(self, task));
    }
}

/// Spawns on this smol executor; the tasks are detached. The executor must be
/// run (`Executor::run`, on as many threads as you want parallelism).
#[cfg(feature = "smol")]
#[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
impl Spawner for Arc<smol::Executor<'static>> {
    fn spawn(&self, task: Pin<Box<dyn Future<Output = ()> + Send>>) {
        smol::Executor::spawn(self, task).detach();
    }
}

/// smol's global executor: spawns with [`smol::spawn`], which runs its tasks on
/// a pool of threads (`SMOL_THREADS`, one by default).
///
/// # Examples
///
/// ```
/// use bounded_buffered::{BoundedStreamExt, SmolGlobal};
/// use futures::{StreamExt, stream};
///
/// let total: u32 = smol::block_on(
///     stream::iter(1..=4u32)
///         .map(|n| async move { n })
///         .bounded(2, 2)
///         .spawn_on(SmolGlobal)
///         .fold(0, |sum, n| async move { sum + n }),
/// );
/// assert_eq!(total, 10);
/// ```
#[cfg(feature = "smol")]
#[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
#[derive(Clone, Copy, Debug, Default)]
pub struct SmolGlobal;

#[cfg(feature = "smol")]
#[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
impl Spawner for SmolGlobal {
    fn spawn(&self, task: Pin<Box<dyn Future<Output = ()> + Send>>) {
        smol::spawn(task).detach();
    }
}

impl<S> BoundedBuffered<S>
where
    S: Stream + Send + 'static,
    S::Item: Future + Send + 'static,
    <S::Item as Future>::Output: Send + 'static,
{
    /// Runs the same budgets with the producer and the workers as tasks on
    /// `executor`, so the futures make progress while the consumer is busy
    /// elsewhere, and run in parallel on a multi-threaded executor.
    ///
    /// The returned [`Spawned`] stream yields the same outputs under the same
    /// budgets as this stream would; outputs the consumer has not taken stop the
    /// workers, and the workers stop the producer. Nothing is spawned until the
    /// first poll, which spawns `workers + 1` tasks; dropping the stream cancels
    /// them all, and a panic in a task is re-raised by the stream. Contract
    /// points 16 to 20 of the [crate documentation](crate#what-the-adapter-guarantees)
    /// say exactly what holds.
    ///
    /// # Panics
    ///
    /// If the stream was already polled: its in-flight work cannot move.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
    /// # async fn main() {
    /// let handle = tokio::runtime::Handle::current();
    /// let squares: Vec<u64> = stream::iter(1..=5u64)
    ///     .map(|n| async move { n * n }) // runs on the runtime's worker threads
    ///     .bounded(2, 2)
    ///     .ordered(4)
    ///     .spawn_on(handle)
    ///     .collect()
    ///     .await;
    /// assert_eq!(squares, [1, 4, 9, 16, 25]);
    /// # }
    /// ```
    #[track_caller]
    pub fn spawn_on<E: Spawner>(self, executor: E) -> Spawned<<S::Item as Future>::Output> {
        let (source, budgets) = self.into_parts();
        Spawned::new(source, budgets, executor)
    }
}

/// Stream for the [`spawn_on`](BoundedBuffered::spawn_on) method.
///
/// Yields the outputs of futures that run as tasks on an executor, under the
/// budgets of the [`BoundedBuffered`] it was made from. See
/// [`spawn_on`](BoundedBuffered::spawn_on).
#[must_use = "streams do nothing unless polled"]
pub struct Spawned<T> {
    shared: Arc<Shared<T>>,
    /// Spawns the tasks; taken by the first poll.
    start: Option<Start<T>>,
    phase: Phase,
}

/// Spawns the producer and the workers, given the state they share.
type Start<T> = Box<dyn FnOnce(&Arc<Shared<T>>) + Send>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Never polled: nothing spawned yet.
    New,
    Running,
    /// Returned `None`.
    Done,
    /// Re-raised a task's panic.
    Failed,
}

impl<T: Send + 'static> Spawned<T> {
    fn new<S, E>(source: S, budgets: Budgets, executor: E) -> Self
    where
        S: Stream + Send + 'static,
        S::Item: Future<Output = T> + Send + 'static,
        E: Spawner,
    {
        let shared = Arc::new(Shared::new(budgets));
        let start = move |shared: &Arc<Shared<T>>| {
            let capacity = budgets.workers.saturating_add(budgets.waiting);
            let (sender, receiver) = if capacity <= PREALLOCATED_QUEUE {
                async_channel::bounded(capacity)
            } else {
                async_channel::unbounded()
            };
            for index in 0..budgets.workers {
                let body = work(Arc::clone(shared), index, receiver.clone());
                executor.spawn(Box::pin(Task::new(Arc::clone(shared), index, body)));
            }
            drop(receiver);
            let body = produce(Arc::clone(shared), source, sender);
            let producer = budgets.workers;
            executor.spawn(Box::pin(Task::new(Arc::clone(shared), producer, body)));
        };
        Self {
            shared,
            start: Some(Box::new(start)),
            phase: Phase::New,
        }
    }
}

impl<T> Spawned<T> {
    /// Returns a snapshot of the counts the budgets bound; see [`Stats`].
    ///
    /// The counts are shared with the tasks and change while they run. An item
    /// that a worker has been cleared to start counts as active from then on,
    /// even if the worker has not taken it from the queue yet.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
    /// # async fn main() {
    /// let mut squares = stream::iter(1..=10u64)
    ///     .map(|n| async move { n * n })
    ///     .bounded(3, 2)
    ///     .spawn_on(tokio::runtime::Handle::current());
    /// while squares.next().await.is_some() {}
    /// let stats = squares.stats();
    /// assert_eq!((stats.pulled, stats.completed), (10, 10));
    /// assert!(stats.peak_active <= 3 && stats.peak_waiting <= 2);
    /// # }
    /// ```
    pub fn stats(&self) -> Stats {
        self.shared.lock().stats()
    }
}

impl<T> Stream for Spawned<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = &mut *self;
        match this.phase {
            Phase::Done => return Poll::Ready(None),
            Phase::Failed => {
                panic!("`Spawned` polled after it re-raised a panic from one of its tasks")
            }
            Phase::New => {
                this.phase = Phase::Running;
                if let Some(start) = this.start.take() {
                    start(&this.shared);
                }
            }
            Phase::Running => {}
        }

        let mut state = this.shared.lock();
        if let Some(failure) = state.failure.take() {
            drop(state);
            this.phase = Phase::Failed;
            // The failing task cancelled the others already; make sure regardless.
            this.shared.cancel();
            match failure {
                Failure::Panicked(payload) => panic::resume_unwind(payload),
                Failure::Lost => panic!(
                    "a task of a `Spawned` stream was dropped by its executor before it \
                     finished (was the runtime shut down?): its items are lost"
                ),
            }
        }
        if let Some(output) = state.held.pop() {
            // The output's budget is free again: one parked worker may start.
            let worker = state.idle_workers.wake_one();
            state.note_peaks();
            drop(state);
            if let Some(worker) = worker {
                worker.wake();
            }
            return Poll::Ready(Some(output));
        }
        // Nothing held, running or queued, and nothing more to come. Workers that
        // were cleared to start hold no item; they are cancelled with the rest.
        if state.source_done && state.queued == 0 && state.active == 0 {
            drop(state);
            this.phase = Phase::Done;
            this.shared.cancel();
            return Poll::Ready(None);
        }
        match &mut state.consumer {
            Some(waker) => waker.clone_from(cx.waker()),
            None => state.consumer = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.phase == Phase::Done {
            return (0, Some(0));
        }
        // Every item pulled and not yet yielded will be yielded; the source's
        // remaining length is unknown once it moved into the producer task.
        let state = self.shared.lock();
        let in_flight = state
            .active
            .saturating_add(state.queued)
            .saturating_add(state.held.len());
        (in_flight, None)
    }
}

impl<T> FusedStream for Spawned<T> {
    fn is_terminated(&self) -> bool {
        self.phase == Phase::Done
    }
}

impl<T> Drop for Spawned<T> {
    fn drop(&mut self) {
        self.shared.cancel();
        // Outputs nobody will take are dropped here and now, rather than whenever
        // the last task lets go of the shared state. Workers that complete after
        // the cancellation drop their outputs themselves.
        let mut state = self.shared.lock();
        let held = mem::replace(&mut state.held, Held::unordered());
        drop(state);
        drop(held);
    }
}

impl<T> fmt::Debug for Spawned<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        let budgets = &state.budgets;
        f.debug_struct("Spawned")
            .field("workers", &budgets.workers)
            .field("waiting", &budgets.waiting)
            .field("window", &budgets.window)
            .field("phase", &self.phase)
            .field("stats", &state.stats())
            .finish_non_exhaustive()
    }
}

/// What the consumer and the tasks share.
struct Shared<T> {
    state: Mutex<State<T>>,
    /// Set once, under the state lock, when the tasks must stop.
    cancelled: AtomicBool,
    /// Each task's waker (workers `0..workers`, then the producer), woken on
    /// cancellation so the task drops its work on its next poll.
    tasks: Box<[AtomicWaker]>,
}

struct State<T> {
    budgets: Budgets,
    /// Futures running in a worker.
    active: usize,
    /// Workers cleared to start an item and waiting to take it from the queue.
    claimed: usize,
    /// Items pulled from the source and not yet taken by a worker.
    queued: usize,
    held: Held<T>,
    /// Positions reserved in `held` so far (each output's position is reserved
    /// when it completes, in order, so the ordered store only spans the window).
    reserved: u64,
    /// Peaks and totals; current counts are read off the fields above.
    stats: Stats,
    source_done: bool,
    failure: Option<Failure>,
    consumer: Option<Waker>,
    producer: Option<Waker>,
    idle_workers: IdleWorkers,
}

enum Failure {
    Panicked(Box<dyn Any + Send>),
    /// The executor dropped a task before it finished.
    Lost,
}

impl<T> Shared<T> {
    fn new(budgets: Budgets) -> Self {
        let held = if budgets.window.is_some() {
            Held::ordered()
        } else {
            Held::unordered()
        };
        Self {
            state: Mutex::new(State {
                budgets,
                active: 0,
                claimed: 0,
                queued: 0,
                held,
                reserved: 0,
                stats: Stats::default(),
                source_done: false,
                failure: None,
                consumer: None,
                producer: None,
                idle_workers: IdleWorkers::new(budgets.workers),
            }),
            cancelled: AtomicBool::new(false),
            tasks: (0..=budgets.workers).map(|_| AtomicWaker::new()).collect(),
        }
    }

    /// Locks the state. No code panics while holding the lock, but if a `Drop`
    /// impl or waker ever did, the counts are still whole: carry on.
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Tells every task to stop and drop what it holds.
    fn cancel(&self) {
        let (producer, workers) = {
            // Set under the lock, so that a task that checks the flag under the
            // lock and then hands an item on does so before the flag was set, and
            // the item is found by whoever cleans up after it.
            let mut state = self.lock();
            self.cancelled.store(true, Ordering::Release);
            // The tasks' wakers go too: an executor that keeps a finished task
            // alive while wakers to it exist would otherwise keep it, and through
            // it this state, alive in a cycle.
            (state.producer.take(), state.idle_workers.take_all())
        };
        drop((producer, workers));
        for task in self.tasks.iter() {
            task.wake();
        }
    }

    /// Records the first failure, cancels every task and wakes the consumer to
    /// re-raise it.
    fn fail(&self, failure: Failure) {
        let consumer = {
            let mut state = self.lock();
            if self.is_cancelled() || state.failure.is_some() {
                // The stream already ended, was dropped or failed: nobody is
                // waiting for this task's work.
                return;
            }
            state.failure = Some(failure);
            state.consumer.take()
        };
        self.cancel();
        if let Some(consumer) = consumer {
            consumer.wake();
        }
    }

    /// Waits until the producer may pull one more item.
    fn poll_room(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.lock();
        if state.may_pull() {
            return Poll::Ready(());
        }
        match &mut state.producer {
            Some(waker) => waker.clone_from(cx.waker()),
            None => state.producer = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Counts a pulled item into the queue. Returns `false` if the tasks were
    /// cancelled: the caller then drops the item.
    fn admit(&self) -> bool {
        let mut state = self.lock();
        if self.is_cancelled() {
            return false;
        }
        state.queued += 1;
        state.stats.pulled += 1;
        state.note_peaks();
        true
    }

    fn source_ended(&self) {
        let consumer = {
            let mut state = self.lock();
            state.source_done = true;
            state.consumer.take()
        };
        if let Some(consumer) = consumer {
            consumer.wake();
        }
    }

    /// Waits until worker `index` may start one more item, and claims that start.
    fn poll_claim(&self, index: usize, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.lock();
        if !state.may_claim() {
            state.idle_workers.park(index, cx.waker());
            return Poll::Pending;
        }
        state.idle_workers.unpark(index);
        state.claimed += 1;
        state.note_peaks();
        // A claim not yet covered by a queued item is room for the producer.
        let producer = state.producer.take();
        drop(state);
        if let Some(producer) = producer {
            producer.wake();
        }
        Poll::Ready(())
    }

    /// The queue was closed: the source is exhausted and a claimed start will
    /// never get an item.
    fn release_claim(&self) {
        self.lock().claimed -= 1;
    }

    /// A worker took a queued item under its claim and starts it.
    fn start(&self) {
        let mut state = self.lock();
        state.claimed -= 1;
        state.queued -= 1;
        state.active += 1;
        state.note_peaks();
    }

    /// Stores the output of the item at `position` for the consumer.
    fn complete(&self, position: u64, output: T) {
        let mut state = self.lock();
        if self.is_cancelled() {
            // Nobody will take it; drop it outside the lock.
            drop(state);
            drop(output);
            return;
        }
        state.active -= 1;
        while state.reserved <= position {
            state.held.begin();
            state.reserved += 1;
        }
        state.held.complete(position, output);
        state.stats.completed += 1;
        state.note_peaks();
        let consumer = state.consumer.take();
        drop(state);
        if let Some(consumer) = consumer {
            consumer.wake();
        }
    }
}

impl<T> State<T> {
    /// The counts as the budgets see them. A queued item that a claimed worker
    /// is about to take counts as active, not waiting: the budgets already
    /// allowed it to start.
    fn stats(&self) -> Stats {
        let starting = self.queued.min(self.claimed);
        Stats {
            active: self.active + starting,
            waiting: self.queued - starting,
            held: self.held.len(),
            workers_limit: self.budgets.workers,
            waiting_limit: self.budgets.waiting,
            ..self.stats
        }
    }

    fn note_peaks(&mut self) {
        let now = self.stats();
        let peaks = &mut self.stats;
        peaks.peak_active = peaks.peak_active.max(now.active);
        peaks.peak_waiting = peaks.peak_waiting.max(now.waiting);
        peaks.peak_held = peaks.peak_held.max(now.held);
    }

    /// Whether a worker may be cleared to start one more item. A claimed start
    /// counts as running: its item will start as soon as the worker takes it.
    fn may_claim(&self) -> bool {
        self.budgets
            .may_start(self.active + self.claimed, self.held.len(), 0)
    }

    /// Whether the producer may pull one more item: for a claimed start that no
    /// queued item covers yet, or else into the waiting budget.
    fn may_pull(&self) -> bool {
        self.queued < self.claimed || self.budgets.may_queue(self.queued - self.claimed, 0)
    }
}

/// Workers waiting for the budgets to let them start an item, oldest first.
struct IdleWorkers {
    order: IndexQueue,
    /// Per worker: its waker while it waits.
    wakers: Box<[Option<Waker>]>,
}

impl IdleWorkers {
    fn new(workers: usize) -> Self {
        Self {
            order: IndexQueue::new(workers),
            wakers: (0..workers).map(|_| None).collect(),
        }
    }

    fn park(&mut self, index: usize, waker: &Waker) {
        match &mut self.wakers[index] {
            Some(parked) => parked.clone_from(waker),
            slot @ None => *slot = Some(waker.clone()),
        }
        self.order.push(index);
    }

    /// The worker stopped waiting. Its entry in `order`, if any, is skipped later.
    fn unpark(&mut self, index: usize) {
        self.wakers[index] = None;
    }

    fn take_all(&mut self) -> Vec<Waker> {
        self.order.clear();
        self.wakers.iter_mut().filter_map(Option::take).collect()
    }

    /// Takes the waker of the worker that has waited longest, if any.
    fn wake_one(&mut self) -> Option<Waker> {
        while let Some(index) = self.order.pop() {
            if let Some(waker) = self.wakers[index].take() {
                return Some(waker);
            }
        }
        None
    }
}

/// An item in the queue, with its input position. Its destructor cannot unwind
/// into the queue's own drop loop, which would leak the items behind it: the
/// queue is dropped only once the tasks were cancelled (the stream was dropped,
/// ended or failed), so nobody is left to hear of such a panic, and it is
/// swallowed.
struct Queued<F>(Option<(u64, F)>);

impl<F> Drop for Queued<F> {
    fn drop(&mut self) {
        if let Some(item) = self.0.take() {
            drop(panic::catch_unwind(AssertUnwindSafe(|| drop(item))));
        }
    }
}

/// The producer: pulls from the source while the budgets allow, into the queue.
async fn produce<S, T>(shared: Arc<Shared<T>>, source: S, queue: Sender<Queued<S::Item>>)
where
    S: Stream,
    S::Item: Future<Output = T>,
{
    let mut source = std::pin::pin!(source);
    let mut position = 0;
    loop {
        std::future::poll_fn(|cx| shared.poll_room(cx)).await;
        let Some(future) = source.next().await else {
            // Dropping the sender (on return) closes the queue: workers waiting
            // on it for an item that will never come stop.
            shared.source_ended();
            return;
        };
        if !shared.admit() {
            return;
        }
        // The admission rule keeps the queue within its capacity, so this does
        // not wait. It fails only once cancelled; the item is dropped with the error.
        if queue.send(Queued(Some((position, future)))).await.is_err() {
            return;
        }
        position += 1;
    }
}

/// A worker: claims a start, takes the oldest queued item, runs it, stores its
/// output, and again.
async fn work<F: Future>(shared: Arc<Shared<F::Output>>, index: usize, queue: Receiver<Queued<F>>) {
    loop {
        std::future::poll_fn(|cx| shared.poll_claim(index, cx)).await;
        let Some((position, future)) = queue.recv().await.ok().and_then(|mut item| item.0.take())
        else {
            shared.release_claim();
            return;
        };
        shared.start();
        let mut running = std::pin::pin!(Some(future));
        let output = std::future::poll_fn(|cx| match running.as_mut().as_pin_mut() {
            Some(future) => future.poll(cx),
            None => unreachable!("a finished future is not polled again"),
        })
        .await;
        // Drop the finished future before its output is handed on: if its
        // destructor panics, this task fails (the consumer sees the panic, never a
        // clean end), and `output`, a plain local here, is dropped by the unwind.
        // (`future.await` would leak the output in that case: rust-lang/rust#47949.)
        running.set(None);
        shared.complete(position, output);
    }
}

pin_project! {
    /// One spawned task: runs `body` until it finishes, the stream cancels it, or
    /// it panics; in the last two cases it drops `body` (and so the source, the
    /// future or the item it holds) at once.
    struct Task<T, B> {
        #[pin]
        body: Option<B>,
        shared: Arc<Shared<T>>,
        index: usize,
    }

    impl<T, B> PinnedDrop for Task<T, B> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            // Dropped unfinished and not cancelled: the executor gave up on it.
            if this.body.is_some() && !this.shared.is_cancelled() {
                this.shared.fail(Failure::Lost);
            }
        }
    }
}

impl<T, B> Task<T, B> {
    fn new(shared: Arc<Shared<T>>, index: usize, body: B) -> Self {
        Self {
            body: Some(body),
            shared,
            index,
        }
    }
}

impl<T, B: Future<Output = ()>> Future for Task<T, B> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut this = self.project();
        let cancellation = &this.shared.tasks[*this.index];
        // Register before checking, so a cancellation after the check wakes us.
        cancellation.register(cx.waker());
        let finished = if this.shared.is_cancelled() {
            true
        } else if let Some(body) = this.body.as_mut().as_pin_mut() {
            match panic::catch_unwind(AssertUnwindSafe(|| body.poll(cx))) {
                Ok(poll) => poll.is_ready(),
                Err(payload) => {
                    // Drop this task's work before the consumer hears of the
                    // panic. A second panic from a destructor on the way adds
                    // nothing the consumer needs: the first is reported.
                    drop(panic::catch_unwind(AssertUnwindSafe(|| {
                        this.body.set(None)
                    })));
                    this.shared.fail(Failure::Panicked(payload));
                    true
                }
            }
        } else {
            true
        };
        if !finished {
            return Poll::Pending;
        }
        // Dropping a cancelled task's work runs destructors (of its future, its
        // queued items, its source); one that panics must not unwind into the
        // executor. Reported if anyone still listens (`fail` ignores it after a
        // cancellation).
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| this.body.set(None))) {
            this.shared.fail(Failure::Panicked(payload));
        }
        // A finished task needs no waking; do not keep its waker (see `cancel`).
        drop(cancellation.take());
        Poll::Ready(())
    }
}
