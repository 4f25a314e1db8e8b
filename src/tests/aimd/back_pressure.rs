//! Back-pressure: refusals more than the base rate explains back off (from
//! the limit in force), the refusals of a burst lower the ceiling, a
//! measurement starts again, a round cut short leaves nothing behind,
//! refusals from before a change are not news, a rise after back-pressure
//! that ended slow start counts beyond three standard errors (with no
//! figure yet), confirmed back-pressure that ended slow start is measured at
//! once (and a queue below the refusals found), refusals that too few
//! calls below can judge step the limit down by one, a refusal where
//! refusals last counted is that level found again (not checked again), and
//! a back-off is from the limit in force when the refused items started.

use std::time::Duration;

use crate::adaptive::Controller;
use crate::aimd::Aimd;

use super::{Feed, MS, sample};

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
    // starts two, one of which the service refuses at once. Five refusals
    // in ten calls are more than a base rate explains: back-pressure at the
    // limit in force when the fifth refused item started, 32 + 9 = 41 (five
    // completions and the four refusals before it raised it one each; its
    // own completion raises it to 42, after the service refused it), cut
    // to 36, long before 64.
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
    assert_eq!(refused, 5);
    assert_eq!(feed.limit(), 36);
}

#[test]
fn back_pressure_backs_off_from_the_limit_in_force_when_the_refused_items_started() {
    // Slow start at 32 doubles to 64, one completion at a time. Spawned,
    // each completion's task starts its items at once, so the items in
    // flight rise within a moment: 5 completions in one moment raise the
    // limit in force to 37, and 5 in the next to 42, while the service,
    // which takes 32, refuses the items the first moment started. They
    // found 37 in force, not the 42 in flight when their refusals came
    // back: back-pressure backs off from 37, to 33 (from 42 it would be 37).
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(1));
    feed.slow_start_to(64, 10);
    let first = feed.now;
    let mut in_flight = 32;
    for moment in [first, first + MS] {
        for i in 0..5 {
            in_flight += 1;
            let started = moment - 10 * MS + i;
            feed.aimd
                .sample(&sample(started, moment - started, false, false, in_flight));
        }
    }
    let backoff = feed.until_decision(|_, _| sample(first, MS + 1, true, true, in_flight));
    assert!(backoff.overload, "{backoff:?}");
    assert_eq!(backoff.limit, 33);
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
fn a_refusal_in_the_first_call_makes_no_later_one_back_pressure_by_itself() {
    // The base rate after one refused call of one is 1: the test takes it as
    // at most one half, so the answered calls after it are finite evidence,
    // and one more refusal among them is not back-pressure.
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    let t = feed.now;
    feed.aimd.sample(&sample(t, MS, true, true, 16));
    for i in 0..10 {
        feed.aimd.sample(&sample(t + i, 10 * MS, true, false, 16));
    }
    feed.aimd.sample(&sample(t + 10, MS, true, true, 16));
    assert_eq!(feed.decisions(), 0);
    assert_eq!(feed.limit(), 16);
}

/// Started at 32 and refused at once, with four refusals of the items then
/// in flight and one more after the back-off: the burst takes it to 24,
/// before any round.
fn refused_at_once_at_32() -> Feed {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(32));
    let t = feed.now;
    feed.until_decision(|_, _| sample(t, MS, true, true, 32));
    for _ in 0..4 {
        feed.aimd.sample(&sample(t - MS, MS, true, true, 32));
    }
    feed.until_decision(|_, _| sample(t + 5 * MS, MS, true, true, 27));
    feed
}

#[test]
fn a_rise_after_back_pressure_before_any_round_is_measured_at_what_the_service_took() {
    // Started at 32 and refused at once (a burst takes it to 24): slow start
    // ended before any round showed no rise. The rounds after it show none,
    // at 24 and 27 ...
    let mut feed = refused_at_once_at_32();
    assert_eq!(feed.limit(), 24);
    assert_eq!(feed.round_of(8 * MS, 12 * MS, true).limit, 27);
    assert_eq!(feed.round_of(8 * MS, 12 * MS, true).limit, 28);
    // ... and 15 ms at 28 is a clear rise: 9.3 waiting against 10 ms. It is
    // measured at what the service took, 28 - 9.3, not at the minimum (no
    // round of slow start set where a rise was last absent).
    let rise = feed.round(15);
    assert_eq!(rise.limit, 19, "{rise:?}");
}

#[test]
fn after_back_pressure_ended_slow_start_a_rise_counts_beyond_three_standard_errors() {
    // As above: refused at once at 32, then rounds at 24 and 27 of 8 and
    // 12 ms in turn (a figure of 10 ms, varying by 2). Then a round at 28,
    // after its warm-up, of `us` microseconds each.
    let at_28 = |us: u64| {
        let mut feed = refused_at_once_at_32();
        assert_eq!(feed.round_of(8 * MS, 12 * MS, true).limit, 27);
        assert_eq!(feed.round_of(8 * MS, 12 * MS, true).limit, 28);
        feed.round_of(us, us, true).limit
    };
    // The standard error of that round is 1.37 items, and three of them are
    // 4.12 waiting: 28 x (1 - 10/11.725). At 11.72 ms, within them: slow
    // start's rounds would take it for a rise (beyond one and a half), but
    // this one is taken as it is, and the figure is not. The limit grows
    // towards the ceiling (half the gap to 32).
    assert_eq!(at_28(11_720), 30);
    // At 11.73 ms, a rise: measured at what the service took, 28 - 4.13.
    assert_eq!(at_28(11_730), 24);
}

