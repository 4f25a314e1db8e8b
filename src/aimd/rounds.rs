//! The rounds once slow start's figure is measured against: a round's
//! samples and its end, compared with the unloaded run time (a queue, a
//! suspect one, the rounds at one limit taken together), and each decision
//! (see the rule in [`Aimd`]'s documentation).

use std::time::Duration;

use super::figures::{Baseline, RunTimes, Seen, Served, binds};
use super::moved::Cuts;
use super::{
    Aimd, CLIP, Decision, EXIT, EXIT_SAMPLES, KEEP, LARGE_RISE, LEAST_QUEUE, REACHED_ROUNDS,
    SETTLED, SURE, SUSPECT,
};

impl Aimd {
    /// Ends the current round at `at` with the limit `limit`.
    pub(super) fn decide(
        &mut self,
        at: Duration,
        limit: usize,
        mean_run: Option<f64>,
        overload: bool,
    ) {
        let limit = limit.clamp(self.min, self.max);
        if limit < self.limit {
            self.slow_start = false;
        }
        if limit != self.limit {
            // A suspect round is confirmed at the same limit only; the
            // refusals of a burst are counted until the limit moves again,
            // and a ceiling one refusal set is checked unless something
            // else moved the limit first.
            self.suspect = None;
            self.marginal = None;
            self.falling = None;
            if !overload {
                self.burst = None;
                self.recheck = false;
            }
        }
        // Out of slow start, a change lets the items that ran under the old
        // limit leave before a round counts.
        let warm_up = if limit != self.limit && !self.slow_start {
            self.limit.max(limit)
        } else {
            0
        };
        if limit != self.limit {
            self.same = usize::from(warm_up > 0);
            self.reached = (0.0, 0);
            self.pool = None;
            self.refusals.moved(self.paced.min(self.limit), limit);
        }
        if self.cuts.is_some_and(|cuts| limit > cuts.limit) {
            self.cuts = None;
        }
        let since = if limit == self.limit {
            self.round.since
        } else {
            Some(at)
        };
        // Slow start's doubling takes effect one completion at a time.
        let doubling = self.slow_start && limit > self.limit;
        self.paced = if doubling || limit < self.limit {
            self.paced.min(limit)
        } else {
            limit
        };
        self.limit = limit;
        self.round = Round {
            since,
            warm_up,
            ..Round::default()
        };
        // A round's run times go with it: one cut short (back-pressure at the
        // lowest limit) must not leave them to pile up in the next.
        self.pending.clear();
        if let Some(history) = &self.history {
            history.record(Decision {
                at,
                mean_run: mean_run.map(Duration::from_secs_f64),
                base: self.base.map(|base| Duration::from_secs_f64(base.mean)),
                overload,
                limit: self.limit,
            });
        }
    }

    /// The least queue that counts at `in_flight` items, however steady the
    /// service: the tolerance's share of them, and at least half an item.
    pub(super) fn least_queue(&self, in_flight: f64) -> f64 {
        (in_flight * (1.0 - 1.0 / self.tolerance)).max(LEAST_QUEUE)
    }

    /// `limit`, rounded, at least one lower than the limit (unless at `min`).
    pub(super) fn lowered(&self, limit: f64) -> usize {
        self.rounded(self.limit.saturating_sub(1), limit)
    }

    /// `limit`, rounded, at most `most` and at least `min`.
    pub(super) fn rounded(&self, most: usize, limit: f64) -> usize {
        // A limit is far below 2^52: the float is exact.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let limit = limit.round() as usize;
        limit.min(most).max(self.min)
    }

