//! [`Aimd`]: additive increase, multiplicative decrease of the `workers` limit.
//! Its rule is written once, in the type's documentation, for its users.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::adaptive::{Controller, Sample};

/// The default [`Aimd::tolerance`].
const TOLERANCE: f64 = 1.05;
/// The default [`Aimd::backoff`].
const BACKOFF: f64 = 0.5;
/// A sample counts at most this many times the unloaded run time in a round's
/// mean.
const CLIP: u32 = 3;
/// How far one latency decision may move the limit, as factors.
const RISE_FACTOR: (f64, f64) = (0.5, 0.9);

/// The AIMD [`Controller`]: finds how many workers a service takes before its
/// run time rises or it pushes back, and follows it as it changes.
///
/// `Aimd::new(min, max)` starts at `min` ([`starting_at`](Self::starting_at)
/// changes that), in slow start. It works in *rounds* of about one round trip:
/// a round counts the samples of items started after the last change of the
/// limit (an item started before ran under the old limit and says nothing
/// about the new one), and ends when it has as many samples as the limit. At
/// the end of a round, with `mean` the round's mean run time and `base` the
/// lowest round mean seen (the unloaded run time):
///
/// - **back-pressure** (an [`overload`](Sample::overload) sample) decides at
///   once: limit × [`backoff`](Self::backoff) (default 0.5). The refusals of the
///   other items that were in flight then are the same news and are ignored;
/// - **a rise** (`mean > base × tolerance`, [`tolerance`](Self::tolerance)
///   1.05 by default), seen in two rounds in a row, multiplies the limit by
///   `base / mean`, kept within [0.5, 0.9]: a small rise trims it, a large one
///   halves it;
/// - **otherwise, if the limit was reached** (see [`Sample::saturated`]) in at
///   least half the round's samples, it grows: doubles during slow start (until
///   its first decrease), then adds one per round. A limit that is not reached
///   (the source is the bottleneck) never grows;
/// - the limit stays within `[min, max]`.
///
/// Against noise: a round's mean is over as many samples as the limit, each
/// counted at most 3 × `base`, and a rise must show in two rounds in a row, so
/// a single slow item never halves the limit. The 5 % tolerance is for
/// latency: once more than about 5 % of requests queue inside the service, it
/// shows in the 95th percentile; a service whose run time is noisier than
/// that wants a higher tolerance. If the run time stays high at `min`, the
/// unloaded run time itself moved: `base` takes the new value, so the limit is
/// not pinned at `min`.
///
/// [`with_history`](Self::with_history) records each round's decision for a
/// plot or a log.
///
/// # Examples
///
/// ```
/// use bounded_buffered::{Aimd, BoundedStreamExt};
/// use futures::{StreamExt, stream};
///
/// # futures::executor::block_on(async {
/// let aimd = Aimd::new(1, 64).with_history(1_000);
/// let history = aimd.history().expect("recorded");
/// let mut replies = stream::iter(0..500u32)
///     .map(|n| async move { n })
///     .bounded(1, 0)
///     .adaptive(aimd, |_: &u32| false);
/// while let Some(_) = replies.next().await {}
/// // Never overloaded, always saturated: slow start doubled it to `max`.
/// assert_eq!(replies.limits().workers(), 64);
/// let rounds = history.rounds();
/// assert_eq!(rounds.first().unwrap().limit, 2);
/// # });
/// ```
#[derive(Debug)]
pub struct Aimd {
    min: usize,
    max: usize,
    limit: usize,
    tolerance: f64,
    backoff: f64,
    slow_start: bool,
    /// The lowest round mean seen: the unloaded run time.
    base: Option<Duration>,
    round: Round,
    /// The previous round showed a rise: one more confirms it.
    rise_seen: bool,
    /// Samples still to come from items in flight at the last back-off.
    cooldown: usize,
    history: Option<History>,
}

/// The samples of the current round.
#[derive(Debug, Default)]
struct Round {
    /// The last change of the limit: samples of items started before it are
    /// ignored (they ran under the old limit).
    since: Option<Duration>,
    samples: usize,
    saturated: usize,
    /// Run time summed in nanoseconds, each sample clipped.
    total: u128,
}

