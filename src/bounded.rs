//! The [`BoundedBuffered`] adapter and its `poll_next`.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_core::stream::{FusedStream, Stream};
use pin_project_lite::pin_project;

use crate::adaptive::{Adjust, Controller, Verdict};
use crate::budget::Budgets;
use crate::clock::{Clocked, Clocking, Stamped, Untimed};
use crate::expiry::{Expired, Expiry, MaxWait};
use crate::failure::{Outputs, Policy};
use crate::held::Held;
use crate::limits::{self, Limits, Signal};
use crate::slots::Slots;
use crate::stats::Stats;
use crate::timings::Timings;

/// How many woken slots one `poll_next` may poll before it hands control back to
/// the executor (the same figure as tokio's per-task budget). First polls of newly
/// started futures are not counted: the worker and waiting budgets bound those.
const POLL_BUDGET: usize = 128;

pin_project! {
    /// Stream for the [`bounded`](crate::BoundedStreamExt::bounded) and
    /// [`try_bounded`](crate::BoundedStreamExt::try_bounded) methods.
    ///
    /// `P` is the failure policy: [`Outputs`] for `bounded` (every output is
    /// yielded), [`FailFast`](crate::FailFast) for `try_bounded` (the first error
    /// ends the run). `K` says whether the stream reads a clock: [`Untimed`] unless
    /// [`max_wait`](Self::max_wait), [`timed`](Self::timed) or
    /// [`clock`](Self::clock) made it [`Clocked`]. You name these only if you name
    /// the stream's type. See the [crate documentation](crate) for the budgets it
    /// enforces.
    #[must_use = "streams do nothing unless polled"]
    pub struct BoundedBuffered<S, P = Outputs, K = Untimed>
    where
        P: Policy<S>,
        K: Clocking,
    {
        #[pin]
        source: S,
        core: Core<S, P, K>,
    }
}

/// What the stream holds for an item until it is handed out: its output, or with
/// `max_wait` the output or the expiry.
pub(crate) type Outcome<S, P, K> =
    <<K as Clocking>::Expiry as Expiry>::Outcome<<P as Policy<S>>::Ok, <P as Policy<S>>::Source>;

/// What the stream yields.
pub(crate) type Item<S, P, K> = <P as Policy<S>>::Item<Outcome<S, P, K>>;

/// A never-polled stream taken apart by [`BoundedBuffered::into_parts`]: what
/// another driver (the spawned mode) needs to carry on exactly where it was.
pub(crate) struct Parts<S, P: Policy<S>, K> {
    pub(crate) source: S,
    /// The budgets, with any change a [`Limits`] handle made already applied.
    pub(crate) budgets: Budgets,
    /// [`BoundedBuffered::close`] was called.
    pub(crate) closed: bool,
    /// The handles' shared limits, if one was asked for: they must keep working.
    pub(crate) limits: Option<Arc<limits::Shared>>,
    /// The clock, with what it measures and the timings recorded (none yet).
    pub(crate) clock: K,
    /// The adaptive controller, if any.
    pub(crate) adaptive: Adjust<Output<S, P>>,
}

/// What a future returns, before the policy settles it.
type Output<S, P> = <<P as Policy<S>>::Future as Future>::Output;

/// Everything but the source: none of it is pinned (running futures sit in their
/// own pinned boxes), so the driving code is plain `&mut self` methods.
struct Core<S, P: Policy<S>, K: Clocking> {
    budgets: Budgets,
    phase: Phase,
    /// Why the source may not be pulled now: the `SOURCE_*` flags, 0 if it may.
    /// Atomic only so that [`BoundedBuffered::close`] can take `&self`; the
    /// driving code owns it through `&mut self` and reads it as a plain byte.
    source: AtomicU8,
    /// Items pulled and not yet started, each with the time it was pulled.
    waiting: VecDeque<(K::Stamp, P::Future)>,
    slots: Slots<Stamped<K::Stamp, P::Future>>,
    /// Futures started and not yet complete.
    active: usize,
    /// Outputs (and expired items) not yet handed out, each with the time it
    /// completed.
    held: Held<(K::Stamp, Outcome<S, P, K>)>,
    /// How many of the held outcomes are expired items (always 0 without
    /// `max_wait`): they count against the waiting budget, not the workers'.
    held_expired: usize,
    /// The error that ended the run, until it is yielded.
    failure: Option<P::Error>,
    clock: K,
    /// What the [`Limits`] handles share, once one was asked for.
    limits: OnceLock<Arc<limits::Shared>>,
    /// The adaptive controller, if any.
    adaptive: Adjust<Output<S, P>>,
    /// Peaks and totals; current counts are read off the parts above.
    stats: Stats,
}

