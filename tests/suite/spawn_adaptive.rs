//! `.adaptive(controller, is_overload)` in spawned mode (contract point 26,
//! with 25 and 16 to 17): the controller's `initial()` replaces `workers`; each
//! completion, in the worker task's own lock section, hands it a `Sample` with
//! the item's exact run time, the classifier's verdict and whether the limit
//! was reached; the limit it returns applies at once (a raise starts items and
//! spawns tasks with no further completion or consumer poll, a lowering stops
//! new starts and cancels nothing), never below 1; `Spawned::limits()`,
//! `stats()` and a handle taken before `.adaptive(...)` and `spawn_on` all show
//! it. The in-place versions are in `core_adaptive.rs`.
//!
//! Deterministic: the tasks run on an executor the test steps by hand, the
//! futures are gates the test opens, and the clock (`support::now`) moves only
//! when the test advances it.

use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, Spawned};
use futures::{StreamExt, TryStreamExt};
use support::{Gates, Scripted, StepExecutor, advance, ms, now, poll_once, reset_clock};

/// Runs the tasks until none is woken, then takes every output the stream has
/// ready, running the tasks again after each poll, until nothing more comes.
fn take_ready<T>(stream: &mut Spawned<T>, stepper: &mut StepExecutor) -> Vec<T> {
    let mut taken = Vec::new();
    loop {
        stepper.run_until_stalled();
        match poll_once(stream) {
            Poll::Ready(Some(output)) => taken.push(output),
            Poll::Ready(None) => return taken,
            Poll::Pending if stepper.has_ready() => {}
            Poll::Pending => return taken,
        }
    }
}

/// Polls the consumer once and runs the tasks until none is woken.
fn take_one<T>(stream: &mut Spawned<T>, stepper: &mut StepExecutor) -> Poll<Option<T>> {
    let poll = poll_once(stream);
    stepper.run_until_stalled();
    poll
}

#[test]
fn the_initial_limit_replaces_workers_and_each_answer_applies_at_once() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let controller = Scripted::new(2, &[5, 1]);
    let mut stream = gates
        .source(100)
        .bounded(9, 0)
        .adaptive(controller.clone(), |_: &usize| false)
        .clock(now)
        .spawn_on(stepper.spawner());
    let limits = stream.limits();
    assert_eq!(limits.workers(), 2);
    assert_eq!(stream.stats().workers_limit, 2);
    assert!(take_one(&mut stream, &mut stepper).is_pending());
    assert_eq!((gates.running(), stepper.spawns()), (2, 2));

    // The first completion answers 5, applied in the task's own section: with
    // no consumer poll, items start and tasks are spawned for them (its held
    // output keeps one worker).
    gates.open(0);
    stepper.run_until_stalled();
    assert_eq!((gates.running(), stepper.spawns()), (4, 4));
    assert_eq!((limits.workers(), stream.stats().workers_limit), (5, 5));
    assert_eq!(stream.limits().workers(), 5);
    // Taking it frees the fifth.
    assert_eq!(take_one(&mut stream, &mut stepper), Poll::Ready(Some(0)));
    assert_eq!((gates.running(), stepper.spawns()), (5, 5));

    // The next answers 1: running work goes on, nothing starts until fewer
    // than 1 run.
    gates.open(1);
    stepper.run_until_stalled();
    assert_eq!(take_one(&mut stream, &mut stepper), Poll::Ready(Some(1)));
    assert_eq!(gates.running(), 4);
    assert_eq!((limits.workers(), stream.stats().workers_limit), (1, 1));
    assert_eq!(
        gates.counts().futures_dropped,
        2,
        "only the two that finished"
    );
    for id in 2..5 {
        gates.open(id);
        stepper.run_until_stalled();
        assert_eq!(take_one(&mut stream, &mut stepper), Poll::Ready(Some(id)));
    }
    assert_eq!((gates.running(), gates.started()), (1, 6), "none started");
    gates.open(5);
    stepper.run_until_stalled();
    assert_eq!(take_one(&mut stream, &mut stepper), Poll::Ready(Some(5)));
    assert_eq!((gates.running(), gates.started()), (1, 7), "one at a time");
    assert_eq!(stepper.spawns(), 5);

    let heard = controller.heard();
    let limits_heard: Vec<_> = heard.iter().map(|sample| sample.limit).collect();
    assert_eq!(limits_heard, [2, 5, 1, 1, 1, 1]);
}

