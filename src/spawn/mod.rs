//! Spawned mode: the same budgets, with the futures running in worker tasks on
//! an executor instead of inside the consumer's `poll_next`.
//!
//! # Design
//!
//! There is no producer task and no channel. The worker tasks pull from the
//! source themselves, and everything the consumer and the tasks share sits in
//! one [`State`](state::State) behind one mutex (`shared.rs`): the stream's
//! [`Engine`], moved there whole by `spawn_on` (the budgets, the waiting
//! queue, the held outcomes, the counts, every rule), the source, and the
//! tasks' bookkeeping (`tasks.rs`). Every decision is the engine's, asked
//! under the lock, with the limits in force at that moment: this driver only
//! turns its answers into wakes and spawns. The lock is held for a few counter updates and, when a
//! task pulls, the source's `poll_next` (the consumer's `size_hint` asks the
//! source's, too: both caught, so the lock is never poisoned); never across a
//! future's poll, a wake, a spawn or a user destructor (a lock section returns
//! those as [`Deferred`](state::Deferred) work, done after the lock is
//! released).
//!
//! A worker task (`worker.rs`) owns one future at a time. When it completes,
//! the task hands the output over and takes its next item in the same lock
//! section, then polls that at once: a task can run many items per poll (up to
//! a cooperative budget) without ever going back to the executor. Tasks are
//! spawned on demand: the first on the stream's first poll, then one whenever a
//! start is free, there is an item for it and no task is idle; never more than
//! `workers`. A task with nothing to start parks; its bookkeeping is one entry
//! per task, grown as tasks are spawned.
//!
//! The consumer takes outputs under the lock, one per `poll_next`. Taking an
//! output may free a start; then it sends for a task, unless one is on its way
//! already, so a consumer that drains a batch of outputs wakes one task for
//! the batch, and that task takes every start freed meanwhile.
//!
//! # The hand-off protocol
//!
//! Parties: the consumer, the worker tasks, the source (which holds the waker
//! of the task that last polled it), and the executor. Rules:
//!
//! 1. **Admission.** Items start and are pulled only in lock sections, each
//!    answered by the engine ([`Engine::step`], [`Engine::top_up`]) against
//!    the counts, which include everything started or pulled before. A start
//!    takes the oldest waiting item, else pulls one; the queue is topped up
//!    only once no start is free (the in-place order: start what may start,
//!    then pull ahead). So the counts never exceed the budgets, and with every
//!    future blocked the source has advanced exactly `workers + waiting` items
//!    (`min(workers, window) + waiting` ordered).
//! 2. **No stranded start.** Every lock section that can leave a start free
//!    with an item to start (an output taken, a future completed, the source
//!    ready again, the first poll) ends with the *dispatch*: if no task is on
//!    its way (`searching`), it sends one: the task idle longest (its waker is
//!    taken under the lock and woken after), or, below `workers`, a new task
//!    (counted under the lock, spawned after). The task sent is the
//!    *searcher*; its next poll takes the lock, clears `searching`, takes an
//!    item if one may start, and dispatches again. Invariant: whenever the lock
//!    is free, either no start is free with an item for it, or a searcher is
//!    on its way, or a task that completed its future is about to take the
//!    lock (and then takes the start itself). A task parks only in a section
//!    that found no start it could make, so a free start never waits for a
//!    sleeping task. **The refill** does the same for a free waiting place
//!    with no free start (an expired output taken, a raise of `waiting`),
//!    since only tasks pull: unless a searcher is on its way or the source is
//!    pending (rule 4 covers that), the section sends an idle task, whose
//!    `find_work` tops the queue up, else flags a busy one (`refill` in its
//!    handle) and wakes it: its next poll tops the queue up in a section of
//!    its own, then polls its future again (a spurious poll, which futures
//!    must allow). So the queue is never left short while a task could fill
//!    it.
//! 3. **Consumer wakes.** The consumer registers its waker in the section that
//!    finds nothing to take. A section that stores an output the consumer can
//!    take (unordered: any; ordered: the oldest unyielded position), ends the
//!    stream, or records a failure takes that waker and wakes it. Registration
//!    and these checks are under the same lock, so either the section comes
//!    first and the consumer sees its effect, or the consumer registered first
//!    and the section wakes it. Only a parked consumer is woken, once.
//! 4. **Source wakes.** A source that returns `Pending` holds the waker of the
//!    task that polled it; nobody polls it again until that task was polled,
//!    and the task's handle is flagged. On its next poll, whatever woke it, the
//!    flagged task takes the lock, lets the source be pulled again, tops up
//!    the queue and dispatches (an idle task does so as part of looking for
//!    work). So the source's wake always reaches a task that acts on it.
//! 5. **Cancellation.** The stream's end, its drop, or a failure cancels, in a
//!    lock section: from then on no section starts or pulls anything, and the
//!    source, the waiting items and every task's handle are taken out. After
//!    the lock, the canceller sets the `cancelled` flag, then wakes every task,
//!    then drops the source and the items, each destructor caught (the
//!    stream's drop re-raises the first panic once all ran; a task's section
//!    has nobody to tell). A task registers its waker in its handle at the
//!    start of every poll, then reads the flag: either it sees the flag, or
//!    its registration came first and the wake reaches it (or it sees
//!    `cancelled` in its next lock section). It then drops its future and
//!    ends. A task's section that sees `cancelled`, or cancels itself (its
//!    pull met the source's error or panic), ends the task without polling
//!    its future again: the item taken in that section is dropped with the
//!    waiting items (`unstart`), and the refill's `look_again` reports the
//!    cancellation, so the task drops the item it held, which may never have
//!    been polled. So on one thread no item is first polled after the
//!    cancellation. A future that completes after the cancellation has its
//!    output dropped by its task; one whose task the executor drops unfinished
//!    is dropped in that drop, its destructor caught.
//! 6. **Spawning.** Spawns are counted under the state's lock and done by
//!    whoever holds the spawner's lock, never under the state's. A party that
//!    finds the spawner busy leaves its spawn to the holder, which looks again
//!    after releasing it: no counted task is forgotten, the spawner is never
//!    called by two threads at once, and one that polls the new task before
//!    returning cannot deadlock.
//!
//! `tests/loom_spawned.rs` model-checks these hand-offs with loom (the state's
//! mutex, the flags and the tasks' wakers go through [`crate::sync`]).
//!
//! # The rules, in the tasks
//!
//! No rule is written here: a lock section asks the [`Engine`], which
//! decides as it does in place, and then does what the answer says. The
//! state is generic over one parameter, [`SendSpec`]: the stream's types,
//! as in place, all `Send + 'static`. What differs from in place is only
//! where things happen:
//!
//! - **Fail fast** (`try_bounded`): an error the engine sees, from a pull or
//!   a completion, cancels in the same section ([`Io::cancel_running`]: rule
//!   5): the waiting items and the outcomes the order no longer lets out go
//!   with the section's leftovers, dropped after the lock, and every task is
//!   woken to drop its future. On purpose, an item that a task took in the
//!   same section as an error seen later in it is not started either.
//! - **`close()`**: a consumer-side section that closes the run and takes the
//!   source away (dropped after the lock: a spawned stream has no `reopen`).
//! - **Expiry at pickup** (`max_wait`) and **shedding**: the engine holds an
//!   item not run as an outcome; the section wakes the consumer if it can
//!   take it ([`Engine::take_ready`]).
//! - **The clock**: every lock section begins by forgetting the previous
//!   reading, so it is read at most once per section. The start stamp travels
//!   with the future in the task ([`Start`](crate::engine::Start)), and comes
//!   back with its output.
//! - **Moving limits**: a handle's change is applied by the engine in a
//!   section of its own, which ends with the dispatch (a raise sends a
//!   searcher; a raise of `waiting` alone sends a task to pull: rule 2, the
//!   refill). Before the first poll nothing is sent. The handle holds the
//!   state weakly (`LimitsTarget` in `shared.rs`).
//! - **Adaptive**: the engine feeds the controller in the section that
//!   completes the item, whose dispatch sends for tasks if it raised the
//!   limit.
//! - **Time budgets** (a run deadline, a start rate): nothing else wakes a
//!   stream whose futures are all blocked when a deadline passes or a token
//!   frees, so a stream with a timer has one more task, the alarm task
//!   (`alarm.rs`), spawned with the first worker. It sleeps on the timer
//!   until the instant the engine names ([`Engine::alarm`]), then takes the
//!   lock: the engine stops the run at its deadline (the waiting items held
//!   late, the running ones reported by the position each task runs, then
//!   cancelled as at a failure, rule 5), or the dispatch sends a task for
//!   the start a token freed. Every section that makes the engine need the
//!   alarm sooner than it sleeps wakes it (its waker is outside the lock,
//!   like the tasks'); it ends with the run. Any section that sees the
//!   deadline passed stops the run itself, before it starts or pulls
//!   anything.
//!
//! [`Engine`]: crate::engine::Engine
//! [`Engine::step`]: crate::engine::Engine::step
//! [`Engine::top_up`]: crate::engine::Engine::top_up
//! [`Engine::take_ready`]: crate::engine::Engine::take_ready
//! [`Engine::alarm`]: crate::engine::Engine::alarm
//! [`Io::cancel_running`]: crate::engine::Io::cancel_running

