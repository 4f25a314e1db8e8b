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

use crate::adaptive::{Adjust, Classify, Controller};
use crate::admission::{Admission, Admits, Unkeyed, Unweighted};
use crate::budget::Budgets;
use crate::clock::{Clocked, Clocking, Stamped, Untimed};
use crate::expiry::{Expired, Unstarted};
use crate::failure::Policy;
use crate::held::Held;
use crate::limits::{self, Limits, Signal};
use crate::observe::Metrics;
use crate::shed::{self, Rejected, Shed};
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
pub(crate) struct Parts<S, P: Policy<S>, K, A> {
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
    /// The key and weight rules.
    pub(crate) admission: A,
    /// Which item a shedding stream hands back.
    pub(crate) shed: Shed,
    /// The `metrics` exporter, if any.
    pub(crate) metrics: Metrics,
}

/// What a future returns, before the policy settles it.
pub(crate) type Output<S, P> = <<P as Policy<S>>::Future as Future>::Output;

/// A running future, with when it started and its admission ticket.
type Running<S, P, K, A> = Stamped<
    (
        <K as Clocking>::Stamp,
        <A as Admits<<P as Policy<S>>::Source>>::Ticket,
    ),
    <P as Policy<S>>::Future,
>;

/// Everything but the source: none of it is pinned (running futures sit in their
/// own pinned boxes), so the driving code is plain `&mut self` methods.
pub(crate) struct Core<S, P: Policy<S>, K: Clocking, N, A: Admits<P::Source>> {
    budgets: Budgets,
    phase: Phase,
    /// Why the source may not be pulled now: the `SOURCE_*` flags, 0 if it may.
    /// Atomic only so that `close` can take `&self`; the driving code owns it
    /// through `&mut self` and reads it as a plain byte.
    source: AtomicU8,
    /// Items pulled and not yet started, each with the time it was pulled.
    waiting: VecDeque<(K::Stamp, P::Future)>,
    /// The input positions of the waiting items, side by side with them,
    /// when an ordered stream takes them at the pull ([`Core::seated`]): an
    /// item with a key, a weight or shedding may start or leave out of pull
    /// order, and its output must still come in input order.
    seats: VecDeque<u64>,
    /// Each running future with the time it started and its admission ticket.
    slots: Slots<Running<S, P, K, A>>,
    /// Futures started and not yet complete.
    active: usize,
    /// Outputs (and expired items) not yet handed out, each with the time it
    /// completed.
    held: Held<(K::Stamp, Outcome<S, P, N>)>,
    /// How many of the held outcomes are expired items (always 0 without
    /// `max_wait`): they count against the waiting budget, not the workers'.
    held_expired: usize,
    /// How many of the held outcomes are rejected items (always 0 without
    /// `shed`): they count against the rejection allowance (see
    /// [`crate::shed`]).
    held_rejected: usize,
    /// The key and weight rules, if any.
    admission: A,
    /// Which item a shedding stream hands back (read only with `shed`).
    shed: Shed,
    /// The error that ended the run, until it is yielded.
    failure: Option<P::Error>,
    clock: K,
    /// What the [`Limits`] handles share, once one was asked for.
    limits: OnceLock<Arc<limits::Shared>>,
    /// The adaptive controller, if any.
    adaptive: Adjust<Output<S, P>>,
    /// Peaks and totals; current counts are read off the parts above.
    stats: Stats,
    /// The `metrics` exporter, if `.metrics` was called (feature `metrics`;
    /// nothing without it): published to at the end of each `poll_next`.
    metrics: Metrics,
}

/// Nothing in the core is ever pinned in place: the futures it runs sit in
/// pinned boxes of their own (`Slots`), and waiting items and held outputs are
/// only moved, never polled where they lie. So the stream is `Unpin` whatever
/// its items are, and can be polled, stored and resumed without `pin!`.
impl<S, P: Policy<S>, K: Clocking, N, A: Admits<P::Source>> Unpin for Core<S, P, K, N, A> {}

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