#[test]
fn a_limit_of_zero_from_the_controller_is_taken_as_one() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let stream = gates
        .source(10)
        .bounded(3, 0)
        .adaptive(Scripted::new(0, &[0]), |_: &usize| false)
        .clock(now);
    assert_eq!(stream.limits().workers(), 1);
    let mut stream = stream.spawn_on(stepper.spawner());
    assert_eq!(stream.limits().workers(), 1);
    assert_eq!(stream.stats().workers_limit, 1);
    assert!(take_one(&mut stream, &mut stepper).is_pending());
    assert_eq!(gates.running(), 1);
    gates.open(0);
    stepper.run_until_stalled();
    assert_eq!(take_one(&mut stream, &mut stepper), Poll::Ready(Some(0)));
    assert_eq!(gates.running(), 1, "still one worker: the stream goes on");
    assert_eq!(stream.limits().workers(), 1);
    assert_eq!(stream.stats().workers_limit, 1);
}

#[test]
fn samples_carry_exact_run_times_verdicts_and_saturation() {
    // Item n runs 10 x (n + 1) ms and "overloads" when odd. Two workers, six
    // items, unordered; the consumer takes each output as it completes.
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let controller = Scripted::new(2, &[]);
    let mut stream = gates
        .source(6)
        .bounded(1, 0)
        .adaptive(controller.clone(), |n: &usize| n % 2 == 1)
        .clock(now)
        .spawn_on(stepper.spawner());
    let mut outputs = take_ready(&mut stream, &mut stepper);
    // Item 0 runs 0-10, item 1 0-20, item 2 10-40, item 3 20-60, item 4
    // 40-90, item 5 60-120: the gates open at those ends.
    let mut at = 0;
    for (end, id) in [(10, 0), (20, 1), (40, 2), (60, 3), (90, 4), (120, 5)] {
        advance(ms(end - at));
        at = end;
        gates.open(id);
        outputs.extend(take_ready(&mut stream, &mut stepper));
    }
    assert_eq!(outputs, [0, 1, 2, 3, 4, 5]);
    assert!(matches!(poll_once(&mut stream), Poll::Ready(None)));
    let heard = controller.heard();
    let millis = |d: std::time::Duration| d.as_millis();
    let runs: Vec<_> = heard
        .iter()
        .map(|s| (millis(s.started), millis(s.run)))
        .collect();
    assert_eq!(
        runs,
        [(0, 10), (0, 20), (10, 30), (20, 40), (40, 50), (60, 60)]
    );
    let verdicts: Vec<_> = heard.iter().map(|s| s.overload).collect();
    assert_eq!(verdicts, [false, true, false, true, false, true]);
    // Both workers were busy at every completion but the last: the source
    // was empty by then, and only one ran.
    let saturated: Vec<_> = heard.iter().map(|s| s.saturated).collect();
    assert_eq!(saturated, [true, true, true, true, true, false]);
    assert!(heard.iter().all(|s| s.limit == 2));
}

#[test]
fn a_source_that_cannot_keep_up_leaves_the_limit_unreached() {
    reset_clock();
    let mut stepper = StepExecutor::new();
    let (source, feed) = support::fed_source::<std::future::Ready<u8>>();
    let controller = Scripted::new(4, &[]);
    let mut stream = source
        .bounded(1, 0)
        .adaptive(controller.clone(), |_: &u8| false)
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    for n in 0..5 {
        advance(ms(1));
        feed.push(std::future::ready(n));
        assert_eq!(take_ready(&mut stream, &mut stepper), [n]);
    }
    feed.close();
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    assert!(matches!(poll_once(&mut stream), Poll::Ready(None)));
    let heard = controller.heard();
    assert_eq!(heard.len(), 5);
    assert!(heard.iter().all(|sample| !sample.saturated), "{heard:?}");
    assert_eq!(stream.stats().workers_limit, 4);
}

