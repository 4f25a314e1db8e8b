//! The in-place engine shared by [`BoundedBuffered`](crate::BoundedBuffered) and
//! [`TryBoundedBuffered`](crate::TryBoundedBuffered): [`Core`] holds everything
//! but the source, and its `poll_next` drives the source, the worker slots, the
//! waiting queue and the held outputs under the budgets. The public types only
//! fix the failure policy and convert what `poll_next` settles into their items.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::adaptive::{Adjust, Controller};
use crate::budget::Budgets;
use crate::clock::{Clocked, Clocking, Stamped, Untimed};
use crate::expiry::{Expired, Unstarted};
use crate::failure::Policy;
use crate::held::Held;
use crate::limits::{self, Limits, Signal};
use crate::slots::Slots;
use crate::stats::{self, Stats};
use crate::timings::Timings;

/// How many woken slots one `poll_next` may poll before it hands control back to
/// the executor (the same figure as tokio's per-task budget). First polls of newly
/// started futures are not counted: the worker and waiting budgets bound those.
const POLL_BUDGET: usize = 128;

/// What the stream holds for an item until it is handed out: the settled
/// output, or the item itself if it came back unstarted (`N`: never, without
/// `max_wait`).
pub(crate) type Outcome<S, P, N> = Result<<P as Policy<S>>::Ok, N>;

/// What `poll_next` settles an item to: the outcome, or (fail fast) the error
/// that ended the run. The public types convert it into their items.
pub(crate) type Settled<S, P, N> = <P as Policy<S>>::Item<Outcome<S, P, N>>;

/// A never-polled stream taken apart by [`Core::into_parts`]: what another
/// driver (the spawned mode) needs to carry on exactly where it was.
pub(crate) struct Parts<S, P: Policy<S>, K> {
    pub(crate) source: Pin<Box<S>>,
    /// The budgets, with any change a [`Limits`] handle made already applied.
    pub(crate) budgets: Budgets,
    /// `close` was called.
    pub(crate) closed: bool,
    /// The handles' shared limits, if one was asked for: they must keep working.
    pub(crate) limits: Option<Arc<limits::Shared>>,
    /// The clock, with what it measures and the timings recorded (none yet).
    pub(crate) clock: K,
    /// The adaptive controller, if any.
    pub(crate) adaptive: Adjust<Output<S, P>>,
}

/// What a future returns, before the policy settles it.
pub(crate) type Output<S, P> = <<P as Policy<S>>::Future as Future>::Output;

/// Everything but the source: none of it is pinned (running futures sit in their
/// own pinned boxes), so the driving code is plain `&mut self` methods.
pub(crate) struct Core<S, P: Policy<S>, K: Clocking, N> {
    budgets: Budgets,
    phase: Phase,
    /// Why the source may not be pulled now: the `SOURCE_*` flags, 0 if it may.
    /// Atomic only so that `close` can take `&self`; the driving code owns it
    /// through `&mut self` and reads it as a plain byte.
    source: AtomicU8,
    /// Items pulled and not yet started, each with the time it was pulled.
    waiting: VecDeque<(K::Stamp, P::Future)>,
    slots: Slots<Stamped<K::Stamp, P::Future>>,
    /// Futures started and not yet complete.
    active: usize,
    /// Outputs (and expired items) not yet handed out, each with the time it
    /// completed.
    held: Held<(K::Stamp, Outcome<S, P, N>)>,
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

/// Nothing in the core is ever pinned in place: the futures it runs sit in
/// pinned boxes of their own (`Slots`), and waiting items and held outputs are
/// only moved, never polled where they lie. So the stream is `Unpin` whatever
/// its items are, and can be polled, stored and resumed without `pin!`.
impl<S, P: Policy<S>, K: Clocking, N> Unpin for Core<S, P, K, N> {}

/// The source returned `Pending` during the current `poll_next` and will wake the
/// consumer itself: asking it again before then is wasted work.
const SOURCE_PENDING: u8 = 1;
/// The source returned `None`.
const SOURCE_DONE: u8 = 2;
/// `close` was called: take nothing more, finish the rest.
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

impl<S, P: Policy<S>> Core<S, P, Untimed, std::convert::Infallible> {
    /// The core of a stream just made by `bounded` or `try_bounded`.
    #[track_caller]
    pub(crate) fn bounded(workers: usize, waiting: usize) -> Self {
        assert!(
            workers > 0,
            "`bounded` needs at least one worker: with `workers == 0` no future could ever run"
        );
        Core::new(Budgets::new(workers, waiting), Untimed)
    }
}

/// What the public types' builder methods and accessors do, before and
/// between polls.
impl<S, P: Policy<S>, K: Clocking, N> Core<S, P, K, N> {
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

