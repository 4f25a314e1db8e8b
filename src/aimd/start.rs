//! Slow start, and the measurement of the unloaded run time that follows it
//! (see the rule in [`Aimd`]'s documentation).

use std::time::Duration;

use super::figures::{Baseline, Seen, Served};
use super::{
    Aimd, CONFIRM, Ended, FIRST_SAMPLES, FLAT, HALF_RISE, HALF_SAMPLES, KEEP, LARGE_RISE, MEASURE,
    MEASURE_ROUNDS, RUNS_KEPT, SURE, SUSPECT,
};

/// A round that showed a clear rise over slow start's figure: its limit,
/// items in flight and what it showed, to be checked against what is
/// measured. (Or a stand-in for one: back-pressure that ended slow start,
/// and what was measured where it backed off; or the rounds that ran faster
/// where the run time fell.)
#[derive(Clone, Copy, Debug)]
pub(super) struct Rise {
    limit: usize,
    in_flight: f64,
    seen: Seen,
    /// The ceiling before it (back-pressure's), if above its limit.
    ceiling: Option<usize>,
    /// Its doubling served hardly more than the limit below it: that limit.
    flat: Option<usize>,
    /// A stand-in, not a rise: back-pressure ended slow start (or slow
    /// start was over, and the run time fell), and it does not go on.
    stand_in: bool,
}

/// Why the unloaded run time is being measured.
#[derive(Clone, Copy, Debug)]
pub(super) enum Measuring {
    /// After a rise.
    Rise(Rise),
    /// After a rise, again at half the limit.
    Half(Half),
    /// Slow start ended as the source held the load back.
    Source,
    /// Back-pressure ended slow start, and refusals of its burst beyond the
    /// base rate confirmed it.
    Refused,
}

/// A figure measured after a rise stood clear above the one below it (or,
/// the first, above slow start's), as a queue where it was measured would
/// make it: measured again at half that limit.
#[derive(Clone, Copy, Debug)]
pub(super) struct Half {
    rise: Rise,
    /// The figure above, and the limit it was measured at.
    above: Baseline,
    from: usize,
    /// The lowest limit known to queue, if any.
    queued: Option<usize>,
    /// A first figure here, clearly lower than the one above: a second
    /// confirms it.
    first: Option<Baseline>,
}

/// A binding round of slow start: its limit, and what it served (all its
/// samples: an outlier took its place in the service as long).
#[derive(Clone, Copy, Debug)]
pub(super) struct Gained {
    limit: usize,
    served: Served,
}

impl Rise {
    /// A stand-in for a rise's round: back-pressure that ended slow start,
    /// and the figure measured where it backed off (`limit`), below the
    /// ceiling the refusals set; or the rounds that ran faster where the run
    /// time fell, and the ceiling then.
    #[allow(clippy::cast_precision_loss)]
    fn stand_in_at(limit: usize, measured: &Baseline, ceiling: Option<usize>) -> Self {
        Self {
            limit,
            in_flight: limit as f64,
            seen: Seen {
                mean: measured.mean,
                variance: measured.variance,
                samples: measured.weight,
            },
            ceiling,
            flat: None,
            stand_in: true,
        }
    }
}

impl Gained {
    fn of(ended: &Ended, limit: usize) -> Self {
        Self {
            limit,
            served: Served::of(ended.in_flight, &ended.all),
        }
    }
}

impl Aimd {
    /// A doubling of slow start that served hardly more than the limit
    /// below it: that limit was at or past the capacity already. Its limit.
    ///
    /// The noise of each round is its own relative variance, or slow start's
    /// figure's if more (a round of a few samples may vary little by chance),
    /// and not known before the figure has its first samples.
    fn flat_doubling(&self, ended: &Ended) -> Option<usize> {
        let below = self.gained?;
        let figure = self.base.filter(|figure| figure.spread >= FIRST_SAMPLES)?;
        if !self.slow_start || !ended.binds || below.limit >= self.limit {
            return None;
        }
        let here = Gained::of(ended, self.limit).served;
        let least = figure.variance / (figure.mean * figure.mean);
        let error = here.error_against(&below.served, least);
        let gain = here.log_rate() - below.served.log_rate();
        #[allow(clippy::cast_precision_loss)]
        let doubled = (self.limit as f64 / below.limit as f64).ln();
        (gain < FLAT.ln() && doubled - gain > SURE * error).then_some(below.limit)
    }