/// The source returned `Pending` during the current `poll_next` and will wake the
/// consumer itself: asking it again before then is wasted work.
const SOURCE_PENDING: u8 = 1;
/// The source returned `None`.
const SOURCE_DONE: u8 = 2;
/// [`BoundedBuffered::close`] was called: take nothing more, finish the rest.
const SOURCE_CLOSED: u8 = 4;
/// The run failed: take nothing more, drop the rest.
const SOURCE_FAILED: u8 = 8;
/// No item will ever be pulled again.
const SOURCE_ENDED: u8 = SOURCE_DONE | SOURCE_CLOSED | SOURCE_FAILED;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Never polled: `ordered` may still be called.
    New,
    /// Between two calls of `poll_next`.
    Idle,
    /// Inside `poll_next`. Seen on entry only if a panic escaped the previous call.
    Polling,
    /// Returned `None`.
    Done,
}

impl<S, P: Policy<S>> BoundedBuffered<S, P, Untimed> {
    #[track_caller]
    pub(crate) fn new(source: S, workers: usize, waiting: usize) -> Self {
        assert!(
            workers > 0,
            "`bounded` needs at least one worker: with `workers == 0` no future could ever run"
        );
        Self {
            source,
            core: Core::new(Budgets::new(workers, waiting), Untimed),
        }
    }
}

impl<S, P: Policy<S>, K: Clocking> BoundedBuffered<S, P, K> {
    /// Yields outputs in input order, letting work run at most `window` items
    /// ahead of the oldest output not yet yielded.
    ///
    /// Every item between the oldest unyielded output and the newest started one
    /// is running or held, so `active + held <= window`. With `window ==
    /// workers` this behaves like `buffered(workers)`; a larger window lets the
    /// other workers keep going past a slow item, at the cost of holding up to
    /// `window` outputs. Contract points 3 and 5 of the
    /// [crate documentation](crate#what-the-adapter-guarantees) say exactly what
    /// holds. Held outputs live in a ring indexed by input position, which
    /// doubles as the span of started items grows, up to the power of two at or
    /// above `window`, and is then reused.
    ///
    /// # Panics
    ///
    /// If `window` is 0 (no item could ever start), or if the stream has already
    /// been polled (outputs may already have been handed out in completion
    /// order): contract point 11.
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
    /// let out: Vec<u64> = stream::iter([30, 10, 20])
    ///     .map(|ms| async move {
    ///         tokio::time::sleep(Duration::from_millis(ms)).await;
    ///         ms
    ///     })
    ///     .bounded(3, 0)
    ///     .ordered(3)
    ///     .collect()
    ///     .await;
    /// assert_eq!(out, [30, 10, 20]); // input order, though the first finished last
    /// # }
    /// ```
    #[track_caller]
    pub fn ordered(mut self, window: usize) -> Self {
        assert!(
            window > 0,
            "`ordered` needs a window of at least one item: with `window == 0` no item could ever start"
        );
        assert!(
            self.core.phase == Phase::New,
            "`ordered` must be called before the stream is first polled"
        );
        let core = &mut self.core;
        core.budgets = core.budgets.ordered(window);
        let slots = std::mem::replace(&mut core.slots, Slots::new(0));
        core.slots = slots.renew(core.budgets.workers.min(window));
        core.held = Held::ordered();
        self
    }

