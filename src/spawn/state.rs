//! What the consumer and the worker tasks share, behind one lock: the
//! [`Engine`], moved here whole by `spawn_on`, and what only this driver has
//! (the source, the tasks, the consumer's waker, a panic to re-raise).
//!
//! Each method here is one *lock section*: it asks the engine, touches
//! nothing but this state, the source's `poll_next` and wakers' `clone`, and
//! returns what must happen once the lock is released ([`Deferred`]): wakes,
//! spawns, and destructors of user types, none of which may run under the lock
//! (a waker may poll its task at once; a destructor may panic). No admission,
//! ordering, expiry, shedding or fail-fast rule is written here: the engine's
//! answers say which task to send for and whom to wake.

use std::any::Any;
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Waker};
use std::time::Instant;

use super::alarm::Wake;
use super::source::{Pull, Source};
use super::tasks::{TaskHandle, Tasks};
use crate::clock::{Clocking, Flag};
use crate::engine::{Discarded, Ending, Engine, Io, Outcome, Pulled, SendSpec, Stamp, Start};
use crate::limits::{Limits, Signal};
use crate::stats::Stats;
use crate::sync::Arc;
use crate::timings::Timings;

/// Why the stream cannot go on.
pub(super) enum Failure {
    /// A future, the source, a destructor or the spawner panicked.
    Panicked(Box<dyn Any + Send>),
    /// The executor dropped a task before it finished.
    Lost,
}

/// What a worker task does next.
pub(super) enum Next<R: SendSpec> {
    /// Run this future (see [`Start`]).
    Start(Start<R>),
    /// Nothing to start: sleep until woken.
    Park,
    /// The stream was cancelled: end the task.
    Stop,
}

/// What the consumer's poll finds.
pub(super) enum Handout<T> {
    Output(T),
    /// Everything was yielded and nothing more will come.
    End,
    Failed(Failure),
    /// Nothing yet; the consumer's waker is registered.
    Pending,
}

/// What a cancellation, or the engine, let go of: dropped once the lock is
/// released, the tasks and the consumer woken.
pub(super) struct Leftovers<R: SendSpec> {
    /// Set once the tasks were told to stop (the run is over).
    pub(super) cancelled: bool,
    pub(super) source: Option<Pin<Box<R::Source>>>,
    /// Waiting items the stream will never start (with the time each was
    /// pulled).
    pub(super) waiting: VecDeque<(Stamp<R>, R::Future)>,
    /// Held outcomes the stream will never yield.
    pub(super) held: Vec<Outcome<R>>,
    pub(super) tasks: Vec<Arc<TaskHandle>>,
    pub(super) consumer: Option<Waker>,
}

/// The work a lock section leaves for after the lock is released.
#[must_use = "wakes and spawns left undone strand work"]
pub(super) struct Deferred<R: SendSpec> {
    /// The consumer parked and now has something to take (or the stream ended).
    pub(super) consumer: Option<Waker>,
    /// An idle task made the searcher.
    pub(super) searcher: Option<Waker>,
    /// A busy task sent to pull ahead.
    pub(super) refill: Option<Waker>,
    /// A task was counted and must be spawned.
    pub(super) spawn: bool,
    /// The source returned `None`, or was closed: drop it.
    pub(super) ended: Option<Pin<Box<R::Source>>>,
    /// The run was cancelled (or failed) in this section, or the engine let
    /// go of items. Boxed: it happens once per stream, and every section's
    /// `Deferred` is built and moved, so it stays small.
    pub(super) leftovers: Option<Box<Leftovers<R>>>,
    /// A failure that came too late to report, dropped outside the lock (its
    /// payload is a user type).
    pub(super) unreported: Option<Failure>,
    /// A waker let go without a wake, dropped outside the lock (a waker's
    /// drop is executor code).
    pub(super) unwoken: Option<Waker>,
    /// The alarm task must sleep until an earlier instant than it does: wake
    /// it (its waker is outside the lock, in [`Shared`](super::shared::Shared)).
    /// Of size zero for a stream that reads no clock, which has no alarm.
    pub(super) wake_alarm: <R::Clock as Clocking>::Flag,
}

impl<R: SendSpec> Deferred<R> {
    fn new() -> Self {
        Self {
            consumer: None,
            searcher: None,
            refill: None,
            spawn: false,
            ended: None,
            leftovers: None,
            unreported: None,
            unwoken: None,
            wake_alarm: Default::default(),
        }
    }

