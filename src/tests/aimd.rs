//! `Aimd` on scripted samples: slow start, growth only when the limit is
//! reached, one back-off per burst of back-pressure, a rise confirmed over two
//! rounds and scaled, a single slow item that does not halve the limit, the
//! clamps, stale samples ignored, a moved baseline, the history.

use std::time::Duration;

use crate::adaptive::{Controller, Sample};
use crate::aimd::Aimd;

const BASE: u64 = 10;

/// A sample of an item that started at `started` ms and ran `run` ms.
fn sample(started: u64, run: u64, saturated: bool, overload: bool) -> Sample {
    Sample {
        started: Duration::from_millis(started),
        run: Duration::from_millis(run),
        overload,
        saturated,
        limit: 0,
    }
}

/// Feeds one round: as many samples as the limit, of items that started at
/// `at` ms and ran `run` ms. Returns the limit after it.
fn round(aimd: &mut Aimd, at: u64, run: u64, saturated: bool) -> usize {
    // `initial` is the current limit.
    let samples = aimd.initial();
    let mut limit = 0;
    for _ in 0..samples {
        limit = aimd.sample(&sample(at, run, saturated, false));
    }
    limit
}

#[test]
fn slow_start_doubles_each_saturated_round_up_to_max() {
    let mut aimd = Aimd::new(1, 50);
    let mut limits = Vec::new();
    for step in 0..8 {
        limits.push(round(&mut aimd, step * BASE, BASE, true));
    }
    assert_eq!(limits, [2, 4, 8, 16, 32, 50, 50, 50]);
}

#[test]
fn a_limit_not_reached_never_grows() {
    let mut aimd = Aimd::new(4, 64);
    for step in 0..10 {
        assert_eq!(round(&mut aimd, step * BASE, BASE, false), 4);
    }
    // Reached in half the samples of a round: that is enough.
    for _ in 0..2 {
        aimd.sample(&sample(100, BASE, true, false));
        aimd.sample(&sample(100, BASE, false, false));
    }
    assert_eq!(aimd.initial(), 8);
}

#[test]
fn back_pressure_halves_at_once_and_once_per_burst() {
    let mut aimd = Aimd::new(2, 64).starting_at(32);
    // The refusals of the items in flight at the back-off: one decision.
    assert_eq!(aimd.sample(&sample(0, 1, true, true)), 16);
    for _ in 0..31 {
        assert_eq!(aimd.sample(&sample(0, 1, true, true)), 16);
    }
    // After them, a new refusal is new news.
    assert_eq!(aimd.sample(&sample(5, 1, true, true)), 8);
    // Never below `min`.
    let mut aimd = Aimd::new(3, 64).starting_at(4);
    assert_eq!(aimd.sample(&sample(0, 1, true, true)), 3);
    assert_eq!(aimd.initial(), 3);
}

#[test]
fn a_rise_must_show_in_two_rounds_and_scales_the_decrease() {
    // Each round starts after the previous one's last completion.
    let mut aimd = Aimd::new(1, 256).starting_at(40);
    assert_eq!(round(&mut aimd, 0, BASE, true), 80, "slow start");
    assert_eq!(
        round(&mut aimd, 100, 12, true),
        80,
        "one round of rise: hold"
    );
    // Confirmed: 80 x 10/12 = 66.
    assert_eq!(round(&mut aimd, 200, 12, true), 66);
    // Slow start is over: growth is one per round.
    assert_eq!(round(&mut aimd, 300, BASE, true), 67);
    // A large rise halves (the factor is at least 0.5) ...
    round(&mut aimd, 400, 40, true);
    assert_eq!(round(&mut aimd, 500, 40, true), 33);
    // ... a small one trims at least 10 %.
    round(&mut aimd, 600, 11, true);
    assert_eq!(round(&mut aimd, 700, 11, true), 29);
    // A rise that does not come back is forgotten.
    round(&mut aimd, 800, 20, true);
    assert_eq!(round(&mut aimd, 900, BASE, true), 30);
}

/// One round of 8 in which one item takes 100 times the usual run time.
fn round_with_one_slow_item(aimd: &mut Aimd, at: u64) -> usize {
    aimd.sample(&sample(at, 100 * BASE, false, false));
    let mut limit = 0;
    for _ in 1..aimd.initial() {
        limit = aimd.sample(&sample(at, BASE, false, false));
    }
    limit
}

#[test]
fn a_single_slow_item_does_not_halve_the_limit() {
    let mut aimd = Aimd::new(1, 256).starting_at(8);
    round(&mut aimd, 0, BASE, false);
    // Alone, it changes nothing.
    assert_eq!(round_with_one_slow_item(&mut aimd, 100), 8);
    assert_eq!(round(&mut aimd, 2_000, BASE, false), 8);
    // One in two rounds in a row trims the limit, counted at 3 x the unloaded
    // run time: the mean is 12.5 ms, so 8 x 10/12.5.
    round_with_one_slow_item(&mut aimd, 3_000);
    assert_eq!(round_with_one_slow_item(&mut aimd, 5_000), 6);
}

#[test]
fn samples_started_before_the_last_change_are_ignored() {
    let mut aimd = Aimd::new(1, 256).starting_at(4);
    // The round ends at 10 ms: limit 8 from then on.
    assert_eq!(round(&mut aimd, 0, BASE, true), 8);
    // Late samples of items started before 10 ms say nothing.
    for _ in 0..20 {
        assert_eq!(aimd.sample(&sample(5, 100, true, false)), 8);
    }
    assert_eq!(round(&mut aimd, 10, BASE, true), 16);
}

#[test]
fn a_rise_that_stays_at_min_moves_the_baseline() {
    let mut aimd = Aimd::new(2, 64).starting_at(2);
    round(&mut aimd, 0, BASE, false);
    // The service became slower for good: at `min`, nothing lower to try.
    for step in 1..5 {
        assert_eq!(round(&mut aimd, step * 100, 50, false), 2);
    }
    // 50 ms is the new normal: reached limits grow again.
    assert_eq!(round(&mut aimd, 1_000, 50, true), 4);
}

#[test]
fn the_history_keeps_the_latest_rounds() {
    let mut aimd = Aimd::new(1, 1_000).with_history(3);
    let history = aimd.history().unwrap();
    for step in 0..5 {
        round(&mut aimd, step * BASE, BASE, true);
    }
    aimd.sample(&sample(100, 1, true, true));
    let rounds = history.rounds();
    let limits: Vec<_> = rounds.iter().map(|round| round.limit).collect();
    assert_eq!(limits, [16, 32, 16]);
    let last = rounds[2];
    assert!(last.overload && last.mean_run.is_none());
    assert_eq!(rounds[1].mean_run, Some(Duration::from_millis(BASE)));
    assert_eq!(rounds[1].base, Some(Duration::from_millis(BASE)));
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