/// The decisions an [`Aimd`] made, for a plot or a log: one [`Decision`] per
/// round, the latest `capacity` kept. `Clone + Send + Sync`.
///
/// # Examples
///
/// ```
/// use bounded_buffered::Aimd;
///
/// let aimd = Aimd::new(1, 8).with_history(100);
/// let history = aimd.history().unwrap();
/// assert!(history.rounds().is_empty());
/// ```
#[derive(Clone, Debug)]
pub struct History {
    rounds: Arc<Mutex<VecDeque<Decision>>>,
    capacity: usize,
}

/// One round of an [`Aimd`] controller: when it ended, what it saw, the limit
/// it set.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Decision {
    /// When the round ended (the completion of its last sample), from the
    /// stream's first clock reading.
    pub at: Duration,
    /// The round's mean run time (`None` for a back-pressure decision).
    pub mean_run: Option<Duration>,
    /// The unloaded run time it compared with.
    pub base: Option<Duration>,
    /// A back-pressure sample decided this round.
    pub overload: bool,
    /// The limit from this decision on.
    pub limit: usize,
}

impl History {
    /// The recorded rounds, oldest first.
    pub fn rounds(&self) -> Vec<Decision> {
        let rounds = self.rounds.lock().unwrap_or_else(PoisonError::into_inner);
        rounds.iter().copied().collect()
    }

    fn record(&self, decision: Decision) {
        let mut rounds = self.rounds.lock().unwrap_or_else(PoisonError::into_inner);
        if rounds.len() == self.capacity {
            rounds.pop_front();
        }
        rounds.push_back(decision);
    }
}

impl Aimd {
    /// A controller that keeps the limit within `[min, max]`, starting at `min`.
    ///
    /// # Panics
    ///
    /// If `min` is 0 (a limit of 0 would pause the stream for good) or `min >
    /// max`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::{Aimd, Controller};
    ///
    /// assert_eq!(Aimd::new(2, 100).initial(), 2);
    /// ```
    #[track_caller]
    pub fn new(min: usize, max: usize) -> Self {
        assert!(
            min > 0,
            "`Aimd::new` needs `min >= 1`: a limit of 0 would pause the stream for good"
        );
        assert!(
            min <= max,
            "`Aimd::new` needs `min <= max`, got {min} > {max}"
        );
        Self {
            min,
            max,
            limit: min,
            tolerance: TOLERANCE,
            backoff: BACKOFF,
            slow_start: true,
            base: None,
            round: Round::default(),
            rise_seen: false,
            cooldown: 0,
            history: None,
        }
    }

    /// Starts at `limit` (clamped to `[min, max]`) instead of `min`, still in
    /// slow start.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::{Aimd, Controller};
    ///
    /// assert_eq!(Aimd::new(1, 100).starting_at(16).initial(), 16);
    /// assert_eq!(Aimd::new(1, 100).starting_at(500).initial(), 100);
    /// ```
    pub fn starting_at(mut self, limit: usize) -> Self {
        self.limit = limit.clamp(self.min, self.max);
        self
    }

    /// How much the mean run time may exceed the unloaded run time before it
    /// counts as a rise: 1.05 (5 %) by default.
    ///
    /// # Panics
    ///
    /// If `tolerance` is not above 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Aimd;
    ///
    /// let _patient = Aimd::new(1, 64).tolerance(1.5); // only a 50 % rise counts
    /// ```
    #[track_caller]
    pub fn tolerance(mut self, tolerance: f64) -> Self {
        assert!(
            tolerance > 1.0,
            "`Aimd::tolerance` must be above 1, got {tolerance}"
        );
        self.tolerance = tolerance;
        self
    }

    /// The factor applied to the limit on back-pressure: 0.5 by default.
    ///
    /// # Panics
    ///
    /// If `backoff` is not in `(0, 1)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Aimd;
    ///
    /// let _gentle = Aimd::new(1, 64).backoff(0.7); // 30 % off on back-pressure
    /// ```
    #[track_caller]
    pub fn backoff(mut self, backoff: f64) -> Self {
        assert!(
            backoff > 0.0 && backoff < 1.0,
            "`Aimd::backoff` must be between 0 and 1, got {backoff}"
        );
        self.backoff = backoff;
        self
    }

