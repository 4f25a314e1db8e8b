//! What may start, what may wait, and which item starts: the start loop both
//! drivers run, one [`Engine::step`] at a time, then [`Engine::top_up`]. The
//! count rules are [`Budgets`]'; the key and weight rules
//! [`crate::admission`]'s; expiry [`crate::expiry`]'s; shedding
//! [`crate::shed`]'s. Here they are applied, in order, once.
//!
//! [`Budgets`]: crate::budget::Budgets

use std::time::Duration;

use super::Engine;
use super::io::{Io, Pulled};
use super::spec::{Spec, Started, Types};
use crate::admission::Admits;
use crate::clock::Clocking;
use crate::shed;

/// What one step of the start loop gives.
pub(crate) enum Step<R: Types> {
    /// A future to run now.
    Start(Start<R>),
    /// An item became an outcome without running (it expired, or was shed):
    /// there may be more to start, and something to hand out.
    NotRun,
}

/// A future the driver is to run now: the item at this input position
/// (ordered: its place in the output; unordered: its start order), started
/// at this time, with this admission ticket. The driver hands `started` back
/// with its output to [`Engine::complete`].
pub(crate) struct Start<R: Types> {
    pub(crate) position: u64,
    pub(crate) started: Started<R>,
    pub(crate) future: R::Future,
}

impl<R: Spec> Engine<R> {
    /// The next item to start, if the budgets and the rules allow one: the
    /// oldest waiting one (with keys, weights or shedding, the oldest the
    /// rules allow, from anywhere in the queue), else one pulled now. A
    /// waiting item that waited too long is handed out expired instead, and
    /// the next one is considered at once: expiry is checked here, at
    /// pickup, and only here. With keys, weights or shedding every item is
    /// pulled into a waiting place first, and one past a full queue is shed.
    /// The caller starts it and asks again, until there is none (the
    /// spawned driver asks once per task).
    #[inline]
    pub(crate) fn next_start(&mut self, io: &mut impl Io<R>) -> Option<Start<R>> {
        loop {
            if let Step::Start(start) = self.step(io)? {
                return Some(start);
            }
        }
    }

    /// One step of [`Engine::next_start`]: an item to start, or one that
    /// became an outcome without running (expired, shed), after which the
    /// caller asks again. The in-place driver goes round its loop on either.
    #[inline(always)]
    pub(crate) fn step(&mut self, io: &mut impl Io<R>) -> Option<Step<R>> {
        if self.admitted() {
            return self.step_admitted(io);
        }
        if self.deadline_due() {
            return Some(self.pass_deadline(io));
        }
        if !self.may_start() {
            self.note_rate_wait();
            return None;
        }
        let future = match self.waiting.pop_front() {
            Some((pulled, future)) => match self.clock.pick_up(pulled, Self::EXPIRES) {
                Some(waited) => match self.expire(waited, future, None) {
                    Ok(()) => return Some(Step::NotRun),
                    // A stream whose items cannot come back never has a
                    // `max_wait`: not reached, but total.
                    Err(future) => future,
                },
                None => future,
            },
            None => {
                let future = self.pull(io)?;
                self.clock.started_at_once();
                future
            }
        };
        Some(Step::Start(self.start(future, None)))
    }

