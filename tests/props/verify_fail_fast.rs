//! Fail fast (`try_bounded`, contract point 21, with 16 to 20 spawned) under
//! random schedules, in both modes: whatever the budgets, the order in which
//! the gates are opened (here or from another thread) and the tasks polled,
//! the consumer's pace, and which items fail (futures, or the source at one
//! position), the stream yields exactly the outputs the rule allows for the
//! first error (unordered: every output completed before it; ordered: the
//! complete prefix), then that error, then `None` forever; no future is
//! polled for the first time and nothing is pulled after the error was made
//! (in place no future is polled at all); every pulled item is dropped
//! exactly once (in place by the time the error is yielded, spawned once the
//! cancelled tasks ran), before the stream itself is dropped. The budgets
//! hold after every step, exactly (every budget full at rest) until the
//! error.
//!
//! A second property drops the stream at a random step of a failing run with
//! a random injected panic (contract points 10, 19 and 20 with 21): what the
//! consumer saw is consistent, and everything is dropped exactly once.
//!
//! 256 cases per property and mode by default (a quarter in a debug build:
//! `support::cases`); `PROPTEST_CASES=N` runs N.

use std::task::Poll;

use proptest::prelude::*;
use support::{
    Case, Failures, Got, INJECTED, Mode, Run, Step, prop_both_modes, quiet_injected_panics,
};

/// Budgets and length; `failures` picks where the run fails for each length.
fn case(failures: impl Fn(usize) -> BoxedStrategy<Failures>) -> impl Strategy<Value = Case> {
    Case::strategy(1..=5, 0..=4, 1..=7, 1..=24)
        .prop_flat_map(move |case| (failures(case.items), Just(case)))
        .prop_map(|(failures, case)| case.failing(failures))
}

/// One to three failing futures.
fn future_failures(items: usize) -> BoxedStrategy<Failures> {
    prop::collection::vec(0..items, 1..=3)
        .prop_map(|futures| Failures::futures(&futures))
        .boxed()
}

/// The source fails at one position, and up to two futures may fail too.
fn source_failures(items: usize) -> BoxedStrategy<Failures> {
    (0..items, prop::collection::vec(0..items, 0..=2))
        .prop_map(|(at, futures)| Failures {
            futures,
            source: Some(at),
        })
        .boxed()
}

fn run(mode: Mode, case: Case) {
    let mut run = Run::fallible(mode, case.clone());
    assert_eq!(run.run_to_end(), Step::Finished, "{case:?}");

    // Outputs, then the first error made, then the end.
    let gates = run.gates.clone();
    let error = gates
        .first_error()
        .expect("an item always fails before the end");
    assert_eq!(
        run.got.last_chunk(),
        Some(&[Got::Err(error), Got::End]),
        "{case:?}"
    );
    assert_eq!(run.errors(), 1, "one error: {:?}", run.got);
    case.check_yielded_before_error(&run.oks(), &gates);

    // Nothing started or pulled after the error.
    gates.check_no_start_after_error();
    assert!(
        !gates.polled_after_error(),
        "a future polled after the error"
    );
    assert_eq!(gates.pulls_after_error(), 0, "a pull after the error");
    if gates.source_failed_first() {
        assert_eq!(gates.pulled(), error + 1, "pulled past the source's error");
    }
    // When the error was yielded nothing was left running, waiting or held;
    // in place every pulled future was dropped already, spawned a running
    // one goes when its task is next polled (point 21).
    let (counts, stats) = run.at_error.expect("the error was yielded");
    assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));
    if !mode.is_spawned() {
        assert_eq!(
            counts.futures_dropped, counts.pulled,
            "dropped when the error came"
        );
    }

    // `None` forever.
    assert!(run.driven.is_terminated());
    assert_eq!(run.driven.size_hint(), (0, Some(0)));
    for _ in 0..2 {
        assert!(matches!(run.driven.poll_alone(), Poll::Ready(None)));
    }
    assert_eq!(gates.pulls_after_error(), 0);

    // Once the cancelled tasks ran, everything is gone already, the source
    // too spawned (in place the stream keeps it until it is dropped).
    run.run_tasks_out();
    if mode.is_spawned() {
        run.gates.check_all_dropped_once();
    } else {
        let counts = run.gates.counts();
        assert_eq!(counts.futures_dropped, counts.pulled);
        assert_eq!(counts.outputs_dropped, counts.outputs_made);
    }
    let stats = run.driven.stats();
    assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));
    run.drop_stream_and_check();
}

prop_both_modes! {
    fn an_error_from_a_future_yields_what_the_rule_allows_then_the_error(
        mode,
        case in case(future_failures),
    ) cases(256, 256) {
        run(mode, case);
    }

    fn an_error_from_the_source_yields_what_the_rule_allows_then_the_error(
        mode,
        case in case(source_failures),
    ) cases(256, 256) {
        run(mode, case);
    }
}

/// A case with one to two failing futures or a failing source (and maybe a
/// failing future), and one fault (or none) at an item near or inside it.
fn failing_and_faulty() -> impl Strategy<Value = Case> {
    Case::strategy(1..=4, 0..=3, 1..=5, 1..=14)
        .prop_flat_map(|case| {
            let items = case.items;
            let failures = (
                prop::collection::vec(0..items, 0..=2),
                prop::option::of(0..items),
            )
                .prop_filter_map("something fails", |(futures, source)| {
                    (!futures.is_empty() || source.is_some())
                        .then_some(Failures { futures, source })
                });
            (Just(case), failures, Case::faults(0..=items + 1))
        })
        .prop_map(|(case, failures, fault)| Case {
            fault,
            ..case.failing(failures)
        })
}

/// Runs up to `steps` steps, checks what the consumer saw, then drops the
/// stream: everything was dropped exactly once, and no task is left.
fn drop_after(mode: Mode, case: Case, steps: usize) {
    quiet_injected_panics();
    let mut run = Run::fallible(mode, case.clone());
    let mut ended = Step::Progress;
    for _ in 0..steps {
        ended = run.step();
        if ended != Step::Progress {
            break;
        }
    }
    let errors = run.errors();
    match ended {
        Step::Finished => {
            // Outputs, the first error made, the end.
            let error = run.gates.first_error().expect("the error before the end");
            assert_eq!(run.got.last_chunk(), Some(&[Got::Err(error), Got::End]));
            assert_eq!(errors, 1);
            case.check_yielded_before_error(&run.oks(), &run.gates);
        }
        Step::Panicked(message) => {
            assert!(message.starts_with(INJECTED), "{message}");
            assert!(run.gates.fault_fired());
            assert_eq!(errors, 0, "a panic after the error: {:?}", run.got);
            run.driven.check_refuses_polls();
        }
        Step::Progress => {
            assert!(errors <= 1 && !run.got.contains(&Got::End), "{:?}", run.got);
        }
    }
    if case.window.is_some() {
        let oks = run.oks();
        assert_eq!(oks, (0..oks.len()).collect::<Vec<_>>(), "ordered output");
    }
    if run.driven.is_terminated() {
        assert_eq!(run.driven.size_hint(), (0, Some(0)));
    }
    run.drop_stream_and_check();
}

prop_both_modes! {
    fn dropping_at_a_random_step_of_a_failing_run_drops_everything_exactly_once(
        mode,
        case in failing_and_faulty(),
        steps in 0..=300usize,
    ) cases(256, 256) {
        drop_after(mode, case, steps);
    }
}
