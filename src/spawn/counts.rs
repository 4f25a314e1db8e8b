//! [`Counts`]: how many futures run, and the peaks and totals [`Stats`] reports.

use crate::stats::Stats;

/// The spawned mode's counters. The current numbers of waiting items and held
/// outputs are read off the queue and the store that hold them; only `active`
/// has nothing else to be read off (the futures live in the tasks).
#[derive(Default)]
pub(super) struct Counts {
    /// Futures started and not yet complete: each is owned by one worker task,
    /// which may not have polled it yet.
    pub(super) active: usize,
    /// Peaks and totals; its current-count fields stay 0.
    totals: Stats,
}

impl Counts {
    pub(super) fn pulled(&mut self) {
        self.totals.pulled += 1;
    }

    /// An item was queued; `waiting` are queued now.
    pub(super) fn queued(&mut self, waiting: usize) {
        self.totals.peak_waiting = self.totals.peak_waiting.max(waiting);
    }

    pub(super) fn started(&mut self) {
        self.active += 1;
        self.totals.peak_active = self.totals.peak_active.max(self.active);
    }

    /// A future completed; `held` outputs are held now, its own included.
    pub(super) fn completed(&mut self, held: usize) {
        self.active -= 1;
        self.totals.completed += 1;
        self.totals.peak_held = self.totals.peak_held.max(held);
    }

    /// A waiting item expired at pickup; `held` outputs are held now, its
    /// outcome included.
    pub(super) fn expired(&mut self, held: usize) {
        self.totals.expired += 1;
        self.totals.peak_held = self.totals.peak_held.max(held);
    }

    /// A waiting item was shed; `held` outputs are held now, its outcome
    /// included.
    pub(super) fn rejected(&mut self, held: usize) {
        self.totals.rejected += 1;
        self.totals.peak_held = self.totals.peak_held.max(held);
    }

    /// A snapshot, given the current waiting and held counts.
    pub(super) fn stats(&self, waiting: usize, held: usize) -> Stats {
        Stats {
            active: self.active,
            waiting,
            held,
            ..self.totals
        }
    }
}
