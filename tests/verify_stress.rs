//! Stress across threads: many items whose futures are completed on other OS
//! threads, or run on a tokio multi-thread runtime, ordered and unordered. A lost
//! wakeup shows as a hang, which a watchdog thread turns into a failure.
//!
//! `BB_STRESS_ITEMS` sets the number of items per test (default 100 000, which
//! keeps the debug `cargo test` quick); the release run of the verification
//! script uses 1 000 000. `BB_STRESS_STALL_SECS` (default 30) is how long the
//! watchdog waits for the next sign of progress before it fails the test.

mod stress_support;

use std::sync::mpsc;
use std::thread;

use bounded_buffered::BoundedStreamExt;
use futures::channel::oneshot;
use futures::stream::{self, Stream, StreamExt};
use stress_support::{Watchdog, items};

/// Drains `outputs`, checking that each of `0..items` arrives exactly once (in
/// order when `ordered`), and tells the watchdog about progress.
async fn check_outputs(
    outputs: impl Stream<Item = u64>,
    items: u64,
    ordered: bool,
    watchdog: &Watchdog,
) {
    let mut seen = vec![false; items as usize];
    let mut count = 0u64;
    let mut outputs = std::pin::pin!(outputs);
    while let Some(id) = outputs.next().await {
        if ordered {
            assert_eq!(id, count, "ordered output out of order");
        }
        assert!(
            !std::mem::replace(&mut seen[id as usize], true),
            "output {id} twice"
        );
        count += 1;
        if count % 10_000 == 0 {
            watchdog.tick();
        }
    }
    assert_eq!(count, items, "outputs missing");
}

/// Items are oneshot receivers; completer threads send the values, so every
/// wake comes from another OS thread, racing the consumer's polls and parks.
fn completed_on_os_threads(ordered: bool) {
    let name = if ordered {
        "os threads, ordered"
    } else {
        "os threads, unordered"
    };
    let watchdog = Watchdog::start(name);
    let items = items();
    let completers: Vec<_> = (0..2)
        .map(|_| {
            let (senders, requests) = mpsc::channel::<(u64, oneshot::Sender<u64>)>();
            let handle = thread::spawn(move || {
                for (id, sender) in requests {
                    let _ = sender.send(id);
                }
            });
            (senders, handle)
        })
        .collect();
    let source = {
        let senders: Vec<_> = completers
            .iter()
            .map(|(senders, _)| senders.clone())
            .collect();
        stream::iter(0..items).map(move |id| {
            let (sender, receiver) = oneshot::channel();
            senders[id as usize % senders.len()]
                .send((id, sender))
                .unwrap();
            async move { receiver.await.expect("completer dropped a sender") }
        })
    };
    let outputs = source.bounded(8, 16);
    if ordered {
        futures::executor::block_on(check_outputs(outputs.ordered(32), items, true, &watchdog));
    } else {
        futures::executor::block_on(check_outputs(outputs, items, false, &watchdog));
    }
    for (senders, handle) in completers {
        drop(senders);
        handle.join().unwrap();
    }
}

/// Items are tasks spawned on a multi-thread runtime, and the consumer is itself
/// a task there, so it moves between worker threads and re-registers its waker.
fn completed_on_tokio_workers(ordered: bool) {
    let name = if ordered {
        "tokio, ordered"
    } else {
        "tokio, unordered"
    };
    let watchdog = Watchdog::start(name);
    let items = items();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
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
        if ordered {
            check_outputs(outputs.ordered(32), items, true, &watchdog).await;
        } else {
            check_outputs(outputs, items, false, &watchdog).await;
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