    /// Expires waiting items: when a worker frees up for an item that waited in
    /// the queue longer than `limit`, the item is not started. The stream then
    /// yields `Result<T, Expired<F>>` (`F` the source's future), with the expired
    /// item as an [`Expired`] in its place.
    ///
    /// - The time waited runs from the item's pull to its pickup; an item that
    ///   waited exactly `limit` still starts. An item pulled straight into a free
    ///   worker never waited and never expires.
    /// - An expired item is never polled: [`Expired::into_inner`] hands back its
    ///   untouched future. It takes no worker: the next waiting item is
    ///   considered at once. It is yielded in completion order, or at its input
    ///   position when [ordered](Self::ordered); until then it counts against the
    ///   waiting budget (unordered) or holds its place in the window (ordered).
    ///   [`Stats::expired`] counts them.
    /// - The check is made only at pickup: no timers, so the adapter stays
    ///   executor-agnostic, and an item waits until a worker is free for it even
    ///   if it expired long before. The clock is read at most once per
    ///   `poll_next` (see [`clock`](Self::clock)).
    ///
    /// Whether an expiry aborts the run or is a recorded per-item failure is the
    /// caller's decision: record it and go on, or [`close`](Self::close) or drop
    /// the stream when one arrives.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
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
    /// // One worker, 10 ms per job, 30 ms of patience: items 0 to 3 run, the rest
    /// // waited too long by the time the worker got to them.
    /// let outcomes: Vec<_> = stream::iter(0..6u32)
    ///     .map(|n| async move {
    ///         tokio::time::sleep(Duration::from_millis(10)).await;
    ///         n
    ///     })
    ///     .bounded(1, 5)
    ///     .max_wait(Duration::from_millis(30))
    ///     .clock(|| tokio::time::Instant::now().into_std())
    ///     .map(|outcome| outcome.map_err(|expired| expired.waited()))
    ///     .collect()
    ///     .await;
    /// let ms = Duration::from_millis;
    /// assert_eq!(outcomes, [Ok(0), Ok(1), Ok(2), Ok(3), Err(ms(40)), Err(ms(40))]);
    /// # }
    /// ```
    #[track_caller]
    pub fn max_wait(self, limit: Duration) -> BoundedBuffered<S, P, Clocked<MaxWait>> {
        self.reclock(
            |clock| clock.into_clocked().with_max_wait(limit),
            "max_wait",
        )
    }

    /// Records where items spend their time: how long each waited (pull to
    /// start), ran (start to completion) and was held (completion to hand-out),
    /// read with [`timings`](Self::timings).
    ///
    /// Off by default, because reading a clock costs more than the adapter's own
    /// work per item. When on, the clock is read at most once per `poll_next`, and
    /// every event that call handles gets that reading: a duration is exact to
    /// within the time one `poll_next` takes (the first polls of the futures it
    /// starts, the woken futures it polls). The three histograms are allocated
    /// once, here; recording allocates nothing.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
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
    ///     .clock(|| tokio::time::Instant::now().into_std());
    /// while jobs.next().await.is_some() {}
    /// let timings = jobs.timings().expect("timed");
    /// assert_eq!(timings.run.max(), Duration::from_millis(10));
    /// // Two started at once, two waited for the first two to finish.
    /// assert_eq!(timings.wait.max(), Duration::from_millis(10));
    /// assert_eq!(timings.wait.count(), 4);
    /// # }
    /// ```
    #[track_caller]
    pub fn timed(self) -> BoundedBuffered<S, P, Clocked<K::Expiry>> {
        self.reclock(|clock| clock.into_clocked().with_timings(), "timed")
    }

    /// Replaces `Instant::now` as the clock of [`max_wait`](Self::max_wait) and
    /// [`timed`](Self::timed), for tests and simulations, in either order with
    /// them. On tokio's paused clock:
    ///
    /// ```
    /// # use bounded_buffered::BoundedStreamExt;
    /// # use futures::{StreamExt, stream};
    /// # let jobs = stream::iter(0..1u32).map(|n| async move { n }).bounded(1, 0);
    /// let jobs = jobs.timed().clock(|| tokio::time::Instant::now().into_std());
    /// # drop(jobs);
    /// ```
    ///
    /// Alone, it changes nothing: a clock nothing asks for is never read.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    #[track_caller]
    pub fn clock(self, now: fn() -> Instant) -> BoundedBuffered<S, P, Clocked<K::Expiry>> {
        self.reclock(|clock| clock.into_clocked().with_clock(now), "clock")
    }

