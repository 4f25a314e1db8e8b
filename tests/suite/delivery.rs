//! Delivery, in both modes (contract point 1; 17 spawned): every output is
//! yielded exactly once, in input order when ordered; the stream ends only
//! after the source ended and every output was yielded, then returns `None`
//! forever and never polls the source again. Nothing is pulled (or spawned)
//! before the first poll; spawned, worker tasks grow with demand up to the
//! workers, and the stream is `Send`, `Unpin` and `Debug` without anything
//! from the item type.
//!
//! Deterministic: the futures are gates the test opens, or ready, and
//! spawned streams run their tasks on an executor the test steps
//! (`support::drive!`). Every output is also checked on tokio's and smol's
//! thread pools.

use std::future::ready;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, SmolGlobal, Spawned, Stats};
use futures::executor::block_on;
use futures::future::BoxFuture;
use futures::stream::{self, Stream, StreamExt};
use support::{
    Gates, Mode, OrderedIf, SmolPool, StepExecutor, assert_all_done, both_modes, both_pools,
    counted, drive, fed_source, fresh_stats, poll_once, random_completions, tokio_multi_thread,
    yield_now,
};

const ITEMS: usize = 2_000;

/// Items that yield a varying number of times, so they complete out of order.
fn jittery(items: usize) -> impl Stream<Item = impl Future<Output = usize> + Send> + Send + Unpin {
    stream::iter(0..items).map(|index| async move {
        for _ in 0..(index * 7919) % 5 {
            yield_now().await;
        }
        index
    })
}

