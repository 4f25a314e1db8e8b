//! What the service served: a cut for a queue in a round that binds goes no
//! lower than the items in flight the round that served the most (of the
//! last 8 that bound) would keep busy at the lowest run time known, rounded
//! down; a round whose run time is 1 / 0.6 times that round's forgets them,
//! and so does a run time that moved; rounds of a measurement are not
//! counted.

use std::time::Duration;

use crate::aimd::Aimd;

use super::{Feed, MS, sample};

/// Settled at 16 on 10 ms (the unloaded run time), then one round that
/// binds at 16 of `run` microseconds: no queue, held (the round before did
/// not bind), and what it served is known.
fn served_at_16(run: u64) -> Feed {
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(16));
    feed.settle_at(16, 10, 10);
    assert_eq!(feed.round_of(run, run, true).limit, 16);
    feed
}

#[test]
fn a_cut_for_a_queue_goes_no_lower_than_what_the_service_served() {
    // 12.5 ms at 16: 16 x (1 - 10/12.5) = 3.2 waiting, a large queue on a
    // steady service, which a round that does not bind cuts to 13 (below).
    // The round before served 16 / 10 ms, which keeps 16 busy at 10 ms:
    // held.
    let mut feed = served_at_16(10 * MS);
    assert_eq!(feed.round_of(12_500, 12_500, true).limit, 16);
    // Rounded down: at 10.01 ms it served what keeps 15.98 busy at 10 ms
    // (the unloaded figure), so the cut goes to 15.
    let mut feed = served_at_16(10_010);
    assert_eq!(feed.round_of(12_500, 12_500, true).limit, 15);
}

#[test]
fn a_round_that_does_not_bind_is_cut_as_the_queue_says() {
    // The source held items back: what it served says nothing of the
    // service. From 16 by the queue (3.2), and one and a half standard errors
    // (none on a steady service): 13.
    let mut feed = served_at_16(10 * MS);
    assert_eq!(feed.round_of(12_500, 12_500, false).limit, 13);
}

#[test]
fn what_was_served_above_the_limit_holds_it_and_never_raises_it() {
    // Cut to 13 by a round that did not bind, what the round at 16 served
    // is still known: a queue at 13 is held there, not raised to 16.
    let mut feed = served_at_16(10 * MS);
    assert_eq!(feed.round_of(12_500, 12_500, false).limit, 13);
    assert_eq!(feed.round_of(12_500, 12_500, true).limit, 13);
}

#[test]
fn a_run_time_five_thirds_as_long_forgets_what_was_served() {
    // 16.66 ms against the 10 ms round that served the most: its items each
    // served 60.02 % as much, within what a drifting speed does: held at 16.
    let mut feed = served_at_16(10 * MS);
    assert_eq!(feed.round_of(16_660, 16_660, true).limit, 16);
    // 16.67 ms: 59.99 %, a service that changed. The floor is what this round
    // served, 16 / 16.67 ms, at 10 ms: 9.6, below the queue's cut (16 less
    // 6.4 waiting: 10).
    let mut feed = served_at_16(10 * MS);
    assert_eq!(feed.round_of(16_670, 16_670, true).limit, 10);
}

#[test]
fn a_pause_that_holds_a_few_items_forgets_nothing() {
    // 12.5 ms (3.2 waiting), and one item in 6 held 200 ms by a pause:
    // outliers (past 4 x 10 ms), which put the round's mean with them far
    // past 16.67 ms. Left out, the run time is 12.5 ms: within what a
    // drifting speed does, and the floor holds the limit at 16.
    let mut feed = served_at_16(10 * MS);
    let paused = feed.until_decision(|feed, i| {
        let run = if i % 6 == 5 { 200 * MS } else { 12_500 };
        let done = feed.now + 12_500 / 16;
        sample(done - run, run, true, false, 16)
    });
    assert_eq!(paused.limit, 16);
}

#[test]
fn what_was_served_is_forgotten_after_8_rounds_that_bind() {
    // Rounds held at 16 by the floor serve less (16 / 12.5 ms each); after
    // the 10 ms round and 7 of them, the 8th pushes it out, and the cut goes
    // as the queue says.
    let mut feed = served_at_16(10 * MS);
    for _ in 0..7 {
        assert_eq!(feed.round_of(12_500, 12_500, true).limit, 16);
    }
    assert_eq!(feed.round_of(12_500, 12_500, true).limit, 13);
}

#[test]
fn rounds_that_measure_the_unloaded_run_time_are_not_what_was_served() {
    // A rise at 64 is measured at 32: rounds of 10 ms held there on purpose,
    // 3.2 items a millisecond, and provisional too (slow start's figure
    // stands until they are done), so either guard keeps them out.
    // Measured, the limit closes in on the ceiling (37).
    let (mut feed, rise) = Feed::rise_at_64(10, 15);
    assert_eq!(rise.limit, 32);
    for _ in 0..3 {
        assert_eq!(feed.round(10).limit, 32);
    }
    assert_eq!(feed.round(10).limit, 37);
    // The service now takes 24 at 10 ms: 15.4 ms at 37, 13 waiting, within
    // 1 / 0.6 of the measurement's run time. Only this round counts as
    // served: it keeps 24 busy at 10 ms, and the cut goes there. Counted,
    // the measurement's rounds would hold it at 32.
    assert_eq!(feed.serving(24, 10).limit, 24);
}

#[test]
fn a_run_time_that_moved_forgets_what_was_served() {
    // At 32 on 10 ms, the run time doubles with no change of load: the round
    // at 32 (20 ms) counts as served, and is cut to 16; at 16 the run time
    // is still 20 ms, which moves the unloaded one there, and the limit goes
    // back to 32.
    let mut feed = Feed::new(Aimd::new(1, 256).starting_at(32));
    feed.settle_at(32, 10, 10);
    assert_eq!(feed.round(20).limit, 16);
    let rebased = feed.round(20);
    assert_eq!(
        (rebased.limit, rebased.base),
        (32, Some(Duration::from_millis(20)))
    );
    // 25 ms at 32 against 20: 6.4 waiting, cut to 26. The rounds of 20 ms
    // before the move, kept, would make a floor of about 32 (what they
    // served, at the new unloaded run time) and hold the limit at 31.
    assert_eq!(feed.round(25).limit, 26);
}
