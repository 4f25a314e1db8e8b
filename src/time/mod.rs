//! Time budgets: a deadline for the whole run, deadlines carried by items,
//! and a start rate, beside the count budgets. Each rule is written here
//! once; the engine applies them ([`crate::engine`]), and the drivers only
//! arm a [`Timer`] for the instant the engine names.
//!
//! - **The run's deadline** ([`deadline`](crate::BoundedBuffered::deadline)):
//!   from the deadline on, nothing is pulled or started. The first time the
//!   stream sees it passed (a poll or a lock section, woken by the timer if
//!   nothing else wakes it), every waiting item comes back [`Late`], every
//!   running one is cancelled and comes back [`Cancelled`] with its input
//!   position, completed outputs are still handed out, and the run ends with
//!   [`DeadlinePassed`].
//! - **An item's deadline** ([`Deadline`]): checked when a worker picks the
//!   item up (from the queue, or straight from the source), as `max_wait`
//!   is; an item whose deadline passed comes back [`Late`], never polled.
//!   Its effective deadline is the earlier of its own and the run's.
//! - **The start rate** ([`rate`](crate::BoundedBuffered::rate)): a start
//!   needs a free worker (the counts) and a token ([`rate`]'s GCRA). While
//!   no token is free, nothing starts; items are pulled ahead as the
//!   waiting budget allows, as when the workers are busy, so the admission
//!   bound is unchanged.
//!
//! Both "now" and the deadlines are read off the stream's one clock, once
//! per poll (in place) or lock section (spawned): [`Time`] keeps that
//! reading for every rule here. A stream without a deadline or a rate has no
//! `Time`, and a plain stream no clock at all: none of this runs for it.

mod carried;
mod outcome;
pub(crate) mod rate;
mod timer;

use std::time::{Duration, Instant};

pub use self::carried::{Deadline, DeadlineOf};
pub use self::outcome::{Cancelled, DeadlinePassed, Late, Unfinished};
pub use self::timer::Timer;
#[cfg(feature = "tokio")]
pub use self::timer::TokioTimer;
pub(crate) use self::timer::{Alarm, Now};
#[cfg(feature = "smol")]
pub use self::timer::{SmolSleep, SmolTimer};

use self::rate::Rate;

/// A stream's time budgets, and the clock reading they are judged by.
/// (Public only because [`Clocking`](crate::Clocking)'s hidden methods name
/// it; it cannot be named from outside.)
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct Time {
    /// The run's deadline.
    deadline: Option<Instant>,
    /// The deadline was seen passed, and the run stopped.
    passed: bool,
    rate: Option<Rate>,
    /// The current reading, as an instant, and in nanoseconds since the
    /// first one (the rate's scale).
    now: Option<Instant>,
    now_ns: u64,
    epoch: Option<Instant>,
    /// Since when a start the counts allow waits for a token, while it does.
    blocked_since: Option<u64>,
    /// How long starts waited for tokens, in all (nanoseconds).
    blocked: u64,
}

impl Time {
    /// A new reading of the clock.
    #[inline]
    pub(crate) fn read(&mut self, now: Instant) {
        let epoch = *self.epoch.get_or_insert(now);
        self.now = Some(now);
        self.now_ns =
            u64::try_from(now.saturating_duration_since(epoch).as_nanos()).unwrap_or(u64::MAX);
    }

    fn now(&self) -> Instant {
        // Read at the start of every poll and section (the clock reads
        // eagerly once a stream has time budgets); before the first, never
        // asked.
        self.now.expect("the clock read at the start of the poll")
    }

    pub(crate) fn set_deadline(&mut self, deadline: Instant) {
        self.deadline = Some(deadline);
    }

    /// Whether the run's deadline passed and the run has not stopped yet.
    #[inline]
    pub(crate) fn deadline_due(&self) -> bool {
        !self.passed && self.deadline.is_some_and(|deadline| self.now() >= deadline)
    }

    /// The run stops at its deadline: returns it.
    pub(crate) fn pass_deadline(&mut self) -> Instant {
        self.passed = true;
        self.deadline.expect("a deadline that passed")
    }

    /// Whether `deadline` (an item's) has passed.
    #[inline]
    pub(crate) fn is_past(&self, deadline: Instant) -> bool {
        self.now() >= deadline
    }

    /// Whether the rate lets one more item start now.
    #[inline]
    pub(crate) fn rate_allows(&self) -> bool {
        self.rate
            .as_ref()
            .is_none_or(|rate| rate.allows(self.now_ns))
    }

    /// An item started: it took a token, and whatever waited for one is
    /// done waiting.
    #[inline]
    pub(crate) fn started(&mut self) {
        if let Some(rate) = &mut self.rate {
            rate.take(self.now_ns);
            if let Some(since) = self.blocked_since.take() {
                self.blocked += self.now_ns.saturating_sub(since);
            }
        }
    }

    /// A start the counts allow, with an item for it, waits for a token.
    pub(crate) fn rate_blocks(&mut self) {
        self.blocked_since.get_or_insert(self.now_ns);
    }

    /// When the stream must look again though nothing else may wake it: the
    /// run's deadline, until it passed, and, if `for_rate` (a start waits
    /// only for a token), the next token.
    pub(crate) fn alarm(&self, for_rate: bool) -> Option<Instant> {
        let deadline = self.deadline.filter(|_| !self.passed);
        let token = self
            .rate
            .as_ref()
            .filter(|_| for_rate && !self.passed)
            .zip(self.epoch)
            .map(|(rate, epoch)| epoch + Duration::from_nanos(rate.next()));
        match (deadline, token) {
            (Some(deadline), Some(token)) => Some(deadline.min(token)),
            (deadline, token) => deadline.or(token),
        }
    }

    /// The rate in force, `(n, per)`, and its burst.
    pub(crate) fn rate(&self) -> Option<((u32, Duration), u32)> {
        self.rate.as_ref().map(|rate| (rate.get(), rate.burst()))
    }

    /// How long starts waited for tokens so far, counting a wait still
    /// going on.
    pub(crate) fn rate_waited(&self) -> Duration {
        let going = self
            .blocked_since
            .map_or(0, |since| self.now_ns.saturating_sub(since));
        Duration::from_nanos(self.blocked.saturating_add(going))
    }

    /// Sets the rate: a new one starts with a full bucket; a changed one
    /// keeps the tokens it holds or owes ([`Rate::set`]).
    pub(crate) fn set_rate(&mut self, n: u32, per: Duration) {
        match &mut self.rate {
            Some(rate) => rate.set(n, per, self.now_ns),
            None => self.rate = Some(Rate::new(n, per)),
        }
    }

    pub(crate) fn set_burst(&mut self, burst: u32) -> bool {
        match &mut self.rate {
            Some(rate) => {
                rate.set_burst(burst);
                true
            }
            None => false,
        }
    }

    pub(crate) fn has_rate(&self) -> bool {
        self.rate.is_some()
    }
}
