//! A run time that moved: cuts that did not bring it down.

use std::time::Duration;

use super::figures::{Baseline, Seen};
use super::{Aimd, HALVED, HALVED_SAMPLES};

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

impl Aimd {
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
        if below.samples < HALVED_SAMPLES {
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
        if below.mean < (first.mean + base.mean) / 2.0 {
            return false;
        }
        self.base = Some(Baseline::new(&below, limit));
        self.provisional = false;
        self.ceiling = None;
        self.step = 1;
        let back = self.rounded(from, in_flight * below.mean / first.mean);
        self.decide(at, back, Some(seen.mean), false);
        true
    }
}
