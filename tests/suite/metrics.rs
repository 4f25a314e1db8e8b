//! `.metrics(name)`, in both modes (contract point 30, and 15 for what it
//! mirrors): every gauge and counter has exactly the value `stats()` reports
//! at the same moment, after every step of a schedule; every histogram holds
//! exactly the durations `timings()` counts; the key and weight gauges exist
//! for a stream with them, the histograms for a timed one, whatever the order
//! of the builder calls; limit changes are counted by limit and direction;
//! expired, rejected and failed items are counted; updates are batched (a
//! poll that changes nothing calls nothing; in place, what one poll completes
//! is one increment); and a stream without `.metrics` publishes nothing.
//!
//! Deterministic: the futures are gates the test opens, the clock moves only
//! when the test advances it, spawned streams run on an executor the test
//! steps, and each test has a recorder of its own (`Recorded::scope`, a
//! thread-local recorder while the stream is built).

use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, Keyed, Shed, Weighted};
use futures::{Stream, StreamExt, stream};
use metrics::Unit;
use support::{
    Driven, Gate, Gates, HandTimer, OrderedIf, Recorded, advance, advance_timers, both_modes,
    drive, ms, nanos, now, reset_clock, reset_timers,
};

use crate::adaptive::Scripted;

/// Gates `0..weights.len()`, item `id` with key `keys[id]` and weight
/// `weights[id]`.
fn tenants(
    gates: &Gates,
    keys: &'static [u32],
    weights: &'static [u64],
) -> impl Stream<Item = Keyed<u32, Weighted<Gate>>> + Send + Unpin + use<> {
    gates
        .source(keys.len())
        .enumerate()
        .map(|(id, gate)| Keyed::new(keys[id], Weighted::new(weights[id], gate)))
}

/// The value of a limit-change series of `stream`.
fn changes(recorded: &Recorded, stream: &str, limit: &str, direction: &str) -> Option<u64> {
    let labels = format!("limit={limit},direction={direction}");
    recorded.counter("bounded_limit_changes_total", stream, &labels)
}

