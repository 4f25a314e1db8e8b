//! Fail fast (`try_bounded`), in both modes (contract point 21; with 16 to 20
//! spawned): the first `Err`, from a future or from the source, ends the run.
//! From the moment the adapter sees it nothing more is pulled and nothing
//! more starts, however slow the consumer; the waiting items and the outputs
//! that cannot be yielded in order are dropped at once, the running futures
//! too (spawned: each by its task on that task's next poll, which the
//! cancellation arranges by waking it). The consumer gets the outputs the
//! order allows (unordered: every one completed before the error; ordered:
//! the complete prefix, never waiting for a running head), then the `Err`,
//! then `None` forever. `close` drains, and an error in the drain still fails
//! fast. Without an error the budgets and the delivery are those of
//! `bounded`. A panic, also in a destructor the cancellation runs, is handled
//! as points 10 and 20 say; spawned, whichever of a panic and an error is
//! recorded first is the run's outcome.
//!
//! Deterministic: the futures are gates the test opens; spawned streams run
//! their tasks on an executor the test steps (`support::drive!`), and a step
//! here polls the consumer alone, so where spawned tasks run between two
//! steps the test says so (`settle`, `open_and_step`). One test runs on
//! tokio's multi-thread runtime.

use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, Stats};
use futures::{FutureExt, StreamExt, TryStreamExt};
use support::{
    Case, Driven, Failures, Fault, Gates, Got, INJECTED, Mode, OrderedIf, Rng, TryOutput, Watchdog,
    both_modes, caught, check_ended_on_tokio, counted, drive, drop_and_check, fed_source,
    quiet_injected_panics, tokio_multi_thread, yield_now,
};

/// A fallible case in one mode, with its gates.
struct Started {
    gates: Gates,
    run: Driven<'static, TryOutput>,
}

impl Started {
    /// `case` on `gates`, never polled.
    fn unpolled(mode: Mode, case: &Case, gates: Gates) -> Self {
        quiet_injected_panics();
        let run = drive!(mode, case.fallible(&gates));
        Self { gates, run }
    }

    /// `case` on gates with its fault, polled once (which spawns the first
    /// task) and settled: every start and pull the budgets allow is made.
    fn new(mode: Mode, case: &Case) -> Self {
        let mut started = Self::unpolled(mode, case, Gates::with_fault(case.fault));
        assert_eq!(started.poll(), Got::Pending);
        started.run.settle();
        started
    }

    fn spawned(&self) -> bool {
        self.run.mode().is_spawned()
    }

    /// The consumer's poll, and nothing else.
    fn poll(&mut self) -> Got {
        Got::of(self.run.poll_alone())
    }

    /// The rest of the run: polls to the end, running the tasks in between.
    fn drain(&mut self) -> Vec<Got> {
        let rest = self.run.take_to_end().into_iter().map(Got::of_try);
        rest.chain([Got::End]).collect()
    }

    /// Opens gate `id`; spawned, polls the one task it woke, once.
    fn open_and_step(&mut self, id: usize) {
        assert!(self.gates.open(id), "gate {id} was pulled and closed");
        if self.spawned() {
            let executor = self.run.executor();
            assert_eq!(executor.ready_tasks(), 1, "gate {id} wakes its task");
            assert!(executor.poll_one(0));
            executor.assert_none_escaped("a task");
        }
    }

    /// Opens gate `id` and settles.
    fn open_and_stall(&mut self, id: usize) {
        assert!(self.gates.open(id), "gate {id} was pulled and closed");
        self.run.settle();
    }

    fn stats(&self) -> Stats {
        self.run.stats()
    }

    /// (running futures, waiting items, held outputs) by the stream's count.
    fn counts(&self) -> (usize, usize, usize) {
        let stats = self.stats();
        (stats.active, stats.waiting, stats.held)
    }

    /// Spawned: the tasks still alive.
    fn live_tasks(&mut self) -> usize {
        self.run.executor().live_tasks()
    }

    /// The next two polls give the error and the end, and the stream stays
    /// ended.
    fn expect_error_then_end(&mut self, error: usize) {
        assert_eq!(self.poll(), Got::Err(error));
        assert_eq!(self.poll(), Got::End);
        assert!(self.run.is_terminated());
        assert_eq!(self.poll(), Got::End);
    }

    /// The next poll raises `message`; the one after refuses (point 10 in
    /// place, 20 spawned).
    fn expect_panic(&mut self, message: &str) {
        let run = &mut self.run;
        assert_eq!(
            caught(|| Got::of(run.poll_alone())),
            Err(message.to_owned())
        );
        run.check_refuses_polls();
    }

    /// Spawned, the failure cancelled the run: once the tasks ran, everything
    /// is gone, before the stream is dropped (points 19 to 21). In place the
    /// stream keeps what it holds until then.
    fn check_all_gone_if_spawned(&mut self) {
        if self.spawned() {
            self.run.settle();
            assert_eq!(self.live_tasks(), 0, "tasks outlived the failure");
            self.gates.check_all_dropped_once();
        }
    }

    /// Drops the stream, which does not panic: everything goes once (see
    /// `drop_and_check`).
    fn drop_and_check(&mut self) {
        let dropped = drop_and_check(&mut self.run, &self.gates, &mut Rng::new(0));
        dropped.expect("the stream's drop does not panic");
    }

