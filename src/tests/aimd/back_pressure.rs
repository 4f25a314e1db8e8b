//! Back-pressure: backing off, the refusals of a burst, a round it cuts short, news from before a change.

#[allow(unused_imports)]
use super::*;

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
    // A refusal of an item started after the back-off is new news.
    feed.aimd.sample(&sample(t + 5 * MS, MS, true, true, 27));
    assert_eq!(feed.limit(), 24);
}

#[test]
fn slow_start_past_a_refusing_service_comes_back_at_once() {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(1));
    feed.slow_start_to(64, 10);
    // A service that refuses beyond 32: the 32 items started into the
    // doubled limit are refused at once, one back-off and 31 of the same
    // burst: it took 64 - 32.
    let t = feed.now;
    feed.aimd.sample(&sample(t, MS, true, true, 64));
    for _ in 0..31 {
        feed.aimd.sample(&sample(t - 1, MS, true, true, 64));
    }
    assert_eq!(feed.limit(), 32);
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
