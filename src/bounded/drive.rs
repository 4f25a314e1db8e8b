//! The in-place driver: the consumer's `poll_next` runs the futures itself,
//! in worker slots woken through the wake tree ([`crate::slots`],
//! [`crate::wake`]), and asks the [`Engine`] for every decision. It only
//! polls, wakes and parks.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use crate::clock::Stamped;
use crate::engine::{Discarded, Ending, Engine, Io, Pulled, Spec, Start, Started, Step, Types};
use crate::limits::{Limits, Signal};
use crate::slots::Slots;
use crate::stats::Stats;
use crate::time::{Alarm, Now, Timer};
use crate::timings::Timings;

/// How many woken slots one `poll_next` may poll before it hands control back to
/// the executor (the same figure as tokio's per-task budget). First polls of newly
/// started futures are not counted: the worker and waiting budgets bound those.
const POLL_BUDGET: usize = 128;

/// A running future, with when it started and its admission ticket.
type Running<R> = Stamped<Started<R>, <R as Types>::Future>;

/// A stream driven in place: its source, its engine, and the slots its
/// futures run in.
pub(crate) struct InPlace<R: Types> {
    source: Pin<Box<R::Source>>,
    engine: Engine<R>,
    slots: Slots<Running<R>>,
    /// The timer (`timer`), with the one sleep it keeps armed for the
    /// engine's [`alarm`](Engine::alarm).
    alarm: Option<Alarm>,
}

/// The slots a stream of these budgets needs at most: `workers`, or
/// `min(workers, window)` ordered (the wake tree is sized for them).
fn capacity<R: Types>(engine: &Engine<R>) -> usize {
    let budgets = engine.budgets();
    budgets
        .window
        .map_or(budgets.workers, |window| budgets.workers.min(window))
}

impl<R: Types> InPlace<R> {
    pub(crate) fn new(source: R::Source, engine: Engine<R>) -> Self {
        let slots = Slots::new(capacity(&engine));
        Self {
            source: Box::pin(source),
            engine,
            slots,
            alarm: None,
        }
    }

    /// The same stream with its engine rebuilt by `rebuild` (a builder
    /// method), before the first poll. The wake tree stays: `Limits` handles
    /// taken already keep working.
    #[track_caller]
    pub(crate) fn rebuilt<R2: Types<Source = R::Source>>(
        self,
        method: &str,
        rebuild: impl FnOnce(Engine<R>) -> Engine<R2>,
    ) -> InPlace<R2> {
        self.engine.assert_new(method);
        let engine = rebuild(self.engine);
        let slots = self.slots.renew(capacity(&engine));
        InPlace {
            source: self.source,
            engine,
            slots,
            alarm: self.alarm,
        }
    }

    /// See `BoundedBuffered::timer`: `rebuild` gives the engine the timer's
    /// clock, and the driver keeps the timer to sleep on.
    #[track_caller]
    pub(crate) fn timer<T: Timer, R2: Types<Source = R::Source>>(
        self,
        timer: T,
        rebuild: impl FnOnce(Engine<R>, Now) -> Engine<R2>,
    ) -> InPlace<R2> {
        let (alarm, now) = Alarm::new(timer);
        let mut rebuilt = self.rebuilt("timer", |engine| rebuild(engine, now));
        rebuilt.alarm = Some(alarm);
        rebuilt
    }

    /// Whether the stream has a timer.
    pub(crate) fn has_timer(&self) -> bool {
        self.alarm.is_some()
    }

    pub(crate) fn engine(&self) -> &Engine<R> {
        &self.engine
    }

    /// See `BoundedBuffered::burst`: `false` if the stream has no rate.
    #[track_caller]
    pub(crate) fn set_burst(&mut self, burst: u32) -> bool {
        self.engine.assert_new("burst");
        self.engine.set_burst(burst)
    }

    /// See `BoundedBuffered::ordered`.
    #[track_caller]
    pub(crate) fn ordered(self, window: usize) -> Self {
        let engine = self.engine.ordered(window);
        let slots = self.slots.renew(capacity(&engine));
        Self {
            source: self.source,
            engine,
            slots,
            alarm: self.alarm,
        }
    }

    /// See `BoundedBuffered::metrics`: a limit changes in the handles'
    /// settings, which reach the stream through the wake tree.
    #[cfg(feature = "metrics")]
    #[track_caller]
    pub(crate) fn metrics(self, labels: Vec<metrics::Label>) -> Self {
        self.engine.assert_new("metrics");
        let control = self.slots.control();
        Self {
            engine: self.engine.metrics(labels, || Signal::InPlace(control)),
            ..self
        }
    }