    /// Once the error was yielded (and spawned, the tasks ran): the stream
    /// ends and stays ended, every task ended, everything pulled was dropped
    /// exactly once, nothing started or was pulled after the error, and
    /// opening every gate and stepping again changes none of that. Spawned
    /// the source is gone too (the cancellation drops it); in place the
    /// stream keeps it until it is dropped.
    fn check_ended_after_error(&mut self) {
        self.run.settle();
        if self.spawned() {
            assert_eq!(self.live_tasks(), 0, "tasks outlived the error");
        }
        assert_eq!(self.poll(), Got::End);
        assert!(self.run.is_terminated());
        assert_eq!(self.run.size_hint(), (0, Some(0)));
        let (started, pulled) = (self.gates.started(), self.gates.pulled());
        self.gates.open_all();
        self.run.settle();
        for _ in 0..3 {
            assert_eq!(self.poll(), Got::End, "None forever");
        }
        assert_eq!(self.gates.started(), started, "a start after the end");
        assert_eq!(self.gates.pulled(), pulled, "a pull after the end");
        self.gates.check_no_start_after_error();
        assert_eq!(self.gates.pulls_after_error(), 0);
        let counts = self.gates.counts();
        assert_eq!((counts.futures_dropped, counts.running), (counts.pulled, 0));
        assert_eq!(counts.outputs_dropped, counts.outputs_made);
        assert_eq!(counts.source_drops, usize::from(self.spawned()));
        assert_eq!(self.counts(), (0, 0, 0));
        self.drop_and_check();
    }
}

/// `workers`, `waiting` and `window`, 100 items of which `failing` fails, and
/// `fault`.
fn faulty(fault: Fault, budgets: (usize, usize, Option<usize>), failing: usize) -> Case {
    let (workers, waiting, window) = budgets;
    let case = Case::new(workers, waiting, window, 100);
    Case {
        fault,
        ..case.failing(Failures::futures(&[failing]))
    }
}

/// The ordered cases use a window as wide as the workers, or wider.
const WINDOWS: [Option<usize>; 2] = [None, Some(8)];

