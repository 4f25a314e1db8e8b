//! Feature `metrics`: a stream's [`Stats`] and timings published through the
//! `metrics` facade, under fixed names with the label `stream = name` (see
//! [`BoundedBuffered::metrics`](crate::BoundedBuffered::metrics) for the list,
//! and why the names are fixed).
//!
//! Nothing here runs per item. The stream publishes when it comes to rest
//! (in place, a poll that returns `Pending` or the end; spawned, a lock
//! section that leaves the consumer waiting, or the end of the run) and
//! otherwise once per [`PUBLISH_EVERY`] polls or sections ([`Metrics::publish`]):
//! it hands over a snapshot of its stats, and the exporter sets each gauge
//! that moved since the last publish and adds to each counter what its total
//! gained. So ten items completed between two publishes are one
//! `increment(10)`, and a publish that changed nothing calls nothing. The
//! histograms' samples are counted per bucket of the stream's own histograms
//! ([`Samples`]) and recorded at the next publish, one `record_many` per
//! bucket hit, at the bucket's top (at most 1/64 above the sample, never
//! below); so the calls follow the buckets a run's durations touch, not its
//! items.
//!
//! The handles are registered, and the names described, when `.metrics` is
//! called (and when a later builder call adds timings or keys or weights):
//! with the recorder current then, the global one or the one that
//! `metrics::with_local_recorder` set.

use metrics::{
    Counter, Gauge, Histogram, Label, Unit, describe_counter, describe_gauge, describe_histogram,
};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use crate::clock::Clocking;
use crate::observe::Kind;
use crate::stats::Stats;
use crate::timings::{BUCKETS_IN_ALL, top};