    /// The source and the engine, for the spawned driver (`spawn_on`): the
    /// engine moves whole, with any change a handle made applied.
    ///
    /// # Panics
    ///
    /// If the stream was already polled: its in-flight work cannot move.
    #[track_caller]
    pub(crate) fn into_spawned(self) -> (Pin<Box<R::Source>>, Engine<R>, Option<Alarm>) {
        assert!(
            self.engine.life().is_new(),
            "a stream can change mode only before it is first polled"
        );
        let mut engine = self.engine;
        engine.apply_limits();
        (self.source, engine, self.alarm)
    }

    /// `Debug` for a public stream type: its budgets and counts, never its
    /// futures or outputs.
    pub(crate) fn fmt_as(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result
    where
        R::Source: fmt::Debug,
    {
        let budgets = self.engine.budgets();
        f.debug_struct(name)
            .field("source", &self.source)
            .field("workers", &budgets.workers)
            .field("waiting", &budgets.waiting)
            .field("window", &budgets.window)
            .field("state", &self.engine.life().state())
            .field("stats", &self.engine.stats())
            .finish_non_exhaustive()
    }

    pub(crate) fn source(&self) -> &Pin<Box<R::Source>> {
        &self.source
    }

    pub(crate) fn source_mut(&mut self) -> &mut Pin<Box<R::Source>> {
        &mut self.source
    }

    pub(crate) fn into_source(self) -> Pin<Box<R::Source>> {
        self.source
    }

    /// See `close`: also wakes the task that last polled the stream, so a
    /// stream waiting only on its source ends without another wake.
    pub(crate) fn close(&self) {
        self.engine.life().close();
        self.slots.wake_consumer();
    }

    /// See `reopen`: in place, the source stays with the stream across
    /// `close`, so the run can go on (spawned drops it at `close`).
    #[track_caller]
    pub(crate) fn reopen(&mut self) {
        self.engine.life_mut().reopen();
    }

    pub(crate) fn stats(&self) -> Stats {
        self.engine.stats()
    }

    pub(crate) fn timings(&self) -> Option<Timings> {
        self.engine.timings()
    }

    /// A handle whose changes reach the stream through the wake tree's
    /// control bit, which the stream reads on every turn anyway.
    pub(crate) fn limits(&self) -> Limits {
        self.engine.limits(|| Signal::InPlace(self.slots.control()))
    }

    pub(crate) fn size_hint(&self) -> (usize, Option<usize>) {
        let hint = self
            .engine
            .size_hint(|| Ok::<_, std::convert::Infallible>(self.source.size_hint()));
        match hint {
            Ok(hint) => hint,
            Err(never) => match never {},
        }
    }

    pub(crate) fn is_terminated(&self) -> bool {
        self.engine.life().has_ended()
    }
}

impl<R: Spec> InPlace<R> {
    /// Polls the woken futures and the source under the engine's rules, and
    /// hands out the next item as `item` makes it the stream's. Taking `item`
    /// here, rather than mapping the result, builds the item where it is
    /// returned: no second move of it per `poll_next`.
    #[inline]
    pub(crate) fn poll_next<T>(
        &mut self,
        cx: &mut Context<'_>,
        item: impl FnOnce(R::Item) -> T,
    ) -> Poll<Option<T>> {
        if !self.engine.enter_poll() {
            return Poll::Ready(None);
        }
        let poll = self.drive(cx, item);
        self.engine.leave_poll(matches!(poll, Poll::Ready(None)));
        self.engine
            .publish(|| !matches!(poll, Poll::Ready(Some(_))));
        poll
    }

