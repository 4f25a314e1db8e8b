//! What rounds show: their run times, outliers left out, and the unloaded
//! run time they are compared with.

use super::{CLIP, FIRST_SAMPLES, LOOSE, MEMORY};

/// What one round showed: its samples' mean run time and variance, outliers
/// left out, and how many samples are in them.
#[derive(Clone, Copy, Debug)]
pub(super) struct Seen {
    pub(super) mean: f64,
    pub(super) variance: f64,
    pub(super) samples: f64,
}

impl Seen {
    /// The samples of both, as one.
    pub(super) fn pooled(&self, other: &Seen) -> Seen {
        let samples = self.samples + other.samples;
        let (a, b) = (self.samples / samples, other.samples / samples);
        let mean = a * self.mean + b * other.mean;
        let delta = other.mean - self.mean;
        Seen {
            mean,
            variance: a * self.variance + b * other.variance + a * b * delta * delta,
            samples,
        }
    }
}

/// What rounds served, by Little's law: their items in flight over the
/// mean run time is how many a second. With how much the run times varied
/// (over their mean, squared) and how many there were: the noise of a
/// comparison of two such figures.
#[derive(Clone, Copy, Debug)]
pub(super) struct Served {
    pub(super) in_flight: f64,
    pub(super) mean: f64,
    relative_variance: f64,
    samples: f64,
}

impl Served {
    pub(super) fn of(in_flight: f64, seen: &Seen) -> Self {
        Self {
            in_flight,
            mean: seen.mean,
            relative_variance: seen.variance / (seen.mean * seen.mean),
            samples: seen.samples,
        }
    }

    /// How many a second.
    pub(super) fn rate(&self) -> f64 {
        self.in_flight / self.mean
    }

    /// How many a second, its log.
    pub(super) fn log_rate(&self) -> f64 {
        self.rate().ln()
    }

    /// The standard error of the ratio of this rate to `other`'s, as a
    /// share of it, each relative variance taken as at least `least`.
    pub(super) fn error_against(&self, other: &Served, least: f64) -> f64 {
        (self.relative_variance.max(least) / self.samples
            + other.relative_variance.max(least) / other.samples)
            .sqrt()
    }
}

/// The unloaded run time, in seconds: exponentially weighted over about
/// [`MEMORY`] samples.
#[derive(Clone, Copy, Debug)]
pub(super) struct Baseline {
    /// The mean, outliers left out as rounds leave them, and how many samples
    /// are behind it.
    pub(super) mean: f64,
    pub(super) weight: f64,
    /// How much the run time varies, and how many samples are behind that.
    pub(super) variance: f64,
    pub(super) spread: f64,
    /// The highest limit it learned the mean at.
    pub(super) at: usize,
}

impl Baseline {
    pub(super) fn new(seen: &Seen, at: usize) -> Self {
        Self {
            mean: seen.mean,
            weight: seen.samples,
            variance: seen.variance,
            spread: seen.samples,
            at,
        }
    }

    /// The figure of a set of run times: outliers left out, the run times
    /// over [`CLIP`] times the mean of those kept. Found from the lower
    /// quartile up: the first cut at `CLIP` times the lower quartile, each
    /// next at `CLIP` times the mean of what the one before kept, until a
    /// cut keeps what the one before did (the cuts only rise or only fall,
    /// so that comes). The lower quartile first: a slow item or two among
    /// few samples would lift the mean so far that no item is an outlier
    /// against it. Not the median: where slow requests are common (a cold
    /// cache that misses half its reads, at 50 ms against 4), the median
    /// falls among them as often as not, and the figure came out of the fast
    /// reads in one measurement and of all of them in the next, so that the
    /// two compared read as a queue or its end. The lower quartile sits
    /// among the fast ones up to three slow in four, and every cut after
    /// keeps only them. Until a cut keeps what the one before did: where run
    /// times vary alike (a lognormal of σ 0.6), a cut from the lower
    /// quartile falls lower than one from the median would, and a second
    /// cut alone left the figure a few per cent low, which a round then
    /// passed for a rise.
    #[allow(clippy::cast_precision_loss)]
    pub(super) fn of_runs(runs: &[f64], scratch: &mut Vec<f64>, at: usize) -> Option<Self> {
        if runs.is_empty() {
            return None;
        }
        scratch.clear();
        scratch.extend_from_slice(runs);
        let lower = scratch.len() / 4;
        let (_, quartile, _) = scratch.select_nth_unstable_by(lower, f64::total_cmp);
        let quartile = *quartile;
        let within = |cut: f64| {
            let mut times = RunTimes::default();
            for &run in runs {
                times.add(run, run > cut);
            }
            times
        };
        // Each cut keeps all that the one before kept and more, or less of
        // it: the same count is the same samples.
        let mut kept = within(CLIP * quartile);
        loop {
            let next = within(CLIP * kept.seen()?.mean);
            if next.samples == kept.samples {
                break;
            }
            kept = next;
        }
        Some(Self::new(&kept.seen()?, at))
    }

