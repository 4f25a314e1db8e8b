//! [`Aimd`]: the adaptive `workers` limit the crate ships. Its rule is written
//! once, in the type's documentation, for its users.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::adaptive::{Controller, Sample};

/// The default [`Aimd::tolerance`].
const TOLERANCE: f64 = 1.02;
/// The default [`Aimd::backoff`].
const BACKOFF: f64 = 0.9;
/// A sample that ran longer than this many times the unloaded run time is an
/// outlier: left out of the mean (a service's rare slow requests are not a
/// queue), and counted.
const CLIP: f64 = 4.0;
/// A cut leaves a queue of up to this many standard errors: where the run
/// time varies that much, such a queue costs little and noise cuts less.
const KEEP: f64 = 1.5;
/// Outliers are expected at least this often: a few samples of a steady
/// service do not make one outlier news.
const RARE: f64 = 0.01;
/// Standard errors a queue must exceed to count in two rounds in a row, or in
/// one.
const SUSPECT: f64 = 2.0;
const SURE: f64 = 3.0;
/// The unloaded run time remembers about this many samples.
const MEMORY: f64 = 512.0;
/// The unloaded run time needs this many samples before a queue can count.
const FIRST_SAMPLES: f64 = 8.0;
/// Samples of settled rounds that replace slow start's unloaded run time.
const FRESH: f64 = 32.0;
/// Rounds at the same limit before one that tells the mean run time as it is.
const SETTLED: usize = 2;
/// A round binds if at most this share of its samples (rounded up) did not
/// reach the limit.
const LOOSE: f64 = 0.1;
/// A limit reached by this share of the samples, or more, grows by one; the
/// share is the mean of the last rounds at the limit, up to this many.
const SOMETIMES: f64 = 0.05;
const REACHED_ROUNDS: usize = 4;
/// Held just below the ceiling for this many samples, or this many rounds,
/// whichever comes first, it probes the ceiling again.
const PROBE_SAMPLES: usize = 160;
const PROBE_ROUNDS: usize = 32;
/// After a cut to at most this share of the limit, the next round's mean run
/// time within this share of the last one means the run time itself moved.
const REBASE_CUT: f64 = 0.8;
const REBASE_SAME: f64 = 0.1;
/// Cut to at most this share of the limit whose queue began the cuts, with
/// this many samples there, a run time that kept more than half of its
/// excess over the unloaded one means the queue was not one.
const HALVED: f64 = 0.5;
const HALVED_SAMPLES: f64 = 16.0;
/// The default start: two, so that one slow item does not hold the stream.
const START: usize = 2;

