//! `Aimd` on scripted samples, one test per branch of its rule (see the type's
//! documentation): slow start and its figure (outliers against the median, the
//! items a round leaves out), a rise only once the figure has its samples, the
//! measurement below a rise (held, or grown by a source that sets the load;
//! started again after back-pressure), a rise the measurement confirms (the
//! ceiling from what the service took) or does not (slow start goes on,
//! doubling after two rounds); growth only when reached (twice in a row, or now
//! and then by one), the warm-up after a change, a queue cut to what the
//! service took, a small queue confirmed over two rounds, found to be noise, or
//! shown by the rounds at one limit together, the ceiling held and probed, a
//! stale ceiling climbed past, back-pressure and the refusals of a burst (a
//! round it cuts short leaves nothing behind), outliers (not a queue, however
//! many), completions slower than those in flight (not a queue either), the
//! unloaded run time (learned only where no queue hides, lowered by a faster
//! round, moved by a rise of the run time itself; cuts forgotten after a round
//! with no queue), a measurement of more than 1 024 run times (of its latest),
//! the room for run times reserved once, the clamps, the history, and the
//! panics.

use std::time::Duration;

use crate::adaptive::{Controller, Sample};
use crate::aimd::{Aimd, Decision, History};

/// Feeds an `Aimd` sample by sample, keeping a clock in microseconds.
struct Feed {
    aimd: Aimd,
    history: History,
    /// When the last sample completed.
    now: u64,
}

/// One sample: when it started and how long it ran, in microseconds.
fn sample(started: u64, run: u64, saturated: bool, overload: bool, in_flight: usize) -> Sample {
    Sample {
        started: Duration::from_micros(started),
        run: Duration::from_micros(run),
        overload,
        saturated,
        // Higher than any in flight: whether the limit was reached is what
        // `saturated` says.
        limit: usize::MAX,
        in_flight,
    }
}

const MS: u64 = 1_000;

impl Feed {
    fn new(aimd: Aimd) -> Self {
        let aimd = aimd.with_history(100_000);
        let history = aimd.history().expect("recorded");
        Self {
            aimd,
            history,
            now: 1_000 * MS,
        }
    }

    fn limit(&self) -> usize {
        self.aimd.initial()
    }

    fn decisions(&self) -> usize {
        self.history.rounds().len()
    }

    fn last(&self) -> Decision {
        *self.history.rounds().last().expect("a decision")
    }

    /// Feeds the sample `make(i)` for i = 0, 1, ... until the controller
    /// decides (a round, or a warm-up and then a round), at most 10,000.
    fn until_decision(&mut self, mut make: impl FnMut(&mut Self, usize) -> Sample) -> Decision {
        let before = self.decisions();
        for i in 0..10_000 {
            let sample = make(self, i);
            self.now = self
                .now
                .max((sample.started + sample.run).as_micros() as u64);
            self.aimd.sample(&sample);
            if self.decisions() > before {
                return self.last();
            }
        }
        panic!("no decision in 10,000 samples");
    }

    /// Samples of `run` microseconds (the odd ones `odd` instead), that all
    /// (or none) reached the limit, with as many in flight as the limit: the
    /// limit's worth of them complete, evenly spread, within one run time.
    fn round_of(&mut self, run: u64, odd: u64, saturated: bool) -> Decision {
        self.until_decision(|feed, i| {
            let limit = feed.limit() as u64;
            let run = if i % 2 == 1 { odd } else { run };
            let done = feed.now + run.max(odd) / limit;
            sample(done - run, run, saturated, false, limit as usize)
        })
    }

    /// Samples of `run` microseconds with `in_flight` in flight, that all
    /// (or none) reached the limit, completing evenly over `span`, until a
    /// decision.
    fn over(&mut self, span: u64, run: u64, saturated: bool, in_flight: usize) -> Decision {
        self.until_decision(|feed, _| {
            let done = feed.now + span / in_flight as u64;
            sample(done - run, run, saturated, false, in_flight)
        })
    }

    /// A round of slow start right after a doubling: half of its first
    /// completions are of items started before it, which ran 10 ms under the
    /// old limit; the round's own, started after it, run `ms` each.
    fn doubled_round(&mut self, ms: u64) -> Decision {
        let doubled = self.now;
        let limit = self.limit();
        for i in 0..limit as u64 / 2 {
            self.aimd
                .sample(&sample(doubled - 5 * MS + i, 10 * MS, true, false, limit));
        }
        self.until_decision(|_, i| sample(doubled + i as u64, ms * MS, true, false, limit))
    }

    /// A round of 10 ms samples, one in `every` of which reached the limit.
    fn reached_one_in(&mut self, every: usize) -> Decision {
        self.until_decision(|feed, i| {
            let limit = feed.limit() as u64;
            let done = feed.now + 10 * MS / limit;
            sample(
                done - 10 * MS,
                10 * MS,
                i % every == 0,
                false,
                limit as usize,
            )
        })
    }

    /// From 1, slow start to 64 on rounds of `start` ms, then a round of
    /// `rise` ms there, and its decision.
    fn rise_at_64(start: u64, rise: u64) -> (Self, Decision) {
        let mut feed = Feed::new(Aimd::new(1, 256).starting_at(1));
        feed.slow_start_to(64, start);
        let decision = feed.round(rise);
        (feed, decision)
    }