both_modes! {
    /// Point 30: after every step, each gauge and counter is what `stats()`
    /// says; before the first poll, the limits are there and nothing counted.
    fn every_gauge_and_counter_has_the_value_stats_report_after_each_step(mode) {
        for window in [None, Some(3)] {
            let recorded = Recorded::new();
            let gates = Gates::new();
            let mut run = drive!(
                mode,
                recorded.scope(|| gates.source(6).bounded(2, 2).metrics("jobs").ordered_if(window))
            );
            recorded.check("jobs", &run.stats(), None, false);
            assert_eq!(recorded.gauge("bounded_workers_limit", "jobs"), Some(Some(2.0)));
            assert_eq!(recorded.counter("bounded_pulled_total", "jobs", ""), Some(0));

            assert!(run.take_ready().is_empty());
            recorded.check("jobs", &run.stats(), None, false);
            assert_eq!(recorded.gauge("bounded_active", "jobs"), Some(Some(2.0)), "{window:?}");
            assert_eq!(recorded.gauge("bounded_waiting", "jobs"), Some(Some(2.0)), "{window:?}");

            // Out of order: ordered, item 1's output is held until item 0's.
            for id in [1, 0, 3, 2, 5, 4] {
                gates.open(id);
                let _ = run.take_ready();
                recorded.check("jobs", &run.stats(), None, false);
            }
            assert!(run.take_to_end().is_empty());
            let stats = run.stats();
            recorded.check("jobs", &stats, None, false);
            assert_eq!((stats.pulled, stats.completed), (6, 6));
            // No keys, no weights, no timings: not even registered.
            for absent in ["bounded_keys_running", "bounded_running_weight", "bounded_wait_seconds"] {
                assert!(recorded.series().iter().all(|series| !series.starts_with(absent)));
            }
        }
    }

    /// Point 30: each histogram gets every duration `timings()` records, to
    /// the nanosecond, whether `.metrics` comes before `.timed()` or after.
    fn every_histogram_holds_the_durations_timings_records(mode) {
        for metrics_first in [true, false] {
            reset_clock();
            let recorded = Recorded::new();
            let gates = Gates::new();
            let mut run: Driven<'_, usize> = if metrics_first {
                drive!(mode, recorded.scope(|| gates.source(3).bounded(1, 2).metrics("timed").timed().clock(now)))
            } else {
                drive!(mode, recorded.scope(|| gates.source(3).bounded(1, 2).timed().clock(now).metrics("timed")))
            };
            // t = 0: item 0 runs, items 1 and 2 wait.
            assert!(run.take_ready().is_empty());
            recorded.check("timed", &run.stats(), run.timings().as_ref(), false);
            // t = 10: item 0 completes (ran 10), item 1 starts (waited 10).
            advance(ms(10));
            gates.open(0);
            assert_eq!(run.take_ready(), [0]);
            recorded.check("timed", &run.stats(), run.timings().as_ref(), false);
            // t = 15: item 1 completes (ran 5), item 2 starts (waited 15);
            // t = 18: item 2 completes (ran 3).
            advance(ms(5));
            gates.open(1);
            assert_eq!(run.take_ready(), [1]);
            advance(ms(3));
            gates.open(2);
            assert_eq!(run.take_to_end(), [2]);
            let timings = run.timings().expect("timed");
            recorded.check("timed", &run.stats(), Some(&timings), false);
            let recorded_ms = |name| -> Vec<u64> {
                let values = recorded.histogram(name, "timed").expect("registered");
                values.into_iter().map(|seconds| nanos(seconds) / 1_000_000).collect()
            };
            assert_eq!(recorded_ms("bounded_run_seconds"), [10, 5, 3], "metrics first: {metrics_first}");
            assert_eq!(recorded_ms("bounded_wait_seconds"), [0, 10, 15]);
            assert_eq!(recorded_ms("bounded_held_seconds"), [0, 0, 0]);
        }
    }

    /// Points 27, 28 and 30: the key and weight gauges follow `stats()`,
    /// registered by the rules called after `.metrics`.
    fn the_key_and_weight_gauges_have_the_values_stats_report(mode) {
        let recorded = Recorded::new();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            recorded.scope(|| {
                tenants(&gates, &[0, 0, 0, 1, 1, 2], &[1, 2, 1, 3, 1, 2])
                    .bounded(4, 4)
                    .metrics("tenants")
                    .per_key(2)
                    .max_running_weight(5)
            })
        );
        assert!(run.take_ready().is_empty());
        let stats = run.stats();
        recorded.check("tenants", &stats, None, true);
        assert!(stats.keys_running > 0 && stats.blocked_by_key > 0 && stats.running_weight > 0);
        assert_eq!(
            recorded.gauge("bounded_running_weight", "tenants"),
            Some(Some(stats.running_weight as f64))
        );
        for id in [3, 0, 1, 2, 4, 5] {
            gates.open(id);
            let _ = run.take_ready();
            recorded.check("tenants", &run.stats(), None, true);
        }
        assert!(run.take_to_end().is_empty());
        recorded.check("tenants", &run.stats(), None, true);
    }

    /// Points 25, 26 and 30: each change of a limit in force is counted once,
    /// by limit and direction, whoever made it; setting a limit to its value
    /// is no change, and a controller's initial limit is none either.
    fn limit_changes_are_counted_by_limit_and_direction(mode) {
        let recorded = Recorded::new();
        let gates = Gates::new();
        let mut run = drive!(mode, recorded.scope(|| gates.source(20).bounded(2, 2).metrics("moving")));
        let limits = run.limits();
        assert!(run.take_ready().is_empty());
        limits.set_workers(1);
        let _ = run.take_ready();
        assert_eq!(changes(&recorded, "moving", "workers", "down"), Some(1));
        assert_eq!(changes(&recorded, "moving", "workers", "up"), Some(0));
        limits.set_workers(3);
        limits.set_waiting(4);
        limits.set_waiting(4);
        let _ = run.take_ready();
        let expected = [("workers", "up", 1), ("workers", "down", 1), ("waiting", "up", 1), ("waiting", "down", 0)];
        for (limit, direction, count) in expected {
            assert_eq!(changes(&recorded, "moving", limit, direction), Some(count), "{limit} {direction}");
        }
        recorded.check("moving", &run.stats(), None, false);
        assert_eq!(recorded.gauge("bounded_workers_limit", "moving"), Some(Some(3.0)));
        assert_eq!(recorded.gauge("bounded_waiting_limit", "moving"), Some(Some(4.0)));
        run.drop_stream();

        // The controller: initial 2 (no change), then 3 (up), then 1 (down).
        reset_clock();
        let gates = Gates::new();
        let controller = Scripted::new(2, &[3, 1]);
        let mut run = drive!(
            mode,
            recorded.scope(|| {
                gates.source(6).bounded(8, 0).metrics("adaptive").adaptive(controller, |_: &usize| false).clock(now)
            })
        );
        assert!(run.take_ready().is_empty());
        assert_eq!(changes(&recorded, "adaptive", "workers", "up"), Some(0));
        gates.open(0);
        assert_eq!(run.take_ready(), [0]);
        gates.open(1);
        assert_eq!(run.take_ready(), [1]);
        assert_eq!(changes(&recorded, "adaptive", "workers", "up"), Some(1));
        assert_eq!(changes(&recorded, "adaptive", "workers", "down"), Some(1));
        recorded.check("adaptive", &run.stats(), None, false);
        assert_eq!(recorded.gauge("bounded_workers_limit", "adaptive"), Some(Some(1.0)));
    }

    /// Points 25 and 30: the limit gauges and the change counter show the
    /// limits `stats()` reports as soon as a handle changes them: before the
    /// first poll, between two polls (in place the stream applies a change at
    /// its next poll, and reports it at once) and after the end.
    fn the_limit_gauges_follow_stats_at_once(mode) {
        let recorded = Recorded::new();
        let gates = Gates::new();
        let mut run = drive!(mode, recorded.scope(|| gates.source(4).bounded(2, 1).metrics("moved")));
        let limits = run.limits();
        let shown = |run: &Driven<'_, usize>| {
            let stats = run.stats();
            let gauge = |name| recorded.gauge(name, "moved").flatten().map(|value| value as usize);
            assert_eq!(gauge("bounded_workers_limit"), Some(stats.workers_limit));
            assert_eq!(gauge("bounded_waiting_limit"), Some(stats.waiting_limit));
            (stats.workers_limit, stats.waiting_limit)
        };
        assert_eq!(shown(&run), (2, 1));
        limits.set_workers(3);
        assert_eq!(shown(&run), (3, 1), "before the first poll");
        assert_eq!(changes(&recorded, "moved", "workers", "up"), Some(1));

        assert!(run.take_ready().is_empty());
        limits.set_workers(1);
        limits.set_waiting(0);
        assert_eq!(shown(&run), (1, 0), "between two polls");
        assert_eq!(changes(&recorded, "moved", "workers", "down"), Some(1));
        assert_eq!(changes(&recorded, "moved", "waiting", "down"), Some(1));

        gates.open_all();
        assert_eq!(run.take_to_end().len(), 4);
        limits.set_workers(5);
        assert_eq!(shown(&run), (5, 0), "after the end");
        assert_eq!(changes(&recorded, "moved", "workers", "up"), Some(2));
        recorded.check("moved", &run.stats(), None, false);
    }

    /// Points 21, 23, 29 and 30: expired, rejected and failed items are
    /// counted as they happen.
    fn expired_rejected_and_failed_items_are_counted(mode) {
        reset_clock();
        let recorded = Recorded::new();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            recorded.scope(|| gates.source(3).bounded(1, 2).max_wait(ms(5)).clock(now).metrics("expiring"))
        );
        assert!(run.take_ready().is_empty());
        advance(ms(10));
        gates.open(0);
        assert_eq!(run.take_to_end().len(), 3);
        assert_eq!(run.stats().expired, 2);
        recorded.check("expiring", &run.stats(), None, false);

        let gates = Gates::new();
        let mut run = drive!(
            mode,
            recorded.scope(|| gates.source(6).bounded(1, 1).shed(Shed::Newest).metrics("shedding"))
        );
        let _ = run.take_ready();
        let rejected = run.stats().rejected;
        assert!(rejected > 0);
        assert_eq!(recorded.counter("bounded_rejected_total", "shedding", ""), Some(rejected));
        recorded.check("shedding", &run.stats(), None, false);
        run.drop_stream();

        let failing = stream::iter(0..4u32).map(|n| {
            Ok::<_, String>(async move { if n == 2 { Err(format!("item {n}")) } else { Ok(n) } })
        });
        let mut run = drive!(mode, recorded.scope(|| failing.try_bounded(1, 0).metrics("failing")));
        assert_eq!(run.poll_woken(), std::task::Poll::Ready(Some(Ok(0))));
        assert_eq!(recorded.counter("bounded_failed_total", "failing", ""), Some(0));
        let rest = run.take_to_end();
        assert_eq!(rest, [Ok(1), Err("item 2".to_string())]);
        assert_eq!(recorded.counter("bounded_failed_total", "failing", ""), Some(1));
        recorded.check("failing", &run.stats(), None, false);
    }

    /// Points 30, 32 and 34: late and cancelled items, a run stopped at its
    /// deadline and the time starts waited for tokens are counted as they
    /// happen, equal to `stats()` once the stream is at rest.
    fn deadlines_and_the_rate_are_counted(mode) {
        reset_clock();
        reset_timers();
        let recorded = Recorded::new();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            recorded.scope(|| {
                gates.source(10)
                    .bounded(2, 2)
                    .timer(HandTimer)
                    .rate(100, std::time::Duration::from_secs(1))
                    .deadline(now() + ms(15))
                    .metrics("timed_budgets")
            })
        );
        assert!(run.take_ready().is_empty());
        advance_timers(ms(10));
        assert!(run.take_ready().is_empty());
        recorded.check("timed_budgets", &run.stats(), None, false);
        advance_timers(ms(5));
        let outcomes = run.take_to_end();
        let stats = run.stats();
        assert_eq!(outcomes.len(), 5, "2 cancelled, 2 late, the deadline");
        assert_eq!((stats.cancelled, stats.late, stats.deadline_passed), (2, 2, true));
        // Item 1 waited 10 ms for its token; then both workers were busy.
        assert_eq!(stats.rate_waited, ms(10));
        recorded.check("timed_budgets", &stats, None, false);
        drop(outcomes);
        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Point 30: updates are batched. A poll that changes nothing calls
    /// nothing; what happens while the consumer takes one output after
    /// another is published when it next waits, or sees the end.
    fn updates_are_batched(mode) {
        let recorded = Recorded::new();
        let gates = Gates::new();
        let mut run = drive!(mode, recorded.scope(|| gates.source(4).bounded(4, 0).metrics("batched")));
        assert!(run.take_ready().is_empty());
        let calls = recorded.calls();
        assert!(run.poll().is_pending());
        assert_eq!(recorded.calls(), calls, "nothing changed, nothing called");

        let before = recorded.calls_of("bounded_completed_total", "batched");
        gates.open_all();
        assert_eq!(run.take_to_end().len(), 4);
        let increments = recorded.calls_of("bounded_completed_total", "batched") - before;
        // In place, the stream publishes when its poll ends pending or with
        // the end: the four completions are one increment. Spawned, the
        // section that wakes the waiting consumer publishes (one completion),
        // and the rest come when the consumer sees the end.
        assert_eq!(increments, if mode.is_spawned() { 2 } else { 1 });
        assert_eq!(recorded.counter("bounded_completed_total", "batched", ""), Some(4));
        recorded.check("batched", &run.stats(), None, false);
    }

    /// Point 30: without `.metrics`, nothing is registered, described or
    /// called, whatever the stream does.
    fn a_stream_without_metrics_publishes_nothing(mode) {
        reset_clock();
        let recorded = Recorded::new();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            recorded.scope(|| tenants(&gates, &[0, 1, 0], &[1, 2, 3]).bounded(2, 1).per_key(1).timed().clock(now))
        );
        let limits = run.limits();
        assert!(run.take_ready().is_empty());
        limits.set_workers(3);
        gates.open_all();
        assert_eq!(recorded.scope(|| run.take_to_end()).len(), 3);
        assert!(recorded.series().is_empty(), "{:?}", recorded.series());
        assert!(recorded.descriptions().is_empty());
        assert_eq!(recorded.calls(), 0);
    }
}