mod alarm;
mod shared;
mod source;
mod spawner;
mod state;
mod tasks;
mod worker;

use std::fmt;
use std::panic;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::stream::{FusedStream, Stream};

use self::shared::{Consumer, Shared};
use self::state::Handout;
#[cfg(doc)]
use crate::bounded::{BoundedBuffered, TryBoundedBuffered};
use crate::budget::Budgets;
use crate::engine::{Engine, SendSpec};
use crate::limits::{Limits, Signal};
use crate::stats::Stats;
use crate::sync::Arc;
use crate::time::Alarm;
use crate::timings::Timings;

#[cfg(feature = "smol")]
pub use self::spawner::SmolGlobal;
pub use self::spawner::Spawner;

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// A stream that can run spawned: its source, futures, outputs and errors are
/// `Send + 'static`, since they move to the executor's threads and outlive the
/// caller. What [`spawn_on`](crate::BoundedBuffered::spawn_on) asks of a
/// stream, in one bound; implemented for every form of [`BoundedBuffered`] and
/// [`TryBoundedBuffered`] whose parts are.
///
/// The source moves into the worker tasks: it and its `map` closures must own
/// what they capture (`move`, `Arc`), as a `tokio::spawn`ed future must.
///
/// Part of the stream's type; you never implement or call it.
pub trait Spawnable: Stream + sealed::Sealed {
    /// Moves the stream's parts into a shared state and its first worker
    /// task's spawner.
    #[doc(hidden)]
    fn spawn(self, executor: Box<dyn Spawner>) -> Spawned<Self::Item>;
}

