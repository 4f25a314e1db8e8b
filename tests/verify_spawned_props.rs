//! Randomized schedules for the spawned mode (`spawn_on`): the budgets hold
//! after every step, no wake is lost, and every output arrives exactly once (in
//! input order when ordered).
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

mod spawn_support;
mod verify_spawned_support;

use std::sync::Arc;
use std::thread;

use bounded_buffered::BoundedStreamExt;
use futures::StreamExt;
use proptest::prelude::*;
use verify_spawned_support::{Case, Fault, Ledger, Rng, Run, Step};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(256)
}

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
    let span = case.span();
    assert!(stats.peak_active <= case.workers.min(span), "{stats:?}");
    assert!(stats.peak_waiting <= case.waiting, "{stats:?}");
    assert!(stats.peak_held <= span, "{stats:?}");
    // Finished streams stay finished.
    let waker = futures::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(matches!(
        stream.poll_next_unpin(&mut cx),
        std::task::Poll::Ready(None)
    ));
    run.drop_stream_and_check();
}

/// Random budgets and length on tokio's multi-thread runtime; `openers` threads
/// open the gates of pulled items in a random order while the consumer takes
/// outputs and checks the budgets after each.
fn on_tokio(case: Case, openers: usize) {
    let runtime = spawn_support::tokio_runtime();
    let ledger = Ledger::new(case.items, Fault::None);
    let stream = ledger.source().bounded(case.workers, case.waiting);
    let stream = match case.window {
        Some(window) => stream.ordered(window),
        None => stream,
    };
    let mut stream = stream.spawn_on(runtime.handle().clone());

    let openers: Vec<_> = (0..openers as u64)
        .map(|opener| {
            let ledger = Arc::clone(&ledger);
            let mut rng = Rng::new(case.seed ^ opener);
            thread::spawn(move || {
                while let Some(closed) = ledger.wait_for_closed_gates(spawn_support::WATCHDOG) {
                    ledger.open(closed[rng.below(closed.len())]);
                }
            })
        })
        .collect();

    let span = case.span();
    let mut yielded = Vec::new();
    loop {
        let next = runtime
            .block_on(async { tokio::time::timeout(spawn_support::WATCHDOG, stream.next()).await })
            .unwrap_or_else(|_| panic!("watchdog: no output for {:?}", spawn_support::WATCHDOG));
        if let Some(output) = &next {
            yielded.push(output.index);
        }
        // Read after counting the output, so the bound is checked against the
        // consumer's position at that moment.
        let stats = stream.stats();
        let pulled = ledger.pulled();
        let running = ledger.running();
        let context = format!(
            "{case:?} {stats:?} pulled {pulled} yielded {} running {running}",
            yielded.len()
        );
        assert!(
            stats.active <= case.workers,
            "active over budget: {context}"
        );
        assert!(
            stats.waiting <= case.waiting,
            "waiting over budget: {context}"
        );
        assert!(
            stats.active + stats.held <= span,
            "held over budget: {context}"
        );
        assert!(
            running <= case.workers.min(span),
            "running over budget: {context}"
        );
        assert!(
            pulled - yielded.len() <= span + case.waiting,
            "source too far ahead: {context}"
        );
        if next.is_none() {
            break;
        }
    }
    check_delivery(&case, &yielded);
    let stats = stream.stats();
    assert!(stats.peak_active <= case.workers.min(span), "{stats:?}");
    assert!(stats.peak_waiting <= case.waiting, "{stats:?}");
    assert!(stats.peak_held <= span, "{stats:?}");
    for opener in openers {
        opener.join().unwrap();
    }
    drop(stream);
    let metrics = runtime.metrics();
    spawn_support::eventually("every task to end", || metrics.num_alive_tasks() == 0);
    ledger.check_all_dropped_once();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn random_task_schedules_keep_the_budgets_and_deliver_every_output_once(case in case()) {
        random_schedule(case);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases((cases() / 8).max(1)))]

    #[test]
    fn gates_opened_from_other_threads_on_tokio_keep_the_budgets(
        case in case().prop_map(|case| Case { items: case.items * 8, ..case }),
        openers in 1..=2usize,
    ) {
        on_tokio(case, openers);
    }
}
