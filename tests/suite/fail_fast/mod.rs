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
//!
//! By concern: an error from a future and what comes before it (`cancel`),
//! from the source (`source`), panics and drops in a failure (`panics`), the
//! spawned mode alone (`spawned`), and the run without an error (`budgets`).
//! This module holds the harness they share (`Started`).

use bounded_buffered::Stats;
use support::{
    Case, Driven, Gates, Got, Mode, Rng, TryOutput, caught, drive, drop_and_check,
    quiet_injected_panics,
};

mod budgets;
mod cancel;
mod panics;
mod source;
mod spawned;

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
