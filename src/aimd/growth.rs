//! Growth after a round with no queue: slow start's doubling, half the gap
//! to the ceiling, holding just below it and probing it, and the climb past
//! a ceiling that proved stale.

use super::{Aimd, PROBE_ROUNDS, PROBE_SAMPLES, REFUSED_PROBE, SOMETIMES};

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
            // Back-pressure set it and none came at it now: that refusal came
            // whatever the load, and slow start goes on if it ended it.
            if self
                .refusals
                .passed(limit)
                .is_some_and(|level| level.ended_slow_start)
            {
                self.resume_slow_start();
            }
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
            let Some(ceiling) = self.ceiling.filter(|&ceiling| doubled >= ceiling - 1) else {
                return doubled;
            };
            // Just below a ceiling: slow start is over, the limit holds there
            // and probes it.
            self.slow_start = false;
            return (ceiling - 1).max(limit);
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
        if let Some(ceiling) = self.ceiling.filter(|_| self.recheck) {
            // One refusal alone set it: the base rate, maybe. Checked at
            // once, before the limit settles below it.
            self.recheck = false;
            self.held = 0;
            return ceiling;
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

    /// Back-pressure that ended slow start proved to be refusals that come
    /// whatever the load: slow start goes on, unless a measurement is under
    /// way, or one after a rise is done (it decides; one after
    /// back-pressure does not).
    pub(super) fn resume_slow_start(&mut self) {
        self.throughput.clear();
        if (self.provisional || !self.start_decided) && self.measuring.is_none() {
            self.slow_start = true;
        }
    }

    /// Held just below `ceiling` for one more round: every 160 samples the
    /// ceiling itself; below one back-pressure set, every 32 rounds if that
    /// comes first.
    pub(super) fn hold_or_probe(&mut self, limit: usize, ceiling: usize) -> usize {
        self.held += 1;
        // A probe of a ceiling back-pressure set costs a refusal, wasted
        // calls: it comes half as often; with a base rate that can explain
        // one refusal, it costs two: half as often again.
        let every = if self.refusals.level() != Some(ceiling) {
            1
        } else if self.refusals.base_rate() > 0.0 {
            REFUSED_PROBE * 4
        } else {
            REFUSED_PROBE
        };
        // A probe of a ceiling a queue set queues an item or so: however
        // small the limit, one in 160 samples (every 32 rounds, a service
        // that takes 2 had a p95 half as high again as its unloaded one).
        // One back-pressure set is tried within 32 rounds, though: the
        // refusal may have been the base rate's.
        let rounds = every > 1 && self.held >= PROBE_ROUNDS;
        if self.held * limit >= PROBE_SAMPLES * every || rounds {
            self.held = 0;
            ceiling
        } else {
            limit
        }
    }
}