/// The adaptive [`Controller`]: finds how many workers a service takes before
/// its requests start to wait or it pushes back, and follows it as it changes.
///
/// `Aimd::new(min, max)` starts at 2, within `[min, max]`
/// ([`starting_at`](Self::starting_at) changes that), in slow start. Not at
/// 1: it learns only from completions, and at a limit of 1 a slow first item
/// (one of a service's rare slow requests, a cold cache) holds the whole
/// stream for its run time, with nothing learned; at 2 the other worker keeps
/// completing. Its rule, in full:
///
/// **Rounds.** It decides once per *round*: as many samples as the limit.
/// After a change of the limit (out of slow start), the first completions, as
/// many as the larger of the two limits, are a warm-up: items that ran under
/// the old limit are still leaving, and a round right after a change favours
/// the fast items. In slow start, which has no warm-up (it would take twice
/// as long), the items started before the last doubling are left out of the
/// round instead: most of a round's first completions are theirs, and a
/// queue the doubling made would hide behind them. A sample that ran more than 4 times the unloaded run time is
/// an *outlier*: left out of the round's mean (a service's rare slow requests
/// are not a queue), but counted. A round *binds* if all but a tenth of its
/// samples (rounded up) found the limit reached ([`Sample::saturated`]).
///
/// **The queue.** With `n` the items in flight (the round's mean
/// [`Sample::in_flight`]), `mean` its mean run time and `base` the unloaded run
/// time, Little's law says `queue = n × (1 − base / mean)` items wait. It
/// counts only above the noise: twice its standard error (from how much the
/// run time varies and how many samples the round and `base` hold) and at
/// least `n × (1 − 1 / tolerance)`. Run times vary in proportion to their
/// length, so the noise is taken at the round's own mean: the unloaded run
/// time's coefficient of variation, not its spread in milliseconds. Two more
/// signals count as a queue, for services that serve newcomers first and so
/// starve who waits: the completion rate says fewer run than are in flight
/// (`n − rate × base`, beyond three standard errors of a count), or the round
/// has more outliers than the service usually has. The rate counts only
/// where the run time shows no queue: a round's rate reads low wherever
/// completions come in bursts, and a queue the run time shows is measured by
/// it. None of the three counts before the unloaded run time has 8 samples
/// behind it: against a figure from one or two fast items, every item looks
/// late.
///
/// **Each round**, then:
///
/// - **no queue**: the limit grows. In slow start it doubles while rounds bind;
///   slow start ends at the first round that does not bind or the first
///   decrease. Afterwards it grows only after two binding rounds in a row at
///   the same limit (a warm-up counts): by half the gap to just below the
///   *ceiling* (the lowest limit that last showed a queue or back-pressure),
///   where it holds; every 160 samples or 32 rounds held it tries the ceiling
///   itself. If the ceiling shows no queue it is stale: the limit grows by
///   one, then by twice as much each round that binds (2, 4, 8, ...) until a
///   queue shows. A limit reached now and then but not binding grows by one:
///   the source is about as fast as the limit. Now and then means by at
///   least 5 % of the samples, on average over the last rounds at this limit
///   (up to 4; a higher limit is reached less often, so it earns its own
///   growth). Just below the ceiling such a limit holds and probes the
///   ceiling as a binding one does. A limit that is not reached never grows;
/// - **a queue within three standard errors**: it counts only if the next round
///   at the same limit shows one too (a slow item or two can do that);
/// - **a queue**: the limit comes down to what the service took, the items in
///   flight less those waiting, leaving up to one and a half standard errors
///   of queue (where the run time varies that much such a queue costs little,
///   and noise cuts less: a cut too deep costs throughput until the limit
///   climbs back): at least one lower. When the limit did not bind (the source
///   held some back), it comes down from the limit by the queue instead. The
///   limit it came from becomes the ceiling.
///
/// **Back-pressure** (an [`overload`](Sample::overload) sample) decides at once:
/// the limit becomes the ceiling and the limit × [`backoff`](Self::backoff)
/// (default 0.9, at least one lower). Refusals of items started before that
/// (the same news) each lower the ceiling by one from the limit at the
/// back-off, and the limit below it: a service that refused *k* of *L* took
/// *L − k*.
///
/// **The unloaded run time** is first what slow start saw, but for one sample:
/// once the longest of its samples ran more than 4 times the mean of the
/// others, it is left out, as an outlier (a slow first item would otherwise
/// set a figure that no later item is an outlier against, and hide every queue
/// slow start runs into; its spread is then that of the others). The items
/// a round of slow start leaves out, started before its doubling, teach it
/// too: they ran under the old limit, with no queue that the new one made,
/// and they are the slower ones of their cohort, where the round's own are
/// the faster. Since slow start's rounds all follow a change, it still
/// favours the fast items: rounds that follow two rounds at the same limit
/// (*settled*), with no queue, replace it once they hold 32 samples (and if
/// that moved it, the ceiling goes). From then on it learns
/// (over about 512 samples) only from settled rounds with no queue at a limit
/// no higher than where it learned: just below the ceiling a queue within the
/// noise could hide, and learning there would let it creep up with the load.
/// A settled round faster than it by more than the noise teaches it wherever
/// it comes.
///
/// **Cuts that change nothing.** When two rounds in a row cut the limit by a
/// fifth or more and show the same mean run time (within 10 %), the run time
/// itself moved, not the queue: that round becomes the unloaded run time, the
/// ceiling goes, and the limit goes back as far as the first of those rounds
/// allows with it. Where the run time varies, rounds differ by more than
/// that, so a second test looks at more samples. The first round whose mean
/// run time showed a queue and cut the limit is remembered while the limit
/// stays at or below its limit. A queue that large leaves with the cuts, and
/// its share of the run time with it: once the limit is at half that round's
/// or less, the first 16 samples there tell. If their mean is still nearer
/// that round's than the unloaded run time, the queue was not one: the run
/// time itself moved, or the unloaded figure was learned too low. Their mean
/// becomes the unloaded run time, the ceiling goes, and the limit goes back as
/// far as that round allows with it (its items in flight × the new figure /
/// its mean). Either way the round is then forgotten; back-pressure forgets
/// it too, since refusals cut without a queue.
///
/// The limit stays within `[min, max]`. Ignored outputs ([`Verdict::Ignore`])
/// and items that never complete are not heard of at all.
///
/// What it costs: finding a capacity rise needs a probe, so every 160 samples
/// held below the ceiling one round runs one item more than last showed a
/// queue (an item queued, or a refusal, per probe, when nothing changed). It
/// sees a queue of one request at a steady service, but where the run time
/// varies a queue within the noise goes unseen: it keeps the limit a few
/// items above the capacity rather than below it.
///
/// [`with_history`](Self::with_history) records each round's decision for a
/// plot or a log.
///
/// [`Verdict::Ignore`]: crate::Verdict::Ignore
///
/// # Examples
///
/// Requests of 10 ms to a service that takes 8 at a time and queues the rest
/// (on tokio's paused clock, so the figures are exact):
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use bounded_buffered::{Aimd, BoundedStreamExt};
/// use futures::{StreamExt, stream};
/// use tokio::sync::Semaphore;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let service = Arc::new(Semaphore::new(8));
/// let call = move |n: u32| {
///     let service = Arc::clone(&service);
///     async move {
///         let _permit = service.acquire().await.expect("never closed");
///         tokio::time::sleep(Duration::from_millis(10)).await;
///         n
///     }
/// };
/// let aimd = Aimd::new(1, 64).with_history(1_000);
/// let history = aimd.history().expect("recorded");
/// let mut replies = stream::iter(0..2_000)
///     .map(call)
///     .bounded(1, 0)
///     .adaptive(aimd, |_: &u32| false)
///     .clock(|| tokio::time::Instant::now().into_std());
/// while let Some(_) = replies.next().await {}
/// // Slow start doubled it past 8, saw the queue, and came back to what the
/// // service takes; it still tries 9 now and then.
/// assert!((8..=9).contains(&replies.limits().workers()));
/// let rounds = history.rounds();
/// // It started at 2: the first round doubled it.
/// assert_eq!(rounds.first().unwrap().limit, 4);
/// assert!(rounds.iter().any(|round| round.limit == 16));
/// # }
/// ```
#[derive(Debug)]
pub struct Aimd {
    min: usize,
    max: usize,
    limit: usize,
    tolerance: f64,
    backoff: f64,
    slow_start: bool,
    /// The unloaded run time.
    base: Option<Baseline>,
    /// The unloaded run time is still slow start's ...
    provisional: bool,
    /// ... and what settled rounds showed since, until there is enough of it.
    fresh: Option<Baseline>,
    /// In slow start, the longest run time the unloaded one holds, until it
    /// proves an outlier and is left out ...
    slowest: Option<f64>,
    /// ... and how many run times it holds, their sum and their squares'.
    taught: (f64, f64, f64),
    round: Round,
    /// Rounds ended at the current limit (a warm-up counts as one).
    same: usize,
    /// The last round (or warm-up) reached the limit.
    bound: bool,
    /// The share of samples that reached the limit: the mean over the last
    /// (up to 4) rounds ended at the current limit, and how many there were.
    reached: (f64, usize),
    /// The lowest limit at which a queue or back-pressure was last seen.
    ceiling: Option<usize>,
    /// Rounds held just below the ceiling since it was last probed.
    held: usize,
    /// The next growth past a ceiling that proved stale.
    step: usize,
    /// The last round showed a queue, to be confirmed by this one.
    suspect: Option<Seen>,
    /// Rounds in a row that showed a queue and cut the limit by a lot.
    streak: Option<Streak>,
    /// The round whose queue began the cuts since the limit was last higher,
    /// and what the rounds at half its limit or less showed since.
    cuts: Option<Cuts>,
    /// The refusals of the items in flight at the last back-off.
    burst: Option<Burst>,
    history: Option<History>,
}

