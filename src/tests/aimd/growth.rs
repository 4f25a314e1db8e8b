//! Growth: slow start (its doubling, its figure: outliers against the median,
//! the items a round leaves out, a round that does not bind), growth only when
//! reached (twice in a row, or now and then by one), the ceiling held, closed
//! in on and probed, a stale ceiling climbed past, and a limit the source sets
//! while measuring.

use std::time::Duration;

use crate::adaptive::Controller;
use crate::aimd::Aimd;

use super::{Feed, MS, sample};

#[test]
fn it_starts_at_four_within_min_and_max() {
    // The rule's start: 4 (not 1, so that one slow item does not hold the
    // stream; not 2, one doubling of two run times fewer), or the nearer
    // bound.
    assert_eq!(Aimd::new(1, 256).initial(), 4);
    assert_eq!(Aimd::new(1, 1).initial(), 1);
    assert_eq!(Aimd::new(1, 3).initial(), 3);
    assert_eq!(Aimd::new(5, 256).initial(), 5);
    assert_eq!(Aimd::new(1, 256).starting_at(1).initial(), 1);
    // A round at 4 is four samples.
    let mut feed = Feed::new(Aimd::new(1, 256));
    for _ in 0..3 {
        feed.aimd.sample(&sample(0, 10 * MS, true, false, 4));
    }
    assert_eq!(feed.decisions(), 0);
    feed.aimd.sample(&sample(0, 10 * MS, true, false, 4));
    assert_eq!(feed.last().limit, 8);
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
fn at_a_small_limit_a_ceiling_a_queue_set_is_probed_every_160_samples() {
    // A service that takes 2 at a time: found, then held at 2 below the
    // ceiling of 3. A probe queues an item of 3: one in 160 samples, every
    // 80 rounds of 2 (not every 32: at that rate the p95 of such a service
    // was half as high again as its unloaded one).
    let mut feed = Feed::new(Aimd::new(1, 256));
    let limits: Vec<_> = (0..400).map(|_| feed.serving(2, 15).limit).collect();
    let found = limits.iter().rposition(|&limit| limit == 1).unwrap() + 1;
    let mut cycle = vec![2; 80];
    cycle.push(3);
    for held in limits[found..].chunks_exact(81).take(3) {
        assert_eq!(held, cycle, "{limits:?}");
    }
}

#[test]
fn a_doubling_raises_the_limit_by_32_at_most_in_one_moment() {
    // The rule's paragraph on slow start: a doubling takes effect one
    // completion at a time, and by no more than 32 items in one moment.
    // Doubled from 64 to 128, 64 items complete with the same clock reading
    // (a timer's tick): the limit in force goes to 64 + 32, not to 128
    // before any of the new items is heard of.
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(64));
    assert_eq!(feed.round_of(8 * MS, 12 * MS, true).limit, 128);
    let doubled = feed.now;
    let tick = |i: u64| sample(doubled - 10 * MS, 10 * MS + i, true, false, 64);
    let moment: Vec<usize> = (0..64).map(|_| feed.aimd.sample(&tick(0))).collect();
    let mut expected: Vec<usize> = (65..=96).collect();
    expected.extend([96; 32]);
    assert_eq!(moment, expected);
    // The next moment goes on from there, up to the doubled limit.
    let next: Vec<usize> = (0..34).map(|_| feed.aimd.sample(&tick(1))).collect();
    let mut expected: Vec<usize> = (97..=128).collect();
    expected.extend([128; 2]);
    assert_eq!(next, expected);
}
