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
use std::task::{Context, Waker};

use futures_core::Stream;

use super::counts::Counts;
use super::source::{Pulled, Source};
use super::tasks::{TaskHandle, Tasks};
use crate::budget::Budgets;
use crate::held::Held;
use crate::stats::Stats;
use crate::sync::Arc;

/// The output type of a source's futures.
pub(super) type Output<S> = <<S as Stream>::Item as Future>::Output;

/// Why the stream cannot go on.
pub(super) enum Failure {
    /// A future, the source, a destructor or the spawner panicked.
    Panicked(Box<dyn Any + Send>),
    /// The executor dropped a task before it finished.
    Lost,
}

/// What a worker task does next.
pub(super) enum Next<F> {
    /// Run this future, the item at this input position.
    Run(u64, F),
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
pub(super) struct Leftovers<S: Stream> {
    pub(super) source: Option<Pin<Box<S>>>,
    pub(super) waiting: VecDeque<S::Item>,
    pub(super) tasks: Vec<Arc<TaskHandle>>,
    pub(super) consumer: Option<Waker>,
}

/// The work a lock section leaves for after the lock is released.
#[must_use = "wakes and spawns left undone strand work"]
pub(super) struct Deferred<S: Stream> {
    /// The consumer parked and now has something to take (or the stream ended).
    pub(super) consumer: Option<Waker>,
    /// An idle task made the searcher.
    pub(super) searcher: Option<Waker>,
    /// A task was counted and must be spawned.
    pub(super) spawn: bool,
    /// The source returned `None`: drop it.
    pub(super) ended: Option<Pin<Box<S>>>,
    /// The stream was cancelled (or failed) in this section.
    pub(super) cancelled: Option<Leftovers<S>>,
    /// A failure that came too late to report, dropped outside the lock (its
    /// payload is a user type).
    pub(super) unreported: Option<Failure>,
}

impl<S: Stream> Deferred<S> {
    fn new() -> Self {
        Self {
            consumer: None,
            searcher: None,
            spawn: false,
            ended: None,
            cancelled: None,
            unreported: None,
        }
    }
}

pub(super) struct State<S: Stream>
where
    S::Item: Future,
{
    /// Read on every admission decision, never copied into a task.
    budgets: Budgets,
    source: Source<S>,
    /// Items pulled and not started, oldest first.
    waiting: VecDeque<S::Item>,
    held: Held<Output<S>>,
    /// Ordered: the input position of the next output to hand out, so a
    /// completion wakes the consumer only when it can take something.
    front: u64,
    counts: Counts,
    pub(super) tasks: Tasks,
    /// The consumer's waker while it is parked; taken by whoever wakes it.
    consumer: Option<Waker>,
    failure: Option<Failure>,
    /// No task starts or pulls anything from now on, and every task ends.
    cancelled: bool,
    /// The first poll has happened: tasks may be sent for. Before it, nothing
    /// is spawned (a limits change only records the new limits).
    begun: bool,
}

impl<S: Stream> State<S>
where
    S::Item: Future,
{
    pub(super) fn new(source: S, budgets: Budgets) -> Self {
        Self {
            budgets,
            source: Source::new(source),
            waiting: VecDeque::new(),
            held: if budgets.window.is_some() {
                Held::ordered()
            } else {
                Held::unordered()
            },
            front: 0,
            counts: Counts::default(),
            tasks: Tasks::new(),
            consumer: None,
            failure: None,
            cancelled: false,
            begun: false,
        }
    }

    pub(super) fn budgets(&self) -> Budgets {
        self.budgets
    }

    pub(super) fn stats(&self) -> Stats {
        Stats {
            workers_limit: self.budgets.workers,
            waiting_limit: self.budgets.waiting,
            ..self.counts.stats(self.waiting.len(), self.held.len())
        }
    }

    /// Items pulled and not yet handed out.
    pub(super) fn in_flight(&self) -> usize {
        self.counts
            .active
            .saturating_add(self.waiting.len())
            .saturating_add(self.held.len())
    }

    // -- The consumer's sections ------------------------------------------

    /// The first poll: the stream looks for work for the first time.
    pub(super) fn begin(&mut self) -> Deferred<S> {
        let mut deferred = Deferred::new();
        self.begun = true;
        self.dispatch(&mut deferred);
        deferred
    }

    /// A [`Limits`](crate::Limits) handle set `workers` and `waiting`. Lowering
    /// only gates later starts and pulls: nothing running or waiting is
    /// touched, and tasks above the new `workers` stay idle. A raise sends for
    /// a task at once: for a start it freed (the dispatch), or, when no start
    /// is free but the queue may grow, an idle task to pull ahead (its
    /// `find_work` tops the queue up). With every task busy, that top-up is
    /// made by the next task to complete an item.
    pub(super) fn set_limits(&mut self, (workers, waiting): (usize, usize)) -> Deferred<S> {
        let mut deferred = Deferred::new();
        self.budgets.set(workers, waiting);
        if !self.begun || self.cancelled {
            return deferred;
        }
        self.dispatch(&mut deferred);
        if !self.tasks.is_searching()
            && !self.may_start()
            && self.may_queue()
            && self.source.may_pull()
        {
            if let Some(waker) = self.tasks.wake_idle() {
                deferred.searcher = waker;
            }
        }
        deferred
    }

    /// The consumer's poll: a failure first, then the next output (taking it
    /// frees budget, which the searcher is sent for), then the end; otherwise
    /// it registers `waker` and parks.
    pub(super) fn hand_out(&mut self, waker: &Waker) -> (Handout<Output<S>>, Deferred<S>) {
        let mut deferred = Deferred::new();
        if let Some(failure) = self.failure.take() {
            return (Handout::Failed(failure), deferred);
        }
        if let Some(output) = self.held.pop() {
            self.front += 1;
            self.dispatch(&mut deferred);
            return (Handout::Output(output), deferred);
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
    pub(super) fn close(&mut self) -> Deferred<S> {
        let mut deferred = Deferred::new();
        if let Some(waiter) = self.source.waiter() {
            // Its next poll need not let anyone pull again: nobody will.
            self.tasks.set_source_waiter(waiter, false);
        }
        deferred.ended = self.source.take();
        self.wake_consumer_at_end(&mut deferred);
        deferred
    }

    /// Takes the held outputs away, for the stream's `Drop`.
    pub(super) fn take_held(&mut self) -> Held<Output<S>> {
        mem::replace(&mut self.held, Held::unordered())
    }

    // -- The worker tasks' sections ---------------------------------------

    /// Task `index` has no item: it takes one if the budgets allow (the oldest
    /// waiting, else a new pull), tops up the waiting queue, and sends for
    /// another task if work is left; or parks.
    pub(super) fn find_work(
        &mut self,
        index: usize,
        cx: &mut Context<'_>,
    ) -> (Next<S::Item>, Deferred<S>) {
        let mut deferred = Deferred::new();
        if self.cancelled {
            return (Next::Stop, deferred);
        }
        self.tasks.arrive(index);
        self.source_polled_again(index);
        let next = self.next_for(index, cx, &mut deferred);
        (next, deferred)
    }

    /// Task `index` completed the item at `position`: stores its output (and
    /// wakes the consumer if it can take it), then does what [`find_work`]
    /// does. Gives the output back if the stream was cancelled: nobody will
    /// take it, and the task drops it outside the lock.
    ///
    /// [`find_work`]: State::find_work
    #[allow(clippy::type_complexity)]
    pub(super) fn complete(
        &mut self,
        index: usize,
        position: u64,
        output: Output<S>,
        cx: &mut Context<'_>,
    ) -> (Result<Next<S::Item>, Output<S>>, Deferred<S>) {
        let mut deferred = Deferred::new();
        if self.cancelled {
            return (Err(output), deferred);
        }
        self.held.complete(position, output);
        self.counts.completed(self.held.len());
        // Ordered, only the oldest unyielded output can be taken.
        if self.budgets.window.is_none() || position == self.front {
            deferred.consumer = self.consumer.take();
        }
        let next = self.next_for(index, cx, &mut deferred);
        (Ok(next), deferred)
    }

    /// Task `index`, busy with a future, may have been woken by the source:
    /// lets the source be pulled again, tops up the queue and sends for a task
    /// if a start is free.
    pub(super) fn source_woke(&mut self, index: usize, cx: &mut Context<'_>) -> Deferred<S> {
        let mut deferred = Deferred::new();
        if !self.cancelled && self.source_polled_again(index) {
            self.top_up(index, cx, &mut deferred);
            self.dispatch(&mut deferred);
            self.wake_consumer_at_end(&mut deferred);
        }
        deferred
    }

    /// Records `failure` and cancels, unless the stream already ended, was
    /// dropped or failed: then nobody is waiting for it, and it is handed back.
    pub(super) fn fail(&mut self, failure: Failure) -> Deferred<S> {
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
    pub(super) fn stop(&mut self) -> Deferred<S> {
        let mut deferred = Deferred::new();
        deferred.cancelled = self.cancel();
        deferred
    }

    /// Stops everything: from now on no task starts or pulls anything, and
    /// each ends on its next poll. Takes the source, the waiting items, the
    /// tasks' handles (to wake them) and the consumer's waker out, for the
    /// caller to drop and wake once the lock is released. `None` if it was
    /// cancelled already.
    pub(super) fn cancel(&mut self) -> Option<Leftovers<S>> {
        if mem::replace(&mut self.cancelled, true) {
            return None;
        }
        Some(Leftovers {
            source: self.source.take(),
            waiting: mem::take(&mut self.waiting),
            tasks: self.tasks.end_all(),
            consumer: self.consumer.take(),
        })
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

    /// Whether one more item may start now. No output held here is an expired
    /// item: spawned mode has no `max_wait` yet.
    fn may_start(&self) -> bool {
        self.budgets
            .may_start(self.counts.active, self.held.len(), 0)
    }

    /// Whether one more item may be pulled into the waiting queue now.
    fn may_queue(&self) -> bool {
        self.budgets.may_queue(self.waiting.len(), 0)
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
        deferred: &mut Deferred<S>,
    ) -> Next<S::Item> {
        let next = match self.start(index, cx, deferred) {
            Some((position, future)) => Next::Run(position, future),
            None if self.cancelled => return Next::Stop,
            None => {
                self.tasks.park(index);
                Next::Park
            }
        };
        self.top_up(index, cx, deferred);
        self.dispatch(deferred);
        self.wake_consumer_at_end(deferred);
        next
    }

    /// Starts one item if the budgets allow: the oldest waiting one, else one
    /// pulled now. Its output's position is reserved in input order, as in
    /// place, since starts happen one at a time under the lock.
    fn start(
        &mut self,
        index: usize,
        cx: &mut Context<'_>,
        deferred: &mut Deferred<S>,
    ) -> Option<(u64, S::Item)> {
        if !self.may_start() {
            return None;
        }
        let future = match self.waiting.pop_front() {
            Some(future) => future,
            None => self.pull(index, cx, deferred)?,
        };
        let position = self.held.begin();
        self.counts.started();
        Some((position, future))
    }

    /// Fills the waiting queue, but only once no start is free: while one is,
    /// the task sent for it pulls its item itself, so no item waits while a
    /// worker could run it (the in-place order: start, then top up).
    fn top_up(&mut self, index: usize, cx: &mut Context<'_>, deferred: &mut Deferred<S>) {
        if self.cancelled || self.may_start() {
            return;
        }
        while self.may_queue() {
            let Some(future) = self.pull(index, cx, deferred) else {
                return;
            };
            self.waiting.push_back(future);
            self.counts.queued(self.waiting.len());
        }
    }

    /// One pull from the source for task `index`. A source that panics fails
    /// the stream in this same section, so nobody sees it as ended.
    fn pull(
        &mut self,
        index: usize,
        cx: &mut Context<'_>,
        deferred: &mut Deferred<S>,
    ) -> Option<S::Item> {
        match self.source.pull(index, cx) {
            Pulled::Item(future) => {
                self.counts.pulled();
                Some(future)
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
    fn dispatch(&mut self, deferred: &mut Deferred<S>) {
        if self.cancelled
            || self.tasks.is_searching()
            || !self.may_start()
            || (self.waiting.is_empty() && !self.source.may_pull())
        {
            return;
        }
        if let Some(waker) = self.tasks.wake_idle() {
            deferred.searcher = waker;
        } else if self.tasks.len() < self.budgets.workers {
            self.tasks.add();
            deferred.spawn = true;
        }
    }

    /// Wakes a parked consumer if the stream just ended.
    fn wake_consumer_at_end(&mut self, deferred: &mut Deferred<S>) {
        if self.is_finished() {
            deferred.consumer = deferred.consumer.take().or_else(|| self.consumer.take());
        }
    }
}
