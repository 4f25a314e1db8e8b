//! Contract point 17: spawned mode delivers like the in-place adapter: every
//! output exactly once, in input order when ordered, then `None` forever; it is
//! lazy, `Send`, and its `Debug` and `Stats` work without anything from the item
//! type.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, Spawned, Stats};
use futures::stream::{self, FusedStream, Stream, StreamExt};
use support::{
    Gates, SmolPool, StepExecutor, assert_all_done, fresh_stats, poll_once, tokio_multi_thread,
    yield_now,
};

const ITEMS: usize = 2_000;

/// Items that yield a varying number of times, so they complete out of order.
fn jittery(items: usize) -> impl futures::Stream<Item = impl Future<Output = usize> + Send> + Send {
    stream::iter(0..items).map(|index| async move {
        for _ in 0..(index * 7919) % 5 {
            yield_now().await;
        }
        index
    })
}

fn check_exactly_once(mut outputs: Vec<usize>, stats: Stats) {
    outputs.sort_unstable();
    assert_eq!(outputs, (0..ITEMS).collect::<Vec<_>>());
    assert_all_done(&stats, ITEMS);
}

#[test]
fn every_output_exactly_once_on_tokio_multi_thread() {
    let runtime = tokio_multi_thread();
    let mut stream = jittery(ITEMS)
        .bounded(4, 8)
        .spawn_on(runtime.handle().clone());
    let outputs = runtime.block_on(stream.by_ref().collect::<Vec<_>>());
    check_exactly_once(outputs, stream.stats());
}

#[test]
fn every_output_exactly_once_on_smol_executor() {
    let pool = SmolPool::new(3);
    let mut stream = jittery(ITEMS)
        .bounded(4, 8)
        .spawn_on(Arc::clone(&pool.executor));
    let outputs = smol::block_on(stream.by_ref().collect::<Vec<_>>());
    check_exactly_once(outputs, stream.stats());
}

#[test]
fn every_output_exactly_once_with_a_closure_spawner() {
    let runtime = tokio_multi_thread();
    let handle = runtime.handle().clone();
    let mut stream = jittery(ITEMS).bounded(3, 0).spawn_on(
        move |task: futures::future::BoxFuture<'static, ()>| {
            handle.spawn(task);
        },
    );
    let outputs = runtime.block_on(stream.by_ref().collect::<Vec<_>>());
    check_exactly_once(outputs, stream.stats());
}

#[test]
fn ordered_outputs_come_in_input_order_on_tokio_multi_thread() {
    let runtime = tokio_multi_thread();
    for window in [1, 4, 16] {
        let stream = jittery(ITEMS).bounded(4, 2).ordered(window);
        let outputs: Vec<usize> =
            runtime.block_on(stream.spawn_on(runtime.handle().clone()).collect());
        assert_eq!(outputs, (0..ITEMS).collect::<Vec<_>>(), "window {window}");
    }
}

#[test]
fn ordered_outputs_come_in_input_order_on_smol_executor() {
    let pool = SmolPool::new(3);
    for window in [1, 4, 16] {
        let stream = jittery(ITEMS).bounded(4, 2).ordered(window);
        let outputs: Vec<usize> =
            smol::block_on(stream.spawn_on(Arc::clone(&pool.executor)).collect());
        assert_eq!(outputs, (0..ITEMS).collect::<Vec<_>>(), "window {window}");
    }
}

#[test]
fn smol_global_executor_runs_the_stream() {
    let outputs: Vec<usize> = smol::block_on(
        jittery(200)
            .bounded(3, 3)
            .ordered(5)
            .spawn_on(bounded_buffered::SmolGlobal)
            .collect(),
    );
    assert_eq!(outputs, (0..200).collect::<Vec<_>>());
}

#[test]
fn nothing_is_spawned_or_pulled_before_the_first_poll() {
    let gates = Gates::open_except(&[]);
    let mut stepper = StepExecutor::new();
    let mut stream = gates
        .tracked_source(10)
        .bounded(2, 2)
        .spawn_on(stepper.spawner());
    stepper.run_until_stalled();
    assert_eq!(stepper.spawns(), 0);
    assert_eq!(gates.pulled(), 0);
    assert_eq!(stream.stats(), fresh_stats(2, 2));

    // The first poll spawns one worker task; the others come as items need them.
    assert!(poll_once(&mut stream).is_pending());
    assert_eq!(stepper.spawns(), 1);
    stepper.run_until_stalled();
    assert!(gates.pulled() > 0);
    assert!(stepper.spawns() <= 2, "more tasks than workers");
}

#[test]
fn dropping_a_never_polled_stream_drops_the_source_and_spawns_nothing() {
    let gates = Gates::open_except(&[]);
    let stepper = StepExecutor::new();
    let stream = gates
        .tracked_source(10)
        .bounded(2, 2)
        .spawn_on(stepper.spawner());
    drop(stream);
    assert!(gates.counts().all_dropped());
    assert_eq!(stepper.spawns(), 0);
}