both_modes! {
    /// Point 1: every output exactly once, in input order when ordered,
    /// whatever order the futures complete in.
    fn every_output_is_yielded_exactly_once_for_any_completion_order(mode) {
        for seed in 0..20 {
            for window in [None, Some(6)] {
                random_completions(mode, seed, (4, window, 3), 60, false);
            }
        }
    }

    /// Point 1: many ready futures, each yielded once.
    fn many_ready_futures_are_each_yielded_once(mode) {
        let source = stream::iter(0..5_000u32).map(|i| async move { i });
        let mut run = drive!(mode, source.bounded(7, 5));
        let mut outputs = run.take_woken();
        assert!(run.is_terminated(), "parked before the end");
        outputs.sort_unstable();
        assert_eq!(outputs, (0..5_000).collect::<Vec<_>>());
    }

    /// Point 1: nothing runs, waits or is held, but the source may still
    /// produce: the stream does not end.
    fn does_not_end_while_the_source_has_not_ended(mode) {
        let (source, feed) = fed_source();
        let mut run = drive!(mode, source.bounded(2, 1));
        feed.push(ready(1));
        feed.push(ready(2));
        let mut outputs = run.take_woken();
        outputs.sort_unstable();
        assert_eq!(outputs, [1, 2]);
        assert!(run.poll().is_pending());
        assert!(!run.is_terminated());
        // Spawned, the source wakes a task, whose output wakes the consumer.
        let wakes = run.wakes();
        feed.push(ready(3));
        run.settle();
        assert_eq!(run.wakes(), wakes + 1, "the source's wake must reach the consumer");
        assert_eq!(run.poll(), Poll::Ready(Some(3)));
        assert!(run.poll().is_pending());
        feed.close();
        run.settle();
        assert_eq!(run.wakes(), wakes + 2);
        assert_eq!(run.poll(), Poll::Ready(None));
        assert!(run.is_terminated());
    }

    /// Point 1: the source ended, but a future runs or an output is held.
    fn does_not_end_while_a_future_runs_or_an_output_is_held(mode) {
        for window in [None, Some(3)] {
            let gates = Gates::new();
            let mut run = drive!(mode, gates.source(3).bounded(3, 0).ordered_if(window));
            assert!(run.poll().is_pending());
            // The source has ended by now: it had three items and three workers.
            gates.open(2);
            gates.open(1);
            let first = run.take_ready();
            if window.is_some() {
                assert_eq!(first, [] as [usize; 0], "the head is still running");
                assert_eq!(run.stats().held, 2);
            } else {
                assert_eq!(first.len(), 2);
            }
            assert!(!run.is_terminated());
            gates.open(0);
            let rest = run.take_ready();
            assert_eq!(rest, if window.is_some() { &[0, 1, 2][..] } else { &[0] });
            assert!(run.is_terminated(), "take_ready stops at the end");
        }
    }

    /// Point 1: `is_terminated` only once `None` was returned (not before
    /// the first poll, nor once every output is out), then `None` forever,
    /// and the source that ended is never polled again; spawned, the tasks
    /// stop at the end (point 17).
    fn returns_none_forever_and_never_polls_the_source_again(mode) {
        for (items, workers, waiting) in [(2, 1, 0), (3, 2, 2), (5, 2, 1)] {
            let (source, counts) = counted(jittery(items));
            let mut run = drive!(mode, source.bounded(workers, waiting));
            let mut outputs = Vec::new();
            loop {
                assert!(!run.is_terminated());
                match run.poll_woken() {
                    Poll::Ready(Some(output)) => outputs.push(output),
                    Poll::Ready(None) => break,
                    Poll::Pending => panic!("parked before the end"),
                }
            }
            assert!(run.is_terminated());
            outputs.sort_unstable();
            assert_eq!(outputs, (0..items).collect::<Vec<_>>());
            let source_polls = counts.polls();
            for _ in 0..10 {
                assert_eq!(run.poll(), Poll::Ready(None));
                assert!(run.is_terminated());
            }
            assert_eq!(counts.polls(), source_polls, "a source that ended was polled again");
            assert_eq!(run.size_hint(), (0, Some(0)));
            if mode.is_spawned() {
                // The workers that waited for more work were stopped at the end.
                run.settle();
                assert_eq!(run.executor().live_tasks(), 0);
            }
        }
    }

    /// Point 1: an empty source ends the stream at once.
    fn an_empty_source_ends_at_once(mode) {
        for window in [None, Some(4)] {
            let (source, counts) = counted(stream::empty::<std::future::Ready<u8>>());
            let mut run = drive!(mode, source.bounded(3, 2).ordered_if(window));
            assert!(!run.is_terminated());
            if mode.is_spawned() {
                // Points 16 and 17: the first poll spawns the task that pulls
                // from the source; it finds the end and wakes the consumer.
                assert!(run.poll().is_pending());
            }
            assert_eq!(run.poll(), Poll::Ready(None));
            assert!(run.is_terminated());
            assert_eq!(run.poll(), Poll::Ready(None));
            assert_eq!(counts.polls(), 1);
            assert_eq!(run.stats(), fresh_stats(3, 2));
            assert_eq!(run.wakes(), usize::from(mode.is_spawned()));
        }
    }

    /// Point 1: a source that is pending first, then ends, yields nothing.
    fn a_source_that_is_pending_first_then_ends_yields_nothing(mode) {
        let (source, feed) = fed_source::<std::future::Ready<u8>>();
        let mut run = drive!(mode, source.bounded(1, 0));
        assert!(run.poll().is_pending());
        assert!(!run.is_terminated());
        feed.close();
        run.settle();
        assert_eq!(run.wakes(), 1);
        assert_eq!(run.poll(), Poll::Ready(None));
        assert!(run.is_terminated());
    }

    /// Points 3, 9 and 17: nothing is pulled or spawned before the first
    /// poll, and a stream dropped unpolled drops its source and spawns
    /// nothing.
    fn nothing_is_pulled_or_spawned_before_the_first_poll(mode) {
        let gates = Gates::open_except(&[]);
        let mut run = drive!(mode, gates.tracked_source(10).bounded(2, 2));
        run.drop_stream();
        assert!(gates.counts().all_dropped());
        if mode.is_spawned() {
            assert_eq!(run.spawns(), 0);
        }

        let gates = Gates::open_except(&[]);
        let mut run = drive!(mode, gates.tracked_source(10).bounded(2, 2));
        run.settle();
        assert_eq!(gates.pulled(), 0);
        assert_eq!(run.stats(), fresh_stats(2, 2));
        if mode.is_spawned() {
            assert_eq!(run.spawns(), 0);
        }
        let first = run.poll_alone();
        if mode.is_spawned() {
            // The first poll spawns one worker task; the others come as items
            // need them.
            assert!(first.is_pending());
            assert_eq!(run.spawns(), 1);
            run.settle();
            assert!(run.spawns() <= 2, "more tasks than workers");
        }
        assert!(gates.pulled() > 0);
    }

    /// Point 15: the stats count while running and after the end.
    fn stats_count_while_running_and_after_the_end(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(6).bounded(2, 1));
        assert!(run.poll().is_pending());
        let stats = run.stats();
        let counts = (stats.active, stats.waiting, stats.held, stats.pulled, stats.completed);
        assert_eq!(counts, (2, 1, 0, 3, 0));
        let mut taken = 0;
        while taken < 6 {
            gates.open_all();
            taken += run.take_ready().len();
        }
        assert_eq!(run.poll(), Poll::Ready(None));
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));
        assert_eq!((stats.pulled, stats.completed), (6, 6));
        assert_eq!((stats.peak_active, stats.peak_waiting), (2, 1));
    }

    /// Points 13 and 17: a huge worker budget over a few items needs a few
    /// workers; spawned, a few tasks.
    fn a_huge_worker_budget_over_a_few_items_spawns_a_few_tasks(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(5).bounded(100_000, 0));
        assert!(run.poll().is_pending());
        assert_eq!(gates.started(), 5);
        if mode.is_spawned() {
            // One task per item, and one more that found the source ended.
            assert_eq!((run.spawns(), run.executor().ready_tasks()), (6, 0));
        }
        gates.open_all();
        let mut outputs = run.take_to_end();
        outputs.sort_unstable();
        assert_eq!(outputs, [0, 1, 2, 3, 4]);
        if mode.is_spawned() {
            run.settle();
            assert_eq!(run.executor().live_tasks(), 0, "tasks outlived the stream");
        }
    }
}

