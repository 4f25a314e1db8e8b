//! A run time that rises with the load below a capacity: a probe of what a
//! quarter more items in flight serve.
//!
//! Little's law makes one limit's rounds, against an unloaded run time
//! measured lower, tell the same whether the service queues past a capacity
//! or slows a little with each request it serves (a processor, a disk or a
//! pool the requests share): both show items that did not run. What tells
//! them apart is a higher limit: past a capacity it serves no more, and
//! below one it serves more, if each item a little slower.

use super::figures::{Seen, Served};
use super::{Aimd, Ended, GRADIENT, GRADIENT_ROUNDS, Pool, SURE};

/// Probes of the throughput's gradient: whether one may start, and the one
/// under way.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Gradient {
    /// A probe may start: once after each measurement of the unloaded run
    /// time, and again after each probe that served more.
    pub(super) armed: bool,
    /// The items in flight and what the service took of them (those less
    /// the queue) at the queue with the most in flight since then, or
    /// since the service changed.
    pub(super) took: Option<(f64, f64)>,
    probe: Option<Probe>,
}

/// A probe under way: what the limit below it served, its limit, and its
/// settled rounds so far.
#[derive(Clone, Copy, Debug)]
struct Probe {
    below: Served,
    at: usize,
    /// All its samples (what Little's law needs), and those in the mean.
    above: Option<(Pool, Seen)>,
}

impl Gradient {
    /// Whether a queue with `in_flight` items in flight, of which the
    /// service took `took`, hints at a run time that rises with the load: in
    /// a `settled` round (one right after a change shows the queue a cut
    /// left draining, not the run time as it is), at a lower limit than the
    /// queue with the most in flight since the measurement, the service
    /// took less than there by more than half the difference in items in
    /// flight, and no more than all of it. Past a capacity, a service takes
    /// as many at any limit above it; one whose run time rises with the
    /// load takes less at each limit the cuts leave, up to one item for each
    /// item fewer. More than that, and the service itself changed (a
    /// capacity that fell): this queue is then the one to compare with. (A
    /// run time that moved, slower at any load, takes less the same way, by
    /// one item over the slowdown for each item fewer; the probe serves it
    /// too little, and the cuts go on.)
    pub(super) fn hinted(&mut self, in_flight: f64, took: f64, settled: bool) -> bool {
        let (hinted, changed) = self.took.map_or((false, false), |(flying, before)| {
            let (fewer, less) = (flying - in_flight, before - took);
            (
                fewer > 0.0 && less > GRADIENT * fewer && less <= fewer,
                less > fewer.max(0.0),
            )
        });
        if changed || self.took.is_none_or(|(flying, _)| in_flight > flying) {
            self.took = Some((in_flight, took));
        }
        hinted && settled
    }
}

impl Pool {
    /// What the pooled samples served.
    fn served(&self) -> Served {
        Served::of(self.flying / self.seen.samples, &self.seen)
    }
}

impl Aimd {
    /// Starts a probe above `below` (what a limit that showed no queue
    /// served),
    /// if one may start: at `limit`, or a quarter above `below`'s items in
    /// flight if higher, but below where refusals last counted as
    /// back-pressure, and two items above `below` at least (a quarter of
    /// fewer than 8 is too few items to tell).
    pub(super) fn gradient_probe(&mut self, limit: usize, below: Served) -> Option<usize> {
        if !self.gradient.armed {
            return None;
        }
        // Items in flight are far below 2^52: exact.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let low = below.in_flight.round() as usize;
        // Never as far as refusals last counted as back-pressure: that
        // costs refused calls. A quarter: enough items to tell (a quarter of
        // them served is a few standard errors at σ 0.2 over the rounds a
        // probe holds), and within the quarter above a capacity that a
        // limit settled near it may take.
        let most = self
            .refusals
            .level()
            .map_or(self.max, |level| level.saturating_sub(1));
        let at = limit
            .max(low.saturating_add(low / 4))
            .min(self.max)
            .min(most);
        // Refusals came below it: no probe (it would be a cut).
        if at < limit || at < low.saturating_add(2) {
            return None;
        }
        self.gradient = Gradient {
            armed: false,
            took: None,
            probe: Some(Probe {
                below,
                at,
                above: None,
            }),
        };
        Some(at)
    }

