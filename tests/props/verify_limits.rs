//! Contract point 25 (with 1 to 5, and 16 and 17 spawned) under random
//! schedules of steps and limit changes (from this thread or another), in
//! both modes, unordered and ordered:
//! - nothing is lost or duplicated, and every output arrives once (in input
//!   order when ordered): lowering cancels nothing;
//! - a step that starts an item leaves `active <= workers` for the limits in
//!   force, and one that pulls leaves `waiting <= waiting`;
//! - once the limits are stable and the work is within them ("settled"),
//!   every budget holds, and a stream at rest has them exactly full (spawned,
//!   a raise of `waiting` made while every task was busy included: a busy
//!   task is sent to pull);
//! - no wake is lost; in place a change wakes a pending consumer;
//! - spawned, half the runs take the handle before `spawn_on`: it keeps
//!   working.
//!
//! Raises sometimes cross the wake tree's first level (63 slots).
//!
//! 256 cases per mode by default (a quarter in a debug build:
//! `support::cases`); `PROPTEST_CASES=N` runs N.

use proptest::prelude::*;
use support::{Case, Change, Mode, Run, Step, prop_both_modes};

fn case() -> impl Strategy<Value = Case> {
    let changes = prop::collection::vec((Change::strategy(30..=70), any::<bool>()), 0..=8);
    (Case::strategy(1..=5, 0..=4, 1..=7, 0..=90), changes)
        .prop_map(|(case, changes)| Case { changes, ..case })
}

fn run(mode: Mode, case: Case) {
    let mut run = Run::new(mode, case.clone());
    assert_eq!(run.run_to_end(), Step::Finished);
    case.check_delivery(&run.yielded());
    assert_eq!(run.gates.counts().futures_dropped, case.items);
    run.drop_stream_and_check();
}

prop_both_modes! {
    fn random_limit_changes_keep_the_budgets_in_force_and_lose_nothing(mode, case in case())
        cases(256, 256)
    {
        run(mode, case);
    }
}
