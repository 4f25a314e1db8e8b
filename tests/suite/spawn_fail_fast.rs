//! Fail fast in spawned mode (`try_bounded(..).spawn_on(..)`), contract point
//! 21 with 16 to 20: the first `Err`, from a future or from the source, ends
//! the run. The task that sees it stops the others at once: nothing more is
//! pulled and no task takes another item, however slow the consumer (only an
//! item taken in the very section that pulled the source's error may still
//! get its first poll after it); the waiting items and the outputs that
//! cannot be yielded in order are dropped at once, each running future by its
//! task on that task's next poll (the cancellation wakes it). The consumer
//! gets the outputs the order allows (unordered: every one completed before
//! the error; ordered: the complete prefix, never waiting for a running head),
//! then the `Err`, then `None` forever. `close` drains, and an error in the
//! drain still fails fast. Without an error the budgets and the delivery are
//! those of `bounded` (points 16 and 17).
//!
//! Deterministic: the tasks run on an executor the test steps by hand, the
//! futures are gates the test opens; one test runs on tokio's multi-thread
//! runtime.

// Under `--cfg loom` the crate uses loom's primitives, which work only inside
// `loom::model`: these tests are for the normal build.

use bounded_buffered::Stats;
use futures::StreamExt;
use futures::stream::{FusedStream, Stream};
use support::{
    Failures, Gates, Got, HANG_LIMIT, Journal, Poller, StepExecutor, TryCase, TrySpawned, drain,
    eventually, tokio_multi_thread,
};

/// A case spawned on a fresh step executor, polled once (which spawns the
/// first task) by a consumer that counts its wakes, and run until its tasks
/// stall: every start and pull the budgets allow is made.
struct Started {
    gates: Gates,
    journal: Journal,
    executor: StepExecutor,
    stream: TrySpawned,
    consumer: Poller,
}

impl Started {
    fn new(case: TryCase) -> Self {
        let executor = StepExecutor::new();
        let (gates, journal, stream) = case.spawn_on(executor.spawner());
        let mut started = Self {
            gates,
            journal,
            executor,
            stream,
            consumer: Poller::new(),
        };
        assert_eq!(started.poll(), Got::Pending);
        started.executor.run_until_stalled();
        started
    }

    /// The consumer's poll.
    fn poll(&mut self) -> Got {
        Got::of(self.consumer.poll(&mut self.stream))
    }

    /// Opens gate `id` and polls the one task it woke, once.
    fn open_and_step(&mut self, id: usize) {
        assert!(self.gates.open(id), "gate {id} was pulled and closed");
        assert_eq!(self.executor.ready_tasks(), 1, "gate {id} wakes its task");
        assert!(self.executor.poll_one(0));
        self.executor.assert_none_escaped("a task");
    }

    /// Opens gate `id` and runs the tasks until they stall.
    fn open_and_stall(&mut self, id: usize) {
        assert!(self.gates.open(id), "gate {id} was pulled and closed");
        self.executor.run_until_stalled();
    }

    fn stats(&self) -> Stats {
        self.stream.stats()
    }

    /// (running futures, waiting items, held outputs) by the stream's count.
    fn counts(&self) -> (usize, usize, usize) {
        let stats = self.stats();
        (stats.active, stats.waiting, stats.held)
    }

    /// Once the error was yielded and the tasks ran: the stream ends and
    /// stays ended, every task ended, everything made was dropped exactly
    /// once, nothing started or was pulled after the error, and opening every
    /// gate and stepping again changes none of that.
    fn check_ended_after_error(&mut self) {
        self.executor.run_until_stalled();
        assert_eq!(self.executor.live_tasks(), 0, "tasks outlived the error");
        assert_eq!(self.poll(), Got::End);
        assert!(self.stream.is_terminated());
        assert_eq!(self.stream.size_hint(), (0, Some(0)));
        let (started, pulled) = (self.gates.started(), self.gates.pulled());
        self.gates.open_all();
        self.executor.run_until_stalled();
        for _ in 0..3 {
            assert_eq!(self.poll(), Got::End, "None forever");
        }
        assert_eq!(self.gates.started(), started, "a start after the end");
        assert_eq!(self.gates.pulled(), pulled, "a pull after the end");
        self.journal.check_no_start_after_error();
        assert_eq!(self.journal.pulls_after_error(), 0);
        self.gates.check_all_dropped_once();
        assert_eq!(self.counts(), (0, 0, 0));
    }
}

