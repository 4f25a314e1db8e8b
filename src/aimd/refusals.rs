//! Refusals judged against the limit: what share of the calls a service
//! refuses whatever the load (another tenant's quota, a flaky shard), and
//! whether the refusals at a limit are more than that share explains.

/// The base rate of refusals is a mean over about this many calls.
const MEMORY: f64 = 4096.0;
/// The base rate is taken as if this many calls with no refusal came first:
/// a few calls tell too little, and most of slow start's first refusals are
/// the load's.
const PRIOR: f64 = 32.0;
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
/// Below it, the refusals among the calls started at this limit count too
/// when the rate with fewer in flight (an upper bound) explains as many with
/// less than this chance: a rate a few times that one, held for a few
/// hundred calls. A limit a few items above a capacity refuses only the
/// calls it starts beyond it, a rise the sequential test's eightfold one
/// never reaches: it stayed there, refusing 10 to 15 % of its calls.
const CLEAR: f64 = 1e-3;
/// And only from this many refusals on: a few in a row are that unlikely
/// at a base rate of 10 % (three in three calls), and slow start's first
/// rounds try it again and again.
const CLEAR_LEAST: usize = 5;
/// The refusals at lower concurrency are pooled from the level just below a
/// call's down, until they hold this many calls (as weighted).
const NEAR: f64 = 512.0;
/// The rate taken from them is an upper bound: this many refusals more than
/// they hold (about a 95 % bound, with few refusals), so that few calls never
/// make it low by chance.
const UPPER: f64 = 3.0;
/// Below this many, they are taken as this many, none of the missing ones
/// refused: three refusals in 32 calls, with no calls at all.
const NEAR_LEAST: f64 = 32.0;
/// A refusal at the limit that neither test counts steps the limit down by
/// one, not a back-off, while the rate with fewer in flight is over fewer
/// than this many calls (and fewer than the calls at this limit), and the
/// refusals at this limit, five or more, run above that rate: at a steady
/// limit every call completes with the limit in flight, so only a lower
/// limit teaches the rate below (a limit one above a capacity of 24 had
/// only slow start's 48 calls below, a bound of 6 % against the 8 % it
/// refused, and held for good, wasting up to 9 % of the calls).
const FEW_BELOW: f64 = 128.0;
/// Concurrency levels tallied apart; those above share the last tally.
const LEVELS: usize = 1024;

/// The refusals a controller heard of, judged against the limit.
#[derive(Clone, Debug)]
pub(super) struct Refusals {
    /// Calls and refusals by the items in flight when each completed, over
    /// about [`MEMORY`] calls in all (each tally weighted by `weight` when
    /// counted: later calls weigh more).
    by_load: Vec<Weighed>,
    weight: f64,
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

/// Calls and refusals, weighted.
#[derive(Clone, Copy, Debug, Default)]
struct Weighed {
    calls: f64,
    refused: f64,
}

/// Calls, and how many of them were refused.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    calls: usize,
    refused: usize,
}

impl Tally {
    /// The same share refused, over at most `calls` calls.
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    fn at_most(self, calls: f64) -> Self {
        let most = calls.ceil() as usize;
        if self.calls <= most {
            return self;
        }
        Self {
            calls: most,
            refused: (self.refused as f64 * most as f64 / self.calls as f64).round() as usize,
        }
    }
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
    /// Within the base rate as far as the calls with fewer in flight tell,
    /// and they are too few to tell: the limit steps down by one, and the
    /// calls there tell.
    FewBelow,
}

impl Refusals {
    /// Room for the tallies by concurrency, up to `max`, reserved once.
    pub(super) fn new(max: usize) -> Self {
        Self {
            by_load: vec![Weighed::default(); max.min(LEVELS) + 1],
            weight: 1.0,
            calls: 0.0,
            events: 0.0,
            quiet: 0,
            here: Tally::default(),
            evidence: 0.0,
            level: None,
        }
    }

    /// The refusal rate at concurrency below `in_flight`, an upper bound:
    /// the tallies from `in_flight - 1` down, pooled until they hold
    /// [`NEAR`] calls, with [`UPPER`] refusals more, over at least
    /// [`NEAR_LEAST`] calls. With fewer calls than that (a limit that never
    /// went lower), it is loose, but it is still a bound: the calls at this
    /// concurrency, refused for load, must not teach the base rate.
    fn below_load(&self, in_flight: usize) -> f64 {
        self.below_tally(in_flight).0
    }

