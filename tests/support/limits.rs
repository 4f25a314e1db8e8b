//! Limit changes for the property tests of contract point 25, in place and
//! spawned: what a change is, how one is made through a `Limits` handle, and
//! the limits in force that the test checks the stream against.

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

    /// How many items may be running or held: the window, else the workers.
    pub fn span(&self) -> usize {
        self.window.unwrap_or(self.workers)
    }

    pub fn within(&self, stats: &Stats) -> bool {
        stats.active <= self.workers
            && stats.waiting <= self.waiting
            && stats.active + stats.held <= self.span()
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