/// Bucket bounds, in seconds, for the histograms `.metrics` exports
/// (`bounded_wait_seconds`, `bounded_run_seconds`, `bounded_held_seconds`):
/// from 100 µs to a minute, about three per power of ten. Without buckets
/// the Prometheus exporter renders a histogram as a summary, whose quantiles
/// cannot be aggregated across streams or instances.
///
/// With `metrics-exporter-prometheus`, give them to the builder:
/// `PrometheusBuilder::new().set_buckets_for_metric(Matcher::Prefix("bounded_".into()),
/// bounded_buffered::HISTOGRAM_BUCKETS)`.
///
/// # Examples
///
/// ```
/// let buckets = bounded_buffered::HISTOGRAM_BUCKETS;
/// assert!(buckets.is_sorted() && buckets[0] == 0.000_1 && buckets[buckets.len() - 1] == 60.0);
/// ```
pub const HISTOGRAM_BUCKETS: &[f64] = &[
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

/// The gauges the stream publishes, in [`gauge_values`] order: the counts,
/// then those of the key rule and of the weight budgets.
const GAUGES: [(&str, Option<Unit>, &str); 7] = [
    (
        "bounded_active",
        Some(Unit::Count),
        "Futures started and not yet complete.",
    ),
    (
        "bounded_waiting",
        Some(Unit::Count),
        "Items pulled from the source and not yet started.",
    ),
    (
        "bounded_held",
        Some(Unit::Count),
        "Complete outputs not yet handed to the consumer.",
    ),
    (
        "bounded_keys_running",
        Some(Unit::Count),
        "With `per_key`: keys with an item running.",
    ),
    (
        "bounded_blocked_by_key",
        Some(Unit::Count),
        "With `per_key`: waiting items whose key is at its limit.",
    ),
    (
        "bounded_running_weight",
        None,
        "With weight budgets: the weight of the items running, each counted at most the budget.",
    ),
    (
        "bounded_waiting_weight",
        None,
        "With weight budgets: the weight of the items waiting, each counted at most the budget.",
    ),
];

/// The first gauge of the key rule, and of the weight budgets.
const KEY_GAUGES: usize = 3;
const WEIGHT_GAUGES: usize = 5;

/// The limits' gauges, `workers` then `waiting`: set by [`LimitSeries`],
/// where a limit changes.
const LIMIT_GAUGES: [(&str, &str); 2] = [
    ("bounded_workers_limit", "The `workers` limit in force."),
    ("bounded_waiting_limit", "The `waiting` limit in force."),
];

/// The counters the stream publishes, in [`totals`] order.
const COUNTERS: [(&str, &str); 9] = [
    ("bounded_pulled_total", "Items taken from the source."),
    (
        "bounded_completed_total",
        "Futures that completed, whether or not their output was taken.",
    ),
    (
        "bounded_expired_total",
        "Waiting items that expired instead of starting (`max_wait`).",
    ),
    (
        "bounded_failed_total",
        "Runs that failed fast (`try_bounded`): the error, from the source or a future, that ended the run.",
    ),
    (
        "bounded_rejected_total",
        "Items handed back unstarted by `shed`.",
    ),
    (
        "bounded_late_total",
        "Items never started because a deadline passed first, the run's (`deadline`) or their own (`item_deadlines`).",
    ),
    (
        "bounded_cancelled_total",
        "Items cancelled at the run's deadline: started, and not seen to complete by then.",
    ),
    (
        "bounded_deadlines_passed_total",
        "Runs stopped at their deadline (`deadline`).",
    ),
    (
        "bounded_rate_waited_nanoseconds_total",
        "With `rate`: time a start the counts allowed waited for a token, in all.",
    ),
];

/// The limit changes' counter, counted by [`LimitSeries`].
const LIMIT_CHANGES_TOTAL: (&str, &str) = (
    "bounded_limit_changes_total",
    "Changes of the `workers` or `waiting` limit in force (label `limit`), up or down (label `direction`), by a `Limits` handle or the adaptive controller.",
);

/// The series of `bounded_limit_changes_total`: `workers` up and down,
/// `waiting` up and down.
const LIMIT_CHANGES: [(&str, &str); 4] = [
    ("workers", "up"),
    ("workers", "down"),
    ("waiting", "up"),
    ("waiting", "down"),
];

/// The histograms, in [`Kind`] order.
const HISTOGRAMS: [(&str, &str); 3] = [
    (
        "bounded_wait_seconds",
        "From the pull to the start, per started item (with `timed`).",
    ),
    (
        "bounded_run_seconds",
        "From the start to the completion, per completed item (with `timed`).",
    ),
    (
        "bounded_held_seconds",
        "From the completion (or, for an item not run, its expiry or rejection) to the hand-out, per outcome handed out (with `timed`).",
    ),
];

/// A stream's exporter, if `.metrics` was called: one pointer in the stream,
/// checked once per publish.
#[derive(Default)]
pub(crate) struct Metrics(Option<Box<Exporter>>);

/// Flat arrays, compared element by element at each publish: the handles
/// and what each last showed, side by side.
struct Exporter {
    /// `stream = name`, or the caller's labels, for what is registered later.
    labels: Vec<Label>,
    /// The recorder the series were registered with (its address), which a
    /// later builder call must register with too ([`Metrics::check_recorder`]).
    recorder: usize,
    /// Each gauge: registered, or a no-op handle for those of keys and
    /// weights on a stream without them (whose values stay 0).
    gauges: [Gauge; GAUGES.len()],
    /// The value each gauge was last set to; `u64::MAX` before the first.
    shown: [u64; GAUGES.len()],
    counters: [Counter; COUNTERS.len()],
    /// The total each counter was last brought to.
    published: [u64; COUNTERS.len()],
    /// Once the stream is timed.
    histograms: Option<[Histogram; 3]>,
    /// The limits' series, shared with the limits' settings.
    limits: Arc<LimitSeries>,
    /// Chances to publish left before one is taken at work ([`Metrics::due`]).
    countdown: u32,
}

/// How many polls in place (spawned: lock sections) the exporter may lag the
/// stream while the consumer is busy taking outputs.
pub(crate) const PUBLISH_EVERY: u32 = 64;

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(exporter) => f
                .debug_tuple("Metrics")
                .field(&exporter.labels[0].value())
                .finish(),
            None => f.write_str("Metrics(off)"),
        }
    }
}