    /// [`below_load`](Self::below_load), and the calls it is over (at least
    /// [`NEAR_LEAST`]).
    fn below_tally(&self, in_flight: usize) -> (f64, f64) {
        // Pooled as weighted: one division at the end, not one per tally.
        let mut pooled = Weighed::default();
        let top = in_flight.min(self.by_load.len());
        for tally in self.by_load[..top].iter().rev() {
            pooled.calls += tally.calls;
            pooled.refused += tally.refused;
            if pooled.calls >= NEAR * self.weight {
                break;
            }
        }
        let calls = (pooled.calls / self.weight).max(NEAR_LEAST);
        ((pooled.refused / self.weight + UPPER) / calls, calls)
    }

    /// The base rate a refusal at `in_flight` is judged against: the lower
    /// of the rate over every call and the rate at the concurrency just
    /// below it.
    pub(super) fn base_at(&self, in_flight: usize) -> f64 {
        self.base_under(self.below_load(in_flight))
    }

    /// [`base_at`](Self::base_at), with the rate below already pooled.
    fn base_under(&self, below: f64) -> f64 {
        below.min(self.base_rate())
    }

    /// The share of calls refused whatever the load, as far as known: the
    /// refusal events over the calls, corrected for the refusals that fell
    /// within [`SAME_EVENT`] calls of another by chance.
    pub(super) fn base_rate(&self) -> f64 {
        if self.calls <= 0.0 {
            return 0.0;
        }
        let events = self.events / (self.calls + PRIOR);
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
    pub(super) fn call(&mut self, limit: usize, in_flight: usize, refused: bool) {
        self.weight *= MEMORY / (MEMORY - 1.0);
        if self.weight > 1e100 {
            for tally in &mut self.by_load {
                tally.calls /= self.weight;
                tally.refused /= self.weight;
            }
            self.weight = 1.0;
        }
        // `new` reserves at least two levels.
        let at = in_flight.min(self.by_load.len() - 1);
        self.by_load[at].calls += self.weight;
        if refused {
            self.by_load[at].refused += self.weight;
        }
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
            // An answered call only takes evidence away, and the evidence
            // stops at 0: with none, there is nothing to weigh (and no
            // logarithm to take, on almost every call).
            if self.evidence > 0.0 && self.below(limit) {
                let (base, rise) = Self::rates(self.base_at(in_flight));
                self.evidence = (self.evidence + ((1.0 - rise) / (1.0 - base)).ln()).max(0.0);
            }
        }
    }

    /// Whether `limit` is below where refusals last counted, or there is no
    /// such limit.
    fn below(&self, limit: usize) -> bool {
        self.level.is_none_or(|level| limit < level.limit)
    }

    /// The base rate `base` as the sequential test takes it, and the rate a
    /// rise above it would show.
    fn rates(base: f64) -> (f64, f64) {
        let base = base.min(TESTED_BASE);
        (
            base,
            (base * RISE_TIMES)
                .max(base + RISE_BY)
                .min(f64::midpoint(base, 1.0)),
        )
    }

    /// A refusal of an item started at the current limit, `limit`, counted
    /// by [`call`](Self::call) already: is it more than the base rate
    /// explains? At or above where refusals last counted, they are
    /// expected: one that the base rate makes unlikely among the calls
    /// started at this limit is enough. Below (or with no such limit),
    /// refusals must run well above the base rate, or clearly above the rate
    /// with fewer in flight among the calls started at this limit; where
    /// that rate is over too few calls to tell, and the refusals at the
    /// limit run above it, the limit steps down to learn it.
    pub(super) fn judge(&mut self, limit: usize, in_flight: usize) -> Judged {
        self.here.refused += 1;
        if !self.below(limit) {
            let expected = self.base_at(in_flight);
            return if tail(self.here.calls, expected, self.here.refused) < EXPECTED {
                Judged::Load
            } else {
                Judged::Base
            };
        }
        // The rate below, pooled once for both tests.
        let (bound, over) = self.below_tally(in_flight);
        let (base, rise) = Self::rates(self.base_under(bound));
        self.evidence += (rise / base).ln();
        // The calls at this limit weigh no more than those the rate below
        // is over: a rate of many calls is tested against one of few as if
        // it were exact, and a base rate a little above the bound (of 3 %
        // against 2.3 % over 512 calls, after 2,000 calls held at one limit)
        // would count.
        let Tally { calls, refused } = self.here.at_most(over);
        if self.evidence >= EVIDENCE
            || (refused >= CLEAR_LEAST && tail(calls, bound, refused) < CLEAR)
        {
            return Judged::Load;
        }
        // Neither counts it. Too few calls below to tell, with the calls at
        // the limit (all of them, not weighed as above) outnumbering them
        // and refused above their rate?
        let Tally { calls, refused } = self.here;
        #[allow(clippy::cast_precision_loss)]
        let (calls, above) = (calls as f64, refused as f64 > bound * calls as f64);
        let few_below = in_flight >= limit && over < FEW_BELOW && calls > over;
        if few_below && refused >= CLEAR_LEAST && above {
            Judged::FewBelow
        } else {
            Judged::Base
        }
    }

