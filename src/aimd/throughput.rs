//! What the service served in the last rounds that bound: a floor under the
//! cuts for a queue.
//!
//! A round's run time can rise for reasons other than a queue: a speed that
//! drifts (a noisy neighbour, a collector's pause: every request running in
//! one stretch slowed alike) makes a round slow now and then, and against an
//! unloaded figure that the fast rounds taught, each such round reads as a
//! queue. The cuts then walk the limit down far below a capacity that no
//! queue ever reached. The throughput tells them apart where the run time
//! cannot: by Little's law a round served its items in flight over its mean
//! run time, and a limit that served that much at the lowest run time known
//! had no queue to cut. Past a capacity, a round serves about the capacity
//! over the unloaded run time whatever its limit, so the floor is about the
//! capacity and the cut goes as far as the rule asks.

use std::collections::VecDeque;

use super::figures::Served;
use super::{SERVED_FELL, SERVED_ROUNDS};

/// The last rounds that bound, out of slow start and of the measurements.
#[derive(Clone, Debug)]
pub(super) struct Throughput {
    rounds: VecDeque<RoundServed>,
}

impl Default for Throughput {
    /// Room for all its rounds from the start: the controller allocates
    /// nothing as a stream runs.
    fn default() -> Self {
        Self {
            rounds: VecDeque::with_capacity(SERVED_ROUNDS),
        }
    }
}

/// A round that bound: what it served, by its mean run time with the
/// outliers (what Little's law needs: every item), and its mean run time
/// without them (what its run time is compared by).
#[derive(Clone, Copy, Debug)]
struct RoundServed {
    served: Served,
    seen: f64,
}

impl Throughput {
    /// A round that bound: what it `served` (its items in flight on average
    /// and its run times with the outliers), and its mean run time `seen`
    /// without them. One whose run time, outliers left out, is
    /// 1 / `SERVED_FELL` times that of the round that served the most
    /// (each item serving less than
    /// `SERVED_FELL` of what those did) has a service that changed (a
    /// capacity that fell, a slower version): the rounds before it no
    /// longer say what it serves, and are forgotten. (Outliers left out: a
    /// pause that held a few items past four times the unloaded run time
    /// is the noise this floor is for, not a change.) A round at a limit
    /// far past a capacity may run that long too: what it served is then
    /// the capacity's, the floor it leaves.
    pub(super) fn add(&mut self, served: Served, seen: f64) {
        if served.mean <= 0.0 {
            return;
        }
        if self
            .most()
            .is_some_and(|most| seen * SERVED_FELL > most.seen)
        {
            self.rounds.clear();
        }
        if self.rounds.len() == SERVED_ROUNDS {
            self.rounds.pop_front();
        }
        self.rounds.push_back(RoundServed { served, seen });
    }

    /// Forgets every round: the unloaded run time is measured again, or
    /// slow start goes on, and what rounds served before says nothing of
    /// the service that figure will be compared with.
    pub(super) fn clear(&mut self) {
        self.rounds.clear();
    }

    /// The round that served the most.
    fn most(&self) -> Option<RoundServed> {
        self.rounds
            .iter()
            .copied()
            .max_by(|a, b| a.served.rate().total_cmp(&b.served.rate()))
    }

    /// The items in flight the most served would keep busy at the lowest
    /// run time known (these rounds' means with outliers, and `unloaded`),
    /// rounded down: none before a round is known.
    pub(super) fn kept_busy(&self, unloaded: f64) -> usize {
        let Some(most) = self.most() else {
            return 0;
        };
        let least = self
            .rounds
            .iter()
            .map(|round| round.served.mean)
            .fold(unloaded, f64::min);
        // The ratio first: where `least` is the round's own mean, the items
        // in flight come back exactly, not a hair below and floored to one
        // fewer.
        let busy = (most.served.in_flight * (least / most.served.mean)).floor();
        // A limit is far below 2^52, and `busy` is whole and not negative:
        // the cast loses nothing.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let busy = busy as usize;
        busy
    }
}