    /// The same stream with another clocking, before the first poll.
    /// Lets `controller` set the `workers` limit from what the items show: each
    /// item's run time (start to completion, on the stream's
    /// [`clock`](Self::clock)), the [`Verdict`] `classify` gives its output
    /// (success, back-pressure such as an HTTP 429 or 503, or ignore), and
    /// whether the limit was reached. `classify` may return a `bool` instead,
    /// `true` meaning back-pressure. An ignored output, and an item that never
    /// completes (expired, or cancelled by fail fast, `close` or drop), is not
    /// heard of: it feeds neither the run times nor the back-pressure. The
    /// limit the controller returns applies at once, as a
    /// [`Limits`](crate::Limits) handle's would. [`Aimd`](crate::Aimd) is the
    /// controller the crate ships; [`Controller`] lets you plug in your own.
    ///
    /// The controller's [`initial`](Controller::initial) limit replaces the
    /// `workers` given to `bounded`; [`limits`](Self::limits) shows the current
    /// value. The controller owns `workers`: a handle's `set_workers` lasts
    /// until its next decision (`set_waiting` is the handle's alone). A limit
    /// of 0 from a controller is taken as 1, since only a completion could
    /// raise it again. The clock is read once per `poll_next` that starts or
    /// completes an item; the stream allocates nothing per item for this.
    /// Must be called before the first poll.
    ///
    /// # Panics
    ///
    /// If the stream was already polled.
    ///
    /// # Examples
    ///
    /// A service that answers "busy" past 8 requests in flight:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{Aimd, BoundedStreamExt};
    /// use futures::{StreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let in_flight = Arc::new(AtomicUsize::new(0));
    /// let call = move |_| {
    ///     let in_flight = Arc::clone(&in_flight);
    ///     async move {
    ///         if in_flight.fetch_add(1, SeqCst) >= 8 {
    ///             in_flight.fetch_sub(1, SeqCst);
    ///             return Err("busy");
    ///         }
    ///         tokio::time::sleep(Duration::from_millis(10)).await;
    ///         in_flight.fetch_sub(1, SeqCst);
    ///         Ok(())
    ///     }
    /// };
    /// let mut replies = stream::iter(0..2_000)
    ///     .map(call)
    ///     .bounded(1, 0)
    ///     .adaptive(Aimd::new(1, 100), |reply: &Result<(), &str>| reply.is_err())
    ///     .clock(|| tokio::time::Instant::now().into_std());
    /// let limits = replies.limits();
    /// let mut busy = 0;
    /// while let Some(reply) = replies.next().await {
    ///     busy += usize::from(reply.is_err());
    /// }
    /// // The service gives no warning before it refuses (its run time never
    /// // rises): the limit finds 8 from the refusals, and each probe of 9
    /// // now and then costs one "busy" answer (19 of 2,000 here).
    /// assert!(busy <= 20, "{busy}");
    /// assert_eq!(limits.workers(), 8);
    /// # }
    /// ```
    #[track_caller]
    pub fn adaptive<C, F, V>(
        self,
        controller: C,
        classify: F,
    ) -> BoundedBuffered<S, P, Clocked<K::Expiry>>
    where
        C: Controller + 'static,
        F: FnMut(&Output<S, P>) -> V + Send + 'static,
        V: Into<Verdict> + 'static,
        Output<S, P>: 'static,
    {
        let mut stream = self.reclock(|clock| clock.into_clocked().with_run_times(), "adaptive");
        let core = &mut stream.core;
        core.adaptive = Adjust::new(controller, classify);
        if let Some(initial) = core.adaptive.initial() {
            core.budgets.set(initial, core.budgets.waiting);
            if let Some(shared) = core.limits.get() {
                shared
                    .workers
                    .store(initial, std::sync::atomic::Ordering::SeqCst);
            }
        }
        stream
    }

    #[track_caller]
    fn reclock<K2: Clocking>(
        self,
        clock: impl FnOnce(K) -> K2,
        method: &str,
    ) -> BoundedBuffered<S, P, K2> {
        assert!(
            self.core.phase == Phase::New,
            "`{method}` must be called before the stream is first polled"
        );
        let core = self.core;
        let budgets = core.budgets;
        let mut reclocked = Core::new(budgets, clock(core.clock));
        *reclocked.source.get_mut() = core.source.into_inner();
        // The same wake tree: `Limits` handles taken already keep working.
        reclocked.slots = core.slots.renew(
            budgets
                .window
                .map_or(budgets.workers, |window| budgets.workers.min(window)),
        );
        if budgets.window.is_some() {
            reclocked.held = Held::ordered();
        }
        reclocked.limits = core.limits;
        reclocked.adaptive = core.adaptive;
        BoundedBuffered {
            source: self.source,
            core: reclocked,
        }
    }

    /// A copy of the time distributions if [`timed`](Self::timed) was called,
    /// `None` otherwise. See [`Timings`].
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// let jobs = stream::iter(0..3u32).map(|n| async move { n }).bounded(2, 0);
    /// assert!(jobs.timings().is_none());
    /// assert!(jobs.timed().timings().is_some());
    /// ```
    pub fn timings(&self) -> Option<Timings> {
        self.core.clock.timings()
    }

    /// Takes the adapter apart before it was ever polled, for a driver that runs
    /// the same budgets elsewhere (the spawned mode).
    ///
    /// # Panics
    ///
    /// If the stream was already polled: its in-flight work cannot move.
    #[track_caller]
    pub(crate) fn into_parts(self) -> Parts<S, P, K> {
        assert!(
            self.core.phase == Phase::New,
            "a `BoundedBuffered` can change mode only before it is first polled"
        );
        let core = self.core;
        let mut budgets = core.budgets;
        let limits = core.limits.into_inner();
        if let Some(shared) = &limits {
            // A handle may have moved them since; nothing applied them yet.
            let (workers, waiting) = shared.get();
            budgets.set(workers, waiting);
        }
        Parts {
            source: self.source,
            budgets,
            closed: core.source.into_inner() & SOURCE_CLOSED != 0,
            limits,
            clock: core.clock,
            adaptive: core.adaptive,
        }
    }

