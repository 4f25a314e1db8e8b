//! Limits that move, in both modes (contract point 25, with 2 to 5; 16 and 17
//! spawned): a `Limits` handle raises, lowers and pauses `workers` and
//! `waiting` while the stream runs, from this thread or another. A raise
//! starts or pulls items with no completion (in place it wakes the stream;
//! spawned it sends for a task at once, a new one if none is idle: tasks grow
//! on demand); lowering cancels nothing and drops nothing; once the limits are
//! stable and the work is within them, the admission bound is exact for them.
//! The window never changes. A handle taken before the first poll (or before
//! `spawn_on`) is the same handle afterwards, and one that outlives its
//! stream changes nothing.
//!
//! Deterministic: the futures are gates the test opens, and spawned streams
//! run on an executor the test steps until nothing can move.

use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, Limits};
use futures::{StreamExt, TryStreamExt};
use support::{Driven, Gates, OrderedIf, both_modes, drive};

/// The counts that matter here, once the tasks (spawned) can do nothing more:
/// (running futures, waiting items, items pulled).
fn shape<T>(run: &mut Driven<'_, T>, gates: &Gates) -> (usize, usize, usize) {
    run.settle();
    let stats = run.stats();
    assert_eq!(stats.active, gates.running(), "stats and futures disagree");
    (stats.active, stats.waiting, gates.pulled())
}

/// Makes one change through the stream's handle and lets it act. In place the
/// change wakes the stream's task, once, and the next poll acts on it (point
/// 25); spawned, the handle sends for the tasks: no consumer poll is needed.
fn change<T>(run: &mut Driven<'_, T>, make: impl FnOnce(&Limits)) {
    let wakes = run.wakes();
    make(&run.limits());
    if run.mode().is_spawned() {
        run.settle();
    } else {
        assert_eq!(run.wakes(), wakes + 1, "a change wakes the stream's task");
        assert!(run.poll().is_pending());
    }
}