    /// The end of a round: compare, then shrink, hold or grow.
    #[allow(clippy::cast_precision_loss)]
    pub(super) fn end_round(&mut self, at: Duration) {
        let round = &self.round;
        let times = &round.times;
        let counted = (times.samples + times.outliers) as f64;
        // Nothing but outliers (only an unloaded run time makes them): each
        // counts as just an outlier.
        let outliers = |base: Baseline| Seen {
            mean: base.mean * CLIP,
            variance: 0.0,
            samples: counted,
        };
        // Never `None`: a round ends at `limit` samples or outliers.
        let Some(seen) = times.seen().or_else(|| self.base.map(outliers)) else {
            return;
        };
        let Seen { mean, samples, .. } = seen;
        let binds_now = binds(round.saturated, times.samples + times.outliers);
        // Twice in a row at this limit (counting the warm-up): a burst of the
        // source does not make the limit grow.
        let twice = binds_now
            && if round.warm_samples > 0 {
                binds(round.warm_saturated, round.warm_samples)
            } else {
                self.bound && self.same > 0
            };
        self.bound = binds_now;
        // A higher limit is reached less often: only rounds at this one count.
        let (share, rounds) = &mut self.reached;
        *rounds += 1;
        *share +=
            (round.saturated as f64 / counted - *share) / (*rounds).min(REACHED_ROUNDS) as f64;
        let limit = self.limit as f64;
        // Little's law needs how many ran, which the limit only bounds.
        let in_flight = (round.in_flight as f64 / counted).clamp(1.0, limit);
        let ended = Ended {
            at,
            seen,
            all: times.all().unwrap_or(seen),
            in_flight,
            binds: binds_now,
            twice,
        };
        // Slow start's rounds favour the fast items, and a measurement's
        // stand at a limit held on purpose: neither says what the service
        // serves at the limits the rule moves through.
        if binds_now && !self.slow_start && self.measuring.is_none() && !self.provisional {
            self.throughput
                .add(Served::of(in_flight, &ended.all), seen.mean);
        }
        if self.figure_learns() {
            // Slow start's figure: every run time before this round's.
            self.base = Baseline::of_runs(&self.runs, &mut self.scratch, self.clean);
        }
        let Some(base) = self.base else {
            // The first round: nothing to compare with. It is slow start's
            // first figure.
            self.keep_pending();
            self.base = Baseline::of_runs(&self.runs, &mut self.scratch, self.limit);
            self.provisional_round(ended, 0.0, f64::INFINITY, f64::INFINITY);
            return;
        };
        let queue = base.queue(in_flight, mean);
        // Its standard error: the round's mean and the unloaded one are both
        // uncertain. Student's t, roughly: a variance seen in few samples is
        // uncertain too. Noise is a share of the run time (a service that
        // runs a round 1.5 times as long varies 1.5 times as much in it), so
        // the test is of `mean − base` against the spread scaled to `mean`,
        // which in items is `in_flight × spread / base`. Against the spread
        // as it is (`/ mean` here: a plain test of the rise), the rounds of
        // lognormal services that ran long by chance passed for queues: on
        // σ 0.6, runs whose goodput fell to 0.84 to 0.89 (tools/models).
        let error = base.error(in_flight, samples);
        let floor = self.least_queue(in_flight);
        let threshold = (SUSPECT * error).max(floor);
        let sure = (SURE * error).max(floor);
        // Rounds right after a change favour the fast items (each ends as the
        // first of many new items complete): only a round after two at the
        // same limit (a warm-up counts) shows the mean run time as it is.
        let settled = self.same >= SETTLED;
        if self.measuring.is_some() {
            self.same += 1;
            self.measured(ended);
            return;
        }
        if self.provisional {
            // A rise against slow start's figure: beyond one and a half
            // standard errors once the figure has its samples (within three,
            // if the next round shows it too: `provisional_round`); before,
            // only a large one (the noise of a few items).
            // After back-pressure ended slow start, beyond three: each round
            // follows a warm-up and shows the mean run time as it is, while
            // the figure, from slow start's rounds, favours the fast items.
            let rise = if self.slow_start && base.spread < EXIT_SAMPLES {
                (SURE * error).max(in_flight * (1.0 - 1.0 / LARGE_RISE))
            } else if self.slow_start {
                (EXIT * error).max(floor)
            } else {
                (SURE * error).max(floor)
            };
            self.provisional_round(ended, queue, rise, sure);
            return;
        }
        if self.gradient_round(&ended, settled) {
            return;
        }
        if self.halved_for_nothing(&seen, at) {
            return;
        }
        self.same += 1;
        let suspect = self.suspect.take();
        // A queue within one round's noise may show in the rounds at this
        // limit taken together; one beyond three standard errors of its own
        // round counts as it is.
        let pooled = if settled {
            self.pooled(&seen, in_flight, &base)
                .filter(|_| queue <= sure)
        } else {
            None
        };
        if pooled.is_some() {
            self.pool = None;
        }
        let (queue, error) = pooled.unwrap_or((queue, error));
        let pooled = pooled.is_some();
        if queue <= threshold && !pooled {
            // The cuts brought the queue down, and the run time with it:
            // nothing to check them by. A run time still nearer the first
            // round's than the unloaded one is no such news (at a limit of
            // one or two, a round is too small to show a queue at all).
            if self.cuts.is_none_or(|cuts| mean < cuts.midpoint(&base)) {
                self.cuts = None;
            }
            // Faster by much, above where the figure was measured: the run
            // time fell, and is measured at half the limit rather than
            // learned here, where a queue would hide in it (`start.rs`).
            let faster = queue < -threshold;
            if self.fell(&seen, at, faster && settled && binds_now) {
                return;
            }
            self.learn(&seen, suspect, settled, faster);
            let grown = self.grown(binds_now, twice);
            self.decide(at, grown, Some(mean), false);
            return;
        }
        // A queue: no fall to confirm.
        self.falling = None;
        if queue <= sure && suspect.is_none() && !pooled {
            // Within three standard errors: it counts if the next round shows
            // it too.
            self.suspect = Some(seen);
            self.decide(at, self.limit, Some(mean), false);
            return;
        }
        // Cuts begun by a round whose run time showed a queue are checked
        // against what the run time does below (`halved_for_nothing`); the
        // other signals do not move the mean, so the check cannot refute them.
        if queue > threshold && self.cuts.is_none() {
            self.cuts = Some(Cuts {
                limit: self.limit,
                in_flight,
                first: seen,
                below: None,
            });
        }
        // A run time that rises with the load, or a queue? (`gradient.rs`)
        let hinted = self.gradient.hinted(in_flight, in_flight - queue, settled);
        if hinted && !pooled && !self.slow_start && binds_now {
            if let Some(probe) = self
                .measured_served()
                .and_then(|below| self.gradient_probe(self.limit, below))
            {
                self.decide(at, probe, Some(mean), false);
                return;
            }
        }
        // What the service took: those in flight less those that waited,
        // give or take the noise (a standing queue within one standard error
        // costs little where the run time varies that much).
        // (When the limit was not reached, the source held some back: the
        // limit comes down by the queue, not to what ran less the queue.)
        let ran = if binds_now || self.slow_start {
            in_flight
        } else {
            limit
        };
        let lowered = self.lowered(ran - queue + (KEEP * error).min(queue));
        // No lower than what the service served where a round bound: a run
        // time that rose without a queue (`throughput.rs`).
        let lowered = if binds_now && !self.slow_start {
            lowered.max(self.throughput.kept_busy(base.mean).min(self.limit))
        } else {
            lowered
        };
        self.ceiling = Some(self.limit);
        self.step = 1;
        self.held = 0;
        self.decide(at, lowered, Some(mean), false);
    }