/// The ordered cases use a window as wide as the workers, or wider.
const WINDOWS: [Option<usize>; 2] = [None, Some(8)];

#[test]
fn an_error_from_a_future_cancels_every_task_and_drops_everything_exactly_once() {
    for window in WINDOWS {
        let case = TryCase::new(4, 3, window, 100).failing(Failures::futures(&[1]));
        let mut run = Started::new(case);
        assert_eq!((run.gates.pulled(), run.gates.started()), (7, 4));
        assert_eq!(run.counts(), (4, 3, 0));
        assert_eq!(run.executor.live_tasks(), 4);
        assert_eq!(run.consumer.wakes(), 0);

        // Item 1 fails: one poll of its task records the error.
        run.open_and_step(1);
        assert_eq!(run.journal.first_error(), Some(1));
        assert_eq!(
            run.consumer.wakes(),
            1,
            "the error wakes the parked consumer"
        );
        // At once: the source and the waiting items are dropped; the running
        // futures stay with their tasks, which are woken to drop them.
        assert_eq!(run.gates.counts().source_drops, 1, "window {window:?}");
        for id in 4..7 {
            assert_eq!(run.gates.drops(id), 1, "waiting item {id}");
        }
        for id in [0, 2, 3] {
            assert_eq!(run.gates.drops(id), 0, "running item {id}");
        }
        assert_eq!(run.executor.live_tasks(), 3, "the failing task ended");
        assert!(run.executor.has_ready(), "the cancellation wakes the tasks");
        assert_eq!(run.counts(), (0, 0, 0));

        // The consumer gets the error without waiting for those tasks.
        assert_eq!(run.poll(), Got::Err(1));
        run.executor.run_until_stalled();
        for id in [0, 2, 3] {
            assert_eq!(run.gates.drops(id), 1, "running item {id}");
        }
        assert_eq!((run.gates.pulled(), run.gates.started()), (7, 4));
        run.check_ended_after_error();
        assert_eq!(run.journal.errors(), (1, 1));
    }
}

#[test]
fn an_error_from_the_source_stops_pulling() {
    // `waiting == 0`: the error is pulled by a task that wants to start it.
    for window in [None, Some(2)] {
        let case = TryCase::new(2, 0, window, 100).failing(Failures::source_at(3));
        let mut run = Started::new(case);
        assert_eq!((run.gates.pulled(), run.gates.started()), (2, 2));
        run.open_and_stall(0);
        assert_eq!(run.poll(), Got::Ok(0));
        // Taking 0 freed a start: item 2 runs.
        run.executor.run_until_stalled();
        assert_eq!((run.gates.pulled(), run.gates.started()), (3, 3));
        run.open_and_stall(1);
        assert_eq!(run.poll(), Got::Ok(1));
        // Taking 1 freed a start: its task pulls the error.
        run.executor.run_until_stalled();
        assert_eq!(run.journal.first_error(), Some(3));
        assert_eq!(run.gates.counts().source_drops, 1, "window {window:?}");
        assert_eq!(run.journal.pulls(), 4);
        assert_eq!(run.poll(), Got::Err(3));
        run.check_ended_after_error();
        assert_eq!(run.journal.pulls(), 4, "nothing pulled after the error");
        assert_eq!(run.gates.started(), 3);
    }
}

#[test]
fn a_source_error_seen_while_topping_up_starts_not_even_the_item_taken_just_before() {
    // One worker, one waiting: the first task takes item 0 for its start,
    // then pulls the error while topping the queue up, in the same section.
    // Item 0 is not started after all: it is dropped with the waiting items,
    // never polled; nothing more is pulled.
    for window in [None, Some(1)] {
        let case = TryCase::new(1, 1, window, 100).failing(Failures::source_at(1));
        let mut run = Started::new(case);
        assert_eq!(run.journal.first_error(), Some(1), "window {window:?}");
        assert!(run.journal.source_failed_first());
        assert_eq!(run.journal.pulls(), 2);
        run.journal.check_no_start_after_error();
        assert_eq!(run.gates.started(), 0, "window {window:?}");
        assert_eq!(run.gates.polls(0), 0, "item 0 never polled");
        assert_eq!(run.gates.drops(0), 1, "item 0 dropped once");
        assert_eq!(run.poll(), Got::Err(1));
        run.check_ended_after_error();
        assert_eq!(run.journal.pulls(), 2, "nothing pulled after the error");
    }
}