    fn leftovers(&mut self) -> &mut Leftovers<R> {
        self.leftovers.get_or_insert_with(|| {
            Box::new(Leftovers {
                cancelled: false,
                source: None,
                waiting: VecDeque::new(),
                held: Vec::new(),
                tasks: Vec::new(),
                consumer: None,
            })
        })
    }
}

/// This driver's own parts of the state: the mechanism around the engine.
pub(super) struct Port<R: SendSpec> {
    source: Source<R>,
    pub(super) tasks: Tasks,
    /// The consumer's waker while it is parked; taken by whoever wakes it.
    consumer: Option<Waker>,
    /// A panic (or a lost task) to re-raise in the consumer.
    failure: Option<Failure>,
    /// The tasks were told to stop: set once, when the run is over.
    cancelled: bool,
    /// With deadlines: the input position of the item each task runs, by
    /// task, for the run's deadline to say which it cancelled.
    running: Vec<Option<u64>>,
    /// Whether the alarm task (a stream with a timer) sleeps, not woken
    /// since, and the instant it sleeps until: a section that needs it
    /// earlier wakes it.
    alarm_sleeps: bool,
    alarm_at: Option<Instant>,
}

impl<R: SendSpec> Port<R> {
    /// Tells every task to stop, and takes the source, the tasks' handles and
    /// the consumer's waker out, to be dropped and woken after the lock.
    fn cancel(&mut self, deferred: &mut Deferred<R>) {
        if std::mem::replace(&mut self.cancelled, true) {
            return;
        }
        let leftovers = deferred.leftovers();
        leftovers.cancelled = true;
        leftovers.source = self.source.take();
        leftovers.tasks = self.tasks.end_all();
        leftovers.consumer = self.consumer.take();
    }

    /// Takes the parked consumer's waker, to be woken after the lock, unless
    /// this section took it already.
    fn wake_consumer(&mut self, deferred: &mut Deferred<R>) {
        if deferred.consumer.is_none() {
            deferred.consumer = self.consumer.take();
        }
    }
}

/// What the engine reaches through this driver during one lock section.
struct Section<'a, 'b, R: SendSpec> {
    port: &'a mut Port<R>,
    deferred: &'a mut Deferred<R>,
    /// The task whose section this is, and its context: only tasks pull.
    task: Option<(usize, &'a mut Context<'b>)>,
}

impl<R: SendSpec> Io<R> for Section<'_, '_, R> {
    fn pull(&mut self) -> Pulled<R> {
        let Some((index, cx)) = &mut self.task else {
            unreachable!("only a worker task pulls from the source");
        };
        if Engine::<R>::RANKED
            && let Some(waiter) = self.port.source.waiter()
        {
            // The engine lets the source be pulled though it is pending (a
            // tenant's waiting places freed, see `Engine::unblock_source`):
            // this pull polls again everything it polled, with this task's
            // waker, which becomes the one the source wakes.
            self.port.source.waiter_polled();
            self.port.tasks.set_source_waiter(waiter, false);
        }
        match self.port.source.pull(*index, cx) {
            Pull::Item(item) => Pulled::Item(item),
            Pull::Pending => {
                self.port.tasks.set_source_waiter(*index, true);
                Pulled::Pending
            }
            Pull::Ended(source) => {
                self.deferred.ended = source;
                Pulled::Ended
            }
            // A source that panics fails the stream in this same section,
            // so nobody sees it as ended.
            Pull::Panicked(source, payload) => {
                self.deferred.ended = Some(source);
                self.port.failure = Some(Failure::Panicked(payload));
                self.port.cancel(self.deferred);
                Pulled::Broken
            }
        }
    }

    fn cancel_running(&mut self, each: &mut dyn FnMut(u64)) {
        for position in self.port.running.iter_mut().filter_map(Option::take) {
            each(position);
        }
        self.port.cancel(self.deferred);
    }

    fn discard(&mut self, item: Discarded<R>) {
        let leftovers = self.deferred.leftovers();
        match item {
            Discarded::Waiting(waiting) => leftovers.waiting.extend(waiting),
            Discarded::Held(outcome) => leftovers.held.push(outcome),
        }
    }
}

pub(super) struct State<R: SendSpec> {
    engine: Engine<R>,
    port: Port<R>,
}

