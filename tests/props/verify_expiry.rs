//! Random schedules with `max_wait` on, in both modes (contract points 23 and
//! 24, with 3 to 5; 16 and 17 spawned): the random stepper moves the hand
//! clock as it opens gates and polls. After every step the budgets hold:
//! expired items held count against `waiting` unordered and hold their place
//! in the window ordered, nothing is lost or counted twice, and no future runs
//! that the stats do not count; at rest with items left in the source, the
//! budgets are exactly full (taking an expired item frees a waiting place
//! that is refilled). Every item appears exactly once, as its output or as an
//! `Expired` that waited longer than the limit and holds the item's own
//! future, never polled, which still runs to its output; in input order when
//! ordered. No wake is lost. The timings agree: only the items that started
//! have a wait, none above the limit, and every outcome handed out has a
//! hold. Dropping the stream drops everything exactly once.
//!
//! The clock is `support::now`, so each case replays exactly from its seed.
//! 256 cases in place and 1024 spawned by default (a quarter in a debug
//! build: `support::cases`); `PROPTEST_CASES=N` runs N.

use bounded_buffered::{BoundedStreamExt, Expired};
use proptest::prelude::*;
use support::{
    Case, Gate, Gates, Got, Mode, OrderedIf, Run, Step, drive, ms, now, prop_both_modes,
    reset_clock,
};

fn case() -> impl Strategy<Value = (Case, u64)> {
    (Case::strategy(1..=4, 0..=4, 1..=6, 0..=24), 0..=6u64).prop_map(|(case, limit_ms)| {
        let max_wait = Some(ms(limit_ms));
        (Case { max_wait, ..case }, limit_ms)
    })
}

fn run(mode: Mode, case: Case, limit_ms: u64) {
    reset_clock();
    let limit = ms(limit_ms);
    let gates = Gates::new();
    let stream = gates
        .source(case.items)
        .bounded(case.workers, case.waiting)
        .ordered_if(case.window)
        .max_wait(limit)
        .timed()
        .clock(now);
    let driven = drive!(mode, stream);
    let seen = gates.clone();
    let read = move |outcome: Result<usize, Expired<Gate>>| match outcome {
        Ok(id) => {
            assert!(seen.is_started(id), "item {id} output but never run");
            Got::Ok(id)
        }
        Err(expired) => {
            let waited = expired.waited();
            assert!(waited > limit, "expired after {waited:?}, limit {limit:?}");
            let gate = expired.into_inner();
            let id = gate.id();
            assert_eq!(seen.polls(id), 0, "expired item {id} was polled");
            // Its own untouched future, which still runs to its output (the
            // schedule may have made its gate wake itself once more).
            seen.open(id);
            assert_eq!(futures::executor::block_on(gate), id);
            Got::Expired(id)
        }
    };
    let mut run = Run::with(case.clone(), gates, driven, None, read);
    assert_eq!(run.run_to_end(), Step::Finished);
    case.check_delivery(&run.yielded());

    let (items, expired) = (
        case.items as u64,
        (run.yielded().len() - run.oks().len()) as u64,
    );
    let stats = run.driven.stats();
    assert_eq!(stats.expired, expired);
    assert_eq!((stats.pulled, stats.completed), (items, items - expired));
    assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));
    let timings = run.driven.timings().expect("timed");
    assert_eq!(timings.wait.count(), items - expired, "a wait per start");
    assert!(timings.wait.max() <= limit, "{case:?}");
    assert_eq!(timings.run.count(), items - expired, "a run per completion");
    assert_eq!(timings.held.count(), items, "a hold per outcome handed out");
    run.drop_stream_and_check();
}

prop_both_modes! {
    fn with_expiry_the_budgets_hold_and_every_item_appears_exactly_once(
        mode,
        (case, limit_ms) in case(),
    ) cases(256, 1024) {
        run(mode, case, limit_ms);
    }
}