    /// Slow start from where it is to `limit`, rounds of `ms` each.
    fn slow_start_to(&mut self, limit: usize, ms: u64) {
        while self.limit() < limit {
            self.round(ms);
        }
        assert_eq!(self.limit(), limit);
    }

    /// A round of `ms` milliseconds each, the limit reached.
    fn round(&mut self, ms: u64) -> Decision {
        self.round_of(ms * MS, ms * MS, true)
    }

    /// Slow start to `limit` on samples of `even` and `odd` ms in turn, then
    /// rounds that do not bind: the first ends slow start, and the settled
    /// ones after it replace slow start's unloaded run time (32 samples) and
    /// add to it.
    fn settle_at(&mut self, limit: usize, even: u64, odd: u64) {
        while self.limit() < limit {
            self.round_of(even * MS, odd * MS, true);
        }
        assert_eq!(self.limit(), limit);
        for _ in 0..6 {
            assert_eq!(self.round_of(even * MS, odd * MS, false).limit, limit);
        }
        let base = Duration::from_micros((even + odd) * MS / 2);
        assert_eq!(self.last().base, Some(base));
    }
}

#[test]
fn it_starts_at_two_within_min_and_max() {
    // The rule's start: 2, so that one slow item does not hold the stream.
    assert_eq!(Aimd::new(1, 256).initial(), 2);
    assert_eq!(Aimd::new(1, 1).initial(), 1);
    assert_eq!(Aimd::new(3, 256).initial(), 3);
    assert_eq!(Aimd::new(1, 256).starting_at(1).initial(), 1);
    // A round at 2 is two samples.
    let mut feed = Feed::new(Aimd::new(1, 256));
    feed.aimd.sample(&sample(0, 10 * MS, true, false, 2));
    assert_eq!(feed.decisions(), 0);
    feed.aimd.sample(&sample(0, 10 * MS, true, false, 2));
    assert_eq!(feed.last().limit, 4);
}

#[test]
fn slow_start_doubles_each_binding_round_up_to_max() {
    let mut feed = Feed::new(Aimd::new(1, 50).starting_at(1));
    let limits: Vec<_> = (0..8).map(|_| feed.round(10).limit).collect();
    assert_eq!(limits, [2, 4, 8, 16, 32, 50, 50, 50]);
}

#[test]
fn a_limit_not_reached_never_grows_and_one_reached_now_and_then_grows_by_one() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    // Not reached: slow start ends and nothing grows.
    for _ in 0..10 {
        assert_eq!(feed.round_of(10 * MS, 10 * MS, false).limit, 16);
    }
    // Reached by 2 of 16 samples: too few to bind, enough for one more once
    // the mean of the last 4 rounds at 16 shows it (the second such round);
    // at each new limit only its own rounds count, and one is enough.
    let limits: Vec<_> = (0..4).map(|_| feed.reached_one_in(8).limit).collect();
    assert_eq!(limits, [16, 17, 18, 19]);
}

#[test]
fn a_higher_limit_earns_its_own_growth() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    feed.settle_at(16, 10, 10);
    // Reached by a quarter of the samples at 16: one more.
    let reached_by = |quarter: bool| {
        move |feed: &mut Feed, i: usize| {
            let limit = feed.limit() as u64;
            let done = feed.now + 10 * MS / limit;
            sample(
                done - 10 * MS,
                10 * MS,
                quarter && i % 4 == 0,
                false,
                limit as usize,
            )
        }
    };
    assert_eq!(feed.until_decision(reached_by(true)).limit, 17);
    // At 17 the source never reaches it: what 16 showed does not carry over.
    for _ in 0..4 {
        assert_eq!(feed.until_decision(reached_by(false)).limit, 17);
    }
}

#[test]
fn reached_now_and_then_just_below_the_ceiling_it_probes_the_ceiling() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    feed.settle_at(16, 10, 10);
    // A queue at 16 (mean 15 ms against 10): the ceiling is 16, and it
    // comes down.
    feed.round(15);
    let ceiling = 16;
    // Back up by one while reached now and then (a quarter of the samples,
    // not binding), up to just below the ceiling, and held there; every 160
    // samples held it tries the ceiling, binding or not (else a ceiling that
    // noise set would hold for good against a source as fast as the limit).
    let mut limits = Vec::new();
    for _ in 0..40 {
        limits.push(feed.reached_one_in(4).limit);
    }
    assert!(limits.contains(&(ceiling - 1)), "{limits:?}");
    assert!(limits.contains(&ceiling), "probed: {limits:?}");
}

#[test]
fn growth_out_of_slow_start_needs_two_binding_rounds_in_a_row() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    feed.settle_at(16, 10, 10);
    // One binding round after ones that did not: it holds.
    assert_eq!(feed.round(10).limit, 16);
    // The second in a row grows it; with no ceiling known, past a stale one.
    assert!(feed.round(10).limit > 16);
}