    /// Back-pressure at `limit`: it becomes the level. Whether it found the
    /// level before again (came at or above it).
    pub(super) fn back_pressure(&mut self, limit: usize, slow_start: bool) -> bool {
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
        found_again
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
    // one before, as logarithms (the first, `(1 - rate)^calls`, is below
    // the smallest float from a few thousand calls on, and every term
    // taken from it would be 0 too).
    let odds = (rate / (1.0 - rate)).ln();
    let mut term = calls as f64 * (-rate).ln_1p();
    let mut fewer = 0.0;
    for k in 0..refused {
        fewer += term.exp();
        term += ((calls - k) as f64 / (k + 1) as f64).ln() + odds;
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
        // 20,000 calls at 5 %: (0.95)^20000 is far below the smallest
        // float, and the tail still comes out: 1,000 refused or more is
        // about one half (1,000 is the mean), 1,200 or more far beyond it.
        let mean = tail(20_000, 0.05, 1_000);
        assert!((0.5..0.51).contains(&mean), "{mean}");
        assert!(tail(20_000, 0.05, 1_200) < 1e-9);
    }
}

/// The base rate judged against the concurrency, its prior, and the test's
/// rise (the rule's paragraph on refusals, in `Aimd`'s documentation).
#[cfg(test)]
mod judged {
    use super::{CLEAR, CLEAR_LEAST, Judged, Refusals, Tally, tail};

    /// `calls` calls at `in_flight`, one in `every` refused (none if 0), none
    /// of them judged.
    fn feed(refusals: &mut Refusals, calls: usize, in_flight: usize, every: usize) {
        for i in 1..=calls {
            refusals.call(usize::MAX, in_flight, every != 0 && i % every == 0);
        }
    }

    #[test]
    fn refusals_that_come_with_more_in_flight_are_judged_against_fewer() {
        // A service that never refuses at 16 in flight and refuses one call
        // in four at 17: over every call the rate is 4 %, the load's own.
        let mut refusals = Refusals::new(64);
        feed(&mut refusals, 1_000, 16, 0);
        for _ in 0..50 {
            feed(&mut refusals, 3, 17, 0);
            refusals.call(usize::MAX, 17, true);
        }
        assert!(refusals.base_rate() > 0.02, "{}", refusals.base_rate());
        // At 17 a refusal is judged against the calls just below (512 or
        // more, as weighted): none refused, taken as at most 3 in 512.
        let base = refusals.base_at(17);
        assert!(base > 0.0 && base <= 3.0 / 512.0, "{base}");
        // So refusals at 17 are back-pressure: a few close together.
        let judged: Vec<Judged> = (0..4)
            .map(|_| {
                refusals.call(17, 17, true);
                refusals.judge(17, 17)
            })
            .collect();
        assert_eq!(judged.last(), Some(&Judged::Load), "{judged:?}");
    }

    #[test]
    fn a_base_rate_at_every_concurrency_stays_the_base_rate() {
        // One call in 20 refused at 10 to 20 in flight: at 20, the rate
        // below is 5 % too, and refusals at that rate are never
        // back-pressure.
        let mut refusals = Refusals::new(64);
        for in_flight in 10..=20 {
            feed(&mut refusals, 200, in_flight, 20);
        }
        let base = refusals.base_at(20);
        assert!((0.04..0.08).contains(&base), "{base}");
        for _ in 0..100 {
            feed(&mut refusals, 19, 20, 0);
            refusals.call(20, 20, true);
            assert_eq!(refusals.judge(20, 20), Judged::Base);
        }
    }

    #[test]
    fn a_few_calls_teach_the_base_rate_as_if_32_answered_calls_came_first() {
        // Two refusals in eight calls: a quarter of them, but taken with 32
        // answered calls before, about 5 % (corrected for refusals that
        // fall close together).
        let mut refusals = Refusals::new(64);
        feed(&mut refusals, 8, 4, 4);
        let base = refusals.base_rate();
        assert!((0.05..0.06).contains(&base), "{base}");
    }