    /// [`Engine::step`] with keys, weights or shedding: the oldest waiting
    /// item the rules allow; else one pulled into a free waiting place, which
    /// may start at once, having waited no time; else, shedding, one pulled
    /// past the full queue, which starts if the rules pick it after the
    /// waiting items, or an item is handed back.
    #[inline(never)]
    fn step_admitted(&mut self, io: &mut impl Io<R>) -> Option<Step<R>> {
        if self.deadline_due() {
            return Some(self.pass_deadline(io));
        }
        loop {
            if !self.may_start() {
                self.note_rate_wait();
                return None;
            }
            if Self::RANKED {
                // A rule that ranks the items chooses among every item the
                // source has ready, not only those it happened to pull
                // before: a tenant whose item arrived while the workers
                // were busy competes for this start (both modes alike).
                self.fill_places(io);
            }
            if let Some(at) = self.pick(None) {
                let (pulled, future, seat) = self.unqueue(at);
                let Ok(future) = self.unless_late(future, seat) else {
                    return Some(Step::NotRun);
                };
                let future = match self.clock.pick_up(pulled, Self::EXPIRES) {
                    Some(waited) => match self.expire(waited, future, seat) {
                        Ok(()) => return Some(Step::NotRun),
                        Err(future) => future,
                    },
                    None => future,
                };
                return Some(Step::Start(self.start(future, seat)));
            }
            if self.may_queue_admitted() {
                let future = self.pull(io)?;
                self.queue(future, None);
                continue;
            }
            if !self.may_shed() {
                return None;
            }
            let future = self.pull(io)?;
            let seat = self.seated().then(|| self.held.begin());
            if self.pick(Some((&future, seat))) == Some(self.waiting.len()) {
                let Ok(future) = self.unless_late(future, seat) else {
                    return Some(Step::NotRun);
                };
                self.clock.started_at_once();
                return Some(Step::Start(self.start(future, seat)));
            }
            self.shed_one(future, seat);
            return Some(Step::NotRun);
        }
    }

    /// Fills the waiting queue, but only once no start is free: while one
    /// is, whoever takes it pulls its item itself, so no item waits while a
    /// worker could run it. (With keys, weights or shedding every item goes
    /// through a waiting place anyway: the queue is filled, and an item in
    /// it that may start is taken by the next [`Engine::step`].)
    #[inline]
    pub(crate) fn top_up(&mut self, io: &mut impl Io<R>) {
        if self.admitted() || !self.may_start() {
            self.fill_queue(io);
        }
    }

    /// Nothing is pulled from the run's deadline on: a pull that comes
    /// before any start in a poll or section stops the run first.
    #[inline(always)]
    fn stop_if_due(&mut self, io: &mut impl Io<R>) -> bool {
        if self.deadline_due() {
            self.pass_deadline(io);
            return true;
        }
        false
    }

    /// [`Engine::top_up`] right after [`Engine::step`] said there was no
    /// start: no start is free, or none could be had, so the check is made
    /// already. Returns whether an item was shed meanwhile (an outcome to
    /// hand out).
    #[inline(always)]
    pub(crate) fn fill_queue(&mut self, io: &mut impl Io<R>) -> bool {
        if self.stop_if_due(io) {
            return true;
        }
        if self.admitted() {
            return self.fill_admitted(io);
        }
        while self
            .budgets
            .may_queue(self.waiting.len(), self.held_expired())
        {
            let Some(future) = self.pull(io) else {
                break;
            };
            self.queue(future, None);
        }
        false
    }

    /// [`Engine::fill_queue`] with keys, weights or shedding: fills the free
    /// waiting places (an item there that may start is taken by the next
    /// [`Engine::step`]); then, shedding with no start free, pulls past the
    /// full queue while the rejection allowance lasts, handing items back,
    /// and fills again whatever that freed.
    #[inline(never)]
    fn fill_admitted(&mut self, io: &mut impl Io<R>) -> bool {
        let mut shed = false;
        loop {
            if !self.fill_places(io) {
                return shed;
            }
            if self.may_start() || !self.may_shed() {
                return shed;
            }
            let Some(future) = self.pull(io) else {
                return shed;
            };
            let seat = self.seated().then(|| self.held.begin());
            self.shed_one(future, seat);
            shed = true;
        }
    }

    /// Pulls into the free waiting places until they are full (`true`) or
    /// the source has nothing ready (`false`).
    #[inline(never)]
    fn fill_places(&mut self, io: &mut impl Io<R>) -> bool {
        while self.may_queue_admitted() {
            let Some(future) = self.pull(io) else {
                return false;
            };
            self.queue(future, None);
        }
        true
    }

