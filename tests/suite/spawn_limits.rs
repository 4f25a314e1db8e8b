//! Limits that move, in spawned mode (contract point 25, with 16 and 17): a
//! `Limits` handle raises, lowers and pauses `workers` and `waiting` while the
//! tasks run, from this thread or another. A raise of `workers` sends for a
//! task at once (an idle one, or a new one: tasks grow on demand); a raise of
//! `waiting` has an idle task pull ahead at once; lowering cancels nothing and
//! drops nothing; once the limits are stable and the work is within them, the
//! admission bound is exact for them. A handle taken before `spawn_on` is the
//! same handle afterwards.
//!
//! Deterministic: the tasks run on an executor the test steps by hand until
//! nothing can move, the futures are gates the test opens.

use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, Spawned};
use support::{Gates, StepExecutor, poll_once};

/// The counts that matter here: (running futures, waiting items, items
/// pulled), once the tasks can do nothing more.
fn settle(
    stream: &mut Spawned<usize>,
    stepper: &mut StepExecutor,
    gates: &Gates,
) -> (usize, usize, usize) {
    stepper.run_until_stalled();
    let stats = stream.stats();
    assert_eq!(stats.active, gates.running(), "stats and futures disagree");
    (stats.active, stats.waiting, gates.pulled())
}

/// Takes every output the stream has ready, stepping the tasks in between.
fn drain_ready(stream: &mut Spawned<usize>, stepper: &mut StepExecutor) -> Vec<usize> {
    let mut taken = Vec::new();
    loop {
        stepper.run_until_stalled();
        match poll_once(stream) {
            Poll::Ready(Some(id)) => taken.push(id),
            Poll::Ready(None) => panic!("the stream ended early"),
            Poll::Pending => return taken,
        }
    }
}

#[test]
fn raising_workers_starts_items_at_once_and_grows_the_tasks() {
    for ordered in [false, true] {
        let gates = Gates::new();
        let mut stepper = StepExecutor::new();
        let stream = gates.source(100).bounded(2, 1);
        let stream = if ordered { stream.ordered(8) } else { stream };
        let mut stream = stream.spawn_on(stepper.spawner());
        assert!(poll_once(&mut stream).is_pending());
        assert_eq!(settle(&mut stream, &mut stepper, &gates), (2, 1, 3));
        assert_eq!(stepper.spawns(), 2);

        stream.limits().set_workers(5);
        // No completion, no consumer poll: the handle sent for the tasks.
        assert_eq!(settle(&mut stream, &mut stepper, &gates), (5, 1, 6));
        assert_eq!(stepper.spawns(), 5, "one task per start, spawned on demand");
        assert_eq!(gates.counts().futures_dropped, 0);
        let stats = stream.stats();
        assert_eq!((stats.workers_limit, stats.waiting_limit), (5, 1));
    }
}

#[test]
fn a_raise_from_another_thread_reaches_the_tasks() {
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates.source(100).bounded(1, 0).spawn_on(stepper.spawner());
    assert!(poll_once(&mut stream).is_pending());
    assert_eq!(settle(&mut stream, &mut stepper, &gates), (1, 0, 1));
    let limits = stream.limits();
    std::thread::spawn(move || {
        limits.set_waiting(2);
        limits.set_workers(3);
    })
    .join()
    .unwrap();
    assert_eq!(settle(&mut stream, &mut stepper, &gates), (3, 2, 5));
}

#[test]
fn a_handle_taken_in_place_keeps_working_after_spawn_on() {
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let stream = gates.source(100).bounded(1, 0);
    let limits = stream.limits();
    // Set before the switch: the spawned stream starts with these.
    limits.set_workers(2);
    let mut stream = stream.spawn_on(stepper.spawner());
    assert_eq!(
        stepper.spawns(),
        0,
        "nothing is spawned before the first poll"
    );
    assert!(poll_once(&mut stream).is_pending());
    assert_eq!(settle(&mut stream, &mut stepper, &gates), (2, 0, 2));
    // Set after it: the same handle now reaches the tasks.
    limits.set_workers(4);
    assert_eq!(settle(&mut stream, &mut stepper, &gates), (4, 0, 4));
    assert_eq!(stream.limits().workers(), 4, "every handle is the same");
    assert_eq!(stream.stats().workers_limit, 4);
}

#[test]
fn raising_waiting_has_an_idle_task_pull_ahead_at_once() {
    // Ordered, item 1 completes before item 0: its output is held, its task
    // idles (no start is free while 2 run or are held), and no completion
    // comes after the raise.
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates
        .source(100)
        .bounded(2, 0)
        .ordered(2)
        .spawn_on(stepper.spawner());
    assert!(poll_once(&mut stream).is_pending());
    assert_eq!(settle(&mut stream, &mut stepper, &gates), (2, 0, 2));
    assert!(gates.open(1));
    assert_eq!(settle(&mut stream, &mut stepper, &gates), (1, 0, 2));
    stream.limits().set_waiting(3);
    assert_eq!(settle(&mut stream, &mut stepper, &gates), (1, 3, 5));
    // Not one more: the queue is at its new limit.
    assert!(poll_once(&mut stream).is_pending());
    assert_eq!(settle(&mut stream, &mut stepper, &gates), (1, 3, 5));
}