#[test]
fn a_source_error_seen_after_a_completion_starts_not_even_the_item_taken_just_before() {
    // Item 0 completes; its task takes waiting item 1 for its next start,
    // then pulls the error while topping the queue up: item 1 is not started
    // after all.
    for window in [None, Some(4)] {
        let case = TryCase::new(1, 1, window, 100).failing(Failures::source_at(2));
        let mut run = Started::new(case);
        assert_eq!((run.gates.pulled(), run.gates.started()), (2, 1));
        if window.is_none() {
            // Unordered, the untaken output keeps the worker: take it.
            run.open_and_stall(0);
            assert_eq!(run.poll(), Got::Ok(0));
        } else {
            run.open_and_step(0);
        }
        run.executor.run_until_stalled();
        assert_eq!(run.journal.first_error(), Some(2), "window {window:?}");
        run.journal.check_no_start_after_error();
        assert_eq!(run.gates.started(), 1, "window {window:?}");
        assert_eq!(run.gates.polls(1), 0, "item 1 never polled");
        assert_eq!(run.gates.drops(1), 1, "item 1 dropped once");
        let rest = drain(&mut run.stream, &mut run.executor);
        let expected: &[Got] = if window.is_none() {
            &[Got::Err(2), Got::End]
        } else {
            &[Got::Ok(0), Got::Err(2), Got::End]
        };
        assert_eq!(rest, expected);
        run.check_ended_after_error();
        assert_eq!(run.journal.pulls(), 3, "nothing pulled after the error");
    }
}

#[test]
fn unordered_every_output_completed_before_the_error_is_yielded_before_it() {
    let case = TryCase::new(4, 0, None, 100).failing(Failures::futures(&[3]));
    let mut run = Started::new(case.clone());
    run.open_and_stall(0);
    assert_eq!(run.poll(), Got::Ok(0));
    // Taking 0 freed its worker: item 4 starts.
    run.executor.run_until_stalled();
    assert_eq!(run.gates.started(), 5);
    // 4 then 2 complete and are held (the consumer does not poll); then 3
    // fails while 1 still runs.
    run.open_and_stall(4);
    run.open_and_stall(2);
    assert_eq!(run.counts(), (2, 0, 2));
    run.open_and_step(3);
    assert_eq!(
        run.counts(),
        (0, 0, 2),
        "held outputs are kept for the consumer"
    );
    assert_eq!(run.gates.drops(1), 0, "item 1 is dropped by its task");
    // In completion order, then the error; item 1 never makes it.
    let rest = drain(&mut run.stream, &mut run.executor);
    assert_eq!(rest, [Got::Ok(4), Got::Ok(2), Got::Err(3), Got::End]);
    case.check_yielded_before_error(&[0, 4, 2], &run.journal);
    run.check_ended_after_error();
    assert_eq!(run.gates.drops(1), 1, "item 1 dropped by its task");
}

#[test]
fn ordered_the_error_is_yielded_while_the_head_still_runs() {
    let case = TryCase::new(4, 2, Some(8), 100).failing(Failures::futures(&[3]));
    let mut run = Started::new(case);
    assert_eq!((run.gates.pulled(), run.gates.started()), (6, 4));
    // Items behind the head complete; each freed worker takes the next item.
    for id in [1, 2, 4] {
        run.open_and_stall(id);
    }
    assert_eq!(run.poll(), Got::Pending, "the head still runs");
    assert_eq!(run.stats().held, 3);
    let pulled = run.gates.pulled();

    run.open_and_step(3);
    // Held outputs 1, 2 and 4 sit behind the running head: they can never be
    // yielded in order, and go at once (with the failed item's own output,
    // which its future drops).
    assert_eq!(run.gates.counts().outputs_dropped, 3 + 1);
    assert_eq!(run.counts(), (0, 0, 0));
    // The error comes while the head's gate is still closed and its future
    // not dropped yet: it does not wait for the head.
    assert!(run.gates.closed_started().contains(&0));
    assert_eq!(run.gates.drops(0), 0);
    assert_eq!(run.poll(), Got::Err(3));
    run.executor.run_until_stalled();
    assert_eq!(run.gates.drops(0), 1, "the head dropped by its task");
    assert_eq!(run.gates.polls(0), 1, "the head never polled again");
    assert_eq!(run.gates.pulled(), pulled);
    run.check_ended_after_error();
}