/// Starts spawned mode with a never-polled stream's source and engine, the
/// engine moved here whole; `item` turns what the tasks settle into the
/// stream's items.
pub(crate) fn spawn<R: SendSpec, T: Send + 'static>(
    (source, engine, alarm): (Pin<Box<R::Source>>, Engine<R>, Option<Alarm>),
    executor: Box<dyn Spawner>,
    item: impl Fn(R::Item) -> T + Send + Sync + 'static,
) -> Spawned<T> {
    let settings = engine.settings().cloned();
    let shared = Arc::new(Shared::new(source, engine, alarm));
    if let Some(settings) = settings {
        // Handles taken before the switch now reach the tasks.
        settings.redirect(Signal::Spawned(Shared::limits_target(&shared)));
    }
    Spawned {
        shared: Box::new(Consumer::new(shared, item)),
        phase: Phase::New(executor),
    }
}

/// The consumer's view of the shared state, with the source's type erased.
trait Outlet<T>: Send + Sync {
    /// Installs the spawner and sends for the first task.
    fn start(&self, spawner: Box<dyn Spawner>);
    /// The next output, the end or a failure; `Pending` after registering the
    /// waker.
    fn poll_output(&self, cx: &mut Context<'_>) -> Poll<Handout<T>>;
    fn stats(&self) -> Stats;
    fn budgets(&self) -> Budgets;
    /// What the stream may still yield (see [`Stream::size_hint`]).
    fn size_hint(&self) -> (usize, Option<usize>);
    /// Stops pulling from the source; the rest finishes.
    fn close(&self);
    /// Cancels every task and drops the held outputs.
    fn stop(&self);
    /// A handle to the limits (every call, the same settings).
    fn limits(&self) -> Limits;
    /// Where the run is.
    fn state(&self) -> crate::engine::State;
    /// A copy of the time distributions, if timing is on.
    fn timings(&self) -> Option<Timings>;
}

/// Stream for the [`spawn_on`](BoundedBuffered::spawn_on) method.
///
/// Yields the outputs of futures that run as tasks on an executor, under the
/// budgets of the [`BoundedBuffered`] it was made from, and the same items:
/// `T` is that stream's item type (`Result<_, E>` after
/// [`try_bounded`](crate::BoundedStreamExt::try_bounded), `Result<_,
/// Expired<F>>` after [`max_wait`](BoundedBuffered::max_wait)). See
/// [`spawn_on`](BoundedBuffered::spawn_on).
#[must_use = "streams do nothing unless polled"]
pub struct Spawned<T> {
    shared: Box<dyn Outlet<T>>,
    phase: Phase,
}

enum Phase {
    /// Never polled: nothing spawned yet; the spawner waits here.
    New(Box<dyn Spawner>),
    Running,
    /// Returned `None`.
    Done,
    /// Re-raised a task's panic.
    Failed,
}

impl fmt::Debug for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::New(_) => "New",
            Phase::Running => "Running",
            Phase::Done => "Done",
            Phase::Failed => "Failed",
        })
    }
}

