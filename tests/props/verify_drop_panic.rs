//! Contract points 9 and 10 (19 and 20 spawned), drop and panic at a random
//! point of a random schedule, in both modes: whatever the stream holds when
//! it is dropped (the source, running futures, waiting items, held outputs)
//! is dropped exactly once, and spawned no task is left once the executor ran
//! the cancelled ones; also after a panic in a future's poll or first poll, in
//! the source, or in a future's destructor, which always comes out of the
//! consumer's poll (spawned: it cancels the other tasks first), never as a
//! clean end, and leaves a stream that refuses to be polled again, saying so.
//!
//! Spawned, the schedules run on an executor the test owns, so valgrind sees
//! no task outlive a test; one property repeats the drop on tokio's
//! multi-thread runtime with gates opened from another thread.
//!
//! 256 cases per property and mode (32 on tokio) by default (a quarter in a
//! debug build: `support::cases`);
//! `PROPTEST_CASES=N` runs N (N/8 on tokio).

use futures::StreamExt;
use proptest::prelude::*;
use support::{
    Case, Fault, HANG_LIMIT, INJECTED, Mode, Run, Step, both_modes, check_ended_on_tokio, opener,
    prop_both_modes, quiet_injected_panics, tokio_multi_thread,
};

fn case() -> impl Strategy<Value = Case> {
    Case::strategy(1..=4, 0..=3, 1..=6, 0..=24)
}

fn at(fault: Fault) -> Option<usize> {
    match fault {
        Fault::None => None,
        Fault::PollOf(at) | Fault::FirstPollOf(at) | Fault::SourceAt(at) | Fault::DropOf(at) => {
            Some(at)
        }
    }
}

/// The consumer saw `message` as the stream's panic: it is the injected one,
/// the outputs before it are consistent, spawned every task already ended,
/// and the stream refuses further polls.
fn check_resurfaced_panic(run: &mut Run<support::Output>, message: &str) {
    let case = run.case.clone();
    assert!(
        run.gates.fault_fired(),
        "a panic although no fault fired: {message}"
    );
    let expected = match case.fault {
        Fault::PollOf(item) => format!("{INJECTED} in the poll of item {item}"),
        Fault::FirstPollOf(item) => format!("{INJECTED} in the first poll of item {item}"),
        Fault::SourceAt(item) => format!("{INJECTED} in the source at item {item}"),
        Fault::DropOf(item) => format!("{INJECTED} in the drop of item {item}"),
        Fault::None => unreachable!("no fault, yet it fired"),
    };
    assert_eq!(message, expected);
    let yielded = run.yielded();
    if let Fault::PollOf(item) | Fault::FirstPollOf(item) = case.fault {
        assert!(!yielded.contains(&item), "the failed item was yielded");
    }
    if let Fault::SourceAt(item) = case.fault {
        assert_eq!(
            run.gates.pulled(),
            item,
            "the source panics when asked for item {item}"
        );
    }
    if case.window.is_some() {
        assert_eq!(
            yielded,
            (0..yielded.len()).collect::<Vec<_>>(),
            "ordered output out of order"
        );
    }
    if run.driven.mode().is_spawned() {
        // Point 20: the failing task cancelled the others; they end on their
        // next turn, before the stream is dropped, and drop their futures.
        run.run_tasks_out();
        assert_eq!(
            run.gates.running(),
            0,
            "futures still running after the failure"
        );
    }
    run.driven.check_refuses_polls();
}

/// Runs `case` for up to `steps` steps (to its end or its panic if sooner),
/// then drops the stream and checks that everything was dropped exactly once.
fn drop_after(mode: Mode, case: Case, steps: usize) {
    quiet_injected_panics();
    let mut run = Run::new(mode, case.clone());
    for _ in 0..steps {
        match run.step() {
            Step::Progress => continue,
            Step::Panicked(message) => check_resurfaced_panic(&mut run, &message),
            Step::Finished => {
                assert!(
                    !run.gates.fault_fired(),
                    "the stream ended cleanly although a panic fired"
                );
                assert_eq!(run.yielded().len(), case.items);
            }
        }
        break;
    }
    run.drop_stream_and_check();
}