    /// Adds the run times of slow start's round to its figure's samples.
    pub(super) fn keep_pending(&mut self) {
        let room = RUNS_KEPT.saturating_sub(self.runs.len());
        let take = self.pending.len().min(room);
        self.runs.extend_from_slice(&self.pending[..take]);
        self.pending.clear();
    }

    /// A round against slow start's figure, which favours the fast items
    /// (each of its rounds ends as the first of many new items complete):
    /// only a clear rise counts, and it is not cut by but measured.
    pub(super) fn provisional_round(&mut self, ended: Ended, queue: f64, rise: f64, sure: f64) {
        let flat = self.flat_doubling(&ended);
        let risen = queue > rise;
        let marginal = self.marginal.take();
        if risen && flat.is_none() && queue <= sure && self.slow_start && marginal.is_none() {
            // A rise within three standard errors of a round of slow start,
            // whose figure (a few rounds that favour the fast items) sits
            // low: a round that ran long by chance would cost a measurement
            // below and the climb back, many run times on a slow or large
            // service. The next round at this limit confirms it (a queue
            // past the capacity stays), or the doubling goes on.
            self.marginal = Some((ended, queue));
            self.decide(ended.at, self.limit, Some(ended.seen.mean), false);
            return;
        }
        // Confirmed, the rise is taken as it first showed: the second round,
        // all of it in flight at this limit, shows a run time that rises
        // with the load (a shared processor, a pool) in full, and its excess
        // over the figure measured below would pass for a queue. Whether the
        // doubling served no more (`flat`) stays the second round's verdict,
        // on a round all at this limit: it tells of the limit below,
        // whichever round showed the rise.
        let (ended, queue) = match marginal {
            Some((first, queue)) if risen => (
                Ended {
                    at: ended.at,
                    ..first
                },
                queue,
            ),
            _ => (ended, queue),
        };
        let Ended {
            at,
            seen,
            in_flight,
            binds,
            twice,
            ..
        } = ended;
        self.same += 1;
        if risen || flat.is_some() {
            // A clear rise: the limit comes down to what the service took by
            // slow start's figure (too low a figure takes it lower), and no
            // higher than where slow start saw no rise; the unloaded run time
            // is measured there, in rounds that follow a warm-up. A doubling
            // that served no more with no rise (slow start's figure queued
            // too): to the limit below it, measured there.
            let rise = Measuring::Rise(Rise {
                limit: self.limit,
                in_flight,
                seen,
                ceiling: self.ceiling.filter(|&ceiling| ceiling > self.limit),
                flat,
                stand_in: false,
            });
            self.ceiling = Some(self.limit);
            self.step = 1;
            self.held = 0;
            self.suspect = None;
            let most = self
                .clean
                .clamp(self.min, self.limit.saturating_sub(1).max(self.min));
            let target = match flat {
                Some(below) if !risen => below,
                _ => self.rounded(most, in_flight - queue),
            };
            self.gained = None;
            self.measure(at, rise, target, seen.mean);
            return;
        }
        if self.figure_learns() {
            self.keep_pending();
        }
        // No rise at this limit: a rise later is measured no higher. After
        // back-pressure ended slow start too (else a rise before any round
        // without one, after `starting_at` a high limit, would measure at
        // `min`).
        self.clean = self.clean.max(self.limit);
        if self.slow_start && binds {
            self.gained = Some(Gained::of(&ended, self.limit));
        }
        if self.slow_start && !binds {
            // The source, not the limit, holds it back: measure here.
            self.slow_start = false;
            self.measure(at, Measuring::Source, self.limit, seen.mean);
            return;
        }
        let grown = self.grown(binds, twice);
        self.decide(at, grown, Some(seen.mean), false);
    }