impl<T> Spawned<T> {
    /// Returns a snapshot of the counts the budgets bound; see [`Stats`].
    ///
    /// The counts are shared with the tasks and change while they run. An item
    /// counts as active from the moment a worker task takes it, in the same
    /// step as its start is checked against the budgets.
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
        self.shared.stats()
    }

    /// Stops taking items from the source; the running and waiting items
    /// finish, their outputs are yielded, and then the stream ends.
    ///
    /// The graceful stop, as [`BoundedBuffered::close`] in place (contract
    /// point 22), except that the source cannot be handed back: it is dropped
    /// here, right after the last item pulled. Called before the first poll,
    /// the stream spawns nothing, pulls nothing and just ends. It takes
    /// `&self`, works from any thread, and wakes a consumer parked on the
    /// stream if nothing is left to finish.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
    /// # async fn main() {
    /// let mut jobs = stream::iter(0..1_000u32)
    ///     .map(|n| async move { n })
    ///     .bounded(2, 3)
    ///     .spawn_on(tokio::runtime::Handle::current());
    /// assert!(jobs.next().await.is_some());
    /// jobs.close();
    /// let rest = jobs.by_ref().count().await;
    /// // Everything pulled was yielded, and nothing more was pulled.
    /// let stats = jobs.stats();
    /// assert_eq!(1 + rest as u64, stats.pulled);
    /// assert!(stats.pulled < 1_000);
    /// # }
    /// ```
    pub fn close(&self) {
        self.shared.close();
    }

    /// A handle to change this stream's `workers` and `waiting` while it runs,
    /// from any task or thread, as [`BoundedBuffered::limits`] in place (a
    /// handle taken before [`spawn_on`](BoundedBuffered::spawn_on) is the same
    /// handle); see [`Limits`] for what raising, lowering and pausing do.
    ///
    /// A raise of `workers` sends for a task at once: an idle one, or a new one
    /// (tasks grow on demand up to the limit in force). A raise of `waiting`
    /// has a task pull ahead at once: an idle one, else a busy one, whose
    /// future is then polled once more than it asked for (a spurious poll,
    /// which every future must allow). Pulling ahead is always done by a task,
    /// so a stream paused (`set_workers(0)`) before its first task was spawned
    /// pulls nothing until it is resumed. A lowering leaves the tasks
    /// above the new limit idle. The handle holds the stream's state weakly: kept
    /// after the stream is dropped, it changes nothing and keeps nothing alive.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
    /// # async fn main() {
    /// let mut jobs = stream::iter(0..100u32)
    ///     .map(|n| async move { n })
    ///     .bounded(1, 0)
    ///     .spawn_on(tokio::runtime::Handle::current());
    /// let limits = jobs.limits();
    /// std::thread::spawn(move || limits.set_workers(4)).join().unwrap();
    /// assert_eq!(jobs.by_ref().count().await, 100);
    /// let stats = jobs.stats();
    /// assert_eq!(stats.workers_limit, 4);
    /// assert!(stats.peak_active <= 4);
    /// # }
    /// ```
    pub fn limits(&self) -> Limits {
        self.shared.limits()
    }
}

