//! Progress, in both modes (contract points 6, 7 and 8; 18 spawned): a freed
//! worker is refilled before the consumer's next step; a wake costs one poll
//! of the woken future and nothing else; a completion wakes a parked consumer,
//! once for a batch; futures that need many polls all complete with no lost
//! wake. Where the modes differ by design: in place futures progress only
//! while the consumer polls (point 14), one `poll_next` does a bounded amount
//! of work (point 8); spawned they keep running while the consumer is away,
//! and in parallel on a multi-threaded executor (point 18).
//!
//! Deterministic: the futures are gates the test opens, and spawned streams
//! run their tasks on an executor the test steps (`support::drive!`); the
//! parallel checks run on tokio's and smol's thread pools.

use std::future::ready;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bounded_buffered::BoundedStreamExt;
use futures::channel::oneshot;
use futures::future::BoxFuture;
use futures::{Stream, StreamExt, stream};
use support::{
    Driven, Gates, HANG_LIMIT, Mode, OrderedIf, Pool, Watchdog, both_modes, both_pools, counted,
    drive, yield_now, yield_then,
};

both_modes! {
    /// Point 6: when an output is handed out, the freed worker runs again
    /// (its new future polled once, from the queue or, with none, straight
    /// from the source) and the queue is topped up, before the consumer's
    /// next step. Spawned, the take sends for a task, which `Driven::poll`
    /// runs before it returns (point 16).
    fn a_freed_worker_is_refilled_and_polled_before_the_output_is_handed_out(mode) {
        // (workers, waiting, window, the item that frees a worker): unordered
        // any item does, ordered only the head.
        let cases = [(3, 2, None, 1), (3, 2, Some(3), 0), (2, 0, None, 0)];
        for (workers, waiting, window, done) in cases {
            let case = format!("W={workers} Q={waiting} window={window:?}");
            let gates = Gates::new();
            let stream = gates.source(100).bounded(workers, waiting).ordered_if(window);
            let mut run = drive!(mode, stream);
            assert!(run.poll().is_pending());
            let mut polls = vec![1; workers];
            polls.resize(workers + waiting + 1, 0);
            assert_eq!(gates.polls_of(workers + waiting + 1), polls, "{case}");

            gates.open(done);
            assert_eq!(run.poll(), Poll::Ready(Some(done)));
            // Item `workers`, the oldest waiting, runs and was polled once.
            assert_eq!(gates.polls(workers), 1, "{case}");
            assert_eq!(gates.running(), workers, "{case}");
            assert_eq!(gates.pulled(), workers + waiting + 1, "{case}");
            if waiting > 0 {
                assert_eq!(gates.polls(workers + waiting), 0, "a waiting item is not polled");
            }
            let stats = run.stats();
            assert_eq!((stats.active, stats.waiting, stats.held), (workers, waiting, 0), "{case}");
        }
    }

    /// Point 7: a poll that nothing woke polls no future; a wake costs one
    /// poll of the woken future; a completion, one more poll of it and one of
    /// its replacement.
    fn a_wake_polls_only_the_woken_future(mode) {
        let workers = 64;
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(1_000).bounded(workers, 0));
        assert!(run.poll().is_pending());
        let mut expected = vec![1; workers];
        assert_eq!(gates.polls_of(workers), expected);

        assert!(run.poll().is_pending());
        assert_eq!(gates.polls_of(workers), expected);

        // Spurious wakes: each costs exactly one poll of the woken future.
        for id in [17, 0, 63, 17] {
            gates.nudge(id);
            assert!(run.poll().is_pending());
            expected[id] += 1;
            assert_eq!(gates.polls_of(workers), expected, "after waking {id}");
        }

        gates.open(40);
        assert_eq!(run.poll(), Poll::Ready(Some(40)));
        expected[40] += 1;
        expected.push(1);
        assert_eq!(gates.polls_of(workers + 1), expected);
        assert!(run.poll().is_pending());
        assert_eq!(gates.polls_of(workers + 1), expected);
    }

    /// Point 7: several wakes before one poll cost one poll each.
    fn several_wakes_before_one_poll_cost_one_poll_each(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(100).bounded(32, 4));
        assert!(run.poll().is_pending());
        let woken = [3, 9, 30, 31];
        for id in woken {
            gates.nudge(id);
        }
        assert!(run.poll().is_pending());
        for id in 0..32 {
            let expected = if woken.contains(&id) { 2 } else { 1 };
            assert_eq!(gates.polls(id), expected, "gate {id}");
        }
    }

    /// Points 8 and 18: futures that need many polls all complete, and every
    /// `Pending` comes with a wake of the consumer's own (nothing outside the
    /// stream wakes it: a `Pending` without one would hang an executor).
    fn futures_that_need_many_polls_all_complete_across_bounded_calls(mode) {
        let _watchdog =
            Watchdog::start("futures_that_need_many_polls_all_complete_across_bounded_calls");
        let count = 40;
        let source = stream::iter(0..count).map(|i| yield_then(300, i));
        let mut run = drive!(mode, source.bounded(5, 3));
        let mut outputs = Vec::new();
        loop {
            let wakes = run.wakes();
            match run.poll() {
                Poll::Ready(Some(output)) => outputs.push(output),
                Poll::Ready(None) => break,
                Poll::Pending => assert_eq!(run.wakes() - wakes, 1, "a lost self-wake"),
            }
        }
        outputs.sort_unstable();
        assert_eq!(outputs, (0..count).collect::<Vec<_>>());
    }

    /// Point 6: each call hands out an output; the source is asked only for
    /// what the budgets admit, however many items it has ready.
    fn an_always_ready_source_of_ready_futures_yields_one_output_per_call(mode) {
        let (source, counts) = counted(stream::iter(0..1_000_000).map(ready));
        let mut run = drive!(mode, source.bounded(4, 4));
        if mode.is_spawned() {
            // Point 17: the first poll spawns the first task and returns.
            assert!(run.poll().is_pending());
            assert_eq!(counts.pulled(), 4 + 4);
        }
        let mut outputs = Vec::new();
        for taken in 1..=10 {
            let Poll::Ready(Some(output)) = run.poll() else { panic!("call {taken}: no output") };
            outputs.push(output);
            // Full workers (held outputs keep theirs), a full queue, and one
            // more pulled for each output taken.
            assert_eq!(counts.pulled(), 4 + 4 + taken);
        }
        if mode.is_spawned() {
            // Completion order is the order the tasks ran in.
            outputs.sort_unstable();
            outputs.dedup();
            assert_eq!(outputs.len(), 10);
        } else {
            // In place they complete as they are polled, in input order.
            assert_eq!(outputs, (0..10).collect::<Vec<_>>());
        }
    }

    /// Points 7 and 18: a completed output wakes the parked consumer; taking
    /// outputs that are there wakes nobody.
    fn a_completed_output_wakes_the_waiting_consumer(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.tracked_source(3).bounded(2, 1));
        assert!(run.poll().is_pending());
        assert!(run.poll().is_pending());
        let before = run.wakes();
        gates.open(1);
        run.settle();
        assert!(run.wakes() > before, "the consumer was not woken");
        assert!(matches!(run.poll(), Poll::Ready(Some(out)) if out.id == 1));

        // Item 2 started when item 1 was taken.
        gates.open_all();
        run.settle();
        let before = run.wakes();
        let mut rest: Vec<usize> = run.take_ready().iter().map(|out| out.id).collect();
        rest.sort_unstable();
        assert_eq!(rest, [0, 2]);
        assert!(matches!(run.poll(), Poll::Ready(None)));
        assert_eq!(run.wakes(), before);
    }

    /// Points 7 and 18: completions in a batch wake the parked consumer once.
    fn completions_in_a_batch_wake_the_parked_consumer_once(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(10).bounded(3, 0));
        assert!(run.poll().is_pending());
        assert!(run.poll().is_pending());
        let before = run.wakes();
        gates.open_all();
        run.settle();
        // Spawned the tasks complete them while the consumer is away (point
        // 18); in place its next poll does (point 14).
        let held = if mode.is_spawned() { 3 } else { 0 };
        assert_eq!(run.stats().held, held);
        assert_eq!(run.wakes(), before + 1, "one wake for the batch");
        for _ in 0..3 {
            assert!(matches!(run.poll(), Poll::Ready(Some(_))));
        }
    }

    /// Points 14 and 18: the consumer takes one output, then is away while
    /// every started future finishes. Spawned, they finished, and the one that
    /// replaced the taken output finished too, so every worker holds an
    /// output; in place that one was started (polled once) when the first
    /// output was handed out, and then nobody polled it.
    fn started_futures_finish_while_the_consumer_is_away_only_when_spawned(mode) {
        let (workers, waiting) = (4, 4);
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(20).bounded(workers, waiting));
        assert!(run.poll().is_pending());
        for id in 0..workers {
            gates.open(id);
        }
        assert!(matches!(run.poll(), Poll::Ready(Some(_))));
        for id in gates.closed_started() {
            gates.open(id);
        }
        run.settle();
        let stats = run.stats();
        let seen = (stats.completed, stats.held, stats.active);
        if mode.is_spawned() {
            assert_eq!(seen, (workers as u64 + 1, workers, 0));
        } else {
            assert_eq!(seen, (workers as u64, workers - 1, 1));
        }
    }
}

