//! The budgets, in both modes (contract points 2 to 5; 16 spawned): the
//! workers, the waiting queue and the ordered window, each checked at its
//! exact boundary with every future blocked (`workers + waiting` pulled, or
//! `min(workers, window) + waiting` ordered); an untaken output keeps its
//! worker; unordered outputs come in completion order, ordered ones in input
//! order, a blocked head holding up the others only once the window is full.
//!
//! Deterministic: the futures are gates the test opens, and spawned streams
//! run their tasks on an executor the test steps (`support::drive!`). The
//! boundary is also checked on tokio's and smol's thread pools.

use std::task::Poll;

use bounded_buffered::BoundedStreamExt;
use futures::StreamExt;
use support::{
    Gates, Mode, OrderedIf, both_modes, both_pools, counted, drain_ready, drive, eventually,
    fed_source, random_completions, tokio_multi_thread, yield_now,
};

/// (workers, waiting) pairs: one worker, no prefetch, and both larger.
const BUDGETS: [(usize, usize); 11] = [
    (1, 0),
    (1, 1),
    (1, 3),
    (1, 5),
    (2, 0),
    (3, 0),
    (3, 2),
    (3, 7),
    (4, 8),
    (8, 2),
    (16, 16),
];

both_modes! {
    /// Points 2, 3, 5 and 16: with every future blocked the source advanced
    /// exactly `workers + waiting` (ordered: `min(workers, window) +
    /// waiting`, the window below, at and above the workers), however often
    /// the stream is polled or woken; each output taken pulls one more.
    fn with_every_future_blocked_the_source_advances_exactly_workers_plus_waiting(mode) {
        // (workers, window, waiting)
        let ordered = [
            (4, 2, 3), (4, 1, 0), (3, 3, 0), (3, 3, 2), (2, 4, 1),
            (2, 8, 0), (2, 8, 5), (1, 1, 1), (1, 5, 2), (6, 4, 6),
        ];
        let unordered = BUDGETS.map(|(workers, waiting)| (workers, None, waiting));
        let ordered = ordered.map(|(workers, window, waiting)| (workers, Some(window), waiting));
        for (workers, window, waiting) in unordered.into_iter().chain(ordered) {
            let case = format!("W={workers} window={window:?} Q={waiting}");
            let gates = Gates::new();
            let stream = gates.source(1_000).bounded(workers, waiting).ordered_if(window);
            let mut run = drive!(mode, stream);
            run.settle();
            assert_eq!(gates.pulled(), 0, "nothing is pulled before the first poll");

            assert!(run.poll().is_pending());
            let running = workers.min(window.unwrap_or(workers));
            let bound = running + waiting;
            assert_eq!(gates.pulled(), bound, "{case}");
            assert_eq!((gates.started(), gates.running()), (running, running), "{case}");
            let stats = run.stats();
            assert_eq!((stats.active, stats.waiting, stats.held), (running, waiting, 0));
            assert_eq!(stats.pulled, bound as u64);

            // More polls, with and without spurious wakes, change nothing.
            for id in 0..running {
                gates.nudge(id);
                assert!(run.poll().is_pending());
                assert!(run.poll().is_pending());
            }
            for _ in 0..3 {
                assert!(run.poll().is_pending());
            }
            assert_eq!(gates.pulled(), bound, "{case}: pulled past the bound");
            assert_eq!(gates.started(), running);

            gates.open(0);
            run.settle();
            let (stats, seen) = (run.stats(), (gates.pulled(), gates.started()));
            if mode.is_spawned() {
                // Point 18: a task completes it while the consumer is away.
                // Unordered the output keeps its worker (point 4); ordered it
                // keeps its place in the window (point 5), and with room left
                // there the task starts the next item.
                let room = usize::from(window.is_some_and(|window| window > workers));
                let expected = (running - 1 + room, waiting, 1);
                assert_eq!((stats.active, stats.waiting, stats.held), expected, "{case}");
                assert_eq!(seen, (bound + room, running + room), "{case}");
            } else {
                // Point 14: in place nothing runs until the consumer polls.
                assert_eq!((stats.active, stats.waiting, stats.held), (running, waiting, 0));
                assert_eq!(seen, (bound, running), "{case}");
            }

            // Taking it frees exactly one start, and the queue is topped up by one.
            assert_eq!(run.poll(), Poll::Ready(Some(0)));
            assert_eq!(gates.pulled(), bound + 1, "{case}");
            assert_eq!(gates.started(), running + 1);
            let stats = run.stats();
            assert_eq!((stats.active, stats.waiting), (running, waiting), "{case}");
            assert!(run.poll().is_pending());
            assert_eq!(gates.pulled(), bound + 1);
            assert_eq!(gates.counts().peak_running, running);
        }
    }

    /// Points 1 and 3: a source that ended is not polled again.
    fn a_source_that_ends_early_is_not_polled_past_its_end(mode) {
        let gates = Gates::new();
        let (source, counts) = counted(gates.source(5));
        let mut run = drive!(mode, source.bounded(4, 8));
        assert!(run.poll().is_pending());
        assert_eq!(counts.pulled(), 5);
        // Five items, then the `None` that ended it.
        assert_eq!(counts.polls(), 6);
        assert!(run.poll().is_pending());
        assert_eq!(counts.polls(), 6);
        assert_eq!(run.stats().waiting, 1);
    }

    /// Points 2, 3, 4 and 16: whatever the completion order, `active` and
    /// `active + held` stay within the workers and `waiting` within its
    /// budget; enough blocked items fill every worker and the queue.
    fn active_and_held_stay_within_the_workers_and_fill_them_for_any_completion_order(mode) {
        for seed in 0..10 {
            for (workers, waiting) in BUDGETS {
                let (stats, counts) =
                    random_completions(mode, seed, (workers, None, waiting), 40, false);
                let case = format!("seed {seed} W={workers} Q={waiting}");
                assert_eq!(counts.peak_running, workers, "{case}");
                assert_eq!((stats.peak_active, stats.peak_waiting), (workers, waiting), "{case}");
            }
        }
        // Several completions between two polls, so that outputs are held.
        for seed in 0..20 {
            random_completions(mode, seed, (1 + seed as usize % 5, None, 3), 50, true);
        }
    }

    /// Point 3: while the workers are busy the source is pulled until the
    /// queue is full, without any future completing.
    fn keeps_pulling_into_the_waiting_queue_while_the_workers_are_busy(mode) {
        let gates = Gates::new();
        let (source, feed) = fed_source();
        let (source, counts) = counted(source);
        let mut run = drive!(mode, source.bounded(2, 3));
        feed.push(gates.gate(0));
        feed.push(gates.gate(1));
        assert!(run.poll().is_pending());
        assert_eq!(gates.started(), 2);
        assert!(feed.has_waiter(), "the adapter asked the source for a waiting item");

        let wakes = run.wakes();
        for id in 2..7 {
            feed.push(gates.gate(id));
        }
        if mode.is_spawned() {
            // Points 16 and 18: a task pulls them while the consumer is away.
            run.settle();
            assert_eq!(counts.pulled(), 5);
        } else {
            // Point 14: in place the consumer's poll pulls them.
            assert_eq!(run.wakes(), wakes + 1, "the source's wake reached the consumer");
        }
        assert!(run.poll().is_pending());
        assert_eq!(counts.pulled(), 5);
        assert_eq!(feed.unread(), 2, "pulled exactly up to the waiting budget");
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting), (2, 3));
        assert_eq!(gates.started(), 2, "waiting items are not started");

        // A freed worker takes the oldest waiting item; the queue is topped up.
        gates.open(1);
        assert_eq!(run.poll(), Poll::Ready(Some(1)));
        assert!(gates.is_started(2));
        assert_eq!(counts.pulled(), 6);
        assert_eq!(run.stats().waiting, 3);
    }

    /// Point 3: one worker, no prefetch: a source that said `Pending` is
    /// asked again once it wakes, or the stream would hang.
    fn a_slow_source_is_asked_again_once_it_wakes(mode) {
        let (source, feed) = fed_source();
        let mut run = drive!(mode, source.bounded(1, 0));
        for round in 0..5 {
            assert!(run.poll().is_pending());
            let wakes = run.wakes();
            feed.push(std::future::ready(round));
            // Spawned, the task the source woke pulls the item, runs it, and
            // wakes the consumer with its output.
            run.settle();
            assert_eq!(run.wakes(), wakes + 1);
            assert_eq!(run.poll(), Poll::Ready(Some(round)));
        }
        feed.close();
        assert_eq!(run.poll_woken(), Poll::Ready(None));
    }

    /// Point 4: unordered outputs come in completion order: with two
    /// workers, later items flow past a blocked first one.
    fn outputs_come_in_completion_order(mode) {
        let order = [3, 1, 4, 0, 2];
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(order.len()).bounded(order.len(), 0));
        assert!(run.poll().is_pending());
        for (step, id) in order.into_iter().enumerate() {
            gates.open(id);
            assert_eq!(run.poll(), Poll::Ready(Some(id)));
            if step + 1 < order.len() {
                assert!(run.poll().is_pending());
            }
        }
        assert_eq!(run.poll(), Poll::Ready(None));

        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(6).bounded(2, 1));
        assert!(run.poll().is_pending());
        for id in 1..6 {
            gates.open(id);
            assert_eq!(run.poll(), Poll::Ready(Some(id)));
        }
        assert!(run.poll().is_pending());
        gates.open(0);
        assert_eq!(run.poll(), Poll::Ready(Some(0)));
        assert_eq!(run.poll(), Poll::Ready(None));
    }

    /// Point 4: an output the consumer has not taken keeps its worker.
    fn untaken_outputs_keep_their_workers(mode) {
        for workers in [1, 2, 4, 7] {
            let (gates, waiting) = (Gates::new(), 2);
            let mut run = drive!(mode, gates.source(100).bounded(workers, waiting));
            assert!(run.poll().is_pending());

            // Every running future completes before the consumer polls again:
            // one poll hands out one output and holds the rest.
            for id in 0..workers {
                gates.open(id);
            }
            assert!(matches!(run.poll(), Poll::Ready(Some(_))));
            let stats = run.stats();
            assert_eq!(stats.held, workers - 1, "W={workers}: {stats:?}");
            // Only the worker of the output just taken is free again.
            assert_eq!(stats.active, 1, "W={workers}: {stats:?}");
            assert_eq!(gates.running(), 1);
            assert_eq!(gates.started(), workers + 1);
            assert_eq!(stats.waiting, waiting);
            assert_eq!(gates.pulled(), workers + waiting + 1);
            assert_eq!(stats.peak_held, workers);

            // Taking the held outputs one by one frees one worker each.
            for taken in 1..workers {
                assert!(matches!(run.poll(), Poll::Ready(Some(_))));
                let stats = run.stats();
                assert_eq!((stats.held, stats.active), (workers - 1 - taken, 1 + taken));
                assert!(stats.active + stats.held <= workers);
            }
            assert!(run.poll().is_pending());
            assert_eq!(gates.running(), workers);
            assert_eq!(gates.pulled(), 2 * workers + waiting);
        }
    }

    /// Points 4 and 16: futures that complete at once are held within the
    /// worker budget, and untaken outputs stop the workers and the pulling.
    fn futures_that_complete_at_once_are_held_within_the_worker_budget(mode) {
        let (workers, waiting) = (3, 2);
        let gates = Gates::open_except(&[]);
        let mut run = drive!(mode, gates.tracked_source(20).bounded(workers, waiting));
        if mode.is_spawned() {
            // Point 18: the tasks run them while the consumer is away; only
            // `workers` outputs may wait for it, then the queue fills and the
            // source stops.
            assert!(run.poll().is_pending());
            let stats = run.stats();
            assert_eq!((stats.active, stats.held, stats.waiting), (0, workers, waiting));
            assert_eq!(gates.pulled(), workers + waiting);
            assert_eq!(gates.counts().outputs_made, workers);
        }
        let Poll::Ready(Some(first)) = run.poll() else { panic!("no output") };
        let stats = run.stats();
        assert!(stats.active + stats.held <= workers, "{stats:?}");
        assert_eq!((stats.peak_held, stats.waiting), (workers, waiting));
        // Three held at first, one taken and one started (and completed) in
        // its place, two waiting.
        assert_eq!(gates.pulled(), workers + 1 + waiting);
        assert_eq!(gates.counts().outputs_made, workers + 1);
        let mut outputs: Vec<usize> = run.take_to_end().iter().map(|output| output.id).collect();
        if mode.is_spawned() {
            // Completion order is the order the tasks ran in.
            outputs.push(first.id);
            outputs.sort_unstable();
            assert_eq!(outputs, (0..20).collect::<Vec<_>>());
        } else {
            // In place they complete as they are polled, in input order.
            assert_eq!(first.id, 0);
            assert_eq!(outputs, (1..20).collect::<Vec<_>>());
        }
        assert!(run.stats().peak_held <= workers);
    }

    /// Point 5: reversed completion is yielded in input order.
    fn reversed_completion_is_yielded_in_input_order(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(5).bounded(5, 0).ordered(5));
        assert!(run.poll().is_pending());
        for id in (1..5).rev() {
            gates.open(id);
            assert!(run.poll().is_pending(), "item {id} waits for item 0");
            assert_eq!(run.stats().held, 5 - id);
        }
        gates.open(0);
        assert_eq!(run.take_ready(), [0, 1, 2, 3, 4]);
        assert!(run.is_terminated());
    }

    /// Point 5: random completion is yielded in input order within the window.
    fn random_completion_is_yielded_in_input_order_within_the_window(mode) {
        // (workers, window, waiting)
        let cases = [(1, 1, 0), (2, 2, 1), (4, 2, 3), (3, 6, 0), (4, 9, 2), (8, 8, 8)];
        for seed in 0..10 {
            for (workers, window, waiting) in cases {
                random_completions(mode, seed, (workers, Some(window), waiting), 60, false);
            }
        }
    }

    /// Point 5: `window == workers` behaves like `buffered(workers)`: the same
    /// schedule drives both, and after each step what was yielded, how far
    /// each pulled its source and which futures run are the same.
    fn a_window_equal_to_the_workers_behaves_like_buffered(mode) {
        for seed in 0..10u64 {
            for workers in [1, 2, 3, 5] {
                let count = 30;
                let (ours_gates, theirs_gates) = (Gates::new(), Gates::new());
                let mut ours =
                    drive!(mode, ours_gates.source(count).bounded(workers, 0).ordered(workers));
                let mut theirs = theirs_gates.source(count).buffered(workers);
                let mut rng = support::Rng::new(seed);
                let case = format!("seed {seed} W={workers}");
                loop {
                    assert_eq!(ours.take_ready(), drain_ready(&mut theirs), "{case}");
                    assert_eq!(ours_gates.pulled(), theirs_gates.pulled(), "{case}");
                    assert_eq!(ours_gates.started(), theirs_gates.started(), "{case}");
                    let running = |gates: &Gates| -> Vec<usize> {
                        (0..count).filter(|&id| gates.waker(id).is_some()).collect()
                    };
                    let pending = running(&ours_gates);
                    assert_eq!(pending, running(&theirs_gates), "{case}");
                    if pending.is_empty() {
                        break;
                    }
                    let id = pending[rng.below(pending.len())];
                    ours_gates.open(id);
                    theirs_gates.open(id);
                }
                assert_eq!(ours.poll(), Poll::Ready(None), "{case}");
                assert_eq!(ours_gates.pulled(), count);
            }
        }
    }

    /// Point 5: a blocked head lets the other workers run up to exactly the
    /// window, and nothing past it.
    fn a_blocked_head_lets_other_workers_run_up_to_exactly_the_window(mode) {
        for (workers, window, waiting) in [(2, 5, 0), (2, 5, 3), (3, 4, 1), (2, 3, 2), (4, 12, 0)] {
            let case = format!("W={workers} window={window} Q={waiting}");
            let gates = Gates::new();
            let mut run = drive!(mode, gates.source(100).bounded(workers, waiting).ordered(window));
            assert!(run.poll().is_pending());
            assert_eq!(gates.started(), workers, "{case}");

            // Item 0 stays blocked; every other started item completes at once.
            let mut next = 1;
            while gates.started() < window {
                assert!(gates.is_started(next), "{case}: item {next} should run");
                gates.open(next);
                assert!(run.poll().is_pending(), "{case}: the head blocks output");
                next += 1;
            }
            // Items still running besides the head complete too; with the
            // window full, nothing new may start, however often it is polled.
            for id in 1..window {
                if gates.waker(id).is_some() {
                    gates.open(id);
                }
            }
            for _ in 0..3 {
                assert!(run.poll().is_pending());
            }
            let stats = run.stats();
            assert_eq!((stats.active, stats.held), (1, window - 1), "{case}: {stats:?}");
            assert_eq!(gates.started(), window, "{case}: started past the window");
            assert!(!gates.is_started(window), "{case}");
            assert_eq!(gates.pulled(), window + waiting, "{case}");

            // Opening the head releases the whole window, in order, and the
            // freed positions start the next items.
            gates.open(0);
            for id in 0..window {
                assert_eq!(run.poll(), Poll::Ready(Some(id)), "{case}");
            }
            assert!(gates.is_started(window), "{case}");
        }
    }

    /// Points 5 and 16: items that complete at once behind a blocked head are
    /// held only up to the window; released, they come in input order.
    fn items_complete_at_once_behind_a_blocked_head_only_up_to_the_window(mode) {
        for (workers, window, waiting, count) in [(2, 6, 0, 50), (2, 4, 1, 100)] {
            let gates = Gates::open_except(&[0]);
            let stream = gates.source(count).bounded(workers, waiting).ordered(window);
            let mut run = drive!(mode, stream);
            assert!(run.poll().is_pending());
            assert!(run.poll().is_pending());
            assert_eq!((gates.pulled(), gates.started()), (window + waiting, window));
            let stats = run.stats();
            assert_eq!((stats.active, stats.held, stats.waiting), (1, window - 1, waiting));
            assert_eq!(stats.peak_held, window - 1);

            // Never more than `window` started and not yet yielded.
            gates.open(0);
            let mut next = 0;
            loop {
                let stats = run.stats();
                assert!(stats.active + stats.held <= window, "{stats:?}");
                match run.poll() {
                    Poll::Ready(Some(id)) => {
                        assert_eq!(id, next);
                        next += 1;
                    }
                    Poll::Ready(None) => break,
                    Poll::Pending => panic!("stalled after {next} items: {gates:?}"),
                }
            }
            assert_eq!(next, count);
            let stats = run.stats();
            assert!(stats.peak_active <= workers && stats.peak_held <= window);
            assert!(stats.peak_waiting <= waiting);
        }
    }
}

