//! Slow start, growth and rises: the limit's way up, the measurement below a rise, the warm-up after a change.

#[allow(unused_imports)]
use super::*;

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
    // A refusal just before the measurement completes: 32 x 0.9, 28, and
    // what was measured at 32 is dropped.
    let t = feed.now;
    feed.aimd.sample(&sample(t, MS, true, true, 32));
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
