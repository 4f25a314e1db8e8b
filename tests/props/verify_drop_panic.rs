//! Contract points 9 and 10, drop and panic at every point: whatever the stream
//! holds when it is dropped (the source, running futures, waiting items, held
//! outputs) is dropped exactly once, also after a panic escaped from a future's
//! poll, the source, or a future's destructor; and a stream polled again after
//! such a panic says so.
//!
//! 256 cases per property by default; set `PROPTEST_CASES` for more.

use std::task::{Context, Poll};

use bounded_buffered::BoundedStreamExt;
use futures::stream::Stream;
use futures_test::task::noop_waker;
use proptest::prelude::*;
use support::{Fault, Gates, INJECTED, caught, quiet_injected_panics};

/// Opens the gate of a started item picked by `choice`, if any is closed.
fn open_one(gates: &Gates, choice: usize) {
    let closed = gates.closed_started();
    if !closed.is_empty() {
        gates.open(closed[choice % closed.len()]);
    }
}

#[derive(Debug, Clone)]
struct Case {
    items: usize,
    workers: usize,
    waiting: usize,
    window: Option<usize>,
    /// Polls before the stream is dropped (it may finish earlier).
    polls: usize,
    choices: Vec<usize>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        0..=24usize,
        1..=4usize,
        0..=3usize,
        prop::option::of(1..=6usize),
        0..=60usize,
        prop::collection::vec(any::<usize>(), 1..=60),
    )
        .prop_map(|(items, workers, waiting, window, polls, choices)| Case {
            items,
            workers,
            waiting,
            window,
            polls,
            choices,
        })
}

/// Polls up to `case.polls` times, opening one gate between polls, then drops
/// the stream. Returns the message of the panic that escaped a poll, if any.
fn run(case: &Case, fault: Fault) -> (Gates, Option<String>) {
    quiet_injected_panics();
    let gates = Gates::with_fault(fault);
    let mut stream = gates
        .tracked_source(case.items)
        .bounded(case.workers, case.waiting);
    if let Some(window) = case.window {
        stream = stream.ordered(window);
    }
    let mut stream = Box::pin(stream);
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut yielded = Vec::new();
    let mut escaped = None;
    for poll in 0..case.polls {
        match caught(|| stream.as_mut().poll_next(&mut cx)) {
            Ok(Poll::Ready(Some(output))) => yielded.push(output),
            Ok(Poll::Ready(None)) => break,
            Ok(Poll::Pending) => open_one(&gates, case.choices[poll % case.choices.len()]),
            Err(message) => {
                assert!(message.contains(INJECTED), "unexpected panic: {message}");
                escaped = Some(message);
                // Polling again must refuse, loudly and clearly.
                let again = caught(|| stream.as_mut().poll_next(&mut cx));
                let again = again.expect_err("polling after a panic must panic");
                assert!(
                    again.contains("after a panic"),
                    "polling after a panic gave an unclear message: {again}"
                );
                break;
            }
        }
    }
    drop(yielded);
    // A future whose destructor panics may still be running: dropping the
    // stream then panics, once, and must still drop everything else.
    if let Err(message) = caught(move || drop(stream)) {
        assert!(
            message.contains(INJECTED),
            "unexpected panic on drop: {message}"
        );
        assert!(
            matches!(fault, Fault::DropOf(_)),
            "drop panicked without a faulty destructor"
        );
    }
    (gates, escaped)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(256)
    ))]

    #[test]
    fn dropping_after_any_number_of_polls_drops_everything_once(case in case()) {
        let (gates, escaped) = run(&case, Fault::None);
        prop_assert!(escaped.is_none());
        gates.check_all_dropped_once();
    }

    #[test]
    fn panic_in_a_future_poll_drops_everything_once(case in case(), k in 0..24usize, first in any::<bool>()) {
        let fault = if first { Fault::FirstPollOf(k) } else { Fault::PollOf(k) };
        let (gates, _) = run(&case, fault);
        gates.check_all_dropped_once();
    }

    #[test]
    fn panic_in_the_source_drops_everything_once(case in case(), k in 0..24usize) {
        let (gates, escaped) = run(&case, Fault::SourceAt(k));
        // The source panics exactly when the stream asks for item k.
        let asked = gates.pulled();
        if escaped.is_some() {
            prop_assert_eq!(asked, k);
        }
        gates.check_all_dropped_once();
    }

    #[test]
    fn panic_in_a_future_destructor_drops_everything_once(case in case(), k in 0..24usize) {
        let (gates, _) = run(&case, Fault::DropOf(k));
        gates.check_all_dropped_once();
    }
}

/// The deterministic core of the properties above, so a failure here names the
/// exact point: the first future panics on its first poll.
#[test]
fn polling_after_a_panic_in_the_first_poll_panics_with_a_clear_message() {
    let case = Case {
        items: 3,
        workers: 2,
        waiting: 1,
        window: None,
        polls: 3,
        choices: vec![0],
    };
    let (gates, escaped) = run(&case, Fault::FirstPollOf(0));
    assert!(escaped.is_some_and(|message| message.contains("item 0")));
    gates.check_all_dropped_once();
}