both_modes! {
    /// Point 30: a dropped stream leaves no work in flight on the gauges;
    /// its limits and totals stay.
    fn a_dropped_streams_gauges_of_work_in_flight_go_to_zero(mode) {
        let recorded = Recorded::new();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            recorded.scope(|| tenants(&gates, &[0, 0, 1, 1, 2], &[1, 1, 1, 1, 1]).bounded(2, 2).per_key(1).max_running_weight(10).metrics("dropped"))
        );
        assert!(run.take_ready().is_empty());
        let stats = run.stats();
        recorded.check("dropped", &stats, None, true);
        assert!(stats.active > 0 && stats.waiting > 0 && stats.keys_running > 0 && stats.blocked_by_key > 0);
        run.drop_stream();
        for name in ["bounded_active", "bounded_waiting", "bounded_held", "bounded_keys_running", "bounded_blocked_by_key", "bounded_running_weight", "bounded_waiting_weight"] {
            assert_eq!(recorded.gauge(name, "dropped"), Some(Some(0.0)), "{name}");
        }
        assert_eq!(recorded.gauge("bounded_workers_limit", "dropped"), Some(Some(2.0)));
        assert_eq!(recorded.counter("bounded_pulled_total", "dropped", ""), Some(stats.pulled));
    }
}

