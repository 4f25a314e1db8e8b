//! What the engine tells the world: stats, `size_hint`, timings, the limits
//! handles' settings, and the `metrics` exporter.

use std::sync::Arc;

use super::Engine;
use super::spec::Types;
use crate::admission::Admits;
use crate::clock::Clocking;
use crate::limits::{self, Limits, Signal};
use crate::stats::{self, Stats};
use crate::timings::Timings;

impl<R: Types> Engine<R> {
    /// The counts, their peaks and totals, the limits in force (a handle's
    /// as soon as it set them) and, with keys or weights, theirs.
    pub(crate) fn stats(&self) -> Stats {
        let (workers_limit, waiting_limit) = match self.limits.get() {
            Some(settings) => settings.get(),
            None => (self.budgets.workers, self.budgets.waiting),
        };
        let mut stats = Stats {
            active: self.active,
            waiting: self.waiting.len(),
            held: self.held.len(),
            workers_limit,
            waiting_limit,
            paused: workers_limit == 0,
            ..self.stats
        };
        if let Some(time) = self.clock.time() {
            stats.rate_waited = time.rate_waited();
        }
        if R::Admission::APPLIES {
            let waiting = self.waiting.iter().map(|(_, future)| R::job(future));
            let (keys_running, blocked, [running, queued, peak_running, peak_queued]) =
                self.admission.report(waiting);
            stats.keys_running = keys_running;
            stats.blocked_by_key = blocked;
            stats.running_weight = running;
            stats.waiting_weight = queued;
            stats.peak_running_weight = peak_running;
            stats.peak_waiting_weight = peak_queued;
        }
        stats
    }

    /// What the stream may still yield: everything pulled and not handed out,
    /// plus what the source has left by its own hint (`source`, asked only
    /// while it may still give items), or, after fail fast, exactly the held
    /// outcomes that precede the error and the error.
    pub(crate) fn size_hint<E>(
        &self,
        source: impl FnOnce() -> Result<(usize, Option<usize>), E>,
    ) -> Result<(usize, Option<usize>), E> {
        if self.life.has_ended() {
            return Ok((0, Some(0)));
        }
        if self.life.is_failed() {
            // Nothing runs or waits: the held prefix, then the error.
            let left = self.held.len() + usize::from(self.failure.is_some());
            return Ok((left, Some(left)));
        }
        let in_flight = self
            .active
            .saturating_add(self.waiting.len())
            .saturating_add(self.held.len());
        let source = if self.life.is_shut() {
            (0, Some(0))
        } else {
            source()?
        };
        Ok(stats::size_hint(in_flight, source, R::FALLIBLE))
    }

    /// A copy of the time distributions, if timing is on.
    pub(crate) fn timings(&self) -> Option<Timings> {
        self.clock.timings()
    }

    /// A handle to the limits, made with the driver's `signal` the first
    /// time: every handle shares the same settings.
    pub(crate) fn limits(&self, signal: impl FnOnce() -> Signal) -> Limits {
        let settings = self.limits.get_or_init(|| {
            let rate = self.clock.time().and_then(|time| time.rate());
            Arc::new(limits::Settings::new(
                self.budgets.workers,
                self.budgets.waiting,
                rate.map(|(rate, _)| rate),
                signal(),
            ))
        });
        Limits::new(Arc::clone(settings))
    }

    /// The handles' settings, if a handle was taken.
    pub(crate) fn settings(&self) -> Option<&Arc<limits::Settings>> {
        self.limits.get()
    }

    /// Takes the handles' settings away (the spawned stream's drop: a
    /// controller that could write to them is gone with the stream).
    pub(crate) fn take_settings(&mut self) -> Option<Arc<limits::Settings>> {
        self.limits.take()
    }

    /// Applies the limits a handle set, before anything else starts.
    #[cold]
    pub(crate) fn apply_limits(&mut self) {
        if let Some(settings) = self.limits.get() {
            let (workers, waiting) = settings.get();
            self.budgets.set(workers, waiting);
            if let (Some((n, per)), Some(time)) = (settings.rate(), self.clock.time_mut()) {
                if time.rate().is_some_and(|(rate, _)| rate != (n, per)) {
                    time.set_rate(n, per);
                }
            }
        }
    }

    /// Hands the exporter, if any, what changed (see [`crate::observe`]), if
    /// a publish is due: at once when the stream is `at_rest` (in place, its
    /// poll returned `Pending` or the end; spawned, the consumer parked or
    /// the run is over), else every 64th call (in place once per poll,
    /// spawned once per lock section).
    #[inline(always)]
    pub(crate) fn publish(&mut self, at_rest: impl FnOnce() -> bool) {
        if self.metrics.is_on() && self.metrics.due(at_rest()) {
            self.publish_now();
        }
    }

    #[cold]
    pub(crate) fn publish_now(&mut self) {
        let stats = self.stats();
        let failed = self.life.is_failed();
        self.metrics.publish(&stats, failed, &mut self.clock);
    }
}
