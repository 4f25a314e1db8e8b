//! Structured cancellation and panics in spawned mode: dropping the stream
//! stops every task and drops the source, every running future, every queued
//! item and every untaken output exactly once; a panic in a task cancels the
//! others and is re-raised by the stream, never passed off as an end.

mod spawn_support;

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use bounded_buffered::{BoundedStreamExt, Spawned};
use futures::stream;
use futures::{FutureExt, StreamExt};
use spawn_support::{Gates, Output, Probe, SmolPool, Stepper, poll_once, tokio_runtime};

fn get(counter: &std::sync::atomic::AtomicUsize) -> usize {
    Probe::get(counter)
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// Runs the stream until `workers` futures run and `waiting` items wait, lets
/// item 0 complete and waits until the stream settled again (`refilled` is
/// whether the held output freed a worker, as in ordered mode with a window
/// wider than the workers), then drops it.
fn drop_mid_flight(
    probe: &Arc<Probe>,
    mut stream: Spawned<Output>,
    workers: usize,
    waiting: usize,
    refilled: bool,
) {
    assert!(poll_once(&mut stream).is_pending());
    probe.wait_until("the budgets to fill", |p| {
        get(&p.started) == workers && get(&p.pulled) == workers + waiting
    });
    assert!(probe.open(0));
    let extra = usize::from(refilled);
    probe.wait_until("the stream to settle", |p| {
        get(&p.outputs_made) == 1
            && get(&p.started) == workers + extra
            && get(&p.pulled) == workers + waiting + extra
    });
    drop(stream);
}

#[test]
fn dropping_the_stream_drops_everything_exactly_once_on_the_stepper() {
    for window in [None, Some(5)] {
        let (workers, waiting) = (3, 2);
        let probe = Probe::new();
        let (mut stepper, spawner) = Stepper::new();
        let stream = probe.source(100, Gates::All).bounded(workers, waiting);
        let stream = match window {
            Some(window) => stream.ordered(window),
            None => stream,
        };
        let mut stream = stream.spawn_on(spawner);
        assert!(poll_once(&mut stream).is_pending());
        stepper.run_until_stalled();
        assert!(probe.open(1));
        stepper.run_until_stalled();
        assert_eq!(stream.stats().held, 1);
        // One task per busy worker, spawned as items needed them.
        assert_eq!(stepper.live_tasks(), workers);

        drop(stream);
        // The untaken output goes with the stream itself...
        assert_eq!(get(&probe.outputs_dropped), 1);
        // ...and everything else on the tasks' next turn, when they end.
        stepper.run_until_stalled();
        assert!(probe.all_dropped(), "{probe:?}");
        // Ordered with a window wider than the workers, the held output freed
        // its worker, which started one more item.
        let admitted = workers + waiting + usize::from(window.is_some());
        assert_eq!(get(&probe.futures_dropped), admitted);
        assert_eq!(stepper.live_tasks(), 0);
    }
}

#[test]
fn dropping_the_stream_drops_everything_exactly_once_on_tokio_multi_thread() {
    let runtime = tokio_runtime();
    for window in [None, Some(4)] {
        let probe = Probe::new();
        let stream = probe.source(100, Gates::All).bounded(3, 2);
        let stream = match window {
            Some(window) => stream.ordered(window),
            None => stream,
        };
        drop_mid_flight(
            &probe,
            stream.spawn_on(runtime.handle().clone()),
            3,
            2,
            window.is_some(),
        );
        probe.wait_until("everything to be dropped", |p| p.all_dropped());
        assert_eq!(
            get(&probe.futures_dropped),
            5 + usize::from(window.is_some())
        );
        let metrics = runtime.metrics();
        spawn_support::eventually("every task to end", || metrics.num_alive_tasks() == 0);
    }
}

#[test]
fn dropping_the_stream_drops_everything_exactly_once_on_smol_executor() {
    let pool = SmolPool::new(3);
    for window in [None, Some(4)] {
        let probe = Probe::new();
        let stream = probe.source(100, Gates::All).bounded(3, 2);
        let stream = match window {
            Some(window) => stream.ordered(window),
            None => stream,
        };
        drop_mid_flight(
            &probe,
            stream.spawn_on(Arc::clone(&pool.executor)),
            3,
            2,
            window.is_some(),
        );
        probe.wait_until("everything to be dropped", |p| p.all_dropped());
        assert_eq!(
            get(&probe.futures_dropped),
            5 + usize::from(window.is_some())
        );
        spawn_support::eventually("every task to end", || pool.executor.is_empty());
    }
}

/// Items `0..count`, where item `bad` panics once polled; `gates` says which of
/// the others wait for their gate.
fn one_panics(
    probe: &Arc<Probe>,
    count: usize,
    bad: usize,
    gates: Gates,
) -> impl futures::Stream<Item = futures::future::BoxFuture<'static, Output>> + Send + 'static {
    probe
        .source(count, gates)
        .enumerate()
        .map(move |(index, item)| {
            if index == bad {
                fail(item, bad).boxed()
            } else {
                item.boxed()
            }
        })
}

async fn fail(item: impl Future, bad: usize) -> Output {
    drop(item);
    panic!("item {bad} failed")
}

#[test]
fn a_panicking_future_cancels_the_other_tasks_before_the_stream_re_raises_it() {
    let probe = Probe::new();
    let (mut stepper, spawner) = Stepper::new();
    let mut stream = one_panics(&probe, 100, 1, Gates::All)
        .bounded(3, 2)
        .spawn_on(spawner);
    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();

    // The panic was caught in its worker, which cancelled the rest: every task
    // ended and dropped its work before the consumer polls again.
    assert_eq!(stepper.live_tasks(), 0);
    assert!(
        probe
            .source_dropped
            .load(std::sync::atomic::Ordering::SeqCst)
    );
    assert_eq!(get(&probe.futures_dropped), get(&probe.pulled));

    let payload = panic::catch_unwind(AssertUnwindSafe(|| poll_once(&mut stream))).unwrap_err();
    assert_eq!(panic_message(&*payload), "item 1 failed");
    let again = panic::catch_unwind(AssertUnwindSafe(|| poll_once(&mut stream))).unwrap_err();
    assert!(panic_message(&*again).contains("polled after it re-raised a panic"));
    assert!(!futures::stream::FusedStream::is_terminated(&stream));
}

/// Consumes the stream; returns what it yielded and the panic that ended it.
/// The test fails if the stream ends cleanly.
fn consume_until_panic(run: impl FnOnce(&mut Vec<usize>)) -> (Vec<usize>, String) {
    let mut yielded = Vec::new();
    let result = panic::catch_unwind(AssertUnwindSafe(|| run(&mut yielded)));
    let payload = result.expect_err("the stream ended cleanly although an item panicked");
    (yielded, panic_message(&*payload))
}

#[test]
fn a_panicking_future_is_re_raised_on_tokio_multi_thread() {
    let runtime = tokio_runtime();
    for window in [None, Some(3)] {
        let probe = Probe::new();
        let (yielded, message) = consume_until_panic(|yielded| {
            let stream = one_panics(&probe, 50, 7, Gates::None).bounded(3, 2);
            let stream = match window {
                Some(window) => stream.ordered(window),
                None => stream,
            };
            let mut stream = stream.spawn_on(runtime.handle().clone());
            runtime.block_on(async {
                let _watchdog = spawn_support::watchdog("a stream with a panicking item");
                loop {
                    match stream.next().await {
                        Some(out) => yielded.push(out.index),
                        None => return,
                    }
                }
            });
        });
        assert_eq!(message, "item 7 failed");
        assert!(!yielded.contains(&7));
        if window.is_some() {
            // In order, and nothing from the failed item on.
            assert_eq!(yielded, (0..yielded.len()).collect::<Vec<_>>());
        }
        probe.wait_until("everything to be dropped", |p| p.all_dropped());
        let metrics = runtime.metrics();
        spawn_support::eventually("every task to end", || metrics.num_alive_tasks() == 0);
    }
}

#[test]
fn a_panicking_future_is_re_raised_on_smol_executor() {
    let pool = SmolPool::new(3);
    let probe = Probe::new();
    let (yielded, message) = consume_until_panic(|yielded| {
        let mut stream = one_panics(&probe, 50, 7, Gates::None)
            .bounded(3, 2)
            .spawn_on(Arc::clone(&pool.executor));
        smol::block_on(async {
            let _watchdog = spawn_support::watchdog("a stream with a panicking item");
            loop {
                match stream.next().await {
                    Some(out) => yielded.push(out.index),
                    None => return,
                }
            }
        });
    });
    assert_eq!(message, "item 7 failed");
    assert!(!yielded.contains(&7));
    probe.wait_until("everything to be dropped", |p| p.all_dropped());
    spawn_support::eventually("every task to end", || pool.executor.is_empty());
}

#[test]
fn a_panicking_source_is_re_raised_after_the_items_before_it() {
    let runtime = tokio_runtime();
    let probe = Probe::new();
    let (yielded, message) = consume_until_panic(|yielded| {
        let source = probe
            .source(100, Gates::None)
            .enumerate()
            .map(|(index, item)| {
                assert!(index < 10, "the source failed at item {index}");
                item
            });
        let mut stream = source
            .bounded(2, 2)
            .ordered(3)
            .spawn_on(runtime.handle().clone());
        runtime.block_on(async {
            while let Some(out) = stream.next().await {
                yielded.push(out.index);
            }
        });
    });
    assert_eq!(message, "the source failed at item 10");
    assert!(yielded.len() <= 10);
    assert_eq!(yielded, (0..yielded.len()).collect::<Vec<_>>());
    probe.wait_until("everything to be dropped", |p| p.all_dropped());
}

#[test]
fn a_task_dropped_by_the_executor_is_a_panic_not_a_missing_item() {
    // An executor that drops what it is given, as a runtime shutting down does.
    let mut stream = stream::iter(0..5)
        .map(|n| async move { n })
        .bounded(2, 2)
        .spawn_on(|task: futures::future::BoxFuture<'static, ()>| drop(task));
    let payload = panic::catch_unwind(AssertUnwindSafe(|| poll_once(&mut stream))).unwrap_err();
    assert!(panic_message(&*payload).contains("dropped by its executor"));
}

#[test]
fn a_runtime_shut_down_mid_stream_is_a_panic_not_an_end() {
    let runtime = tokio_runtime();
    let probe = Probe::new();
    let mut stream = probe
        .source(100, Gates::All)
        .bounded(2, 2)
        .spawn_on(runtime.handle().clone());
    assert!(poll_once(&mut stream).is_pending());
    probe.wait_until("the workers to start", |p| get(&p.started) == 2);
    drop(runtime); // drops every task, unfinished
    assert!(probe.all_dropped(), "{probe:?}");
    let payload = panic::catch_unwind(AssertUnwindSafe(|| poll_once(&mut stream))).unwrap_err();
    assert!(panic_message(&*payload).contains("dropped by its executor"));
}

#[test]
fn dropping_the_stream_after_a_re_raised_panic_is_clean() {
    let (mut stepper, spawner) = Stepper::new();
    let probe = Probe::new();
    let mut stream = one_panics(&probe, 10, 0, Gates::All)
        .bounded(2, 2)
        .spawn_on(spawner);
    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();
    assert!(panic::catch_unwind(AssertUnwindSafe(|| poll_once(&mut stream))).is_err());
    drop(stream);
    stepper.run_until_stalled();
    assert!(probe.all_dropped(), "{probe:?}");
}
