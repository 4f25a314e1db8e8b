//! Where items spend their time: fixed-size histograms of how long each item
//! waited, ran and was held, filled when [`timed`](crate::BoundedBuffered::timed)
//! is on.
//!
//! The histograms are log-linear, as HdrHistogram's are: durations in whole
//! nanoseconds, exact below 64 ns, then 64 buckets for every power of two, so a
//! bucket is at most 1/64 of its values wide and the middle of a bucket is
//! within 0.8 % of any value in it. They are written here rather than taken
//! from a crate because what the adapter needs is small and fixed: one array,
//! sized once, with no allocation per item and nothing to configure. Durations
//! above 2^40 ns (about 18 minutes) share the top bucket; `max` stays exact.

use std::fmt;
use std::time::Duration;

/// Sub-buckets per power of two, as a number of bits.
const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;
/// Durations at or above `2^TOP_BITS` ns go to the last bucket.
const TOP_BITS: u32 = 40;
const BUCKETS: usize = (TOP_BITS - SUB_BITS + 1) as usize * SUB;

/// The distribution of one kind of duration, in fixed memory.
///
/// `count`, `min`, `max` and `mean` are exact (to the nanosecond);
/// [`quantile`](Self::quantile) is within 0.8 % of a recorded value (see
/// [Time and capacity planning](crate#time-and-capacity-planning)). An empty
/// histogram reports zero for every statistic.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use bounded_buffered::BoundedStreamExt;
/// use futures::{StreamExt, stream};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let mut jobs = stream::iter([10u64, 20, 30, 40])
///     .map(|ms| async move { tokio::time::sleep(Duration::from_millis(ms)).await })
///     .bounded(4, 0)
///     .timed()
///     .clock(|| tokio::time::Instant::now().into_std());
/// while jobs.next().await.is_some() {}
/// let run = jobs.timings().expect("timed").run;
/// assert_eq!(run.count(), 4);
/// assert_eq!(run.min(), Duration::from_millis(10));
/// assert_eq!(run.max(), Duration::from_millis(40));
/// assert_eq!(run.mean(), Duration::from_millis(25));
/// let median = run.quantile(0.5).as_secs_f64();
/// assert!((median - 0.020).abs() <= 0.020 * 0.01);
/// # }
/// ```
#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
}

impl Histogram {
    pub(crate) fn new() -> Self {
        let counts: Box<[u64]> = vec![0; BUCKETS].into_boxed_slice();
        Self {
            counts: counts.try_into().expect("BUCKETS entries"),
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }

    /// Adds one duration of `nanos` nanoseconds.
    #[inline]
    pub(crate) fn record(&mut self, nanos: u64) -> usize {
        let bucket = bucket(nanos);
        self.counts[bucket] += 1;
        self.count += 1;
        self.min = self.min.min(nanos);
        self.max = self.max.max(nanos);
        self.sum += u128::from(nanos);
        bucket
    }

    /// How many durations were recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The shortest duration recorded.
    pub fn min(&self) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(self.min)
    }

    /// The longest duration recorded.
    pub fn max(&self) -> Duration {
        Duration::from_nanos(self.max)
    }

    /// The mean duration, rounded down to the nanosecond.
    pub fn mean(&self) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        let mean = self.sum / u128::from(self.count);
        Duration::from_nanos(u64::try_from(mean).unwrap_or(u64::MAX))
    }

    /// The duration at or below which a fraction `q` of the recorded durations
    /// lie: `quantile(0.5)` is the median, `quantile(0.99)` the 99th percentile.
    ///
    /// The value is the middle of the bucket the quantile falls in, kept within
    /// `[min, max]`: within 0.8 % of a recorded value, exact for `q = 0` (the
    /// minimum) and `q = 1` (the maximum).
    ///
    /// # Panics
    ///
    /// If `q` is not within `0.0..=1.0` (or is NaN).
    #[track_caller]
    pub fn quantile(&self, q: f64) -> Duration {
        assert!(
            (0.0..=1.0).contains(&q),
            "`quantile` takes a fraction within 0.0..=1.0, got {q}"
        );
        if self.count == 0 {
            return Duration::ZERO;
        }
        // The rank of the value wanted, 1-based: at least the first.
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (index, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                let middle = middle(index).clamp(self.min, self.max);
                return Duration::from_nanos(middle);
            }
        }
        Duration::from_nanos(self.max)
    }
}

impl fmt::Debug for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count())
            .field("min", &self.min())
            .field("p50", &self.quantile(0.5))
            .field("p99", &self.quantile(0.99))
            .field("max", &self.max())
            .field("mean", &self.mean())
            .finish()
    }
}

/// The bucket of a duration of `nanos` ns.
#[inline]
fn bucket(nanos: u64) -> usize {
    if nanos < SUB as u64 {
        return nanos as usize;
    }
    let top = 63 - nanos.leading_zeros(); // floor(log2(nanos)), at least SUB_BITS
    if top >= TOP_BITS {
        return BUCKETS - 1;
    }
    let sub = (nanos >> (top - SUB_BITS)) as usize & (SUB - 1);
    (top - SUB_BITS + 1) as usize * SUB + sub
}

/// The middle of bucket `index`, in ns.
/// How many buckets a histogram has (the `metrics` exporter batches its
/// samples by them).
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) const BUCKETS_IN_ALL: usize = BUCKETS;

/// The largest duration in bucket `index`: at most 1/64 above any duration
/// in it, never below (the top bucket's, beyond 2^40 ns, is its lower bound's
/// double).
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) fn top(index: usize) -> u64 {
    if index < SUB {
        return index as u64;
    }
    let octave = (index / SUB) as u32 - 1;
    let sub = (index % SUB) as u64;
    ((SUB as u64 + sub + 1) << octave) - 1
}

fn middle(index: usize) -> u64 {
    if index < SUB {
        return index as u64;
    }
    let octave = (index / SUB) as u32 - 1; // the power of two above `SUB_BITS`
    let sub = (index % SUB) as u64;
    let low = (SUB as u64 + sub) << octave;
    let width = 1u64 << octave;
    low + width / 2
}

/// The three distributions of where items spent their time, returned by
/// [`BoundedBuffered::timings`](crate::BoundedBuffered::timings) when timing is
/// on.
///
/// Durations are measured with the stream's clock (`Instant::now` unless
/// [`clock`](crate::BoundedBuffered::clock) replaced it), read at most once per
/// `poll_next`: every event a call handles gets the same reading. See
/// [Time and capacity planning](crate#time-and-capacity-planning).
///
/// # Examples
///
/// ```
/// use bounded_buffered::BoundedStreamExt;
/// use futures::{StreamExt, stream};
///
/// # futures::executor::block_on(async {
/// let mut jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(4, 4).timed();
/// while jobs.next().await.is_some() {}
/// let timings = jobs.timings().expect("timed");
/// assert_eq!(timings.run.count(), 100);
/// assert_eq!(timings.held.count(), 100);
/// # });
/// ```
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct Timings {
    /// From the pull to the start, per started item: the time spent in the
    /// waiting queue (0 for an item that started as soon as it was pulled).
    pub wait: Histogram,
    /// From the start to the completion, per completed item: the handler's
    /// duration.
    pub run: Histogram,
    /// From the completion (or the expiry) to the hand-out, per output handed
    /// out: head-of-line blocking in ordered mode, a slow consumer in any mode.
    pub held: Histogram,
}

impl Timings {
    pub(crate) fn new() -> Self {
        Self {
            wait: Histogram::new(),
            run: Histogram::new(),
            held: Histogram::new(),
        }
    }
}