#[test]
fn refusals_that_too_few_calls_below_can_judge_step_the_limit_down_by_one() {
    // Held at its max of 20 from the start: no call ever ran with fewer in
    // flight, a bound of 3 in 32. One call in ten refused at 20 (at the
    // door, no run time): above that bound, never clearly. At the fifth
    // refusal (50 calls, more than the 32 below), the limit steps down to
    // 19 to learn the rate there: not back-pressure (no back-off to 18).
    let mut feed = Feed::new(Aimd::new(1, 20).starting_at(20));
    let mut limits = Vec::new();
    for call in 1..=50 {
        let done = feed.now + MS / 2;
        feed.now = done;
        if call % 10 == 0 {
            feed.aimd.sample(&sample(done, 0, true, true, 20));
            limits.push(feed.limit());
        } else {
            feed.aimd
                .sample(&sample(done - 10 * MS, 10 * MS, true, false, 20));
        }
    }
    assert_eq!(limits, [20, 20, 20, 20, 19]);
    let last = feed.last();
    assert_eq!((last.limit, last.overload), (19, false), "{last:?}");
}

#[test]
fn at_a_small_limit_a_ceiling_back_pressure_set_is_probed_within_32_rounds() {
    // A service that takes 3 at a time, 10 ms each, and refuses the rest at
    // once. Held at 3 below the ceiling its refusals set (4), the samples
    // alone would probe every 320 (107 rounds of 3); the refusal may have
    // been a base rate's, though, so the ceiling is tried every 32 rounds:
    // refused, and back at 3.
    let mut feed = Feed::new(Aimd::new(1, 256));
    let mut completions = 0;
    serving_3(&mut feed, 10 * MS, |_| {
        completions += 1;
        completions == 3_000
    });
    let rounds: Vec<_> = feed
        .history
        .rounds()
        .iter()
        .map(|round| (round.limit, round.overload))
        .collect();
    let mut cycle = vec![(3, false); 31];
    cycle.extend([(4, false), (3, true)]);
    let probed = rounds
        .iter()
        .position(|&round| round == (4, false))
        .unwrap();
    let held = &rounds[probed + 2..];
    assert!(held.len() > 3 * 33, "{rounds:?}");
    for cycle_seen in held.chunks_exact(33).take(3) {
        assert_eq!(cycle_seen, cycle, "{rounds:?}");
    }
}

/// A round of a service that takes 17 at a time, queues 16 more and
/// refuses beyond (the test feeds its refusals), with run times of 2, 6
/// and 22 ms in turn unloaded (10 ms, widely spread; the 22 ms ones are the
/// rule's outliers, over four times the others' 4 ms): beyond 17, all of
/// them wait, and each runs `limit / 17` times its own.
fn serving_17(feed: &mut Feed) -> super::Decision {
    feed.until_decision(|feed, i| {
        let limit = feed.limit() as u64;
        let run = [2, 6, 22][i % 3] * MS * limit.max(17) / 17;
        let done = feed.now + 22 * MS * limit.max(17) / 17 / limit;
        sample(done - run, run, true, false, limit as usize)
    })
}

#[test]
fn back_pressure_that_ended_slow_start_measures_a_queue_below_the_refusals_away() {
    // Slow start shows no rise up to 32 (its rounds of the service above,
    // and at 32 one of only the first 17's times) and its doubling to 64 is
    // refused: five refusals in as many calls, each of an item started once
    // the one before came back (and raised the limit by one), are
    // back-pressure at the limit in force when the fifth started, 36, cut
    // to 32; the refusals of two of the items then in flight, more than the
    // base rate explains (one), confirm it.
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(1));
    while feed.limit() < 32 {
        serving_17(&mut feed);
    }
    let t = feed.now;
    let doubled = feed.until_decision(|_, i| {
        let run = [2, 6, 22][i % 3] * MS;
        sample(t + i as u64 * MS, run, true, false, 32)
    });
    assert_eq!(doubled.limit, 64);
    let t = feed.now;
    let refused = feed.until_decision(|_, i| sample(t + i as u64, 1, true, true, 33 + i));
    assert!(refused.overload);
    assert_eq!(feed.limit(), 32);
    for _ in 0..2 {
        feed.aimd.sample(&sample(t - MS, MS, true, true, 64));
    }
    assert_eq!(feed.limit(), 32);
    // At 32, 15 wait: a round shows no rise beyond three standard errors
    // against slow start's figure; three rounds' worth measured together
    // stand clearly above it, as a queue makes them: measured again at 16,
    // where nothing waits, ...
    while feed.limit() == 32 {
        serving_17(&mut feed);
    }
    assert_eq!(feed.limit(), 16);
    while feed.limit() == 16 {
        serving_17(&mut feed);
    }
    // ... a figure clearly lower: 32 queued. The unloaded run time is the
    // one measured at 16 (its 2 and 6 ms samples, 4 ms: the 22 ms ones,
    // over four times the others' mean, are outliers), not the queued
    // one (7.5), and the ceiling is what the service took at 32 by it, with
    // one and a half standard errors more, and one: 22. The limit grows by
    // half the gap to just below it (19 at once), and holds there.
    let measured = feed.last();
    let base = measured.base.expect("measured");
    assert!(base < Duration::from_millis(10), "{measured:?}");
    assert_eq!(measured.limit, 19);
    let limits: Vec<_> = (0..6).map(|_| serving_17(&mut feed).limit).collect();
    assert_eq!(limits, [20, 21, 21, 21, 21, 21]);
    assert_eq!(feed.last().base, Some(base));
}