    /// Adds a settled round to the rounds at this limit taken together; if
    /// two or more of them show a queue beyond two standard errors of their
    /// pooled samples, that queue and its standard error.
    pub(super) fn pooled(
        &mut self,
        seen: &Seen,
        in_flight: f64,
        base: &Baseline,
    ) -> Option<(f64, f64)> {
        let pool = match self.pool {
            Some(pool) => Pool {
                seen: pool.seen.pooled(seen),
                flying: pool.flying + in_flight * seen.samples,
                rounds: pool.rounds + 1,
            },
            None => Pool {
                seen: *seen,
                flying: in_flight * seen.samples,
                rounds: 1,
            },
        };
        self.pool = Some(pool);
        let n = pool.flying / pool.seen.samples;
        let queue = base.queue(n, pool.seen.mean);
        let error = base.error(n, pool.seen.samples);
        let counts = queue > (SUSPECT * error).max(self.least_queue(n));
        (pool.rounds >= 2 && counts).then_some((queue, error))
    }

    /// What a round with no queue (and a suspect one before it, which was
    /// noise after all) teaches the unloaded run time.
    pub(super) fn learn(
        &mut self,
        seen: &Seen,
        suspect: Option<Seen>,
        settled: bool,
        faster: bool,
    ) {
        let limit = self.limit;
        let Some(base) = &mut self.base else {
            return;
        };
        // A round that is not settled is biased to the fast items. At a limit
        // no higher than where it learned, no queue hides that it did not
        // have; above, a queue within the noise could, and learning there
        // (its mean, or how much it varies) would let it creep up with the
        // load. A round faster by more than the noise shows it too high,
        // though.
        if settled && (limit <= base.at || faster) {
            for seen in suspect.iter().chain([seen]) {
                base.learn(seen, limit);
            }
        }
    }
}

/// The settled rounds at one limit, taken together: what they showed, their
/// items in flight summed over their samples, and how many rounds.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pool {
    pub(super) seen: Seen,
    pub(super) flying: f64,
    pub(super) rounds: usize,
}

/// A round that ended: when, what it showed, its items in flight, whether it
/// bound, and whether the one before it at this limit did too.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ended {
    pub(super) at: Duration,
    pub(super) seen: Seen,
    /// What all its samples showed, outliers too.
    pub(super) all: Seen,
    pub(super) in_flight: f64,
    pub(super) binds: bool,
    pub(super) twice: bool,
}

/// The samples of the current round.
#[derive(Debug, Default)]
pub(super) struct Round {
    /// The last change of the limit: back-pressure from items started before
    /// it is the news the last back-off already acted on.
    pub(super) since: Option<Duration>,
    /// Samples still to pass before this round counts: after a decrease, the
    /// items that queued under the old limit are still leaving. Of those
    /// passed, how many reached the limit.
    pub(super) warm_up: usize,
    pub(super) warm_samples: usize,
    pub(super) warm_saturated: usize,
    /// The run times of the samples that count.
    pub(super) times: RunTimes,
    /// Of those, how many reached the limit, and their `in_flight` summed.
    pub(super) saturated: usize,
    pub(super) in_flight: usize,
}
