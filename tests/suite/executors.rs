//! Contract point 14, the same behaviour on every executor: `futures::executor`,
//! tokio's current-thread and multi-thread runtimes (also from a spawned task),
//! smol, and single-threaded executors with `!Send` futures; on each, points 1,
//! 3, 5 and 12 hold. Plus schedules defined by time (points 4 to 6), in both
//! modes, on the hand clock (`support::now`).

use std::cell::RefCell;
use std::marker::PhantomPinned;
use std::rc::Rc;
use std::thread;

use bounded_buffered::BoundedStreamExt;
use futures::channel::oneshot;
use futures::{Stream, StreamExt, stream};
use support::{
    Driven, Gates, Watchdog, advance, both_modes, counted, drive, ms, tokio_current_thread,
    tokio_multi_thread, yield_then,
};

/// Futures that need a few polls each, with `!Unpin` state held across an
/// await: every output once, and the budgets' peaks reached but not exceeded.
async fn unordered_outputs_each_once() {
    let count = 300;
    let mut stream = stream::iter(0..count)
        .map(|i| async move {
            let pinned = PhantomPinned;
            yield_then(i % 4, ()).await;
            let _keep = &pinned;
            i
        })
        .bounded(8, 4);
    let mut outputs = Vec::new();
    while let Some(i) = stream.next().await {
        outputs.push(i);
    }
    outputs.sort_unstable();
    assert_eq!(outputs, (0..count).collect::<Vec<_>>());
    let stats = stream.stats();
    assert_eq!(
        (stats.pulled, stats.completed),
        (count as u64, count as u64)
    );
    // Outputs that finish in their first poll are held and keep their worker,
    // so `peak_active` may stay below the worker budget; it never exceeds it.
    assert!(stats.peak_active <= 8, "{stats:?}");
    assert!(stats.peak_active + stats.peak_held >= 8, "{stats:?}");
    assert_eq!(stats.peak_waiting, 4, "{stats:?}");
}

async fn ordered_outputs_in_input_order() {
    let count = 300;
    let outputs: Vec<usize> = stream::iter(0..count)
        .map(|i| yield_then((count - i) % 7, i))
        .bounded(6, 3)
        .ordered(10)
        .collect()
        .await;
    assert_eq!(outputs, (0..count).collect::<Vec<_>>());
}

/// The waiting budget's boundary, checked inside a task, then every item.
async fn source_stops_at_workers_plus_waiting() {
    let (workers, waiting) = (3, 5);
    let gates = Gates::new();
    let (source, counts) = counted(gates.source(40));
    let mut stream = source.bounded(workers, waiting);
    assert!(futures::poll!(stream.next()).is_pending());
    assert_eq!(counts.pulled(), workers + waiting);
    assert!(futures::poll!(stream.next()).is_pending());
    assert_eq!(counts.pulled(), workers + waiting);
    assert_eq!(
        take_opening(&mut stream, &gates).await,
        (0..40).collect::<Vec<_>>()
    );
}

/// Takes every output, opening each gate once it has started, in order: the
/// outputs, sorted.
async fn take_opening(
    stream: &mut (impl Stream<Item = usize> + Unpin),
    gates: &Gates,
) -> Vec<usize> {
    let mut outputs = Vec::new();
    let mut opened = 0;
    loop {
        while gates.is_started(opened) {
            gates.open(opened);
            opened += 1;
        }
        match stream.next().await {
            Some(id) => outputs.push(id),
            None => break,
        }
    }
    outputs.sort_unstable();
    outputs
}

/// Futures completed from another thread, in reverse order.
async fn wakes_from_another_thread() {
    let count = 64;
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..count).map(|_| oneshot::channel()).unzip();
    let sender_thread = thread::spawn(move || {
        for (i, sender) in senders.into_iter().enumerate().rev() {
            sender
                .send(i)
                .expect("the receiver is alive until it gets its value");
        }
    });
    let outputs: Vec<usize> = stream::iter(receivers)
        .map(|receiver| async move { receiver.await.expect("every sender sends") })
        .bounded(8, 8)
        .ordered(16)
        .collect()
        .await;
    sender_thread.join().expect("the sender thread panicked");
    assert_eq!(outputs, (0..count).collect::<Vec<_>>());
}

