//! Contract point 16: spawned mode keeps the in-place budgets: `active <=
//! workers`, at most `waiting` queued, untaken outputs bounded, the ordered
//! window's hard cap, and an exact admission bound of `workers + waiting`
//! (`min(workers, window) + waiting` ordered) with every future blocked.
//!
//! The exact checks run on a deterministic executor that runs the tasks until
//! nothing can move, so "not one more" is observed, not hoped for.

use std::sync::Arc;
use std::task::{Context, Poll};

use bounded_buffered::BoundedStreamExt;
use futures::StreamExt;
use futures_test::task::new_count_waker;
use support::{
    Gates, OrderedIf, Output, SmolPool, StepExecutor, eventually, poll_once, tokio_multi_thread,
    yield_now,
};

#[test]
fn unordered_source_advances_exactly_workers_plus_waiting() {
    for (workers, waiting) in [(1, 0), (1, 3), (3, 0), (3, 2), (4, 8)] {
        let gates = Gates::new();
        let mut stepper = StepExecutor::new();
        let mut stream = gates
            .tracked_source(100)
            .bounded(workers, waiting)
            .spawn_on(stepper.spawner());

        assert!(poll_once(&mut stream).is_pending());
        stepper.run_until_stalled();
        assert!(poll_once(&mut stream).is_pending());
        assert_eq!(gates.pulled(), workers + waiting, "W={workers} Q={waiting}");
        assert_eq!(gates.started(), workers);
        let stats = stream.stats();
        assert_eq!(
            (stats.active, stats.waiting, stats.held),
            (workers, waiting, 0)
        );
        assert_eq!(stats.pulled, (workers + waiting) as u64);

        // A complete output the consumer has not taken keeps its worker.
        assert!(gates.open(0));
        stepper.run_until_stalled();
        assert_eq!(gates.pulled(), workers + waiting);
        assert_eq!(gates.started(), workers);
        let stats = stream.stats();
        assert_eq!(
            (stats.active, stats.waiting, stats.held),
            (workers - 1, waiting, 1)
        );

        // Taking it frees exactly one start, and the queue is topped up by one.
        assert!(matches!(poll_once(&mut stream), Poll::Ready(Some(out)) if out.id == 0));
        stepper.run_until_stalled();
        assert_eq!(gates.pulled(), workers + waiting + 1);
        assert_eq!(gates.started(), workers + 1);
        assert_eq!(gates.counts().peak_running, workers);
    }
}

#[test]
fn ordered_source_advances_exactly_min_of_workers_and_window_plus_waiting() {
    for (workers, window, waiting) in [(4, 2, 3), (2, 4, 1), (3, 3, 0), (1, 5, 2)] {
        let gates = Gates::new();
        let mut stepper = StepExecutor::new();
        let mut stream = gates
            .tracked_source(100)
            .bounded(workers, waiting)
            .ordered(window)
            .spawn_on(stepper.spawner());

        assert!(poll_once(&mut stream).is_pending());
        stepper.run_until_stalled();
        let running = workers.min(window);
        assert_eq!(
            gates.pulled(),
            running + waiting,
            "W={workers} R={window} Q={waiting}"
        );
        assert_eq!(gates.started(), running);
        let stats = stream.stats();
        assert_eq!((stats.active, stats.waiting), (running, waiting));
    }
}

#[test]
fn ordered_window_caps_held_outputs_behind_a_slow_head() {
    let (workers, window, waiting) = (2, 4, 1);
    let gates = Gates::open_except(&[0]);
    let mut stepper = StepExecutor::new();
    let mut stream = gates
        .tracked_source(100)
        .bounded(workers, waiting)
        .ordered(window)
        .spawn_on(stepper.spawner());

    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();
    // Items 1..window completed past the blocked head, then the window is full.
    assert!(poll_once(&mut stream).is_pending());
    assert_eq!(gates.started(), window);
    assert_eq!(gates.pulled(), window + waiting);
    let stats = stream.stats();
    assert_eq!(
        (stats.active, stats.held, stats.waiting),
        (1, window - 1, waiting)
    );
    assert_eq!(stats.peak_held, window - 1);

    // The head completes: everything comes out in input order, never more than
    // `window` started and not yet yielded.
    assert!(gates.open(0));
    let mut next = 0;
    loop {
        stepper.run_until_stalled();
        let stats = stream.stats();
        assert!(stats.active + stats.held <= window, "{stats:?}");
        match poll_once(&mut stream) {
            Poll::Ready(Some(out)) => {
                assert_eq!(out.id, next);
                next += 1;
            }
            Poll::Ready(None) => break,
            Poll::Pending => panic!("stalled after {next} items: {gates:?}"),
        }
    }
    assert_eq!(next, 100);
    let stats = stream.stats();
    assert!(
        stats.peak_active <= workers && stats.peak_held <= window && stats.peak_waiting <= waiting
    );
}

#[test]
fn untaken_outputs_stop_the_workers_and_the_pulling() {
    let (workers, waiting) = (3, 2);
    let gates = Gates::open_except(&[]);
    let mut stepper = StepExecutor::new();
    let mut stream = gates
        .tracked_source(1000)
        .bounded(workers, waiting)
        .spawn_on(stepper.spawner());

    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();
    // Every future completes at once, but only `workers` outputs may wait for the
    // consumer, and then the queue fills and the source stops.
    let stats = stream.stats();
    assert_eq!(
        (stats.active, stats.held, stats.waiting),
        (0, workers, waiting)
    );
    assert_eq!(gates.pulled(), workers + waiting);
    assert_eq!(gates.counts().outputs_made, workers);
}