    /// Records the latest `capacity` decisions, readable through
    /// [`Aimd::history`] while the stream runs. The memory is reserved here,
    /// once.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Aimd;
    ///
    /// assert!(Aimd::new(1, 8).history().is_none());
    /// assert!(Aimd::new(1, 8).with_history(10).history().is_some());
    /// ```
    pub fn with_history(mut self, capacity: usize) -> Self {
        self.history = Some(History {
            rounds: Arc::new(Mutex::new(VecDeque::with_capacity(capacity))),
            capacity,
        });
        self
    }

    /// A handle to the recorded decisions, if [`Aimd::with_history`] was called.
    pub fn history(&self) -> Option<History> {
        self.history.clone()
    }

    /// Ends the current round at `at` with the limit `limit`.
    fn decide(&mut self, at: Duration, limit: usize, mean_run: Option<Duration>, overload: bool) {
        if limit < self.limit {
            self.slow_start = false;
        }
        let limit = limit.clamp(self.min, self.max);
        // Items started before a change ran under the old limit: the next round
        // counts only those started after it.
        let since = if limit == self.limit {
            self.round.since
        } else {
            Some(at)
        };
        self.limit = limit;
        self.round = Round {
            since,
            ..Round::default()
        };
        if let Some(history) = &self.history {
            history.record(Decision {
                at,
                mean_run,
                base: self.base,
                overload,
                limit: self.limit,
            });
        }
    }

    /// The limit scaled by `factor`, at least one lower (unless at `min`).
    fn scaled(&self, factor: f64) -> usize {
        // A limit is far below 2^52: the float is exact.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let scaled = (self.limit as f64 * factor).floor() as usize;
        scaled.min(self.limit.saturating_sub(1)).max(self.min)
    }

    /// The end of a round: compare, then shrink, hold or grow.
    fn end_round(&mut self, at: Duration) {
        let round = &self.round;
        let samples = round.samples.max(1);
        #[allow(clippy::cast_possible_truncation)]
        let mean = Duration::from_nanos((round.total / samples as u128) as u64);
        let saturated = round.saturated * 2 >= round.samples;
        let base = match self.base {
            Some(base) if base <= mean => base,
            _ => mean,
        };
        self.base = Some(base);
        let rise = mean.as_secs_f64() > base.as_secs_f64() * self.tolerance;
        if rise && self.limit == self.min {
            // Nothing lower to try: the unloaded run time itself moved.
            self.base = Some(mean);
            self.rise_seen = false;
            self.decide(at, self.limit, Some(mean), false);
        } else if rise && self.rise_seen {
            self.rise_seen = false;
            let factor =
                (base.as_secs_f64() / mean.as_secs_f64()).clamp(RISE_FACTOR.0, RISE_FACTOR.1);
            self.decide(at, self.scaled(factor), Some(mean), false);
        } else if rise {
            self.rise_seen = true;
            self.decide(at, self.limit, Some(mean), false);
        } else {
            self.rise_seen = false;
            let limit = match (saturated, self.slow_start) {
                (false, _) => self.limit,
                (true, true) => self.limit.saturating_mul(2),
                (true, false) => self.limit.saturating_add(1),
            };
            self.decide(at, limit, Some(mean), false);
        }
    }
}

impl Controller for Aimd {
    fn initial(&self) -> usize {
        self.limit
    }

    fn sample(&mut self, sample: &Sample) -> usize {
        let done = sample.started + sample.run;
        // Back-pressure from the items in flight when it last backed off (as
        // many as the limit was) is the same news: one back-off per burst. Time
        // cannot tell those items apart: a refusal may come in the very
        // `poll_next` (the same clock reading) that sent it.
        let cooling = self.cooldown > 0;
        self.cooldown = self.cooldown.saturating_sub(1);
        if sample.overload && cooling {
            return self.limit;
        }
        if self.round.since.is_some_and(|since| sample.started < since) {
            // It ran under the limit before the last change.
            return self.limit;
        }
        if sample.overload {
            self.cooldown = self.limit - 1;
            self.rise_seen = false;
            let limit = self.scaled(self.backoff);
            self.decide(done, limit, None, true);
            return self.limit;
        }
        let clip = self
            .base
            .map_or(sample.run, |base| sample.run.min(base * CLIP));
        let round = &mut self.round;
        round.samples += 1;
        round.saturated += usize::from(sample.saturated);
        round.total += clip.as_nanos();
        if round.samples >= self.limit {
            self.end_round(done);
        }
        self.limit
    }
}