/// Point 30: each name is described with its kind and unit.
#[test]
fn every_name_is_described_with_its_unit() {
    let recorded = Recorded::new();
    let gates = Gates::new();
    drop(recorded.scope(|| gates.source(1).bounded(1, 0).timed().metrics("described")));
    let descriptions = recorded.descriptions();
    let count = Some(Unit::Count);
    let expected = [
        ("bounded_active", ("gauge", count)),
        ("bounded_waiting", ("gauge", count)),
        ("bounded_held", ("gauge", count)),
        ("bounded_workers_limit", ("gauge", count)),
        ("bounded_waiting_limit", ("gauge", count)),
        ("bounded_keys_running", ("gauge", count)),
        ("bounded_blocked_by_key", ("gauge", count)),
        ("bounded_running_weight", ("gauge", None)),
        ("bounded_waiting_weight", ("gauge", None)),
        ("bounded_pulled_total", ("counter", count)),
        ("bounded_completed_total", ("counter", count)),
        ("bounded_expired_total", ("counter", count)),
        ("bounded_failed_total", ("counter", count)),
        ("bounded_rejected_total", ("counter", count)),
        ("bounded_late_total", ("counter", count)),
        ("bounded_cancelled_total", ("counter", count)),
        ("bounded_deadlines_passed_total", ("counter", count)),
        (
            "bounded_rate_waited_nanoseconds_total",
            ("counter", Some(Unit::Nanoseconds)),
        ),
        ("bounded_limit_changes_total", ("counter", count)),
        ("bounded_wait_seconds", ("histogram", Some(Unit::Seconds))),
        ("bounded_run_seconds", ("histogram", Some(Unit::Seconds))),
        ("bounded_held_seconds", ("histogram", Some(Unit::Seconds))),
    ];
    let expected: std::collections::BTreeMap<String, _> = expected
        .into_iter()
        .map(|(name, kind)| (name.to_string(), kind))
        .collect();
    assert_eq!(descriptions, expected);
}