/// What one round showed: its samples' mean run time and variance (outliers
/// left out), and the mean of every sample.
#[derive(Clone, Copy, Debug)]
struct Seen {
    mean: f64,
    variance: f64,
    samples: f64,
    whole: f64,
    /// The share of outliers.
    outliers: f64,
    /// The longest run time in the mean.
    longest: f64,
}

/// The unloaded run time, in seconds: exponentially weighted over about
/// [`MEMORY`] samples.
#[derive(Clone, Copy, Debug)]
struct Baseline {
    /// The mean, outliers left out as rounds leave them, and how many samples
    /// are behind it.
    mean: f64,
    weight: f64,
    /// The mean of every sample, outliers included: the service's own.
    whole: f64,
    /// The share of outliers.
    outliers: f64,
    /// How much the run time varies, and how many samples are behind that.
    variance: f64,
    spread: f64,
    /// The highest limit it learned the mean at.
    at: usize,
}

impl Baseline {
    fn new(seen: &Seen, at: usize) -> Self {
        Self {
            mean: seen.mean,
            weight: seen.samples,
            whole: seen.whole,
            outliers: seen.outliers,
            variance: seen.variance,
            spread: seen.samples,
            at,
        }
    }

    /// Learns how much the run time varies from a round, but not its mean.
    fn learn_spread(&mut self, seen: &Seen) {
        let old = self.spread.min(MEMORY - seen.samples).max(0.0);
        let delta = seen.mean - self.mean;
        self.variance = (old * self.variance + seen.samples * (seen.variance + delta * delta))
            / (old + seen.samples);
        self.spread = old + seen.samples;
    }

    /// Leaves one sample of `run` out, as an outlier: out of the mean, and
    /// out of the variance, which is then that of the other samples slow
    /// start taught it, `taught` (the sums of their run times and of their
    /// squares, and how many). (The variance of the round at hand, as this
    /// once took, is that of slow start's fastest items: on a service whose
    /// run time varies by 0.63 of its mean, 0.20, and every round after
    /// looked like a queue.)
    fn without(&mut self, run: f64, taught: (f64, f64, f64)) {
        let n = self.weight;
        self.mean = (self.mean * n - run) / (n - 1.0);
        self.weight = n - 1.0;
        self.outliers = (self.outliers * n + 1.0) / n;
        let (samples, total, squares) = taught;
        let rest = samples - 1.0;
        let mean = (total - run) / rest;
        self.variance = ((squares - run * run) / rest - mean * mean).max(0.0);
        self.spread = rest;
    }

