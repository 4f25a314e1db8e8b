//! The classifier's three-way verdict (contract point 26), in place and
//! spawned, unordered and ordered: a `Verdict` or a `bool` (`true` is
//! back-pressure); an ignored output is delivered like any other but feeds
//! the controller nothing, so the limit stays as it is, even one a `Limits`
//! handle paused; items that never complete (expired before they started,
//! cancelled by fail fast) are not heard of either.
//!
//! Deterministic: gates the test opens, the hand clock (`support::now`),
//! spawned tasks on the step-by-step executor.

use std::future::Future;
use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, Spawned, Verdict};
use futures::StreamExt;
use support::{Gates, Poller, Scripted, StepExecutor, advance, ms, now, poll_once, reset_clock};

/// Item `id` succeeds, pushes back or is to be ignored, by `id % 3`.
fn verdict_of(id: &usize) -> Verdict {
    match id % 3 {
        0 => Verdict::Success,
        1 => Verdict::Overload,
        _ => Verdict::Ignore,
    }
}

/// Runs the tasks until none is woken, then takes every output ready, again
/// after each poll, until nothing more comes.
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

/// The overload flags the controller heard, in the order it heard them.
fn overloads(controller: &Scripted) -> Vec<bool> {
    controller
        .heard()
        .iter()
        .map(|sample| sample.overload)
        .collect()
}

#[test]
fn in_place_an_ignored_output_is_delivered_but_not_heard_of() {
    for window in [None, Some(3)] {
        let gates = Gates::new();
        let controller = Scripted::new(1, &[]);
        let stream = gates.source(6).bounded(1, 0);
        let stream = match window {
            Some(window) => stream.ordered(window),
            None => stream,
        };
        let mut stream = stream.adaptive(controller.clone(), verdict_of).clock(now);
        let poller = Poller::new();
        let mut outputs = Vec::new();
        for id in 0..6 {
            assert_eq!(poller.poll(&mut stream), Poll::Pending);
            gates.open(id);
            outputs.extend(match poller.poll(&mut stream) {
                Poll::Ready(Some(output)) => Some(output),
                other => panic!("{other:?}"),
            });
        }
        assert_eq!(outputs, [0, 1, 2, 3, 4, 5], "{window:?}");
        // Items 2 and 5 were ignored: of six completions, four were heard.
        assert_eq!(
            overloads(&controller),
            [false, true, false, true],
            "{window:?}"
        );
    }
}

#[test]
fn spawned_an_ignored_output_is_delivered_but_not_heard_of() {
    for window in [None, Some(3)] {
        reset_clock();
        let gates = Gates::new();
        let mut stepper = StepExecutor::new();
        let controller = Scripted::new(1, &[]);
        let stream = gates.source(6).bounded(1, 0);
        let stream = match window {
            Some(window) => stream.ordered(window),
            None => stream,
        };
        let mut stream = stream
            .adaptive(controller.clone(), verdict_of)
            .clock(now)
            .spawn_on(stepper.spawner());
        let mut outputs = take_ready(&mut stream, &mut stepper);
        for id in 0..6 {
            gates.open(id);
            outputs.extend(take_ready(&mut stream, &mut stepper));
        }
        assert_eq!(outputs, [0, 1, 2, 3, 4, 5], "{window:?}");
        assert_eq!(
            overloads(&controller),
            [false, true, false, true],
            "{window:?}"
        );
    }
}

#[test]
fn in_place_an_ignored_output_leaves_even_a_paused_limit_as_it_is() {
    let gates = Gates::new();
    let controller = Scripted::new(2, &[]);
    let mut stream = gates
        .source(10)
        .bounded(1, 0)
        .adaptive(controller.clone(), |id: &usize| {
            if *id == 0 {
                Verdict::Ignore
            } else {
                Verdict::Success
            }
        })
        .clock(now);
    let limits = stream.limits();
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(gates.running(), 2);
    limits.set_workers(0);
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    // Item 0 is ignored: the controller is not asked, the pause holds and
    // nothing starts.
    gates.open(0);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(0)));
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!((limits.workers(), gates.started()), (0, 2));
    assert!(controller.heard().is_empty());
    // Item 1 is heard: the controller owns the limit (its 0 is taken as 1).
    gates.open(1);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(1)));
    assert_eq!((limits.workers(), gates.started()), (1, 3));
    assert_eq!(controller.heard().len(), 1);
}

#[test]
fn spawned_an_ignored_output_leaves_even_a_paused_limit_as_it_is() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let controller = Scripted::new(2, &[]);
    let mut stream = gates
        .source(10)
        .bounded(1, 0)
        .adaptive(controller.clone(), |id: &usize| {
            if *id == 0 {
                Verdict::Ignore
            } else {
                Verdict::Success
            }
        })
        .clock(now)
        .spawn_on(stepper.spawner());
    let limits = stream.limits();
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    assert_eq!(gates.running(), 2);
    limits.set_workers(0);
    gates.open(0);
    assert_eq!(take_ready(&mut stream, &mut stepper), [0]);
    assert_eq!((limits.workers(), gates.started()), (0, 2));
    assert!(controller.heard().is_empty());
    gates.open(1);
    assert_eq!(take_ready(&mut stream, &mut stepper), [1]);
    assert_eq!((limits.workers(), gates.started()), (1, 3));
    assert_eq!(controller.heard().len(), 1);
}