    /// Stops taking items from the source; the stream then finishes every running
    /// and waiting item, yields their outputs, and ends.
    ///
    /// This is the graceful stop (shutdown, a quota reached, a bad item seen by the
    /// consumer): nothing already pulled is lost, and nothing more is pulled. An
    /// item is either pulled, and its output is yielded, or still in the source:
    /// after the stream has ended, [`into_inner`](Self::into_inner) hands back the
    /// source positioned right after the last item pulled. Called before the first
    /// poll, the stream pulls nothing and just ends. With
    /// [`try_bounded`](crate::BoundedStreamExt::try_bounded), an error during the
    /// drain still fails fast.
    ///
    /// It takes `&self`, so it works on an `Unpin` stream, through a
    /// `Pin<&mut _>` (`stream.as_mut().close()` on a `Pin<Box<_>>`), and from a
    /// `select!` branch between two polls. It wakes the task that last polled the
    /// stream, so a stream waiting only on its source ends without another wake.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(2, 3);
    /// assert_eq!(jobs.next().await, Some(0));
    /// // 2 running and 3 waiting were pulled besides the one handed out.
    /// jobs.close();
    /// let rest: Vec<u32> = jobs.by_ref().collect().await;
    /// assert_eq!(rest, [1, 2, 3, 4, 5]); // every pulled item, and nothing more
    /// let source = jobs.into_inner();
    /// assert_eq!(source.size_hint(), (94, Some(94))); // resumes at item 6
    /// # });
    /// ```
    pub fn close(&self) {
        self.core.source.fetch_or(SOURCE_CLOSED, Relaxed);
        self.core.slots.wake_consumer();
    }

    /// Returns a snapshot of the counts the budgets bound; see [`Stats`].
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut doubled = stream::iter(0..8u32)
    ///     .map(|n| async move { n * 2 })
    ///     .bounded(2, 3);
    /// assert_eq!(doubled.next().await, Some(0));
    /// // Before handing out the first output, the freed worker was refilled and
    /// // the waiting queue topped up: 2 running or held, 3 waiting.
    /// let stats = doubled.stats();
    /// assert_eq!(stats.active + stats.held, 2);
    /// assert_eq!((stats.waiting, stats.pulled), (3, 6));
    /// # });
    /// ```
    pub fn stats(&self) -> Stats {
        let core = &self.core;
        let (workers_limit, waiting_limit) = match core.limits.get() {
            Some(shared) => shared.get(),
            None => (core.budgets.workers, core.budgets.waiting),
        };
        Stats {
            active: core.active,
            waiting: core.waiting.len(),
            held: core.held.len(),
            workers_limit,
            waiting_limit,
            ..core.stats
        }
    }

    /// A handle to change this stream's `workers` and `waiting` while it runs,
    /// from any task or thread; see [`Limits`] for what raising, lowering and
    /// pausing do. Every call returns a handle to the same limits.
    ///
    /// A stream whose limits never change pays nothing for this: the handle
    /// signals the stream through the wake tree it looks at anyway.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..20u32).map(|n| async move { n }).bounded(4, 4);
    /// let limits = jobs.limits();
    /// std::thread::spawn(move || limits.set_workers(1)).join().unwrap();
    /// assert_eq!(jobs.next().await, Some(0));
    /// let stats = jobs.stats();
    /// assert_eq!((stats.workers_limit, stats.peak_active), (1, 1));
    /// # });
    /// ```
    pub fn limits(&self) -> Limits {
        let core = &self.core;
        let shared = core.limits.get_or_init(|| {
            let control = Signal::InPlace(core.slots.control());
            Arc::new(limits::Shared::new(
                core.budgets.workers,
                core.budgets.waiting,
                control,
            ))
        });
        Limits::new(Arc::clone(shared))
    }

