//! Contract points 1 and 12 under stress across threads: many items whose
//! futures are completed on other OS threads, or run on a tokio multi-thread
//! runtime, ordered and unordered. A lost wakeup shows as a hang, which a
//! watchdog thread turns into a failure.
//!
//! `BB_STRESS_ITEMS` sets the number of items per test (default 100 000, which
//! keeps the debug `cargo test` quick); the release run of the verification
//! script uses 1 000 000. `BB_STRESS_STALL_SECS` (default 30) is how long the
//! watchdog waits for the next sign of progress before it fails the test.

use bounded_buffered::BoundedStreamExt;
use futures::stream::{self, StreamExt};
use support::stress::{Completers, each_exactly_once, items, stall_watchdog};
use support::tokio_multi_thread;

/// Items are oneshot receivers; completer threads send the values, so every
/// wake comes from another OS thread, racing the consumer's polls and parks.
fn completed_on_os_threads(ordered: bool) {
    let name = if ordered {
        "os threads, ordered"
    } else {
        "os threads, unordered"
    };
    let watchdog = stall_watchdog(name);
    let items = items();
    let completers = Completers::start();
    let outputs = completers.source(items, false).bounded(8, 16);
    let tick = |_: &_| watchdog.tick();
    if ordered {
        let mut outputs = outputs.ordered(32);
        futures::executor::block_on(each_exactly_once(&mut outputs, items, true, 10_000, tick));
    } else {
        let mut outputs = outputs;
        futures::executor::block_on(each_exactly_once(&mut outputs, items, false, 10_000, tick));
    }
    completers.stop();
}

/// Items are tasks spawned on a multi-thread runtime, and the consumer is itself
/// a task there, so it moves between worker threads and re-registers its waker.
fn completed_on_tokio_workers(ordered: bool) {
    let name = if ordered {
        "tokio, ordered"
    } else {
        "tokio, unordered"
    };
    let watchdog = stall_watchdog(name);
    let items = items();
    let runtime = tokio_multi_thread();
    let consumer = runtime.spawn(async move {
        let source = stream::iter(0..items).map(|id| {
            let task = tokio::spawn(async move {
                // Half the tasks finish at once, half after a trip through the scheduler.
                if id % 2 == 0 {
                    tokio::task::yield_now().await;
                }
                id
            });
            async move { task.await.expect("task panicked") }
        });
        let outputs = source.bounded(8, 16);
        let tick = |_: &_| watchdog.tick();
        if ordered {
            let mut outputs = outputs.ordered(32);
            each_exactly_once(&mut outputs, items, true, 10_000, tick).await;
        } else {
            let mut outputs = outputs;
            each_exactly_once(&mut outputs, items, false, 10_000, tick).await;
        }
    });
    runtime.block_on(consumer).unwrap();
}
#[test]
fn futures_completed_on_os_threads_unordered_all_arrive() {
    completed_on_os_threads(false);
}

#[test]
fn futures_completed_on_os_threads_ordered_all_arrive_in_order() {
    completed_on_os_threads(true);
}

#[test]
fn futures_on_tokio_worker_threads_unordered_all_arrive() {
    completed_on_tokio_workers(false);
}

#[test]
fn futures_on_tokio_worker_threads_ordered_all_arrive_in_order() {
    completed_on_tokio_workers(true);
}
