//! Everything the consumer and the worker tasks share, behind one lock, and the
//! admission rules applied to it (through [`Budgets`]: the rules themselves are
//! written there and nowhere else).
//!
//! Each method here is one *lock section*: it runs with the lock held, touches
//! nothing but this state, the source's `poll_next` and wakers' `clone`, and
//! returns what must happen once the lock is released ([`Deferred`]): wakes,
//! spawns, and destructors of user types, none of which may run under the lock
//! (a waker may poll its task at once; a destructor may panic).

use std::any::Any;
use std::collections::VecDeque;
use std::mem;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Waker};
use std::time::Duration;

use super::counts::Counts;
use super::run::Run;
use super::source::{Pulled, Source};
use super::tasks::{TaskHandle, Tasks};
use crate::adaptive::Adjust;
use crate::admission::Admits;
use crate::budget::Budgets;
use crate::clock::Clocking;
use crate::held::Held;
use crate::limits;
use crate::observe::Metrics;
use crate::shed::{self, Shed};
use crate::stats::{self, Stats};
use crate::sync::Arc;
use crate::timings::Timings;

/// When something happened to an item: `()` unless the stream reads a clock.
pub(super) type Stamp<R> = <<R as Run>::Clock as Clocking>::Stamp;

/// What a running item carries until it completes: when it started, and its
/// admission ticket (`((), ((), ()))` for a plain stream).
pub(super) type Started<R> = (
    Stamp<R>,
    <<R as Run>::Admission as Admits<<R as Run>::Unit>>::Ticket,
);

/// Why the stream cannot go on.
pub(super) enum Failure {
    /// A future, the source, a destructor or the spawner panicked.
    Panicked(Box<dyn Any + Send>),
    /// The executor dropped a task before it finished.
    Lost,
}

