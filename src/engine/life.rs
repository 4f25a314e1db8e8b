//! [`Life`]: where a run is, and whether its source may be pulled, in one
//! place for both drivers.
//!
//! A run is **running** until `close` makes it **closing** (nothing more is
//! pulled; what was pulled finishes), an error makes it **failed**
//! (`try_bounded`: nothing more is pulled or started), or it **ended** (the
//! stream returned `None`, or the spawned driver cancelled it: dropped, or
//! broken by a panic), or **stopped** at its deadline (nothing more is
//! pulled or started; what was pulled comes back). The source is pulled
//! only while nothing stands in the
//! way: one byte, read on every pull, whose bits say what does.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// The source returned `Pending` and will wake whoever polled it: asking it
/// again before then is wasted work (in place: within this `poll_next`;
/// spawned: until the task it wakes is polled).
const PENDING: u8 = 1;
/// The source returned `None`.
const DONE: u8 = 2;
/// `close` was called: take nothing more, finish the rest.
const CLOSED: u8 = 4;
/// The run failed fast: take nothing more, drop the rest.
const FAILED: u8 = 8;
/// The run is over: nothing starts or is pulled, ever (spawned: ended,
/// dropped or broken by a panic; its tasks stop).
const OVER: u8 = 16;
/// The run's deadline passed: nothing more is pulled or started; what was
/// held is handed out, then the deadline's outcome.
const STOPPED: u8 = 32;
/// No item will ever be pulled again (until `reopen`, if only closed).
const SHUT: u8 = DONE | CLOSED | FAILED | OVER | STOPPED;

/// The stages of a run, as [`Life::state`] names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Pulling and starting as the budgets allow.
    Running,
    /// `close` was called: what was pulled finishes, nothing more is pulled.
    Closing,
    /// An error ended the run (`try_bounded`): what may precede it is handed
    /// out, then the error, then the end.
    Failed,
    /// The run's deadline passed: what completed is handed out, with what
    /// was still waiting or running, then the deadline, then the end.
    Stopped,
    /// The stream ended (or, spawned, was cancelled).
    Ended,
}

/// Where the consumer is with the stream: the in-place driver's guard
/// against being polled after a panic escaped, and the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Never polled: builder methods may still be called.
    New,
    /// Between two polls.
    Idle,
    /// Inside a poll (in place); seen on entry only if a panic escaped.
    Polling,
    /// Returned `None`.
    Ended,
}

pub(crate) struct Life {
    /// What keeps the source from being pulled now: 0 if nothing does.
    /// Atomic only so that the in-place `close` can take `&self`.
    source: AtomicU8,
    stage: Stage,
}

impl Life {
    pub(crate) fn new() -> Self {
        Self {
            source: AtomicU8::new(0),
            stage: Stage::New,
        }
    }

    #[inline(always)]
    fn flags(&self) -> u8 {
        self.source.load(Relaxed)
    }

    #[inline(always)]
    fn set(&mut self, flag: u8) {
        *self.source.get_mut() |= flag;
    }

    /// Whether the source may be pulled now: the one answer both drivers
    /// ask for.
    #[inline(always)]
    pub(crate) fn may_pull(&self) -> bool {
        self.flags() == 0
    }

    /// Whether no item will ever be pulled again (so the run ends once what
    /// was pulled is handed out).
    #[inline]
    pub(crate) fn is_shut(&self) -> bool {
        self.flags() & SHUT != 0
    }

    pub(crate) fn is_failed(&self) -> bool {
        self.flags() & FAILED != 0
    }

    /// Whether the run is over or failed: nothing it does from now on
    /// depends on time (a deadline passing changes nothing).
    pub(crate) fn is_settled(&self) -> bool {
        self.flags() & (FAILED | OVER) != 0 || self.stage == Stage::Ended
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.flags() & CLOSED != 0
    }

    /// The source returned `Pending`.
    #[inline]
    pub(crate) fn source_pending(&mut self) {
        self.set(PENDING);
    }

    /// Whoever the pending source wakes was polled: it may be pulled again.
    #[inline(always)]
    pub(crate) fn source_woke(&mut self) {
        *self.source.get_mut() &= !PENDING;
    }

    /// The source returned `None`.
    pub(crate) fn source_done(&mut self) {
        self.set(DONE);
    }

    /// Whether the source returned `None`.
    pub(crate) fn source_ended(&self) -> bool {
        self.flags() & DONE != 0
    }

    /// The run's deadline passed.
    pub(crate) fn stop_at_deadline(&mut self) {
        self.set(STOPPED);
    }

    /// See `close`: `&self`, from anywhere between two polls.
    pub(crate) fn close(&self) {
        self.source.fetch_or(CLOSED, Relaxed);
    }

    /// See `reopen`: the run goes on, from the source's next item.
    #[track_caller]
    pub(crate) fn reopen(&mut self) {
        assert!(
            !self.is_failed(),
            "`reopen` after the run failed: a stream that failed fast does not resume"
        );
        *self.source.get_mut() &= !CLOSED;
        if self.stage == Stage::Ended {
            // It ended only because it was closed: with the source not done,
            // its next poll pulls again; with it done, that poll ends it again.
            self.stage = Stage::Idle;
        }
    }

    /// First the record, so that a destructor panicking during the rest of
    /// the failure leaves a run that takes nothing more.
    pub(crate) fn fail(&mut self) {
        self.set(FAILED);
    }

    /// The run is over (spawned: ended, dropped, or broken by a panic).
    pub(crate) fn end(&mut self) {
        self.set(OVER);
    }

    /// Whether builder methods may still be called.
    pub(crate) fn is_new(&self) -> bool {
        self.stage == Stage::New
    }

    /// The first poll.
    pub(crate) fn begin(&mut self) {
        if self.stage == Stage::New {
            self.stage = Stage::Idle;
        }
    }

    /// Whether the stream returned `None`.
    pub(crate) fn has_ended(&self) -> bool {
        self.stage == Stage::Ended
    }

    /// In place, on entering `poll_next`: `false` if the stream ended. Panics
    /// if a panic escaped the previous poll (its item is lost).
    #[inline(always)]
    pub(crate) fn enter_poll(&mut self) -> bool {
        match self.stage {
            Stage::Ended => return false,
            Stage::Polling => panic!(
                "`BoundedBuffered` polled after a panic escaped from one of its futures or its source"
            ),
            Stage::New | Stage::Idle => self.stage = Stage::Polling,
        }
        // A new poll: a source pending since the last one may have woken us.
        self.source_woke();
        true
    }

    /// In place, on leaving `poll_next` normally; spawned, once it handed
    /// out the end.
    #[inline(always)]
    pub(crate) fn leave_poll(&mut self, ended: bool) {
        self.stage = if ended { Stage::Ended } else { Stage::Idle };
    }

    /// Where the run is.
    pub(crate) fn state(&self) -> State {
        if self.stage == Stage::Ended || self.flags() & OVER != 0 {
            State::Ended
        } else if self.is_failed() {
            State::Failed
        } else if self.flags() & STOPPED != 0 {
            State::Stopped
        } else if self.is_closed() {
            State::Closing
        } else {
            State::Running
        }
    }
}

impl fmt::Debug for Life {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.state().fmt(f)
    }
}
