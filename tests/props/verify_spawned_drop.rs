//! Contract points 19 and 20, drop and panic at a random point of a random
//! schedule in the spawned mode: once the executor has run the cancelled tasks,
//! the source, every pulled future, every queued item and every output (taken or
//! not) was dropped exactly once and no task is left; a panic in a future's poll
//! or in the source cancels the other tasks and resurfaces at the consumer,
//! never as a clean end, and a stream polled again after that says so.
//!
//! The schedules run on a deterministic executor the test owns (so valgrind
//! sees no task outlive a test); one property repeats the drop on tokio's
//! multi-thread runtime with gates opened from another thread.
//!
//! 256 cases per property by default (32 on tokio); `PROPTEST_CASES=N` runs N
//! (N/8 on tokio).

use std::thread;

use futures::StreamExt;
use proptest::prelude::*;
use support::{
    Case, Fault, HANG_LIMIT, INJECTED, POLLED_AFTER_PANIC, Rng, Run, Step, caught, eventually,
    poll_once, quiet_injected_panics, tokio_multi_thread,
};

/// Kinds of fault the cases draw from: none, a panic in a future's poll or
/// first poll, in the source, and in a future's destructor.
const FAULT_KINDS: u8 = 5;

/// A case whose one fault (if any) is at an item near or inside its length.
fn case() -> impl Strategy<Value = Case> {
    (
        1..=4usize,
        0..=3usize,
        prop::option::of(1..=5usize),
        0..=20usize,
        any::<u64>(),
        0..FAULT_KINDS,
        0..=22usize,
    )
        .prop_map(|(workers, waiting, window, items, seed, fault, at)| Case {
            workers,
            waiting,
            window,
            items,
            seed,
            fault: match fault {
                0 => Fault::None,
                1 => Fault::PollOf(at),
                2 => Fault::FirstPollOf(at),
                3 => Fault::SourceAt(at),
                _ => Fault::DropOf(at),
            },
        })
}

/// The item whose future panics, if the fault is in a future.
fn failing_item(fault: Fault) -> Option<usize> {
    match fault {
        Fault::PollOf(item) | Fault::FirstPollOf(item) => Some(item),
        Fault::DropOf(_) | Fault::None | Fault::SourceAt(_) => None,
    }
}

/// The consumer saw `message` as the stream's panic: it is the injected one,
/// the outputs before it are consistent, every task already ended, and the
/// stream refuses further polls.
fn check_resurfaced_panic(run: &mut Run, message: &str) {
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
    if let Some(item) = failing_item(case.fault) {
        assert!(!run.yielded.contains(&item), "the failed item was yielded");
    }
    if case.window.is_some() {
        let prefix: Vec<usize> = (0..run.yielded.len()).collect();
        assert_eq!(run.yielded, prefix, "ordered output out of order");
    }
    // The failing task cancelled the others: they end on their next turn,
    // before the stream is dropped, and drop everything but held outputs.
    let mut rng = Rng::new(case.seed.rotate_left(17));
    run.executor.run_until_idle(&mut rng);
    assert_eq!(run.executor.live_tasks(), 0, "tasks outlived the failure");
    assert_eq!(
        run.gates.running(),
        0,
        "futures still running after the failure"
    );

    let stream = run.stream.as_mut().unwrap();
    let again = caught(|| poll_once(stream)).unwrap_err();
    assert!(again.contains(POLLED_AFTER_PANIC), "second poll: {again}");
}

/// Runs `case` for up to `steps` steps (to its end or its panic if sooner),
/// then drops the stream and checks that everything was dropped exactly once.
fn drop_after(case: Case, steps: usize) {
    quiet_injected_panics();
    let mut run = Run::new(case.clone());
    let mut ended = None;
    for _ in 0..steps {
        match run.step() {
            Step::Progress => {}
            end => {
                ended = Some(end);
                break;
            }
        }
    }
    match ended {
        Some(Step::Panicked(message)) => check_resurfaced_panic(&mut run, &message),
        Some(Step::Finished) => {
            assert!(
                !run.gates.fault_fired(),
                "the stream ended cleanly although a task panicked"
            );
            assert_eq!(run.yielded.len(), case.items);
        }
        Some(Step::Progress) | None => {}
    }
    run.drop_stream_and_check();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(support::cases(256)))]

    #[test]
    fn dropping_at_a_random_step_drops_everything_exactly_once(
        case in case(),
        steps in 0..=250usize,
    ) {
        drop_after(case, steps);
    }

    #[test]
    fn an_injected_panic_always_resurfaces_at_the_consumer(case in case()) {
        quiet_injected_panics();
        let mut run = Run::new(case.clone());
        match run.run_to_end() {
            Step::Panicked(message) => check_resurfaced_panic(&mut run, &message),
            Step::Finished => {
                // Only a fault past the end of the input never fires.
                assert!(!run.gates.fault_fired(), "a task's panic was lost");
                let at = match case.fault {
                    Fault::None => usize::MAX,
                    Fault::PollOf(at)
                    | Fault::FirstPollOf(at)
                    | Fault::SourceAt(at)
                    | Fault::DropOf(at) => at,
                };
                assert!(at >= case.items, "fault at {at} of {} never fired", case.items);
                assert_eq!(run.yielded.len(), case.items);
            }
            Step::Progress => unreachable!(),
        }
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
    let (gates, mut stream) = case.spawn_on(runtime.handle().clone());
    let opener = {
        let gates = gates.clone();
        let mut rng = Rng::new(case.seed);
        thread::spawn(move || {
            while let Some(closed) = gates.wait_for_closed_gates() {
                let openable: Vec<usize> = closed
                    .into_iter()
                    .filter(|&index| index != kept_closed)
                    .collect();
                if openable.is_empty() {
                    // Only the kept gate is closed; the stream stops at it or ends.
                    return;
                }
                gates.open(openable[rng.below(openable.len())]);
            }
        })
    };
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
    opener.join().unwrap();
    let metrics = runtime.metrics();
    eventually("every task to end", || metrics.num_alive_tasks() == 0);
    gates.check_all_dropped_once();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases((support::cases(256) / 8).max(1)))]

    #[test]
    fn dropping_mid_flight_on_tokio_drops_everything_exactly_once(
        case in case().prop_map(|case| Case { items: case.items * 4, fault: Fault::None, ..case }),
        kept_closed in 0..=40usize,
    ) {
        drop_on_tokio(case, kept_closed);
    }
}