/// What a worker task does next.
pub(super) enum Next<R: Run> {
    /// Run this future, the item at this input position, started at this
    /// time, with this admission ticket.
    Run(u64, Started<R>, R::Future),
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

/// What a cancellation took out of the state, to be dropped and woken once the
/// lock is released.
pub(super) struct Leftovers<R: Run> {
    pub(super) source: Option<Pin<Box<R::Source>>>,
    pub(super) waiting: VecDeque<(Stamp<R>, R::Future)>,
    /// Held outputs a fail-fast error made unyieldable (ordered: those behind
    /// the first gap).
    pub(super) held: Vec<(Stamp<R>, R::Outcome)>,
    pub(super) tasks: Vec<Arc<TaskHandle>>,
    pub(super) consumer: Option<Waker>,
}

/// What the stream's `Drop` takes out of the state once it cancelled: what
/// only the consumer could still have taken, all user types.
pub(super) struct Untaken<R: Run> {
    pub(super) held: Held<(Stamp<R>, R::Outcome)>,
    /// `try_bounded`'s error, not yielded yet.
    pub(super) error: Option<R::Error>,
    /// A panic not re-raised yet (its payload is a user type).
    pub(super) failure: Option<Failure>,
}

/// The work a lock section leaves for after the lock is released.
#[must_use = "wakes and spawns left undone strand work"]
pub(super) struct Deferred<R: Run> {
    /// The consumer parked and now has something to take (or the stream ended).
    pub(super) consumer: Option<Waker>,
    /// An idle task made the searcher.
    pub(super) searcher: Option<Waker>,
    /// A busy task sent to pull ahead.
    pub(super) refill: Option<Waker>,
    /// A task was counted and must be spawned.
    pub(super) spawn: bool,
    /// The source returned `None`: drop it.
    pub(super) ended: Option<Pin<Box<R::Source>>>,
    /// The stream was cancelled (or failed) in this section.
    /// Boxed: it happens once per stream, and every section's `Deferred`
    /// is built and moved, so it stays small.
    pub(super) cancelled: Option<Box<Leftovers<R>>>,
    /// A failure that came too late to report, dropped outside the lock (its
    /// payload is a user type).
    pub(super) unreported: Option<Failure>,
    /// A waker let go without a wake, dropped outside the lock (a waker's
    /// drop is executor code).
    pub(super) unwoken: Option<Waker>,
}

impl<R: Run> Deferred<R> {
    fn new() -> Self {
        Self {
            consumer: None,
            searcher: None,
            refill: None,
            spawn: false,
            ended: None,
            cancelled: None,
            unreported: None,
            unwoken: None,
        }
    }
}

pub(super) struct State<R: Run> {
    /// Read on every admission decision, never copied into a task.
    budgets: Budgets,
    source: Source<R>,
    /// Items pulled and not started, oldest first, each with the time it was
    /// pulled.
    waiting: VecDeque<(Stamp<R>, R::Future)>,
    /// Outcomes not handed out yet, each with the time it completed.
    held: Held<(Stamp<R>, R::Outcome)>,
    /// How many held outcomes are expired items (always 0 without `max_wait`):
    /// they count against the waiting budget, not the workers'.
    held_expired: usize,
    /// How many held outcomes are rejected items (always 0 without `shed`):
    /// they count against the rejection allowance ([`crate::shed`]).
    held_rejected: usize,
    /// The input positions of the waiting items, side by side with them, when
    /// an ordered stream with keys, weights or shedding takes them at the
    /// pull (as in place: [`State::seated`]).
    seats: VecDeque<u64>,
    /// The key and weight rules.
    admission: R::Admission,
    /// Which item a shedding stream hands back.
    shed: Shed,
    /// Ordered: the input position of the next output to hand out, so a
    /// completion wakes the consumer only when it can take something.
    front: u64,
    counts: Counts,
    pub(super) tasks: Tasks,
    /// The consumer's waker while it is parked; taken by whoever wakes it.
    consumer: Option<Waker>,
    failure: Option<Failure>,
    /// `try_bounded`'s error that ended the run, until it is handed out (after
    /// the outputs that may precede it).
    error: Option<R::Error>,
    /// An error ended the run: once the outputs before it and the error are
    /// handed out, the stream ends.
    failed_fast: bool,
    /// No task starts or pulls anything from now on, and every task ends.
    cancelled: bool,
    /// The first poll has happened: tasks may be sent for. Before it, nothing
    /// is spawned (a limits change only records the new limits).
    begun: bool,
    /// Read at most once per lock section (see [`State::begin_section`]).
    clock: R::Clock,
    /// The adaptive controller, if any, fed in [`State::complete`].
    adaptive: Adjust<R::Output>,
    /// What the [`Limits`](crate::Limits) handles share, once one was asked
    /// for: a controller's decision is published there.
    limits: OnceLock<std::sync::Arc<limits::Shared>>,
    /// The `metrics` exporter, if any: published to at the end of each lock
    /// section ([`State::publish`]).
    metrics: Metrics,
}

/// What [`State::new`] starts from: a never-polled stream's parts.
pub(super) struct Start<R: Run> {
    pub(super) source: Pin<Box<R::Source>>,
    pub(super) budgets: Budgets,
    pub(super) clock: R::Clock,
    pub(super) adaptive: Adjust<R::Output>,
    pub(super) limits: Option<std::sync::Arc<limits::Shared>>,
    pub(super) admission: R::Admission,
    pub(super) shed: Shed,
    pub(super) metrics: Metrics,
}

impl<R: Run> State<R> {
    pub(super) fn new(start: Start<R>) -> Self {
        let Start {
            source,
            budgets,
            clock,
            adaptive,
            limits,
            admission,
            shed,
            metrics,
        } = start;
        Self {
            budgets,
            source: Source::new(source),
            waiting: VecDeque::new(),
            held: if budgets.window.is_some() {
                Held::ordered()
            } else {
                Held::unordered()
            },
            held_expired: 0,
            held_rejected: 0,
            seats: VecDeque::new(),
            admission,
            shed,
            front: 0,
            counts: Counts::default(),
            tasks: Tasks::new(),
            consumer: None,
            failure: None,
            error: None,
            failed_fast: false,
            cancelled: false,
            begun: false,
            clock,
            adaptive,
            limits: limits.map(OnceLock::from).unwrap_or_default(),
            metrics,
        }
    }

    /// Every lock section begins here: the clock reading of the previous one
    /// is stale (the clock is read lazily, at most once per section).
    pub(super) fn begin_section(&mut self) {
        self.clock.begin_poll();
    }

    /// Every lock section ends here: the `metrics` exporter, if any, gets
    /// what changed in it (see [`crate::observe`]).
    #[inline]
    pub(super) fn publish(&mut self) {
        if self.metrics.is_on() {
            let stats = self.stats();
            let changes = self.budgets.changes();
            self.metrics
                .publish(&stats, self.failed_fast, changes, &mut self.clock);
        }
    }

    /// A copy of the time distributions, if timing is on.
    pub(super) fn timings(&self) -> Option<Timings> {
        self.clock.timings()
    }

    /// The handles' shared limits, made by `make` the first time.
    pub(super) fn limits(
        &self,
        make: impl FnOnce(Budgets) -> std::sync::Arc<limits::Shared>,
    ) -> std::sync::Arc<limits::Shared> {
        std::sync::Arc::clone(self.limits.get_or_init(|| make(self.budgets)))
    }

    pub(super) fn budgets(&self) -> Budgets {
        self.budgets
    }