both_modes! {
    /// Point 25: a raise of `workers` starts items with no completion.
    fn raising_workers_starts_items_without_a_completion(mode) {
        for window in [None, Some(8)] {
            let gates = Gates::new();
            let mut run = drive!(mode, gates.source(100).bounded(2, 1).ordered_if(window));
            assert!(run.poll().is_pending());
            assert_eq!(shape(&mut run, &gates), (2, 1, 3));
            if mode.is_spawned() {
                assert_eq!(run.spawns(), 2);
            }
            assert_eq!(run.wakes(), 0, "nothing woke the consumer yet");
            change(&mut run, |limits| limits.set_workers(5));
            // Exact for the new limits: 5 running, 1 waiting, 6 pulled.
            assert_eq!(shape(&mut run, &gates), (5, 1, 6), "{window:?}");
            if mode.is_spawned() {
                assert_eq!(run.spawns(), 5, "one task per start, spawned on demand");
            }
            assert_eq!(gates.counts().futures_dropped, 0);
            let stats = run.stats();
            assert_eq!((stats.workers_limit, stats.waiting_limit), (5, 1));
        }
    }

    /// Points 12 and 25: a change from another thread reaches the stream.
    fn a_change_from_another_thread_reaches_the_stream(mode) {
        for (waiting, workers) in [(3, 2), (2, 3)] {
            let gates = Gates::new();
            let mut run = drive!(mode, gates.source(100).bounded(1, 0));
            assert!(run.poll().is_pending());
            assert_eq!(shape(&mut run, &gates), (1, 0, 1));
            let limits = run.limits();
            std::thread::spawn(move || {
                limits.set_waiting(waiting);
                limits.set_workers(workers);
            })
            .join()
            .unwrap();
            if !mode.is_spawned() {
                // Spawned, the handle sends for the tasks: no poll is needed.
                assert!(run.wakes() >= 1, "the change woke the stream's task");
                assert!(run.poll().is_pending());
            }
            assert_eq!(shape(&mut run, &gates), (workers, waiting, workers + waiting));
        }
    }

    /// Point 25: a raise of `waiting` is pulled at once, with every worker
    /// busy; exact for the new limits, and still after a completion.
    fn raising_waiting_pulls_ahead_at_once(mode) {
        for window in [None, Some(2)] {
            for waiting in [3, 4] {
                let gates = Gates::new();
                let mut run = drive!(mode, gates.source(100).bounded(2, 0).ordered_if(window));
                assert!(run.poll().is_pending());
                assert_eq!(shape(&mut run, &gates), (2, 0, 2));
                let polls: usize = gates.polls_of(2).iter().sum();
                change(&mut run, |limits| limits.set_waiting(waiting));
                assert_eq!(shape(&mut run, &gates), (2, waiting, 2 + waiting));
                // Spawned, every task is inside a future and none is idle: one
                // of them is woken to pull, and polls its future once more on
                // the way (point 25). In place, a poll that nothing woke polls
                // no future (point 7).
                let more = gates.polls_of(2).iter().sum::<usize>() - polls;
                let spurious = usize::from(mode.is_spawned());
                assert_eq!(more, spurious, "spurious polls of the running futures");
                assert!(gates.open(0));
                assert_eq!(run.take_ready(), [0]);
                assert_eq!(shape(&mut run, &gates), (2, waiting, 3 + waiting));
            }
        }
    }

    /// Point 25: a raise of `waiting` is pulled at once while an output is
    /// held (spawned: by the task it idles).
    fn raising_waiting_while_an_output_is_held_pulls_ahead_at_once(mode) {
        // Ordered, item 1 completes before item 0: its output is held (its
        // task idles: no start is free while 2 run or are held), and no
        // completion comes after the raise.
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(100).bounded(2, 0).ordered(2));
        assert!(run.poll().is_pending());
        assert_eq!(shape(&mut run, &gates), (2, 0, 2));
        assert!(gates.open(1));
        assert!(run.poll().is_pending());
        assert_eq!(shape(&mut run, &gates), (1, 0, 2));
        change(&mut run, |limits| limits.set_waiting(3));
        assert_eq!(shape(&mut run, &gates), (1, 3, 5));
        // Not one more: the queue is at its new limit.
        assert!(run.poll().is_pending());
        assert_eq!(shape(&mut run, &gates), (1, 3, 5));
    }

    /// Point 25: lowering cancels nothing; new starts wait until fewer than
    /// the new `workers` run, pulls until the queue is below the new `waiting`.
    fn lowering_cancels_nothing_and_starts_only_below_the_new_limit(mode) {
        for window in [None, Some(4)] {
            let gates = Gates::new();
            let mut run = drive!(mode, gates.source(100).bounded(4, 3).ordered_if(window));
            assert!(run.poll().is_pending());
            // Items 0..4 run, 4..7 wait.
            assert_eq!(shape(&mut run, &gates), (4, 3, 7));

            let limits = run.limits();
            limits.set_workers(2);
            limits.set_waiting(1);
            assert!(run.poll().is_pending());
            // Nothing cancelled, nothing dropped from the queue, nothing pulled.
            assert_eq!(shape(&mut run, &gates), (4, 3, 7));
            assert_eq!(gates.counts().futures_dropped, 0, "nothing is cancelled");

            // 4 -> 3 -> 2 running: still at or above 2, so nothing starts.
            let mut complete = |id| {
                assert!(gates.open(id));
                assert_eq!(run.take_ready(), [id], "{window:?}");
                shape(&mut run, &gates)
            };
            assert_eq!(complete(0), (3, 3, 7));
            assert_eq!(complete(1), (2, 3, 7));
            // Below it, a start takes a waiting item; the queue, still above
            // its new limit (3 -> 2), keeps its items and is not topped up.
            assert_eq!(complete(2), (2, 2, 7));
            // Stable and within the limits now: exactly 2 running, 1 waiting.
            assert_eq!(complete(3), (2, 1, 7));
            assert_eq!(complete(4), (2, 1, 8));
            assert_eq!(gates.counts().futures_dropped, 5, "{window:?}");
            assert_eq!(gates.counts().peak_running, 4);
            assert_eq!(run.stats().peak_active, 4);
        }
    }

    /// Point 25: `workers == 0` pauses: running work finishes, nothing
    /// starts; a raise resumes.
    fn workers_zero_pauses_and_raising_resumes(mode) {
        // (waiting, the raise, whether the first waiting item's gate is open
        // by then, what the raise yields at once, the shape after it).
        for (waiting, resume, open_waiting, yielded, resumed) in
            [(2, 1, true, vec![2], (1, 2, 6)), (1, 2, false, vec![], (2, 1, 5))]
        {
            let gates = Gates::new();
            let mut run = drive!(mode, gates.source(10).bounded(2, waiting));
            assert!(run.poll().is_pending());
            assert_eq!(shape(&mut run, &gates), (2, waiting, 2 + waiting));
            let limits = run.limits();
            limits.set_workers(0);
            assert!(gates.open(0) && gates.open(1));
            let mut done = run.take_ready();
            done.sort_unstable();
            assert_eq!(done, [0, 1], "running work finishes");
            // Paused: nothing starts; the queue stays at its limit.
            assert_eq!(shape(&mut run, &gates), (0, waiting, 2 + waiting));
            assert_eq!(gates.started(), 2);
            assert!(!run.is_terminated());
            if open_waiting {
                // Opening a waiting item's gate changes nothing: it is not
                // started.
                gates.open(2);
                assert!(run.poll().is_pending());
                assert_eq!(gates.polls(2), 0);
            }

            let wakes = run.wakes();
            limits.set_workers(resume);
            if mode.is_spawned() {
                // The handle sends for the tasks: items start with no poll.
                run.settle();
                assert_eq!(gates.started(), 2 + resume);
            } else {
                assert_eq!(run.wakes(), wakes + 1, "a raise wakes the stream's task");
            }
            let taken = run.take_ready();
            assert_eq!(taken, yielded);
            assert_eq!(shape(&mut run, &gates), resumed);
        }
    }

    /// Points 3 and 25: limits set before the first poll are the ones it
    /// starts with, and the same handle keeps working after it (and after
    /// `spawn_on`).
    fn a_handle_taken_before_the_first_poll_sets_the_limits_it_starts_with(mode) {
        for (workers, waiting) in [(3, 2), (2, 0)] {
            let gates = Gates::new();
            let stream = gates.source(100).bounded(1, 0);
            let limits = stream.limits();
            limits.set_workers(workers);
            limits.set_waiting(waiting);
            let mut run = drive!(mode, stream);
            if mode.is_spawned() {
                assert_eq!(run.spawns(), 0, "nothing is spawned before the first poll");
            }
            assert!(run.poll().is_pending());
            assert_eq!(shape(&mut run, &gates), (workers, waiting, workers + waiting));
            // Set after it: the same handle reaches the stream.
            change(&mut run, |_| limits.set_workers(4));
            assert_eq!(shape(&mut run, &gates), (4, waiting, 4 + waiting));
            assert_eq!(run.limits().workers(), 4, "every handle is the same");
            assert_eq!(run.stats().workers_limit, 4);
        }
    }

    /// Points 5 and 25: the window stays fixed and caps a raise.
    fn ordered_the_window_stays_fixed_and_caps_a_raise(mode) {
        for window in [3, 4] {
            let gates = Gates::new();
            let mut run = drive!(mode, gates.source(100).bounded(2, 1).ordered(window));
            assert!(run.poll().is_pending());
            assert_eq!(shape(&mut run, &gates), (2, 1, 3));
            change(&mut run, |limits| limits.set_workers(10));
            // min(workers, window) + waiting.
            assert_eq!(shape(&mut run, &gates), (window, 1, window + 1));
            if mode.is_spawned() {
                assert_eq!(run.spawns(), window);
            }
            // Completions behind the head are held: the window stops further
            // starts.
            gates.open(1);
            gates.open(2);
            assert!(run.poll().is_pending());
            assert_eq!(shape(&mut run, &gates), (window - 2, 1, window + 1));
            assert_eq!(run.stats().held, 2);
            gates.open(0);
            assert_eq!(run.take_ready(), [0, 1, 2]);
            // Three taken, the window running again, one waiting.
            assert_eq!(shape(&mut run, &gates), (window, 1, 3 + window + 1));
        }
    }

    /// Point 25: every handle is the same; one that outlives its stream
    /// changes nothing (spawned: spawns nothing) and keeps nothing alive.
    fn a_handle_outlives_its_stream_and_changes_nothing(mode) {
        for polled in [false, true] {
            let gates = Gates::new();
            let mut run = drive!(mode, gates.source(100).bounded(1, 0));
            if polled {
                assert!(run.poll().is_pending());
            }
            let (first, second) = (run.limits(), run.limits());
            second.set_workers(7);
            assert_eq!(first.workers(), 7);
            let spawns = mode.is_spawned().then(|| run.spawns());
            run.drop_stream();
            first.set_workers(8);
            assert_eq!(first.workers(), 8);
            if mode.is_spawned() {
                run.settle();
                assert_eq!(Some(run.spawns()), spawns, "a dropped stream spawns nothing");
            }
            first.set_workers(1);
            first.set_waiting(0);
            assert_eq!((second.workers(), second.waiting()), (1, 0));
            assert_eq!(format!("{first:?}"), "Limits { workers: 1, waiting: 0 }");
            assert!(gates.counts().all_dropped());
        }
    }

    /// Points 21 and 25: `try_bounded` streams have limits too.
    fn try_bounded_streams_have_limits_too(mode) {
        let gates = Gates::new();
        let source = gates
            .source(100)
            .map(Ok::<_, ()>)
            .map_ok(|gate| async move { Ok::<_, ()>(gate.await) });
        let mut run = drive!(mode, source.try_bounded(1, 0));
        assert!(run.poll().is_pending());
        change(&mut run, |limits| limits.set_workers(3));
        assert_eq!(gates.running(), 3);
        assert_eq!(run.stats().workers_limit, 3);
    }
}

