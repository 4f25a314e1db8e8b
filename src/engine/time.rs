//! The time budgets' part in the engine ([`crate::time`]'s rules, applied
//! here once): the run's deadline passing, an item found late at pickup,
//! the start rate in "may one more start", and the instant at which a
//! driver's timer must wake the stream.

use std::time::Instant;

use super::Engine;
use super::io::Io;
use super::spec::Spec;
use super::start::Step;
use crate::admission::Admits;
use crate::clock::Clocking;
use crate::expiry::Unstarted;
use crate::time::{Cancelled, DeadlinePassed, Late, Time};

impl<R: Spec> Engine<R> {
    /// Whether the run's deadline passed and the run has not stopped for
    /// it yet, nor ended or failed before it (a constant `false` for a
    /// stream without deadlines).
    #[inline(always)]
    pub(crate) fn deadline_due(&self) -> bool {
        Self::DEADLINES
            && self.clock.time().is_some_and(Time::deadline_due)
            && !self.life.is_settled()
    }

    /// Whether the start rate, if any, lets one more item start now.
    #[inline(always)]
    pub(crate) fn rate_allows(&self) -> bool {
        self.clock.time().is_none_or(Time::rate_allows)
    }

    /// When the driver's timer must wake the stream, though nothing else
    /// may: the run's deadline, until it passed, and the next token while a
    /// start waits for one alone (the counts allow it, and there is an item
    /// for it). `None` for a stream without time budgets.
    pub(crate) fn alarm(&self) -> Option<Instant> {
        let time = self.clock.time()?;
        let for_rate =
            !time.rate_allows() && self.counts_allow_a_start() && self.has_item_to_start();
        time.alarm(for_rate)
    }

    /// A start was refused: if the counts allowed it and an item was there,
    /// only the rate refused it, and the time waited for a token counts from
    /// now.
    #[inline]
    pub(crate) fn note_rate_wait(&mut self) {
        let waits = self
            .clock
            .time()
            .is_some_and(|time| time.has_rate() && !time.rate_allows())
            && self.counts_allow_a_start()
            && self.has_item_to_start();
        if let (true, Some(time)) = (waits, self.clock.time_mut()) {
            time.rate_blocks();
        }
    }

    /// `future`, picked up to start at input position `seat`, unless its
    /// own deadline passed: then it is held as [`Late`] (taking, like an
    /// expired item, a waiting place until the consumer takes it), and the
    /// caller goes on to the next. Checked before anything else at pickup:
    /// a late item never starts, whatever else holds.
    #[inline]
    pub(super) fn unless_late(
        &mut self,
        future: R::Future,
        seat: Option<u64>,
    ) -> Result<R::Future, ()> {
        let Some(deadline_of) = self.item_deadline.filter(|_| Self::DEADLINES) else {
            return Ok(future);
        };
        let deadline = deadline_of(R::job(&future));
        if !self.clock.time().is_some_and(|time| time.is_past(deadline)) {
            return Ok(future);
        }
        let position = seat.unwrap_or_else(|| self.held.begin());
        self.hold_late(future, deadline, position, true);
        Err(())
    }

    /// Holds `future` as [`Late`] at `position`.
    fn hold_late(&mut self, future: R::Future, deadline: Instant, position: u64, own: bool) {
        let late = Late::new(R::into_job(future), deadline, position, own);
        let Ok(late) = R::Unstarted::late(late) else {
            unreachable!("only a stream with deadlines finds an item late");
        };
        self.hold_at(position, late);
        self.held_expired += 1;
        self.stats.late += 1;
    }

    /// The run's deadline passed ([`crate::time`]): from now on nothing is
    /// pulled or started. Every waiting item is held as [`Late`], and every
    /// running one is cancelled (the driver drops it) and held as
    /// [`Cancelled`] at its position; what completed before is still handed
    /// out, and last comes [`DeadlinePassed`], after which the run ends.
    /// Returns the step that says outcomes wait.
    #[cold]
    pub(crate) fn pass_deadline(&mut self, io: &mut impl Io<R>) -> Step<R> {
        let Some(time) = self.clock.time_mut() else {
            unreachable!("only a stream with a deadline passes one");
        };
        let deadline = time.pass_deadline();
        let source_ended = self.life.source_ended();
        self.life.stop_at_deadline();
        // Every item pulled and not settled comes back now, in input order:
        // the waiting ones late (seated, at the position each took at the
        // pull; else at the next, in pull order, after every running one),
        // the running ones cancelled (the driver drops each, and says where
        // it ran).
        let mut unsettled: Vec<(u64, Option<R::Future>)> =
            Vec::with_capacity(self.active + self.waiting.len());
        io.cancel_running(&mut |position| unsettled.push((position, None)));
        while !self.waiting.is_empty() {
            let (_, future, seat) = self.unqueue(0);
            let position = seat.unwrap_or_else(|| self.held.begin());
            unsettled.push((position, Some(future)));
        }
        unsettled.sort_unstable_by_key(|(position, _)| *position);
        for (position, waiting) in unsettled {
            match waiting {
                Some(future) => {
                    // Its effective deadline is the earlier of its own and
                    // the run's: an item whose own passed first says so (its
                    // caller is gone: not one to retry).
                    let own = self
                        .item_deadline
                        .map(|deadline_of| deadline_of(R::job(&future)))
                        .filter(|&own| own <= deadline);
                    match own {
                        Some(own) => self.hold_late(future, own, position, true),
                        None => self.hold_late(future, deadline, position, false),
                    }
                }
                None => {
                    let Some(cancelled) = R::Unstarted::cancelled(Cancelled::new(position)) else {
                        unreachable!("only a stream with deadlines cancels at one");
                    };
                    self.hold_at(position, cancelled);
                    self.held_expired += 1;
                    self.stats.cancelled += 1;
                }
            }
        }
        self.active = 0;
        self.admission.clear();
        let end = DeadlinePassed::new(deadline, source_ended);
        let Some(end) = R::Unstarted::deadline_passed(end) else {
            unreachable!("only a stream with deadlines has one pass");
        };
        let position = self.held.begin();
        self.hold_at(position, end);
        self.held_expired += 1;
        self.stats.deadline_passed = true;
        self.ready = true;
        Step::NotRun
    }
}