    /// Whether one more item may start now: by the counts, and by the start
    /// rate if there is one.
    #[inline(always)]
    pub(crate) fn may_start(&self) -> bool {
        self.counts_allow_a_start() && self.rate_allows()
    }

    /// Whether one more item may start now by the counts
    /// ([`Budgets::may_start`](crate::budget::Budgets::may_start)), or with
    /// keys, weights or shedding by
    /// [`Budgets::may_start_admitted`](crate::budget::Budgets::may_start_admitted).
    #[inline(always)]
    pub(crate) fn counts_allow_a_start(&self) -> bool {
        if self.admitted() {
            return self.budgets.may_start_admitted(
                self.active,
                self.held.len(),
                self.held_unstarted(),
                self.held_rejected(),
            );
        }
        self.budgets
            .may_start(self.active, self.held.len(), self.held_unstarted())
    }

    /// Whether a start is free and there is an item for it, or one may be
    /// pulled for it: what a driver asks before it sends for a worker.
    #[inline]
    pub(crate) fn has_start(&self) -> bool {
        self.may_start() && self.has_item_to_start()
    }

    /// Whether an item could start if a start were free: one waiting that
    /// the rules allow, or one the source may give. (Past the run's deadline
    /// nothing waits and nothing is pulled.)
    #[inline]
    pub(crate) fn has_item_to_start(&self) -> bool {
        if !self.admitted() {
            return !self.waiting.is_empty() || self.life.may_pull();
        }
        self.pick(None).is_some()
            || (self.life.may_pull() && (self.may_queue_admitted() || self.may_shed()))
    }

    /// Whether one more item may be pulled ahead now: a waiting place free,
    /// or (shedding) the queue full with rejections left.
    pub(crate) fn may_pull_ahead(&self) -> bool {
        if !self.life.may_pull() {
            return false;
        }
        if !self.admitted() {
            return self
                .budgets
                .may_queue(self.waiting.len(), self.held_expired());
        }
        self.may_queue_admitted() || self.may_shed()
    }

    /// Whether one more item may be pulled into a waiting place of a stream
    /// with keys, weights or shedding: a place free (with keys or weights at
    /// least one, see [`crate::admission`]; shedding alone starts or sheds an
    /// item it cannot queue), and the weight waiting below its budget.
    #[inline]
    fn may_queue_admitted(&self) -> bool {
        self.may_queue_without(0, 0)
    }

    /// [`Engine::may_queue_admitted`], were the `gone` oldest waiting items,
    /// counting `gone_weight` in all, gone.
    #[inline]
    fn may_queue_without(&self, gone: usize, gone_weight: u128) -> bool {
        let queued = self.waiting.len() - gone;
        let place = if self.keeps_a_place() {
            self.budgets.may_queue_seated(queued, self.held_expired())
        } else {
            self.budgets.may_queue(queued, self.held_expired())
        };
        place && self.admission.may_queue_without(gone_weight)
    }

    /// Whether a shedding stream may pull past its full queue: the
    /// rejection allowance is not used up.
    #[inline]
    fn may_shed(&self) -> bool {
        self.sheds() && shed::may_shed(self.held_rejected, self.budgets.waiting)
    }

    /// Whether a stream takes its items' input positions when it pulls
    /// them: with keys, weights or shedding an item may start or leave out
    /// of pull order (without them, positions are taken at the start, which
    /// is in pull order). Ordered, the output order needs them; with
    /// deadlines, an item late or cancelled says which it was.
    #[inline(always)]
    fn seated(&self) -> bool {
        self.admitted() && (self.budgets.window.is_some() || Self::DEADLINES)
    }