#[test]
fn a_rise_ends_slow_start_and_is_measured_below_it() {
    // At 64 the service took 32: half of them waited one run time. Against
    // slow start's figure, Little's law says 64 x (1 - 10/15) = 21 wait at
    // least (the figure is above 10 ms: it holds the first items of this
    // round, which started before the doubling): a rise. The limit comes down
    // to what the service took by that figure, but no higher than 32, where
    // slow start saw no rise.
    let (mut feed, rise) = Feed::rise_at_64(10, 15);
    assert_eq!(rise.limit, 32);
    assert_eq!(rise.mean_run, Some(Duration::from_millis(15)));
    // There it holds, whatever the rounds show, while it measures: the
    // warm-up (64 completions) and a round, then three rounds' worth.
    for _ in 0..3 {
        let held = feed.round(10);
        assert_eq!(held.limit, 32);
        assert_ne!(held.base, Some(Duration::from_millis(10)));
    }
    // Measured: 10 ms. The rise checked against it is a queue (21.3 of 64):
    // the service took 42.7, so 43 is the ceiling, and the limit closes in
    // on it (half the gap: 37) and holds just below.
    let measured = feed.round(10);
    assert_eq!(measured.base, Some(Duration::from_millis(10)));
    assert_eq!(measured.limit, 37);
    let limits: Vec<_> = (0..4).map(|_| feed.round(10).limit).collect();
    assert_eq!(limits, [40, 41, 42, 42]);
}

#[test]
fn before_slow_start_s_figure_has_16_samples_only_a_large_rise_counts() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(4));
    assert_eq!(feed.round(10).limit, 8);
    // At 8, the figure holds 8 samples (the first round's, and the 4 items
    // started before the doubling): 13 ms, 30 % above it, does not end slow
    // start (a few fast items make such a figure) ...
    assert_eq!(feed.doubled_round(13).limit, 16);
    // ... and at 16, with 24 samples behind the figure (11 ms, varying by
    // 1.4), it does: 16 x (1 - 11/13) = 2.5 waiting, beyond one and a half
    // standard errors (0.7 each).
    let rise = feed.doubled_round(13);
    assert!(rise.limit < 16, "{rise:?}");
    // A rise of 40 % or more counts with few samples: 15 ms at 8, half of
    // those in flight waiting.
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(4));
    assert_eq!(feed.round(10).limit, 8);
    let large = feed.doubled_round(15);
    assert!(large.limit < 8, "{large:?}");
}

#[test]
fn a_rise_the_measured_figure_does_not_show_resumes_slow_start() {
    // Slow start's rounds favour the fast items: they show 8 ms where the
    // service's run time is 12. 12 ms at 64 is a rise against 8 (21
    // waiting); measured at 32 ...
    let (mut feed, rise) = Feed::rise_at_64(8, 12);
    assert_eq!(rise.limit, 32);
    for _ in 0..3 {
        assert_eq!(feed.round(12).limit, 32);
    }
    // ... the run time is 12 ms: the rise was slow start's figure. Slow
    // start goes on from 64, and doubles only after two binding rounds
    // there show no queue.
    let resumed = feed.round(12);
    assert_eq!(resumed.base, Some(Duration::from_millis(12)));
    assert_eq!(resumed.limit, 64);
    assert_eq!(feed.round(12).limit, 64);
    assert_eq!(feed.round(12).limit, 128);
}

#[test]
fn back_pressure_while_measuring_starts_the_measurement_again() {
    let (mut feed, rise) = Feed::rise_at_64(10, 15);
    assert_eq!(rise.limit, 32);
    for _ in 0..3 {
        feed.round(10);
    }
    // Refusals just before the measurement completes, more than the base
    // rate explains: 32 x 0.9, 28, and what was measured at 32 is dropped.
    let t = feed.now;
    let refused = feed.until_decision(|_, _| sample(t, MS, true, true, 32));
    assert!(refused.overload);
    assert_eq!(feed.limit(), 28);
    // At 28: the warm-up and a round, then three rounds' worth again.
    for _ in 0..3 {
        let held = feed.round(10);
        assert_eq!(held.limit, 28);
        assert_ne!(held.base, Some(Duration::from_millis(10)));
    }
    assert_eq!(feed.round(10).base, Some(Duration::from_millis(10)));
}

#[test]
fn after_a_change_the_items_that_ran_under_the_old_limit_are_a_warm_up() {
    let (mut feed, _) = Feed::rise_at_64(10, 15);
    assert_eq!(feed.limit(), 32);
    // The first 64 completions (the larger limit) still show the queue of
    // the old limit: they are not a round, whatever they show.
    let before = feed.decisions();
    for i in 0..64u64 {
        feed.aimd
            .sample(&sample(feed.now + i, 50 * MS, true, false, 32));
    }
    assert_eq!(feed.decisions(), before, "no decision from the warm-up");
    // The next 32 are a round.
    let next = feed.round(10);
    assert_eq!(next.mean_run, Some(Duration::from_millis(10)));
}

#[test]
fn a_small_queue_counts_when_the_next_round_shows_it_too() {
    // Samples of 8 and 12 ms: the run time varies (2 ms), so a small rise
    // is within the noise.
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    feed.settle_at(16, 8, 12);
    let base = feed.last().base;
    // 9.5 and 13.5 ms: a mean of 11.5 against 10, 16 x (1 - 10/11.5) = 2.1
    // waiting: above two standard errors, below three. It holds ...
    assert_eq!(feed.round_of(9_500, 13_500, true).limit, 16);
    // ... and the next round showing it too cuts: 16 - 2.1 + one and a half
    // standard errors (about 0.9 each), 15.
    assert_eq!(feed.round_of(9_500, 13_500, true).limit, 15);
    assert_eq!(feed.last().base, base);
}

#[test]
fn a_small_queue_the_next_round_does_not_show_was_noise() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    feed.settle_at(16, 8, 12);
    let base = feed.last().base.unwrap();
    assert_eq!(feed.round_of(9_500, 13_500, true).limit, 16);
    // The next round is as usual: no cut (it binds, the second in a row: one
    // more), and both rounds are learned (the unloaded run time rises a
    // little, towards 11.5 ms).
    let next = feed.round_of(8 * MS, 12 * MS, true);
    assert_eq!(next.limit, 17);
    assert!(next.base.unwrap() > base, "{:?} > {base:?}", next.base);
}

