//! Drop and panics on the fail-fast path of spawned mode, contract point 21
//! with 19 and 20: a destructor that panics while the error's cancellation
//! drops a running future (in its task) or a waiting item (at once) never
//! unwinds into the executor and leaves a stream that yields the error, ends
//! and drops cleanly; a panic recorded before the error is re-raised instead of
//! it, and an error recorded first keeps a later panic from ever happening (the
//! future is not polled again); dropping the stream, or the executor, in the
//! middle of a failure drops everything exactly once. A property checks the
//! same at a random step of a random schedule with a random fault.
//!
//! Deterministic: the tasks run on an executor the test steps, the futures are
//! gates the test opens.
//!
//! 256 cases by default; `PROPTEST_CASES=N` runs N.

use std::task::Poll;

use futures::stream::{FusedStream, Stream};
use proptest::prelude::*;
use support::{
    Failures, Fault, Got, INJECTED, POLLED_AFTER_PANIC, StepExecutor, TryCase, TryRun, TryStep,
    caught, poll_once, quiet_injected_panics,
};

/// `case` with `fault`, polled once (which spawns the first task) and run
/// until its tasks stall.
fn started(case: TryCase, fault: Fault) -> TryRun {
    quiet_injected_panics();
    let mut run = TryRun::new(case, fault, 0);
    assert_eq!(run.poll_consumer(), TryStep::Progress);
    run.executor.run_until_stalled();
    run
}

/// Opens gate `id` and polls the one task it woke, once.
fn open_and_step(run: &mut TryRun, id: usize) {
    assert!(run.gates.open(id), "gate {id} was pulled and closed");
    assert_eq!(run.executor.ready_tasks(), 1, "gate {id} wakes its task");
    assert!(run.executor.poll_one(0));
    run.executor.assert_none_escaped("a task");
}

/// The consumer's next two polls give the error and the end, and the stream
/// stays ended.
fn expect_error_then_end(run: &mut TryRun, error: usize) {
    assert_eq!(run.poll_consumer(), TryStep::Progress);
    assert_eq!(run.poll_consumer(), TryStep::Ended);
    assert_eq!(run.got.last_chunk(), Some(&[Got::Err(error), Got::End]));
    let stream = run.stream.as_mut().unwrap();
    assert!(stream.is_terminated());
    assert!(matches!(poll_once(stream), Poll::Ready(None)));
}

/// The consumer's next poll re-raises `message`; the one after refuses.
fn expect_panic(run: &mut TryRun, message: &str) {
    assert_eq!(run.poll_consumer(), TryStep::Panicked(message.to_owned()));
    let stream = run.stream.as_mut().unwrap();
    let again = caught(|| poll_once(stream)).unwrap_err();
    assert!(again.contains(POLLED_AFTER_PANIC), "{again}");
}

const WINDOWS: [Option<usize>; 2] = [None, Some(4)];

#[test]
fn a_destructor_panicking_while_a_cancelled_task_drops_its_future_leaves_a_stream_that_ends() {
    for window in WINDOWS {
        for consumer_first in [true, false] {
            // Item 0 runs when item 1 fails; its destructor panics.
            let case = TryCase::new(3, 2, window, 100).failing(Failures::futures(&[1]));
            let mut run = started(case, Fault::DropOf(0));
            open_and_step(&mut run, 1);
            assert!(!run.gates.fault_fired(), "item 0 is still in its task");
            if consumer_first {
                expect_error_then_end(&mut run, 1);
                run.run_tasks_out();
                assert!(run.gates.fault_fired());
                assert!(matches!(
                    poll_once(run.stream.as_mut().unwrap()),
                    Poll::Ready(None)
                ));
            } else {
                // The run had failed already: the task's panic has nobody to
                // go to, and the stream still yields the error.
                run.run_tasks_out();
                assert!(run.gates.fault_fired());
                expect_error_then_end(&mut run, 1);
            }
            run.gates.check_all_dropped_once();
            run.drop_stream_and_check();
        }
    }
}