    /// Acquires a reference to the source stream.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// let jobs = stream::iter(0..3).map(|n| async move { n }).bounded(2, 0);
    /// assert_eq!(jobs.get_ref().size_hint(), (3, Some(3)));
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.source
    }

    /// Acquires a mutable reference to the source stream.
    ///
    /// Polling the source through this reference takes its items away from the
    /// adapter; its budgets then no longer describe the source's position.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::channel::mpsc;
    /// use futures::StreamExt;
    ///
    /// let (sender, receiver) = mpsc::unbounded::<u32>();
    /// let mut jobs = receiver.map(|n| async move { n }).bounded(2, 0);
    /// jobs.get_mut().get_mut().close(); // reach the receiver inside the `map`
    /// assert!(sender.is_closed());
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.source
    }

    /// Acquires a pinned mutable reference to the source stream.
    ///
    /// The warning on [`get_mut`](Self::get_mut) applies here too.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::pin::pin;
    ///
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// let jobs = pin!(stream::iter(0..3).map(|n| async move { n }).bounded(2, 0));
    /// assert_eq!(jobs.get_pin_mut().size_hint(), (3, Some(3)));
    /// ```
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut S> {
        self.project().source
    }

    /// Consumes the adapter and returns the source stream.
    ///
    /// Running futures, waiting items and held outputs are dropped. The source is
    /// positioned right after the last item the adapter pulled; after
    /// [`close`](Self::close) and the end of the stream, that is every item whose
    /// output was yielded.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..10).map(|n| async move { n }).bounded(2, 1);
    /// assert!(jobs.next().await.is_some());
    /// // 2 started and 1 waiting were pulled besides the one handed out (4 in
    /// // all); they are dropped, and the source resumes after them.
    /// let rest = jobs.into_inner();
    /// assert_eq!(rest.size_hint(), (6, Some(6)));
    /// # });
    /// ```
    pub fn into_inner(self) -> S {
        self.source
    }
}

impl<S, P: Policy<S>, K: Clocking> Stream for BoundedBuffered<S, P, K>
where
    S: Stream,
{
    type Item = Item<S, P, K>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        this.core.poll_next(this.source, cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let core = &self.core;
        if core.phase == Phase::Done {
            return (0, Some(0));
        }
        // Everything running, waiting or held will be yielded (unless a failure
        // cuts it short), plus the error, plus whatever the source still has.
        let in_flight = core
            .active
            .saturating_add(core.waiting.len())
            .saturating_add(core.held.len())
            .saturating_add(usize::from(core.failure.is_some()));
        let (lower, upper) = if core.source.load(Relaxed) & SOURCE_ENDED != 0 {
            (0, Some(0))
        } else {
            self.source.size_hint()
        };
        if P::FALLIBLE {
            // Any item may be an error that ends the run: one more output at least.
            return (
                usize::from(in_flight > 0 || lower > 0),
                upper.and_then(|upper| upper.checked_add(in_flight)),
            );
        }
        (
            lower.saturating_add(in_flight),
            upper.and_then(|upper| upper.checked_add(in_flight)),
        )
    }
}

impl<S, P: Policy<S>, K: Clocking> FusedStream for BoundedBuffered<S, P, K>
where
    S: Stream,
{
    fn is_terminated(&self) -> bool {
        self.core.phase == Phase::Done
    }
}