#[test]
fn a_bool_classifier_still_works_true_is_back_pressure() {
    // Every gate open from the start.
    let gates = Gates::open_except(&[]);
    let controller = Scripted::new(1, &[]);
    // Not fallible (`bounded`): an error is an output like any other.
    let mut stream = gates
        .source(4)
        .map(|gate| async move {
            let id = gate.await;
            if id == 1 { Err("busy") } else { Ok(id) }
        })
        .bounded(1, 0)
        .adaptive(controller.clone(), |reply: &Result<usize, &str>| {
            reply.is_err()
        })
        .clock(now);
    let poller = Poller::new();
    let mut outputs = Vec::new();
    while let Poll::Ready(Some(output)) = poller.poll(&mut stream) {
        outputs.push(output);
    }
    assert_eq!(outputs, [Ok(0), Err("busy"), Ok(2), Ok(3)]);
    assert_eq!(overloads(&controller), [false, true, false, false]);
}

#[test]
fn in_place_an_expired_item_is_not_heard_of() {
    reset_clock();
    let gates = Gates::new();
    let controller = Scripted::new(1, &[]);
    let mut stream = gates
        .source(4)
        .bounded(1, 3)
        .max_wait(ms(10))
        .adaptive(controller.clone(), |_: &usize| false)
        .clock(now);
    let poller = Poller::new();
    // Item 0 runs, items 1 to 3 wait; 11 ms later 0 completes and the
    // others have waited too long: they expire, never started.
    assert!(poller.poll(&mut stream).is_pending());
    advance(ms(11));
    gates.open(0);
    let mut outputs = Vec::new();
    while let Poll::Ready(Some(output)) = poller.poll(&mut stream) {
        outputs.push(output.map_err(|expired| expired.waited()));
    }
    assert_eq!(outputs, [Ok(0), Err(ms(11)), Err(ms(11)), Err(ms(11))]);
    assert_eq!(controller.heard().len(), 1);
}

#[test]
fn spawned_an_expired_item_is_not_heard_of() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let controller = Scripted::new(1, &[]);
    let mut stream = gates
        .source(4)
        .bounded(1, 3)
        .max_wait(ms(10))
        .adaptive(controller.clone(), |_: &usize| false)
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    advance(ms(11));
    gates.open(0);
    let outputs: Vec<_> = take_ready(&mut stream, &mut stepper)
        .into_iter()
        .map(|output| output.map_err(|expired| expired.waited()))
        .collect();
    assert_eq!(outputs, [Ok(0), Err(ms(11)), Err(ms(11)), Err(ms(11))]);
    assert_eq!(controller.heard().len(), 1);
}

/// Gates whose item 1 fails: `try_bounded` fails fast on it.
fn failing_source(
    gates: &Gates,
) -> impl futures::Stream<
    Item = Result<impl Future<Output = Result<usize, &'static str>> + use<>, &'static str>,
> + use<> {
    gates.source(10).map(|gate| {
        Ok(async move {
            let id = gate.await;
            if id == 1 { Err("failed") } else { Ok(id) }
        })
    })
}

#[test]
fn in_place_items_cancelled_by_fail_fast_are_not_heard_of() {
    let gates = Gates::new();
    let controller = Scripted::new(3, &[]);
    let mut stream = failing_source(&gates)
        .try_bounded(1, 0)
        .adaptive(controller.clone(), |output: &Result<usize, &str>| {
            if output.is_err() {
                Verdict::Overload
            } else {
                Verdict::Success
            }
        })
        .clock(now);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(gates.running(), 3);
    // Item 1 fails: it is heard (its output was classified); items 0 and 2,
    // in flight, are cancelled and never heard of.
    gates.open(1);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(Err("failed"))));
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    assert_eq!(gates.running(), 0);
    assert_eq!(overloads(&controller), [true]);
}

#[test]
fn spawned_items_cancelled_by_fail_fast_are_not_heard_of() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let controller = Scripted::new(3, &[]);
    let mut stream = failing_source(&gates)
        .try_bounded(1, 0)
        .adaptive(controller.clone(), |output: &Result<usize, &str>| {
            if output.is_err() {
                Verdict::Overload
            } else {
                Verdict::Success
            }
        })
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    assert_eq!(gates.running(), 3);
    gates.open(1);
    assert_eq!(take_ready(&mut stream, &mut stepper), [Err("failed")]);
    assert_eq!(gates.running(), 0);
    // Opening the cancelled items' gates now changes nothing.
    gates.open(0);
    gates.open(2);
    stepper.run_until_stalled();
    assert_eq!(overloads(&controller), [true]);
}