impl<R: SendSpec> State<R> {
    /// The state of a stream whose engine `spawn_on` moved here. A stream
    /// closed before then has nothing to pull: its source goes now.
    pub(super) fn new(source: Pin<Box<R::Source>>, engine: Engine<R>) -> Self {
        let source = (!engine.life().is_closed()).then_some(source);
        Self {
            engine,
            port: Port {
                source: Source::new(source),
                tasks: Tasks::new(),
                consumer: None,
                failure: None,
                cancelled: false,
                running: Vec::new(),
                alarm_sleeps: false,
                alarm_at: None,
            },
        }
    }

    /// Runs `section` with the engine and an [`Io`] over this driver.
    fn with<T>(
        &mut self,
        deferred: &mut Deferred<R>,
        task: Option<(usize, &mut Context<'_>)>,
        section: impl FnOnce(&mut Engine<R>, &mut Section<'_, '_, R>) -> T,
    ) -> T {
        let mut io = Section {
            port: &mut self.port,
            deferred,
            task,
        };
        section(&mut self.engine, &mut io)
    }

    /// Every lock section begins here: the clock reading of the previous one
    /// is stale.
    pub(super) fn begin_section(&mut self) {
        self.engine.begin_section();
    }

    /// Every lock section ends here: the `metrics` exporter, if any, gets
    /// what changed in it (see [`Engine::publish`]): at once while the
    /// consumer waits (it is parked, and nobody takes outputs: the counts
    /// stand as the tasks leave them, or it is being woken to look), or once
    /// the run is over; else every 64th section, as the consumer takes one
    /// output after another.
    #[inline]
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(super) fn publish(&mut self, deferred: &Deferred<R>) {
        let port = &self.port;
        self.engine
            .publish(|| port.cancelled || deferred.consumer.is_some() || port.consumer.is_some());
    }

    pub(super) fn timings(&self) -> Option<Timings> {
        self.engine.timings()
    }

    pub(super) fn stats(&self) -> Stats {
        self.engine.stats()
    }

    pub(super) fn engine(&self) -> &Engine<R> {
        &self.engine
    }

    /// A handle whose changes reach this state through `signal`.
    pub(super) fn limits(&self, signal: impl FnOnce() -> Signal) -> Limits {
        self.engine.limits(signal)
    }

    /// What the stream may still yield. `Err` holds the panic of the
    /// source's `size_hint` (asked here, under the lock, where nobody polls
    /// it meanwhile), to re-raise after the lock.
    pub(super) fn size_hint(&self) -> Result<(usize, Option<usize>), Box<dyn Any + Send>> {
        self.engine.size_hint(|| self.port.source.size_hint())
    }

    // -- The consumer's sections ------------------------------------------

    /// The first poll: the stream looks for work for the first time.
    pub(super) fn begin(&mut self) -> Deferred<R> {
        let mut deferred = Deferred::new();
        self.engine.life_mut().begin();
        self.dispatch(&mut deferred);
        deferred
    }

    /// A [`Limits`] handle set the limits: the engine applies
    /// them. A raise sends for a task at once: for a start it freed (the
    /// dispatch), or, when no start is free but the queue may grow, a task to
    /// pull ahead (the refill). Before the first poll nothing is sent.
    pub(super) fn set_limits(&mut self) -> Deferred<R> {
        let mut deferred = Deferred::new();
        self.engine.apply_limits();
        if !self.engine.life().is_new() && !self.port.cancelled {
            self.dispatch(&mut deferred);
            self.send_to_refill(&mut deferred);
        }
        deferred
    }

    /// The consumer's poll: a panic first, then the next outcome (taking it
    /// frees budget, which the searcher is sent for), then the error that
    /// ended the run, then the end; otherwise it registers `waker` and parks.
    pub(super) fn hand_out(&mut self, waker: &Waker) -> (Handout<R::Item>, Deferred<R>) {
        let mut deferred = Deferred::new();
        if let Some(failure) = self.port.failure.take() {
            return (Handout::Failed(failure), deferred);
        }
        if self.engine.deadline_due() && !self.port.cancelled {
            self.with(&mut deferred, None, |engine, io| engine.pass_deadline(io));
        }
        if let Some((outcome, unstarted)) = self.engine.hand_out() {
            self.dispatch(&mut deferred);
            if unstarted {
                // It held a waiting place or a rejection's allowance, which
                // is free now.
                self.send_to_refill(&mut deferred);
            }
            return (Handout::Output(R::ok(outcome)), deferred);
        }
        match self.engine.end() {
            Some(Ending::Error(error)) => (Handout::Output(R::err(error)), deferred),
            Some(Ending::Done) => {
                self.cancel(&mut deferred);
                self.engine.life_mut().leave_poll(true);
                (Handout::End, deferred)
            }
            None => {
                match &mut self.port.consumer {
                    Some(parked) => parked.clone_from(waker),
                    None => self.port.consumer = Some(waker.clone()),
                }
                (Handout::Pending, deferred)
            }
        }
    }

    /// [`Spawned::close`](super::Spawned::close): nothing more is pulled, and
    /// the source goes at once (dropped once the lock is released; in place
    /// keeps it for `reopen`, which a spawned stream does not have); the
    /// running and waiting items still finish and are handed out, and then
    /// the stream ends. Wakes a parked consumer if that end is now.
    pub(super) fn close(&mut self) -> Deferred<R> {
        let mut deferred = Deferred::new();
        if let Some(waiter) = self.port.source.waiter() {
            // Its next poll need not let anyone pull again: nobody will.
            self.port.tasks.set_source_waiter(waiter, false);
        }
        self.engine.life().close();
        deferred.ended = self.port.source.take();
        self.wake_consumer_at_end(&mut deferred);
        deferred
    }

    /// Takes away what only the consumer could still have taken (the held
    /// outcomes, an error or a panic not yet yielded) and the handles'
    /// settings, for the stream's `Drop` to drop on its own thread.
    pub(super) fn take_untaken(&mut self, held: &mut Vec<Outcome<R>>) -> Untaken<R> {
        let error = self.engine.take_untaken(|outcome| held.push(outcome));
        Untaken {
            error,
            failure: self.port.failure.take(),
            settings: self.engine.take_settings(),
        }
    }

    // -- The worker tasks' sections ---------------------------------------

    /// Task `index` has no item: it takes one if the engine allows, tops up
    /// the waiting queue, and sends for another task if work is left; or
    /// parks.
    pub(super) fn find_work(
        &mut self,
        index: usize,
        cx: &mut Context<'_>,
    ) -> (Next<R>, Deferred<R>) {
        let mut deferred = Deferred::new();
        if self.port.cancelled {
            return (Next::Stop, deferred);
        }
        self.port.tasks.arrive(index);
        self.source_polled_again(index);
        let next = self.next_for(index, cx, &mut deferred);
        (next, deferred)
    }

    /// Task `index` completed the item at `position`: the engine settles it
    /// (waking the consumer if it can take it), and the task goes on as in
    /// [`State::find_work`]; an error fails fast and the task stops. Gives
    /// the output back if the stream was cancelled: nobody will take it, and
    /// the task drops it outside the lock.
    pub(super) fn complete(
        &mut self,
        index: usize,
        start: (u64, crate::engine::Started<R>),
        output: R::Output,
        cx: &mut Context<'_>,
    ) -> (Result<Next<R>, R::Output>, Deferred<R>) {
        let mut deferred = Deferred::new();
        if self.port.cancelled {
            return (Err(output), deferred);
        }
        let (position, started) = start;
        self.runs(index, None);
        match self.engine.complete(position, started, output) {
            Ok(ready) => {
                if ready {
                    self.port.wake_consumer(&mut deferred);
                }
            }
            Err(error) => {
                self.with(&mut deferred, None, |engine, io| engine.fail(error, io));
                return (Ok(Next::Stop), deferred);
            }
        }
        let next = self.next_for(index, cx, &mut deferred);
        (Ok(next), deferred)
    }

    /// Task `index`, busy with a future, may have been woken by the source,
    /// or was sent to pull ahead ([`State::send_to_refill`]): lets the source
    /// be pulled again if it was waiting on this task, tops up the queue and
    /// sends for a task if a start is free. Returns whether the stream is
    /// cancelled, by this section's pull (the source's error or panic) or
    /// before it: then the task must not poll its future again, which may not
    /// have had its first poll yet (rule 5).
    pub(super) fn look_again(&mut self, index: usize, cx: &mut Context<'_>) -> (bool, Deferred<R>) {
        let mut deferred = Deferred::new();
        if !self.port.cancelled {
            self.source_polled_again(index);
            self.with(&mut deferred, Some((index, cx)), |engine, io| {
                engine.top_up(io)
            });
            self.after_starts(&mut deferred);
        }
        (self.port.cancelled, deferred)
    }

    /// Records `failure` and cancels, unless the stream already ended, was
    /// dropped or failed: then nobody is waiting for it, and it is handed back.
    pub(super) fn fail(&mut self, failure: Failure) -> Deferred<R> {
        let mut deferred = Deferred::new();
        if self.port.cancelled || self.port.failure.is_some() {
            deferred.unreported = Some(failure);
        } else {
            self.port.failure = Some(failure);
            self.cancel(&mut deferred);
        }
        deferred
    }

    /// [`State::cancel`], for the consumer (the stream is dropped).
    pub(super) fn stop(&mut self) -> Deferred<R> {
        let mut deferred = Deferred::new();
        // The consumer is the one stopping: its waker is let go, not woken (a
        // wake would be a spurious one of the task that dropped the stream).
        deferred.unwoken = self.port.consumer.take();
        self.cancel(&mut deferred);
        deferred
    }

    /// The run is over (ended, dropped, or broken by a panic): the engine
    /// lets go of the waiting items, and every task is told to stop.
    fn cancel(&mut self, deferred: &mut Deferred<R>) {
        if !self.port.cancelled {
            self.with(deferred, None, |engine, io| {
                engine.abandon(io);
                io.cancel_running(&mut |_| {});
            });
        }
    }

    /// The next task counted and not spawned yet, unless cancelled.
    pub(super) fn next_to_spawn(&mut self) -> Option<(usize, Arc<TaskHandle>)> {
        if self.port.cancelled {
            return None;
        }
        self.port.tasks.next_to_spawn()
    }

    pub(super) fn has_unspawned(&self) -> bool {
        !self.port.cancelled && self.port.tasks.has_unspawned()
    }

    // -- Mechanism around the engine's answers ----------------------------

    /// If task `index` is the one the pending source will wake, it was polled
    /// again: anyone may pull from the source again.
    fn source_polled_again(&mut self, index: usize) {
        if self.port.source.waiter() == Some(index) {
            self.port.source.waiter_polled();
            self.port.tasks.set_source_waiter(index, false);
            self.engine.life_mut().source_woke();
        }
    }

    /// The common end of a worker's section: its next item or a park, then
    /// the top-up (only once no start is free: while one is, the task sent
    /// for it pulls its item itself), the hand-off and the consumer's wakes.
    fn next_for(
        &mut self,
        index: usize,
        cx: &mut Context<'_>,
        deferred: &mut Deferred<R>,
    ) -> Next<R> {
        let start = self.with(deferred, Some((index, &mut *cx)), |engine, io| {
            engine.next_start(io)
        });
        let next = match start {
            Some(start) => {
                self.runs(index, Some(start.position));
                Next::Start(start)
            }
            None if self.port.cancelled => return Next::Stop,
            None => {
                self.port.tasks.park(index);
                Next::Park
            }
        };
        self.with(deferred, Some((index, cx)), |engine, io| engine.top_up(io));
        if self.port.cancelled {
            // The top-up met the source's error (or panic): nothing starts
            // once it is seen, so the item taken just before goes with the
            // waiting ones and the task stops. On purpose in this driver
            // only: in place, an item taken is polled at once, before any
            // later pull.
            if let Next::Start(start) = next {
                self.runs(index, None);
                let leftovers = deferred.leftovers();
                leftovers.waiting.push_back((start.started.0, start.future));
            }
            return Next::Stop;
        }
        self.after_starts(deferred);
        next
    }

    /// After a section that may have started, expired or shed items: a task
    /// for the next free start, and the consumer woken if it has something
    /// to take or the stream just ended.
    fn after_starts(&mut self, deferred: &mut Deferred<R>) {
        self.dispatch(deferred);
        if self.engine.take_ready() {
            self.port.wake_consumer(deferred);
        }
        self.wake_consumer_at_end(deferred);
    }

    /// The hand-off: if the engine has a start with an item for it, and no
    /// task is on its way already, sends one: the task idle longest, or a new
    /// one below the worker budget. Only one searcher at a time: it sends the
    /// next one itself if work is left once it took its item, so a burst of
    /// freed starts costs one wake, not one per start.
    fn dispatch(&mut self, deferred: &mut Deferred<R>) {
        if self.port.cancelled || self.port.tasks.is_searching() {
            return;
        }
        if !self.engine.has_start() {
            // A start the rate alone refuses waits for a token from now
            // (the engine's rule; nothing for a stream without a rate).
            self.engine.note_rate_wait();
            return;
        }
        let tasks = &mut self.port.tasks;
        if let Some(waker) = tasks.wake_idle() {
            deferred.searcher = waker;
        } else if tasks.len() < self.engine.budgets().workers {
            tasks.add();
            deferred.spawn = true;
        }
    }

    /// The refill: a section that freed a waiting place and no start (an
    /// expired output taken, a raise of `waiting`) sends a task to pull ahead,
    /// since only tasks pull: an idle one (its `find_work` tops the queue up),
    /// else a busy one, flagged, whose next poll does it before polling its
    /// future again (a spurious poll, which every future must allow). Not
    /// while a searcher is on its way (it tops up too) or the source is
    /// pending (its wake reaches a task that tops up: rule 4).
    fn send_to_refill(&mut self, deferred: &mut Deferred<R>) {
        let tasks = &mut self.port.tasks;
        if self.port.cancelled
            || tasks.is_searching()
            || self.engine.has_start()
            || !self.engine.may_pull_ahead()
        {
            return;
        }
        if let Some(waker) = tasks.wake_idle() {
            deferred.searcher = waker;
        } else if let Some(waker) = tasks.wake_busy_to_refill() {
            deferred.refill = waker;
        }
    }

    /// Notes the item task `index` runs (with deadlines only: the run's
    /// deadline reports each by its position).
    #[inline(always)]
    fn runs(&mut self, index: usize, position: Option<u64>) {
        if Engine::<R>::DEADLINES {
            if self.port.running.len() <= index {
                self.port.running.resize(index + 1, None);
            }
            self.port.running[index] = position;
        }
    }

    /// The alarm task's section: its time came (or it was woken to look).
    /// The run stops if its deadline passed; a start a token freed gets a
    /// task. Then it sleeps until the engine's next alarm, if any; a section
    /// that needs it sooner wakes it ([`State::check_alarm`]).
    pub(super) fn alarm(&mut self) -> (Wake, Deferred<R>) {
        let mut deferred = Deferred::new();
        if !self.port.cancelled && self.engine.deadline_due() {
            self.with(&mut deferred, None, |engine, io| engine.pass_deadline(io));
            if self.engine.take_ready() {
                self.port.wake_consumer(&mut deferred);
            }
        }
        if self.port.cancelled {
            self.port.alarm_sleeps = false;
            return (Wake::Stop, deferred);
        }
        self.dispatch(&mut deferred);
        let at = self.engine.alarm();
        self.port.alarm_sleeps = true;
        self.port.alarm_at = at;
        (at.map_or(Wake::Idle, Wake::At), deferred)
    }

    /// At the end of every section: if the alarm task sleeps and the engine
    /// now needs waking sooner than it sleeps until, it is woken to sleep
    /// until then. (One flag read for a stream without a timer.)
    #[inline]
    pub(super) fn check_alarm(&mut self, deferred: &mut Deferred<R>) {
        if !self.port.alarm_sleeps {
            return;
        }
        if let Some(at) = self.engine.alarm() {
            if self.port.alarm_at.is_none_or(|armed| at < armed) {
                self.port.alarm_sleeps = false;
                deferred.wake_alarm.raise();
            }
        }
    }

    /// Wakes a parked consumer if the stream just ended.
    fn wake_consumer_at_end(&mut self, deferred: &mut Deferred<R>) {
        if self.engine.is_finished() {
            self.port.wake_consumer(deferred);
        }
    }
}

/// What the stream's `Drop` takes out of the state once it cancelled, besides
/// the held outcomes: all user types, or what points back at the state.
pub(super) struct Untaken<R: SendSpec> {
    /// `try_bounded`'s error, not yielded yet.
    pub(super) error: Option<R::Error>,
    /// A panic not re-raised yet (its payload is a user type).
    pub(super) failure: Option<Failure>,
    /// The handles' settings point back at this state (weakly; under loom,
    /// whose `Arc` has no weak count, strongly).
    pub(super) settings: Option<std::sync::Arc<crate::limits::Settings>>,
}