    /// Starts measuring the unloaded run time at `limit`.
    pub(super) fn measure(&mut self, at: Duration, why: Measuring, limit: usize, mean: f64) {
        self.throughput.clear();
        self.measuring = Some(why);
        self.restart_measurement();
        self.decide(at, limit, Some(mean), false);
    }

    /// A settled run time for the measurement: once `RUNS_KEPT` are kept, it
    /// takes the place of the oldest.
    pub(super) fn keep_measured(&mut self, run: f64) {
        if self.runs.len() < RUNS_KEPT {
            self.runs.push(run);
        } else {
            self.runs[self.measured_runs % RUNS_KEPT] = run;
        }
        self.measured_runs += 1;
    }

    /// Forgets what a measurement took so far.
    pub(super) fn restart_measurement(&mut self) {
        self.runs.clear();
        self.measured_runs = 0;
    }

    /// A round while measuring: once enough settled samples, they are the
    /// unloaded run time; the round that ended slow start is checked against
    /// it, and if it shows no queue there, slow start goes on from it.
    pub(super) fn measured(&mut self, ended: Ended) {
        let Ended {
            at,
            seen: Seen { mean, .. },
            binds,
            twice,
            ..
        } = ended;
        // A second measurement only tells whether the run time fell with
        // the limit: a round's worth, at least 16 samples. Unless slow
        // start's figure could not tell at all (a doubling that served no
        // more), and a capacity the doubling met exactly makes a queue
        // that is none look clear in 16 samples of a service that varies
        // much: a full one.
        let needed = match self.measuring {
            Some(Measuring::Half(half)) if half.rise.flat.is_none() && !half.rise.stand_in => {
                HALF_SAMPLES.max(self.limit)
            }
            _ => MEASURE.max(MEASURE_ROUNDS.saturating_mul(self.limit)),
        };
        if self.measured_runs < needed {
            // Held, so that the load stays as it is; unless the source, not
            // the limit, sets the load.
            let limit = match self.measuring {
                Some(Measuring::Source) => self.grown(binds, twice),
                _ => self.limit,
            };
            self.decide(at, limit, Some(mean), false);
            return;
        }
        // Never `None`: the lower quartile is within `CLIP` times itself.
        let Some(base) = Baseline::of_runs(&self.runs, &mut self.scratch, self.limit) else {
            self.decide(at, self.limit, Some(mean), false);
            return;
        };
        let why = self.measuring.take();
        self.provisional = false;
        // A rise's measurement decides whether slow start goes on; one for a
        // stand-in (after back-pressure, or a fall) leaves that to a probe of
        // the refusals' level, or to slow start's being over already.
        self.start_decided |= match why {
            Some(Measuring::Rise(_)) => true,
            Some(Measuring::Half(half)) => !half.rise.stand_in,
            _ => false,
        };
        self.gradient.armed = true;
        self.gradient.took = None;
        // Cleared, not dropped: slow start may resume and use them again.
        self.restart_measurement();
        let limit = self.limit;
        let half = limit.div_ceil(2).max(self.min);
        let (rise, queued) = match why {
            Some(Measuring::Rise(rise)) => {
                // Slow start's figure favours the fast items: a measured
                // figure above it by the noise is no news. Beyond, a queue
                // at this limit would explain it (slow start passed it with
                // rounds too short to show one), and would be taken for the
                // unloaded run time for good: below, where it would show,
                // nothing is ever tried.
                // After a doubling that served no more, measured at the
                // limit below it or higher (with no rise, it is measured
                // there; with one, where slow start's figure said the
                // service took as many): the doubling showed that limit at
                // or past the capacity, and slow start's figure may be of
                // queued run times too. Measured lower, a figure above
                // slow start's by 1.2 times is measured again however few
                // standard errors: a figure of queued run times varies as
                // they do, and its spread would hide any queue.
                let again = match rise.flat {
                    Some(below) => limit >= below || self.above_slow_start_by(&base, 0.0),
                    None => self.above_slow_start(&base),
                };
                if half < limit && again {
                    self.measure_half(at, rise, base, None, mean);
                    return;
                }
                (rise, None)
            }
            Some(Measuring::Half(Half {
                rise,
                above,
                from,
                queued,
                first,
            })) => {
                // A figure clearly lower, but within `CONFIRM` standard
                // errors, is measured again, as many samples, and the two
                // decide together: where run times are skewed, a figure low
                // by chance has a low spread with it, and passes for one
                // clearly lower more often than its standard errors say.
                let base = first.map_or(base, |first| first.pooled(&base));
                let clear = self.clear_above((&above, 1.0), (&base, 1.0), SURE);
                let marginal = !self.clear_above((&above, 1.0), (&base, 1.0), CONFIRM);
                if clear && marginal && first.is_none() {
                    let check = Half {
                        rise,
                        above,
                        from,
                        queued,
                        first: Some(base),
                    };
                    self.measure(at, Measuring::Half(check), limit, mean);
                    return;
                }
                if !clear {
                    // No queue where it was measured before: that figure,
                    // of more samples, stands, and the limit goes back.
                    self.base = Some(above);
                    if !self.settle_rise(at, rise, from, queued, mean) {
                        self.decide(at, from, Some(mean), false);
                    }
                    return;
                }
                // That limit queued. If this one queued too, the run time
                // there is this one's times the ratio of the limits (a
                // saturated service serves as many at either): unless it
                // is clearly below that by 1.2 times, half again, down to
                // the minimum. A figure at the higher limit comes out low
                // (its rounds end as their first items complete: a
                // capacity of 2 measured at 8 showed 55 ms, where a queue
                // makes 60, and 4, which queued, passed for a limit that
                // did not).
                #[allow(clippy::cast_precision_loss)]
                let ratio = from as f64 / limit as f64;
                if half < limit
                    && !rise.stand_in
                    && !self.clear_above((&base, ratio), (&above, HALF_RISE), SURE)
                {
                    self.measure_half(at, rise, base, Some(from), mean);
                    return;
                }
                (rise, Some(from))
            }
            Some(Measuring::Refused) if half < limit && self.above_slow_start(&base) => {
                // As after a rise: the back-off left a queue standing, and
                // half the limit tells. What was measured here stands for
                // the round that showed the rise.
                let rise = Rise::stand_in_at(limit, &base, self.ceiling);
                self.measure_half(at, rise, base, None, mean);
                return;
            }
            _ => {
                self.base = Some(base);
                let grown = self.grown(binds, twice);
                self.decide(at, grown, Some(mean), false);
                return;
            }
        };
        self.base = Some(base);
        if !self.settle_rise(at, rise, limit, queued, mean) {
            let grown = self.grown(binds, twice);
            self.decide(at, grown, Some(mean), false);
        }
    }