    /// What the limit the unloaded run time was measured at served.
    pub(super) fn measured_served(&self) -> Option<Served> {
        let base = self.base?;
        #[allow(clippy::cast_precision_loss)]
        let at = base.at as f64;
        let seen = Seen {
            mean: base.mean,
            variance: base.variance,
            samples: base.weight,
        };
        Some(Served::of(at, &seen))
    }

    /// A round at a probe's limit: held until the settled rounds tell
    /// whether it served more than half of what the items added would, if
    /// none of them waited. If so (the service slows with the load, it does
    /// not queue), the run time there becomes the unloaded one and the next
    /// probe starts from there; if not, the probe ends and the round is
    /// decided as any other (`false`).
    pub(super) fn gradient_round(&mut self, ended: &Ended, settled: bool) -> bool {
        let Some(mut probe) = self.gradient.probe else {
            return false;
        };
        if probe.at != self.limit || !ended.binds {
            // Back-pressure, or a measurement, moved the limit, or the source
            // does not fill it: over.
            self.gradient.probe = None;
            return false;
        }
        // Little's law needs every sample, outliers too: a queue makes them.
        let Ended {
            at,
            seen,
            all,
            in_flight,
            ..
        } = *ended;
        let round = Pool {
            seen: all,
            flying: in_flight * all.samples,
            rounds: 1,
        };
        if !settled {
            // A round right after the change favours the fast items: it can
            // only show that the added items served too little.
            if probe.served(&round.served(), false) == Some(false) {
                self.gradient.probe = None;
                return false;
            }
            self.same += 1;
            self.decide(at, self.limit, Some(seen.mean), false);
            return true;
        }
        let (above, clipped) = match probe.above {
            Some((above, clipped)) => (
                Pool {
                    seen: above.seen.pooled(&all),
                    flying: above.flying + round.flying,
                    rounds: above.rounds + 1,
                },
                clipped.pooled(&seen),
            ),
            None => (round, seen),
        };
        probe.above = Some((above, clipped));
        self.gradient.probe = Some(probe);
        match probe.served(&above.served(), above.rounds >= GRADIENT_ROUNDS) {
            Some(true) => {
                // It served more: no capacity below here. This is the
                // unloaded run time at this load, and a quarter more is tried
                // next.
                self.rebase(&clipped);
                self.gradient.armed = true;
                self.gradient.probe = None;
                let next = self
                    .gradient_probe(self.limit, above.served())
                    .unwrap_or(self.limit);
                self.decide(at, next, Some(seen.mean), false);
                true
            }
            Some(false) => {
                self.gradient.probe = None;
                false
            }
            None => {
                self.same += 1;
                self.decide(at, self.limit, Some(seen.mean), false);
                true
            }
        }
    }
}

impl Probe {
    /// Whether the items added served more than half of what they would if
    /// none of them waited (`Some(true)`), or less (`Some(false)`): beyond
    /// three standard errors, or, at the `last` round, as it stands (half is
    /// midway between a capacity, where they serve none, and a service that
    /// serves every item it is given); `None` until then.
    fn served(&self, above: &Served, last: bool) -> Option<bool> {
        let below = &self.below;
        // What the items above would have served at the run time below, and
        // what they served.
        let (low, high) = (below.in_flight, above.in_flight);
        let took = high * below.mean / above.mean;
        let error = took * above.error_against(below, 0.0);
        let bar = GRADIENT * (high - low);
        let gained = took - low;
        if gained - SURE * error > bar {
            Some(true)
        } else if gained + SURE * error < bar || last {
            Some(gained > bar)
        } else {
            None
        }
    }
}

/// The bars of the hint and of the probe, at their exact boundaries (the
/// rule's paragraph on a run time that rises with the load, in `Aimd`'s
/// documentation).
#[cfg(test)]
mod bars {
    use super::{Aimd, Gradient, Probe, Seen, Served};

    #[test]
    fn a_hint_is_more_than_half_of_the_items_fewer_and_at_most_all_of_them() {
        // The queue with the most in flight: 20, of which the service took
        // 18. At 16 in flight, 4 fewer: taking 2 less is half, no hint;
        // more than half, up to 4 less, is one.
        let at_16 = |took: f64| {
            let mut gradient = Gradient {
                took: Some((20.0, 18.0)),
                ..Gradient::default()
            };
            gradient.hinted(16.0, took, true)
        };
        assert!(!at_16(16.0));
        assert!(at_16(15.99));
        assert!(at_16(14.0));
        // More than 4 less: the service changed (a capacity that fell).
        // No hint, and this queue is the one to compare with from now on.
        let mut gradient = Gradient {
            took: Some((20.0, 18.0)),
            ..Gradient::default()
        };
        assert!(!gradient.hinted(16.0, 13.99, true));
        assert_eq!(gradient.took, Some((16.0, 13.99)));
        // A round right after a change hints at nothing, but a queue with
        // more in flight than the last is the one to compare with.
        let mut gradient = Gradient::default();
        assert!(!gradient.hinted(24.0, 20.0, false));
        assert_eq!(gradient.took, Some((24.0, 20.0)));
        assert!(!gradient.hinted(20.0, 17.0, false));
        assert!(gradient.hinted(20.0, 17.0, true));
    }