    pub(super) fn stats(&self) -> Stats {
        let waiting = self.waiting.iter().map(|(_, future)| R::unit(future));
        let (keys_running, blocked_by_key, weights) = if R::Admission::APPLIES {
            self.admission.report(waiting)
        } else {
            (0, 0, [0; 4])
        };
        let [
            running_weight,
            waiting_weight,
            peak_running_weight,
            peak_waiting_weight,
        ] = weights;
        Stats {
            workers_limit: self.budgets.workers,
            waiting_limit: self.budgets.waiting,
            paused: self.budgets.workers == 0,
            keys_running,
            blocked_by_key,
            running_weight,
            waiting_weight,
            peak_running_weight,
            peak_waiting_weight,
            ..self.counts.stats(self.waiting.len(), self.held.len())
        }
    }

    /// What the stream may still yield: every item pulled and not handed
    /// out yet, plus what the source has left (asked here, under the lock,
    /// where nobody polls it meanwhile), by the rule both modes share. `Err`
    /// holds the panic of the source's `size_hint`, to re-raise after the lock.
    pub(super) fn size_hint(&self) -> Result<(usize, Option<usize>), Box<dyn Any + Send>> {
        let in_flight = self
            .counts
            .active
            .saturating_add(self.waiting.len())
            .saturating_add(self.held.len());
        if self.failed_fast {
            // Nothing runs or waits: the held prefix, then the error.
            let left = in_flight + usize::from(self.error.is_some());
            return Ok((left, Some(left)));
        }
        let source = self.source.size_hint()?;
        Ok(stats::size_hint(in_flight, source, R::FALLIBLE))
    }

    // -- The consumer's sections ------------------------------------------

    /// The first poll: the stream looks for work for the first time.
    pub(super) fn begin(&mut self) -> Deferred<R> {
        let mut deferred = Deferred::new();
        self.begun = true;
        self.dispatch(&mut deferred);
        deferred
    }

    /// A [`Limits`](crate::Limits) handle set `workers` and `waiting`. Lowering
    /// only gates later starts and pulls: nothing running or waiting is
    /// touched, and tasks above the new `workers` stay idle. A raise sends for
    /// a task at once: for a start it freed (the dispatch), or, when no start
    /// is free but the queue may grow, a task to pull ahead (the refill).
    pub(super) fn set_limits(&mut self, (workers, waiting): (usize, usize)) -> Deferred<R> {
        let mut deferred = Deferred::new();
        self.budgets.set(workers, waiting);
        if !self.begun || self.cancelled {
            return deferred;
        }
        self.dispatch(&mut deferred);
        self.send_to_refill(&mut deferred);
        deferred
    }

    /// The consumer's poll: a panic first, then the next output (taking it
    /// frees budget, which the searcher is sent for), then the error that
    /// ended the run, then the end; otherwise it registers `waker` and parks.
    pub(super) fn hand_out(&mut self, waker: &Waker) -> (Handout<R::Item>, Deferred<R>) {
        let mut deferred = Deferred::new();
        if let Some(failure) = self.failure.take() {
            return (Handout::Failed(failure), deferred);
        }
        if let Some((completed, outcome)) = self.held.pop() {
            self.front += 1;
            self.clock.handed_out(completed);
            let expired = R::is_expired(&outcome);
            let rejected = R::is_rejected(&outcome);
            if expired {
                self.held_expired -= 1;
            }
            if rejected {
                self.held_rejected -= 1;
            }
            self.dispatch(&mut deferred);
            if expired || rejected {
                // It held a waiting place (unordered), or a rejection's
                // allowance, which is free now.
                self.send_to_refill(&mut deferred);
            }
            return (Handout::Output(R::ok(outcome)), deferred);
        }
        if self.failed_fast {
            // What the held outputs allowed was handed out: the error, then
            // the end (nothing runs or waits any more).
            let handout = match self.error.take() {
                Some(error) => Handout::Output(R::err(error)),
                None => Handout::End,
            };
            return (handout, deferred);
        }
        if self.is_finished() {
            deferred.cancelled = self.cancel();
            return (Handout::End, deferred);
        }
        match &mut self.consumer {
            Some(parked) => parked.clone_from(waker),
            None => self.consumer = Some(waker.clone()),
        }
        (Handout::Pending, deferred)
    }

    /// [`Spawned::close`](super::Spawned::close): takes the source away (it is
    /// dropped once the lock is released), so nothing more is pulled; the
    /// running and waiting items still finish and are handed out, and then
    /// the stream ends. Wakes a parked consumer if that end is now.
    pub(super) fn close(&mut self) -> Deferred<R> {
        let mut deferred = Deferred::new();
        if let Some(waiter) = self.source.waiter() {
            // Its next poll need not let anyone pull again: nobody will.
            self.tasks.set_source_waiter(waiter, false);
        }
        deferred.ended = self.source.take();
        self.wake_consumer_at_end(&mut deferred);
        deferred
    }