#[test]
fn a_queue_within_one_round_s_noise_shows_in_the_rounds_at_one_limit_together() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    feed.settle_at(16, 8, 12);
    let base = feed.last().base;
    // Up to 19, one by one (reached now and then, not binding): above where
    // it measured, so no round teaches the unloaded run time.
    for _ in 0..3 {
        feed.until_decision(|feed, i| {
            let limit = feed.limit() as u64;
            let run = if i % 2 == 1 { 12 * MS } else { 8 * MS };
            let done = feed.now + 12 * MS / limit;
            sample(done - run, run, i % 4 == 0, false, limit as usize)
        });
    }
    assert_eq!(feed.limit(), 19);
    // 9 and 13 ms: a mean of 11, 19 x (1 - 10/11) = 1.7 waiting, within two
    // standard errors of one round (about 1.06 each). The round after the
    // change is not settled; the next one holds; the one after it, taken
    // with it, shows the queue beyond two standard errors of theirs (0.85):
    // cut.
    let first = feed.round_of(9 * MS, 13 * MS, false);
    assert_eq!((first.limit, first.base), (19, base));
    let second = feed.round_of(9 * MS, 13 * MS, false);
    assert_eq!((second.limit, second.base), (19, base));
    let pooled = feed.round_of(9 * MS, 13 * MS, false);
    assert!(pooled.limit < 19, "{pooled:?}");
}

#[test]
fn a_large_queue_cuts_at_once() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    feed.settle_at(16, 8, 12);
    // A mean of 12.5 ms: 16 x (1 - 10/12.5) = 3.2 waiting, above three
    // standard errors (about 0.9 each, of a queue of none: the unloaded run
    // time's noise): 16 - 3.2 + one and a half standard errors, 14.
    assert_eq!(feed.round_of(10_500, 14_500, true).limit, 14);
}

#[test]
fn a_round_s_noise_grows_with_its_run_time() {
    // The rule's "the queue": its standard error is that of a round of no
    // queue at the unloaded run time's coefficient of variation. Samples of
    // 5 and 15 ms: a mean of 10 that varies by half of it.
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    feed.settle_at(16, 5, 15);
    // A mean of 15 ms: 16 x (1 - 10/15) = 5.3 waiting. Against the spread as
    // it is at 10 ms (5 ms), that is beyond three standard errors (4.5);
    // scaled to 15 ms (7.5), within three (6.7): it holds, to be confirmed.
    let held = feed.round_of(10 * MS, 20 * MS, true);
    assert_eq!(held.mean_run, Some(Duration::from_millis(15)));
    assert_eq!(held.limit, 16);
}

#[test]
fn a_queue_when_the_limit_was_not_reached_comes_off_the_limit() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    feed.settle_at(16, 10, 10);
    // 8 in flight of 16 allowed (the source is slower), and they wait:
    // 8 x (1 - 10/15) = 2.7. The source held some back, so the limit comes
    // down by the queue, not to 8 less it.
    let decision = feed.over(15 * MS, 15 * MS, false, 8);
    assert_eq!(decision.limit, 13);
}

#[test]
fn below_the_ceiling_it_closes_in_holds_and_probes() {
    // A rise at 64: measured at 32, the service took 42.7 of 64, so the
    // ceiling is 43.
    let (mut feed, _) = Feed::rise_at_64(10, 15);
    // Closes in on the ceiling by half the gap each two binding rounds (the
    // first rounds measure at 32); a queue above 40 makes that limit the
    // ceiling, and so on down to the knee.
    let mut limits = Vec::new();
    for _ in 0..12 {
        let limit = feed.limit();
        // The service takes 40: beyond, they wait (Little's law).
        let mean = if limit > 40 {
            10.0 * limit as f64 / 40.0
        } else {
            10.0
        };
        limits.push(
            feed.round_of((mean * 1e3) as u64, (mean * 1e3) as u64, true)
                .limit,
        );
    }
    assert!(limits.iter().all(|&limit| limit <= 43), "{limits:?}");
    // Then it holds at the knee and tries one more (the ceiling) every 160
    // samples (4 rounds of 40): one item queues, and it is back at once.
    let knee = limits.iter().position(|&limit| limit == 40).unwrap();
    let held = &limits[knee..];
    assert!(
        held.iter().all(|&limit| limit == 40 || limit == 41),
        "{limits:?}"
    );
    let probes = held.iter().filter(|&&limit| limit == 41).count();
    assert!(probes >= 1 && probes * 4 <= held.len() + 3, "{limits:?}");
}

#[test]
fn a_stale_ceiling_is_climbed_past_one_then_two_four_eight() {
    let (mut feed, _) = Feed::rise_at_64(10, 15);
    // The knee at 40, as before.
    while feed.limit() != 40 || feed.round(10).limit != 40 {
        let limit = feed.limit();
        let mean = if limit > 40 {
            10.0 * limit as f64 / 40.0
        } else {
            10.0
        };
        feed.round_of((mean * 1e3) as u64, (mean * 1e3) as u64, true);
    }
    // The service now takes many more: the probe at 41 shows no queue, and
    // each binding round from then on climbs: +1, +2, +4, +8.
    let mut limits = Vec::new();
    while limits.len() < 6 {
        let decision = feed.round(10);
        if decision.limit > 41 || !limits.is_empty() {
            limits.push(decision.limit);
        }
    }
    let steps: Vec<_> = limits.windows(2).map(|pair| pair[1] - pair[0]).collect();
    assert_eq!(&limits[..1], [42], "{limits:?}");
    assert!(
        steps
            .iter()
            .all(|&step| step == 0 || step.is_power_of_two()),
        "{limits:?}"
    );
    assert!(*limits.last().unwrap() >= 42 + 2 + 4, "{limits:?}");
}