    #[test]
    fn a_limit_a_few_items_above_a_capacity_is_found_by_its_calls_refused() {
        // 2 % refused with 24 in flight (pooled, as an upper bound: about 13
        // in 512, 2.6 %), then a limit of 26 that refuses one call in 13:
        // three times that, far below the sequential test's eightfold rise
        // (it loses evidence on every refusal's 12 answered calls).
        let mut refusals = Refusals::new(64);
        feed(&mut refusals, 600, 24, 50);
        // The raise started 2 calls: 2 calls at 26 before the first completes.
        refusals.moved(24, 26);
        let mut first = None;
        for call in 1..=520 {
            let refused = call % 13 == 0;
            refusals.call(26, 26, refused);
            if !refused {
                continue;
            }
            // Back-pressure exactly when the bound explains as many refusals
            // among the calls at 26 (weighed as no more calls than it is
            // over), five or more, with less than one chance in 1,000.
            let (bound, over) = refusals.below_tally(26);
            let Tally { calls, refused } = Tally {
                calls: call + 2,
                refused: call / 13,
            }
            .at_most(over);
            let clear = refused >= CLEAR_LEAST && tail(calls, bound, refused) < CLEAR;
            let judged = refusals.judge(26, 26);
            assert_eq!(judged == Judged::Load, clear, "call {call}");
            if clear {
                first = Some(call);
                break;
            }
        }
        let first = first.expect("back-pressure within 520 calls");
        assert!((150..=400).contains(&first), "{first}");
    }

    #[test]
    fn the_test_of_the_calls_at_a_limit_needs_five_refusals() {
        // The same 2.6 % bound, then one call in three refused at 26: the
        // fourth refusal is already beyond the bound by one chance in
        // 1,000, but four are not enough; the fifth counts (the sequential
        // test is still short of its evidence then).
        let mut refusals = Refusals::new(64);
        feed(&mut refusals, 600, 24, 50);
        refusals.moved(24, 26);
        let mut judged = Vec::new();
        for call in 1..=15 {
            let refused = call % 3 == 0;
            refusals.call(26, 26, refused);
            if refused {
                if call == 12 {
                    assert!(tail(call + 2, refusals.below_load(26), 4) < CLEAR);
                }
                judged.push(refusals.judge(26, 26));
            }
        }
        let base = [Judged::Base; 4];
        assert_eq!(judged[..4], base);
        assert_eq!(judged[4], Judged::Load);
        assert!(refusals.evidence < super::EVIDENCE, "{}", refusals.evidence);
    }

    #[test]
    fn the_calls_at_a_limit_weigh_no_more_than_those_below() {
        // A limit that never went lower, one call in seven refused at it
        // (14 %): the rate below is only a bound of 3 in 32, and 2,000
        // calls at 14 % would be far beyond it (286 refusals where it
        // explains 188). Weighed as the 32 calls it is over (4 or 5
        // refusals where it explains 3), they are not back-pressure (too few
        // calls below to tell: the limit would step down to learn them).
        let mut refusals = Refusals::new(64);
        for call in 1..=2_000 {
            let refused = call % 7 == 0;
            refusals.call(7, 7, refused);
            if refused {
                assert_ne!(refusals.judge(7, 7), Judged::Load, "call {call}");
            }
        }
        assert!(tail(2_000, refusals.below_load(7), 285) < CLEAR);
        // The same share, over fewer calls.
        let weighed = Tally {
            calls: 2_000,
            refused: 285,
        }
        .at_most(32.0);
        assert_eq!((weighed.calls, weighed.refused), (32, 5));
    }

    /// `below` calls at 20 in flight, one in 20 of them refused, then 300
    /// calls at a limit of 25, one in ten refused with `in_flight` in
    /// flight: how each refusal at 25 is judged, up to the first that is
    /// not `Base`.
    fn judged_at_25(below: usize, in_flight: usize) -> Vec<Judged> {
        let mut refusals = Refusals::new(64);
        feed(&mut refusals, below, 20, 20);
        refusals.moved(20, 25);
        let mut judged = Vec::new();
        for call in 1..=300 {
            let refused = call % 10 == 0;
            refusals.call(25, if refused { in_flight } else { 25 }, refused);
            if refused {
                judged.push(refusals.judge(25, in_flight));
                if judged.last() != Some(&Judged::Base) {
                    break;
                }
            }
        }
        judged
    }