#[test]
fn a_destructor_panicking_when_the_error_drops_the_queue_does_not_leak_the_items_behind_it() {
    for window in WINDOWS {
        // Item 0 runs and fails; items 1, 2 and 3 wait, and 1's destructor
        // panics when the error drops them.
        let case = TryCase::new(1, 3, window, 100).failing(Failures::futures(&[0]));
        let mut run = started(case, Fault::DropOf(1));
        assert_eq!(run.gates.pulled(), 4);
        open_and_step(&mut run, 0);
        assert!(run.gates.fault_fired());
        for id in 1..4 {
            assert_eq!(
                run.gates.drops(id),
                1,
                "waiting item {id}, window {window:?}"
            );
        }
        expect_error_then_end(&mut run, 0);
        run.run_tasks_out();
        run.gates.check_all_dropped_once();
        run.drop_stream_and_check();
    }
}

#[test]
fn a_destructor_panic_before_the_error_is_re_raised_and_the_error_never_made() {
    for window in WINDOWS {
        // Item 0 completes and its destructor panics in its task: the stream
        // fails with that panic. Item 1 would fail, but its task is cancelled
        // before it is polled again.
        let case = TryCase::new(2, 0, window, 100).failing(Failures::futures(&[1]));
        let mut run = started(case, Fault::DropOf(0));
        open_and_step(&mut run, 0);
        assert!(run.gates.fault_fired());
        assert!(run.gates.open(1));
        run.run_tasks_out();
        assert_eq!(run.journal.errors(), (0, 0), "item 1 never polled again");
        expect_panic(&mut run, &format!("{INJECTED} in the drop of item 0"));
        run.gates.check_all_dropped_once();
        run.drop_stream_and_check();
    }
}

#[test]
fn an_error_recorded_first_keeps_a_later_panic_from_happening() {
    for window in WINDOWS {
        // Item 1 fails first; item 0 would panic when polled once open, but
        // its task is cancelled and drops it unpolled.
        let case = TryCase::new(2, 0, window, 100).failing(Failures::futures(&[1]));
        let mut run = started(case, Fault::PollOf(0));
        open_and_step(&mut run, 1);
        assert!(run.gates.open(0));
        run.run_tasks_out();
        assert!(!run.gates.fault_fired(), "item 0 polled after the error");
        expect_error_then_end(&mut run, 1);
        run.drop_stream_and_check();
    }
}

#[test]
fn a_panic_recorded_first_is_re_raised_instead_of_a_later_error() {
    for window in WINDOWS {
        let case = TryCase::new(2, 0, window, 100).failing(Failures::futures(&[1]));
        let mut run = started(case, Fault::PollOf(0));
        open_and_step(&mut run, 0);
        assert!(run.gates.fault_fired());
        assert!(run.gates.open(1));
        run.run_tasks_out();
        assert_eq!(run.journal.errors(), (0, 0), "item 1 never polled again");
        expect_panic(&mut run, &format!("{INJECTED} in the poll of item 0"));
        run.drop_stream_and_check();
    }
}

#[test]
fn dropping_the_stream_in_the_middle_of_a_failure_drops_everything_exactly_once() {
    for window in [None, Some(6)] {
        for taken in 0..=2 {
            // 1, 2, 0 and 5 complete, 3 runs, then 4 fails. The consumer takes
            // `taken` outputs, then drops the stream before taking the error
            // and before the tasks ran.
            let case = TryCase::new(6, 0, window, 100).failing(Failures::futures(&[4]));
            let mut run = started(case, Fault::None);
            for id in [1, 2, 0, 5] {
                assert!(run.gates.open(id));
                run.executor.run_until_stalled();
            }
            open_and_step(&mut run, 4);
            for _ in 0..taken {
                assert_eq!(run.poll_consumer(), TryStep::Progress);
            }
            assert_eq!(run.oks().len(), taken, "window {window:?}");
            assert_eq!(run.gates.drops(3), 0, "item 3 is still in its task");
            // Held outputs and the error go with the stream; item 3 with its
            // task, on its next poll.
            run.drop_stream_and_check();
        }
    }
}

