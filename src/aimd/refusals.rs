//! Refusals judged against the limit: what share of the calls a service
//! refuses whatever the load (another tenant's quota, a flaky shard), and
//! whether the refusals at a limit are more than that share explains.

/// The base rate of refusals is a mean over about this many calls.
const MEMORY: f64 = 4096.0;
/// A refusal within this many calls of the one before it belongs to the same
/// event: a burst, a flood, a probe's refused retries. The base rate counts
/// events, so the load's own floods hardly move it.
const SAME_EVENT: usize = 2;
/// Below the limit where refusals last counted (or with none), refusals
/// count as back-pressure when they run this many times above the base rate
/// (or this much above it, if more), by a sequential test of the calls since
/// the last back-pressure that needs evidence of [`EVIDENCE`] (a log
/// likelihood ratio): a few refusals close together.
const RISE_TIMES: f64 = 8.0;
const RISE_BY: f64 = 0.05;
const EVIDENCE: f64 = 10.0;
/// The sequential test takes the base rate as at most this: one refusal in
/// the first call makes the base rate 1, and the test's two rates must stay
/// apart (else a call that is not refused would be infinite evidence).
const TESTED_BASE: f64 = 0.5;
/// At or above the limit where refusals last counted, a level where they are
/// expected: one counts when the base rate explains it with less than this
/// chance.
const EXPECTED: f64 = 0.2;

/// The refusals a controller heard of, judged against the limit.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Refusals {
    /// Every call, and the refusal events among them, over about [`MEMORY`]
    /// calls: the base rate is their ratio.
    calls: f64,
    events: f64,
    /// Calls since the last refusal (or the start).
    quiet: usize,
    /// Calls started at the current limit, as far as known, and their
    /// refusals: those the limit's raise started, and one for each call
    /// that completed since (its place went to another). Refusals come back
    /// sooner than answers: completed calls alone would count them over.
    here: Tally,
    /// The evidence that refusals run above the base rate, since the last
    /// back-pressure.
    evidence: f64,
    /// The limit at the last back-pressure, and what showed there.
    level: Option<Level>,
}

/// Calls, and how many of them were refused.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    calls: usize,
    refused: usize,
}

/// Where refusals last counted as back-pressure.
#[derive(Clone, Copy, Debug)]
pub(super) struct Level {
    pub(super) limit: usize,
    /// One refusal alone set it, and none found it again since.
    lone: bool,
    /// Slow start ended there (or at a level of one refusal alone that this
    /// one followed).
    pub(super) ended_slow_start: bool,
}

/// What a refusal is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Judged {
    /// More than the base rate explains: back-pressure.
    Load,
    /// Within the base rate.
    Base,
}

impl Refusals {
    /// The share of calls refused whatever the load, as far as known: the
    /// refusal events over the calls, corrected for the refusals that fell
    /// within [`SAME_EVENT`] calls of another by chance.
    pub(super) fn base_rate(&self) -> f64 {
        if self.calls <= 0.0 {
            return 0.0;
        }
        let events = self.events / self.calls;
        #[allow(clippy::cast_possible_wrap, clippy::cast_possible_truncation)]
        let apart = (1.0 - events).max(0.5).powi(SAME_EVENT as i32);
        (events / apart).min(1.0)
    }

    /// The limit where refusals last counted as back-pressure, if it holds.
    pub(super) fn level(&self) -> Option<usize> {
        self.level.map(|level| level.limit)
    }

    /// A call completed at `limit`, `refused` or not (a refusal is judged
    /// after it is counted).
    pub(super) fn call(&mut self, limit: usize, refused: bool) {
        if self.calls >= MEMORY {
            let keep = 1.0 - 1.0 / MEMORY;
            self.calls *= keep;
            self.events *= keep;
        }
        self.calls += 1.0;
        self.here.calls += 1;
        if refused {
            if self.quiet >= SAME_EVENT || self.events == 0.0 {
                self.events += 1.0;
            }
            self.quiet = 0;
        } else {
            self.quiet += 1;
            if self.below(limit) {
                let (base, rise) = self.rates();
                self.evidence = (self.evidence + ((1.0 - rise) / (1.0 - base)).ln()).max(0.0);
            }
        }
    }

    /// Whether `limit` is below where refusals last counted, or there is no
    /// such limit.
    fn below(&self, limit: usize) -> bool {
        self.level.is_none_or(|level| limit < level.limit)
    }

