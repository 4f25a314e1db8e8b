//! The unloaded run time (of the fast requests where slow ones are common,
//! outliers cut again until a cut keeps the same, learned only where no
//! queue hides, lowered by a faster round, moved by a rise of the run time
//! itself, told by four samples where they are clear; cuts forgotten after
//! a round with no queue, but not while the run time stays), a measurement
//! of more than 1 024 run times (of its latest), the room for run times
//! reserved once, the clamps, the history, and the panics.

use std::time::Duration;

use crate::adaptive::Controller;
use crate::aimd::Aimd;

use super::{Feed, MS, sample};

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
fn common_slow_requests_leave_a_figure_of_the_fast_ones_wherever_the_median_falls() {
    // The rule, slow start: outliers are taken from the run times' lower
    // quartile up. A cold cache misses half its reads at 50 ms and serves the
    // rest in 4. Slow start's first round at 4 has two of each: its median
    // (the third) is a miss, against which nothing is an outlier (a figure of
    // 27 ms, against which a round's misses are outliers, its hits far
    // faster, and the next figure, of hits alone, a fall to a seventh); its
    // lower quartile (the second) is a hit, against which the misses are
    // outliers, as they are in every round after.
    let mut feed = Feed::new(Aimd::new(1, 256));
    assert_eq!(feed.limit(), 4);
    let t = feed.now;
    let first = feed.until_decision(|_, i| {
        let run = if i % 2 == 0 { 4 * MS } else { 50 * MS };
        sample(t + i as u64 * MS, run, true, false, 4)
    });
    assert_eq!(first.base, Some(Duration::from_millis(4)), "{first:?}");
}

#[test]
fn outliers_are_cut_again_until_a_cut_keeps_what_the_one_before_did() {
    // The rule, slow start: outliers are run times over four times the mean
    // of those kept. Run times of 1, 1, 1, 1, 3, 5, 7 and 10 ms: the first
    // cut, at four times the lower quartile (1 ms), keeps five (mean 1.4
    // ms); the next, at 5.6 ms, six (2 ms); then seven (2.71 ms) and all
    // eight (3.625 ms), where it stays. Two cuts alone would have left a
    // figure of 2 ms, against which the 10 ms one is an outlier.
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(8));
    let t = feed.now;
    let runs = [1, 1, 1, 1, 3, 5, 7, 10];
    let first = feed.until_decision(|_, i| sample(t + i as u64 * MS, runs[i] * MS, true, false, 8));
    assert_eq!(first.base, Some(Duration::from_micros(3_625)), "{first:?}");
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
    // cut is less than a fifth, so no two in a row are "large". The rounds
    // do not bind: in rounds that bind, what the service served would hold
    // the cuts (`throughput.rs`).
    let mut limits = Vec::new();
    while feed.limit() > 16 {
        let decision = feed.round_of(12 * MS, 12 * MS, false);
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
fn a_round_too_small_to_show_a_queue_forgets_no_cuts_while_the_run_time_stays() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(4));
    feed.settle_at(4, 10, 10);
    // More rounds at 4, so that the measurement has its 32 samples.
    for _ in 0..4 {
        feed.round_of(10 * MS, 10 * MS, false);
    }
    // The service's run time triples with no change of load: at 4, cut to
    // what the service would have taken, 1.
    assert_eq!(feed.round(30).limit, 1);
    // At 1 or 2 a round is too small to show a queue (all but one may
    // wait), but its run time is still the first round's, not the unloaded
    // one: the cuts are not forgotten, and four samples at half the limit or
    // less, clear of the midpoint (the run time is steady), tell: 30 ms it
    // is, and the limit goes back to 4, within four rounds.
    let rounds: Vec<_> = (0..4).map(|_| feed.round(30)).collect();
    let rebased = rounds
        .iter()
        .find(|round| round.base == Some(Duration::from_millis(30)));
    assert_eq!(rebased.map(|round| round.limit), Some(4), "{rounds:?}");
}

#[test]
fn a_steady_run_time_at_half_the_limit_tells_in_four_samples() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    feed.settle_at(16, 10, 10);
    // 30 ms at 16: cut to what the service would have taken, 5.
    assert_eq!(feed.round(30).limit, 5);
    // At 5, half of 16 or less: five samples of 30 ms against an unloaded
    // run time that never varied, clear of the midpoint (20 ms) long before
    // 16 samples. 30 ms it is, and the limit goes back to 16.
    let rebased = feed.round(30);
    assert_eq!(rebased.base, Some(Duration::from_millis(30)));
    assert_eq!(rebased.limit, 16);
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
    assert_eq!(limits, [8, 10, 10]);
}

#[test]
fn the_history_keeps_the_latest_rounds() {
    let mut aimd = Aimd::new(1, 1_000).starting_at(1).with_history(3);
    let history = aimd.history().unwrap();
    let mut now = 0;
    for _ in 0..5 {
        let limit = aimd.initial();
        for _ in 0..limit {
            now += 10 * MS;
            aimd.sample(&sample(now - 10 * MS, 10 * MS, true, false, limit));
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
    // The cut is from the limit in force when the refused items started:
    // the doubling to 32 takes effect one completion at a time, and they
    // started before any (the refusals' own completions raise it after
    // them): 16, 0.9 of which is 14.
    assert_eq!(limits, [16, 32, 14]);
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
