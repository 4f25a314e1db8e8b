//! Randomized schedules for fail fast in spawned mode (`try_bounded(..)
//! .spawn_on(..)`), contract point 21 with 16 to 19: whatever the budgets, the
//! order in which the tasks are polled and the gates opened (here or from
//! another thread), the consumer's pace, and which items fail (futures, or the
//! source at one position), the stream yields exactly the outputs the rule
//! allows for the first error (unordered: every output completed before it;
//! ordered: the complete prefix), then that error, then `None` forever; no
//! future is polled for the first time (but the item taken in the very section
//! that pulled the source's error) and nothing is pulled after the error was
//! made; once the cancelled tasks ran, every task ended and everything was
//! dropped exactly once, before the stream itself is dropped. The budgets hold
//! after every step, exactly (every budget full when the tasks are idle) until
//! the error.
//!
//! The tasks run on an executor the test steps at random (`TryRun` in
//! `support/fail_fast.rs`), so "after the error" is a point of the schedule.
//!
//! 256 cases per property by default; `PROPTEST_CASES=N` runs N.

use std::task::Poll;

use futures::stream::{FusedStream, Stream};
use proptest::prelude::*;
use support::{Failures, Fault, Got, TryCase, TryRun, TryStep, poll_once};

/// Budgets and length; `failures` picks where the run fails for each length.
fn case(
    failures: impl Fn(usize) -> BoxedStrategy<Failures>,
) -> impl Strategy<Value = (TryCase, u64)> {
    (
        1..=4usize,
        0..=3usize,
        prop::option::of(1..=6usize),
        1..=16usize,
    )
        .prop_flat_map(move |(workers, waiting, window, items)| {
            (
                Just(TryCase::new(workers, waiting, window, items)),
                failures(items),
                any::<u64>(),
            )
        })
        .prop_map(|(case, failures, seed)| (case.failing(failures), seed))
}

/// One to three failing futures.
fn future_failures(items: usize) -> BoxedStrategy<Failures> {
    prop::collection::vec(0..items, 1..=3)
        .prop_map(|futures| Failures {
            futures,
            source: None,
        })
        .boxed()
}

/// The source fails at one position, and up to two futures may fail too.
fn source_failures(items: usize) -> BoxedStrategy<Failures> {
    (0..items, prop::collection::vec(0..items, 0..=2))
        .prop_map(|(at, futures)| Failures {
            futures,
            source: Some(at),
        })
        .boxed()
}

fn run(case: TryCase, seed: u64) {
    let mut run = TryRun::new(case.clone(), Fault::None, seed);
    assert_eq!(run.run_to_end(), TryStep::Ended, "{case:?}");

    // Outputs, then the first error made, then the end.
    let error = run
        .journal
        .first_error()
        .expect("an item always fails before the end");
    let (end, before) = run.got.split_last().unwrap();
    assert_eq!(end, &Got::End);
    assert_eq!(
        before.last(),
        Some(&Got::Err(error)),
        "the first error, last: {:?} ({case:?})",
        run.got
    );
    let oks = run.oks();
    assert_eq!(oks.len() + 1, before.len(), "one error: {:?}", run.got);
    case.check_yielded_before_error(&oks, &run.journal);

    // Nothing started or pulled after the error (but the item taken in the
    // section that pulled the source's error, which may get its first poll).
    run.journal.check_no_start_after_error();
    assert_eq!(run.journal.pulls_after_error(), 0, "a pull after the error");
    if run.journal.source_failed_first() {
        assert_eq!(
            run.journal.pulls(),
            error + 1,
            "pulled past the source's error"
        );
    }

    // `None` forever.
    let stream = run.stream.as_mut().unwrap();
    assert!(stream.is_terminated());
    assert_eq!(stream.size_hint(), (0, Some(0)));
    for _ in 0..2 {
        assert!(matches!(poll_once(stream), Poll::Ready(None)));
    }

    // Once the cancelled tasks ran, everything is gone already.
    run.run_tasks_out();
    run.gates.check_all_dropped_once();
    let stats = run.stream.as_ref().unwrap().stats();
    assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));
    run.drop_stream_and_check();
}

proptest! {
    #![proptest_config(support::config(256))]

    #[test]
    fn an_error_from_a_future_yields_what_the_rule_allows_then_the_error(
        (case, seed) in case(future_failures),
    ) {
        run(case, seed);
    }

    #[test]
    fn an_error_from_the_source_yields_what_the_rule_allows_then_the_error(
        (case, seed) in case(source_failures),
    ) {
        run(case, seed);
    }
}