both_modes! {
    /// Point 21 (and 19): every waiting item and running future goes, the
    /// error comes without waiting for the running futures' tasks.
    fn an_error_from_a_future_cancels_everything_and_drops_it_exactly_once(mode) {
        for window in WINDOWS {
            let case = Case::new(4, 3, window, 100).failing(Failures::futures(&[1]));
            let mut run = Started::new(mode, &case);
            assert_eq!((run.gates.pulled(), run.gates.started()), (7, 4));
            assert_eq!(run.counts(), (4, 3, 0));
            assert_eq!(run.run.wakes(), 0);
            if mode.is_spawned() {
                assert_eq!(run.live_tasks(), 4);
            }

            // Item 1 fails (spawned: one poll of its task records the error).
            run.open_and_step(1);
            assert_eq!(run.run.wakes(), 1, "the parked consumer is woken");
            if mode.is_spawned() {
                // At once: the source and the waiting items are dropped; the
                // running futures stay with their tasks, woken to drop them.
                assert_eq!(run.gates.first_error(), Some(1));
                assert_eq!(run.gates.counts().source_drops, 1, "window {window:?}");
                for id in 4..7 {
                    assert_eq!(run.gates.drops(id), 1, "waiting item {id}");
                }
                for id in [0, 2, 3] {
                    assert_eq!(run.gates.drops(id), 0, "running item {id}");
                }
                assert_eq!(run.live_tasks(), 3, "the failing task ended");
                assert!(run.run.executor().has_ready(), "the cancellation wakes the tasks");
                assert_eq!(run.counts(), (0, 0, 0));
            }

            // The consumer gets the error without waiting for those tasks; in
            // place everything pulled is gone when it comes.
            assert_eq!(run.poll(), Got::Err(1));
            run.run.settle();
            for id in 0..7 {
                assert_eq!(run.gates.drops(id), 1, "item {id} dropped exactly once");
            }
            assert_eq!((run.gates.pulled(), run.gates.started()), (7, 4), "no start, no pull");
            assert_eq!(run.counts(), (0, 0, 0));
            run.check_ended_after_error();
            assert_eq!(run.gates.errors(), (1, 1));
        }
    }

    /// Point 21: unordered, an output held when the error comes still comes
    /// first.
    fn unordered_every_output_completed_before_the_error_comes_first(mode) {
        let case = Case::new(4, 0, None, 100).failing(Failures::futures(&[2]));
        let mut run = Started::new(mode, &case);
        // 0 and 1 complete together: 0 is handed out (its worker refilled
        // with item 4), 1 stays held. Then 2 fails: 1 still comes first.
        run.open_and_stall(0);
        run.open_and_stall(1);
        assert_eq!(run.poll(), Got::Ok(0));
        run.run.settle();
        assert_eq!((run.stats().held, run.gates.started()), (1, 5));
        run.open_and_stall(2);
        assert_eq!(run.poll(), Got::Ok(1));
        // The error was seen (in place, by that poll): running items 3 and 4
        // are gone already.
        run.run.settle();
        for id in 0..5 {
            assert_eq!(run.gates.drops(id), 1, "item {id}");
        }
        run.expect_error_then_end(2);
        assert_eq!(run.gates.started(), 5, "nothing started after the error");
    }

    /// Point 21: unordered, the outputs completed before the error come in
    /// completion order, then the error; a running item never makes it.
    fn unordered_every_output_completed_before_the_error_is_yielded_before_it(mode) {
        let case = Case::new(4, 0, None, 100).failing(Failures::futures(&[3]));
        let mut run = Started::new(mode, &case);
        run.open_and_stall(0);
        assert_eq!(run.poll(), Got::Ok(0));
        // Taking 0 freed its worker: item 4 starts.
        run.run.settle();
        assert_eq!(run.gates.started(), 5);
        // 4 then 2 complete, then 3 fails while 1 still runs.
        run.open_and_stall(4);
        run.open_and_stall(2);
        if mode.is_spawned() {
            // Point 18: the tasks complete them while the consumer is away.
            assert_eq!(run.counts(), (2, 0, 2));
        }
        run.open_and_step(3);
        if mode.is_spawned() {
            assert_eq!(run.counts(), (0, 0, 2), "held outputs are kept for the consumer");
        }
        assert_eq!(run.gates.drops(1), 0, "item 1 is not dropped yet");
        // In completion order, then the error.
        let before_error: &[usize] = if mode.is_spawned() {
            assert_eq!(run.drain(), [Got::Ok(4), Got::Ok(2), Got::Err(3), Got::End]);
            &[0, 4, 2]
        } else {
            // In place an item completes when the consumer's pass polls it,
            // and a pass polls the items woken together oldest first (point
            // 7): 2 completes, 3 fails, and 4, woken but younger, is dropped
            // before its poll.
            assert_eq!(run.drain(), [Got::Ok(2), Got::Err(3), Got::End]);
            assert_eq!(run.gates.polls(4), 1, "item 4 was polled only at its start");
            &[0, 2]
        };
        case.check_yielded_before_error(before_error, &run.gates);
        assert_eq!(run.gates.drops(1), 1, "item 1 dropped");
        run.check_ended_after_error();
    }

    /// Point 21 with 5: ordered, the error does not wait for a running head,
    /// and the held outputs behind it go at once.
    fn ordered_the_error_is_yielded_while_the_head_still_runs(mode) {
        let case = Case::new(4, 2, Some(8), 100).failing(Failures::futures(&[3]));
        let mut run = Started::new(mode, &case);
        assert_eq!((run.gates.pulled(), run.gates.started()), (6, 4));
        // Items behind the head complete; each freed worker takes the next.
        for id in [1, 2, 4] {
            run.open_and_stall(id);
        }
        assert_eq!(run.poll(), Got::Pending, "the head still runs");
        assert_eq!(run.stats().held, 3);
        let pulled = run.gates.pulled();

        run.open_and_step(3);
        // Held outputs 1, 2 and 4 sit behind the running head: they can never
        // be yielded in order, and go at once (with the failed item's own
        // output, which its future drops). Spawned that is the section that
        // records the error; in place the poll that sees it.
        if mode.is_spawned() {
            assert_eq!(run.gates.counts().outputs_dropped, 3 + 1);
            assert_eq!(run.counts(), (0, 0, 0));
        }
        // The error comes while the head's gate is still closed and its
        // future not dropped yet: it does not wait for the head.
        assert!(run.gates.closed_started().contains(&0));
        assert_eq!(run.gates.drops(0), 0);
        assert_eq!(run.poll(), Got::Err(3));
        run.run.settle();
        assert_eq!(run.gates.counts().outputs_dropped, 3 + 1);
        assert_eq!(run.counts(), (0, 0, 0));
        assert_eq!(run.gates.drops(0), 1, "the head cancelled, not waited for");
        assert_eq!(run.gates.polls(0), 1, "the head never polled again");
        assert_eq!(run.gates.pulled(), pulled);
        run.check_ended_after_error();
    }

    /// Point 21 with 5: ordered, the complete prefix comes before the error,
    /// and an output behind the gap goes.
    fn ordered_the_complete_prefix_comes_first_and_the_outputs_behind_its_gap_go(mode) {
        let case = Case::new(6, 0, Some(6), 100).failing(Failures::futures(&[4]));
        let mut run = Started::new(mode, &case);
        run.open_and_stall(1);
        run.open_and_stall(2);
        assert_eq!(run.poll(), Got::Pending, "position 0 still runs");
        // The head completes: 0, 1, 2 are the complete prefix. 5 completes
        // behind the running 3. Then 4 fails.
        run.open_and_stall(0);
        run.open_and_stall(5);
        if mode.is_spawned() {
            assert_eq!(run.stats().held, 4);
        }
        run.open_and_step(4);
        if mode.is_spawned() {
            // Output 5 goes at once (with the failed item's own, which its
            // future drops); 0, 1 and 2 stay.
            assert_eq!(run.gates.counts().outputs_dropped, 1 + 1, "output 5 goes at once");
            assert_eq!(run.stats().held, 3, "the prefix is kept");
        }
        let rest = run.drain();
        assert_eq!(rest, [Got::Ok(0), Got::Ok(1), Got::Ok(2), Got::Err(4), Got::End]);
        case.check_yielded_before_error(&[0, 1, 2], &run.gates);
        run.check_ended_after_error();
    }

    /// Point 21: an error in a future's first poll, while the first fill
    /// starts items, stops the starts of that fill.
    fn an_error_in_the_first_poll_stops_the_starts_of_the_same_fill(mode) {
        let gates = Gates::new();
        gates.open(1);
        let case = Case::new(4, 4, None, 100).failing(Failures::futures(&[1]));
        let mut run = Started::unpolled(mode, &case, gates);
        let got = run.poll();
        if mode.is_spawned() {
            // Point 17: the first poll spawns a task; the items start in it.
            assert_eq!(got, Got::Pending);
            run.run.settle();
            assert_eq!(run.poll(), Got::Err(1));
        } else {
            assert_eq!(got, Got::Err(1));
        }
        assert_eq!(run.gates.started(), 2, "items 0 and 1 started, none after");
        assert_eq!(run.gates.pulled(), 2);
        run.check_ended_after_error();
    }

    /// Point 21: an error from the source is the last thing pulled; the
    /// outputs completed before it come first.
    fn an_error_from_the_source_stops_pulling(mode) {
        // `waiting == 0`: the error is pulled to start it.
        for window in [None, Some(2)] {
            let case = Case::new(2, 0, window, 100).failing(Failures::source_at(3));
            let mut run = Started::new(mode, &case);
            assert_eq!((run.gates.pulled(), run.gates.started()), (2, 2));
            run.open_and_stall(0);
            assert_eq!(run.poll(), Got::Ok(0));
            // Taking 0 freed a start: item 2 runs.
            run.run.settle();
            assert_eq!((run.gates.pulled(), run.gates.started()), (3, 3));
            run.open_and_stall(1);
            assert_eq!(run.poll(), Got::Ok(1));
            // Taking 1 freed a start: the error is pulled for it.
            run.run.settle();
            assert_eq!(run.gates.first_error(), Some(3));
            assert_eq!(run.gates.pulled(), 4);
            assert_eq!(run.gates.counts().source_drops, usize::from(mode.is_spawned()));
            assert_eq!(run.poll(), Got::Err(3));
            run.check_ended_after_error();
            assert_eq!(run.gates.pulled(), 4, "nothing pulled after the error");
            assert_eq!(run.gates.started(), 3);
        }
    }

    /// Point 21: a source that fails while the first task tops up the queue.
    fn a_source_error_seen_while_topping_up_starts_not_even_the_item_taken_just_before(mode) {
        // One worker, one waiting: item 0 is taken for its start, then the
        // error is pulled to top the queue up. Spawned that is one lock
        // section, and item 0 is not started after all: it is dropped with
        // the waiting items, never polled. In place the fill starts item 0
        // before it pulls the error (point 21 counts from when the error is
        // seen). Nothing more is pulled.
        for window in [None, Some(1)] {
            let case = Case::new(1, 1, window, 100).failing(Failures::source_at(1));
            let mut run = Started::unpolled(mode, &case, Gates::new());
            let got = run.poll();
            run.run.settle();
            assert_eq!(run.gates.first_error(), Some(1), "window {window:?}");
            assert!(run.gates.source_failed_first());
            assert_eq!(run.gates.pulled(), 2);
            run.gates.check_no_start_after_error();
            let started = usize::from(!mode.is_spawned());
            assert_eq!(run.gates.started(), started, "window {window:?}");
            assert_eq!(run.gates.polls(0), started, "item 0 polled before the error, if at all");
            assert_eq!(run.gates.drops(0), 1, "item 0 dropped once");
            if mode.is_spawned() {
                assert_eq!(got, Got::Pending);
                assert_eq!(run.poll(), Got::Err(1));
            } else {
                assert_eq!(got, Got::Err(1));
            }
            run.check_ended_after_error();
            assert_eq!(run.gates.pulled(), 2, "nothing pulled after the error");
        }
    }

    /// Point 21: a source that fails while a completion's refill tops up
    /// the queue.
    fn a_source_error_seen_after_a_completion_starts_not_even_the_item_taken_just_before(
        mode
    ) {
        // Item 0 completes; item 1 is taken for the next start, then the
        // error is pulled to top the queue up: spawned, in the same lock
        // section, so item 1 is not started; in place the refill starts it
        // before it pulls the error.
        for window in [None, Some(4)] {
            let case = Case::new(1, 1, window, 100).failing(Failures::source_at(2));
            let mut run = Started::new(mode, &case);
            assert_eq!((run.gates.pulled(), run.gates.started()), (2, 1));
            if window.is_none() {
                // Unordered, the untaken output keeps the worker: take it.
                run.open_and_stall(0);
                assert_eq!(run.poll(), Got::Ok(0));
            } else {
                run.open_and_step(0);
            }
            run.run.settle();
            let rest = run.drain();
            assert_eq!(run.gates.first_error(), Some(2), "window {window:?}");
            run.gates.check_no_start_after_error();
            let started = usize::from(!mode.is_spawned());
            assert_eq!(run.gates.started(), 1 + started, "window {window:?}");
            assert_eq!(run.gates.polls(1), started, "item 1 polled before the error, if at all");
            assert_eq!(run.gates.drops(1), 1, "item 1 dropped once");
            let expected: &[Got] = if window.is_none() {
                &[Got::Err(2), Got::End]
            } else {
                &[Got::Ok(0), Got::Err(2), Got::End]
            };
            assert_eq!(rest, expected);
            run.check_ended_after_error();
            assert_eq!(run.gates.pulled(), 3, "nothing pulled after the error");
        }
    }

    /// Points 21 and 22: `close`, then an error during the drain.
    fn close_then_an_error_during_the_drain_still_fails_fast(mode) {
        for window in [None, Some(2)] {
            let case = Case::new(2, 2, window, 100).failing(Failures::futures(&[2]));
            let mut run = Started::new(mode, &case);
            assert_eq!((run.gates.pulled(), run.gates.started()), (4, 2));
            run.run.close();
            // Point 22: spawned, `close` drops the source; in place the
            // stream keeps it (`into_inner` hands it back).
            assert_eq!(run.gates.counts().source_drops, usize::from(mode.is_spawned()));
            run.open_and_stall(0);
            assert_eq!(run.poll(), Got::Ok(0));
            // The freed start takes waiting item 2; item 3 still waits.
            run.run.settle();
            assert_eq!(run.gates.started(), 3, "window {window:?}");
            run.open_and_step(2);
            if mode.is_spawned() {
                assert_eq!(run.gates.drops(3), 1, "the waiting item goes at once");
            }
            assert_eq!(run.poll(), Got::Err(2), "window {window:?}");
            assert_eq!(run.gates.drops(3), 1, "the waiting item went");
            run.check_ended_after_error();
            assert_eq!((run.gates.pulled(), run.gates.started()), (4, 3), "3 never started");
        }
    }

    /// Point 1 (17 spawned): without an error, `try_bounded` delivers every
    /// output once, in order when ordered.
    fn without_an_error_every_output_is_yielded_once(mode) {
        for window in [None, Some(2), Some(4), Some(5)] {
            let case = Case::new(3, 2, window, 50);
            let mut run = Started::new(mode, &case);
            let mut yielded = Vec::new();
            loop {
                match run.poll() {
                    Got::Ok(id) => yielded.push(id),
                    Got::End => break,
                    Got::Pending => {
                        run.gates.open_all();
                        run.run.settle();
                    }
                    got => panic!("no item fails, yet {got:?}"),
                }
            }
            if window.is_none() {
                yielded.sort_unstable();
            }
            assert_eq!(yielded, (0..50).collect::<Vec<_>>(), "window {window:?}");
            let stats = run.stats();
            assert_eq!((stats.pulled, stats.completed), (50, 50));
            assert!(run.run.is_terminated());
            // Spawned, every task ended with the stream (point 17), and
            // dropped everything.
            run.check_all_gone_if_spawned();
            run.drop_and_check();
            assert_eq!(run.gates.errors(), (0, 0));
        }
    }

    /// Point 3 (16 spawned): the budgets hold exactly as for `bounded`.
    fn the_budgets_hold_exactly_as_for_bounded(mode) {
        for (workers, waiting) in [(1usize, 0), (2, 3), (4, 8)] {
            for window in [None, Some(workers.div_ceil(2)), Some(workers + 2)] {
                let case = Case::new(workers, waiting, window, 1_000);
                let span = window.map_or(workers, |window| window.min(workers));
                let mut run = Started::new(mode, &case);
                let context = format!("W={workers} Q={waiting} window {window:?}");
                // Every future blocked: the source advanced exactly this far.
                assert_eq!(run.gates.pulled(), span + waiting, "{context}");
                assert_eq!(run.gates.started(), span, "{context}");
                assert_eq!(run.counts(), (span, waiting, 0), "{context}");
                if mode.is_spawned() {
                    assert_eq!(run.run.spawns(), span, "one task per start: {context}");
                }
                assert_eq!(run.poll(), Got::Pending);
                run.run.settle();
                assert_eq!(run.gates.pulled(), span + waiting, "not one more: {context}");
            }
        }
    }

    /// Point 15 with 21: any item may fail, so `size_hint` promises only one
    /// more item (the error, if it is one), and no item an error may cancel.
    fn size_hint_promises_no_item_that_an_error_may_cancel(mode) {
        let case = Case::new(2, 2, None, 10);
        let run = Started::unpolled(mode, &case, Gates::new());
        assert_eq!(run.run.size_hint(), (1, Some(10)));

        let case = Case::new(2, 2, None, 100).failing(Failures::futures(&[0]));
        let mut run = Started::new(mode, &case);
        assert_eq!(run.counts(), (2, 2, 0));
        let (lower, _) = run.run.size_hint();
        run.open_and_stall(0);
        let rest = run.drain();
        assert_eq!(rest, [Got::Err(0), Got::End]);
        let items = rest.len() - 1;
        assert!(lower <= items, "size_hint promised at least {lower} items; got {items}");
    }

    /// Points 15 and 21: once the run failed, `size_hint` is exact, and the
    /// same in both modes: the held outputs the error lets through, then the
    /// error.
    fn size_hint_after_the_error_is_exact(mode) {
        // Items 0 to 2 are ready; item 3 fails after one yield.
        let source = futures::stream::iter(0..4u32).map(|n| {
            Ok::<_, u32>(async move {
                if n == 3 {
                    yield_now().await;
                    return Err(n);
                }
                Ok(n)
            })
        });
        let mut run = drive!(mode, source.try_bounded(4, 0));
        let mut taken = 0;
        while taken < 2 {
            match run.poll() {
                Poll::Ready(Some(Ok(_))) => taken += 1,
                Poll::Pending => {}
                other => panic!("an output first: {other:?}"),
            }
        }
        // One output left to yield before the error.
        assert_eq!(run.size_hint(), (2, Some(2)));
        assert!(matches!(run.poll(), Poll::Ready(Some(Ok(_)))));
        assert_eq!(run.size_hint(), (1, Some(1)));
        assert_eq!(run.poll(), Poll::Ready(Some(Err(3))));
        assert_eq!(run.size_hint(), (0, Some(0)));
        assert_eq!(run.poll(), Poll::Ready(None));
    }

    /// Point 21 with 10 and 20: a destructor that panics while the error's
    /// cancellation drops a running future. In place the panic comes out of
    /// the consumer's poll instead of the error (point 10), and the stream
    /// refuses further polls; spawned the task that drops the future has
    /// nobody to tell (the run's outcome is the error) and swallows it.
    fn a_destructor_panicking_while_the_error_cancels_a_running_future_drops_everything_once(
        mode
    ) {
        for window in [None, Some(4)] {
            for consumer_first in [true, false] {
                // Item 0 runs when item 1 fails; its destructor panics.
                let mut run = Started::new(mode, &faulty(Fault::DropOf(0), (3, 2, window), 1));
                run.open_and_step(1);
                assert!(!run.gates.fault_fired(), "item 0 is still running");
                if !mode.is_spawned() {
                    // The rest goes with the stream.
                    run.expect_panic(&format!("{INJECTED} in the drop of item 0"));
                } else if consumer_first {
                    run.expect_error_then_end(1);
                    run.run.settle();
                    assert!(run.gates.fault_fired());
                    assert_eq!(run.poll(), Got::End);
                } else {
                    // The run had failed already: the task's panic has nobody
                    // to go to, and the stream still yields the error.
                    run.run.settle();
                    assert!(run.gates.fault_fired());
                    run.expect_error_then_end(1);
                }
                run.check_all_gone_if_spawned();
                run.drop_and_check();
            }
        }
    }

    /// Points 21 and 10 (20 spawned): a destructor that panics when the
    /// error drops the waiting items does not leak the items behind it.
    fn a_destructor_panicking_when_the_error_drops_the_queue_does_not_leak_the_items_behind_it(
        mode
    ) {
        for window in [None, Some(4)] {
            // Item 0 runs and fails; items 1, 2 and 3 wait, and 1's
            // destructor panics when the error drops them.
            let mut run = Started::new(mode, &faulty(Fault::DropOf(1), (1, 3, window), 0));
            assert_eq!(run.gates.pulled(), 4);
            run.open_and_step(0);
            if mode.is_spawned() {
                // Swallowed in the task that records the error.
                assert!(run.gates.fault_fired());
                run.expect_error_then_end(0);
            } else {
                // Raised by the poll that sees the error (point 10).
                run.expect_panic(&format!("{INJECTED} in the drop of item 1"));
            }
            for id in 1..4 {
                assert_eq!(run.gates.drops(id), 1, "waiting item {id}, window {window:?}");
            }
            run.check_all_gone_if_spawned();
            run.drop_and_check();
        }
    }

    /// Points 10 and 20: a panic recorded before the error, in a future's
    /// poll or in the destructor of a future that completed, is the run's
    /// outcome, raised instead of the error, which is never made (item 1 is
    /// not polled again).
    fn a_panic_recorded_first_is_re_raised_and_the_later_error_never_made(mode) {
        for (fault, what) in [(Fault::DropOf(0), "drop"), (Fault::PollOf(0), "poll")] {
            for window in [None, Some(4)] {
                let mut run = Started::new(mode, &faulty(fault, (2, 0, window), 1));
                run.open_and_step(0);
                if mode.is_spawned() {
                    assert!(run.gates.fault_fired(), "in item 0's task");
                }
                assert!(run.gates.open(1));
                run.run.settle();
                run.expect_panic(&format!("{INJECTED} in the {what} of item 0"));
                assert_eq!(run.gates.errors(), (0, 0), "item 1 never polled again");
                run.check_all_gone_if_spawned();
                run.drop_and_check();
            }
        }
    }

    /// Points 21 and 20: an error recorded first keeps a later panic from
    /// happening: the future that would panic is dropped unpolled.
    fn an_error_recorded_first_keeps_a_later_panic_from_happening(mode) {
        for window in [None, Some(4)] {
            let mut run = Started::new(mode, &faulty(Fault::PollOf(0), (2, 0, window), 1));
            run.open_and_step(1);
            if !mode.is_spawned() {
                // Point 14: in place the consumer's poll records the error.
                assert_eq!(run.poll(), Got::Err(1));
            }
            assert!(run.gates.open(0));
            run.run.settle();
            assert!(!run.gates.fault_fired(), "item 0 polled after the error");
            if mode.is_spawned() {
                assert_eq!(run.poll(), Got::Err(1));
            }
            assert_eq!(run.poll(), Got::End);
            run.check_ended_after_error();
        }
    }

    /// Points 9 and 21 (19 spawned): dropping the stream in the middle of a
    /// failure, before the error is taken, drops everything exactly once.
    fn dropping_the_stream_in_the_middle_of_a_failure_drops_everything_exactly_once(mode) {
        for window in [None, Some(6)] {
            for taken in 0..=2 {
                // 1, 2, 0 and 5 complete, 3 runs, then 4 fails. The consumer
                // takes `taken` outputs, then drops the stream.
                let case = Case::new(6, 0, window, 100).failing(Failures::futures(&[4]));
                let mut run = Started::new(mode, &case);
                for id in [1, 2, 0, 5] {
                    run.open_and_stall(id);
                }
                run.open_and_step(4);
                for id in 0..taken {
                    assert!(matches!(run.poll(), Got::Ok(_)), "output {id}, window {window:?}");
                }
                if mode.is_spawned() {
                    // Point 19: the held outputs and the error go with the
                    // stream; item 3 with its task, on its next poll.
                    assert_eq!(run.gates.drops(3), 0, "item 3 is still in its task");
                }
                run.drop_and_check();
            }
        }
    }
}

