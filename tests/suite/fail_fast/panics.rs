//! Fail fast with panics and drops (contract point 21 with 9, 10 and 20): a
//! destructor that panics while the error's cancellation drops an item, a
//! panic and an error racing to be the run's outcome, and the stream dropped
//! in the middle of a failure; each item is dropped exactly once.

use support::{Case, Failures, Fault, Got, INJECTED, both_modes};

use super::Started;

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

both_modes! {
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
