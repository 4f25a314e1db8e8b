//! Contract points 19 and 20, structured cancellation and panics in spawned
//! mode: dropping the stream stops every task and drops the source, every
//! running future, every queued item and every untaken output exactly once; a
//! panic in a task cancels the others and is re-raised by the stream, never
//! passed off as an end.

use std::sync::Arc;

use bounded_buffered::{BoundedStreamExt, Spawned};
use futures::stream;
use futures::{FutureExt, StreamExt};
use support::{
    Gates, OrderedIf, Output, SmolPool, StepExecutor, Watchdog, caught, eventually, poll_once,
    tokio_multi_thread,
};

/// Runs the stream until `workers` futures run and `waiting` items wait, lets
/// item 0 complete and waits until the stream settled again (`refilled` is
/// whether the held output freed a worker, as in ordered mode with a window
/// wider than the workers), then drops it.
fn drop_mid_flight(
    gates: &Gates,
    mut stream: Spawned<Output>,
    workers: usize,
    waiting: usize,
    refilled: bool,
) {
    assert!(poll_once(&mut stream).is_pending());
    gates.wait_until("the budgets to fill", |c| {
        c.started == workers && c.pulled == workers + waiting
    });
    assert!(gates.open(0));
    let extra = usize::from(refilled);
    gates.wait_until("the stream to settle", |c| {
        c.outputs_made == 1 && c.started == workers + extra && c.pulled == workers + waiting + extra
    });
    drop(stream);
}

#[test]
fn dropping_the_stream_drops_everything_exactly_once_on_the_stepper() {
    for window in [None, Some(5)] {
        let (workers, waiting) = (3, 2);
        let gates = Gates::new();
        let mut stepper = StepExecutor::new();
        let stream = gates
            .tracked_source(100)
            .bounded(workers, waiting)
            .ordered_if(window);
        let mut stream = stream.spawn_on(stepper.spawner());
        assert!(poll_once(&mut stream).is_pending());
        stepper.run_until_stalled();
        assert!(gates.open(1));
        stepper.run_until_stalled();
        assert_eq!(stream.stats().held, 1);
        // One task per busy worker, spawned as items needed them.
        assert_eq!(stepper.live_tasks(), workers);

        drop(stream);
        // The untaken output goes with the stream itself...
        assert_eq!(gates.counts().outputs_dropped, 1);
        // ...and everything else on the tasks' next turn, when they end.
        stepper.run_until_stalled();
        assert!(gates.counts().all_dropped(), "{gates:?}");
        // Ordered with a window wider than the workers, the held output freed
        // its worker, which started one more item.
        let admitted = workers + waiting + usize::from(window.is_some());
        assert_eq!(gates.counts().futures_dropped, admitted);
        assert_eq!(stepper.live_tasks(), 0);
    }
}

#[test]
fn dropping_the_stream_drops_everything_exactly_once_on_tokio_multi_thread() {
    let runtime = tokio_multi_thread();
    for window in [None, Some(4)] {
        let gates = Gates::new();
        let stream = gates.tracked_source(100).bounded(3, 2).ordered_if(window);
        drop_mid_flight(
            &gates,
            stream.spawn_on(runtime.handle().clone()),
            3,
            2,
            window.is_some(),
        );
        gates.wait_until("everything to be dropped", |c| c.all_dropped());
        assert_eq!(
            gates.counts().futures_dropped,
            5 + usize::from(window.is_some())
        );
        let metrics = runtime.metrics();
        eventually("every task to end", || metrics.num_alive_tasks() == 0);
    }
}

#[test]
fn dropping_the_stream_drops_everything_exactly_once_on_smol_executor() {
    let pool = SmolPool::new(3);
    for window in [None, Some(4)] {
        let gates = Gates::new();
        let stream = gates.tracked_source(100).bounded(3, 2).ordered_if(window);
        drop_mid_flight(
            &gates,
            stream.spawn_on(Arc::clone(&pool.executor)),
            3,
            2,
            window.is_some(),
        );
        gates.wait_until("everything to be dropped", |c| c.all_dropped());
        assert_eq!(
            gates.counts().futures_dropped,
            5 + usize::from(window.is_some())
        );
        eventually("every task to end", || pool.executor.is_empty());
    }
}

/// Items `0..count`, where item `bad` panics once polled; `gates` says which of
/// the others wait for their gate.
fn one_panics(
    gates: &Gates,
    count: usize,
    bad: usize,
) -> impl futures::Stream<Item = futures::future::BoxFuture<'static, Output>> + Send + 'static {
    gates
        .tracked_source(count)
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
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = one_panics(&gates, 100, 1)
        .bounded(3, 2)
        .spawn_on(stepper.spawner());
    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();

    // The panic was caught in its worker, which cancelled the rest: every task
    // ended and dropped its work before the consumer polls again.
    assert_eq!(stepper.live_tasks(), 0);
    assert_eq!(gates.counts().source_drops, 1);
    assert_eq!(gates.counts().futures_dropped, gates.pulled());

    let message = caught(|| poll_once(&mut stream)).unwrap_err();
    assert_eq!(message, "item 1 failed");
    let again = caught(|| poll_once(&mut stream)).unwrap_err();
    assert!(again.contains("polled after it re-raised a panic"));
    assert!(!futures::stream::FusedStream::is_terminated(&stream));
}