    /// Takes the handles' shared limits away, for the stream's `Drop`: a
    /// controller that could publish to them is gone with the stream.
    pub(super) fn take_limits(&mut self) -> Option<std::sync::Arc<limits::Shared>> {
        self.limits.take()
    }

    /// Takes away what only the consumer could still have taken, for the
    /// stream's `Drop` to drop on its own thread.
    pub(super) fn take_untaken(&mut self) -> Untaken<R> {
        Untaken {
            held: mem::replace(&mut self.held, Held::unordered()),
            error: self.error.take(),
            failure: self.failure.take(),
        }
    }

    // -- The worker tasks' sections ---------------------------------------

    /// Task `index` has no item: it takes one if the budgets allow (the oldest
    /// waiting, else a new pull), tops up the waiting queue, and sends for
    /// another task if work is left; or parks.
    pub(super) fn find_work(
        &mut self,
        index: usize,
        cx: &mut Context<'_>,
    ) -> (Next<R>, Deferred<R>) {
        let mut deferred = Deferred::new();
        if self.cancelled {
            return (Next::Stop, deferred);
        }
        self.tasks.arrive(index);
        self.source_polled_again(index);
        let next = self.next_for(index, cx, &mut deferred);
        (next, deferred)
    }

    /// Task `index` completed the item at `position`, started at `started`:
    /// feeds the adaptive controller, if any, then settles the output. An
    /// outcome is stored (waking the consumer if it can take it), and the task
    /// goes on as in [`find_work`]; an error fails fast ([`State::fail_fast`])
    /// and the task stops. Gives the output back if the stream was cancelled:
    /// nobody will take it, and the task drops it outside the lock.
    ///
    /// [`find_work`]: State::find_work
    #[allow(clippy::type_complexity)]
    pub(super) fn complete(
        &mut self,
        index: usize,
        position: u64,
        (started, ticket): Started<R>,
        output: R::Output,
        cx: &mut Context<'_>,
    ) -> (Result<Next<R>, R::Output>, Deferred<R>) {
        let mut deferred = Deferred::new();
        if self.cancelled {
            return (Err(output), deferred);
        }
        self.admission.finished(ticket);
        let completed = self.clock.completed(started);
        // Only a clock that measures runs answers: the branch is gone from a
        // stream without one.
        if let Some(run) = self.clock.run_of(started, completed) {
            // Still counted as active: the counts while it ran.
            let counts = (self.counts.active, self.held.len(), self.held_unstarted());
            self.adaptive
                .observe(&output, run, counts, &mut self.budgets, &self.limits);
        }
        match R::settle(output) {
            Ok(outcome) => {
                self.held.complete(position, (completed, outcome));
                self.counts.completed(self.held.len());
                // Ordered, only the oldest unyielded output can be taken.
                if self.budgets.window.is_none() || position == self.front {
                    self.wake_consumer(&mut deferred);
                }
            }
            Err(error) => {
                self.counts.completed(self.held.len());
                self.fail_fast(error, &mut deferred);
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
        if !self.cancelled {
            self.source_polled_again(index);
            self.top_up(index, cx, &mut deferred);
            self.dispatch(&mut deferred);
            self.wake_consumer_at_end(&mut deferred);
        }
        (self.cancelled, deferred)
    }

    /// Records `failure` and cancels, unless the stream already ended, was
    /// dropped or failed: then nobody is waiting for it, and it is handed back.
    pub(super) fn fail(&mut self, failure: Failure) -> Deferred<R> {
        let mut deferred = Deferred::new();
        if self.cancelled || self.failure.is_some() {
            deferred.unreported = Some(failure);
        } else {
            self.failure = Some(failure);
            deferred.cancelled = self.cancel();
        }
        deferred
    }

    /// [`State::cancel`], for the consumer (the stream ended or is dropped).
    pub(super) fn stop(&mut self) -> Deferred<R> {
        let mut deferred = Deferred::new();
        // The consumer is the one stopping: its waker is let go, not woken (a
        // wake would be a spurious one of the task that dropped the stream).
        deferred.unwoken = self.consumer.take();
        deferred.cancelled = self.cancel();
        deferred
    }

    /// Stops everything: from now on no task starts or pulls anything, and
    /// each ends on its next poll. Takes the source, the waiting items, the
    /// tasks' handles (to wake them) and the consumer's waker out, for the
    /// caller to drop and wake once the lock is released. `None` if it was
    /// cancelled already.
    pub(super) fn cancel(&mut self) -> Option<Box<Leftovers<R>>> {
        if mem::replace(&mut self.cancelled, true) {
            return None;
        }
        self.seats.clear();
        self.admission.clear();
        Some(Box::new(Leftovers {
            source: self.source.take(),
            waiting: mem::take(&mut self.waiting),
            held: Vec::new(),
            tasks: self.tasks.end_all(),
            consumer: self.consumer.take(),
        }))
    }

    /// The next task counted and not spawned yet, unless cancelled.
    pub(super) fn next_to_spawn(&mut self) -> Option<(usize, Arc<TaskHandle>)> {
        if self.cancelled {
            return None;
        }
        self.tasks.next_to_spawn()
    }

    pub(super) fn has_unspawned(&self) -> bool {
        !self.cancelled && self.tasks.has_unspawned()
    }

    // -- The rules -------------------------------------------------------

    /// Whether one more item may start now (with keys, weights or shedding,
    /// by `Budgets::may_start_admitted`, as in place).
    fn may_start(&self) -> bool {
        if Self::admitted() {
            let rejected = if R::REJECTS { self.held_rejected } else { 0 };
            return self.budgets.may_start_admitted(
                self.counts.active,
                self.held.len(),
                self.held_unstarted(),
                rejected,
            );
        }
        self.budgets
            .may_start(self.counts.active, self.held.len(), self.held_unstarted())
    }

    /// Held outcomes that take no worker: expired and rejected items (a
    /// constant 0 without `max_wait` and `shed`).
    #[inline(always)]
    fn held_unstarted(&self) -> usize {
        let expired = if R::EXPIRES { self.held_expired } else { 0 };
        let rejected = if R::REJECTS { self.held_rejected } else { 0 };
        expired + rejected
    }

    /// Whether keys, weights or shedding apply: then every item is pulled into
    /// a waiting place and started from there ([`crate::admission`]).
    #[inline(always)]
    fn admitted() -> bool {
        R::Admission::APPLIES || R::REJECTS
    }

    /// Whether the ordered stream takes its items' input positions at the
    /// pull (see `Core::seated` in place).
    fn seated(&self) -> bool {
        Self::admitted() && self.budgets.window.is_some()
    }

    /// Whether one more item may be pulled into a waiting place of an
    /// admitted stream: a place free (at least one) and the weight waiting
    /// below its budget.
    fn may_queue_admitted(&self) -> bool {
        self.may_queue_admitted_without(0, 0)
    }

    /// [`State::may_queue_admitted`], were the `gone` oldest waiting items,
    /// counting `gone_weight` in all, gone.
    fn may_queue_admitted_without(&self, gone: usize, gone_weight: u128) -> bool {
        let queued = self.waiting.len() - gone;
        let place = if R::Admission::APPLIES {
            self.budgets.may_queue_seated(queued, self.held_expired)
        } else {
            self.budgets.may_queue(queued, self.held_expired)
        };
        place && self.admission.may_queue_without(gone_weight)
    }

    /// The waiting item the rules let start now, if any, looking last at
    /// `pulled` (an item just pulled past the full queue, with its position),
    /// whose index is then the queue's length (see `Core::pick` in place).
    fn pick(&self, pulled: Option<(&R::Future, Option<u64>)>) -> Option<usize> {
        let limit = self
            .budgets
            .window
            .map(|window| self.held.front().saturating_add(window as u64));
        let seats = &self.seats;
        let items = self.waiting.iter().enumerate().map(|(at, (_, future))| {
            let in_window =
                limit.is_none_or(|limit| seats.get(at).is_none_or(|&seat| seat < limit));
            (R::unit(future), in_window)
        });
        let pulled = pulled.map(|(future, seat)| {
            let in_window = limit.is_none_or(|limit| seat.is_none_or(|at| at < limit));
            (R::unit(future), in_window)
        });
        self.admission.pick(items.chain(pulled))
    }

    /// Whether a task sent now could start something: a start is free and
    /// there is an item it may start, or it may pull one (rule 2's "a start
    /// free with an item for it").
    fn has_work(&self) -> bool {
        if !Self::admitted() {
            return !self.waiting.is_empty() || self.source.may_pull();
        }
        self.pick(None).is_some()
            || (self.source.may_pull()
                && (self.may_queue_admitted()
                    || (R::REJECTS && shed::may_shed(self.held_rejected, self.budgets.waiting))))
    }

    /// Whether a task sent now could pull ahead (the refill, rule 2): a
    /// waiting place free, or (shedding) the queue full with rejections left.
    fn may_pull_ahead(&self) -> bool {
        if !Self::admitted() {
            return self.may_queue();
        }
        self.may_queue_admitted()
            || (R::REJECTS && shed::may_shed(self.held_rejected, self.budgets.waiting))
    }

    /// Whether one more item may be pulled into the waiting queue now.
    fn may_queue(&self) -> bool {
        self.budgets
            .may_queue(self.waiting.len(), self.held_expired)
    }

    /// Whether the source will give nothing more and every item it gave was
    /// handed out.
    fn is_finished(&self) -> bool {
        self.source.is_gone()
            && self.waiting.is_empty()
            && self.counts.active == 0
            && self.held.len() == 0
    }

    /// If task `index` is the one the pending source will wake, it was polled
    /// again: anyone may pull from the source again. Returns whether it was.
    fn source_polled_again(&mut self, index: usize) -> bool {
        if self.source.waiter() != Some(index) {
            return false;
        }
        self.source.waiter_polled();
        self.tasks.set_source_waiter(index, false);
        true
    }

    /// The common end of a worker's section: its next item or a park, then
    /// the top-up, the hand-off and the consumer's wake at the end.
    fn next_for(
        &mut self,
        index: usize,
        cx: &mut Context<'_>,
        deferred: &mut Deferred<R>,
    ) -> Next<R> {
        let next = match self.start(index, cx, deferred) {
            Some((position, started, future)) => Next::Run(position, started, future),
            None if self.cancelled => return Next::Stop,
            None => {
                self.tasks.park(index);
                Next::Park
            }
        };
        self.top_up(index, cx, deferred);
        if self.cancelled {
            return self.unstart(next, deferred);
        }
        self.dispatch(deferred);
        self.wake_consumer_at_end(deferred);
        next
    }

    /// The top-up of the section that took `next` met the source's error (or
    /// panic): the item taken just before must not start either, since
    /// nothing starts once the error is seen. Its future goes with the
    /// waiting items, dropped once the lock is released, and the task stops.
    #[cold]
    fn unstart(&mut self, next: Next<R>, deferred: &mut Deferred<R>) -> Next<R> {
        if let Next::Run(_, (started, _), future) = next {
            // The cancellation was made in this section: its leftovers are here.
            match &mut deferred.cancelled {
                Some(leftovers) => leftovers.waiting.push_back((started, future)),
                None => unreachable!("cancelled in this section, with nothing to release"),
            }
        }
        Next::Stop
    }

    /// Starts one item if the budgets allow: the oldest waiting one, else one
    /// pulled now. Its output's position is reserved in input order, as in
    /// place, since starts happen one at a time under the lock. A waiting item
    /// that waited too long is handed out expired instead ([`State::expire`]),
    /// and the next one is considered at once: expiry is checked here, at
    /// pickup, and only here.
    fn start(
        &mut self,
        index: usize,
        cx: &mut Context<'_>,
        deferred: &mut Deferred<R>,
    ) -> Option<(u64, Started<R>, R::Future)> {
        if Self::admitted() {
            return self.start_admitted(index, cx, deferred);
        }
        loop {
            if !self.may_start() {
                return None;
            }
            let future = match self.waiting.pop_front() {
                Some((pulled, future)) => match self.clock.pick_up(pulled, R::EXPIRES) {
                    Some(waited) => match self.expire(future, waited, None, deferred) {
                        Ok(()) => continue,
                        // A stream whose items cannot come back never has a
                        // `max_wait`: not reached, but total.
                        Err(future) => future,
                    },
                    None => future,
                },
                None => {
                    let future = self.pull(index, cx, deferred)?;
                    self.clock.started_at_once();
                    future
                }
            };
            return Some(self.started(future, None));
        }
    }

    /// Counts `future` as started, at input position `seat` if it took one
    /// when pulled (else the next), and takes its admission ticket.
    fn started(&mut self, future: R::Future, seat: Option<u64>) -> (u64, Started<R>, R::Future) {
        let position = match seat {
            Some(seat) => seat,
            None => self.held.begin(),
        };
        self.counts.started();
        let ticket = self.admission.started(R::unit(&future));
        (position, (self.clock.stamp(), ticket), future)
    }

    /// [`State::start`] for a stream with keys, weights or shedding (the
    /// rules are in [`crate::admission`] and [`crate::shed`]; the in-place
    /// `Core::fill_admitted` follows them the same way): the oldest waiting
    /// item the rules allow, from anywhere in the queue; else one pulled into a
    /// free waiting place, which may start at once; else, shedding, one pulled
    /// past the full queue, which starts if the rules allow, or one item is
    /// handed back and the search goes on.
    fn start_admitted(
        &mut self,
        index: usize,
        cx: &mut Context<'_>,
        deferred: &mut Deferred<R>,
    ) -> Option<(u64, Started<R>, R::Future)> {
        loop {
            if !self.may_start() {
                return None;
            }
            if let Some(at) = self.pick(None) {
                let (pulled, future, seat) = self.unqueue(at);
                let future = match self.clock.pick_up(pulled, R::EXPIRES) {
                    Some(waited) => match self.expire(future, waited, seat, deferred) {
                        Ok(()) => continue,
                        Err(future) => future,
                    },
                    None => future,
                };
                return Some(self.started(future, seat));
            }
            if self.may_queue_admitted() {
                let future = self.pull(index, cx, deferred)?;
                self.queue(future, None);
                continue;
            }
            if !(R::REJECTS && shed::may_shed(self.held_rejected, self.budgets.waiting)) {
                return None;
            }
            let future = self.pull(index, cx, deferred)?;
            let seat = self.seated().then(|| self.held.begin());
            if self.pick(Some((&future, seat))) == Some(self.waiting.len()) {
                self.clock.started_at_once();
                return Some(self.started(future, seat));
            }
            self.shed_one(future, seat, deferred);
        }
    }

    /// Puts a pulled item in the waiting queue, at input position `seat` if
    /// it took one, else at one taken now when the stream is seated.
    fn queue(&mut self, future: R::Future, seat: Option<u64>) {
        let pulled = self.clock.stamp_pulled();
        self.admission.queued(R::unit(&future));
        if self.seated() {
            let seat = seat.unwrap_or_else(|| self.held.begin());
            self.seats.push_back(seat);
        }
        self.waiting.push_back((pulled, future));
        self.counts.queued(self.waiting.len());
    }

    /// Takes the waiting item at `at` out of the queue, with its position if
    /// it has one.
    fn unqueue(&mut self, at: usize) -> (Stamp<R>, R::Future, Option<u64>) {
        let (pulled, future) = self.waiting.remove(at).expect("a waiting item");
        let seat = if self.seated() {
            self.seats.remove(at)
        } else {
            None
        };
        self.admission.unqueued(R::unit(&future));
        (pulled, future, seat)
    }

    /// Sheds ([`crate::shed`]): hands back `future`, just pulled past the
    /// full queue (`Newest`), or the oldest waiting items, as many as it needs
    /// room for, and it takes their place (`Oldest`).
    fn shed_one(&mut self, future: R::Future, seat: Option<u64>, deferred: &mut Deferred<R>) {
        let oldest = shed::oldest_to_shed(
            self.shed,
            self.waiting
                .iter()
                .map(|(_, waiting)| self.admission.waiting_weight(R::unit(waiting))),
            self.held_rejected,
            self.budgets.waiting,
            |gone, gone_weight| self.may_queue_admitted_without(gone, gone_weight),
            |gone_weight| self.admission.may_replace(gone_weight, R::unit(&future)),
        );
        if oldest == 0 {
            return self.reject(future, seat, deferred);
        }
        for _ in 0..oldest {
            let (_, oldest, oldest_seat) = self.unqueue(0);
            self.reject(oldest, oldest_seat, deferred);
        }
        self.queue(future, seat);
    }

    /// Hands an item back to the consumer unstarted, as a rejection, at input
    /// position `seat` when ordered (else in completion order).
    #[cold]
    fn reject(&mut self, future: R::Future, seat: Option<u64>, deferred: &mut Deferred<R>) {
        let outcome = match R::reject(future) {
            Ok(outcome) => outcome,
            // A stream whose items cannot be rejected does not shed: not
            // reached, but total (the item waits, over the budget by one).
            Err(future) => return self.queue(future, seat),
        };
        let position = match seat {
            Some(seat) => seat,
            None => self.held.begin(),
        };
        let stamp = self.clock.stamp();
        self.held.complete(position, (stamp, outcome));
        self.held_rejected += 1;
        self.counts.rejected(self.held.len());
        if self.budgets.window.is_none() || position == self.front {
            self.wake_consumer(deferred);
        }
    }

    /// Hands a waiting item that waited too long to the consumer, unstarted,
    /// at the position it would have started at.
    #[cold]
    fn expire(
        &mut self,
        future: R::Future,
        waited: Duration,
        seat: Option<u64>,
        deferred: &mut Deferred<R>,
    ) -> Result<(), R::Future> {
        let outcome = R::expire(future, waited)?;
        let position = match seat {
            Some(seat) => seat,
            None => self.held.begin(),
        };
        let stamp = self.clock.stamp();
        self.held.complete(position, (stamp, outcome));
        self.held_expired += 1;
        self.counts.expired(self.held.len());
        if self.budgets.window.is_none() || position == self.front {
            self.wake_consumer(deferred);
        }
        Ok(())
    }

    /// Fails fast (the rule is in [`crate::failure`]): records `error`, then
    /// cancels, so nothing more is pulled or started and every task drops its
    /// future on its next poll, and the waiting items go. Of the held outputs,
    /// only those that may still be yielded in order stay; the rest go too
    /// (all dropped once the lock is released).
    #[cold]
    fn fail_fast(&mut self, error: R::Error, deferred: &mut Deferred<R>) {
        self.error = Some(error);
        self.failed_fast = true;
        // None of them will complete: each is dropped by its task.
        self.counts.active = 0;
        let mut unyieldable = Vec::new();
        self.held
            .keep_in_order_prefix(|output| unyieldable.push(output));
        self.held_expired = self.held.count(|(_, outcome)| R::is_expired(outcome));
        self.held_rejected = self.held.count(|(_, outcome)| R::is_rejected(outcome));
        let mut leftovers = self.cancel();
        if let Some(leftovers) = &mut leftovers {
            leftovers.held = unyieldable;
        }
        deferred.cancelled = leftovers;
    }

    /// Fills the waiting queue, but only once no start is free: while one is,
    /// the task sent for it pulls its item itself, so no item waits while a
    /// worker could run it (the in-place order: start, then top up).
    fn top_up(&mut self, index: usize, cx: &mut Context<'_>, deferred: &mut Deferred<R>) {
        if Self::admitted() {
            return self.top_up_admitted(index, cx, deferred);
        }
        if self.cancelled || self.may_start() {
            return;
        }
        while self.may_queue() {
            let Some(future) = self.pull(index, cx, deferred) else {
                return;
            };
            let pulled = self.clock.stamp_pulled();
            self.waiting.push_back((pulled, future));
            self.counts.queued(self.waiting.len());
        }
    }

    /// [`State::top_up`] for a stream with keys, weights or shedding: fills
    /// the free waiting places (an item there that may start is sent for by
    /// the dispatch); then, shedding with no start free, pulls past the full
    /// queue while the rejection allowance lasts, handing items back, and
    /// fills again whatever that freed.
    fn top_up_admitted(&mut self, index: usize, cx: &mut Context<'_>, deferred: &mut Deferred<R>) {
        while !self.cancelled {
            if self.may_queue_admitted() {
                let Some(future) = self.pull(index, cx, deferred) else {
                    return;
                };
                self.queue(future, None);
                continue;
            }
            if !(R::REJECTS
                && !self.may_start()
                && shed::may_shed(self.held_rejected, self.budgets.waiting))
            {
                return;
            }
            let Some(future) = self.pull(index, cx, deferred) else {
                return;
            };
            let seat = self.seated().then(|| self.held.begin());
            self.shed_one(future, seat, deferred);
        }
    }

    /// One pull from the source for task `index`. A source that panics fails
    /// the stream in this same section, so nobody sees it as ended.
    fn pull(
        &mut self,
        index: usize,
        cx: &mut Context<'_>,
        deferred: &mut Deferred<R>,
    ) -> Option<R::Future> {
        match self.source.pull(index, cx) {
            Pulled::Item(Ok(future)) => {
                self.counts.pulled();
                Some(future)
            }
            Pulled::Item(Err(error)) => {
                self.counts.pulled();
                self.fail_fast(error, deferred);
                None
            }
            Pulled::Nothing => {
                if self.source.waiter() == Some(index) {
                    self.tasks.set_source_waiter(index, true);
                }
                None
            }
            Pulled::Ended(source) => {
                deferred.ended = Some(source);
                None
            }
            Pulled::Panicked(source, payload) => {
                deferred.ended = Some(source);
                self.failure = Some(Failure::Panicked(payload));
                deferred.cancelled = self.cancel();
                None
            }
        }
    }

    /// The hand-off: if a start is free and there is an item for it, and no
    /// task is on its way already, sends one: the task idle longest, or a new
    /// one below the worker budget. Only one searcher at a time: it sends the
    /// next one itself if work is left once it took its item, so a burst of
    /// freed starts costs one wake, not one per start.
    fn dispatch(&mut self, deferred: &mut Deferred<R>) {
        if self.cancelled || self.tasks.is_searching() || !self.may_start() || !self.has_work() {
            return;
        }
        if let Some(waker) = self.tasks.wake_idle() {
            deferred.searcher = waker;
        } else if self.tasks.len() < self.budgets.workers {
            self.tasks.add();
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
        if self.cancelled
            || self.tasks.is_searching()
            || (self.may_start() && self.has_work())
            || !self.may_pull_ahead()
            || !self.source.may_pull()
        {
            return;
        }
        if let Some(waker) = self.tasks.wake_idle() {
            deferred.searcher = waker;
        } else if let Some(waker) = self.tasks.wake_busy_to_refill() {
            deferred.refill = waker;
        }
    }

    /// Wakes a parked consumer if the stream just ended.
    fn wake_consumer_at_end(&mut self, deferred: &mut Deferred<R>) {
        if self.is_finished() {
            self.wake_consumer(deferred);
        }
    }

    /// Takes the parked consumer's waker, to be woken after the lock, unless
    /// this section took it already (a second take would find `None` and
    /// lose the first).
    fn wake_consumer(&mut self, deferred: &mut Deferred<R>) {
        if deferred.consumer.is_none() {
            deferred.consumer = self.consumer.take();
        }
    }
}