async fn every_scenario() {
    unordered_outputs_each_once().await;
    ordered_outputs_in_input_order().await;
    source_stops_at_workers_plus_waiting().await;
    wakes_from_another_thread().await;
}

#[test]
fn on_futures_block_on() {
    let _watchdog = Watchdog::start("on_futures_block_on");
    futures::executor::block_on(every_scenario());
}

#[test]
fn on_tokio_current_thread() {
    let _watchdog = Watchdog::start("on_tokio_current_thread");
    tokio_current_thread().block_on(every_scenario());
}

#[test]
fn on_tokio_multi_thread() {
    let _watchdog = Watchdog::start("on_tokio_multi_thread");
    tokio_multi_thread().block_on(every_scenario());
}

#[test]
fn in_a_spawned_tokio_task() {
    // Needs the stream and everything it holds to be `Send`.
    let _watchdog = Watchdog::start("in_a_spawned_tokio_task");
    tokio_multi_thread().block_on(async {
        let task = tokio::spawn(every_scenario());
        task.await.expect("the spawned task panicked");
    });
}

#[test]
fn a_stream_moved_between_tasks_keeps_working() {
    let _watchdog = Watchdog::start("a_stream_moved_between_tasks_keeps_working");
    tokio_multi_thread().block_on(moved_between_tasks());
}

async fn moved_between_tasks() {
    // Polled by one task, then moved to another (possibly on another worker
    // thread): the wakers registered by the first task must not strand it.
    let gates = Gates::new();
    let mut stream = gates.source(10).bounded(2, 1);
    assert!(futures::poll!(stream.next()).is_pending());
    let task = tokio::spawn(async move { take_opening(&mut stream, &gates).await });
    let outputs = task.await.expect("the task panicked");
    assert_eq!(outputs, (0..10).collect::<Vec<_>>());
}

#[test]
fn on_smol() {
    let _watchdog = Watchdog::start("on_smol");
    smol::block_on(every_scenario());
}

#[test]
fn on_a_smol_executor_from_a_spawned_task() {
    let _watchdog = Watchdog::start("on_a_smol_executor_from_a_spawned_task");
    let executor = smol::Executor::new();
    smol::block_on(executor.run(executor.spawn(every_scenario())));
}

/// `!Send` futures (sharing an `Rc`) and a `!Send` source.
async fn not_send_futures() {
    let log = Rc::new(RefCell::new(Vec::new()));
    let source_log = Rc::clone(&log);
    let outputs: Vec<usize> = stream::iter(0..50)
        .map(move |i| {
            let log = Rc::clone(&source_log);
            async move {
                yield_then(i % 3, ()).await;
                log.borrow_mut().push(i);
                i
            }
        })
        .bounded(4, 2)
        .ordered(6)
        .collect()
        .await;
    assert_eq!(outputs, (0..50).collect::<Vec<_>>());
    let mut logged = log.borrow().clone();
    logged.sort_unstable();
    assert_eq!(logged, (0..50).collect::<Vec<_>>());
    assert_eq!(
        Rc::strong_count(&log),
        1,
        "the stream let go of every future"
    );
}

#[test]
fn not_send_futures_on_futures_block_on() {
    let _watchdog = Watchdog::start("not_send_futures_on_futures_block_on");
    futures::executor::block_on(not_send_futures());
}

#[test]
fn not_send_futures_on_a_local_pool() {
    let _watchdog = Watchdog::start("not_send_futures_on_a_local_pool");
    let mut pool = futures::executor::LocalPool::new();
    futures::task::LocalSpawnExt::spawn_local(&pool.spawner(), not_send_futures())
        .expect("the pool accepts tasks");
    pool.run();
}