/// Point 17: the first poll spawns one task; each spawns the next while
/// starts are free and items come, never more than the workers.
#[test]
fn tasks_are_spawned_as_items_need_them_and_never_beyond_workers() {
    for (workers, waiting) in [(1, 0), (3, 2), (8, 0)] {
        let gates = Gates::new();
        let mut run = drive!(Mode::Spawned, gates.source(100).bounded(workers, waiting));
        // Tasks spawned, and tasks woken and not polled since.
        let tasks =
            |run: &mut support::Driven<'_, usize>| (run.spawns(), run.executor().ready_tasks());
        assert_eq!(tasks(&mut run), (0, 0), "spawned before the first poll");
        assert!(run.poll_alone().is_pending());
        assert_eq!(tasks(&mut run), (1, 1));
        run.settle();
        assert_eq!(tasks(&mut run), (workers, 0), "W={workers} Q={waiting}");
        assert_eq!(
            (gates.started(), gates.pulled()),
            (workers, workers + waiting)
        );
        // Outputs handed out and items started again: no more tasks.
        for round in 0..3 {
            gates.open_all();
            run.take_ready();
            assert_eq!(run.spawns(), workers, "round {round}");
        }
    }
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
    let _ = block_on(stream.next());
    let stepper = StepExecutor::new();
    let _ = stream.spawn_on(stepper.spawner());
}

fn check_exactly_once(mut outputs: Vec<usize>, stats: Stats) {
    outputs.sort_unstable();
    assert_eq!(outputs, (0..ITEMS).collect::<Vec<_>>());
    assert_all_done(&stats, ITEMS);
}

both_pools! {
    fn every_output_exactly_once(pool) {
        let mut stream = jittery(ITEMS).bounded(4, 8).spawn_on(pool.spawner());
        let outputs = pool.block_on(stream.by_ref().collect::<Vec<_>>());
        check_exactly_once(outputs, stream.stats());
    }

    fn ordered_outputs_come_in_input_order(pool) {
        for window in [1, 4, 16] {
            let stream = jittery(ITEMS).bounded(4, 2).ordered(window);
            let outputs: Vec<usize> = pool.block_on(stream.spawn_on(pool.spawner()).collect());
            assert_eq!(outputs, (0..ITEMS).collect::<Vec<_>>(), "window {window}");
        }
    }
}

#[test]
fn every_output_exactly_once_with_a_closure_spawner() {
    let runtime = tokio_multi_thread();
    let handle = runtime.handle().clone();
    let mut stream = jittery(ITEMS)
        .bounded(3, 0)
        .spawn_on(move |task: BoxFuture<'static, ()>| {
            handle.spawn(task);
        });
    let outputs = runtime.block_on(stream.by_ref().collect::<Vec<_>>());
    check_exactly_once(outputs, stream.stats());
}

#[test]
fn smol_global_executor_runs_the_stream() {
    let stream = jittery(200).bounded(3, 3).ordered(5);
    let outputs: Vec<usize> = smol::block_on(stream.spawn_on(SmolGlobal).collect());
    assert_eq!(outputs, (0..200).collect::<Vec<_>>());
}

#[test]
fn the_spawner_is_called_once_per_task() {
    let calls = Arc::new(AtomicUsize::new(0));
    let runtime = tokio_multi_thread();
    let handle = runtime.handle().clone();
    let counted = Arc::clone(&calls);
    let stream = jittery(50)
        .bounded(5, 5)
        .spawn_on(move |task: BoxFuture<'static, ()>| {
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
    let stream = gates.tracked_source(10).bounded(2, 2);
    let mut stream = stream.spawn_on(runtime.handle().clone());
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
    let stream = gates.tracked_source(10).bounded(2, 2);
    let stream = stream.spawn_on(Arc::clone(&pool.executor));
    assert!(pool.executor.is_empty());
    assert_eq!(gates.pulled(), 0);
    assert_eq!(smol::block_on(stream.count()), 10);
}

/// Points 1 and 17 at a glance: a thousand ready futures, every output once,
/// in place on `futures::executor` and spawned on tokio and on smol's global
/// executor, in input order when ordered.
#[test]
fn smoke() {
    let ready = || stream::iter(0..1000u32).map(|i| async move { i });
    let out: Vec<u32> = block_on(ready().bounded(4, 8).collect());
    assert_eq!(out.len(), 1000);
    let runtime = tokio_multi_thread();
    let out: Vec<u32> = runtime.block_on(
        ready()
            .bounded(4, 8)
            .spawn_on(runtime.handle().clone())
            .collect(),
    );
    assert_eq!(out.len(), 1000);
    let out: Vec<u32> = smol::block_on(
        ready()
            .bounded(4, 8)
            .ordered(5)
            .spawn_on(SmolGlobal)
            .collect(),
    );
    assert_eq!(out, (0..1000).collect::<Vec<_>>());
}
