//! What happens to an item after it started, and to the run at its end:
//! completion (with the adaptive controller's sample), hand-out, fail fast
//! ([`crate::failure`]'s rule), and the end.

use std::time::Duration;

use super::Engine;
use super::io::{Discarded, Io};
use super::spec::{Outcome, Spec, Started};
use crate::admission::Admits;
use crate::clock::Clocking;
use crate::expiry::Unstarted;

/// What the consumer gets once there is no outcome to hand out.
pub(crate) enum Ending<E> {
    /// The error that ended the run (`try_bounded`), after every outcome
    /// that may precede it.
    Error(E),
    /// The end: nothing more will come.
    Done,
}

impl<R: Spec> Engine<R> {
    /// The item at `position`, started as `started` says, completed with
    /// `output`: the controller gets its sample, the output is settled and
    /// held. Returns whether the consumer can take it now (unordered: yes;
    /// ordered: if it is the oldest unyielded), or the error that ends the
    /// run, for the caller to [`fail`](Engine::fail) with once it holds
    /// nothing borrowed.
    #[inline(always)]
    pub(crate) fn complete(
        &mut self,
        position: u64,
        (started, ticket): Started<R>,
        output: R::Output,
    ) -> Result<bool, R::Error> {
        self.stats.completed += 1;
        self.admission.finished(ticket);
        self.unblock_source();
        let completed = self.clock.completed(started);
        // Only a clock that measures runs answers: the branch is gone from a
        // stream without one.
        if let Some(run) = self.clock.run_of(started, completed) {
            self.observe(&output, run);
        }
        self.active -= 1;
        let output = R::settle(output)?;
        self.held.complete(position, (completed, Ok(output)));
        self.stats.peak_held = self.stats.peak_held.max(self.held.len());
        Ok(self.is_next_out(position))
    }

    /// Hands the adaptive controller, if any, the sample of an item that
    /// completed, while it still counts as running: whether the limit was
    /// reached is the rule the stream starts items by
    /// ([`Engine::may_start`]), and what was in flight is what ran beside it.
    #[inline]
    fn observe(&mut self, output: &R::Output, run: (Duration, Duration)) {
        if !self.adaptive.is_on() {
            return;
        }
        let saturated = !self.counts_allow_a_start();
        // Items completing in one poll are settled one by one: counting the
        // held outputs, each sees as many as ran beside it.
        let in_flight = self.active + self.held.len() - self.held_unstarted();
        self.adaptive.observe(
            output,
            run,
            (saturated, in_flight),
            &mut self.budgets,
            &self.limits,
        );
    }

    /// The next outcome the consumer may take, and whether it is an item
    /// that was not run (its waiting place or rejection allowance is free
    /// again).
    #[inline(always)]
    pub(crate) fn hand_out(&mut self) -> Option<(Outcome<R>, bool)> {
        let (completed, outcome) = self.held.pop()?;
        self.clock.handed_out(completed);
        let unstarted = match &outcome {
            Ok(_) => false,
            Err(unstarted) => {
                if Self::REJECTS && unstarted.is_rejected() {
                    self.held_rejected -= 1;
                } else if Self::EXPIRES {
                    self.held_expired -= 1;
                }
                true
            }
        };
        Some((outcome, unstarted))
    }

    /// Once nothing is there to hand out: the error that ended the run, or
    /// the end once the source gives nothing more and nothing runs, waits or
    /// is held; `None` while something may still come.
    #[inline]
    pub(crate) fn end(&mut self) -> Option<Ending<R::Error>> {
        if let Some(error) = self.failure.take() {
            return Some(Ending::Error(error));
        }
        self.is_finished().then_some(Ending::Done)
    }

    /// Whether the source will give nothing more and every item it gave was
    /// handed out.
    #[inline]
    pub(crate) fn is_finished(&self) -> bool {
        self.life.is_shut() && self.waiting.is_empty() && self.active == 0 && self.held.len() == 0
    }

    /// Fails fast ([`crate::failure`]): records `error`, stops pulling and
    /// starting, lets go of every waiting item and cancels every running
    /// future now, and keeps only the held outcomes that may still be yielded
    /// in order.
    #[cold]
    pub(crate) fn fail(&mut self, error: R::Error, io: &mut impl Io<R>) {
        // First the record, so that a destructor panicking below leaves a
        // run that takes nothing more.
        self.life.fail();
        self.failure = Some(error);
        self.seats.clear();
        io.discard(Discarded::Waiting(std::mem::take(&mut self.waiting)));
        io.cancel_running(&mut |_| {});
        self.active = 0;
        self.admission.clear();
        self.held
            .keep_in_order_prefix(|(_, outcome)| io.discard(Discarded::Held(outcome)));
        self.held_expired = self.held.count(|(_, outcome)| {
            Self::EXPIRES
                && outcome
                    .as_ref()
                    .is_err_and(|unstarted| !unstarted.is_rejected())
        });
        self.held_rejected = self.held.count(|(_, outcome)| {
            Self::REJECTS && outcome.as_ref().is_err_and(Unstarted::is_rejected)
        });
    }

    /// The run is over without an error of its own (spawned: it ended, was
    /// dropped, or a panic broke it): nothing more is pulled or started, and
    /// the waiting items go. Running futures are the driver's to drop.
    #[cold]
    pub(crate) fn abandon(&mut self, io: &mut impl Io<R>) {
        self.life.end();
        self.seats.clear();
        self.admission.clear();
        io.discard(Discarded::Waiting(std::mem::take(&mut self.waiting)));
    }

    /// Takes away what only the consumer could still have taken: the held
    /// outcomes and the error not handed out yet, for the spawned stream's
    /// drop to drop on its own thread.
    pub(crate) fn take_untaken(&mut self, mut each: impl FnMut(Outcome<R>)) -> Option<R::Error> {
        let held = std::mem::replace(&mut self.held, crate::held::Held::unordered());
        held.for_each_output(|(_, outcome)| each(outcome));
        self.failure.take()
    }
}