/// Point 8, in place: futures that always wake themselves cannot trap the
/// caller: `poll_next` stops after its budget of woken polls, wakes its task
/// and returns `Pending`. (Spawned, the tasks yield to the executor, which
/// polls them again: a stepped executor would never stall.)
#[test]
fn futures_that_always_wake_themselves_cannot_trap_the_caller() {
    /// Wakes itself and stays pending forever, counting its polls.
    struct Spin(Arc<AtomicUsize>);

    impl Future for Spin {
        type Output = ();

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.0.fetch_add(1, SeqCst);
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    // 3 does not divide the budget of 128 polls, and 200 is more than it.
    for workers in [1, 3, 4, 200] {
        let _watchdog =
            Watchdog::start("futures_that_always_wake_themselves_cannot_trap_the_caller");
        let polls = Arc::new(AtomicUsize::new(0));
        let spinning = Arc::clone(&polls);
        let spinning = stream::repeat_with(move || Spin(Arc::clone(&spinning)));
        let mut run = Driven::in_place(spinning.bounded(workers, 2));
        let mut previous = 0;
        for call in 0..5 {
            // If `poll_next` did not stop on its own, this would never return.
            assert_eq!(run.poll(), Poll::Pending);
            let this_call = polls.load(SeqCst) - previous;
            previous = polls.load(SeqCst);
            assert!(this_call > 0, "call {call}: the futures were not polled");
            // The documented budget of woken polls, plus the first polls of
            // newly started futures.
            assert!(
                this_call <= 128 + workers,
                "{workers} workers, call {call}: {this_call} polls"
            );
            assert_eq!(
                run.wakes(),
                call + 1,
                "{workers} workers, call {call}: returned Pending without waking its task"
            );
        }
    }
}

/// Point 18: outputs taken in a batch free several starts, and one task is
/// sent for them, which sends on the others.
#[test]
fn outputs_taken_in_a_batch_wake_one_task() {
    let gates = Gates::open_except(&[]);
    let mut run = drive!(Mode::Spawned, gates.source(100).bounded(4, 0));
    assert!(run.poll().is_pending());
    assert_eq!(run.stats().held, 4);
    assert_eq!(run.executor().ready_tasks(), 0);
    for _ in 0..4 {
        assert!(matches!(run.poll_alone(), Poll::Ready(Some(_))));
    }
    assert_eq!(run.executor().ready_tasks(), 1);
    run.settle();
    // It (and those it sent on) took every start again.
    assert_eq!(run.stats().held, 4);
    assert_eq!(gates.pulled(), 8);
}

/// The futurelock shape: after taking its first output, the consumer awaits
/// something that only the other in-flight futures produce. In place that
/// deadlocks, since nobody polls them; spawned, they finish on their own.
fn consumer_waits_for_the_workers(pool: &Pool, window: Option<usize>) {
    const WORKERS: usize = 3;
    let finished = Arc::new(AtomicUsize::new(0));
    let (all_done, all_done_seen) = oneshot::channel();
    let all_done = Arc::new(std::sync::Mutex::new(Some(all_done)));
    // The first item completes at once; the others each need another task to
    // poll them (a yield), and the last of them to finish signals the consumer.
    let items = (0..WORKERS)
        .map(|index| {
            let finished = Arc::clone(&finished);
            let all_done = Arc::clone(&all_done);
            Box::pin(async move {
                if index > 0 {
                    yield_now().await;
                    if finished.fetch_add(1, SeqCst) + 1 == WORKERS - 1 {
                        let _ = all_done.lock().unwrap().take().unwrap().send(());
                    }
                }
                index
            }) as BoxFuture<'static, usize>
        })
        .collect::<Vec<_>>();
    let stream = stream::iter(items).bounded(WORKERS, 0).ordered_if(window);
    let mut stream = stream.spawn_on(pool.spawner());
    pool.block_on(async move {
        let _watchdog = Watchdog::start("a consumer waiting for in-flight futures");
        let first = stream.next().await.unwrap();
        // Not polling the stream now: only the worker tasks can make this happen.
        all_done_seen.await.unwrap();
        let mut rest: Vec<usize> = stream.collect().await;
        rest.push(first);
        rest.sort_unstable();
        assert_eq!(rest, [0, 1, 2]);
    });
}

both_pools! {
    fn futures_progress_while_the_consumer_awaits_something_else(pool) {
        for window in [None, Some(3)] {
            consumer_waits_for_the_workers(&pool, window);
        }
    }

    fn cpu_bound_futures_run_in_parallel(pool) {
        let running = Arc::new(AtomicUsize::new(0));
        let stream = both_at_once(&running).bounded(2, 0).spawn_on(pool.spawner());
        let together: Vec<bool> = pool.block_on(stream.collect());
        assert_eq!(together, [true, true]);
    }
}

/// Point 18 on tokio's paused clock: spawned, the consumer's 100 ms per item
/// hides the futures' 50 ms (each a chain of five 10 ms timers, like a
/// request that takes a few round trips): the whole run takes the first
/// item's 50 ms plus the consumer's time.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_slow_consumer_overlaps_with_the_round_trips() {
    let items = 12;
    let started = tokio::time::Instant::now();
    let mut stream = stream::iter(0..items)
        .map(|index| async move {
            for _ in 0..5 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            index
        })
        .bounded(4, 4)
        .spawn_on(tokio::runtime::Handle::current());
    while stream.next().await.is_some() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(50 + 100 * items),
        "{elapsed:?}"
    );
    assert!(
        elapsed < Duration::from_millis(50 + 100 * items + 10),
        "{elapsed:?}"
    );
}

/// Two items that each block their thread until both run at the same time: it
/// completes only if two threads run them at once. The wait is bounded by the
/// watchdog, after which the item reports that it ran alone.
fn both_at_once(
    running: &Arc<AtomicUsize>,
) -> impl Stream<Item = impl Future<Output = bool> + Send + use<>> + Send + use<> {
    let running = Arc::clone(running);
    stream::iter(0..2).map(move |_| {
        let running = Arc::clone(&running);
        async move {
            running.fetch_add(1, SeqCst);
            let deadline = Instant::now() + HANG_LIMIT;
            while running.load(SeqCst) < 2 {
                if Instant::now() > deadline {
                    return false;
                }
                std::hint::spin_loop();
            }
            true
        }
    })
}