#[test]
fn not_send_futures_on_a_tokio_local_set() {
    let _watchdog = Watchdog::start("not_send_futures_on_a_tokio_local_set");
    let local = tokio::task::LocalSet::new();
    tokio_current_thread()
        .block_on(local.run_until(async { tokio::task::spawn_local(not_send_futures()).await }))
        .expect("the local task panicked");
}

#[test]
fn not_send_futures_on_a_smol_local_executor() {
    let _watchdog = Watchdog::start("not_send_futures_on_a_smol_local_executor");
    let executor = smol::LocalExecutor::new();
    smol::block_on(executor.run(executor.spawn(not_send_futures())));
}

/// Runs the gates of `delays.len()` items, each item `delays[id]` ms long from
/// its start, on the hand clock: each gate opens when its time comes, and the
/// consumer takes every output at once. Returns the outputs and the starts, as
/// (id, ms), in the order they happened.
fn run_on_the_hand_clock(
    run: &mut Driven<'_, usize>,
    gates: &Gates,
    delays: &[u64],
) -> (Vec<usize>, Vec<(usize, u64)>) {
    let mut starts: Vec<Option<u64>> = vec![None; delays.len()];
    let mut opened = vec![false; delays.len()];
    let mut at = 0;
    let mut outputs = run.take_ready();
    loop {
        // Starts happen only inside a step (in place, the consumer's poll;
        // spawned, the tasks it sets off), never while the clock moves.
        for (id, start) in starts.iter_mut().enumerate() {
            if start.is_none() && gates.is_started(id) {
                *start = Some(at);
            }
        }
        let end = |id: usize| starts[id].map(|start| start + delays[id]);
        let next = (0..delays.len())
            .filter(|&id| !opened[id])
            .filter_map(|id| Some((end(id)?, id)));
        let Some((end, id)) = next.min() else { break };
        advance(ms(end - at));
        at = end;
        opened[id] = gates.open(id);
        outputs.extend(run.take_ready());
    }
    outputs.extend(run.take_to_end());
    let mut starts: Vec<(usize, u64)> =
        starts.into_iter().map(Option::unwrap).enumerate().collect();
    starts.sort_by_key(|&(id, start)| (start, id));
    (outputs, starts)
}

both_modes! {
    /// Points 4 and 6 (18 spawned): each item starts the moment a worker frees
    /// up, and outputs follow completion times.
    fn outputs_follow_completion_times(mode) {
        // Two workers; item i runs `delays[i]`. Each item starts the moment a
        // worker frees up: 0 and 1 at 0 ms, 2 when 1 ends (10 ms), 3 when 0
        // ends (50 ms), 4 when 2 ends (55 ms).
        let delays = [50, 10, 45, 20, 30];
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(delays.len()).bounded(2, 1));
        let (outputs, starts) = run_on_the_hand_clock(&mut run, &gates, &delays);
        assert_eq!(outputs, [1, 0, 2, 3, 4]);
        assert_eq!(starts, [(0, 0), (1, 0), (2, 10), (3, 50), (4, 55)]);
    }

    /// Point 5: a slow head does not stall a wide window.
    fn a_slow_head_does_not_stall_a_wide_window(mode) {
        // Item 0 takes 100 ms, the rest 10 ms each. Two workers: with a window
        // of 2 the second worker runs one item and waits for the head; with a
        // window of 6 it runs items 1..6 one after another while the head runs.
        let delays = [100, 10, 10, 10, 10, 10];
        for (window, expected_starts) in [(2, [0, 0, 100, 100, 110, 110]), (6, [0, 0, 10, 20, 30, 40])] {
            let gates = Gates::new();
            let mut run = drive!(mode, gates.source(delays.len()).bounded(2, 0).ordered(window));
            let (outputs, starts) = run_on_the_hand_clock(&mut run, &gates, &delays);
            assert_eq!(outputs, (0..6).collect::<Vec<_>>());
            let starts: Vec<u64> = starts.into_iter().map(|(_, at)| at).collect();
            assert_eq!(starts, expected_starts, "window {window}");
        }
    }
}