impl Metrics {
    /// Registers the stream's metrics under `name` with the current recorder,
    /// describing each name: the counts, limits and totals, and what else the
    /// stream has so far (see [`Metrics::adopt`]).
    pub(crate) fn new(
        labels: Vec<Label>,
        clock: &mut impl Clocking,
        (keyed, weighted): (bool, bool),
    ) -> Self {
        describe();
        let gauges = std::array::from_fn(|index| match index < KEY_GAUGES {
            true => metrics::gauge!(GAUGES[index].0, labels.clone()),
            false => Gauge::noop(),
        });
        let counters = COUNTERS.map(|(name, _)| metrics::counter!(name, labels.clone()));
        let limits = Arc::new(LimitSeries::new(&labels));
        let mut metrics = Self(Some(Box::new(Exporter {
            recorder: current_recorder(),
            labels,
            gauges,
            shown: [u64::MAX; GAUGES.len()],
            counters,
            published: [0; COUNTERS.len()],
            histograms: None,
            limits,
            countdown: PUBLISH_EVERY,
        })));
        metrics.adopt(clock, (keyed, weighted));
        metrics
    }

    #[inline(always)]
    pub(crate) fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Whether to publish now: always once the stream is at rest (the
    /// consumer found nothing to take, or the stream ended), otherwise every
    /// [`PUBLISH_EVERY`]th time it asks. A stream whose consumer takes one
    /// output after another pays for a publish once per 64 of them, not per
    /// output.
    #[inline]
    pub(crate) fn due(&mut self, at_rest: bool) -> bool {
        let Some(exporter) = &mut self.0 else {
            return false;
        };
        exporter.countdown -= 1;
        if at_rest || exporter.countdown == 0 {
            exporter.countdown = PUBLISH_EVERY;
            return true;
        }
        false
    }

    /// Panics, at the caller's line, if `method` (a builder call after
    /// `.metrics`, which registers what it adds) meets another recorder than
    /// `.metrics` did: its series would go elsewhere than the stream's
    /// others (say, a local recorder's scope ended in between).
    #[track_caller]
    pub(crate) fn check_recorder(&self, method: &str) {
        if let Some(exporter) = &self.0 {
            assert!(
                exporter.recorder == current_recorder(),
                "`{method}` after `.metrics` must run with the recorder `.metrics` registered with \
                 in place (the same `metrics::with_local_recorder` scope, or the global one): \
                 call `.metrics` last, or keep the recorder"
            );
        }
    }

    /// The limits' series, for the limits' settings to publish to.
    pub(crate) fn limit_series(&self) -> Option<Arc<LimitSeries>> {
        self.0.as_ref().map(|exporter| Arc::clone(&exporter.limits))
    }

    /// A builder call gave the stream timings (`clock` is timed), or keys or
    /// weights: registers what they add, and has the clock keep its
    /// durations from now on. Nothing if `.metrics` was not called.
    pub(crate) fn adopt(&mut self, clock: &mut impl Clocking, (keyed, weighted): (bool, bool)) {
        let Some(exporter) = &mut self.0 else {
            return;
        };
        let ranges = [
            (keyed, KEY_GAUGES..WEIGHT_GAUGES),
            (weighted, WEIGHT_GAUGES..GAUGES.len()),
        ];
        for (applies, range) in ranges {
            for index in range.filter(|_| applies) {
                exporter.gauges[index] = metrics::gauge!(GAUGES[index].0, exporter.labels.clone());
                // Shown afresh at the next publish.
                exporter.shown[index] = u64::MAX;
            }
        }
        if exporter.histograms.is_none() && clock.tap() {
            let labels = &exporter.labels;
            exporter.histograms =
                Some(HISTOGRAMS.map(|(name, _)| metrics::histogram!(name, labels.clone())));
        }
    }

    /// Publishes what changed since the last call: the gauges that moved,
    /// what each total gained, the durations the clock kept. `stats` is the
    /// stream's snapshot now, `failed` whether the run failed fast, `changes`
    /// the limit changes so far.
    #[inline(never)]
    pub(crate) fn publish(&mut self, stats: &Stats, failed: bool, clock: &mut impl Clocking) {
        let Some(exporter) = &mut self.0 else {
            return;
        };
        let Exporter {
            gauges,
            shown,
            counters,
            published,
            histograms,
            ..
        } = &mut **exporter;
        for ((gauge, shown), value) in gauges.iter().zip(shown).zip(gauge_values(stats)) {
            if value != *shown {
                // Counts and weights far below 2^53: exact as an `f64`.
                gauge.set(value as f64);
                *shown = value;
            }
        }
        let totals = totals(stats, failed);
        for ((counter, published), total) in counters.iter().zip(published).zip(totals) {
            if total > *published {
                counter.increment(total - *published);
                *published = total;
            }
        }
        if let Some(histograms) = histograms {
            clock.drain_samples(&mut |kind, nanos, count| {
                histograms[kind].record_many(nanos as f64 / 1e9, count);
            });
        }
    }
}

/// The stream is gone, and so is everything it had in flight: its gauges of
/// counts and weights go to 0 (the limits and the totals stay as they were),
/// so a scrape does not show work that no longer exists. In place this is the
/// stream's drop; spawned, the drop of its state, once the consumer and every
/// task let go of it.
impl Drop for Exporter {
    fn drop(&mut self) {
        // Whoever changes a limit from now on (a handle kept after the
        // stream) publishes nothing.
        self.limits.retire();
        for index in 0..GAUGES.len() {
            // Never shown, or 0 already: nothing to take back.
            if self.shown[index] != 0 && self.shown[index] != u64::MAX {
                self.gauges[index].set(0.0);
                self.shown[index] = 0;
            }
        }
    }
}

/// The gauges' values, in [`GAUGES`] order.
fn gauge_values(stats: &Stats) -> [u64; GAUGES.len()] {
    let count = |count: usize| count as u64;
    [
        count(stats.active),
        count(stats.waiting),
        count(stats.held),
        count(stats.keys_running),
        count(stats.blocked_by_key),
        stats.running_weight,
        stats.waiting_weight,
    ]
}

/// The counters' totals, in [`Exporter::counters`] order.
fn totals(stats: &Stats, failed: bool) -> [u64; COUNTERS.len()] {
    [
        stats.pulled,
        stats.completed,
        stats.expired,
        u64::from(failed),
        stats.rejected,
        stats.late,
        stats.cancelled,
        u64::from(stats.deadline_passed),
        u64::try_from(stats.rate_waited.as_nanos()).unwrap_or(u64::MAX),
    ]
}

/// The address of the recorder current now (global, local, or the no-op
/// one): what tells two apart.
fn current_recorder() -> usize {
    metrics::with_recorder(|recorder| std::ptr::from_ref(recorder).cast::<()>() as usize)
}

/// Describes every name, with its unit, to the current recorder: once per
/// `.metrics` call, so that the descriptions reach the recorder the handles
/// are registered with (a process-wide once would miss a recorder installed
/// after the first stream, and every local one after the first).
fn describe() {
    for (name, unit, description) in GAUGES {
        match unit {
            Some(unit) => describe_gauge!(name, unit, description),
            None => describe_gauge!(name, description),
        }
    }
    for (name, description) in LIMIT_GAUGES {
        describe_gauge!(name, Unit::Count, description);
    }
    for (name, description) in COUNTERS.into_iter().chain([LIMIT_CHANGES_TOTAL]) {
        // The one counter of time: in nanoseconds, the clock's resolution (a
        // counter counts in whole numbers).
        let unit = if name.ends_with("_nanoseconds_total") {
            Unit::Nanoseconds
        } else {
            Unit::Count
        };
        describe_counter!(name, unit, description);
    }
    for (name, description) in HISTOGRAMS {
        describe_histogram!(name, Unit::Seconds, description);
    }
}

/// The limits' gauges and change counters. A limit changes in the limits'
/// settings (a handle sets it, or the controller), and stats report it from
/// there at once, in place between two polls too: so these are published
/// there, by whoever changes it, as it changes, not by the stream's
/// publish. Shared by the stream's exporter and the settings; retired with
/// the exporter, so a handle kept after the stream publishes nothing.
pub(crate) struct LimitSeries {
    /// `bounded_workers_limit`, `bounded_waiting_limit`.
    gauges: [Gauge; 2],
    /// `bounded_limit_changes_total`, in [`LIMIT_CHANGES`] order.
    changes: [Counter; 4],
    live: AtomicBool,
}

impl LimitSeries {
    fn new(labels: &[Label]) -> Self {
        Self {
            gauges: LIMIT_GAUGES.map(|(name, _)| metrics::gauge!(name, labels.to_vec())),
            changes: LIMIT_CHANGES.map(|(limit, direction)| {
                let mut labels = labels.to_vec();
                labels.push(Label::new("limit", limit));
                labels.push(Label::new("direction", direction));
                metrics::counter!(LIMIT_CHANGES_TOTAL.0, labels)
            }),
            live: AtomicBool::new(true),
        }
    }

