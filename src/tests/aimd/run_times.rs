//! Run times: outliers, items slower than those in flight, slow start's figure, the unloaded run time, the room for run times, the clamps, the history and the panics.

#[allow(unused_imports)]
use super::*;

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
    feed.aimd.sample(&sample(t, MS, true, true, 4));
    assert_eq!(feed.limit(), 3);
    feed.aimd.sample(&sample(t + 10 * MS, MS, true, true, 3));
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
    aimd.sample(&sample(now + 1, 1, true, true, 32));
    let rounds = history.rounds();
    let limits: Vec<_> = rounds.iter().map(|round| round.limit).collect();
    assert_eq!(limits, [16, 32, 28]);
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