/// Takes outputs until the stream ends (or panics), recording their ids.
async fn take_ids(stream: &mut Spawned<Output>, yielded: &mut Vec<usize>) {
    let _watchdog = Watchdog::start("a stream with a panicking item");
    while let Some(out) = stream.next().await {
        yielded.push(out.id);
    }
}

/// Consumes the stream; returns what it yielded and the panic that ended it.
/// The test fails if the stream ends cleanly.
fn consume_until_panic(run: impl FnOnce(&mut Vec<usize>)) -> (Vec<usize>, String) {
    let mut yielded = Vec::new();
    let result = caught(|| run(&mut yielded));
    let message = result.expect_err("the stream ended cleanly although an item panicked");
    (yielded, message)
}

#[test]
fn a_panicking_future_is_re_raised_on_tokio_multi_thread() {
    let runtime = tokio_multi_thread();
    for window in [None, Some(3)] {
        let gates = Gates::open_except(&[]);
        let (yielded, message) = consume_until_panic(|yielded| {
            let stream = one_panics(&gates, 50, 7).bounded(3, 2).ordered_if(window);
            let mut stream = stream.spawn_on(runtime.handle().clone());
            runtime.block_on(take_ids(&mut stream, yielded));
        });
        assert_eq!(message, "item 7 failed");
        assert!(!yielded.contains(&7));
        if window.is_some() {
            // In order, and nothing from the failed item on.
            assert_eq!(yielded, (0..yielded.len()).collect::<Vec<_>>());
        }
        gates.wait_until("everything to be dropped", |c| c.all_dropped());
        let metrics = runtime.metrics();
        eventually("every task to end", || metrics.num_alive_tasks() == 0);
    }
}

#[test]
fn a_panicking_future_is_re_raised_on_smol_executor() {
    let pool = SmolPool::new(3);
    let gates = Gates::open_except(&[]);
    let (yielded, message) = consume_until_panic(|yielded| {
        let mut stream = one_panics(&gates, 50, 7)
            .bounded(3, 2)
            .spawn_on(Arc::clone(&pool.executor));
        smol::block_on(take_ids(&mut stream, yielded));
    });
    assert_eq!(message, "item 7 failed");
    assert!(!yielded.contains(&7));
    gates.wait_until("everything to be dropped", |c| c.all_dropped());
    eventually("every task to end", || pool.executor.is_empty());
}

#[test]
fn a_panicking_source_is_re_raised_after_the_items_before_it() {
    let runtime = tokio_multi_thread();
    let gates = Gates::open_except(&[]);
    let (yielded, message) = consume_until_panic(|yielded| {
        let source = gates.tracked_source(100).enumerate().map(|(index, item)| {
            assert!(index < 10, "the source failed at item {index}");
            item
        });
        let mut stream = source
            .bounded(2, 2)
            .ordered(3)
            .spawn_on(runtime.handle().clone());
        runtime.block_on(async {
            while let Some(out) = stream.next().await {
                yielded.push(out.id);
            }
        });
    });
    assert_eq!(message, "the source failed at item 10");
    assert!(yielded.len() <= 10);
    assert_eq!(yielded, (0..yielded.len()).collect::<Vec<_>>());
    gates.wait_until("everything to be dropped", |c| c.all_dropped());
}

#[test]
fn a_task_dropped_by_the_executor_is_a_panic_not_a_missing_item() {
    // An executor that drops what it is given, as a runtime shutting down does.
    let mut stream = stream::iter(0..5)
        .map(|n| async move { n })
        .bounded(2, 2)
        .spawn_on(|task: futures::future::BoxFuture<'static, ()>| drop(task));
    let message = caught(|| poll_once(&mut stream)).unwrap_err();
    assert!(message.contains("dropped by its executor"));
}

#[test]
fn a_runtime_shut_down_mid_stream_is_a_panic_not_an_end() {
    let runtime = tokio_multi_thread();
    let gates = Gates::new();
    let mut stream = gates
        .tracked_source(100)
        .bounded(2, 2)
        .spawn_on(runtime.handle().clone());
    assert!(poll_once(&mut stream).is_pending());
    gates.wait_until("the workers to start", |c| c.started == 2);
    drop(runtime); // drops every task, unfinished
    assert!(gates.counts().all_dropped(), "{gates:?}");
    let message = caught(|| poll_once(&mut stream)).unwrap_err();
    assert!(message.contains("dropped by its executor"));
}

#[test]
fn dropping_the_stream_after_a_re_raised_panic_is_clean() {
    let mut stepper = StepExecutor::new();
    let gates = Gates::new();
    let mut stream = one_panics(&gates, 10, 0)
        .bounded(2, 2)
        .spawn_on(stepper.spawner());
    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();
    assert!(caught(|| poll_once(&mut stream)).is_err());
    drop(stream);
    stepper.run_until_stalled();
    assert!(gates.counts().all_dropped(), "{gates:?}");
}