#[test]
fn ordered_the_complete_prefix_comes_first_and_the_outputs_behind_its_gap_go() {
    let case = TryCase::new(6, 0, Some(6), 100).failing(Failures::futures(&[4]));
    let mut run = Started::new(case.clone());
    run.open_and_stall(1);
    run.open_and_stall(2);
    assert_eq!(run.poll(), Got::Pending, "position 0 still runs");
    // The head completes: 0, 1, 2 are the complete prefix. 5 completes behind
    // the running 3. Then 4 fails.
    run.open_and_stall(0);
    run.open_and_stall(5);
    assert_eq!(run.stats().held, 4);
    run.open_and_step(4);
    // Output 5 goes at once (with the failed item's own, which its future
    // drops); 0, 1 and 2 stay.
    assert_eq!(
        run.gates.counts().outputs_dropped,
        1 + 1,
        "output 5 goes at once"
    );
    assert_eq!(run.stats().held, 3, "the prefix is kept");
    let rest = drain(&mut run.stream, &mut run.executor);
    assert_eq!(
        rest,
        [Got::Ok(0), Got::Ok(1), Got::Ok(2), Got::Err(4), Got::End]
    );
    case.check_yielded_before_error(&[0, 1, 2], &run.journal);
    run.check_ended_after_error();
}

#[test]
fn close_then_an_error_during_the_drain_still_fails_fast() {
    for window in [None, Some(2)] {
        let case = TryCase::new(2, 2, window, 100).failing(Failures::futures(&[2]));
        let mut run = Started::new(case);
        assert_eq!((run.gates.pulled(), run.gates.started()), (4, 2));
        run.stream.close();
        assert_eq!(run.gates.counts().source_drops, 1, "close drops the source");
        run.open_and_stall(0);
        assert_eq!(run.poll(), Got::Ok(0));
        // The freed start takes waiting item 2; item 3 still waits.
        run.executor.run_until_stalled();
        assert_eq!(run.gates.started(), 3, "window {window:?}");
        run.open_and_step(2);
        assert_eq!(run.gates.drops(3), 1, "the waiting item goes at once");
        assert_eq!(run.poll(), Got::Err(2), "window {window:?}");
        run.check_ended_after_error();
        assert_eq!((run.gates.pulled(), run.gates.started()), (4, 3));
    }
}

#[test]
fn without_an_error_every_output_is_yielded_once() {
    for window in [None, Some(2), Some(5)] {
        let case = TryCase::new(3, 2, window, 30);
        let mut run = Started::new(case);
        let mut yielded = Vec::new();
        loop {
            match run.poll() {
                Got::Ok(id) => yielded.push(id),
                Got::End => break,
                Got::Pending => {
                    run.gates.open_all();
                    run.executor.run_until_stalled();
                }
                Got::Err(id) => panic!("no item fails, yet {id} did"),
            }
        }
        if window.is_none() {
            yielded.sort_unstable();
        }
        assert_eq!(yielded, (0..30).collect::<Vec<_>>(), "window {window:?}");
        let stats = run.stats();
        assert_eq!((stats.pulled, stats.completed), (30, 30));
        assert!(run.stream.is_terminated());
        run.executor.run_until_stalled();
        assert_eq!(run.executor.live_tasks(), 0);
        run.gates.check_all_dropped_once();
        assert_eq!(run.journal.errors(), (0, 0));
    }
}

#[test]
fn the_budgets_hold_exactly_as_for_bounded() {
    for (workers, waiting) in [(1usize, 0), (2, 3), (4, 8)] {
        for window in [None, Some(workers.div_ceil(2)), Some(workers + 2)] {
            let case = TryCase::new(workers, waiting, window, 1_000);
            let span = case.span();
            let mut run = Started::new(case);
            let context = format!("W={workers} Q={waiting} window {window:?}");
            // Every future blocked: the source advanced exactly this far.
            assert_eq!(run.gates.pulled(), span + waiting, "{context}");
            assert_eq!(run.gates.started(), span, "{context}");
            assert_eq!(run.counts(), (span, waiting, 0), "{context}");
            assert_eq!(run.executor.spawns(), span, "one task per start: {context}");
            assert_eq!(run.poll(), Got::Pending);
            run.executor.run_until_stalled();
            assert_eq!(
                run.gates.pulled(),
                span + waiting,
                "not one more: {context}"
            );
        }
    }
}

