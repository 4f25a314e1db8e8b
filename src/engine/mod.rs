//! The engine: every decision a stream makes, written once, for both modes.
//!
//! ```text
//!                    ┌──────────────────────────── Engine<R> ────────────────────────────┐
//!                    │ budgets, life, waiting queue (+ seats), held outcomes, counts,   │
//!                    │ admission (keys, weights), shedding, expiry, fail fast, clock,   │
//!                    │ deadlines, start rate, adaptive feed, limits, stats, metrics     │
//!                    │                                                                   │
//!   questions ──────▶│ next_start · top_up · complete · hand_out · end · alarm · stats  │
//!   answers   ◀──────│ "start this future at this position" · "hand out this outcome"   │
//!                    └───────────────┬───────────────────────────────────────────────────┘
//!                                    │ Io: pull the source once · cancel what runs · drop this
//!            ┌───────────────────────┴──────────────────────┐
//!   in place (bounded/drive.rs)                     spawned (spawn/state.rs, shared.rs, worker.rs)
//!   the consumer's poll_next: worker slots,         worker tasks: one lock around the engine,
//!   the wake tree, woken futures first, then        lock sections that ask it, wakes, spawns
//!   hand-out, then fill, then park (the timer       and destructors after the lock; an alarm
//!   armed for the engine's alarm)                   task sleeps on the timer
//! ```
//!
//! [`Engine`] owns the budgets, the waiting queue, the held outcomes, the
//! counts, the [`Life`] of the run, the clock, the key, weight,
//! shedding, expiry and fail-fast state, the adaptive controller, the limits
//! handles' settings, the stats and the `metrics` exporter. It does no I/O,
//! holds no waker and takes no lock: it answers the drivers' questions and
//! tells them what to do, and it pulls from the source or lets go of an item
//! only through [`Io`], which each driver implements. The shape is
//! quinn-proto's `Connection` (decide) beside quinn's `ConnectionInner`
//! (drive), and rustls's `SendPath`, moved whole behind a lock: a stream
//! built in place hands its engine, as it is, to `spawn_on`.
//!
//! The drivers differ only in mechanism, each difference on purpose and
//! commented where it is made: in place polls woken futures oldest first
//! before anything new starts (contract point 7) and keeps its source across
//! `close` for `reopen`; spawned drops the source at `close`, and never gives
//! an item its first poll after an error seen in the same lock section.
//!
//! - `spec.rs`: the stream's types in one parameter;
//! - `life.rs`: running, closing, failed, ended, and whether to pull;
//! - `start.rs`: what may start or wait, which item starts, expiry and
//!   shedding;
//! - `settle.rs`: completion, hand-out, fail fast, the end;
//! - `time.rs`: the run's deadline, items' own deadlines, the start rate,
//!   and when the drivers' timer must wake the stream;
//! - `build.rs`: the builder methods, before the first poll;
//! - `report.rs`: stats, `size_hint`, limits and metrics.

mod build;
mod io;
mod life;
mod report;
mod settle;
mod spec;
mod start;
mod time;

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

pub(crate) use self::io::{Discarded, Io, Pulled};
pub(crate) use self::life::{Life, State};
pub(crate) use self::settle::Ending;
pub(crate) use self::spec::{Of, Outcome, SendSpec, Spec, Stamp, Started, Types};
pub(crate) use self::start::{Start, Step};

use crate::adaptive::Adjust;
use crate::budget::Budgets;
use crate::clock::Clocking;
use crate::held::Held;
use crate::limits;
use crate::observe::Metrics;
use crate::shed::Shed;
use crate::stats::Stats;

/// A stream's decisions and everything they read, without the source, the
/// futures that run, or anything that wakes.
pub(crate) struct Engine<R: Types> {
    budgets: Budgets,
    life: Life,
    /// Items pulled and not yet started, oldest first, each with the time
    /// it was pulled.
    waiting: VecDeque<(Stamp<R>, R::Future)>,
    /// The input positions of the waiting items, side by side with them, when
    /// an ordered stream takes them at the pull ([`Engine::seated`]): with
    /// keys, weights or shedding an item may start or leave out of pull
    /// order, and its output must still come in input order.
    seats: VecDeque<u64>,
    /// Futures started and not yet complete (a driver runs them).
    active: usize,
    /// Outcomes not handed out yet, each with the time it completed.
    held: Held<(Stamp<R>, Outcome<R>)>,
    /// How many held outcomes are expired items (always 0 without
    /// `max_wait`): they count against the waiting budget, not the workers'.
    held_expired: usize,
    /// How many held outcomes are rejected items (always 0 without `shed`):
    /// they count against the rejection allowance ([`crate::shed`]).
    held_rejected: usize,
    admission: R::Admission,
    /// Which item a shedding stream hands back.
    shed: Shed,
    /// The error that ended the run, until it is handed out.
    failure: Option<R::Error>,
    /// Read at most once per poll (in place) or lock section (spawned).
    clock: R::Clock,
    /// What the [`Limits`](crate::Limits) handles share, once one was asked
    /// for.
    limits: OnceLock<Arc<limits::Settings>>,
    adaptive: Adjust<R::Output>,
    /// Peaks and totals; the current counts are read off the parts above.
    stats: Stats,
    metrics: Metrics,
    /// An item that was not run (expired, shed) became an outcome the
    /// consumer can take, since the driver last asked ([`Engine::take_ready`]).
    ready: bool,
    /// Whether `shed` was called: a stream with deadlines holds every cause
    /// of an item not run in one type, so its type cannot say it sheds.
    shedding: bool,
    /// How to read an item's own deadline, once `item_deadlines` was called.
    item_deadline: Option<fn(&R::Job) -> std::time::Instant>,
}