/// A case with a fault from `faults`, and how many steps run before the drop.
fn dropped(faults: impl Strategy<Value = Fault>) -> impl Strategy<Value = (Case, usize)> {
    (case(), faults, 0..=250usize).prop_map(|(case, fault, steps)| (Case { fault, ..case }, steps))
}

prop_both_modes! {
    fn dropping_at_a_random_step_drops_everything_exactly_once(
        mode,
        (case, steps) in dropped(Just(Fault::None)),
    ) cases(256, 256) {
        drop_after(mode, case, steps);
    }

    fn a_panic_in_a_future_poll_drops_everything_once(
        mode,
        (case, steps) in dropped(prop_oneof![
            (0..24usize).prop_map(Fault::PollOf),
            (0..24usize).prop_map(Fault::FirstPollOf),
        ]),
    ) cases(256, 256) {
        drop_after(mode, case, steps);
    }

    fn a_panic_in_the_source_drops_everything_once(
        mode,
        (case, steps) in dropped((0..24usize).prop_map(Fault::SourceAt)),
    ) cases(256, 256) {
        drop_after(mode, case, steps);
    }

    fn a_panic_in_a_future_destructor_drops_everything_once(
        mode,
        (case, steps) in dropped((0..24usize).prop_map(Fault::DropOf)),
    ) cases(256, 256) {
        drop_after(mode, case, steps);
    }

    fn an_injected_panic_always_resurfaces_at_the_consumer(
        mode,
        case in case(),
        fault in Case::faults(0..=24),
    ) cases(256, 256) {
        quiet_injected_panics();
        let mut run = Run::new(mode, Case { fault, ..case });
        match run.run_to_end() {
            Step::Panicked(message) => check_resurfaced_panic(&mut run, &message),
            Step::Finished => {
                // Only a fault past the end of the input never fires.
                assert!(!run.gates.fault_fired(), "a panic was lost");
                let at = at(fault).unwrap_or(usize::MAX);
                assert!(at >= run.case.items, "fault at {at} of {} never fired", run.case.items);
                assert_eq!(run.yielded().len(), run.case.items);
            }
            Step::Progress => unreachable!(),
        }
        run.drop_stream_and_check();
    }
}

both_modes! {
    /// The deterministic core of the properties above, so a failure here
    /// names the exact point: the first future panics on its first poll.
    fn polling_after_a_panic_in_the_first_poll_panics_with_a_clear_message(mode) {
        quiet_injected_panics();
        let fault = Fault::FirstPollOf(0);
        let mut run = Run::new(mode, Case { fault, ..Case::new(2, 1, None, 3) });
        let Step::Panicked(message) = run.run_to_end() else {
            panic!("the first poll of item 0 panics");
        };
        assert!(message.contains("item 0"), "{message}");
        check_resurfaced_panic(&mut run, &message);
        run.drop_stream_and_check();
    }
}

/// The same drop on tokio's multi-thread runtime: another thread opens the
/// gates of pulled items in a random order, all but item `kept_closed`'s, while
/// the consumer takes the `kept_closed` outputs that can surely come; then the
/// stream is dropped with work in flight. Once tokio has no task left,
/// everything was dropped exactly once.
fn drop_on_tokio(case: Case, kept_closed: usize) {
    let runtime = tokio_multi_thread();
    let (gates, stream) = case.stream();
    let mut stream = stream.spawn_on(runtime.handle().clone());
    let opener = opener(&gates, case.seed, Some(kept_closed));
    // Items before the kept one can always complete and be taken, in either
    // order: they are pulled and started before it.
    let taken = kept_closed.min(case.items);
    runtime.block_on(async {
        for _ in 0..taken {
            let next = tokio::time::timeout(HANG_LIMIT, stream.next())
                .await
                .expect("watchdog: no output");
            assert!(next.is_some(), "the stream ended early");
        }
    });
    drop(stream);
    check_ended_on_tokio(&runtime, &gates, vec![opener]);
}

proptest! {
    #![proptest_config(support::config((support::cases(256) / 8).max(1)))]

    #[test]
    fn dropping_mid_flight_on_tokio_drops_everything_exactly_once(
        case in Case::strategy(1..=4, 0..=3, 1..=5, 0..=20)
            .prop_map(|case| Case { items: case.items * 4, ..case }),
        kept_closed in 0..=40usize,
    ) {
        drop_on_tokio(case, kept_closed);
    }
}
