//! Fail fast, an error or a panic from the source (contract point 21; 10 and
//! 20 for the panic): the error is the last thing pulled, and spawned, an item
//! a task took just before it (topping the queue up, or pulling ahead) is
//! dropped unpolled, never started after it.

use std::task::Poll;

use bounded_buffered::BoundedStreamExt;
use futures::{FutureExt, TryStreamExt};
use support::{
    Case, Driven, Failures, Fault, Gates, Got, INJECTED, OrderedIf, both_modes, caught, counted,
    drive, fed_source, quiet_injected_panics,
};

use super::Started;

both_modes! {
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
