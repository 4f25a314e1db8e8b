//! Contract points 16 and 17 under randomized schedules for the spawned mode
//! (`spawn_on`): the budgets hold after every step, no wake is lost, and every
//! output arrives exactly once (in input order when ordered).
//!
//! Two harnesses:
//! - A deterministic executor that polls one woken task at a time, picked at
//!   random, interleaved with gate openings (on this thread or another) and
//!   consumer polls. Between any two steps the counts add up exactly, and when
//!   the tasks are idle every budget is full (the exact boundary).
//! - A tokio multi-thread runtime (2 workers) with gates opened by one or two
//!   other OS threads in a random order; the budgets are checked after every
//!   output.
//!
//! 256 cases for the first and 32 for the second by default; `PROPTEST_CASES=N`
//! runs N of the first and N/8 of the second.

use std::thread;

use futures::StreamExt;
use proptest::prelude::*;
use support::{Case, Fault, HANG_LIMIT, Rng, Run, Step, eventually, poll_once, tokio_multi_thread};

fn case() -> impl Strategy<Value = Case> {
    (
        1..=4usize,
        0..=4usize,
        prop::option::of(1..=6usize),
        0..=30usize,
        any::<u64>(),
    )
        .prop_map(|(workers, waiting, window, items, seed)| Case {
            workers,
            waiting,
            window,
            items,
            seed,
            fault: Fault::None,
        })
}

fn check_delivery(case: &Case, yielded: &[usize]) {
    let all: Vec<usize> = (0..case.items).collect();
    if case.window.is_some() {
        assert_eq!(yielded, all, "ordered output out of order");
    } else {
        let mut sorted = yielded.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, all, "an output missing or repeated");
    }
}

fn random_schedule(case: Case) {
    let mut run = Run::new(case.clone());
    assert_eq!(run.run_to_end(), Step::Finished);
    check_delivery(&case, &run.yielded);
    let stream = run.stream.as_mut().unwrap();
    let stats = stream.stats();
    assert_eq!(
        (stats.pulled, stats.completed),
        (case.items as u64, case.items as u64)
    );
    assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));
    case.check_peaks(&stats);
    // Finished streams stay finished.
    assert!(matches!(poll_once(stream), std::task::Poll::Ready(None)));
    run.drop_stream_and_check();
}

/// Random budgets and length on tokio's multi-thread runtime; `openers` threads
/// open the gates of pulled items in a random order while the consumer takes
/// outputs and checks the budgets after each.
fn on_tokio(case: Case, openers: usize) {
    let runtime = tokio_multi_thread();
    let (gates, mut stream) = case.spawn_on(runtime.handle().clone());

    let openers: Vec<_> = (0..openers as u64)
        .map(|opener| {
            let gates = gates.clone();
            let mut rng = Rng::new(case.seed ^ opener);
            thread::spawn(move || {
                while let Some(closed) = gates.wait_for_closed_gates() {
                    gates.open(closed[rng.below(closed.len())]);
                }
            })
        })
        .collect();

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
        case.check_budgets(&stream.stats(), &gates, yielded.len());
        if next.is_none() {
            break;
        }
    }
    check_delivery(&case, &yielded);
    case.check_peaks(&stream.stats());
    for opener in openers {
        opener.join().unwrap();
    }
    drop(stream);
    let metrics = runtime.metrics();
    eventually("every task to end", || metrics.num_alive_tasks() == 0);
    gates.check_all_dropped_once();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(support::cases(256)))]

    #[test]
    fn random_task_schedules_keep_the_budgets_and_deliver_every_output_once(case in case()) {
        random_schedule(case);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases((support::cases(256) / 8).max(1)))]

    #[test]
    fn gates_opened_from_other_threads_on_tokio_keep_the_budgets(
        case in case().prop_map(|case| Case { items: case.items * 8, ..case }),
        openers in 1..=2usize,
    ) {
        on_tokio(case, openers);
    }
}