    /// What `samples` items of `ms` each served with `in_flight` in flight,
    /// their run times varying by `spread` (a standard deviation, in ms).
    fn rounds(in_flight: f64, ms: f64, spread: f64, samples: f64) -> Served {
        let seen = Seen {
            mean: ms,
            variance: spread * spread,
            samples,
        };
        Served::of(in_flight, &seen)
    }

    #[test]
    fn a_probe_serves_more_than_half_of_the_items_it_adds_or_not() {
        // 40 in flight at 9 ms; the probe adds 10. Half of them served is
        // 45 at the run time of 40: 50 × 9 / 10 ms.
        let probe = Probe {
            below: rounds(40.0, 9.0, 0.0, 120.0),
            at: 50,
            above: None,
        };
        let served =
            |ms: f64, spread: f64, last: bool| probe.served(&rounds(50.0, ms, spread, 150.0), last);
        // Exactly half: not more than half, and with run times that never
        // vary, not less either, until the last round.
        assert_eq!(served(10.0, 0.0, false), None);
        assert_eq!(served(10.0, 0.0, true), Some(false));
        assert_eq!(served(9.99, 0.0, false), Some(true));
        assert_eq!(served(10.01, 0.0, false), Some(false));
        // Where run times vary, near the bar is not clear: until the last
        // round, which decides as it stands.
        assert_eq!(served(9.9, 1.0, false), None);
        assert_eq!(served(9.9, 1.0, true), Some(true));
        assert_eq!(served(10.1, 1.0, true), Some(false));
        // Clear beyond three standard errors: all 10 served, or none.
        assert_eq!(served(9.0, 1.0, false), Some(true));
        assert_eq!(served(11.25, 1.0, false), Some(false));
    }

    #[test]
    fn a_probe_goes_a_quarter_above_from_8_in_flight_and_within_max() {
        let probe = |max: usize, limit: usize, below: f64| {
            let mut aimd = Aimd::new(1, max);
            aimd.gradient.armed = true;
            aimd.gradient_probe(limit, rounds(below, 10.0, 1.0, 64.0))
        };
        // From 8 in flight a quarter is two items: 10. From 7, 1 item, too
        // few to tell: no probe.
        assert_eq!(probe(256, 8, 8.0), Some(10));
        assert_eq!(probe(256, 7, 7.0), None);
        // A quarter above 40 is 50; at a limit already higher, the probe
        // holds there.
        assert_eq!(probe(256, 40, 40.0), Some(50));
        assert_eq!(probe(256, 55, 40.0), Some(55));
        // Within `max`, and not at all if that leaves fewer than two items.
        assert_eq!(probe(48, 40, 40.0), Some(48));
        assert_eq!(probe(41, 40, 40.0), None);
        // One probe, then none until the next measurement (or a probe that
        // served more) arms it again.
        let mut aimd = Aimd::new(1, 256);
        aimd.gradient.armed = true;
        assert_eq!(
            aimd.gradient_probe(40, rounds(40.0, 10.0, 1.0, 64.0)),
            Some(50)
        );
        assert_eq!(aimd.gradient_probe(40, rounds(40.0, 10.0, 1.0, 64.0)), None);
    }

    #[test]
    fn a_probe_stops_below_where_refusals_last_counted_as_back_pressure() {
        // Back-pressure at 46: a quarter above 40 would be 50; the probe
        // goes to 45. At 42 it would be 41, one item, too few to tell: none.
        let probe = |level: usize| {
            let mut aimd = Aimd::new(1, 256);
            aimd.refusals.back_pressure(level, false);
            aimd.gradient.armed = true;
            aimd.gradient_probe(40, rounds(40.0, 10.0, 1.0, 64.0))
        };
        assert_eq!(probe(46), Some(45));
        assert_eq!(probe(43), Some(42));
        assert_eq!(probe(42), None);
    }
}