/// The admission of a stream without keys or weights.
pub(crate) type Plain = Admission<Unkeyed, Unweighted>;

impl<S, P: Policy<S>> Core<S, P, Untimed, std::convert::Infallible, Plain> {
    /// The core of a stream just made by `bounded` or `try_bounded`.
    #[track_caller]
    pub(crate) fn bounded(workers: usize, waiting: usize) -> Self {
        assert!(
            workers > 0,
            "`bounded` needs at least one worker: with `workers == 0` no future could ever run"
        );
        Core::new(
            Budgets::new(workers, waiting),
            Untimed,
            Plain::default(),
            Shed::default(),
        )
    }
}

/// What the public types' builder methods and accessors do, before and
/// between polls.
impl<S, P: Policy<S>, K: Clocking, N, A: Admits<P::Source>> Core<S, P, K, N, A> {
    fn new(budgets: Budgets, clock: K, admission: A, shed: Shed) -> Self {
        Self {
            budgets,
            phase: Phase::New,
            source: AtomicU8::new(0),
            waiting: VecDeque::new(),
            seats: VecDeque::new(),
            slots: Slots::new(budgets.workers),
            active: 0,
            held: Held::unordered(),
            held_expired: 0,
            held_rejected: 0,
            admission,
            shed,
            failure: None,
            clock,
            limits: OnceLock::new(),
            adaptive: Adjust::none(),
            stats: Stats::default(),
            metrics: Metrics::default(),
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
    ) -> Core<S, P, K2, N2, A> {
        let shed = self.shed;
        self.rebuild(clock, |admission| admission, shed, method)
    }

    /// The same core with other rules of admission, before the first poll.
    #[track_caller]
    pub(crate) fn readmit<A2: Admits<P::Source>>(
        self,
        admission: impl FnOnce(A) -> A2,
        method: &str,
    ) -> Core<S, P, K, N, A2> {
        let shed = self.shed;
        self.rebuild(|clock| clock, admission, shed, method)
    }

    /// See `BoundedBuffered::shed`.
    #[track_caller]
    pub(crate) fn shed<N2>(self, shed: Shed) -> Core<S, P, K, N2, A> {
        self.rebuild(|clock| clock, |admission| admission, shed, "shed")
    }

    /// The same stream with another clocking, unstarted items or admission,
    /// before the first poll: everything set so far carries over.
    #[track_caller]
    fn rebuild<K2: Clocking, N2, A2: Admits<P::Source>>(
        self,
        clock: impl FnOnce(K) -> K2,
        admission: impl FnOnce(A) -> A2,
        shed: Shed,
        method: &str,
    ) -> Core<S, P, K2, N2, A2> {
        self.assert_new(method);
        let budgets = self.budgets;
        let mut reclocked = Core::new(budgets, clock(self.clock), admission(self.admission), shed);
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
        reclocked.metrics = self.metrics;
        reclocked.metrics.adopt(&mut reclocked.clock, A2::RULES);
        reclocked
    }

    /// See `BoundedBuffered::max_wait`.
    #[track_caller]
    pub(crate) fn max_wait<N2>(self, limit: Duration) -> Core<S, P, Clocked, N2, A> {
        self.reclock(
            |clock| clock.into_clocked().with_max_wait(limit),
            "max_wait",
        )
    }

    /// See `BoundedBuffered::timed`.
    #[track_caller]
    pub(crate) fn timed(self) -> Core<S, P, Clocked, N, A> {
        self.reclock(|clock| clock.into_clocked().with_timings(), "timed")
    }

    /// See `BoundedBuffered::clock`.
    #[track_caller]
    pub(crate) fn clock(
        self,
        now: impl Fn() -> Instant + Send + Sync + 'static,
    ) -> Core<S, P, Clocked, N, A> {
        self.reclock(|clock| clock.into_clocked().with_clock(now), "clock")
    }

    /// See `BoundedBuffered::adaptive`.
    #[track_caller]
    pub(crate) fn adaptive<C, F>(self, controller: C, classify: F) -> Core<S, P, Clocked, N, A>
    where
        C: Controller,
        F: Classify<Output<S, P>>,
    {
        let mut core = self.reclock(|clock| clock.into_clocked().with_run_times(), "adaptive");
        core.adaptive = Adjust::new(controller, classify);
        if let Some(initial) = core.adaptive.initial() {
            core.budgets = core.budgets.starting_with(initial);
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
    pub(crate) fn into_parts(self, source: Pin<Box<S>>) -> Parts<S, P, K, A> {
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
            admission: self.admission,
            shed: self.shed,
            metrics: self.metrics,
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

    /// See `BoundedBuffered::stats`.
    pub(crate) fn stats(&self) -> Stats {
        let mut stats = self.counts();
        if A::APPLIES {
            let waiting = self.waiting.iter().map(|(_, future)| P::source_ref(future));
            let (keys_running, blocked, [running, queued, peak_running, peak_queued]) =
                self.admission.report(waiting);
            stats.keys_running = keys_running;
            stats.blocked_by_key = blocked;
            stats.running_weight = running;
            stats.waiting_weight = queued;
            stats.peak_running_weight = peak_running;
            stats.peak_waiting_weight = peak_queued;
        }
        stats
    }

    /// See `BoundedBuffered::metrics`: registers the exporter, and publishes
    /// the stream as it is (its limits, before the first poll).
    #[cfg(feature = "metrics")]
    #[track_caller]
    pub(crate) fn metrics(mut self, name: metrics::SharedString) -> Self {
        self.assert_new("metrics");
        self.metrics = Metrics::new(name, &mut self.clock, A::RULES);
        self.publish();
        self
    }

    /// Hands the exporter what changed (see [`crate::observe`]).
    #[cold]
    fn publish(&mut self) {
        let stats = self.stats();
        let failed = *self.source.get_mut() & SOURCE_FAILED != 0;
        self.metrics
            .publish(&stats, failed, self.budgets.changes(), &mut self.clock);
    }

    /// The counts, peaks and totals, and the limits in force.
    fn counts(&self) -> Stats {
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
impl<S, P, K, N, A> Core<S, P, K, N, A>
where
    P: Policy<S>,
    K: Clocking,
    N: Unstarted<P::Source>,
    A: Admits<P::Source>,
{
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
        if self.metrics.is_on() {
            self.publish();
        }
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
            // 1. Poll the futures that were woken, and only those (oldest first),
            //    until none is or the budget is spent: a future that another's
            //    completion woke, say for the server that one freed, is polled
            //    before anything new starts in phases 2 and 3, so that what
            //    waits for a resource is not overtaken by what only arrives
            //    (contract point 7). An error stops the pass: from then on no
            //    future is polled again.
            if self.slots.has_woken() {
                let unstarted = self.held_unstarted();
                let Self {
                    budgets,
                    slots,
                    active,
                    held,
                    clock,
                    limits,
                    adaptive,
                    admission,
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
                            expired: unstarted,
                        };
                        match complete::<S, P, K, N, A>(
                            (held, clock, stats, admission),
                            governed,
                            position,
                            output,
                        ) {
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
                if budget > 0 && self.slots.woken_by_others() {
                    continue;
                }
            }

            // 2. Hand out an output. Taking it frees budget, so refill first: the
            //    freed worker is busy again while the consumer handles the output.
            if let Some((completed, outcome)) = self.held.pop() {
                self.clock.handed_out(completed);
                if let Err(unstarted) = &outcome {
                    self.handed_out_unstarted(unstarted);
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
        // Keys, weights and shedding have their own fill; a constant branch,
        // gone from a plain stream.
        if A::APPLIES || N::REJECTS {
            return self.fill_admitted(source, cx);
        }
        let mut started = false;
        while self
            .budgets
            .may_start(self.active, self.held.len(), self.held_unstarted())
        {
            let future = match self.waiting.pop_front() {
                Some((pulled, future)) => {
                    // Expiry is checked at pickup, and only there.
                    match self.clock.pick_up(pulled, N::EXPIRES) {
                        Some(waited) => match self.expire(waited, future, None) {
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
            self.start(future, None);
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

    /// [`Core::fill`] for a stream with keys, weights or shedding (see
    /// [`crate::admission`] and [`crate::shed`]): every item is pulled into a
    /// waiting place (there is at least one), taking its input position there
    /// when ordered ([`Core::seated`]), and a free worker starts the oldest
    /// waiting item the rules allow, from anywhere in the queue. So an item
    /// pulled with a worker free for it starts at once, having waited no time;
    /// one that may not start waits in its place. A shedding stream then pulls
    /// past its full queue, handing an item back, and fills again whatever
    /// that freed.
    #[inline(never)]
    fn fill_admitted(&mut self, mut source: Pin<&mut S>, cx: &mut Context<'_>) -> bool {
        let mut started = false;
        loop {
            // Start what the budgets and the rules allow.
            while self.may_start_admitted() {
                let Some(index) = self.pick(None) else {
                    break;
                };
                let (pulled, future, seat) = self.unqueue(index);
                let future = match self.clock.pick_up(pulled, N::EXPIRES) {
                    Some(waited) => match self.expire(waited, future, seat) {
                        Ok(()) => {
                            started = true;
                            continue;
                        }
                        Err(future) => future,
                    },
                    None => future,
                };
                self.start(future, seat);
                started = true;
            }
            // Pull one into a free waiting place: it may start at once.
            if self.may_queue_admitted() {
                let Some(future) = self.pull(source.as_mut(), cx) else {
                    break;
                };
                self.queue(future);
                continue;
            }
            // Shedding: the queue is full, and nothing in it may start. Pull
            // one past it while the rejection allowance lasts: it starts if
            // the rules pick it, else an item is handed back.
            if !(N::REJECTS && shed::may_shed(self.held_rejected, self.budgets.waiting)) {
                break;
            }
            let Some(future) = self.pull(source.as_mut(), cx) else {
                break;
            };
            self.shed_past_full(future);
            started = true;
        }
        started
    }

    /// Whether an ordered stream takes its items' input positions when it
    /// pulls them: with keys, weights or shedding an item may start or leave
    /// out of pull order (without them, positions are taken at the start,
    /// which is in pull order).
    #[inline(always)]
    fn seated(&self) -> bool {
        (A::APPLIES || N::REJECTS) && self.budgets.window.is_some()
    }

    /// The waiting item a free worker starts, if the rules allow one: the
    /// oldest whose key is below its limit, if it fits the running weight and,
    /// ordered, the window. With `pulled` (an item just pulled past the full
    /// queue, and its input position), the rules look at it after the waiting
    /// ones, as the newest: its index is the queue's length.
    fn pick(&self, pulled: Option<(&P::Future, Option<u64>)>) -> Option<usize> {
        let limit = self
            .budgets
            .window
            .map(|window| self.held.front().saturating_add(window as u64));
        let seats = &self.seats;
        let items = self.waiting.iter().enumerate().map(|(index, (_, future))| {
            let in_window = limit.is_none_or(|limit| seats.get(index).is_none_or(|&at| at < limit));
            (P::source_ref(future), in_window)
        });
        let pulled = pulled.map(|(future, seat)| {
            let in_window = limit.is_none_or(|limit| seat.is_none_or(|at| at < limit));
            (P::source_ref(future), in_window)
        });
        self.admission.pick(items.chain(pulled))
    }

    /// Whether one more item may start, with keys, weights or shedding (see
    /// `Budgets::may_start_admitted`).
    #[inline(always)]
    fn may_start_admitted(&self) -> bool {
        let rejected = if N::REJECTS { self.held_rejected } else { 0 };
        self.budgets.may_start_admitted(
            self.active,
            self.held.len(),
            self.held_unstarted(),
            rejected,
        )
    }

    /// Whether one more item may be pulled into the waiting queue of a stream
    /// with keys, weights or shedding: a place free (with keys or weights at
    /// least one, see [`crate::admission`]; shedding alone starts or sheds an
    /// item it cannot queue), and the weight waiting below its budget.
    #[inline]
    fn may_queue_admitted(&self) -> bool {
        self.may_queue_admitted_without(0, 0)
    }

    /// Puts a pulled item in the waiting queue, with its input position when
    /// ordered.
    fn queue(&mut self, future: P::Future) {
        let pulled = self.clock.stamp_pulled();
        self.admission.queued(P::source_ref(&future));
        if self.seated() {
            let seat = self.held.begin();
            self.seats.push_back(seat);
        }
        self.waiting.push_back((pulled, future));
        self.stats.peak_waiting = self.stats.peak_waiting.max(self.waiting.len());
    }

    /// Takes the waiting item at `index` out of the queue, with its position
    /// if it has one.
    fn unqueue(&mut self, index: usize) -> (K::Stamp, P::Future, Option<u64>) {
        let (pulled, future) = self.waiting.remove(index).expect("a waiting item");
        let seat = if self.seated() {
            self.seats.remove(index)
        } else {
            None
        };
        self.admission.unqueued(P::source_ref(&future));
        (pulled, future, seat)
    }

    /// Shedding (see [`crate::shed`]): `future` was pulled past the full
    /// waiting queue, nothing in which may start. It starts if the rules pick
    /// it, looking at it after the waiting items; otherwise it is handed back
    /// (`Newest`), or the oldest waiting items are, as many as it needs room
    /// for, and it takes their place (`Oldest`).
    #[cold]
    fn shed_past_full(&mut self, future: P::Future) {
        let seat = self.seated().then(|| self.held.begin());
        if self.may_start_admitted() && self.pick(Some((&future, seat))) == Some(self.waiting.len())
        {
            self.clock.started_at_once();
            return self.start(future, seat);
        }
        let oldest = shed::oldest_to_shed(
            self.shed,
            self.waiting
                .iter()
                .map(|(_, waiting)| self.admission.waiting_weight(P::source_ref(waiting))),
            self.held_rejected,
            self.budgets.waiting,
            |gone, gone_weight| self.may_queue_admitted_without(gone, gone_weight),
            |gone_weight| {
                self.admission
                    .may_replace(gone_weight, P::source_ref(&future))
            },
        );
        if oldest == 0 {
            return self.reject(future, seat);
        }
        for _ in 0..oldest {
            let (_, oldest, oldest_seat) = self.unqueue(0);
            self.reject(oldest, oldest_seat);
        }
        self.queue_seated(future, seat);
    }

    /// [`Core::may_queue_admitted`], were the `gone` oldest waiting items,
    /// counting `gone_weight` in all, gone.
    #[inline]
    fn may_queue_admitted_without(&self, gone: usize, gone_weight: u128) -> bool {
        let queued = self.waiting.len() - gone;
        let place = if A::APPLIES {
            self.budgets.may_queue_seated(queued, self.held_expired())
        } else {
            self.budgets.may_queue(queued, self.held_expired())
        };
        place && self.admission.may_queue_without(gone_weight)
    }

    /// [`Core::queue`] for an item whose position was taken already.
    fn queue_seated(&mut self, future: P::Future, seat: Option<u64>) {
        let pulled = self.clock.stamp_pulled();
        self.admission.queued(P::source_ref(&future));
        if let Some(seat) = seat {
            self.seats.push_back(seat);
        }
        self.waiting.push_back((pulled, future));
    }

    /// Hands an item back to the consumer unstarted, as a rejection, at input
    /// position `seat` when ordered (else in completion order).
    fn reject(&mut self, future: P::Future, seat: Option<u64>) {
        let rejected = Rejected::new(P::into_source(future));
        let rejected = match N::rejected(rejected) {
            Ok(rejected) => rejected,
            // A stream whose items cannot be rejected does not shed: not
            // reached, but total.
            Err(rejected) => return self.start(P::from_source(rejected.into_inner()), seat),
        };
        let position = seat.unwrap_or_else(|| self.held.begin());
        let stamp = self.clock.stamp();
        self.held.complete(position, (stamp, Err(rejected)));
        self.held_rejected += 1;
        self.stats.rejected += 1;
        self.stats.peak_held = self.stats.peak_held.max(self.held.len());
    }

    /// An unstarted item was handed out: its allowance is free again.
    #[inline]
    fn handed_out_unstarted(&mut self, unstarted: &N) {
        if N::REJECTS && unstarted.is_rejected() {
            self.held_rejected -= 1;
        } else if N::EXPIRES {
            self.held_expired -= 1;
        }
    }

    /// Held outcomes that are expired items: a constant 0 without `max_wait`.
    #[inline(always)]
    fn held_expired(&self) -> usize {
        if N::EXPIRES { self.held_expired } else { 0 }
    }

    /// Held outcomes that are unstarted items, expired or rejected: they take
    /// no worker (a constant 0 without `max_wait` and `shed`).
    #[inline(always)]
    fn held_unstarted(&self) -> usize {
        let rejected = if N::REJECTS { self.held_rejected } else { 0 };
        self.held_expired() + rejected
    }

    /// Hands a waiting item that waited too long to the consumer, unstarted.
    #[inline(never)]
    fn expire(
        &mut self,
        waited: Duration,
        future: P::Future,
        seat: Option<u64>,
    ) -> Result<(), P::Future> {
        let expired = N::expired(Expired::new(P::into_source(future), waited))
            .map_err(|expired| P::from_source(expired.into_inner()))?;
        let position = seat.unwrap_or_else(|| self.held.begin());
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

    /// Starts `future` in a free slot, at input position `seat` if it took
    /// one when pulled (else the next), and polls it once.
    #[inline(always)]
    fn start(&mut self, future: P::Future, seat: Option<u64>) {
        let position = match seat {
            Some(seat) => seat,
            None => self.held.begin(),
        };
        self.active += 1;
        self.stats.peak_active = self.stats.peak_active.max(self.active);
        let ticket = self.admission.started(P::source_ref(&future));
        let running = Stamped::new((self.clock.stamp(), ticket), future);
        if let Poll::Ready(output) = self.slots.start(running, position) {
            self.active -= 1;
            let unstarted = self.held_unstarted();
            let Self {
                budgets,
                held,
                clock,
                limits,
                adaptive,
                admission,
                stats,
                active,
                ..
            } = self;
            let governed = Governed {
                adaptive,
                budgets,
                limits,
                active: *active,
                expired: unstarted,
            };
            if let Err(error) = complete::<S, P, K, N, A>(
                (held, clock, stats, admission),
                governed,
                position,
                output,
            ) {
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
        self.seats.clear();
        self.active -= self.slots.cancel_all();
        self.admission.clear();
        self.held.keep_in_order_prefix(drop);
        self.held_expired = self.held.count(|(_, outcome)| {
            N::EXPIRES
                && outcome
                    .as_ref()
                    .is_err_and(|unstarted| !unstarted.is_rejected())
        });
        self.held_rejected = self.held.count(|(_, outcome)| {
            N::REJECTS && outcome.as_ref().is_err_and(Unstarted::is_rejected)
        });
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
fn complete<S, P: Policy<S>, K: Clocking, N, A: Admits<P::Source>>(
    (held, clock, stats, admission): (
        &mut Held<(K::Stamp, Outcome<S, P, N>)>,
        &mut K,
        &mut Stats,
        &mut A,
    ),
    governed: Governed<'_, Output<S, P>>,
    position: u64,
    ((started, ticket), output): ((K::Stamp, A::Ticket), Output<S, P>),
) -> Result<(), P::Error> {
    stats.completed += 1;
    admission.finished(ticket);
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
