//! Fail fast, an error from a future (contract point 21, with 5 and 19; 22
//! for `close`): what the error cancels and drops exactly once, and what the
//! consumer gets before it (unordered: every output completed before it;
//! ordered: the complete prefix, never waiting for a running head). The first
//! fill, a pass in place and a drain after `close` stop at the error too.

use support::{Case, Failures, Gates, Got, Mode, both_modes};

use super::Started;

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
