//! A run time that moved: cuts that did not bring it down.

use std::time::Duration;

use super::figures::{Baseline, Seen};
use super::{Aimd, HALVED, HALVED_EARLY, HALVED_SAMPLES, SURE};

/// A round that showed a queue and cut the limit, and the rounds that came
/// after it at half its limit or less, pooled.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cuts {
    /// Its limit, items in flight, and what it showed.
    pub(super) limit: usize,
    pub(super) in_flight: f64,
    pub(super) first: Seen,
    pub(super) below: Option<Seen>,
}

impl Cuts {
    /// Halfway between the first round's mean run time and the unloaded
    /// one: a mean at or above it means the run time kept more than half of
    /// its excess, and the queue that began the cuts was not one.
    pub(super) fn midpoint(&self, base: &Baseline) -> f64 {
        f64::midpoint(self.first.mean, base.mean)
    }
}

impl Aimd {
    /// A run time seen at the current limit is the unloaded one from now
    /// on (the run time moved, or it rises with the load there): what was
    /// learned against the old one goes, the ceiling and the cuts, a
    /// suspect round and the rounds pooled, and growth starts again at one.
    pub(super) fn rebase(&mut self, seen: &Seen) {
        self.throughput.clear();
        self.base = Some(Baseline::new(seen, self.limit));
        self.provisional = false;
        self.ceiling = None;
        self.step = 1;
        self.cuts = None;
        self.suspect = None;
        self.pool = None;
    }

    /// Whether the cuts that brought the limit to half, or less, of where a
    /// queue began them cut a queue that was not one, and if so, rebases: a
    /// queue that large would have taken most of the run time's excess over
    /// the unloaded one with it, and the run time kept more than half.
    pub(super) fn halved_for_nothing(&mut self, seen: &Seen, at: Duration) -> bool {
        let limit = self.limit;
        let (Some(cuts), Some(base)) = (&mut self.cuts, self.base) else {
            return false;
        };
        #[allow(clippy::cast_precision_loss)]
        if limit as f64 > HALVED * cuts.limit as f64 {
            return false;
        }
        let below = cuts.below.map_or(*seen, |below| below.pooled(seen));
        cuts.below = Some(below);
        // Enough to tell: 16 samples, or as few as 4 where the run time's
        // noise (the unloaded one's, in proportion to the mean) puts their
        // mean beyond three standard errors of the midpoint, either way: at a
        // limit of one or two, 16 samples take as many run times.
        let midpoint = cuts.midpoint(&base);
        let noise = below.mean * base.variance.sqrt() / base.mean / below.samples.sqrt();
        let clear = below.samples >= HALVED_EARLY && (below.mean - midpoint).abs() > SURE * noise;
        if below.samples < HALVED_SAMPLES && !clear {
            return false;
        }
        // Enough to tell, either way.
        let Cuts {
            limit: from,
            in_flight,
            first,
            ..
        } = *cuts;
        self.cuts = None;
        if below.mean < midpoint {
            return false;
        }
        self.rebase(&below);
        let back = self.rounded(from, in_flight * below.mean / first.mean);
        self.decide(at, back, Some(seen.mean), false);
        true
    }
}