#[test]
fn back_pressure_backs_off_and_refusals_of_the_burst_lower_the_ceiling() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(32));
    let t = feed.now;
    // A refusal: 32 x 0.9 = 28.8, so 28.
    let backoff = feed.until_decision(|_, _| sample(t, MS, true, true, 32));
    assert!(backoff.overload && backoff.mean_run.is_none());
    assert_eq!(backoff.limit, 28);
    // Refusals of items started before it: each says the service took one
    // fewer than 32. After 5 in all, it took 27: the limit goes below 28.
    for _ in 0..3 {
        feed.aimd.sample(&sample(t - MS, MS, true, true, 32));
        assert_eq!(feed.limit(), 28);
    }
    feed.aimd.sample(&sample(t - MS, MS, true, true, 32));
    assert_eq!(feed.limit(), 27);
    // Refusals of items started after the back-off are new news: below the
    // level, once more than the base rate explains.
    let refused = feed.until_decision(|_, _| sample(t + 5 * MS, MS, true, true, 27));
    assert!(refused.overload);
    assert_eq!(feed.limit(), 24);
}

#[test]
fn slow_start_past_a_refusing_service_comes_back_at_once() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(1));
    feed.slow_start_to(64, 10);
    // A service that refuses beyond 32. The doubling takes effect one
    // completion at a time: each of the 32 items running completes and
    // starts two, one of which the service refuses at once. Four refusals
    // in eight calls are more than a base rate explains: back-pressure at
    // the limit in force, 32 + 8 = 40, cut to 36, long before 64.
    let t = feed.now;
    let mut refused = 0;
    for i in 0..32 {
        feed.aimd
            .sample(&sample(t - 10 * MS + i, 10 * MS, false, false, 32));
        feed.aimd.sample(&sample(t + i, 1, true, true, 64));
        refused += 1;
        if feed.last().overload {
            break;
        }
    }
    assert_eq!(refused, 4);
    assert_eq!(feed.limit(), 36);
}

#[test]
fn a_round_back_pressure_cut_short_leaves_nothing_to_slow_start_s_figure() {
    // At its lowest limit back-pressure cannot lower it, and slow start goes
    // on; each refusal starts the round again. The 100 ms completion of each
    // round cut short goes with it: slow start's first figure is the full
    // round of 10 ms that follows, not a pile of 100 ms left over.
    let mut feed = Feed::new(Aimd::new(2, 64));
    for _ in 0..20 {
        let t = feed.now;
        feed.aimd.sample(&sample(t, 100 * MS, true, false, 2));
        feed.now = t + 100 * MS;
        let refused = feed.until_decision(|feed, _| sample(feed.now, MS, true, true, 2));
        assert!(refused.overload);
        assert_eq!(refused.limit, 2);
    }
    let t = feed.now;
    let first = feed.until_decision(|_, i| sample(t + i as u64, 10 * MS, true, false, 2));
    assert!(!first.overload);
    assert_eq!(first.base, Some(Duration::from_millis(10)));
}

#[test]
fn back_pressure_outside_a_burst_from_before_a_change_is_not_news() {
    // A rise at 64, measured at 32 ...
    let (mut feed, _) = Feed::rise_at_64(10, 15);
    assert_eq!(feed.limit(), 32);
    // ... and a refusal of an item that ran under 64: the cut acted on it.
    feed.aimd
        .sample(&sample(feed.now - 20 * MS, MS, true, true, 64));
    assert_eq!(feed.limit(), 32);
}

#[test]
fn a_rare_slow_item_is_an_outlier_not_a_queue() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(32));
    feed.settle_at(32, 10, 10);
    // One item in each round of 33 runs 200 ms: left out of the mean, and
    // two are within what a service can have.
    for _ in 0..4 {
        let decision = feed.until_decision(|feed, i| {
            let run = if i % 20 == 7 { 200 * MS } else { 10 * MS };
            let done = feed.now + 10 * MS / 32;
            sample(done - run, run, true, false, 32)
        });
        assert!(decision.limit >= 32, "{decision:?}");
        assert_eq!(decision.mean_run, Some(Duration::from_millis(10)));
    }
}

#[test]
fn outliers_are_not_a_queue_however_many() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(32));
    feed.settle_at(32, 10, 10);
    // 6 of a round's samples ran 100 ms (a service whose slow requests are
    // common): left out of the mean, which shows no queue. (A rule that took
    // more outliers than usual for starved items cut such services by half.)
    for _ in 0..4 {
        let decision = feed.until_decision(|feed, i| {
            let run = if i % 6 == 0 { 100 * MS } else { 10 * MS };
            let done = feed.now + 10 * MS / 32;
            sample(done - run, run, true, false, 32)
        });
        assert!(decision.limit >= 32, "{decision:?}");
    }
}

