//! What each sample does: the refusal tallies, slow start's pacing, and a
//! sample's place in the current round (see the rule in [`Aimd`]'s
//! documentation).

use crate::adaptive::{Controller, Sample};

use super::{Aimd, CLIP, MOMENT_MOST, RUNS_KEPT, SETTLED};

impl Controller for Aimd {
    fn initial(&self) -> usize {
        self.limit
    }

    fn sample(&mut self, sample: &Sample) -> usize {
        self.refusals
            .call(self.limit, sample.in_flight, sample.overload);
        // Slow start's doubling takes effect one completion at a time: each
        // starts two items until the doubled limit is reached, and no more
        // than `MOMENT_MOST` in one moment. The stream starts what a raise
        // allows once it has settled the completions of the moment: until
        // then, the items it has not started yet count as running, and the
        // limit as reached if they would reach it. (In place. Spawned, each
        // task starts its next items as it completes one, so they are in
        // `in_flight` already and count twice here, to no effect: left out,
        // every spawned row of `tools/models`' nine families came out the
        // same, figure for figure, on seeds 601 to 800, where in place the
        // family met 2,944 fewer of its 8,400 runs.)
        let done = sample.started + sample.run;
        if done != self.moment {
            self.moments.rotate_right(1);
            self.moments[0] = (self.moment, self.paced);
            self.moment = done;
            self.unstarted = 0;
        }
        let reached = sample.saturated || sample.in_flight + self.unstarted >= sample.limit;
        if self.paced < self.limit && self.unstarted < MOMENT_MOST {
            self.paced += 1;
            self.unstarted += 1;
        }
        if sample.overload {
            self.overload(sample);
        } else {
            self.heard(&Sample {
                saturated: reached,
                ..*sample
            });
        }
        self.paced
    }
}

impl Aimd {
    /// A sample that is not back-pressure.
    fn heard(&mut self, sample: &Sample) {
        let run = sample.run.as_secs_f64();
        let outlier = self
            .base
            .is_some_and(|base| base.mean > 0.0 && run > base.mean * CLIP);
        let round = &mut self.round;
        if self.slow_start && round.since.is_some_and(|since| sample.started < since) {
            // Slow start has no warm-up: its rounds would take twice as long.
            // An item started before the doubling ran under the old limit,
            // though, and most of a round's first completions are such items:
            // a queue the new limit made would hide behind them. They teach
            // slow start's figure, though: they ran under the old limit.
            if self.provisional && self.runs.len() < RUNS_KEPT {
                self.runs.push(run);
            }
            return;
        }
        if round.warm_up > 0 {
            round.warm_up -= 1;
            round.warm_samples += 1;
            round.warm_saturated += usize::from(sample.saturated);
            return;
        }
        round.times.add(run, outlier);
        round.saturated += usize::from(sample.saturated);
        round.in_flight += sample.in_flight;
        if self.figure_learns() {
            // Only the first `RUNS_KEPT` of a round can join the figure.
            if self.pending.len() < RUNS_KEPT {
                self.pending.push(run);
            }
        } else if self.measuring.is_some() && self.same >= SETTLED {
            self.keep_measured(run);
        }
        // A round of nothing but outliers ends too: the run time moved.
        let times = &self.round.times;
        if times.samples >= self.limit || times.outliers >= self.limit {
            self.end_round(sample.started + sample.run);
        }
    }
}

impl Aimd {
    /// Slow start's figure learns from the rounds: those of slow start, and
    /// after back-pressure ended it, those until a rise is measured (else a
    /// figure of a few samples, too few to tell a queue by, would stay so).
    pub(super) fn figure_learns(&self) -> bool {
        self.provisional && self.measuring.is_none()
    }
}
