//! [`History`]: the decisions an [`Aimd`](super::Aimd) made, for a plot or
//! a log.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The decisions an [`Aimd`](super::Aimd) made, for a plot or a log: one [`Decision`] per
/// round, the latest `capacity` kept. `Clone + Send + Sync`.
///
/// # Examples
///
/// ```
/// use bounded_buffered::Aimd;
///
/// let aimd = Aimd::new(1, 8).with_history(100);
/// let history = aimd.history().unwrap();
/// assert!(history.rounds().is_empty());
/// ```
#[derive(Clone, Debug)]
pub struct History {
    pub(super) rounds: Arc<Mutex<VecDeque<Decision>>>,
    pub(super) capacity: usize,
}

/// One round of an [`Aimd`](super::Aimd) controller: when it ended, what it saw, the limit
/// it set.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Decision {
    /// When the round ended (the completion of its last sample), from the
    /// stream's first clock reading.
    pub at: Duration,
    /// The round's mean run time (`None` for a back-pressure decision).
    pub mean_run: Option<Duration>,
    /// The unloaded run time it compared with.
    pub base: Option<Duration>,
    /// A back-pressure sample decided this round.
    pub overload: bool,
    /// The limit from this decision on.
    pub limit: usize,
}

impl History {
    /// The recorded rounds, oldest first.
    pub fn rounds(&self) -> Vec<Decision> {
        let rounds = self.rounds.lock().unwrap_or_else(PoisonError::into_inner);
        rounds.iter().copied().collect()
    }

    pub(super) fn record(&self, decision: Decision) {
        let mut rounds = self.rounds.lock().unwrap_or_else(PoisonError::into_inner);
        if rounds.len() == self.capacity {
            rounds.pop_front();
        }
        rounds.push_back(decision);
    }
}