    #[inline]
    fn drive<T>(
        &mut self,
        cx: &mut Context<'_>,
        item: impl FnOnce(R::Item) -> T,
    ) -> Poll<Option<T>> {
        let Self {
            source,
            engine,
            slots,
            alarm,
        } = self;
        slots.unpark();
        let mut io = Drive {
            source: source.as_mut(),
            cx,
            slots,
        };
        // The run's deadline passed since the last poll: nothing is polled
        // after it (a future woken meanwhile is cancelled, not polled).
        if engine.deadline_due() {
            engine.pass_deadline(&mut io);
        }
        let mut budget = POLL_BUDGET;
        let mut timer_fired = false;
        loop {
            // 1. Poll the futures that were woken, and only those (oldest first),
            //    until none is or the budget is spent: a future that another's
            //    completion woke, say for the server that one freed, is polled
            //    before anything new starts in phases 2 and 3, so that what
            //    waits for a resource is not overtaken by what only arrives
            //    (contract point 7, in place only: spawned tasks are polled
            //    when the executor chooses). An error stops the pass: from
            //    then on no future is polled again.
            if io.slots.has_woken() {
                let mut failure = None;
                let mut limits_changed = false;
                io.slots.poll_woken(
                    &mut budget,
                    |position, (started, output)| match engine.complete(position, started, output) {
                        Ok(_) => true,
                        Err(error) => {
                            failure = Some(error);
                            false
                        }
                    },
                    || limits_changed = true,
                );
                // A `Limits` handle changed the limits: apply them before
                // anything else starts (cold: only a handle signals this).
                if limits_changed {
                    engine.apply_limits();
                }
                if let Some(error) = failure {
                    engine.fail(error, &mut io);
                }
                if budget > 0 && io.slots.woken_by_others() {
                    continue;
                }
            }

            // 2. Hand out an outcome. Taking it frees budget, so refill first:
            //    the freed worker is busy again while the consumer handles it
            //    (contract point 6).
            if let Some((outcome, _)) = engine.hand_out() {
                fill(engine, &mut io);
                return Poll::Ready(Some(item(R::ok(outcome))));
            }

            // 3. Start what the engine allows and top up the waiting queue. A
            //    new future may finish or wake itself in its first poll, and
            //    an item may expire: go round again.
            if fill(engine, &mut io) {
                continue;
            }

            // 4. The error, once every outcome that may precede it was handed
            //    out, or the end.
            match engine.end() {
                Some(Ending::Error(error)) => return Poll::Ready(Some(item(R::err(error)))),
                Some(Ending::Done) => return Poll::Ready(None),
                None => {}
            }

            // 5. Nothing to hand out. Yield if this call did its share of work;
            //    sleep unless a future was woken meanwhile.
            if budget == 0 {
                io.cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            // A deadline or a token nothing else would wake the stream for:
            // the timer will. If its time came already, read the clock
            // again and go round.
            if let (Some(at), Some(alarm)) = (engine.alarm(), alarm.as_mut()) {
                if alarm.poll_at(at, io.cx).is_ready() {
                    // Once per poll: a fresh reading acts on what came due.
                    // A timer that fires again at once (its clock ahead of
                    // the stream's) gets a yield, not a spin.
                    if std::mem::replace(&mut timer_fired, true) {
                        io.cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    engine.begin_section();
                    if engine.deadline_due() {
                        engine.pass_deadline(&mut io);
                    }
                    continue;
                }
            }
            if !io.slots.has_woken() && io.slots.park(io.cx.waker()) {
                return Poll::Pending;
            }
        }
    }
}

/// Asks the engine for starts until there is none, running each in a slot
/// and polling it once (a future that completes at once is settled at once),
/// then lets it top up the waiting queue. Returns whether anything started or
/// became an outcome without running (expired, shed): then the caller goes
/// round again.
#[inline(always)]
fn fill<R: Spec>(engine: &mut Engine<R>, io: &mut Drive<'_, '_, R>) -> bool {
    let mut started = false;
    while let Some(step) = engine.step(io) {
        started = true;
        let Step::Start(Start {
            position,
            started: stamp,
            future,
        }) = step
        else {
            continue;
        };
        if let Poll::Ready((stamp, output)) = io.slots.start(Stamped::new(stamp, future), position)
        {
            if let Err(error) = engine.complete(position, stamp, output) {
                engine.fail(error, io);
            }
        }
    }
    engine.fill_queue(io) || started
}

/// What the engine reaches through the in-place driver: the source, polled
/// with the consumer's context, and the slots.
struct Drive<'a, 'b, R: Spec> {
    source: Pin<&'a mut R::Source>,
    cx: &'a mut Context<'b>,
    slots: &'a mut Slots<Running<R>>,
}

impl<R: Spec> Io<R> for Drive<'_, '_, R> {
    #[inline(always)]
    fn pull(&mut self) -> Pulled<R> {
        match R::poll_source(self.source.as_mut(), self.cx) {
            Poll::Ready(Some(item)) => Pulled::Item(item),
            Poll::Ready(None) => Pulled::Ended,
            Poll::Pending => Pulled::Pending,
        }
    }

    fn cancel_running(&mut self, each: &mut dyn FnMut(u64)) {
        self.slots.cancel_all(each);
    }

    fn discard(&mut self, item: Discarded<R>) {
        drop(item);
    }
}