#[test]
fn a_round_of_nothing_but_outliers_ends_and_cuts() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    feed.settle_at(16, 10, 10);
    // Every item runs 100 ms: they all are outliers; the round still ends,
    // counted as 4 times the unloaded run time: 16 x (1 - 1/4) = 12 waiting,
    // down to 4.
    let decision = feed.round(100);
    assert_eq!(decision.limit, 4);
}

#[test]
fn completions_slower_than_those_in_flight_are_not_a_queue() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(32));
    feed.settle_at(32, 10, 10);
    // 32 in flight, each 10 ms as usual, but only 32 complete in 40 ms:
    // completions come in bursts (or the source paused). The run time shows
    // no queue, and the rate alone does not make one: a rule that read the
    // rate cut such rounds to a quarter.
    let decision = feed.over(40 * MS, 10 * MS, true, 32);
    assert!(decision.limit >= 32, "{decision:?}");
    assert_eq!(decision.mean_run, Some(Duration::from_millis(10)));
}

#[test]
fn slow_start_s_figure_leaves_out_items_slow_against_the_median() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(1));
    // A slow first item: slow start's figure is 200 ms.
    let t = feed.now;
    let first = feed.until_decision(|_, _| sample(t, 200 * MS, true, false, 1));
    assert_eq!(first.limit, 2);
    assert_eq!(first.base, Some(Duration::from_millis(200)));
    // Two items of 10 ms, started after the doubling, are compared with it.
    let t = feed.now;
    let second = feed.until_decision(|_, i| sample(t + i as u64, 10 * MS, true, false, 2));
    assert_eq!(second.limit, 4);
    // The figure of 200, 10 and 10 ms: the median is 10 ms, and 200 ms is
    // more than 4 times it, an outlier, left out. (Against their mean, 73 ms,
    // it would not be, and the figure would be 73 ms.)
    let t = feed.now;
    let third = feed.until_decision(|_, i| sample(t + i as u64, 10 * MS, true, false, 4));
    assert_eq!(third.limit, 8);
    assert_eq!(third.base, Some(Duration::from_millis(10)));
}

#[test]
fn a_slow_first_item_within_the_spread_stays_in_slow_start_s_figure() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(1));
    assert_eq!(feed.round(16).limit, 2);
    assert_eq!(feed.round(10).limit, 4);
    // 16 ms against six of 10 is not 4 times the median: all seven count,
    // (16 + 6 x 10) / 7 ms.
    assert_eq!(feed.round(10).limit, 8);
    let base = feed.last().base.unwrap().as_secs_f64();
    assert!((base - 0.076 / 7.0).abs() < 1e-9, "{base}");
}

#[test]
fn a_round_that_does_not_bind_ends_slow_start_and_is_measured() {
    // Slow start's rounds show 8 ms (6 and 10: its rounds favour the fast
    // items); the settled ones show 8.5 ms (7 and 10).
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(32));
    // Slow start ends at a round that does not bind: the source, not the
    // limit, holds the load back, and the unloaded run time is measured.
    assert_eq!(feed.round_of(6 * MS, 10 * MS, false).limit, 32);
    assert_eq!(feed.last().base, Some(Duration::from_millis(8)));
    // The round after it is not settled; three rounds' worth after that, the
    // measured 8.5 ms replaces slow start's figure, not averages with it.
    let mut bases = Vec::new();
    for _ in 0..5 {
        let decision = feed.round_of(7 * MS, 10 * MS, false);
        assert_eq!(decision.limit, 32);
        bases.push(decision.base.unwrap());
    }
    assert_eq!(bases[..3], [Duration::from_millis(8); 3]);
    assert_eq!(bases[3..], [Duration::from_micros(8_500); 2]);
}

#[test]
fn a_measurement_of_more_than_1024_run_times_is_of_its_latest_1024() {
    // At 512, three rounds' worth is 1 536 samples: the first settled round's
    // 20 ms make way for the 10 ms of the two after it. (All of them would
    // make a figure of 13.3 ms.)
    let mut feed = Feed::new(Aimd::new(1, 1024).starting_at(512));
    assert_eq!(feed.round_of(12 * MS, 12 * MS, false).limit, 512);
    // The round after slow start is not settled.
    let mut bases = Vec::new();
    for ms in [30, 20, 10, 10] {
        let decision = feed.round_of(ms * MS, ms * MS, false);
        assert_eq!(decision.limit, 512);
        bases.push(decision.base.unwrap());
    }
    assert_eq!(bases[..3], [Duration::from_millis(12); 3]);
    assert_eq!(bases[3], Duration::from_millis(10));
}

#[test]
fn the_room_for_run_times_reserved_when_built_is_all_it_ever_uses() {
    // Slow start's rounds up to 2 048, a measurement there (6 144 samples),
    // back-pressure during it and a measurement again: no room added, so
    // how a run goes never decides how often it allocates.
    let mut feed = Feed::new(Aimd::new(1, 4096).starting_at(1));
    let room = feed.aimd.room();
    assert_eq!(room.map(|room| room >= 1024), [true; 3], "{room:?}");
    feed.slow_start_to(2048, 10);
    for _ in 0..5 {
        assert_eq!(feed.round_of(10 * MS, 10 * MS, false).limit, 2048);
    }
    let t = feed.now;
    feed.aimd.sample(&sample(t, MS, true, true, 2048));
    for _ in 0..5 {
        feed.round_of(10 * MS, 10 * MS, false);
    }
    assert_eq!(feed.aimd.room(), room);
    // A small `max`, and slow start's rounds with outliers in them: a round
    // ends at `limit` samples that count or `limit` outliers, so it holds up
    // to twice `limit` run times.
    let mut feed = Feed::new(Aimd::new(1, 4).starting_at(4));
    let room = feed.aimd.room();
    feed.round(10);
    for _ in 0..3 {
        feed.round_of(10 * MS, 100 * MS, true);
    }
    assert_eq!(feed.aimd.room(), room);
}