    /// The base rate, and the rate a rise above it would show.
    fn rates(&self) -> (f64, f64) {
        let base = self.base_rate().min(TESTED_BASE);
        (base, (base * RISE_TIMES).max(base + RISE_BY).min(0.99))
    }

    /// A refusal of an item started at the current limit, `limit`, counted
    /// by [`call`](Self::call) already: is it more than the base rate
    /// explains? At or above where refusals last counted, they are
    /// expected: one that the base rate makes unlikely among the calls
    /// started at this limit is enough. Below (or with no such limit),
    /// refusals must run well above the base rate.
    pub(super) fn judge(&mut self, limit: usize) -> Judged {
        self.here.refused += 1;
        let load = if self.below(limit) {
            let (base, rise) = self.rates();
            self.evidence += (rise / base).ln();
            self.evidence >= EVIDENCE
        } else {
            tail(self.here.calls, self.base_rate(), self.here.refused) < EXPECTED
        };
        if load { Judged::Load } else { Judged::Base }
    }

    /// Back-pressure at `limit`: it becomes the level.
    pub(super) fn back_pressure(&mut self, limit: usize, slow_start: bool) {
        // Below a level of one refusal alone, not found again since, that
        // level may still be the base rate's: if it ended slow start, so
        // does this one.
        let unsure = self
            .level
            .is_some_and(|level| level.lone && limit < level.limit && level.ended_slow_start);
        let found_again = self.level.is_some_and(|level| limit >= level.limit);
        self.level = Some(Level {
            limit,
            lone: !found_again,
            ended_slow_start: slow_start || unsure,
        });
        self.evidence = 0.0;
    }

    /// Whether refusals of the items in flight at a back-off, `refused` so
    /// far beside the one that backed off, are more than the base rate
    /// explains among `in_flight`.
    pub(super) fn beyond_base(&self, refused: usize, in_flight: usize) -> bool {
        #[allow(clippy::cast_precision_loss)]
        let expected = self.base_rate() * in_flight as f64;
        #[allow(clippy::cast_precision_loss)]
        let refused = refused as f64;
        refused > expected.round()
    }

    /// A round at `limit` passed with no back-pressure: a level at or below
    /// it was the base rate's, and goes.
    pub(super) fn passed(&mut self, limit: usize) -> Option<Level> {
        let level = self.level.filter(|level| level.limit <= limit)?;
        self.level = None;
        Some(level)
    }

    /// The refusals of a burst showed the service took less than the limit
    /// at the back-off: refusals are expected from `ceiling` on, and they
    /// were not one alone.
    pub(super) fn expected_from(&mut self, ceiling: usize) {
        if let Some(level) = &mut self.level {
            level.limit = level.limit.min(ceiling);
            level.lone = false;
        }
    }

    /// The limit changed from `from` to `limit`: calls are counted afresh
    /// there, and a level below it is passed (refusals did not come back at
    /// it).
    pub(super) fn moved(&mut self, from: usize, limit: usize) {
        self.here = Tally {
            calls: limit.saturating_sub(from),
            refused: 0,
        };
        if self.level.is_some_and(|level| limit > level.limit) {
            self.level = None;
        }
    }
}

/// The chance that `calls` calls, each refused with chance `rate`, are
/// refused `refused` times or more.
#[allow(clippy::cast_precision_loss)]
fn tail(calls: usize, rate: f64, refused: usize) -> f64 {
    if refused == 0 {
        return 1.0;
    }
    if rate <= 0.0 || calls < refused {
        return 0.0;
    }
    if rate >= 1.0 {
        return 1.0;
    }
    // One minus the chance of fewer: terms of the binomial, each from the
    // one before.
    let mut term = (1.0 - rate).powi(i32::try_from(calls).unwrap_or(i32::MAX));
    let mut fewer = 0.0;
    for k in 0..refused {
        fewer += term;
        term *= (calls - k) as f64 / (k + 1) as f64 * rate / (1.0 - rate);
    }
    (1.0 - fewer).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::tail;

    #[test]
    fn the_binomial_tail() {
        assert_eq!(tail(10, 0.0, 1), 0.0);
        assert_eq!(tail(10, 0.5, 0), 1.0);
        assert!((tail(1, 0.3, 1) - 0.3).abs() < 1e-12);
        // Two or more of five at 0.5: 1 - (1 + 5) / 32.
        assert!((tail(5, 0.5, 2) - 26.0 / 32.0).abs() < 1e-12);
        assert_eq!(tail(3, 0.1, 4), 0.0);
    }
}
