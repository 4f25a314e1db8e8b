//! A `metrics` recorder that keeps everything it is told, for the tests of
//! `.metrics(name)`: each series' value (a counter's total, a gauge's last
//! value, every value a histogram got), each name's description, and how many
//! calls the handles took, so a test can check that updates are batched.
//!
//! Registered per test with `metrics::with_local_recorder` ([`Recorded::scope`]):
//! the stream's handles are made by `.metrics(..)`, so building the stream in
//! that scope ties them to this recorder, wherever the stream then runs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bounded_buffered::{Histogram as Distribution, Stats, Timings};
use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};

use super::gate::lock;

/// Everything a recorder was told.
#[derive(Clone, Default)]
pub struct Recorded {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// By series: the name, then its labels in order, as `name{k=v,..}`.
    series: Mutex<BTreeMap<String, Series>>,
    descriptions: Mutex<BTreeMap<String, Description>>,
    /// Calls of the handles' methods (increment, set, record, record_many).
    calls: Arc<AtomicUsize>,
}

/// A name's description: its kind, unit and text.
type Description = (&'static str, Option<Unit>, String);

#[derive(Clone)]
enum Series {
    Counter(Arc<Cell>),
    Gauge(Arc<Cell>),
    Histogram(Arc<Cell>),
}

/// One series' state, whatever its kind, counting the calls made on it.
#[derive(Default)]
struct Cell {
    total: AtomicU64,
    /// A gauge's value; `None` until set.
    gauge: Mutex<Option<f64>>,
    values: Mutex<Vec<f64>>,
    /// Calls on this series, and on every series of the recorder.
    own_calls: AtomicUsize,
    calls: Arc<AtomicUsize>,
}

impl Cell {
    fn new(calls: &Arc<AtomicUsize>) -> Arc<Self> {
        Arc::new(Self {
            calls: Arc::clone(calls),
            ..Self::default()
        })
    }

    fn called(&self) {
        self.own_calls.fetch_add(1, Ordering::SeqCst);
        self.calls.fetch_add(1, Ordering::SeqCst);
    }
}

impl CounterFn for Cell {
    fn increment(&self, value: u64) {
        self.called();
        self.total.fetch_add(value, Ordering::SeqCst);
    }

    fn absolute(&self, value: u64) {
        self.called();
        self.total.fetch_max(value, Ordering::SeqCst);
    }
}

impl GaugeFn for Cell {
    fn increment(&self, value: f64) {
        self.called();
        let mut gauge = lock(&self.gauge);
        *gauge = Some(gauge.unwrap_or(0.0) + value);
    }

    fn decrement(&self, value: f64) {
        GaugeFn::increment(self, -value);
    }

    fn set(&self, value: f64) {
        self.called();
        *lock(&self.gauge) = Some(value);
    }
}

impl HistogramFn for Cell {
    fn record(&self, value: f64) {
        self.record_many(value, 1);
    }

    fn record_many(&self, value: f64, count: usize) {
        self.called();
        lock(&self.values).extend(std::iter::repeat_n(value, count));
    }
}

/// The series key as the tests name it: `name{k=v,k=v}`, labels in the order
/// given.
fn series_key(key: &Key) -> String {
    let labels: Vec<String> = key
        .labels()
        .map(|label| format!("{}={}", label.key(), label.value()))
        .collect();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl Recorded {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` with this recorder as the thread's current one: what `f`
    /// registers (a stream's `.metrics(..)`) publishes here from then on.
    pub fn scope<T>(&self, f: impl FnOnce() -> T) -> T {
        metrics::with_local_recorder(self, f)
    }

    /// Every series registered, as `name{labels}`.
    pub fn series(&self) -> Vec<String> {
        lock(&self.inner.series).keys().cloned().collect()
    }

    /// Every name described, with its kind (`counter`, `gauge`,
    /// `histogram`) and unit.
    pub fn descriptions(&self) -> BTreeMap<String, (&'static str, Option<Unit>)> {
        lock(&self.inner.descriptions)
            .iter()
            .map(|(name, (kind, unit, _))| (name.clone(), (*kind, *unit)))
            .collect()
    }

    /// Calls the handles took so far.
    pub fn calls(&self) -> usize {
        self.inner.calls.load(Ordering::SeqCst)
    }

    /// Calls the handle of series `name` of `stream` took so far.
    pub fn calls_of(&self, name: &str, stream: &str) -> usize {
        let key = stream_key(name, stream, "");
        let cell = match self.get(&key).unwrap_or_else(|| panic!("no {key}")) {
            Series::Counter(cell) | Series::Gauge(cell) | Series::Histogram(cell) => cell,
        };
        cell.own_calls.load(Ordering::SeqCst)
    }

    fn get(&self, key: &str) -> Option<Series> {
        lock(&self.inner.series).get(key).cloned()
    }

    /// The counter `name` of stream `stream` (with `labels` after the
    /// stream's), if registered.
    pub fn counter(&self, name: &str, stream: &str, labels: &str) -> Option<u64> {
        let key = stream_key(name, stream, labels);
        match self.get(&key)? {
            Series::Counter(cell) => Some(cell.total.load(Ordering::SeqCst)),
            _ => panic!("{key} is not a counter"),
        }
    }

    /// The gauge `name` of `stream`: `None` if not registered, `Some(None)`
    /// if never set.
    pub fn gauge(&self, name: &str, stream: &str) -> Option<Option<f64>> {
        let key = stream_key(name, stream, "");
        match self.get(&key)? {
            Series::Gauge(cell) => Some(*lock(&cell.gauge)),
            _ => panic!("{key} is not a gauge"),
        }
    }

    /// The gauge `name` of `stream` with `labels` after the stream's (as
    /// [`Recorded::gauge`]).
    pub fn gauge_with(&self, name: &str, stream: &str, labels: &str) -> Option<Option<f64>> {
        let key = stream_key(name, stream, labels);
        match self.get(&key)? {
            Series::Gauge(cell) => Some(*lock(&cell.gauge)),
            _ => panic!("{key} is not a gauge"),
        }
    }

    /// Every value the histogram `name` of `stream` got, in order, if
    /// registered.
    pub fn histogram(&self, name: &str, stream: &str) -> Option<Vec<f64>> {
        let key = stream_key(name, stream, "");
        match self.get(&key)? {
            Series::Histogram(cell) => Some(lock(&cell.values).clone()),
            _ => panic!("{key} is not a histogram"),
        }
    }

    /// Checks that every gauge and counter of `stream` has exactly the value
    /// `stats` reports (the gauges of keys and weights only if `admission`),
    /// and, if `timings` is given, that each histogram holds exactly the
    /// durations its distribution counts: the same count, minimum, maximum
    /// and mean, to the nanosecond.
    pub fn check(&self, stream: &str, stats: &Stats, timings: Option<&Timings>, admission: bool) {
        let count = |value: usize| Some(Some(value as f64));
        let gauges = [
            ("bounded_active", count(stats.active)),
            ("bounded_waiting", count(stats.waiting)),
            ("bounded_held", count(stats.held)),
            ("bounded_workers_limit", count(stats.workers_limit)),
            ("bounded_waiting_limit", count(stats.waiting_limit)),
        ];
        for (name, expected) in gauges {
            assert_eq!(self.gauge(name, stream), expected, "{name}: {stats:?}");
        }
        if admission {
            let weights = [
                ("bounded_keys_running", count(stats.keys_running)),
                ("bounded_blocked_by_key", count(stats.blocked_by_key)),
                (
                    "bounded_running_weight",
                    Some(Some(stats.running_weight as f64)),
                ),
                (
                    "bounded_waiting_weight",
                    Some(Some(stats.waiting_weight as f64)),
                ),
            ];
            for (name, expected) in weights {
                assert_eq!(self.gauge(name, stream), expected, "{name}: {stats:?}");
            }
        }
        let counters = [
            ("bounded_pulled_total", stats.pulled),
            ("bounded_completed_total", stats.completed),
            ("bounded_expired_total", stats.expired),
            ("bounded_rejected_total", stats.rejected),
            ("bounded_late_total", stats.late),
            ("bounded_cancelled_total", stats.cancelled),
            (
                "bounded_deadlines_passed_total",
                u64::from(stats.deadline_passed),
            ),
            (
                "bounded_rate_waited_nanoseconds_total",
                u64::try_from(stats.rate_waited.as_nanos()).unwrap(),
            ),
        ];
        for (name, expected) in counters {
            assert_eq!(
                self.counter(name, stream, ""),
                Some(expected),
                "{name}: {stats:?}"
            );
        }
        if let Some(timings) = timings {
            let histograms = [
                ("bounded_wait_seconds", &timings.wait),
                ("bounded_run_seconds", &timings.run),
                ("bounded_held_seconds", &timings.held),
            ];
            for (name, distribution) in histograms {
                let values = self
                    .histogram(name, stream)
                    .unwrap_or_else(|| panic!("no {name}"));
                let (count, min, max, mean) = summary(&values);
                let (expected_count, expected_min, expected_max, expected_mean) =
                    expected_summary(distribution);
                assert_eq!(count, expected_count, "{name}: every duration, once");
                // Each duration is exported at the top of its bucket of the
                // stream's own histogram: never below, at most 1/64 above.
                for (what, exported, exact) in [
                    ("min", min, expected_min),
                    ("max", max, expected_max),
                    ("mean", mean, expected_mean),
                ] {
                    let within = exported >= exact && exported <= exact + exact / 64;
                    assert!(within, "{name} {what}: {exported:?} for {exact:?}");
                }
            }
        }
    }
}

fn stream_key(name: &str, stream: &str, labels: &str) -> String {
    let more = if labels.is_empty() {
        String::new()
    } else {
        format!(",{labels}")
    };
    format!("{name}{{stream={stream}{more}}}")
}

/// Seconds as the exporter recorded them, back to whole nanoseconds.
pub fn nanos(seconds: f64) -> u64 {
    (seconds * 1e9).round() as u64
}

/// Count, minimum, maximum and mean (rounded down) of recorded seconds, in
/// nanoseconds, as a [`Distribution`] reports them.
fn summary(values: &[f64]) -> (u64, Duration, Duration, Duration) {
    let nanos: Vec<u64> = values.iter().copied().map(nanos).collect();
    let count = nanos.len() as u64;
    if count == 0 {
        return (0, Duration::ZERO, Duration::ZERO, Duration::ZERO);
    }
    let sum: u128 = nanos.iter().map(|&n| u128::from(n)).sum();
    (
        count,
        Duration::from_nanos(*nanos.iter().min().unwrap()),
        Duration::from_nanos(*nanos.iter().max().unwrap()),
        Duration::from_nanos((sum / u128::from(count)) as u64),
    )
}

fn expected_summary(distribution: &Distribution) -> (u64, Duration, Duration, Duration) {
    (
        distribution.count(),
        distribution.min(),
        distribution.max(),
        distribution.mean(),
    )
}

impl Recorder for Recorded {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.describe("counter", key, unit, description);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.describe("gauge", key, unit, description);
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.describe("histogram", key, unit, description);
    }

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        match self.register(key, Series::Counter) {
            Series::Counter(cell) => Counter::from_arc(cell),
            _ => panic!("{key:?} registered as another kind"),
        }
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        match self.register(key, Series::Gauge) {
            Series::Gauge(cell) => Gauge::from_arc(cell),
            _ => panic!("{key:?} registered as another kind"),
        }
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        match self.register(key, Series::Histogram) {
            Series::Histogram(cell) => Histogram::from_arc(cell),
            _ => panic!("{key:?} registered as another kind"),
        }
    }
}

impl Recorded {
    fn describe(&self, kind: &'static str, key: KeyName, unit: Option<Unit>, text: SharedString) {
        lock(&self.inner.descriptions)
            .insert(key.as_str().to_string(), (kind, unit, text.into_owned()));
    }

    fn register(&self, key: &Key, make: impl FnOnce(Arc<Cell>) -> Series) -> Series {
        lock(&self.inner.series)
            .entry(series_key(key))
            .or_insert_with(|| make(Cell::new(&self.inner.calls)))
            .clone()
    }
}