#[test]
fn while_measuring_a_limit_the_source_sets_grows_as_it_is_reached() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    // Not reached: slow start ends, and the unloaded run time is measured.
    assert_eq!(feed.round_of(10 * MS, 10 * MS, false).limit, 16);
    // Reached by a quarter of the samples while it measures: the load is the
    // source's, and the limit grows by one as it would measured (a limit held
    // for the measurement would hold the source back).
    let limits: Vec<_> = (0..3).map(|_| feed.reached_one_in(4).limit).collect();
    assert_eq!(limits, [17, 18, 19]);
}

/// Slow start at 16 on samples of 8 and 12 ms (10 ms, varying by a fifth),
/// then doubled to 32 at `feed.now`.
fn doubled_to_32() -> (Feed, u64) {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    assert_eq!(feed.round_of(8 * MS, 12 * MS, true).limit, 32);
    assert_eq!(feed.last().base, Some(Duration::from_millis(10)));
    let doubled = feed.now;
    (feed, doubled)
}

#[test]
fn in_slow_start_the_items_started_before_a_doubling_are_not_in_the_round() {
    let (mut feed, doubled) = doubled_to_32();
    // The first 32 completions are of items started before the doubling, at
    // 10 ms as before. Counted, they would make a round with no queue, and
    // slow start would double again.
    for i in 0..32 {
        feed.aimd
            .sample(&sample(doubled - 9 * MS + i, 10 * MS, true, false, 32));
    }
    assert_eq!(feed.decisions(), 1);
    // The items started after it queued: 20 ms, 16 of 32 waiting.
    let cut = feed.until_decision(|_, i| sample(doubled + i as u64, 20 * MS, true, false, 32));
    assert_eq!(feed.decisions(), 2);
    assert_eq!(cut.mean_run, Some(Duration::from_millis(20)));
    assert!(cut.limit < 32, "{cut:?}");
}

#[test]
fn in_slow_start_the_items_started_before_a_doubling_teach_its_figure() {
    let (mut feed, doubled) = doubled_to_32();
    // 32 items started before the doubling ran 14 ms; the 32 of the round, 10.
    for i in 0..32 {
        feed.aimd
            .sample(&sample(doubled - 13 * MS + i, 14 * MS, true, false, 32));
    }
    let grown = feed.until_decision(|_, i| sample(doubled + i as u64, 10 * MS, true, false, 32));
    assert_eq!(grown.limit, 64);
    // The round is compared with the figure of every run time before it:
    // (16 × 10 + 32 × 14) / 48 = 12.67 ms.
    let base = grown.base.unwrap().as_secs_f64();
    assert!((base - 0.038 / 3.0).abs() < 1e-9, "{base}");
}

#[test]
fn the_unloaded_run_time_learns_only_where_no_queue_can_hide() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    feed.settle_at(16, 8, 12);
    let base = feed.last().base.unwrap();
    // Up to 19, one by one (reached now and then, not binding).
    for _ in 0..3 {
        feed.until_decision(|feed, i| {
            let limit = feed.limit() as u64;
            let run = if i % 2 == 1 { 12 * MS } else { 8 * MS };
            let done = feed.now + 12 * MS / limit;
            sample(done - run, run, i % 4 == 0, false, limit as usize)
        });
    }
    assert_eq!(feed.limit(), 19);
    // Above 16, where it learned, rounds a little slower (within the noise)
    // teach it nothing: a queue that size could hide there.
    for _ in 0..6 {
        let decision = feed.round_of(8_500, 12_500, false);
        assert!(decision.limit > 16, "{decision:?}");
        assert_eq!(decision.base, Some(base));
    }
    // Rounds faster by more than the noise do: it was too high.
    for _ in 0..3 {
        feed.round_of(5 * MS, 7 * MS, false);
    }
    assert!(feed.last().base.unwrap() < base);
}

#[test]
fn only_a_settled_round_teaches_the_unloaded_run_time() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    feed.settle_at(16, 8, 12);
    let base = feed.last().base;
    // Reached now and then: up to 17, a change of the limit.
    assert_eq!(feed.reached_one_in(4).limit, 17);
    // The round after the change (after its warm-up) is not settled: it
    // favours the fast items, and however fast it is, it teaches nothing.
    let first = feed.round_of(5 * MS, 7 * MS, false);
    assert_eq!((first.limit, first.base), (17, base));
    // The next one is: faster by more than the noise, it lowers the figure.
    let second = feed.round_of(5 * MS, 7 * MS, false);
    assert!(second.base < base, "{second:?} against {base:?}");
}

#[test]
fn the_same_run_time_at_half_the_limit_moves_the_unloaded_one() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(32));
    feed.settle_at(32, 10, 10);
    // The service's run time doubles with no change of load: at 32, 16
    // seem to wait: cut to 16 ...
    assert_eq!(feed.round(20).limit, 16);
    // ... and at 16, half of 32, it is still 20 ms, where a queue of 16
    // would have left: not a queue. 20 ms is the new unloaded run time, and
    // the limit goes back to 32, where it all began.
    let rebased = feed.round(20);
    assert_eq!(rebased.base, Some(Duration::from_millis(20)));
    assert_eq!(rebased.limit, 32);
}