    /// Measures again at half the limit, after `above` was measured here
    /// (`queued`: the lowest limit known to queue, if any).
    fn measure_half(
        &mut self,
        at: Duration,
        rise: Rise,
        above: Baseline,
        queued: Option<usize>,
        mean: f64,
    ) {
        let from = self.limit;
        let check = Half {
            rise,
            above,
            from,
            queued,
            first: None,
        };
        let half = from.div_ceil(2).max(self.min);
        self.measure(at, Measuring::Half(check), half, mean);
    }

    /// A settled round that binds, faster than the unloaded run time by 1.4
    /// times at a limit above where that was measured or learned
    /// (`candidate`: settled, binding, faster beyond the noise): the run time
    /// fell, and learned there it would keep any queue at this limit as
    /// unloaded (a cache that warmed up past its capacity). The first such
    /// round holds the limit; the second has both measured again at half
    /// the limit, as a figure that stands above slow start's after
    /// back-pressure: whether the run time falls with the limit tells.
    /// Whether it decided the round.
    pub(super) fn fell(&mut self, seen: &Seen, at: Duration, candidate: bool) -> bool {
        let limit = self.limit;
        let half = limit.div_ceil(2).max(self.min);
        let falls = candidate
            && !self.slow_start
            && half < limit
            && self
                .base
                .is_some_and(|base| limit > base.at && seen.mean * LARGE_RISE <= base.mean);
        if !falls {
            self.falling = None;
            return false;
        }
        let Some(first) = self.falling.take() else {
            self.falling = Some(*seen);
            self.decide(at, limit, Some(seen.mean), false);
            return true;
        };
        let above = Baseline::new(&first.pooled(seen), limit);
        let rise = Rise::stand_in_at(limit, &above, self.ceiling);
        self.measure_half(at, rise, above, None, seen.mean);
        true
    }