    /// The waiting item a free worker starts, if the rules allow one: the
    /// oldest whose key is below its limit, if it fits the running weight and,
    /// ordered, the window. With `pulled` (an item just pulled past the full
    /// queue, and its input position), the rules look at it after the waiting
    /// ones, as the newest: its index is the queue's length.
    fn pick(&self, pulled: Option<(&R::Future, Option<u64>)>) -> Option<usize> {
        let limit = self
            .budgets
            .window
            .map(|window| self.held.front().saturating_add(window as u64));
        let seats = &self.seats;
        let items = self.waiting.iter().enumerate().map(|(at, (_, future))| {
            let in_window =
                limit.is_none_or(|limit| seats.get(at).is_none_or(|&seat| seat < limit));
            (R::job(future), in_window)
        });
        let pulled = pulled.map(|(future, seat)| {
            let in_window = limit.is_none_or(|limit| seat.is_none_or(|at| at < limit));
            (R::job(future), in_window)
        });
        self.admission.pick(items.chain(pulled))
    }

    /// Puts a pulled item in the waiting queue, at input position `seat` if
    /// it took one already, else at one taken now when the stream is seated.
    #[inline(always)]
    fn queue(&mut self, future: R::Future, seat: Option<u64>) {
        let pulled = self.clock.stamp_pulled();
        self.admission.queued(R::job(&future));
        if self.seated() {
            let seat = seat.unwrap_or_else(|| self.held.begin());
            self.seats.push_back(seat);
        }
        self.waiting.push_back((pulled, future));
        self.stats.peak_waiting = self.stats.peak_waiting.max(self.waiting.len());
    }

    /// Takes the waiting item at `at` out of the queue, with its position if
    /// it has one.
    pub(super) fn unqueue(&mut self, at: usize) -> (super::Stamp<R>, R::Future, Option<u64>) {
        let (pulled, future) = self.waiting.remove(at).expect("a waiting item");
        let seat = if self.seated() {
            self.seats.remove(at)
        } else {
            None
        };
        self.admission.unqueued(R::job(&future));
        self.unblock_source();
        (pulled, future, seat)
    }

    /// A tenant's waiting places freed, or one has nothing left
    /// ([`crate::tenants`]): its source may have an item, or a tenant, to
    /// give, though it said `Pending` (it was not polled for them). Nothing
    /// but this engine would wake it, so it may be pulled again at once.
    /// Compiles away for every other stream.
    #[inline(always)]
    pub(super) fn unblock_source(&mut self) {
        if self.admission.take_unblocked() {
            self.life.source_woke();
        }
    }

    /// Counts `future` as started, at input position `seat` if it took one
    /// when pulled (else the next), and takes its admission ticket.
    #[inline(always)]
    fn start(&mut self, future: R::Future, seat: Option<u64>) -> Start<R> {
        let position = match seat {
            Some(seat) => seat,
            None => self.held.begin(),
        };
        self.active += 1;
        self.stats.peak_active = self.stats.peak_active.max(self.active);
        if let Some(time) = self.clock.time_mut() {
            time.started();
        }
        let ticket = self.admission.started(R::job(&future));
        Start {
            position,
            started: (self.clock.stamp(), ticket),
            future,
        }
    }

    /// Shedding ([`crate::shed`]): `future` was pulled past the full waiting
    /// queue, and the rules did not pick it. It is handed back (`Newest`), or
    /// the oldest waiting items are, as many as it needs room for, and it
    /// takes their place (`Oldest`).
    #[cold]
    fn shed_one(&mut self, future: R::Future, seat: Option<u64>) {
        let oldest = shed::oldest_to_shed(
            self.shed,
            self.waiting
                .iter()
                .map(|(_, waiting)| self.admission.waiting_weight(R::job(waiting))),
            self.held_rejected,
            self.budgets.waiting,
            |gone, gone_weight| self.may_queue_without(gone, gone_weight),
            |gone_weight| self.admission.may_replace(gone_weight, R::job(&future)),
        );
        if oldest == 0 {
            return self.reject(future, seat);
        }
        for _ in 0..oldest {
            let (_, oldest, oldest_seat) = self.unqueue(0);
            self.reject(oldest, oldest_seat);
        }
        self.queue(future, seat);
    }