#[test]
fn an_executor_shut_down_after_the_error_leaves_the_error_to_the_consumer() {
    for window in WINDOWS {
        // The tasks are dropped unpolled after the error (a runtime shut
        // down): that is no lost item, since the run had ended.
        let case = TryCase::new(3, 2, window, 100).failing(Failures::futures(&[1]));
        let mut run = started(case, Fault::None);
        open_and_step(&mut run, 1);
        assert_eq!(run.executor.live_tasks(), 2);
        drop(std::mem::replace(&mut run.executor, StepExecutor::new()));
        run.gates.check_all_dropped_once();
        expect_error_then_end(&mut run, 1);
        run.drop_stream_and_check();
    }
}

/// A case with one to two failing futures or a failing source (and maybe a
/// failing future), and one fault (or none) at an item near or inside it.
fn case() -> impl Strategy<Value = (TryCase, Fault, u64)> {
    (
        1..=4usize,
        0..=3usize,
        prop::option::of(1..=5usize),
        1..=14usize,
    )
        .prop_flat_map(|(workers, waiting, window, items)| {
            let failures = (
                prop::collection::vec(0..items, 0..=2),
                prop::option::of(0..items),
            )
                .prop_filter_map("something fails", |(futures, source)| {
                    (!futures.is_empty() || source.is_some())
                        .then_some(Failures { futures, source })
                });
            let fault = (0..5u8, 0..=items + 1).prop_map(|(kind, at)| match kind {
                0 => Fault::None,
                1 => Fault::PollOf(at),
                2 => Fault::FirstPollOf(at),
                3 => Fault::SourceAt(at),
                _ => Fault::DropOf(at),
            });
            (
                Just(TryCase::new(workers, waiting, window, items)),
                failures,
                fault,
                any::<u64>(),
            )
        })
        .prop_map(|(case, failures, fault, seed)| (case.failing(failures), fault, seed))
}

/// Runs up to `steps` steps, checks what the consumer saw, then drops the
/// stream: everything was dropped exactly once, and no task is left.
fn drop_after(case: TryCase, fault: Fault, seed: u64, steps: usize) {
    quiet_injected_panics();
    let mut run = TryRun::new(case.clone(), fault, seed);
    let mut ended = TryStep::Progress;
    for _ in 0..steps {
        ended = run.step();
        if ended != TryStep::Progress {
            break;
        }
    }
    let errors = run
        .got
        .iter()
        .filter(|got| matches!(got, Got::Err(_)))
        .count();
    match ended {
        TryStep::Ended => {
            // Outputs, the first error made, the end.
            let error = run.journal.first_error().expect("the error before the end");
            assert_eq!(run.got.last_chunk(), Some(&[Got::Err(error), Got::End]));
            assert_eq!(errors, 1);
            case.check_yielded_before_error(&run.oks(), &run.journal);
        }
        TryStep::Panicked(message) => {
            assert!(message.starts_with(INJECTED), "{message}");
            assert!(run.gates.fault_fired());
            assert_eq!(errors, 0, "a panic after the error: {:?}", run.got);
            let stream = run.stream.as_mut().unwrap();
            let again = caught(|| poll_once(stream)).unwrap_err();
            assert!(again.contains(POLLED_AFTER_PANIC), "{again}");
        }
        TryStep::Progress => {
            assert!(errors <= 1 && !run.got.contains(&Got::End), "{:?}", run.got);
        }
    }
    if case.window.is_some() {
        let oks = run.oks();
        assert_eq!(oks, (0..oks.len()).collect::<Vec<_>>(), "ordered output");
    }
    let stream = run.stream.as_ref().unwrap();
    if stream.is_terminated() {
        assert_eq!(stream.size_hint(), (0, Some(0)));
    }
    run.drop_stream_and_check();
}

proptest! {
    #![proptest_config(support::config(256))]

    #[test]
    fn dropping_at_a_random_step_of_a_failing_run_drops_everything_exactly_once(
        (case, fault, seed) in case(),
        steps in 0..=300usize,
    ) {
        drop_after(case, fault, seed, steps);
    }
}