    /// Learns everything a round shows.
    fn learn(&mut self, seen: &Seen, at: usize) {
        self.learn_spread(seen);
        let old = self.weight.min(MEMORY - seen.samples).max(0.0);
        let share = seen.samples / (old + seen.samples);
        self.mean += (seen.mean - self.mean) * share;
        self.whole += (seen.whole - self.whole) * share;
        self.outliers += (seen.outliers - self.outliers) * share;
        self.weight = old + seen.samples;
        self.at = self.at.max(at);
    }
}

/// Rounds in a row that showed a queue and cut the limit by a lot.
#[derive(Clone, Copy, Debug)]
struct Streak {
    /// The first of them: its limit, items in flight and mean run time.
    first: (usize, f64, f64),
    cuts: usize,
    /// The last of them: its limit and mean run time.
    limit: usize,
    mean: f64,
}

/// A round that showed a queue and cut the limit, and the rounds that came
/// after it at half its limit or less, pooled.
#[derive(Clone, Copy, Debug)]
struct Cuts {
    /// Its limit, items in flight, and what it showed.
    limit: usize,
    in_flight: f64,
    first: Seen,
    below: Option<Seen>,
}

impl Seen {
    /// How many samples, the sum of their run times and of their squares.
    fn sums(&self) -> (f64, f64, f64) {
        let total = self.mean * self.samples;
        let squares = (self.variance + self.mean * self.mean) * self.samples;
        (self.samples, total, squares)
    }

    /// The samples of both, as one.
    fn pooled(&self, other: &Seen) -> Seen {
        let samples = self.samples + other.samples;
        let (a, b) = (self.samples / samples, other.samples / samples);
        let mean = a * self.mean + b * other.mean;
        let delta = other.mean - self.mean;
        Seen {
            mean,
            variance: a * self.variance + b * other.variance + a * b * delta * delta,
            samples,
            whole: a * self.whole + b * other.whole,
            outliers: a * self.outliers + b * other.outliers,
            longest: self.longest.max(other.longest),
        }
    }
}

/// A back-off, and the refusals that came after it from items started
/// before it.
#[derive(Clone, Copy, Debug)]
struct Burst {
    /// The limit at the back-off.
    limit: usize,
    refused: usize,
}

/// The samples of the current round.
#[derive(Debug, Default)]
struct Round {
    /// The last change of the limit: back-pressure from items started before
    /// it is the news the last back-off already acted on.
    since: Option<Duration>,
    /// Samples still to pass before this round counts: after a decrease, the
    /// items that queued under the old limit are still leaving. Of those
    /// passed, how many reached the limit.
    warm_up: usize,
    warm_samples: usize,
    warm_saturated: usize,
    /// The run times of the samples that count.
    times: RunTimes,
    /// Of those, how many reached the limit, and their `in_flight` summed.
    saturated: usize,
    in_flight: usize,
    /// When the first and the last of them completed.
    first_done: Option<f64>,
    last_done: f64,
    /// In slow start, the run times of items started before the last
    /// change: not in the round, but they teach the unloaded run time.
    earlier: RunTimes,
}

/// Run times in seconds, outliers left out of the mean but counted.
#[derive(Clone, Copy, Debug, Default)]
struct RunTimes {
    /// Samples in the mean, and outliers.
    samples: usize,
    outliers: usize,
    /// The run times in the mean, their squares, and the longest.
    total: f64,
    squares: f64,
    longest: f64,
    /// Every run time, outliers included.
    whole: f64,
}

impl RunTimes {
    fn add(&mut self, run: f64, outlier: bool) {
        self.whole += run;
        if outlier {
            self.outliers += 1;
        } else {
            self.samples += 1;
            self.total += run;
            self.squares += run * run;
            self.longest = self.longest.max(run);
        }
    }