/// Points 16 and 25: a source left pending wakes the task that polled it,
/// which pulls again: an idle task, or a busy one topping up the queue.
#[test]
fn a_pending_source_wakes_its_task_idle_or_busy_which_pulls_again() {
    for busy in [false, true] {
        let gates = Gates::new();
        let (source, feed) = fed_source();
        let (source, counts) = counted(source);
        let (workers, waiting) = if busy { (1, 1) } else { (2, 1) };
        let mut run = drive!(Mode::Spawned, source.bounded(workers, waiting));
        if busy {
            // The one task runs item 0 and, topping up, finds the source pending.
            feed.push(gates.gate(0));
        }
        assert!(run.poll().is_pending());
        assert_eq!(
            (counts.pulled(), gates.started()),
            (usize::from(busy), usize::from(busy))
        );
        for sent in usize::from(busy) + 1..=4 {
            feed.push(gates.gate(sent - 1));
            run.settle();
            assert_eq!(
                counts.pulled(),
                sent.min(workers + waiting),
                "after {sent} sent"
            );
        }
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting), (workers, waiting));
        // The next item comes once a start is free.
        gates.open(0);
        assert_eq!(run.poll(), Poll::Ready(Some(0)));
        let expected = if busy { (3, 2) } else { (4, 3) };
        assert_eq!((counts.pulled(), gates.started()), expected);
        feed.close();
        gates.open_all();
        let mut rest = run.take_to_end();
        rest.sort_unstable();
        assert_eq!(rest, [1, 2, 3]);
    }
}