    /// See `BoundedBuffered::ordered`.
    #[track_caller]
    pub(crate) fn ordered(mut self, window: usize) -> Self {
        assert!(
            window > 0,
            "`ordered` needs a window of at least one item: with `window == 0` no item could ever start"
        );
        self.assert_new("ordered");
        self.budgets = self.budgets.ordered(window);
        let slots = std::mem::replace(&mut self.slots, Slots::new(0));
        self.slots = slots.renew(self.budgets.workers.min(window));
        self.held = Held::ordered();
        self
    }

    #[track_caller]
    fn assert_new(&self, method: &str) {
        assert!(
            self.phase == Phase::New,
            "`{method}` must be called before the stream is first polled"
        );
    }

    /// The same core with another clocking and what comes back unstarted, before
    /// the first poll.
    #[track_caller]
    pub(crate) fn reclock<K2: Clocking, N2>(
        self,
        clock: impl FnOnce(K) -> K2,
        method: &str,
    ) -> Core<S, P, K2, N2> {
        self.assert_new(method);
        let budgets = self.budgets;
        let mut reclocked = Core::new(budgets, clock(self.clock));
        *reclocked.source.get_mut() = self.source.into_inner();
        // The same wake tree: `Limits` handles taken already keep working.
        reclocked.slots = self.slots.renew(
            budgets
                .window
                .map_or(budgets.workers, |window| budgets.workers.min(window)),
        );
        if budgets.window.is_some() {
            reclocked.held = Held::ordered();
        }
        reclocked.limits = self.limits;
        reclocked.adaptive = self.adaptive;
        reclocked
    }

    /// See `BoundedBuffered::max_wait`.
    #[track_caller]
    pub(crate) fn max_wait<N2>(self, limit: Duration) -> Core<S, P, Clocked, N2> {
        self.reclock(
            |clock| clock.into_clocked().with_max_wait(limit),
            "max_wait",
        )
    }

    /// See `BoundedBuffered::timed`.
    #[track_caller]
    pub(crate) fn timed(self) -> Core<S, P, Clocked, N> {
        self.reclock(|clock| clock.into_clocked().with_timings(), "timed")
    }

    /// See `BoundedBuffered::clock`.
    #[track_caller]
    pub(crate) fn clock(
        self,
        now: impl Fn() -> Instant + Send + Sync + 'static,
    ) -> Core<S, P, Clocked, N> {
        self.reclock(|clock| clock.into_clocked().with_clock(now), "clock")
    }

    /// See `BoundedBuffered::adaptive`.
    #[track_caller]
    pub(crate) fn adaptive<C, F>(self, controller: C, is_overload: F) -> Core<S, P, Clocked, N>
    where
        C: Controller,
        F: FnMut(&Output<S, P>) -> bool + Send + 'static,
    {
        let mut core = self.reclock(|clock| clock.into_clocked().with_run_times(), "adaptive");
        core.adaptive = Adjust::new(controller, is_overload);
        if let Some(initial) = core.adaptive.initial() {
            core.budgets.set(initial, core.budgets.waiting);
            if let Some(shared) = core.limits.get() {
                shared
                    .workers
                    .store(initial, std::sync::atomic::Ordering::SeqCst);
            }
        }
        core
    }

    pub(crate) fn timings(&self) -> Option<Timings> {
        self.clock.timings()
    }

    /// Takes the core apart before it was ever polled, for a driver that runs
    /// the same budgets elsewhere (the spawned mode).
    ///
    /// # Panics
    ///
    /// If the stream was already polled: its in-flight work cannot move.
    #[track_caller]
    pub(crate) fn into_parts(self, source: Pin<Box<S>>) -> Parts<S, P, K> {
        assert!(
            self.phase == Phase::New,
            "a stream can change mode only before it is first polled"
        );
        let mut budgets = self.budgets;
        let limits = self.limits.into_inner();
        if let Some(shared) = &limits {
            // A handle may have moved them since; nothing applied them yet.
            let (workers, waiting) = shared.get();
            budgets.set(workers, waiting);
        }
        Parts {
            source,
            budgets,
            closed: self.source.into_inner() & SOURCE_CLOSED != 0,
            limits,
            clock: self.clock,
            adaptive: self.adaptive,
        }
    }

    /// See `BoundedBuffered::close`.
    pub(crate) fn close(&self) {
        self.source.fetch_or(SOURCE_CLOSED, Relaxed);
        self.slots.wake_consumer();
    }