impl<S, P: Policy<S>, K: Clocking> fmt::Debug for BoundedBuffered<S, P, K>
where
    S: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let budgets = &self.core.budgets;
        f.debug_struct("BoundedBuffered")
            .field("source", &self.source)
            .field("workers", &budgets.workers)
            .field("waiting", &budgets.waiting)
            .field("window", &budgets.window)
            .field("failed", &self.core.failure.is_some())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<S, P: Policy<S>, K: Clocking> Core<S, P, K> {
    fn new(budgets: Budgets, clock: K) -> Self {
        Self {
            budgets,
            phase: Phase::New,
            source: AtomicU8::new(0),
            waiting: VecDeque::new(),
            slots: Slots::new(budgets.workers),
            active: 0,
            held: Held::unordered(),
            held_expired: 0,
            failure: None,
            clock,
            limits: OnceLock::new(),
            adaptive: Adjust::none(),
            stats: Stats::default(),
        }
    }

    fn poll_next(
        &mut self,
        source: Pin<&mut S>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Item<S, P, K>>> {
        match self.phase {
            Phase::Done => return Poll::Ready(None),
            Phase::Polling => panic!(
                "`BoundedBuffered` polled after a panic escaped from one of its futures or its source"
            ),
            Phase::New | Phase::Idle => self.phase = Phase::Polling,
        }
        let poll = self.drive(source, cx);
        self.phase = match poll {
            Poll::Ready(None) => Phase::Done,
            _ => Phase::Idle,
        };
        poll
    }

    fn drive(
        &mut self,
        mut source: Pin<&mut S>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Item<S, P, K>>> {
        self.slots.unpark();
        self.clock.begin_poll();
        *self.source.get_mut() &= !SOURCE_PENDING;
        let mut budget = POLL_BUDGET;
        loop {
            // 1. Poll the futures that were woken, and only those. An error stops
            //    the pass: from then on no future is polled again.
            if self.slots.has_woken() {
                let expired = self.held_expired();
                let Self {
                    budgets,
                    slots,
                    active,
                    held,
                    clock,
                    limits,
                    adaptive,
                    stats,
                    ..
                } = self;
                let mut failure = None;
                let mut limits_changed = false;
                slots.poll_woken(
                    &mut budget,
                    |position, output| {
                        *active -= 1;
                        let governed = Governed {
                            adaptive: &mut *adaptive,
                            budgets: &mut *budgets,
                            limits: &*limits,
                            active: *active,
                            expired,
                        };
                        match complete::<S, P, K>(held, clock, stats, governed, position, output) {
                            Ok(()) => true,
                            Err(error) => {
                                failure = Some(error);
                                false
                            }
                        }
                    },
                    || limits_changed = true,
                );
                // A `Limits` handle changed the limits: apply them before
                // anything else starts (cold: only a handle signals this).
                if limits_changed {
                    self.apply_limits();
                }
                if let Some(error) = failure {
                    self.fail(error);
                }
            }

            // 2. Hand out an output. Taking it frees budget, so refill first: the
            //    freed worker is busy again while the consumer handles the output.
            if let Some((completed, outcome)) = self.held.pop() {
                self.clock.handed_out(completed);
                if K::Expiry::is_expired(&outcome) {
                    self.held_expired -= 1;
                }
                self.fill(source.as_mut(), cx);
                return Poll::Ready(Some(P::ok(outcome)));
            }

            // 3. Start what the budgets allow and top up the waiting queue. A new
            //    future may finish or wake itself in its first poll, and an item
            //    may expire: go round again.
            if self.fill(source.as_mut(), cx) {
                continue;
            }

            // 4. A failure, once every output that may precede it was handed out:
            //    yield it (the next call ends the stream: nothing runs or waits).
            if let Some(error) = self.failure.take() {
                return Poll::Ready(Some(P::err(error)));
            }

            // 5. The end: the source is exhausted or closed, and nothing runs or
            //    waits (and so nothing is held either).
            if *self.source.get_mut() & SOURCE_ENDED != 0
                && self.waiting.is_empty()
                && self.active == 0
            {
                return Poll::Ready(None);
            }

            // 6. Nothing to hand out. Yield if this call did its share of work;
            //    sleep unless a future was woken meanwhile.
            if budget == 0 {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if !self.slots.has_woken() && self.slots.park(cx.waker()) {
                return Poll::Pending;
            }
        }
    }

    /// Starts items while the budgets allow (oldest waiting item first, then the
    /// source), then pulls items into the waiting queue until it is full. Returns
    /// whether it started (or expired) anything. After a failure it does nothing:
    /// the queue is empty and the source is not pulled.
    #[inline(always)]
    fn fill(&mut self, mut source: Pin<&mut S>, cx: &mut Context<'_>) -> bool {
        let mut started = false;
        while self
            .budgets
            .may_start(self.active, self.held.len(), self.held_expired())
        {
            let future = match self.waiting.pop_front() {
                Some((pulled, future)) => {
                    // Expiry is checked at pickup, and only there.
                    if let Some((proof, waited)) = self.clock.pick_up(pulled) {
                        self.expire(proof, waited, future);
                        started = true;
                        continue;
                    }
                    future
                }
                None => match self.pull(source.as_mut(), cx) {
                    Some(future) => {
                        self.clock.started_at_once();
                        future
                    }
                    None => break,
                },
            };
            self.start(future);
            started = true;
        }
        while self
            .budgets
            .may_queue(self.waiting.len(), self.held_expired())
        {
            let Some(future) = self.pull(source.as_mut(), cx) else {
                break;
            };
            let pulled = self.clock.stamp_pulled();
            self.waiting.push_back((pulled, future));
            self.stats.peak_waiting = self.stats.peak_waiting.max(self.waiting.len());
        }
        started
    }

    /// Held outcomes that are expired items: a constant 0 without `max_wait`.
    #[inline(always)]
    fn held_expired(&self) -> usize {
        if <K::Expiry as Expiry>::EXPIRES {
            self.held_expired
        } else {
            0
        }
    }

    /// Hands a waiting item that waited too long to the consumer, unstarted.
    #[inline(never)]
    fn expire(&mut self, proof: <K::Expiry as Expiry>::Proof, waited: Duration, future: P::Future) {
        let position = self.held.begin();
        let expired = Expired::new(P::into_source(future), waited);
        let stamp = self.clock.stamp();
        self.held
            .complete(position, (stamp, K::Expiry::expired(proof, expired)));
        self.held_expired += 1;
        self.stats.expired += 1;
        self.stats.peak_held = self.stats.peak_held.max(self.held.len());
    }

    #[inline(always)]
    fn pull(&mut self, source: Pin<&mut S>, cx: &mut Context<'_>) -> Option<P::Future> {
        if *self.source.get_mut() != 0 {
            return None;
        }
        match P::poll_source(source, cx) {
            Poll::Ready(Some(Ok(future))) => {
                self.stats.pulled += 1;
                Some(future)
            }
            Poll::Ready(Some(Err(error))) => {
                self.stats.pulled += 1;
                self.fail(error);
                None
            }
            Poll::Ready(None) => {
                *self.source.get_mut() |= SOURCE_DONE;
                None
            }
            Poll::Pending => {
                *self.source.get_mut() |= SOURCE_PENDING;
                None
            }
        }
    }

    #[inline(always)]
    fn start(&mut self, future: P::Future) {
        let position = self.held.begin();
        self.active += 1;
        self.stats.peak_active = self.stats.peak_active.max(self.active);
        let running = Stamped::new(self.clock.stamp(), future);
        if let Poll::Ready(output) = self.slots.start(running, position) {
            self.active -= 1;
            let expired = self.held_expired();
            let Self {
                budgets,
                held,
                clock,
                limits,
                adaptive,
                stats,
                active,
                ..
            } = self;
            let governed = Governed {
                adaptive,
                budgets,
                limits,
                active: *active,
                expired,
            };
            if let Err(error) = complete::<S, P, K>(held, clock, stats, governed, position, output)
            {
                self.fail(error);
            }
        }
    }

    /// Applies the limits a [`Limits`] handle set.
    #[cold]
    fn apply_limits(&mut self) {
        if let Some(shared) = self.limits.get() {
            let (workers, waiting) = shared.get();
            self.budgets.set(workers, waiting);
        }
    }

    /// Fails fast (see [`crate::failure`]): records `error`, stops pulling and
    /// starting, drops every running future and waiting item now, and keeps only
    /// the held outputs that may still be yielded in order.
    #[cold]
    fn fail(&mut self, error: P::Error) {
        // First the record, so that a destructor panicking below leaves a stream
        // that takes nothing more (it refuses to be polled again anyway).
        *self.source.get_mut() |= SOURCE_FAILED;
        self.failure = Some(error);
        self.waiting.clear();
        self.active -= self.slots.cancel_all();
        self.held.keep_in_order_prefix(drop);
        self.held_expired = self
            .held
            .count(|(_, outcome)| K::Expiry::is_expired(outcome));
    }
}

/// What a completion may change besides the held outputs: the `workers` limit,
/// through an adaptive controller.
struct Governed<'a, O> {
    adaptive: &'a mut Adjust<O>,
    budgets: &'a mut Budgets,
    limits: &'a OnceLock<Arc<limits::Shared>>,
    /// Futures still running, this one no longer counted.
    active: usize,
    /// Held outcomes that are expired items.
    expired: usize,
}

/// Settles the output of the item at `position`: stores it for the consumer, or
/// hands back the error that ends the run.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn complete<S, P: Policy<S>, K: Clocking>(
    held: &mut Held<(K::Stamp, Outcome<S, P, K>)>,
    clock: &mut K,
    stats: &mut Stats,
    governed: Governed<'_, Output<S, P>>,
    position: u64,
    (started, output): (K::Stamp, Output<S, P>),
) -> Result<(), P::Error> {
    stats.completed += 1;
    let completed = clock.completed(started);
    // Only a clock that measures runs answers: the branch is gone from a
    // stream without one.
    if let Some(run) = clock.run_of(started, completed) {
        let Governed {
            adaptive,
            budgets,
            limits,
            active,
            expired,
        } = governed;
        // Before it completed, `active + 1` ran beside the same outputs held.
        adaptive.observe(
            &output,
            run,
            (active + 1, held.len(), expired),
            budgets,
            limits,
        );
    }
    let output = P::settle(output)?;
    held.complete(position, (completed, K::Expiry::done(output)));
    stats.peak_held = stats.peak_held.max(held.len());
    Ok(())
}
