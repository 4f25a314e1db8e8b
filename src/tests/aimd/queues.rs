//! Queues: small ones confirmed or found to be noise, large ones cut at once, the ceiling held, probed and climbed past.

#[allow(unused_imports)]
use super::*;

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