/// In place, one poll's pass polls the woken futures in slot order and
/// stops at the error: the futures after it in the pass are not polled
/// again (point 21; spawned, each task polls its own).
#[test]
fn in_place_a_pass_stops_at_the_error() {
    let case = Case::new(4, 4, None, 100).failing(Failures::futures(&[1]));
    let mut run = Started::new(Mode::InPlace, &case);
    for id in [3, 0, 2, 1] {
        run.gates.open(id);
    }
    assert_eq!(run.drain(), [Got::Ok(0), Got::Err(1), Got::End]);
    assert_eq!(
        (run.gates.polls(2), run.gates.polls(3)),
        (1, 1),
        "no poll after the error"
    );
    assert_eq!(run.gates.started(), 4);
    run.check_ended_after_error();
}

/// The error of the fed-source test: which item failed.
#[derive(Debug, PartialEq, Eq)]
struct Failed(usize);

both_modes! {
    /// Point 21: a source error pulled while items run stops pulling.
    fn an_error_from_a_fed_source_stops_pulling(mode) {
        let gates = Gates::new();
        let (source, feed) = fed_source::<Result<usize, Failed>>();
        let (source, counts) = counted(source);
        let gates_in = gates.clone();
        let stream = source
            .map_ok(move |id| gates_in.gate(id).map(Ok::<usize, Failed>))
            .try_bounded(2, 2);
        let mut run = drive!(mode, stream);
        for id in 0..3 {
            feed.push(Ok(id));
        }
        assert!(run.poll().is_pending());
        // Item 0 completes before the error is pulled: yielded first.
        gates.open(0);
        run.settle();
        feed.push(Err(Failed(99)));
        feed.push(Ok(3));
        assert_eq!(run.poll(), Poll::Ready(Some(Ok(0))));
        // In place, taking 0 refilled (item 2 started) and the queue pulled
        // the error; spawned, a task pulled it when it was pushed.
        assert_eq!(run.poll(), Poll::Ready(Some(Err(Failed(99)))));
        assert_eq!(counts.pulled(), 4, "nothing pulled after the error");
        assert_eq!(feed.unread(), 1);
        for id in 0..3 {
            assert_eq!(gates.drops(id), 1, "item {id} dropped exactly once");
        }
        assert_eq!(run.poll(), Poll::Ready(None));
        assert_eq!(counts.pulled(), 4);
    }
}