    /// The limits in force are `(workers, waiting)`.
    pub(crate) fn show(&self, (workers, waiting): (usize, usize)) {
        if self.live.load(Relaxed) {
            // Far below 2^53: exact as an `f64`.
            self.gauges[0].set(workers as f64);
            self.gauges[1].set(waiting as f64);
        }
    }

    /// The limits in force went from `old` to `new`: each that moved is one
    /// change, up or down.
    pub(crate) fn changed(&self, old: (usize, usize), new: (usize, usize)) {
        if !self.live.load(Relaxed) {
            return;
        }
        for (at, (old, new)) in [(0, (old.0, new.0)), (2, (old.1, new.1))] {
            if new != old {
                self.changes[at + usize::from(new < old)].increment(1);
                self.gauges[at / 2].set(new as f64);
            }
        }
    }

    fn retire(&self) {
        self.live.store(false, Relaxed);
    }
}

/// The durations a timed clock recorded since the last publish, for the
/// histograms, once an exporter asked for them ([`Samples::tap`]): per kind,
/// how many fell in each bucket of the stream's own histograms
/// ([`crate::timings`]: 64 per power of two), and which buckets were hit.
/// A publish hands the exporter one `record_many` per bucket hit, at the
/// bucket's top: a handful of calls for many items, each duration at most
/// 1/64 above its true value and never below. Sized once when tapped (about
/// 27 KiB); nothing is allocated per item.
#[derive(Debug, Default)]
pub(crate) struct Samples(Option<Box<Pending>>);

#[derive(Debug)]
struct Pending {
    /// Per kind, per bucket: durations recorded since the last publish.
    counts: [Box<[u32]>; 3],
    /// Per kind: the buckets whose count is above 0, in the order first hit.
    hit: [Vec<u16>; 3],
}

impl Pending {
    #[inline(never)]
    fn keep(&mut self, kind: Kind, bucket: usize) {
        let count = &mut self.counts[kind as usize][bucket];
        if *count == 0 {
            // Fewer buckets than `u16` holds, and room for each reserved:
            // no allocation.
            self.hit[kind as usize].push(bucket as u16);
        }
        *count = count.saturating_add(1);
    }
}

impl Samples {
    /// Keeps every duration recorded from now on.
    pub(crate) fn tap(&mut self) {
        self.0.get_or_insert_with(|| {
            Box::new(Pending {
                counts: std::array::from_fn(|_| vec![0; BUCKETS_IN_ALL].into_boxed_slice()),
                hit: std::array::from_fn(|_| Vec::with_capacity(BUCKETS_IN_ALL)),
            })
        });
    }

    /// A duration of `kind` fell in histogram bucket `bucket`. One check on a
    /// timed stream without an exporter.
    #[inline(always)]
    pub(crate) fn record(&mut self, kind: Kind, bucket: usize) {
        if let Some(pending) = &mut self.0 {
            pending.keep(kind, bucket);
        }
    }

    /// Hands each bucket hit to `f` (the kind's index in [`Kind`] order, the
    /// bucket's top in nanoseconds, how many), and forgets them.
    pub(crate) fn drain(&mut self, f: &mut dyn FnMut(usize, u64, usize)) {
        let Some(pending) = &mut self.0 else {
            return;
        };
        let Pending { counts, hit } = &mut **pending;
        for (kind, (counts, hit)) in counts.iter_mut().zip(hit).enumerate() {
            for bucket in hit.drain(..) {
                let count = std::mem::take(&mut counts[usize::from(bucket)]);
                f(kind, top(usize::from(bucket)), count as usize);
            }
        }
    }
}