    #[test]
    fn too_few_calls_below_a_limit_step_it_down_to_learn_them() {
        // 127 calls at 20, 6 refused: a bound of 9 in 127 (7.1 %). At 25,
        // 10 % refused: above it, but within one chance in 1,000 of it.
        // Once the calls at 25 (the 5 the raise started, and each since)
        // outnumber those below (127, weighing about 121.5 by then: about
        // 4,096 calls are remembered), at the 12th refusal, the limit steps
        // down.
        let judged = judged_at_25(127, 25);
        assert_eq!(judged.len(), 12, "{judged:?}");
        assert_eq!(judged.last(), Some(&Judged::FewBelow));
        // 145 calls below (7 refused: about the same bound) weigh 128 or
        // more for these 300 calls (132 at the end): they tell, and the
        // refusals are the base rate's.
        let judged = judged_at_25(145, 25);
        assert_eq!(judged, [Judged::Base; 30]);
        // Refusals below the limit (the source held it back) never step it
        // down.
        let judged = judged_at_25(127, 24);
        assert_eq!(judged, [Judged::Base; 30]);
    }

    #[test]
    fn too_few_calls_below_need_five_refusals_above_their_rate() {
        // No calls below: a bound of 3 in 32 (9.4 %). One call in ten
        // refused at a limit of 7, from the 33rd call on: above the bound
        // from the fifth refusal (call 50); one in eleven (9.1 %) never.
        for (every, first) in [(10, Some(5)), (11, None)] {
            let mut refusals = Refusals::new(64);
            let mut judged = Vec::new();
            for call in 1..=600 {
                let refused = call % every == 0;
                refusals.call(7, 7, refused);
                if refused {
                    judged.push(refusals.judge(7, 7));
                }
            }
            let at = judged.iter().position(|&j| j == Judged::FewBelow);
            assert_eq!(at.map(|at| at + 1), first, "one in {every}: {judged:?}");
            assert!(!judged.contains(&Judged::Load), "one in {every}");
        }
    }

    #[test]
    fn three_refusals_in_three_calls_are_not_enough() {
        // Slow start's first calls, with nothing below them: three refused
        // in a row is one chance in 1,200 at the bound of 3 in 32, and at a
        // base rate of 10 % it happens, given the many rounds that try it.
        let mut refusals = Refusals::new(64);
        for _ in 0..3 {
            refusals.call(4, 4, true);
            assert_eq!(refusals.judge(4, 4), Judged::Base);
        }
        assert!(tail(3, refusals.below_load(4), 3) < CLEAR);
    }

    #[test]
    fn with_no_calls_at_lower_concurrency_their_rate_is_taken_as_three_in_32() {
        // A limit that went no lower than 7: every call there, one in three
        // refused. Over every call the base rate is the load's own; with
        // fewer in flight there were no calls, taken as 3 refusals in 32,
        // and a third of the calls at 7 are far beyond that.
        let mut refusals = Refusals::new(64);
        assert!((refusals.below_load(7) - 3.0 / 32.0).abs() < 1e-12);
        feed(&mut refusals, 300, 7, 3);
        assert!(refusals.base_rate() > 0.2, "{}", refusals.base_rate());
        assert!((refusals.base_at(7) - 3.0 / 32.0).abs() < 1e-12);
        refusals.moved(7, 7);
        let load = (1..=60).any(|call| {
            let refused = call % 3 == 0;
            refusals.call(7, 7, refused);
            refused && refusals.judge(7, 7) == Judged::Load
        });
        assert!(load);
    }

    #[test]
    fn a_high_base_rate_still_tells_a_rise() {
        // A base rate of about 15 %, at 7 in flight, and then six refusals in
        // ten calls at 8: the test's rise is halfway to 1, so the answered
        // calls among them do not outweigh the refusals (a rise taken as
        // 0.99 made each answered call count as much as two refusals).
        let mut refusals = Refusals::new(64);
        feed(&mut refusals, 400, 7, 7);
        let base = refusals.base_at(8);
        assert!((0.1..0.2).contains(&base), "{base}");
        let mut load = false;
        for i in 0..30 {
            let refused = i % 10 < 6;
            refusals.call(8, 8, refused);
            if refused && refusals.judge(8, 8) == Judged::Load {
                load = true;
                break;
            }
        }
        assert!(load);
    }
}