    /// What they showed, if any of them is in the mean.
    #[allow(clippy::cast_precision_loss)]
    fn seen(&self) -> Option<Seen> {
        if self.samples == 0 {
            return None;
        }
        let samples = self.samples as f64;
        let counted = (self.samples + self.outliers) as f64;
        let mean = self.total / samples;
        Some(Seen {
            mean,
            variance: (self.squares / samples - mean * mean).max(0.0),
            samples,
            whole: self.whole / counted,
            outliers: self.outliers as f64 / counted,
            longest: self.longest,
        })
    }
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
    /// A controller that keeps the limit within `[min, max]`, starting at 2
    /// (or the nearer bound, if 2 is outside them).
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
    /// assert_eq!(Aimd::new(1, 100).initial(), 2);
    /// assert_eq!(Aimd::new(1, 1).initial(), 1);
    /// assert_eq!(Aimd::new(4, 100).initial(), 4);
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
            limit: START.clamp(min, max),
            tolerance: TOLERANCE,
            backoff: BACKOFF,
            slow_start: true,
            base: None,
            provisional: true,
            fresh: None,
            slowest: Some(0.0),
            taught: (0.0, 0.0, 0.0),
            round: Round::default(),
            same: 0,
            bound: false,
            reached: (0.0, 0),
            ceiling: None,
            held: 0,
            step: 1,
            suspect: None,
            streak: None,
            cuts: None,
            burst: None,
            history: None,
        }
    }

    /// Starts at `limit` (clamped to `[min, max]`) instead of 2, still in
    /// slow start: `starting_at(1)` for a service known to take one at a time,
    /// a higher one for a service known to take many.
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

    /// The least rise of the mean run time over the unloaded one that counts
    /// as a queue, however steady the service: 1.02 (2 %) by default. Where
    /// the run time varies, the noise sets a higher bar by itself; this one is
    /// for steady services, where a rise of `1 / n` is one item waiting of
    /// `n` in flight.
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

    /// The factor applied to the limit on back-pressure: 0.9 by default. The
    /// refusals of the items in flight then tell how much further to go (see
    /// the rule), so a gentle factor costs few refusals.
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
    fn decide(&mut self, at: Duration, limit: usize, mean_run: Option<f64>, overload: bool) {
        let limit = limit.clamp(self.min, self.max);
        if limit < self.limit {
            self.slow_start = false;
        }
        if limit != self.limit {
            // A suspect round is confirmed at the same limit only; the
            // refusals of a burst are counted until the limit moves again.
            self.suspect = None;
            if !overload {
                self.burst = None;
            }
        }
        // Out of slow start, a change lets the items that ran under the old
        // limit leave before a round counts.
        let warm_up = if limit != self.limit && !self.slow_start {
            self.limit.max(limit)
        } else {
            0
        };
        if limit != self.limit {
            self.same = usize::from(warm_up > 0);
            self.reached = (0.0, 0);
        }
        if self.cuts.is_some_and(|cuts| limit > cuts.limit) {
            self.cuts = None;
        }
        let since = if limit == self.limit {
            self.round.since
        } else {
            Some(at)
        };
        self.limit = limit;
        self.round = Round {
            since,
            warm_up,
            ..Round::default()
        };
        if let Some(history) = &self.history {
            history.record(Decision {
                at,
                mean_run: mean_run.map(Duration::from_secs_f64),
                base: self.base.map(|base| Duration::from_secs_f64(base.mean)),
                overload,
                limit: self.limit,
            });
        }
    }

    /// `limit`, rounded, at least one lower than the limit (unless at `min`).
    fn lowered(&self, limit: f64) -> usize {
        self.rounded(self.limit.saturating_sub(1), limit)
    }

    /// `limit`, rounded, at most `most` and at least `min`.
    fn rounded(&self, most: usize, limit: f64) -> usize {
        // A limit is far below 2^52: the float is exact.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let limit = limit.round() as usize;
        limit.min(most).max(self.min)
    }

    /// The end of a round: compare, then shrink, hold or grow.
    #[allow(clippy::cast_precision_loss)]
    fn end_round(&mut self, at: Duration) {
        let round = &self.round;
        let times = &round.times;
        let counted = (times.samples + times.outliers) as f64;
        // Nothing but outliers: each counts as just an outlier.
        let (samples, mean, variance) = match (times.samples, self.base) {
            (0, Some(base)) => (counted, base.mean * CLIP, 0.0),
            _ => {
                let samples = times.samples as f64;
                let mean = times.total / samples;
                (
                    samples,
                    mean,
                    (times.squares / samples - mean * mean).max(0.0),
                )
            }
        };
        let seen = Seen {
            mean,
            variance,
            samples,
            whole: times.whole / counted,
            outliers: times.outliers as f64 / counted,
            longest: times.longest,
        };
        let binds_now = binds(round.saturated, times.samples + times.outliers);
        // Twice in a row at this limit (counting the warm-up): a burst of the
        // source does not make the limit grow.
        let twice = binds_now
            && if round.warm_samples > 0 {
                binds(round.warm_saturated, round.warm_samples)
            } else {
                self.bound && self.same > 0
            };
        self.bound = binds_now;
        // A higher limit is reached less often: only rounds at this one count.
        let (share, rounds) = &mut self.reached;
        *rounds += 1;
        *share +=
            (round.saturated as f64 / counted - *share) / (*rounds).min(REACHED_ROUNDS) as f64;
        let limit = self.limit as f64;
        // Little's law needs how many ran, which the limit only bounds.
        let in_flight = (round.in_flight as f64 / counted).clamp(1.0, limit);
        // The items completed at this rate over the round.
        let span = round
            .first_done
            .map_or(0.0, |first| round.last_done - first);
        let rate = (counted > 3.0 && span > 0.0).then(|| (counted - 1.0) / span);
        let Some(base) = self.base else {
            self.base = Some(Baseline::new(&seen, self.limit));
            self.slowest = Some(seen.longest);
            self.taught = seen.sums();
            let grown = self.grown(binds_now, twice);
            self.decide(at, grown, Some(mean), false);
            return;
        };
        // Little's law: with `in_flight` running and a mean run time `mean`
        // against the unloaded `base.mean`, about this many wait (all but one
        // at most).
        let queue = if mean > 0.0 {
            (in_flight * (1.0 - base.mean / mean)).min(in_flight - 1.0)
        } else {
            0.0
        };
        // Its standard error: the round's mean and the unloaded one are both
        // uncertain. Student's t, roughly: a variance seen in few samples is
        // uncertain too. Noise is a share of the run time (a service that
        // runs a round 1.5 times as long varies 1.5 times as much in it), so
        // the test is of `mean − base` against the spread scaled to `mean`,
        // which in items is `in_flight × spread / base`. Against the spread
        // as it is (`/ mean` here: a plain test of the rise), the rounds of
        // lognormal services that ran long by chance passed for queues: on
        // σ 0.6, runs whose goodput fell to 0.84 to 0.89 (tools/models).
        let freedom = (base.spread - 1.0).max(1.0);
        let t = 1.0 + (1.2 + 1.2 / freedom) / freedom;
        let error = if base.spread < FIRST_SAMPLES {
            f64::INFINITY
        } else {
            t * in_flight * (base.variance / samples + base.variance / base.weight).sqrt()
                / base.mean
        };
        let floor = in_flight * (1.0 - 1.0 / self.tolerance);
        let threshold = (SUSPECT * error).max(floor);
        let sure = (SURE * error).max(floor);
        // Little's law again, from the rate: the service completes what it
        // serves at `whole / rate` each; the rest of those in flight wait.
        // Coarser, but it sees a queue whose waiting items do not complete
        // (a service that serves newcomers first starves them). Only then: a
        // queue the run time shows is measured by it, and the rate of a round
        // is biased low wherever completions come in bursts (of a steady
        // service that completes 32 every 10 ms, a round of 34 that catches
        // the end of one burst and the start of a third spans 20 ms: half the
        // true rate), and it would cut twice as deep as the queue.
        // Neither this nor the outliers below count before the unloaded run
        // time has its first samples, any more than the queue does: against a
        // figure from one or two fast items, every item looks late.
        let known = base.spread >= FIRST_SAMPLES;
        let starved = rate.map_or(0.0, |rate| in_flight - rate * base.whole);
        let shown = queue > threshold;
        let starved = if known && !shown && starved > SURE * in_flight / counted.sqrt() {
            starved.min(in_flight - 1.0)
        } else {
            0.0
        };
        // More outliers than the service has: items that waited several run
        // times (a service that serves newcomers first starves them).
        let expected = base.outliers.max(RARE) * counted;
        let excess = self.round.times.outliers as f64 - expected;
        let starved = if known && excess > SUSPECT * expected.sqrt() + 1.0 {
            starved.max(excess).min(in_flight - 1.0)
        } else {
            starved
        };
        // Rounds right after a change favour the fast items (each ends as the
        // first of many new items complete): only a round after two at the
        // same limit (a warm-up counts) shows the mean run time as it is.
        if self.halved_for_nothing(&seen, at) {
            return;
        }
        let settled = self.same >= SETTLED;
        self.same += 1;
        let suspect = self.suspect.take();
        if queue <= threshold && starved == 0.0 {
            self.streak = None;
            // Slow start's earlier items teach the unloaded run time too.
            let taught = self
                .round
                .earlier
                .seen()
                .map_or(seen, |earlier| seen.pooled(&earlier));
            self.learn(&taught, suspect, settled, queue < -threshold);
            let grown = self.grown(binds_now, twice);
            self.decide(at, grown, Some(mean), false);
            return;
        }
        if queue <= sure && starved == 0.0 && suspect.is_none() {
            // Within three standard errors: it counts if the next round shows
            // it too.
            self.suspect = Some(seen);
            self.decide(at, self.limit, Some(mean), false);
            return;
        }
        // Cuts begun by a round whose run time showed a queue are checked
        // against what the run time does below (`halved_for_nothing`); the
        // other signals do not move the mean, so the check cannot refute them.
        if queue > threshold && self.cuts.is_none() {
            self.cuts = Some(Cuts {
                limit: self.limit,
                in_flight,
                first: seen,
                below: None,
            });
        }
        let queue = queue.max(starved);
        // The same mean run time as the last round, both after a large cut
        // (the first round of a rise may mix old and new run times): the run
        // time itself moved, it is not a queue. Learn it, and go back as far
        // as the first round of the streak allows with it.
        if let Some(streak) = self.streak {
            if streak.cuts >= 2
                && limit <= REBASE_CUT * streak.limit as f64
                && (mean - streak.mean).abs() <= REBASE_SAME * streak.mean
            {
                self.base = Some(Baseline::new(&seen, self.limit));
                self.provisional = false;
                self.ceiling = None;
                self.streak = None;
                self.cuts = None;
                let (first, in_flight, first_mean) = streak.first;
                let back = self.rounded(first, in_flight * mean / first_mean);
                self.decide(at, back, Some(mean), false);
                return;
            }
        }
        // What the service took: those in flight less those that waited,
        // give or take the noise (a standing queue within one standard error
        // costs little where the run time varies that much).
        // (When the limit was not reached, the source held some back: the
        // limit comes down by the queue, not to what ran less the queue.)
        let ran = if binds_now || self.slow_start {
            in_flight
        } else {
            limit
        };
        let lowered = self.lowered(ran - queue + (KEEP * error).min(queue));
        let large = lowered as f64 <= REBASE_CUT * limit;
        self.streak = large.then(|| Streak {
            first: self
                .streak
                .map_or((self.limit, in_flight, mean), |streak| streak.first),
            cuts: self.streak.map_or(1, |streak| streak.cuts + 1),
            limit: self.limit,
            mean,
        });
        self.ceiling = Some(self.limit);
        self.step = 1;
        self.held = 0;
        self.decide(at, lowered, Some(mean), false);
    }

    /// Whether the cuts that brought the limit to half, or less, of where a
    /// queue began them cut a queue that was not one, and if so, rebases: a
    /// queue that large would have taken most of the run time's excess over
    /// the unloaded one with it, and the run time kept more than half.
    fn halved_for_nothing(&mut self, seen: &Seen, at: Duration) -> bool {
        let limit = self.limit;
        let (Some(cuts), Some(base)) = (&mut self.cuts, self.base) else {
            return false;
        };
        #[allow(clippy::cast_precision_loss)]
        if limit as f64 > HALVED * cuts.limit as f64 {
            return false;
        }
        let below = cuts.below.map_or(*seen, |below| below.pooled(seen));
        cuts.below = Some(below);
        if below.samples < HALVED_SAMPLES {
            return false;
        }
        // Enough to tell, either way.
        let Cuts {
            limit: from,
            in_flight,
            first,
            ..
        } = *cuts;
        self.cuts = None;
        if below.mean < (first.mean + base.mean) / 2.0 {
            return false;
        }
        self.base = Some(Baseline::new(&below, limit));
        self.provisional = false;
        self.fresh = None;
        self.ceiling = None;
        self.step = 1;
        self.streak = None;
        let back = self.rounded(from, in_flight * below.mean / first.mean);
        self.decide(at, back, Some(seen.mean), false);
        true
    }

    /// What a round with no queue (and a suspect one before it, which was
    /// noise after all) teaches the unloaded run time.
    fn learn(&mut self, seen: &Seen, suspect: Option<Seen>, settled: bool, faster: bool) {
        let limit = self.limit;
        let Some(base) = &mut self.base else {
            return;
        };
        let rounds = suspect.iter().chain([seen]);
        if self.slow_start {
            // Biased to the fast items, but the best there is yet. Its first
            // samples are few: one slow item among them (the very first, even)
            // would make it too high for the next ones to be outliers against
            // it, and every queue in slow start would hide. The longest sample
            // it holds is left out once it is an outlier against the rest.
            for seen in rounds {
                base.learn(seen, limit);
                let (samples, total, squares) = seen.sums();
                let taught = &mut self.taught;
                *taught = (taught.0 + samples, taught.1 + total, taught.2 + squares);
                let Some(slowest) = self.slowest.map(|slowest| slowest.max(seen.longest)) else {
                    continue;
                };
                self.slowest = Some(slowest);
                if base.weight <= 1.0 {
                    continue;
                }
                let rest = (base.mean * base.weight - slowest) / (base.weight - 1.0);
                if slowest > CLIP * rest {
                    base.without(slowest, self.taught);
                    self.slowest = None;
                }
            }
        } else if !settled {
            // Biased to the fast items: nothing to learn.
        } else if self.provisional {
            // Slow start's rounds all came right after a change: the settled
            // rounds after it replace what they showed, once enough.
            for seen in rounds {
                base.learn_spread(seen);
                match &mut self.fresh {
                    Some(fresh) => fresh.learn(seen, limit),
                    None => self.fresh = Some(Baseline::new(seen, limit)),
                }
            }
            if let Some(fresh) = self.fresh.filter(|fresh| fresh.weight >= FRESH) {
                // A ceiling found against slow start's figure is wrong if
                // that figure was.
                let moved = (fresh.mean - base.mean).abs()
                    > SUSPECT * (fresh.variance / fresh.weight).sqrt()
                        + base.mean * (1.0 - 1.0 / self.tolerance);
                if moved && self.ceiling.take().is_some() {
                    self.step = 1;
                }
                *base = fresh;
                self.provisional = false;
                self.fresh = None;
            }
        } else if limit <= base.at || faster {
            // At a limit no higher than where it learned, no queue hides that
            // it did not have; above, a queue within the noise could, and
            // learning there (its mean, or how much it varies) would let it
            // creep up with the load. A round faster by more than the noise
            // shows it too high, though.
            rounds.for_each(|seen| base.learn(seen, limit));
        }
    }

    /// The limit after a round with no queue.
    fn grown(&mut self, binds: bool, twice: bool) -> usize {
        let limit = self.limit;
        if self.ceiling.is_some_and(|ceiling| limit >= ceiling) {
            // A probe of the ceiling showed no queue: it is stale. The service
            // takes more than before, how much more is unknown: one more, then
            // twice as much more each round that binds.
            self.ceiling = None;
            self.step = 1;
            if binds && !self.slow_start {
                let grown = limit.saturating_add(self.step);
                self.step = self.step.saturating_mul(2);
                return grown;
            }
        }
        if self.slow_start {
            if !binds {
                // The source, not the limit, holds it back: doubling ends.
                self.slow_start = false;
                return limit;
            }
            let doubled = limit.saturating_mul(2);
            return self
                .ceiling
                .map_or(doubled, |ceiling| doubled.min(ceiling - 1).max(limit));
        }
        // Past a stale ceiling, every round that binds grows it.
        let climbing = self.ceiling.is_none() && self.step > 1;
        if !(twice || climbing && binds) {
            // Reached now and then: the source is about as fast as the limit,
            // and each time it is reached the source waits. One more; just
            // below the ceiling, held there and probing it, as a limit that
            // binds is (else a ceiling found by noise would hold for good).
            if binds || self.reached.0 < SOMETIMES {
                return limit;
            }
            return match self.ceiling {
                Some(ceiling) if limit + 1 >= ceiling => self.hold_or_probe(limit, ceiling),
                _ => limit + 1,
            };
        }
        match self.ceiling {
            Some(ceiling) if limit + 1 < ceiling => limit + ((ceiling - limit) / 2).max(1),
            Some(ceiling) => self.hold_or_probe(limit, ceiling),
            None => {
                let grown = limit.saturating_add(self.step);
                self.step = self.step.saturating_mul(2);
                grown
            }
        }
    }

    /// Held just below `ceiling` for one more round: every 160 samples or 32
    /// rounds, whichever comes first, the ceiling itself.
    fn hold_or_probe(&mut self, limit: usize, ceiling: usize) -> usize {
        self.held += 1;
        if self.held * limit >= PROBE_SAMPLES || self.held >= PROBE_ROUNDS {
            self.held = 0;
            ceiling
        } else {
            limit
        }
    }

    /// Back-pressure.
    fn overload(&mut self, sample: &Sample) {
        let done = sample.started + sample.run;
        // An item started in the very clock reading of a back-off cannot be
        // told apart from one started before it: taken as the same news.
        let stale = self.round.since.is_some_and(|since| {
            sample.started < since || (self.burst.is_some() && sample.started == since)
        });
        if stale {
            // From an item started before the last change: it ran under the
            // old limit. After a back-off, each such refusal says the service
            // took one fewer than the limit then.
            let Some(burst) = &mut self.burst else {
                return;
            };
            burst.refused += 1;
            let ceiling = burst.limit.saturating_sub(burst.refused).max(self.min) + 1;
            let ceiling = self.ceiling.map_or(ceiling, |c| c.min(ceiling));
            self.ceiling = Some(ceiling);
            let limit = self.limit.min(ceiling - 1).max(self.min);
            if limit != self.limit {
                // Not a new round: the same items are still leaving.
                let since = self.round.since;
                self.decide(done, limit, None, true);
                self.round.since = since;
            }
            return;
        }
        self.ceiling = Some(self.limit);
        self.step = 1;
        self.burst = Some(Burst {
            limit: self.limit,
            refused: 1,
        });
        self.held = 0;
        self.streak = None;
        self.cuts = None;
        #[allow(clippy::cast_precision_loss)]
        let limit = self.lowered((self.limit as f64 * self.backoff).floor());
        self.decide(done, limit, None, true);
    }
}