#[test]
fn ends_with_none_forever_and_is_terminated() {
    let mut stepper = StepExecutor::new();
    let mut stream = jittery(5).bounded(2, 1).spawn_on(stepper.spawner());
    let mut outputs = Vec::new();
    assert!(!stream.is_terminated());
    loop {
        stepper.run_until_stalled();
        match poll_once(&mut stream) {
            Poll::Ready(Some(output)) => outputs.push(output),
            Poll::Ready(None) => break,
            Poll::Pending => {}
        }
        assert!(!stream.is_terminated());
    }
    assert!(stream.is_terminated());
    assert_eq!(stream.size_hint(), (0, Some(0)));
    assert!(matches!(poll_once(&mut stream), Poll::Ready(None)));
    assert!(matches!(poll_once(&mut stream), Poll::Ready(None)));
    outputs.sort_unstable();
    assert_eq!(outputs, [0, 1, 2, 3, 4]);
    // The workers that waited for more work were stopped at the end.
    stepper.run_until_stalled();
    assert_eq!(stepper.live_tasks(), 0);
}

#[test]
fn an_empty_source_ends_at_once() {
    let runtime = tokio_multi_thread();
    let stream = stream::empty::<std::future::Ready<u8>>()
        .bounded(3, 3)
        .spawn_on(runtime.handle().clone());
    let outputs: Vec<u8> = runtime.block_on(stream.collect());
    assert!(outputs.is_empty());
}

#[test]
fn stats_count_while_running_and_after_the_end() {
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates
        .tracked_source(6)
        .bounded(2, 1)
        .spawn_on(stepper.spawner());
    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();
    let stats = stream.stats();
    assert_eq!(
        (
            stats.active,
            stats.waiting,
            stats.held,
            stats.pulled,
            stats.completed
        ),
        (2, 1, 0, 3, 0)
    );

    let mut taken = 0;
    while taken < 6 {
        gates.open_all();
        stepper.run_until_stalled();
        while let Poll::Ready(Some(_)) = poll_once(&mut stream) {
            taken += 1;
        }
    }
    stepper.run_until_stalled();
    assert!(matches!(poll_once(&mut stream), Poll::Ready(None)));
    let stats = stream.stats();
    assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));
    assert_eq!((stats.pulled, stats.completed), (6, 6));
    assert_eq!((stats.peak_active, stats.peak_waiting), (2, 1));
}

#[test]
fn spawned_is_send_and_unpin_and_debug_without_debug_items() {
    fn assert_send_unpin<T: Send + Unpin>(_: &T) {}
    struct NotDebug;
    let stepper = StepExecutor::new();
    let stream: Spawned<NotDebug> = stream::iter([1])
        .map(|_| async { NotDebug })
        .bounded(2, 3)
        .ordered(4)
        .spawn_on(stepper.spawner());
    assert_send_unpin(&stream);
    let debug = format!("{stream:?}");
    assert!(debug.starts_with("Spawned {"), "{debug}");
    assert!(
        debug.contains("workers: 2")
            && debug.contains("waiting: 3")
            && debug.contains("window: Some(4)")
    );
}

#[test]
#[should_panic(expected = "before it is first polled")]
fn spawn_on_after_the_first_poll_panics() {
    let mut stream = stream::iter([1]).map(|n| async move { n }).bounded(1, 0);
    let _ = futures::executor::block_on(stream.next());
    let stepper = StepExecutor::new();
    let _ = stream.spawn_on(stepper.spawner());
}

#[test]
fn the_spawner_is_called_once_per_task() {
    let calls = Arc::new(AtomicUsize::new(0));
    let runtime = tokio_multi_thread();
    let handle = runtime.handle().clone();
    let counted = Arc::clone(&calls);
    let stream =
        jittery(50)
            .bounded(5, 5)
            .spawn_on(move |task: futures::future::BoxFuture<'static, ()>| {
                counted.fetch_add(1, Ordering::SeqCst);
                handle.spawn(task);
            });
    let outputs: Vec<usize> = runtime.block_on(stream.collect());
    assert_eq!(outputs.len(), 50);
    // Tasks are spawned on demand, never more than the workers.
    assert!((1..=5).contains(&calls.load(Ordering::SeqCst)));
}

#[test]
fn nothing_runs_before_the_first_poll_on_tokio_and_smol() {
    let runtime = tokio_multi_thread();
    let gates = Gates::open_except(&[]);
    let mut stream = gates
        .tracked_source(10)
        .bounded(2, 2)
        .spawn_on(runtime.handle().clone());
    assert_eq!(runtime.metrics().num_alive_tasks(), 0);
    assert_eq!(gates.pulled(), 0);
    // The first poll spawns a worker task, which may spawn the other before
    // this line; they live until the stream ends (waiting for the consumer to
    // take outputs).
    let first = match poll_once(&mut stream) {
        Poll::Ready(Some(_)) => 1,
        Poll::Pending => 0,
        Poll::Ready(None) => panic!("ended early"),
    };
    assert!((1..=2).contains(&runtime.metrics().num_alive_tasks()));
    let taken = first + runtime.block_on(stream.count());
    assert_eq!(taken, 10);

    let pool = SmolPool::new(2);
    let gates = Gates::open_except(&[]);
    let stream = gates
        .tracked_source(10)
        .bounded(2, 2)
        .spawn_on(Arc::clone(&pool.executor));
    assert!(pool.executor.is_empty());
    assert_eq!(gates.pulled(), 0);
    assert_eq!(smol::block_on(stream.count()), 10);
}