    /// Two measurements of the unloaded run time, as one: their samples
    /// pooled, at the higher of their limits.
    pub(super) fn pooled(&self, other: &Baseline) -> Self {
        let seen = |figure: &Baseline| Seen {
            mean: figure.mean,
            variance: figure.variance,
            samples: figure.weight,
        };
        let mut both = Self::new(&seen(self).pooled(&seen(other)), self.at.max(other.at));
        both.spread = self.spread + other.spread;
        both
    }

    /// Little's law: with `in_flight` running at a mean run time `mean`
    /// against this unloaded one, about this many wait (all but one at
    /// most; none for a round that took no time).
    pub(super) fn queue(&self, in_flight: f64, mean: f64) -> f64 {
        if mean > 0.0 {
            (in_flight * (1.0 - self.mean / mean)).min(in_flight - 1.0)
        } else {
            0.0
        }
    }

    /// The standard error, in items, of a queue estimated from a round of
    /// `samples` with `in_flight` items in flight: the round's mean and this
    /// one are both uncertain, and a variance seen in few samples is
    /// uncertain too (Student's t, roughly). Infinite before the first
    /// samples: against a figure from one or two fast items, every item
    /// looks late.
    pub(super) fn error(&self, in_flight: f64, samples: f64) -> f64 {
        if self.spread < FIRST_SAMPLES {
            return f64::INFINITY;
        }
        let freedom = (self.spread - 1.0).max(1.0);
        let t = 1.0 + (1.2 + 1.2 / freedom) / freedom;
        t * in_flight * (self.variance / samples + self.variance / self.weight).sqrt() / self.mean
    }

    /// Learns how much the run time varies from a round, but not its mean.
    pub(super) fn learn_spread(&mut self, seen: &Seen) {
        let old = self.spread.min(MEMORY - seen.samples).max(0.0);
        let delta = seen.mean - self.mean;
        self.variance = (old * self.variance + seen.samples * (seen.variance + delta * delta))
            / (old + seen.samples);
        self.spread = old + seen.samples;
    }

    /// Learns everything a round shows.
    pub(super) fn learn(&mut self, seen: &Seen, at: usize) {
        self.learn_spread(seen);
        let old = self.weight.min(MEMORY - seen.samples).max(0.0);
        let share = seen.samples / (old + seen.samples);
        self.mean += (seen.mean - self.mean) * share;
        self.weight = old + seen.samples;
        self.at = self.at.max(at);
    }
}

/// Run times in seconds, outliers left out of the mean but counted.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RunTimes {
    /// Samples in the mean, and outliers.
    pub(super) samples: usize,
    pub(super) outliers: usize,
    /// The run times in the mean, and their squares.
    pub(super) total: f64,
    pub(super) squares: f64,
    /// The outliers' run times, and their squares.
    pub(super) late: f64,
    pub(super) late_squares: f64,
}

impl RunTimes {
    pub(super) fn add(&mut self, run: f64, outlier: bool) {
        if outlier {
            self.outliers += 1;
            self.late += run;
            self.late_squares += run * run;
        } else {
            self.samples += 1;
            self.total += run;
            self.squares += run * run;
        }
    }

    /// What they showed, if any of them is in the mean.
    pub(super) fn seen(&self) -> Option<Seen> {
        Self::of(self.samples, self.total, self.squares)
    }

    /// What all of them showed, outliers too: what Little's law needs of
    /// how many a second were served.
    pub(super) fn all(&self) -> Option<Seen> {
        Self::of(
            self.samples + self.outliers,
            self.total + self.late,
            self.squares + self.late_squares,
        )
    }

    #[allow(clippy::cast_precision_loss)]
    fn of(samples: usize, total: f64, squares: f64) -> Option<Seen> {
        if samples == 0 {
            return None;
        }
        let samples = samples as f64;
        let mean = total / samples;
        Some(Seen {
            mean,
            variance: (squares / samples - mean * mean).max(0.0),
            samples,
        })
    }
}

/// Whether a round of `samples` binds: all but a tenth of them (rounded up)
/// reached the limit.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
pub(super) fn binds(saturated: usize, samples: usize) -> bool {
    samples - saturated <= (samples as f64 * LOOSE).ceil() as usize
}