    /// See `BoundedBuffered::reopen`.
    #[track_caller]
    pub(crate) fn reopen(&mut self) {
        let source = self.source.get_mut();
        assert!(
            *source & SOURCE_FAILED == 0,
            "`reopen` after the run failed: a stream that failed fast does not resume"
        );
        *source &= !SOURCE_CLOSED;
        if self.phase == Phase::Done {
            // It ended only because it was closed: with the source not done, it
            // pulls again on its next poll; with the source done, that poll
            // ends it again.
            self.phase = Phase::Idle;
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        let (workers_limit, waiting_limit) = match self.limits.get() {
            Some(shared) => shared.get(),
            None => (self.budgets.workers, self.budgets.waiting),
        };
        Stats {
            active: self.active,
            waiting: self.waiting.len(),
            held: self.held.len(),
            workers_limit,
            waiting_limit,
            paused: workers_limit == 0,
            ..self.stats
        }
    }

    /// See `BoundedBuffered::limits`.
    pub(crate) fn limits(&self) -> Limits {
        let shared = self.limits.get_or_init(|| {
            let control = Signal::InPlace(self.slots.control());
            Arc::new(limits::Shared::new(
                self.budgets.workers,
                self.budgets.waiting,
                control,
            ))
        });
        Limits::new(Arc::clone(shared))
    }

    pub(crate) fn budgets(&self) -> Budgets {
        self.budgets
    }

    pub(crate) fn has_failed(&self) -> bool {
        self.failure.is_some()
    }

    pub(crate) fn is_terminated(&self) -> bool {
        self.phase == Phase::Done
    }

    /// See `Stream::size_hint`: what is in flight, plus what the source has
    /// left (`source`, its own hint).
    pub(crate) fn size_hint(&self, source: (usize, Option<usize>)) -> (usize, Option<usize>) {
        if self.phase == Phase::Done {
            return (0, Some(0));
        }
        // Everything running, waiting or held will be yielded (unless a failure
        // cuts it short), plus the error, plus whatever the source still has.
        let in_flight = self
            .active
            .saturating_add(self.waiting.len())
            .saturating_add(self.held.len())
            .saturating_add(usize::from(self.failure.is_some()));
        let source = if self.source.load(Relaxed) & SOURCE_ENDED != 0 {
            (0, Some(0))
        } else {
            source
        };
        stats::size_hint(in_flight, source, P::FALLIBLE)
    }
}

/// The driving code: `poll_next` and what it does in phases.
impl<S, P: Policy<S>, K: Clocking, N: Unstarted<P::Source>> Core<S, P, K, N> {
    /// Polls the source, the woken futures and the budgets; hands out the next
    /// settled item (see [`Settled`]) as `item` makes it the stream's. Taking
    /// `item` here, rather than mapping the result, builds the item where it
    /// is returned: no second move of it per `poll_next`.
    #[inline]
    pub(crate) fn poll_next<T>(
        &mut self,
        source: Pin<&mut S>,
        cx: &mut Context<'_>,
        item: impl FnOnce(Settled<S, P, N>) -> T,
    ) -> Poll<Option<T>> {
        match self.phase {
            Phase::Done => return Poll::Ready(None),
            Phase::Polling => panic!(
                "`BoundedBuffered` polled after a panic escaped from one of its futures or its source"
            ),
            Phase::New | Phase::Idle => self.phase = Phase::Polling,
        }
        let poll = self.drive(source, cx, item);
        self.phase = match poll {
            Poll::Ready(None) => Phase::Done,
            _ => Phase::Idle,
        };
        poll
    }

    #[inline]
    fn drive<T>(
        &mut self,
        mut source: Pin<&mut S>,
        cx: &mut Context<'_>,
        item: impl FnOnce(Settled<S, P, N>) -> T,
    ) -> Poll<Option<T>> {
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
                        match complete::<S, P, K, N>(held, clock, stats, governed, position, output)
                        {
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
                if N::EXPIRES && outcome.is_err() {
                    self.held_expired -= 1;
                }
                self.fill(source.as_mut(), cx);
                return Poll::Ready(Some(item(P::ok(outcome))));
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
                return Poll::Ready(Some(item(P::err(error))));
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
                    match self.clock.pick_up(pulled, N::EXPIRES) {
                        Some(waited) => match self.expire(waited, future) {
                            Ok(()) => {
                                started = true;
                                continue;
                            }
                            // A stream whose items cannot come back never has
                            // a `max_wait`: not reached, but total.
                            Err(future) => future,
                        },
                        None => future,
                    }
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
        if N::EXPIRES { self.held_expired } else { 0 }
    }

    /// Hands a waiting item that waited too long to the consumer, unstarted.
    #[inline(never)]
    fn expire(&mut self, waited: Duration, future: P::Future) -> Result<(), P::Future> {
        let expired = N::expired(Expired::new(P::into_source(future), waited))
            .map_err(|expired| P::from_source(expired.into_inner()))?;
        let position = self.held.begin();
        let stamp = self.clock.stamp();
        self.held.complete(position, (stamp, Err(expired)));
        self.held_expired += 1;
        self.stats.expired += 1;
        self.stats.peak_held = self.stats.peak_held.max(self.held.len());
        Ok(())
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
            if let Err(error) =
                complete::<S, P, K, N>(held, clock, stats, governed, position, output)
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
            .count(|(_, outcome)| N::EXPIRES && outcome.is_err());
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
fn complete<S, P: Policy<S>, K: Clocking, N>(
    held: &mut Held<(K::Stamp, Outcome<S, P, N>)>,
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
    held.complete(position, (completed, Ok(output)));
    stats.peak_held = stats.peak_held.max(held.len());
    Ok(())
}