/// Spawned, point 21 with 18: the error stops every start though the
/// consumer never polls.
#[test]
fn spawned_a_slow_consumer_the_error_stops_every_start_though_nobody_polls() {
    // Ordered with a window wider than the workers: a completion frees its
    // worker whether or not the consumer takes anything.
    let case = Case::new(2, 1, Some(8), 100).failing(Failures::futures(&[2]));
    let mut run = Started::new(Mode::Spawned, &case);
    run.open_and_stall(1);
    // 1 is held behind the head; its worker took item 2 and pulled item 3.
    assert_eq!((run.gates.pulled(), run.gates.started()), (4, 3));
    run.open_and_step(2);
    assert_eq!(run.gates.first_error(), Some(2));
    // However the tasks are stepped and the gates opened, nothing starts
    // and nothing is pulled.
    for _ in 0..3 {
        run.gates.open_all();
        run.run.settle();
        assert_eq!((run.gates.pulled(), run.gates.started()), (4, 3));
        assert_eq!(run.gates.started_after_error(), Vec::<usize>::new());
    }
    assert_eq!(run.live_tasks(), 0);
    assert_eq!(run.gates.drops(3), 1, "the waiting item never started");
    // Output 1 sat behind the cancelled head: only the error is left.
    assert_eq!(run.poll(), Got::Err(2));
    run.check_ended_after_error();
}

