//! Contract points 1 to 5 and 12 (16 and 17 spawned) under random schedules,
//! in both modes: after every step the budgets hold, the counts add up
//! exactly, and a stream at rest has every budget exactly full; no wake is
//! lost; every output arrives exactly once (in input order when ordered); a
//! finished stream stays finished, late wakes break nothing, and dropping it
//! drops everything exactly once.
//!
//! The random stepper (`support::Run`) opens gates and delivers their wakes
//! on this thread or another, twice, late, again after the item finished, or
//! lets the future wake itself once more; spawned, it also polls the worker
//! tasks one at a time in a random order. A second property runs the spawned
//! mode on tokio's multi-thread runtime (2 workers), with gates opened by one
//! or two other OS threads in a random order, the budgets checked after
//! every output.
//!
//! 256 cases per mode and 32 on tokio by default (a quarter in a debug build:
//! `support::cases`); `PROPTEST_CASES=N` runs N
//! (N/8 on tokio).

use std::task::Poll;

use futures::StreamExt;
use proptest::prelude::*;
use support::{
    Case, HANG_LIMIT, InForce, Mode, Run, Step, assert_all_done, check_ended_on_tokio,
    prop_both_modes, tokio_multi_thread,
};

fn case() -> impl Strategy<Value = Case> {
    Case::strategy(1..=5, 0..=4, 1..=7, 0..=40)
}

fn random_schedule(mode: Mode, case: Case) {
    let mut run = Run::new(mode, case.clone());
    assert_eq!(run.run_to_end(), Step::Finished);
    case.check_delivery(&run.yielded());
    let stats = run.driven.stats();
    assert_all_done(&stats, case.items);
    case.check_peaks(&stats);
    // Late wakes after the end reach nothing and break nothing; a finished
    // stream stays finished.
    run.wake_the_rest();
    assert!(matches!(run.driven.poll(), Poll::Ready(None)));
    assert!(run.driven.is_terminated());
    run.drop_stream_and_check();
}

prop_both_modes! {
    fn random_schedules_keep_budgets_and_deliver_every_output_once(mode, case in case())
        cases(256, 256)
    {
        random_schedule(mode, case);
    }
}

/// Random budgets and length on tokio's multi-thread runtime; `openers` threads
/// open the gates of pulled items in a random order while the consumer takes
/// outputs and checks the budgets after each.
fn on_tokio(case: Case, openers: usize) {
    let runtime = tokio_multi_thread();
    let (gates, stream) = case.stream();
    let mut stream = stream.spawn_on(runtime.handle().clone());

    let openers: Vec<_> = (0..openers as u64)
        .map(|opener| support::opener(&gates, case.seed ^ opener, None))
        .collect();

    let budgets = InForce::new(case.workers, case.waiting, case.window);
    let mut yielded = Vec::new();
    loop {
        let next = runtime
            .block_on(async { tokio::time::timeout(HANG_LIMIT, stream.next()).await })
            .unwrap_or_else(|_| panic!("watchdog: no output for {HANG_LIMIT:?}"));
        if let Some(output) = &next {
            yielded.push(output.id);
        }
        // Read after counting the output, so the bound is checked against the
        // consumer's position at that moment.
        let (stats, running) = (stream.stats(), gates.running());
        let in_flight = gates.pulled() - yielded.len();
        let context = format!("{case:?} {stats:?} in flight {in_flight} running {running}");
        budgets.check(&stats, 0, running, in_flight, &context);
        if next.is_none() {
            break;
        }
    }
    case.check_delivery(&yielded);
    case.check_peaks(&stream.stats());
    drop(stream);
    check_ended_on_tokio(&runtime, &gates, openers);
}

proptest! {
    #![proptest_config(support::config((support::cases(256) / 8).max(1)))]

    #[test]
    fn gates_opened_from_other_threads_on_tokio_keep_the_budgets(
        case in case().prop_map(|case| Case { items: case.items * 8, ..case }),
        openers in 1..=2usize,
    ) {
        on_tokio(case, openers);
    }
}
