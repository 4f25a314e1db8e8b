//! What the service served: a cut for a queue in a round that binds goes no
//! lower than the items in flight the round that served the most (of the
//! last 8 that bound) would keep busy at the lowest run time known, rounded
//! down; a round whose run time is 1 / 0.6 times that round's forgets them.

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
