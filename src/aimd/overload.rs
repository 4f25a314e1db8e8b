//! Back-pressure: a refusal judged against the limit, a back-off, and the
//! refusals of the burst it answers.

use crate::adaptive::Sample;

use super::Aimd;
use super::refusals::Judged;
use super::start::Measuring;

/// A back-off, and the refusals that came after it from items started
/// before it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Burst {
    /// The limit at the back-off.
    pub(super) limit: usize,
    pub(super) refused: usize,
    /// It ended slow start, whose figure is not measured yet.
    pub(super) ended_start: bool,
}

impl Aimd {
    /// A refusal: back-pressure, or not.
    pub(super) fn overload(&mut self, sample: &Sample) {
        let done = sample.started + sample.run;
        // An item started in the very clock reading of a back-off cannot be
        // told apart from one started before it: taken as the same news.
        let stale = self.round.since.is_some_and(|since| {
            sample.started < since || (self.burst.is_some() && sample.started == since)
        });
        if stale {
            // From an item started before the last change: it ran under the
            // old limit. After a back-off, each such refusal beyond what the
            // base rate explains says the service took one fewer than the
            // limit then.
            let Some(burst) = &mut self.burst else {
                return;
            };
            if !self.refusals.beyond_base(burst.refused, burst.limit) {
                burst.refused += 1;
                return;
            }
            burst.refused += 1;
            // Not one refusal alone: no base rate makes them.
            self.recheck = false;
            // Back-pressure, not a rise, ended slow start: a queue below the
            // refusals (a service that queues, then refuses) would show only
            // against a figure slow start's rounds did not take in; it is
            // measured now, at the limit below the refusals.
            let measure = burst.ended_start;
            burst.ended_start = false;
            let ceiling = burst.limit.saturating_sub(burst.refused).max(self.min) + 1;
            let ceiling = self.ceiling.map_or(ceiling, |c| c.min(ceiling));
            self.ceiling = Some(ceiling);
            self.refusals.expected_from(ceiling);
            let limit = self.limit.min(ceiling - 1).max(self.min);
            if limit != self.limit {
                // Not a new round: the same items are still leaving.
                let since = self.round.since;
                self.decide(done, limit, None, true);
                self.round.since = since;
            }
            if measure && self.measuring.is_none() && self.provisional {
                self.measuring = Some(Measuring::Refused);
            }
            if matches!(self.measuring, Some(Measuring::Refused)) {
                self.restart_measurement();
            }
            return;
        }
        match self.refusals.judge(self.limit, sample.in_flight) {
            Judged::Load => {}
            Judged::Base => return,
            Judged::FewBelow => {
                // Not back-pressure: no back-off, no ceiling, no level. The
                // calls at one fewer in flight tell whether these refusals
                // rise with the load. A measurement under way goes on (one
                // fewer in flight adds no queue to it); slow start ends, as
                // at any lower limit.
                let limit = self.limit.saturating_sub(1).max(self.min);
                if limit != self.limit {
                    self.decide(done, limit, None, false);
                }
                return;
            }
        }
        // What was tested is the limit in force (slow start's doubling takes
        // effect one completion at a time), and no more than the limit when
        // the refused item started: spawned, the items in flight when it
        // came back count those the moment's other completions started
        // after it (a refuse-only service of 32 backed off from 44 where in
        // place it did from 38, and the doubling's burst refused 7 more).
        let then = if sample.started < self.moment {
            self.moments
                .iter()
                .find(|&&(at, _)| at <= sample.started)
                .map_or(usize::MAX, |&(_, limit)| limit)
        } else {
            usize::MAX
        };
        self.limit = self.paced.min(sample.in_flight).min(then).max(self.min);
        let found_again = self.refusals.back_pressure(self.limit, self.slow_start);
        // Unless more refusals of the same items follow, one refusal alone
        // set a new ceiling: it is checked after a round. Not one that came
        // back where refusals last counted, though, whatever ceiling stood
        // since: a queue may have set one below them, which a probe then
        // found stale (a refuse-only service whose unloaded run time was
        // measured low), and the climb past it met the refusals' level
        // again. Checked, that level was refused twice for each such climb.
        self.recheck = !found_again && self.ceiling.is_none_or(|ceiling| ceiling > self.limit);
        self.ceiling = Some(self.limit);
        self.step = 1;
        self.burst = Some(Burst {
            limit: self.limit,
            refused: 1,
            ended_start: self.slow_start
                && self.provisional
                && self.measuring.is_none()
                && self.base.is_some(),
        });
        self.held = 0;
        self.cuts = None;
        // A measurement restarts at the lower limit.
        if self.measuring.is_some() {
            self.restart_measurement();
        }
        #[allow(clippy::cast_precision_loss)]
        let limit = self.lowered((self.limit as f64 * self.backoff).floor());
        self.decide(done, limit, None, true);
    }
}