/// Spawned, point 21: the tasks dropped unpolled after the error (a runtime
/// shut down) are no lost item, since the run had ended.
#[test]
fn spawned_an_executor_shut_down_after_the_error_leaves_the_error_to_the_consumer() {
    for window in [None, Some(4)] {
        let case = Case::new(3, 2, window, 100).failing(Failures::futures(&[1]));
        let mut run = Started::new(Mode::Spawned, &case);
        run.open_and_step(1);
        assert_eq!(run.live_tasks(), 2);
        drop(std::mem::take(run.run.executor()));
        run.gates.check_all_dropped_once();
        run.expect_error_then_end(1);
        run.drop_and_check();
    }
}

#[test]
fn spawned_on_tokio_multi_thread_the_run_ends_with_the_error_and_drops_everything() {
    let runtime = tokio_multi_thread();
    for window in [None, Some(4)] {
        let failing = 250;
        let case = Case::new(4, 4, window, 1_000).failing(Failures::futures(&[failing]));
        // Every gate open: each future completes in its first poll, on either
        // of the runtime's threads.
        let gates = Gates::open_except(&[]);
        let mut stream = case.fallible(&gates).spawn_on(runtime.handle().clone());
        let (got, ended) = runtime.block_on(async {
            let _watchdog = Watchdog::start("a failing run on tokio");
            let got: Vec<Got> = (&mut stream).map(Got::of_try).collect().await;
            (got, stream.next().await.is_none())
        });
        assert!(ended, "None forever");
        assert!(futures::stream::FusedStream::is_terminated(&stream));
        let (error, oks) = got.split_last().expect("the error, then the end");
        assert_eq!(*error, Got::Err(failing), "{window:?}");
        let ids = oks.iter().map(|got| match got {
            Got::Ok(id) => *id,
            other => panic!("an output after the error: {other:?}"),
        });
        let mut ids: Vec<usize> = ids.collect();
        if window.is_some() {
            assert_eq!(ids, (0..ids.len()).collect::<Vec<_>>(), "the prefix");
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), oks.len(), "an output twice");
        assert!(!ids.contains(&failing), "the failed item was yielded");
        assert!(gates.pulled() < case.items, "the run stopped early");
        drop(stream);
        check_ended_on_tokio(&runtime, &gates, Vec::new());
        assert_eq!(gates.errors(), (1, 1));
    }
}

