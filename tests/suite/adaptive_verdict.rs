//! The classifier's three-way verdict (contract point 26), in both modes,
//! unordered and ordered: a `Verdict` or a `bool` (`true` is back-pressure);
//! an ignored output is delivered like any other but feeds the controller
//! nothing, so the limit stays as it is, even one a `Limits` handle paused;
//! items that never complete (expired before they started, cancelled by fail
//! fast) are not heard of either.
//!
//! Deterministic: gates the test opens, the hand clock (`support::now`),
//! spawned tasks on the step-by-step executor.

use std::future::Future;

use bounded_buffered::{BoundedStreamExt, Verdict};
use futures::StreamExt;
use support::{Gates, advance, both_modes, drive, ms, now, reset_clock};

use crate::adaptive::Scripted;

/// Item `id` succeeds, pushes back or is to be ignored, by `id % 3`.
fn verdict_of(id: &usize) -> Verdict {
    match id % 3 {
        0 => Verdict::Success,
        1 => Verdict::Overload,
        _ => Verdict::Ignore,
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

both_modes! {
    /// Point 26: `Ignore` delivers the output and tells the controller
    /// nothing, unordered and ordered.
    fn an_ignored_output_is_delivered_but_not_heard_of(mode) {
        for window in [None, Some(3)] {
            reset_clock();
            let gates = Gates::new();
            let controller = Scripted::new(1, &[]);
            let stream = gates.source(6).bounded(1, 0);
            let stream = match window {
                Some(window) => stream.ordered(window),
                None => stream,
            };
            let mut run = drive!(mode, stream.adaptive(controller.clone(), verdict_of).clock(now));
            let mut outputs = Vec::new();
            for id in 0..6 {
                assert!(run.poll().is_pending(), "{window:?}");
                gates.open(id);
                outputs.extend(run.take_ready());
            }
            assert_eq!(outputs, [0, 1, 2, 3, 4, 5], "{window:?}");
            // Items 2 and 5 were ignored: of six completions, four were heard.
            assert_eq!(overloads(&controller), [false, true, false, true], "{window:?}");
        }
    }

    /// Point 26: an ignored completion does not hand the limit back to the
    /// controller; a heard one does.
    fn an_ignored_output_leaves_even_a_paused_limit_as_it_is(mode) {
        reset_clock();
        let gates = Gates::new();
        let controller = Scripted::new(2, &[]);
        let stream = gates
            .source(10)
            .bounded(1, 0)
            .adaptive(controller.clone(), |id: &usize| {
                if *id == 0 { Verdict::Ignore } else { Verdict::Success }
            })
            .clock(now);
        let mut run = drive!(mode, stream);
        let limits = run.limits();
        assert!(run.poll().is_pending());
        assert_eq!(gates.running(), 2);
        limits.set_workers(0);
        assert!(run.poll().is_pending());
        // Item 0 is ignored: the controller is not asked, the pause holds and
        // nothing starts.
        gates.open(0);
        assert_eq!(run.take_ready(), [0]);
        assert!(run.poll().is_pending());
        assert_eq!((limits.workers(), gates.started()), (0, 2));
        assert!(controller.heard().is_empty());
        // Item 1 is heard: the controller owns the limit (its 0 is taken as 1).
        gates.open(1);
        assert_eq!(run.take_ready(), [1]);
        assert_eq!((limits.workers(), gates.started()), (1, 3));
        assert_eq!(controller.heard().len(), 1);
    }

    /// Point 26: a `bool` classifier still compiles and means back-pressure
    /// when `true`.
    fn a_bool_classifier_still_works_true_is_back_pressure(mode) {
        reset_clock();
        // Every gate open from the start.
        let gates = Gates::open_except(&[]);
        let controller = Scripted::new(1, &[]);
        // Not fallible (`bounded`): an error is an output like any other.
        let stream = gates
            .source(4)
            .map(|gate| async move {
                let id = gate.await;
                if id == 1 { Err("busy") } else { Ok(id) }
            })
            .bounded(1, 0)
            .adaptive(controller.clone(), |reply: &Result<usize, &str>| reply.is_err())
            .clock(now);
        let mut run = drive!(mode, stream);
        assert_eq!(run.take_woken(), [Ok(0), Err("busy"), Ok(2), Ok(3)]);
        assert!(run.is_terminated());
        assert_eq!(overloads(&controller), [false, true, false, false]);
    }

    /// Points 26 and 8: an item that expired before it started never ran, so
    /// the controller hears nothing of it.
    fn an_expired_item_is_not_heard_of(mode) {
        reset_clock();
        let gates = Gates::new();
        let controller = Scripted::new(1, &[]);
        let stream = gates
            .source(4)
            .bounded(1, 3)
            .max_wait(ms(10))
            .adaptive(controller.clone(), |_: &usize| false)
            .clock(now);
        let mut run = drive!(mode, stream);
        // Item 0 runs, items 1 to 3 wait; 11 ms later 0 completes and the
        // others have waited too long: they expire, never started.
        assert!(run.poll().is_pending());
        advance(ms(11));
        gates.open(0);
        let outputs: Vec<_> = run
            .take_ready()
            .into_iter()
            .map(|output| output.map_err(|expired| expired.waited()))
            .collect();
        assert_eq!(outputs, [Ok(0), Err(ms(11)), Err(ms(11)), Err(ms(11))]);
        assert_eq!(controller.heard().len(), 1);
    }

    /// Points 26 and 9: the failure is heard; the siblings fail fast cancels
    /// never completed and are not.
    fn items_cancelled_by_fail_fast_are_not_heard_of(mode) {
        reset_clock();
        let gates = Gates::new();
        let controller = Scripted::new(3, &[]);
        let stream = failing_source(&gates)
            .try_bounded(1, 0)
            .adaptive(controller.clone(), |output: &Result<usize, &str>| {
                if output.is_err() { Verdict::Overload } else { Verdict::Success }
            })
            .clock(now);
        let mut run = drive!(mode, stream);
        assert!(run.poll().is_pending());
        assert_eq!(gates.running(), 3);
        // Item 1 fails: it is heard (its output was classified); items 0 and 2,
        // in flight, are cancelled and never heard of.
        gates.open(1);
        assert_eq!(run.take_to_end(), [Err("failed")]);
        assert_eq!(gates.running(), 0);
        // Opening the cancelled items' gates now changes nothing.
        gates.open(0);
        gates.open(2);
        run.settle();
        assert_eq!(overloads(&controller), [true]);
    }
}