#[test]
fn a_completed_output_wakes_the_waiting_consumer() {
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates
        .tracked_source(3)
        .bounded(2, 1)
        .spawn_on(stepper.spawner());
    let (waker, wakes) = new_count_waker();
    let mut cx = Context::from_waker(&waker);

    assert!(stream.poll_next_unpin(&mut cx).is_pending());
    stepper.run_until_stalled();
    assert!(stream.poll_next_unpin(&mut cx).is_pending());
    let before = wakes.get();
    assert!(gates.open(1));
    stepper.run_until_stalled();
    assert!(wakes.get() > before, "the consumer was not woken");
    assert!(matches!(stream.poll_next_unpin(&mut cx), Poll::Ready(Some(out)) if out.id == 1));

    gates.open_all();
    stepper.run_until_stalled();
    gates.open_all(); // item 2 was pulled when item 1 was taken
    stepper.run_until_stalled();
    let before = wakes.get();
    let mut rest: Vec<usize> = Vec::new();
    while let Poll::Ready(Some(out)) = stream.poll_next_unpin(&mut cx) {
        rest.push(out.id);
    }
    rest.sort();
    assert_eq!(rest, [0, 2]);
    assert!(matches!(stream.poll_next_unpin(&mut cx), Poll::Ready(None)));
    assert_eq!(wakes.get(), before);
}

/// The same boundary on real multi-threaded executors: the source reaches
/// exactly `workers + waiting` while every future is blocked, the futures never
/// run more than `workers` at once, and the stream is dropped with the source
/// still there.
fn boundary_on_executor(
    spawn: impl FnOnce(&Gates, usize, usize) -> bounded_buffered::Spawned<Output>,
) {
    let (workers, waiting) = (3, 4);
    let gates = Gates::new();
    let mut stream = spawn(&gates, workers, waiting);
    assert!(poll_once(&mut stream).is_pending());
    gates.wait_until("the workers to start", |c| c.started == workers);
    gates.wait_until("the queue to fill", |c| c.pulled == workers + waiting);
    // A worker task counts an item in the stats in the lock section that pulled
    // it, just after the source yielded it: wait for the count, then check that
    // it stopped exactly there.
    eventually("the stats to count the pulled items", || {
        stream.stats().pulled as usize >= workers + waiting
    });
    let stats = stream.stats();
    assert!(
        stats.active <= workers && stats.waiting <= waiting,
        "{stats:?}"
    );
    assert_eq!(stats.pulled as usize, workers + waiting);
    drop(stream);
    gates.wait_until("everything to be dropped", |c| c.all_dropped());
    assert_eq!(gates.pulled(), workers + waiting);
    assert_eq!(gates.counts().peak_running, workers);
}

#[test]
fn boundary_on_tokio_multi_thread() {
    let runtime = tokio_multi_thread();
    boundary_on_executor(|gates, workers, waiting| {
        gates
            .tracked_source(100)
            .bounded(workers, waiting)
            .spawn_on(runtime.handle().clone())
    });
}

#[test]
fn boundary_on_smol_executor() {
    let pool = SmolPool::new(3);
    boundary_on_executor(|gates, workers, waiting| {
        gates
            .tracked_source(100)
            .bounded(workers, waiting)
            .spawn_on(Arc::clone(&pool.executor))
    });
}

/// Many items through real executors: peaks never exceed the budgets, outputs
/// taken slowly or quickly.
fn peaks_within_budgets(
    spawn: impl Fn(&Gates, usize, usize, Option<usize>) -> bounded_buffered::Spawned<Output>,
    block_on: impl Fn(std::pin::Pin<Box<dyn Future<Output = ()> + '_>>),
) {
    for (workers, waiting, window) in [(2, 3, None), (4, 1, Some(6)), (3, 0, Some(2))] {
        let gates = Gates::open_except(&[]);
        let mut stream = spawn(&gates, workers, waiting, window);
        block_on(Box::pin(async {
            let mut count = 0;
            while let Some(out) = stream.next().await {
                count += 1;
                drop(out);
                if count % 7 == 0 {
                    yield_now().await;
                }
            }
            assert_eq!(count, 500);
        }));
        let stats = stream.stats();
        let span = window.unwrap_or(workers);
        assert!(stats.peak_active <= workers.min(span), "{stats:?}");
        assert!(stats.peak_waiting <= waiting, "{stats:?}");
        assert!(stats.peak_held <= span, "{stats:?}");
        assert_eq!((stats.pulled, stats.completed), (500, 500));
        assert!(gates.counts().peak_running <= workers.min(span));
    }
}

#[test]
fn peaks_within_budgets_on_tokio_multi_thread() {
    let runtime = tokio_multi_thread();
    peaks_within_budgets(
        |gates, workers, waiting, window| {
            let stream = gates
                .tracked_source(500)
                .bounded(workers, waiting)
                .ordered_if(window);
            stream.spawn_on(runtime.handle().clone())
        },
        |future| runtime.block_on(future),
    );
}

#[test]
fn peaks_within_budgets_on_smol_executor() {
    let pool = SmolPool::new(3);
    peaks_within_budgets(
        |gates, workers, waiting, window| {
            let stream = gates
                .tracked_source(500)
                .bounded(workers, waiting)
                .ordered_if(window);
            stream.spawn_on(Arc::clone(&pool.executor))
        },
        |future| smol::block_on(future),
    );
}