/// Points 11 and 30: `.metrics` must come before the first poll (the totals
/// and the histograms count from the start), and says so at the caller.
#[test]
#[should_panic(expected = "`metrics` must be called before the stream is first polled")]
fn metrics_after_the_first_poll_panics() {
    let mut stream = stream::iter(0..3u32)
        .map(|n| async move { n })
        .bounded(1, 0);
    let _ = support::poll_once(&mut stream);
    let _ = stream.metrics("late");
}

/// Point 30: a builder call after `.metrics` that adds series (here
/// `timed`'s histograms) registers them with the recorder `.metrics` did; if
/// another recorder is current by then, it says so at the caller's line
/// rather than sending them elsewhere.
#[test]
#[should_panic(
    expected = "`timed` after `.metrics` must run with the recorder `.metrics` registered with"
)]
fn a_builder_call_after_metrics_with_another_recorder_panics() {
    let recorded = Recorded::new();
    let stream = recorded.scope(|| {
        stream::iter(0..3u32)
            .map(|n| async move { n })
            .bounded(1, 0)
            .metrics("scoped")
    });
    // The local recorder's scope has ended: the current one is another.
    drop(stream.timed());
}

/// Point 30: in the same scope, the order of the builder calls does not
/// matter; each series goes to the one recorder.
#[test]
fn builder_calls_after_metrics_in_its_scope_register_with_its_recorder() {
    let recorded = Recorded::new();
    let gates = Gates::new();
    let run = recorded.scope(|| gates.source(2).bounded(1, 0).metrics("ordered").timed());
    drop(run);
    assert!(
        recorded
            .series()
            .iter()
            .any(|series| series.starts_with("bounded_run_seconds{stream=ordered"))
    );
}