impl<T> Spawned<T> {
    /// A copy of the time distributions if [`timed`](BoundedBuffered::timed)
    /// was called before [`spawn_on`](BoundedBuffered::spawn_on), `None`
    /// otherwise: the same three as in place (see [`Timings`]).
    ///
    /// The worker tasks share one clock reading per lock section: a task
    /// reads it when it takes an item (the start, and the wait of an item that
    /// waited) and when it hands an output over (the run); the consumer when
    /// it takes one (the time held). A duration is exact to within the time
    /// between the event and the lock section that records it: the task's
    /// poll of the future that completed, or the consumer's wake-up.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let mut jobs = stream::iter(0..4u32)
    ///     .map(|n| async move {
    ///         tokio::time::sleep(Duration::from_millis(10)).await;
    ///         n
    ///     })
    ///     .bounded(2, 2)
    ///     .timed()
    ///     .clock(|| tokio::time::Instant::now().into_std())
    ///     .spawn_on(tokio::runtime::Handle::current());
    /// while jobs.next().await.is_some() {}
    /// let timings = jobs.timings().expect("timed");
    /// assert_eq!(timings.run.count(), 4);
    /// assert_eq!(timings.run.max(), Duration::from_millis(10));
    /// # }
    /// ```
    pub fn timings(&self) -> Option<Timings> {
        self.shared.timings()
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
            Phase::New(_) => {
                if let Phase::New(spawner) = std::mem::replace(&mut this.phase, Phase::Running) {
                    this.shared.start(spawner);
                }
            }
            Phase::Running => {}
        }
        match this.shared.poll_output(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Handout::Output(output)) => Poll::Ready(Some(output)),
            Poll::Ready(Handout::End | Handout::Pending) => {
                this.phase = Phase::Done;
                Poll::Ready(None)
            }
            Poll::Ready(Handout::Failed(failure)) => {
                this.phase = Phase::Failed;
                match failure {
                    state::Failure::Panicked(payload) => panic::resume_unwind(payload),
                    state::Failure::Lost => panic!(
                        "a task of a `Spawned` stream was dropped by its executor before it \
                         finished (was the runtime shut down?): its items are lost"
                    ),
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if matches!(self.phase, Phase::Done) {
            return (0, Some(0));
        }
        self.shared.size_hint()
    }
}

impl<T> FusedStream for Spawned<T> {
    fn is_terminated(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }
}

impl<T> Drop for Spawned<T> {
    fn drop(&mut self) {
        self.shared.stop();
    }
}

impl<T> fmt::Debug for Spawned<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let budgets = self.shared.budgets();
        f.debug_struct("Spawned")
            .field("workers", &budgets.workers)
            .field("waiting", &budgets.waiting)
            .field("window", &budgets.window)
            .field("state", &self.shared.state())
            .field("stats", &self.shared.stats())
            .finish_non_exhaustive()
    }
}