    /// Tests the round that showed a rise against the measured figure: if it
    /// shows no queue, slow start goes on from its limit, decided here (and
    /// it says so); else what the service took sets the ceiling, above
    /// `from` (where the figure was measured) and no higher than `queued`
    /// (the lowest limit known to queue), if any, and the caller decides.
    fn settle_rise(
        &mut self,
        at: Duration,
        rise: Rise,
        from: usize,
        queued: Option<usize>,
        mean: f64,
    ) -> bool {
        let Some(base) = self.base else {
            return false;
        };
        let Rise {
            limit,
            in_flight,
            seen,
            ceiling,
            ..
        } = rise;
        let queue = base.queue(in_flight, seen.mean);
        let error = base.error(in_flight, seen.samples);
        let floor = self.least_queue(in_flight);
        if queue <= (SUSPECT * error).max(floor) && queued.is_none() {
            // Slow start's figure made that rise: it goes on from there,
            // below the ceiling back-pressure set before, if any. (For a
            // stand-in no rise was made: the refusals ended slow start, or
            // it was over before the run time fell.)
            self.ceiling = ceiling;
            self.slow_start = !rise.stand_in;
            self.decide(at, limit, Some(mean), false);
            return true;
        }
        // What the service took by the measured figure, give or take the
        // noise: one more is the lowest limit known to queue.
        let took = in_flight - queue + KEEP * error;
        let most = queued.unwrap_or(limit);
        let ceiling = self
            .rounded(most, took.floor() + 1.0)
            .max(from + 1)
            .min(most);
        self.ceiling = Some(ceiling);
        false
    }

    /// Whether a measured figure stands clearly above slow start's: by
    /// 1.2 times it and two standard errors of both (slow start's favours
    /// the fast items, so less is no news), as a queue where it was
    /// measured would make it.
    fn above_slow_start(&self, measured: &Baseline) -> bool {
        self.above_slow_start_by(measured, SUSPECT)
    }

    /// The same, beyond `errors` standard errors of both.
    fn above_slow_start_by(&self, measured: &Baseline, errors: f64) -> bool {
        self.base
            .is_some_and(|slow| self.clear_above((measured, 1.0), (&slow, HALF_RISE), errors))
    }

    /// Whether `high`'s mean, times `scale`, is above `low`'s by more than the
    /// tolerance and `errors` standard errors of both.
    fn clear_above(&self, high: (&Baseline, f64), low: (&Baseline, f64), errors: f64) -> bool {
        let ((high, up), (low, down)) = (high, low);
        let error = (up * up * high.variance / high.weight
            + down * down * low.variance / low.weight)
            .sqrt();
        let (high, low) = (high.mean * up, low.mean * down);
        high > low * self.tolerance && high - low > errors * error
    }
}