/// Point 12, in place: raising `workers` past what one word of the ready tree
/// holds rebuilds it, and no wake is lost, old or new (spawned mode has no
/// ready tree: each task has the executor's waker).
#[test]
fn raising_past_the_wake_tree_rebuilds_it_and_loses_no_wake() {
    // 63 slots fit one word of the ready tree, 4,032 two: raise across both.
    for (from, to) in [(2, 63), (2, 64), (60, 200), (100, 5_000)] {
        let items = to + 10;
        let gates = Gates::new();
        let mut run = Driven::in_place(gates.source(items).bounded(from, 0));
        assert_eq!(run.poll(), Poll::Pending);
        // A waker from before the rebuild: waking it later must be harmless.
        let stale = gates.waker(0).expect("item 0 runs");
        run.limits().set_workers(to);
        assert_eq!(run.poll(), Poll::Pending);
        let stats = run.stats();
        assert_eq!(stats.active, gates.running(), "stats and futures disagree");
        assert_eq!(
            (stats.active, stats.waiting, gates.pulled()),
            (to, 0, to),
            "{from} -> {to}"
        );
        stale.wake();
        assert_eq!(run.poll(), Poll::Pending);
        // Every running future, old or new, wakes the stream through its
        // current waker: open every gate from another thread, in reverse.
        let opener = gates.clone();
        std::thread::spawn(move || {
            for id in (0..items).rev() {
                opener.open(id);
            }
        })
        .join()
        .unwrap();
        let mut outputs = Vec::new();
        let mut wakes = run.wakes();
        loop {
            match run.poll() {
                Poll::Ready(Some(id)) => outputs.push(id),
                Poll::Ready(None) => break,
                Poll::Pending => {
                    // Pending with nothing left to wait for: only a wake
                    // already sent (the poll budget's) may ask for more.
                    assert!(run.wakes() > wakes, "lost wake: {from} -> {to}");
                    wakes = run.wakes();
                }
            }
        }
        outputs.sort_unstable();
        assert_eq!(outputs, (0..items).collect::<Vec<_>>(), "{from} -> {to}");
        assert_eq!(gates.counts().futures_dropped, items);
    }
}