#[test]
fn raising_waiting_with_every_task_busy_sends_a_busy_task_to_pull() {
    for ordered in [false, true] {
        let gates = Gates::new();
        let mut stepper = StepExecutor::new();
        let stream = gates.source(100).bounded(2, 0);
        let stream = if ordered { stream.ordered(2) } else { stream };
        let mut stream = stream.spawn_on(stepper.spawner());
        assert!(poll_once(&mut stream).is_pending());
        assert_eq!(settle(&mut stream, &mut stepper, &gates), (2, 0, 2));
        let polls = gates.polls_of(2);
        stream.limits().set_waiting(3);
        // Every task is inside a future and none is idle: one of them is
        // woken to pull, and polls its future once more on the way.
        assert_eq!(settle(&mut stream, &mut stepper, &gates), (2, 3, 5));
        let more: usize = gates.polls_of(2).iter().sum::<usize>() - polls.iter().sum::<usize>();
        assert_eq!(more, 1, "one spurious poll, of the task sent to pull");
        // Exact for the new limits, and still after a completion.
        assert!(gates.open(0));
        assert_eq!(drain_ready(&mut stream, &mut stepper), [0]);
        assert_eq!(settle(&mut stream, &mut stepper, &gates), (2, 3, 6));
    }
}

#[test]
fn lowering_cancels_nothing_and_starts_only_below_the_new_limit() {
    for ordered in [false, true] {
        let gates = Gates::new();
        let mut stepper = StepExecutor::new();
        let stream = gates.source(100).bounded(4, 3);
        let stream = if ordered { stream.ordered(4) } else { stream };
        let mut stream = stream.spawn_on(stepper.spawner());
        assert!(poll_once(&mut stream).is_pending());
        // Items 0..4 run, 4..7 wait.
        assert_eq!(settle(&mut stream, &mut stepper, &gates), (4, 3, 7));

        let limits = stream.limits();
        limits.set_workers(2);
        limits.set_waiting(1);
        assert_eq!(settle(&mut stream, &mut stepper, &gates), (4, 3, 7));
        assert_eq!(gates.counts().futures_dropped, 0, "nothing is cancelled");

        // Two completions bring the running count to the new limit: no start.
        for id in [0, 1] {
            assert!(gates.open(id));
            assert_eq!(drain_ready(&mut stream, &mut stepper), [id]);
        }
        assert_eq!(settle(&mut stream, &mut stepper, &gates), (2, 3, 7));
        // Below it, a start takes a waiting item; the queue, still above its
        // new limit, keeps its items and is not topped up.
        assert!(gates.open(2));
        assert_eq!(drain_ready(&mut stream, &mut stepper), [2]);
        assert_eq!(settle(&mut stream, &mut stepper, &gates), (2, 2, 7));
        assert!(gates.open(3));
        assert_eq!(drain_ready(&mut stream, &mut stepper), [3]);
        // Stable and within the limits now: exactly 2 running and 1 waiting.
        assert_eq!(settle(&mut stream, &mut stepper, &gates), (2, 1, 7));
        assert!(gates.open(4));
        assert_eq!(drain_ready(&mut stream, &mut stepper), [4]);
        assert_eq!(settle(&mut stream, &mut stepper, &gates), (2, 1, 8));
        assert_eq!(gates.counts().futures_dropped, 5, "ordered: {ordered}");
        assert_eq!(gates.counts().peak_running, 4);
    }
}

#[test]
fn workers_zero_pauses_and_raising_resumes() {
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates.source(100).bounded(2, 1).spawn_on(stepper.spawner());
    assert!(poll_once(&mut stream).is_pending());
    assert_eq!(settle(&mut stream, &mut stepper, &gates), (2, 1, 3));
    let limits = stream.limits();
    limits.set_workers(0);
    assert!(gates.open(0) && gates.open(1));
    let mut done = drain_ready(&mut stream, &mut stepper);
    done.sort_unstable();
    assert_eq!(done, [0, 1], "running work finishes");
    // Paused: nothing starts; the queue stays at its limit.
    assert_eq!(settle(&mut stream, &mut stepper, &gates), (0, 1, 3));
    assert_eq!(gates.started(), 2);

    limits.set_workers(2);
    assert_eq!(settle(&mut stream, &mut stepper, &gates), (2, 1, 5));
}

#[test]
fn ordered_the_window_stays_fixed_and_caps_a_raise() {
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates
        .source(100)
        .bounded(2, 1)
        .ordered(3)
        .spawn_on(stepper.spawner());
    assert!(poll_once(&mut stream).is_pending());
    assert_eq!(settle(&mut stream, &mut stepper, &gates), (2, 1, 3));
    stream.limits().set_workers(10);
    // min(workers, window) + waiting.
    assert_eq!(settle(&mut stream, &mut stepper, &gates), (3, 1, 4));
    assert_eq!(stepper.spawns(), 3);
}

#[test]
fn a_handle_outlives_its_stream_and_changes_nothing() {
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates.source(100).bounded(1, 0).spawn_on(stepper.spawner());
    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();
    let limits = stream.limits();
    drop(stream);
    stepper.run_until_stalled();
    assert_eq!(stepper.live_tasks(), 0);
    let spawns = stepper.spawns();
    limits.set_workers(8);
    stepper.run_until_stalled();
    assert_eq!(stepper.spawns(), spawns, "a dropped stream spawns nothing");
    assert_eq!(limits.workers(), 8);
    assert!(gates.counts().all_dropped());
}