/// Point 30: labels of the caller's own, instead of `stream = name`.
#[test]
fn metrics_with_labels_labels_every_series_as_given() {
    let recorded = Recorded::new();
    let labels = [("pipeline", "imports"), ("tenant", "a")];
    let mut stream = recorded.scope(|| {
        stream::iter(0..3u32)
            .map(|n| async move { n })
            .bounded(2, 0)
            .metrics_with_labels(&labels)
    });
    assert_eq!(support::drain_ready(&mut stream).len(), 3);
    let series = recorded.series();
    let completed = "bounded_completed_total{pipeline=imports,tenant=a}";
    assert!(series.iter().any(|name| name == completed), "{series:?}");
    assert!(
        series.iter().all(|name| !name.contains("stream=")),
        "{series:?}"
    );
}

/// Point 30: while the consumer takes one output after another, the stream
/// publishes every 64th poll, not every poll; the end publishes the rest.
#[test]
fn a_busy_consumer_has_the_stream_publish_every_64_polls() {
    let recorded = Recorded::new();
    let mut stream = recorded.scope(|| {
        stream::iter(0..200u32)
            .map(|n| async move { n })
            .bounded(1, 0)
            .metrics("busy")
    });
    let completed = || recorded.counter("bounded_completed_total", "busy", "");
    for _ in 0..63 {
        assert!(matches!(
            support::poll_once(&mut stream),
            Poll::Ready(Some(_))
        ));
    }
    assert_eq!(
        completed(),
        Some(0),
        "no publish while the consumer is busy"
    );
    assert!(matches!(
        support::poll_once(&mut stream),
        Poll::Ready(Some(_))
    ));
    assert_eq!(
        completed(),
        Some(stream.stats().completed),
        "the 64th poll publishes"
    );
    while let Poll::Ready(Some(_)) = support::poll_once(&mut stream) {}
    assert_eq!(completed(), Some(200), "the end publishes what is left");
}

both_modes! {
    /// Point 35 exported: `TenantShares::publish` sets each held tenant's
    /// gauges and counters to what its `stats()` says, labelled by tenant.
    fn tenant_series_have_the_values_tenant_stats_report(mode) {
        use bounded_buffered::Tenants;
        let recorded = Recorded::new();
        let gates = Gates::new();
        let tenants = Tenants::new()
            .with('a', 1, gates.range_source(0..3).boxed())
            .with('b', 2, gates.range_source(10..13).boxed());
        let shares = tenants.shares();
        let mut run = drive!(mode, tenants.bounded(2, 1));
        assert!(run.take_ready().is_empty());
        gates.open(0);
        assert_eq!(run.take_ready(), [0]);
        recorded.scope(|| shares.publish("jobs"));
        for stats in shares.stats() {
            let labels = format!("tenant={}", stats.tenant);
            let gauge = |name| recorded.gauge_with(name, "jobs", &labels).flatten();
            assert_eq!(gauge("bounded_tenant_running"), Some(stats.running as f64));
            assert_eq!(gauge("bounded_tenant_waiting"), Some(stats.waiting as f64));
            let counter = |name| recorded.counter(name, "jobs", &labels);
            assert_eq!(counter("bounded_tenant_started_total"), Some(stats.started));
            assert_eq!(counter("bounded_tenant_completed_total"), Some(stats.completed));
        }
        assert_eq!(recorded.counter("bounded_tenant_completed_total", "jobs", "tenant=a"), Some(1));
        assert_eq!(recorded.series().len(), 8, "four series per tenant held");
        gates.open_all();
        for id in [1, 2, 11, 12] {
            gates.open(id);
        }
        assert_eq!(run.take_to_end().len(), 5);
        run.drop_stream();
    }
}
