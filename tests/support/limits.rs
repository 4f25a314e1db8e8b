//! Limit changes for the property tests of contract point 25, and the limits
//! in force that the random stepper (`schedule`) checks a stream against:
//! what a change is, how one is made through a `Limits` handle, and what the
//! budgets allow (points 2 to 5; with expired items held, point 23).

use std::ops::RangeInclusive;

use bounded_buffered::{Limits, Stats};
use proptest::prelude::*;

#[derive(Clone, Copy, Debug)]
pub enum Change {
    Workers(usize),
    Waiting(usize),
}

impl Change {
    /// Mostly small limits (pauses included), now and then a raise of
    /// `workers` into `big`.
    pub fn strategy(big: RangeInclusive<usize>) -> impl Strategy<Value = Change> {
        prop_oneof![
            4 => (0..=6usize).prop_map(Change::Workers),
            1 => big.prop_map(Change::Workers),
            3 => (0..=4usize).prop_map(Change::Waiting),
        ]
    }

    /// Makes the change through `handle`, from another thread if `elsewhere`.
    pub fn make(self, handle: &Limits, elsewhere: bool) {
        let handle = handle.clone();
        let apply = move || match self {
            Change::Workers(n) => handle.set_workers(n),
            Change::Waiting(n) => handle.set_waiting(n),
        };
        if elsewhere {
            std::thread::spawn(apply).join().unwrap();
        } else {
            apply();
        }
    }
}

/// The limits in force, and what may be asserted of them.
pub struct InForce {
    pub workers: usize,
    pub waiting: usize,
    pub window: Option<usize>,
    /// The work is within these limits (and has been since they last moved).
    pub settled: bool,
}

impl InForce {
    pub fn new(workers: usize, waiting: usize, window: Option<usize>) -> Self {
        Self {
            workers,
            waiting,
            window,
            settled: true,
        }
    }

    /// How many items may be running or held: the window, else the workers;
    /// and how many of the held are expired items that keep a waiting place
    /// instead (unordered: an untaken output keeps its worker, an expired
    /// item its place in the queue; ordered, both hold their place in the
    /// window).
    fn span(&self, held_expired: usize) -> (usize, usize) {
        match self.window {
            Some(window) => (window, 0),
            None => (self.workers, held_expired),
        }
    }

    pub fn within(&self, stats: &Stats, held_expired: usize) -> bool {
        let (span, queued) = self.span(held_expired);
        stats.active <= self.workers
            && stats.waiting + queued <= self.waiting
            && stats.active + stats.held - queued <= span
    }

    /// Every budget holds: the workers, the queue, the held outputs, the
    /// futures actually running, and how far the source is ahead of the
    /// consumer (`in_flight`: pulled and not yielded).
    pub fn check(
        &self,
        stats: &Stats,
        held_expired: usize,
        running: usize,
        in_flight: usize,
        context: &str,
    ) {
        let (span, queued) = self.span(held_expired);
        let checks = [
            (self.within(stats, held_expired), "over budget"),
            (
                running <= self.workers.min(span),
                "futures running over budget",
            ),
            (
                running + stats.held - queued <= span,
                "running and held over budget",
            ),
            (in_flight <= span + self.waiting, "source too far ahead"),
        ];
        for (holds, what) in checks {
            assert!(holds, "{what}: {context}");
        }
    }

    /// Every budget is exactly full: the workers or the window, and the
    /// queue (unless `no_puller`: nothing there to pull ahead).
    pub fn check_full(&self, stats: &Stats, held_expired: usize, no_puller: bool, context: &str) {
        let (span, queued) = self.span(held_expired);
        assert!(
            stats.active == self.workers || stats.active + stats.held - queued == span,
            "worker budget left idle: {context}"
        );
        assert!(
            no_puller || stats.waiting + queued == self.waiting,
            "waiting budget left idle: {context}"
        );
    }

    /// Records `change`.
    pub fn apply(&mut self, change: Change) {
        match change {
            Change::Workers(n) => {
                self.settled &= n >= self.workers;
                self.workers = n;
            }
            Change::Waiting(n) => {
                self.settled &= n >= self.waiting;
                self.waiting = n;
            }
        }
    }
}