    /// Hands an item back to the consumer unstarted, as a rejection, at input
    /// position `seat` when ordered (else in completion order).
    #[cold]
    fn reject(&mut self, future: R::Future, seat: Option<u64>) {
        let Ok(rejected) = R::reject(future) else {
            // Only a stream whose outcomes can hold a rejection sheds (`shed`
            // gives it such outcomes, and `may_shed` is false without): an
            // item can be neither run nor queued nor lost here.
            unreachable!("an item shed by a stream that cannot hand it back");
        };
        self.hold_unstarted(seat, rejected);
        self.held_rejected += 1;
        self.stats.rejected += 1;
    }

    /// Hands a waiting item that waited too long to the consumer, unstarted,
    /// at the position it would have started at.
    #[inline(never)]
    fn expire(
        &mut self,
        waited: Duration,
        future: R::Future,
        seat: Option<u64>,
    ) -> Result<(), R::Future> {
        let expired = R::expire(future, waited)?;
        self.hold_unstarted(seat, expired);
        self.held_expired += 1;
        self.stats.expired += 1;
        Ok(())
    }

    /// Holds the outcome of an item that was not run, at input position
    /// `seat` (or the next), noting whether the consumer can take it now.
    fn hold_unstarted(&mut self, seat: Option<u64>, unstarted: R::Unstarted) {
        let position = seat.unwrap_or_else(|| self.held.begin());
        self.hold_at(position, unstarted);
    }

    /// [`Engine::hold_unstarted`] at a position taken already.
    pub(super) fn hold_at(&mut self, position: u64, unstarted: R::Unstarted) {
        let stamp = self.clock.stamp();
        self.held.complete(position, (stamp, Err(unstarted)));
        self.stats.peak_held = self.stats.peak_held.max(self.held.len());
        self.ready |= self.is_next_out(position);
    }

    /// Whether the outcome at `position` is one the consumer can take next:
    /// unordered any, ordered only the oldest unyielded one.
    #[inline(always)]
    pub(crate) fn is_next_out(&self, position: u64) -> bool {
        self.budgets.window.is_none() || position == self.held.front()
    }

    /// One pull from the source, if it may be pulled. An error fails fast
    /// here, in the same call.
    #[inline(always)]
    fn pull(&mut self, io: &mut impl Io<R>) -> Option<R::Future> {
        if !self.life.may_pull() {
            return None;
        }
        match io.pull() {
            Pulled::Item(Ok(future)) => {
                self.stats.pulled += 1;
                Some(future)
            }
            Pulled::Item(Err(error)) => {
                self.stats.pulled += 1;
                self.fail(error, io);
                None
            }
            Pulled::Pending => {
                self.life.source_pending();
                None
            }
            Pulled::Ended => {
                self.life.source_done();
                None
            }
            Pulled::Broken => {
                self.life.source_done();
                self.abandon(io);
                None
            }
        }
    }

    /// Held outcomes that are expired items: a constant 0 without `max_wait`.
    #[inline(always)]
    pub(crate) fn held_expired(&self) -> usize {
        if Self::EXPIRES { self.held_expired } else { 0 }
    }

    /// Held outcomes that are rejected items: a constant 0 without `shed`.
    #[inline(always)]
    fn held_rejected(&self) -> usize {
        if Self::REJECTS { self.held_rejected } else { 0 }
    }

    /// Held outcomes that are items not run, expired or rejected: they take
    /// no worker (a constant 0 without `max_wait` and `shed`).
    #[inline(always)]
    pub(crate) fn held_unstarted(&self) -> usize {
        self.held_expired() + self.held_rejected()
    }
}
