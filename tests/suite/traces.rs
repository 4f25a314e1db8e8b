//! Feature `tracing`, in both modes (contract point 30): the futures log in
//! the span the stream runs in: in place the consumer's, spawned the one
//! current at `spawn_on`, which the worker tasks enter while they poll, on
//! whatever thread; an item's own `.instrument(span)` is still the innermost
//! span where it logs. A limit change is a `debug!` event with the limit, the
//! old and new values and the reason.
//!
//! Deterministic: the stepped executor polls the tasks on the test's thread,
//! where the test's subscriber is the default (`Traces::scope`); the one test
//! on a runtime's threads uses the process-wide subscriber, keeping only its
//! own target's events.

use std::pin::Pin;

use futures::{FutureExt, StreamExt, stream};
use support::{Gates, Logged, Traces, both_modes, drive, now, reset_clock, tokio_multi_thread};
use tracing::{Instrument, info_span};

use bounded_buffered::BoundedStreamExt;

use crate::adaptive::Scripted;

/// The target of the items' events, so that other events stay out.
const ITEMS: &str = "suite_items";

type Work = Pin<Box<dyn Future<Output = u32> + Send>>;

/// Items `0..count` that log one event each; the last one in a span of its
/// own, `own`.
fn logging(count: u32) -> impl futures::Stream<Item = Work> + Send + Unpin + 'static {
    stream::iter(0..count).map(move |n| {
        let work = async move {
            tracing::info!(target: ITEMS, n, "working");
            n
        };
        if n + 1 == count {
            work.instrument(info_span!("own")).boxed()
        } else {
            work.boxed()
        }
    })
}

/// The span names each item logged in, by item.
fn spans_by_item(events: &[Logged]) -> Vec<(String, Vec<String>)> {
    let mut seen: Vec<_> = events
        .iter()
        .filter(|event| event.target == ITEMS)
        .map(|event| (event.fields["n"].clone(), event.spans.clone()))
        .collect();
    seen.sort();
    seen
}

both_modes! {
    /// Point 30: every item logs inside the stream's span (spawned: the one
    /// current at `spawn_on`, though nobody enters it where the tasks run),
    /// and the item with a span of its own logs in that one, innermost.
    fn items_log_inside_the_streams_span_and_their_own_span_wins(mode) {
        let traces = Traces::new();
        traces.scope(|| {
            let span = info_span!("import");
            let mut run = span.in_scope(|| drive!(mode, logging(4).bounded(2, 2)));
            let outputs = if mode.is_spawned() {
                // Outside the span: only the tasks' entering puts them in it.
                run.take_woken()
            } else {
                // In place the futures run in the consumer's poll, in its span.
                span.in_scope(|| run.take_woken())
            };
            assert_eq!(outputs.len(), 4);
        });
        let spans = spans_by_item(&traces.events());
        let import = || "import".to_string();
        assert_eq!(
            spans,
            [
                ("0".to_string(), vec![import()]),
                ("1".to_string(), vec![import()]),
                ("2".to_string(), vec![import()]),
                ("3".to_string(), vec![import(), "own".to_string()]),
            ]
        );
    }

    /// Points 25, 26 and 30: a limit change is a `debug!` event naming the
    /// limit, its old and new values and who changed it.
    fn a_limit_change_is_a_debug_event_with_old_new_and_reason(mode) {
        let traces = Traces::new();
        let gates = Gates::new();
        traces.scope(|| {
            let mut run = drive!(mode, gates.source(4).bounded(2, 2));
            let limits = run.limits();
            assert!(run.take_ready().is_empty());
            limits.set_workers(1);
            limits.set_waiting(3);
            let _ = run.take_ready();
            gates.open_all();
            assert_eq!(run.take_to_end().len(), 4);
        });
        let changes: Vec<_> = traces
            .events()
            .into_iter()
            .filter(|event| event.target == "bounded_buffered")
            .map(|event| {
                let field = |name: &str| event.fields[name].clone();
                (field("limit"), field("old"), field("new"), field("reason"), field("message"))
            })
            .collect();
        let change = |limit: &str, old: &str, new: &str| {
            let text = |text: &str| text.to_string();
            (text(limit), text(old), text(new), text("limits handle"), text("limit changed"))
        };
        assert_eq!(changes, [change("workers", "2", "1"), change("waiting", "2", "3")]);
    }

    /// Points 26 and 30: the controller's decisions say why: a sample of
    /// back-pressure, or of run times; its initial limit is no change.
    fn an_adaptive_decision_is_a_debug_event_with_its_reason(mode) {
        reset_clock();
        let traces = Traces::new();
        let gates = Gates::new();
        traces.scope(|| {
            let controller = Scripted::new(2, &[3, 1]);
            let mut run = drive!(
                mode,
                gates.source(4).bounded(8, 0).adaptive(controller, |output: &usize| *output == 1).clock(now)
            );
            assert!(run.take_ready().is_empty());
            gates.open(0);
            assert_eq!(run.take_ready(), [0]);
            gates.open(1);
            assert_eq!(run.take_ready(), [1]);
        });
        let changes: Vec<_> = traces
            .events()
            .into_iter()
            .filter(|event| event.target == "bounded_buffered")
            .map(|event| [&event.fields["old"], &event.fields["new"], &event.fields["reason"]].map(String::clone))
            .collect();
        let change = |old: &str, new: &str, reason: &str| [old, new, reason].map(str::to_string);
        assert_eq!(
            changes,
            [change("2", "3", "adaptive: run times"), change("3", "1", "adaptive: back-pressure")]
        );
    }
}

/// Point 30, spawned on a runtime's threads: the tasks enter the span there.
#[test]
fn spawned_tasks_on_other_threads_log_inside_the_span_of_spawn_on() {
    let traces = Traces::global(ITEMS);
    let runtime = tokio_multi_thread();
    let span = info_span!("import");
    let stream = span.in_scope(|| logging(32).bounded(4, 4).spawn_on(runtime.handle().clone()));
    let outputs: Vec<u32> = runtime.block_on(stream.collect());
    assert_eq!(outputs.len(), 32);
    let spans = spans_by_item(&traces.events());
    assert_eq!(spans.len(), 32);
    for (n, spans) in spans {
        let expected: &[&str] = if n == "31" {
            &["import", "own"]
        } else {
            &["import"]
        };
        assert_eq!(spans, expected, "item {n}");
    }
}