both_pools! {
    /// Point 16 on real multi-threaded executors: the source reaches exactly
    /// `workers + waiting` while every future is blocked, the futures never run
    /// more than `workers` at once, and the stream is dropped with the source
    /// still there.
    fn boundary(pool) {
        let (workers, waiting) = (3, 4);
        let gates = Gates::new();
        let stream = gates.tracked_source(100).bounded(workers, waiting);
        let mut stream = stream.spawn_on(pool.spawner());
        assert!(support::poll_once(&mut stream).is_pending());
        gates.wait_until("the workers to start", |c| c.started == workers);
        gates.wait_until("the queue to fill", |c| c.pulled == workers + waiting);
        // A worker task counts an item in the stats in the lock section that
        // pulled it, just after the source yielded it: wait for the count, then
        // check that it stopped exactly there.
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

    /// Point 16: many items through real executors: peaks never exceed the
    /// budgets, outputs taken slowly or quickly.
    fn peaks_within_budgets(pool) {
        for (workers, waiting, window) in [(2, 3, None), (4, 1, Some(6)), (3, 0, Some(2))] {
            let gates = Gates::open_except(&[]);
            let stream = gates.tracked_source(500).bounded(workers, waiting);
            let mut stream = stream.ordered_if(window).spawn_on(pool.spawner());
            pool.block_on(async {
                let mut count = 0;
                while let Some(out) = stream.next().await {
                    count += 1;
                    drop(out);
                    if count % 7 == 0 {
                        yield_now().await;
                    }
                }
                assert_eq!(count, 500);
            });
            let stats = stream.stats();
            let span = window.unwrap_or(workers);
            assert!(stats.peak_active <= workers.min(span), "{stats:?}");
            assert!(stats.peak_waiting <= waiting, "{stats:?}");
            assert!(stats.peak_held <= span, "{stats:?}");
            assert_eq!((stats.pulled, stats.completed), (500, 500));
            assert!(gates.counts().peak_running <= workers.min(span));
        }
    }
}

/// Point 17: budgets of `usize::MAX` work spawned as in place: tasks grow
/// with demand, nothing per worker up front.
#[test]
fn budgets_of_usize_max_work_as_in_place() {
    let runtime = tokio_multi_thread();
    for window in [None, Some(usize::MAX)] {
        let stream = futures::stream::iter(0..1_000u64)
            .map(|n| async move {
                yield_now().await;
                n
            })
            .bounded(usize::MAX, usize::MAX)
            .ordered_if(window);
        let mut stream = stream.spawn_on(runtime.handle().clone());
        let mut outputs: Vec<u64> = runtime.block_on(stream.by_ref().collect());
        if window.is_none() {
            outputs.sort_unstable();
        }
        assert_eq!(outputs, (0..1_000).collect::<Vec<_>>(), "window {window:?}");
        assert_eq!(stream.stats().completed, 1_000);
    }
}