/// Whether a round of `samples` binds: all but a tenth of them (rounded up)
/// reached the limit.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
fn binds(saturated: usize, samples: usize) -> bool {
    samples - saturated <= (samples as f64 * LOOSE).ceil() as usize
}

impl Controller for Aimd {
    fn initial(&self) -> usize {
        self.limit
    }

    fn sample(&mut self, sample: &Sample) -> usize {
        if sample.overload {
            self.overload(sample);
            return self.limit;
        }
        let run = sample.run.as_secs_f64();
        let outlier = self
            .base
            .is_some_and(|base| base.mean > 0.0 && run > base.mean * CLIP);
        let round = &mut self.round;
        if self.slow_start && round.since.is_some_and(|since| sample.started < since) {
            // Slow start has no warm-up: its rounds would take twice as long.
            // An item started before the doubling ran under the old limit,
            // though, and most of a round's first completions are such items:
            // a queue the new limit made would hide behind them.
            round.earlier.add(run, outlier);
            return self.limit;
        }
        if round.warm_up > 0 {
            round.warm_up -= 1;
            round.warm_samples += 1;
            round.warm_saturated += usize::from(sample.saturated);
            return self.limit;
        }
        let done = (sample.started + sample.run).as_secs_f64();
        round.times.add(run, outlier);
        round.first_done.get_or_insert(done);
        round.last_done = done;
        round.saturated += usize::from(sample.saturated);
        round.in_flight += sample.in_flight;
        // A round of nothing but outliers ends too: the run time moved.
        if round.times.samples >= self.limit || round.times.outliers >= self.limit {
            self.end_round(sample.started + sample.run);
        }
        self.limit
    }
}
