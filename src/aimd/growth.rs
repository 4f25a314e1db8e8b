//! Growth after a round with no queue: slow start's doubling, half the gap
//! to the ceiling, holding just below it and probing it, and the climb past
//! a ceiling that proved stale.

use super::{Aimd, PROBE_ROUNDS, PROBE_SAMPLES, SOMETIMES};

impl Aimd {
    /// The limit after a round with no queue.
    pub(super) fn grown(&mut self, binds: bool, twice: bool) -> usize {
        let limit = self.limit;
        if self.ceiling.is_some_and(|ceiling| limit >= ceiling) {
            // A probe of the ceiling showed no queue: it is stale. The service
            // takes more than before, how much more is unknown: one more, then
            // twice as much more each round that binds.
            self.ceiling = None;
            self.step = 1;
            if binds && !self.slow_start {
                let grown = limit.saturating_add(self.step);
                self.step = self.step.saturating_mul(2);
                return grown;
            }
        }
        if self.slow_start {
            if !binds {
                // The source, not the limit, holds it back: doubling ends.
                self.slow_start = false;
                return limit;
            }
            if !self.provisional && !twice {
                // Slow start resumed against a measured figure: that figure
                // may be high by chance, and a doubling past the capacity
                // costs refusals; two rounds at a limit give two chances to
                // see a queue before it doubles.
                return limit;
            }
            let doubled = limit.saturating_mul(2);
            return self
                .ceiling
                .map_or(doubled, |ceiling| doubled.min(ceiling - 1).max(limit));
        }
        // Past a stale ceiling, every round that binds grows it.
        let climbing = self.ceiling.is_none() && self.step > 1;
        if !(twice || climbing && binds) {
            // Reached now and then: the source is about as fast as the limit,
            // and each time it is reached the source waits. One more; just
            // below the ceiling, held there and probing it, as a limit that
            // binds is (else a ceiling found by noise would hold for good).
            if binds || self.reached.0 < SOMETIMES {
                return limit;
            }
            return match self.ceiling {
                Some(ceiling) if limit + 1 >= ceiling => self.hold_or_probe(limit, ceiling),
                _ => limit + 1,
            };
        }
        match self.ceiling {
            Some(ceiling) if limit + 1 < ceiling => limit + ((ceiling - limit) / 2).max(1),
            Some(ceiling) => self.hold_or_probe(limit, ceiling),
            None => {
                let grown = limit.saturating_add(self.step);
                self.step = self.step.saturating_mul(2);
                grown
            }
        }
    }

    /// Held just below `ceiling` for one more round: every 160 samples or 32
    /// rounds, whichever comes first, the ceiling itself.
    pub(super) fn hold_or_probe(&mut self, limit: usize, ceiling: usize) -> usize {
        self.held += 1;
        if self.held * limit >= PROBE_SAMPLES || self.held >= PROBE_ROUNDS {
            self.held = 0;
            ceiling
        } else {
            limit
        }
    }
}