#[test]
fn ordered_a_full_window_counts_as_reached() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let controller = Scripted::new(8, &[]);
    let mut stream = gates
        .source(100)
        .bounded(1, 0)
        .ordered(3)
        .adaptive(controller.clone(), |_: &usize| false)
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(take_one(&mut stream, &mut stepper).is_pending());
    assert_eq!(gates.running(), 3, "min(workers, window)");
    // Item 2 finishes behind the head: the window is full, so reached.
    gates.open(2);
    stepper.run_until_stalled();
    assert!(take_one(&mut stream, &mut stepper).is_pending());
    let heard = controller.heard();
    assert_eq!(heard.len(), 1);
    assert!(heard[0].saturated);
    assert_eq!(heard[0].limit, 8);
}

#[test]
fn a_handle_taken_before_adaptive_and_spawn_on_shows_the_controllers_value() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let early = gates.source(100).bounded(1, 0);
    let limits = early.limits();
    let controller = Scripted::new(2, &[3]);
    let mut stream = early
        .ordered(8)
        .adaptive(controller.clone(), |_: &usize| false)
        .clock(now)
        .spawn_on(stepper.spawner());
    assert_eq!(limits.workers(), 2);
    assert_eq!(stream.stats().workers_limit, 2);
    assert!(take_one(&mut stream, &mut stepper).is_pending());
    assert_eq!((gates.running(), stepper.spawns()), (2, 2));

    // The controller answers 3 at the first completion: the early handle, a
    // new one and the stats all show it, and a third item runs.
    gates.open(0);
    stepper.run_until_stalled();
    assert_eq!(limits.workers(), 3);
    assert_eq!(stream.limits().workers(), 3);
    assert_eq!(stream.stats().workers_limit, 3);
    assert_eq!((gates.running(), stepper.spawns()), (3, 3));

    // The early handle still reaches the tasks.
    limits.set_workers(5);
    stepper.run_until_stalled();
    assert_eq!((gates.running(), stepper.spawns()), (5, 5));
    assert_eq!(stream.stats().workers_limit, 5);
    assert_eq!(take_one(&mut stream, &mut stepper), Poll::Ready(Some(0)));
}

#[test]
fn a_handles_set_workers_lasts_until_the_controllers_next_decision() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let controller = Scripted::new(2, &[2]);
    let mut stream = gates
        .source(100)
        .bounded(1, 0)
        .ordered(16)
        .adaptive(controller.clone(), |_: &usize| false)
        .clock(now)
        .spawn_on(stepper.spawner());
    let limits = stream.limits();
    assert!(take_one(&mut stream, &mut stepper).is_pending());
    limits.set_workers(6);
    stepper.run_until_stalled();
    assert_eq!(gates.running(), 6);
    // The next decision (2) overrides it: nothing more starts, nothing is
    // cancelled.
    gates.open(0);
    stepper.run_until_stalled();
    assert_eq!(
        controller.heard()[0].limit,
        6,
        "the handle's limit was in force"
    );
    assert_eq!((limits.workers(), stream.stats().workers_limit), (2, 2));
    assert_eq!(gates.running(), 5);
    assert_eq!(gates.counts().futures_dropped, 1);
    assert_eq!(take_one(&mut stream, &mut stepper), Poll::Ready(Some(0)));
    assert_eq!(gates.running(), 5);
}

#[test]
fn try_bounded_streams_adapt_too() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let controller = Scripted::new(1, &[3]);
    let source = gates
        .source(100)
        .map(Ok::<_, ()>)
        .map_ok(|gate| async move { Ok::<_, ()>(gate.await) });
    let mut stream = source
        .try_bounded(1, 0)
        .adaptive(controller.clone(), |output: &Result<usize, ()>| {
            output.is_err()
        })
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(take_one(&mut stream, &mut stepper).is_pending());
    assert_eq!(gates.running(), 1);
    gates.open(0);
    stepper.run_until_stalled();
    assert_eq!(
        take_one(&mut stream, &mut stepper),
        Poll::Ready(Some(Ok(0)))
    );
    assert_eq!(gates.running(), 3);
    assert_eq!(stream.limits().workers(), 3);
    assert_eq!(controller.heard().len(), 1);
}