#[test]
fn slow_start_goes_on_after_a_measured_back_off_whose_level_passes() {
    // Slow start at 10 ms to 32, and its doubling refused as above: five
    // refusals, cut to 32, and two more of the burst, measured at 32. The
    // service refused those calls whatever the load, though: the figure
    // measured is slow start's, and the limit grows to just below the
    // ceiling the burst set (34: 36 less the three refusals, and one),
    // holds there and probes it. The probe passes (it binds, as its
    // warm-up did): the level goes, and slow start goes on from it, 68. (A
    // measurement after a rise would have decided that slow start is
    // over.)
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(1));
    feed.slow_start_to(32, 10);
    assert_eq!(feed.round(10).limit, 64);
    let t = feed.now;
    feed.until_decision(|_, i| sample(t + i as u64, 1, true, true, 33 + i));
    assert_eq!(feed.limit(), 32);
    for _ in 0..2 {
        feed.aimd.sample(&sample(t - MS, MS, true, true, 64));
    }
    let mut limits = vec![];
    while feed.limit() <= 34 {
        limits.push(feed.round(10).limit);
        assert!(limits.len() < 200, "{limits:?}");
    }
    assert_eq!(feed.last().base, Some(Duration::from_millis(10)));
    assert_eq!(limits[..4], [32, 32, 32, 33]);
    assert_eq!(limits[limits.len() - 2..], [34, 68]);
}

/// Samples of a service that takes 3 at a time and refuses the rest at
/// once, `run` microseconds each, until `until` says stop (given the feed
/// after each completion). As a stream does, it starts as many items as
/// the limit in force (what the controller last returned, which slow
/// start's doubling raises one completion at a time): those beyond 3 are
/// refused 1 µs later, then one of the 3 completes.
fn serving_3(feed: &mut Feed, run: u64, mut until: impl FnMut(&Feed) -> bool) {
    let mut in_force = feed.limit();
    for _ in 0..100_000 {
        let (limit, t) = (in_force, feed.now);
        for _ in 3..limit {
            feed.aimd.sample(&sample(t, 1, true, true, limit));
        }
        let running = limit.min(3);
        feed.now = t + run / running as u64;
        in_force = feed
            .aimd
            .sample(&sample(feed.now - run, run, true, false, running));
        if until(feed) {
            return;
        }
    }
    panic!("not done in 100,000 samples");
}

#[test]
fn a_refusal_where_refusals_last_counted_is_not_checked_again_after_a_queue_s_ceiling_went_stale() {
    // A service that takes 3 at a time, 10 ms each, and refuses the rest at
    // once: refusals at 4 set the level there, and the limit holds at 3.
    // Then one slow stretch (30 ms a call) reads as a queue at 3: the cut
    // sets a ceiling of 3, below the refusals' level. Back to 10 ms, the
    // probe of 3 shows no queue, that ceiling is stale, and the climb meets
    // the refusals at 4 again: the level found again, not one refusal alone,
    // so the limit holds below it rather than trying 4 again at once (which
    // cost a second refusal for each such climb).
    let mut feed = Feed::new(Aimd::new(1, 256));
    serving_3(&mut feed, 10 * MS, |feed| feed.decisions() > 60);
    assert_eq!(feed.limit(), 3, "{:?}", feed.history.rounds());
    let slow = feed.decisions();
    serving_3(&mut feed, 30 * MS, |feed| feed.limit() < 3);
    serving_3(&mut feed, 10 * MS, |feed| feed.limit() == 4);
    let climbed = feed.decisions();
    serving_3(&mut feed, 10 * MS, |feed| feed.decisions() > climbed + 20);
    let after: Vec<_> = feed.history.rounds()[climbed - 1..]
        .iter()
        .map(|round| (round.limit, round.overload))
        .collect();
    assert_eq!(after[..2], [(4, false), (3, true)], "{after:?}");
    assert!(
        after[2..].iter().all(|&round| round == (3, false)),
        "{after:?}"
    );
    assert!(slow < climbed);
}