/// In place, without gates: plain async blocks on `futures::executor`.
#[test]
fn in_place_without_an_error_try_collect_gets_every_output_in_order() {
    futures::executor::block_on(async {
        let out: Vec<u32> = futures::stream::iter(0..50u32)
            .map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) }))
            .try_bounded(3, 2)
            .ordered(4)
            .try_collect()
            .await
            .expect("no item fails");
        assert_eq!(out, (0..50).collect::<Vec<_>>());
    });
}

/// `bounded(2, 0)` over `[item 0, item 1, failure]` (an error or a source
/// panic at position 2), futures that never complete, brought to the pull
/// that meets the failure, with `waiting` raised to 1 (through the stream's
/// handle) so that it is pulled ahead.
///
/// In place the first poll starts items 0 and 1, and the next poll pulls the
/// failure. Spawned, step by step, one thread: the first poll spawns task 0;
/// task 0 takes item 0, spawns task 1 and yields before polling item 0; task
/// 1 takes item 1 and polls it. The raise finds no task idle, so busy task 0
/// is sent to pull ahead; its poll here meets the failure, in the refill
/// path, after its last lock section (the case of a start after the error).
fn pull_ahead_into_the_failure<T>(run: &mut Driven<'_, T>, gates: &Gates) {
    let limits = run.limits();
    if !run.mode().is_spawned() {
        assert!(run.poll_alone().is_pending());
        assert_eq!(gates.polls_of(2), [1, 1], "items 0 and 1 started");
        limits.set_waiting(1);
        return;
    }
    assert!(run.poll_alone().is_pending());
    let executor = run.executor();
    assert_eq!(executor.ready_tasks(), 1, "the first poll spawns task 0");
    assert!(executor.poll_one(0));
    assert_eq!(executor.spawns(), 2, "task 0 spawned task 1");
    let seen = (gates.pulled(), gates.polls(0));
    assert_eq!(seen, (1, 0), "item 0 taken, unpolled");
    // Ready: task 0 (it yielded) and task 1 (new), in that order.
    assert_eq!(executor.ready_tasks(), 2);
    assert!(executor.poll_one(1));
    assert_eq!(
        gates.polls_of(2),
        [0, 1],
        "task 1 took item 1 and polled it"
    );
    limits.set_waiting(1);
    let executor = run.executor();
    assert_eq!(executor.ready_tasks(), 1, "task 0 is sent to pull ahead");
    assert!(executor.poll_one(0));
    executor.assert_none_escaped("task 0");
}