#[test]
fn a_slow_consumer_the_error_stops_every_start_though_nobody_polls() {
    // Ordered with a window wider than the workers: a completion frees its
    // worker whether or not the consumer takes anything.
    let case = TryCase::new(2, 1, Some(8), 100).failing(Failures::futures(&[2]));
    let mut run = Started::new(case);
    run.open_and_stall(1);
    // 1 is held behind the head; its worker took item 2 and pulled item 3.
    assert_eq!((run.gates.pulled(), run.gates.started()), (4, 3));
    run.open_and_step(2);
    assert_eq!(run.journal.first_error(), Some(2));
    // The consumer does not poll. However the tasks are stepped and the
    // gates opened, nothing starts and nothing is pulled.
    for _ in 0..3 {
        run.gates.open_all();
        run.executor.run_until_stalled();
        assert_eq!((run.gates.pulled(), run.gates.started()), (4, 3));
        assert_eq!(run.journal.started_after_error(), Vec::<usize>::new());
    }
    assert_eq!(run.executor.live_tasks(), 0);
    assert_eq!(run.gates.drops(3), 1, "the waiting item never started");
    // Output 1 sat behind the cancelled head: only the error is left.
    assert_eq!(run.poll(), Got::Err(2));
    run.check_ended_after_error();
}

#[test]
fn size_hint_promises_no_item_that_an_error_may_cancel() {
    // Four items in flight, and any may fail: only one more item (the error,
    // if it is one) is certain.
    let case = TryCase::new(2, 2, None, 100).failing(Failures::futures(&[0]));
    let mut run = Started::new(case);
    assert_eq!(run.counts(), (2, 2, 0));
    let (lower, _) = run.stream.size_hint();
    run.open_and_stall(0);
    let rest = drain(&mut run.stream, &mut run.executor);
    assert_eq!(rest, [Got::Err(0), Got::End]);
    let items = rest.len() - 1;
    assert!(
        lower <= items,
        "size_hint promised at least {lower} items; the stream yielded {items}"
    );
}

#[test]
fn on_tokio_multi_thread_the_run_ends_with_the_error_and_drops_everything() {
    let runtime = tokio_multi_thread();
    for window in [None, Some(4)] {
        let failing = 250;
        let case = TryCase::new(4, 4, window, 1_000).failing(Failures::futures(&[failing]));
        // Every gate open: each future completes in its first poll, on either
        // of the runtime's threads.
        let (gates, journal, mut stream) =
            case.spawn_with(Gates::open_except(&[]), runtime.handle().clone());
        let mut got = Vec::new();
        runtime.block_on(async {
            loop {
                let next = tokio::time::timeout(HANG_LIMIT, stream.next())
                    .await
                    .expect("watchdog: no output");
                let next = Got::of(std::task::Poll::Ready(next));
                got.push(next);
                if next == Got::End {
                    break;
                }
            }
            assert_eq!(stream.next().await.map(|_| ()), None, "None forever");
        });
        assert!(stream.is_terminated());
        let (end, before) = got.split_last().unwrap();
        let (error, oks) = before.split_last().expect("the error, then the end");
        assert_eq!((*error, *end), (Got::Err(failing), Got::End), "{window:?}");
        let mut ids: Vec<usize> = oks
            .iter()
            .map(|got| match got {
                Got::Ok(id) => *id,
                other => panic!("an output after the error: {other:?}"),
            })
            .collect();
        if window.is_some() {
            assert_eq!(ids, (0..ids.len()).collect::<Vec<_>>(), "the prefix");
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), oks.len(), "an output twice");
        assert!(!ids.contains(&failing), "the failed item was yielded");
        assert!(journal.pulls() < case.items, "the run stopped early");
        drop(stream);
        let metrics = runtime.metrics();
        eventually("every task to end", || metrics.num_alive_tasks() == 0);
        gates.check_all_dropped_once();
        assert_eq!(journal.errors(), (1, 1));
    }
}