#[test]
fn cuts_to_half_the_limit_that_leave_the_run_time_as_it_was_move_the_unloaded_one() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(32));
    feed.settle_at(32, 10, 10);
    // 12 ms with the unloaded figure at 10: at 32, 5.3 seem to wait. Each
    // cut is less than a fifth, so no two in a row are "large".
    let mut limits = Vec::new();
    while feed.limit() > 16 {
        let decision = feed.round(12);
        assert_eq!(decision.base, Some(Duration::from_millis(10)));
        limits.push(decision.limit);
    }
    assert_eq!(limits, [27, 23, 19, 16]);
    // At 16, half of 32, the run time has not moved in 16 samples: the queue
    // that began the cuts was the unloaded figure's error. 12 ms it is, and
    // the limit goes back to 32.
    let rebased = feed.round(12);
    assert_eq!(rebased.base, Some(Duration::from_millis(12)));
    assert_eq!(rebased.limit, 32);
}

#[test]
fn a_round_with_no_queue_forgets_the_cuts() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(32));
    feed.settle_at(32, 10, 10);
    // A queue of one at 32 (10.3 ms): cut to 31, and that round begins the
    // cuts ...
    assert_eq!(feed.round_of(10_300, 10_300, true).limit, 31);
    // ... until a round with no queue: the cut worked, it is forgotten.
    assert_eq!(feed.round(10).limit, 31);
    // The service now takes 16: at 31, 15.5 wait, and this round begins the
    // cuts.
    assert_eq!(feed.round(20).limit, 16);
    // At 16, half of 32, a little above the unloaded run time: a small
    // queue, cut. Against the forgotten round of 10.3 ms, 10.5 would have
    // kept more than half of its excess, and moved the unloaded run time to
    // 10.5 and the limit back to 32.
    let decision = feed.round_of(10_500, 10_500, true);
    assert_eq!(decision.base, Some(Duration::from_millis(10)));
    assert!(decision.limit < 16, "{decision:?}");
}

#[test]
fn cuts_to_half_the_limit_that_bring_the_run_time_down_were_a_queue() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(32));
    feed.settle_at(32, 10, 10);
    // The service now takes 16: at 32, 16 wait (20 ms), and at 16 none do.
    assert_eq!(feed.round(20).limit, 16);
    for _ in 0..3 {
        let decision = feed.round(10);
        assert_eq!(decision.base, Some(Duration::from_millis(10)));
        // It closes in on the ceiling, 32, rather than going back to it.
        assert!(decision.limit < 32, "{decision:?}");
    }
}

#[test]
fn the_limit_stays_within_min_and_max() {
    let mut feed = Feed::new(Aimd::new(3, 10).starting_at(4));
    let t = feed.now;
    // Back-pressure never takes it below `min`.
    feed.until_decision(|_, _| sample(t, MS, true, true, 4));
    assert_eq!(feed.limit(), 3);
    feed.until_decision(|_, _| sample(t + 10 * MS, MS, true, true, 3));
    assert_eq!(feed.limit(), 3);
    // Slow start never takes it above `max`.
    let mut feed = Feed::new(Aimd::new(3, 10));
    let limits: Vec<_> = (0..3).map(|_| feed.round(10).limit).collect();
    assert_eq!(limits, [6, 10, 10]);
}

#[test]
fn the_history_keeps_the_latest_rounds() {
    let mut aimd = Aimd::new(1, 1_000).starting_at(1).with_history(3);
    let history = aimd.history().unwrap();
    let mut now = 0;
    for _ in 0..5 {
        for _ in 0..aimd.initial() {
            now += 10 * MS;
            aimd.sample(&sample(now - 10 * MS, 10 * MS, true, false, 1));
        }
    }
    // Refusals until one is more than the base rate explains: a back-off.
    for _ in 0..100 {
        aimd.sample(&sample(now + 1, 1, true, true, 32));
        if history.rounds().last().is_some_and(|round| round.overload) {
            break;
        }
    }
    let rounds = history.rounds();
    let limits: Vec<_> = rounds.iter().map(|round| round.limit).collect();
    // The cut is from the limit in force: the doubling to 32 takes effect
    // one completion at a time, 16 and one for each of the refusals, 20.
    assert_eq!(limits, [16, 32, 18]);
    assert!(rounds[2].overload && rounds[2].mean_run.is_none());
    assert_eq!(rounds[1].mean_run, Some(Duration::from_millis(10)));
    assert_eq!(rounds[1].base, Some(Duration::from_millis(10)));
}

#[test]
#[should_panic(expected = "`Aimd::new` needs `min >= 1`")]
fn a_min_of_zero_panics() {
    let _ = Aimd::new(0, 4);
}

#[test]
#[should_panic(expected = "`Aimd::new` needs `min <= max`, got 5 > 4")]
fn min_above_max_panics() {
    let _ = Aimd::new(5, 4);
}

#[test]
#[should_panic(expected = "`Aimd::tolerance` must be above 1")]
fn a_tolerance_of_one_panics() {
    let _ = Aimd::new(1, 4).tolerance(1.0);
}

#[test]
#[should_panic(expected = "`Aimd::backoff` must be between 0 and 1")]
fn a_backoff_of_one_panics() {
    let _ = Aimd::new(1, 4).backoff(1.0);
}