both_modes! {
    /// Point 21: an error pulled ahead starts nothing after it; spawned, not
    /// even the item the task whose refill pulled it had taken just before:
    /// that item is dropped unpolled at once.
    fn an_error_pulled_ahead_starts_nothing_after_it_not_even_the_item_its_task_took(mode) {
        for window in [None, Some(2)] {
            let case = Case::new(2, 0, window, 3).failing(Failures::source_at(2));
            let mut run = Started::unpolled(mode, &case, Gates::new());
            pull_ahead_into_the_failure(&mut run.run, &run.gates);
            if mode.is_spawned() {
                assert_eq!(run.gates.first_error(), Some(2), "window {window:?}");
                let item_0 = (run.gates.polls(0), run.gates.drops(0));
                assert_eq!(item_0, (0, 1), "window {window:?}: item 0 dropped, never polled");
            }
            assert_eq!(run.drain(), [Got::Err(2), Got::End], "window {window:?}");
            assert!(run.gates.source_failed_first());
            run.gates.check_no_start_after_error();
            // In place items 0 and 1 started before the pull; spawned item 0 never.
            let first = usize::from(!mode.is_spawned());
            assert_eq!(run.gates.polls_of(2), [first, 1], "window {window:?}");
            assert_eq!(run.gates.pulled(), 3, "nothing pulled after the error");
            assert_eq!(run.gates.errors(), (1, 1), "window {window:?}: the error");
            run.check_ended_after_error();
        }
    }

    /// Points 20 and 10: the same with a source that panics: spawned, the
    /// task whose refill pull caught the panic never gives the item it had
    /// taken its first poll; the panic comes out of the consumer's next poll.
    fn a_source_panic_met_pulling_ahead_starts_nothing_after_it_not_even_the_item_its_task_took(
        mode
    ) {
        quiet_injected_panics();
        for window in [None, Some(2)] {
            let gates = Gates::with_fault(Fault::SourceAt(2));
            let mut run = drive!(mode, gates.source(3).bounded(2, 0).ordered_if(window));
            pull_ahead_into_the_failure(&mut run, &gates);
            if mode.is_spawned() {
                assert!(gates.fault_fired(), "window {window:?}");
                let item_0 = (gates.polls(0), gates.drops(0));
                assert_eq!(item_0, (0, 1), "window {window:?}: item 0 dropped, never polled");
            }
            let message = caught(|| run.poll_alone()).unwrap_err();
            assert_eq!(message, format!("{INJECTED} in the source at item 2"));
            run.check_refuses_polls();
            if mode.is_spawned() {
                run.settle();
                assert_eq!(run.executor().live_tasks(), 0, "window {window:?}");
            }
            let first = usize::from(!mode.is_spawned());
            assert_eq!(gates.polls_of(2), [first, 1], "window {window:?}");
            run.drop_stream();
            gates.check_all_dropped_once();
        }
    }
}
