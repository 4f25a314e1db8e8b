//! Slow start, and the measurement of the unloaded run time that follows it
//! (see the rule in [`Aimd`]'s documentation).

use std::time::Duration;

use super::figures::{Baseline, Seen};
use super::{Aimd, Ended, KEEP, MEASURE, MEASURE_ROUNDS, RUNS_KEPT, SUSPECT};

/// Why the unloaded run time is being measured.
#[derive(Clone, Copy, Debug)]
pub(super) enum Measuring {
    /// A round showed a clear rise over slow start's figure: its limit, items
    /// in flight and what it showed, to be checked against what is measured.
    Rise {
        limit: usize,
        in_flight: f64,
        seen: Seen,
        /// The ceiling before it (back-pressure's), if above its limit.
        ceiling: Option<usize>,
    },
    /// Slow start ended as the source held the load back.
    Source,
}

impl Aimd {
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
    pub(super) fn provisional_round(&mut self, ended: Ended, queue: f64, rise: f64) {
        let Ended {
            at,
            seen,
            in_flight,
            binds,
            twice,
        } = ended;
        self.same += 1;
        if queue > rise {
            // A clear rise: the limit comes down to what the service took by
            // slow start's figure (too low a figure takes it lower), and no
            // higher than where slow start saw no rise; the unloaded run time
            // is measured there, in rounds that follow a warm-up.
            let rise = Measuring::Rise {
                limit: self.limit,
                in_flight,
                seen,
                ceiling: self.ceiling.filter(|&ceiling| ceiling > self.limit),
            };
            self.ceiling = Some(self.limit);
            self.step = 1;
            self.held = 0;
            self.suspect = None;
            let most = self
                .clean
                .clamp(self.min, self.limit.saturating_sub(1).max(self.min));
            let target = self.rounded(most, in_flight - queue);
            self.measure(at, rise, target, seen.mean);
            return;
        }
        if self.figure_learns() {
            self.keep_pending();
        }
        if self.slow_start {
            self.clean = self.clean.max(self.limit);
            if !binds {
                // The source, not the limit, holds it back: measure here.
                self.slow_start = false;
                self.measure(at, Measuring::Source, self.limit, seen.mean);
                return;
            }
        }
        let grown = self.grown(binds, twice);
        self.decide(at, grown, Some(seen.mean), false);
    }

    /// Starts measuring the unloaded run time at `limit`.
    pub(super) fn measure(&mut self, at: Duration, why: Measuring, limit: usize, mean: f64) {
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
        if self.measured_runs < MEASURE.max(MEASURE_ROUNDS.saturating_mul(self.limit)) {
            // Held, so that the load stays as it is; unless the source, not
            // the limit, sets the load.
            let limit = match self.measuring {
                Some(Measuring::Source) => self.grown(binds, twice),
                _ => self.limit,
            };
            self.decide(at, limit, Some(mean), false);
            return;
        }
        // Never `None`: the median is within `CLIP` times itself.
        let Some(base) = Baseline::of_runs(&self.runs, &mut self.scratch, self.limit) else {
            self.decide(at, self.limit, Some(mean), false);
            return;
        };
        let why = self.measuring.take();
        self.base = Some(base);
        self.provisional = false;
        // Cleared, not dropped: slow start may resume and use them again.
        self.restart_measurement();
        if let Some(Measuring::Rise {
            limit,
            in_flight,
            seen,
            ceiling,
        }) = why
        {
            let queue = in_flight * (1.0 - base.mean / seen.mean);
            let error = base.error(in_flight, seen.samples);
            let floor = in_flight * (1.0 - 1.0 / self.tolerance);
            if queue <= (SUSPECT * error).max(floor) {
                // Slow start's figure made that rise: it goes on from there,
                // below the ceiling back-pressure set before, if any.
                self.ceiling = ceiling;
                self.slow_start = true;
                self.decide(at, limit, Some(mean), false);
                return;
            }
            // What the service took by the measured figure, give or take
            // the noise: one more is the lowest limit known to queue.
            let took = in_flight - queue + KEEP * error;
            let ceiling = self.rounded(limit, took.floor() + 1.0).max(self.limit + 1);
            self.ceiling = Some(ceiling);
        }
        let grown = self.grown(binds, twice);
        self.decide(at, grown, Some(mean), false);
    }
}