/// Nothing in the engine is pinned in place: the futures waiting are only
/// moved, never polled where they lie, and running ones belong to a driver.
impl<R: Types> Unpin for Engine<R> {}

impl<R: Types> Engine<R> {
    /// The budgets in force.
    pub(crate) fn budgets(&self) -> Budgets {
        self.budgets
    }

    /// Where the run is, and whether its source may be pulled.
    pub(crate) fn life(&self) -> &Life {
        &self.life
    }

    /// The same, to move the run along (the first poll, `close`, `reopen`;
    /// spawned, a pending source's wake).
    pub(crate) fn life_mut(&mut self) -> &mut Life {
        &mut self.life
    }

    /// See [`Life::enter_poll`](life::Life::enter_poll): the in-place
    /// driver's `poll_next` begins here, and so does every spawned lock
    /// section's clock.
    #[inline(always)]
    pub(crate) fn enter_poll(&mut self) -> bool {
        self.clock.begin_poll();
        self.life.enter_poll()
    }

    /// See [`Life::leave_poll`](life::Life::leave_poll).
    #[inline(always)]
    pub(crate) fn leave_poll(&mut self, ended: bool) {
        self.life.leave_poll(ended);
    }

    /// A spawned lock section begins: the previous clock reading is stale.
    #[inline(always)]
    pub(crate) fn begin_section(&mut self) {
        self.clock.begin_poll();
    }
}

impl<R: Spec> Engine<R> {
    /// Whether an item that was not run became an outcome the consumer can
    /// take now, since the last call: the spawned driver wakes the consumer
    /// (in place, [`Engine::step`] and [`Engine::fill_queue`] say so).
    #[inline(always)]
    pub(crate) fn take_ready(&mut self) -> bool {
        (Self::EXPIRES || Self::REJECTS) && std::mem::take(&mut self.ready)
    }

    /// Whether a waiting item may expire (`max_wait`).
    const EXPIRES: bool = <R::Unstarted as crate::expiry::Unstarted<R::Job>>::EXPIRES;
    /// Whether an item may be shed (`shed`).
    const REJECTS: bool = <R::Unstarted as crate::expiry::Unstarted<R::Job>>::REJECTS;
    /// Whether the key rule ranks the items it allows (the fair shares of
    /// [`crate::Tenants`]).
    pub(crate) const RANKED: bool = <R::Admission as crate::admission::Admits<R::Job>>::RANKED;
    /// Whether the stream has deadlines (`deadline`, `item_deadlines`).
    pub(crate) const DEADLINES: bool =
        <R::Unstarted as crate::expiry::Unstarted<R::Job>>::DEADLINES;

    /// Whether the stream sheds: by its type, or, for a stream with
    /// deadlines (whose outcomes hold every cause), as `shed` said.
    #[inline(always)]
    fn sheds(&self) -> bool {
        Self::REJECTS && (!Self::DEADLINES || self.shedding)
    }

    /// Whether items carry deadlines of their own (`item_deadlines`).
    #[inline(always)]
    fn dated(&self) -> bool {
        Self::DEADLINES && self.item_deadline.is_some()
    }

    /// Whether keys, weights, shedding or items' own deadlines apply: then
    /// every item is pulled into a waiting place and started from there
    /// ([`crate::admission`]): whether it may start is known only once it is
    /// pulled. A constant for every stream without deadlines.
    #[inline(always)]
    fn admitted(&self) -> bool {
        <R::Admission as crate::admission::Admits<R::Job>>::APPLIES || self.sheds() || self.dated()
    }

    /// Whether the stream keeps one waiting place even with `waiting == 0`:
    /// with keys, weights or items' own deadlines, every item is pulled into
    /// one (shedding alone starts or sheds an item it cannot queue).
    #[inline(always)]
    fn keeps_a_place(&self) -> bool {
        <R::Admission as crate::admission::Admits<R::Job>>::APPLIES || self.dated()
    }
}
