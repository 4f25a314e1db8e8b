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
//! had no queue to cut. Past a capacity, what it served is the capacity over
//! the run time, so the floor is no higher than the capacity and the cut
//! goes as far as the rule asks.

use std::collections::VecDeque;

use super::{SERVED_FELL, SERVED_ROUNDS};

/// The last rounds that bound, out of slow start: their items in flight
/// and mean run time, outliers counted (Little's law needs every item).
#[derive(Clone, Debug, Default)]
pub(super) struct Throughput {
    rounds: VecDeque<(f64, f64)>,
}

impl Throughput {
    /// A round that bound, `in_flight` items in flight on average, `mean`
    /// its mean run time. One whose items each served less than
    /// `SERVED_FELL` of what those of the round that served the most did
    /// (a run time 1 / `SERVED_FELL` times as long) has a service that
    /// changed (a capacity that fell, a slower version): the rounds before
    /// it no longer say what it serves, and are forgotten. A round at a
    /// higher limit past a capacity may run that long too: what it served
    /// is then the capacity's, the floor it leaves.
    pub(super) fn add(&mut self, in_flight: f64, mean: f64) {
        if mean <= 0.0 {
            return;
        }
        if self
            .most()
            .is_some_and(|(_, most)| mean * SERVED_FELL > most)
        {
            self.rounds.clear();
        }
        if self.rounds.len() == SERVED_ROUNDS {
            self.rounds.pop_front();
        }
        self.rounds.push_back((in_flight, mean));
    }

    /// The round that served the most: its items in flight and mean run
    /// time.
    fn most(&self) -> Option<(f64, f64)> {
        self.rounds
            .iter()
            .copied()
            .max_by(|a, b| (a.0 / a.1).total_cmp(&(b.0 / b.1)))
    }

    /// The items in flight the most served would keep busy at the lowest
    /// run time known (these rounds' means and `unloaded`), rounded down:
    /// none before a round is known.
    pub(super) fn floor(&self, unloaded: f64) -> usize {
        let Some((in_flight, mean)) = self.most() else {
            return 0;
        };
        let least = self
            .rounds
            .iter()
            .map(|&(_, mean)| mean)
            .fold(unloaded, f64::min);
        // A limit is far below 2^52: the float is exact.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let floor = (in_flight / mean * least).floor() as usize;
        floor
    }
}
