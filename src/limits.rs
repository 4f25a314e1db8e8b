//! Budgets that move: the [`Limits`] handle, shared by the stream and whoever
//! changes its `workers` and `waiting` while it runs.
//!
//! The handle stores the new values and signals the stream; the stream applies
//! them the next time it looks for work (in place: the signal is the root's
//! control bit of the wake tree, so a stream whose limits never change pays
//! nothing; spawned: under the state lock). The rules, for both modes:
//!
//! - Raising takes effect at once: the signal wakes the stream, which starts
//!   items without waiting for a completion.
//! - Lowering cancels nothing: new starts wait until fewer than the new `workers`
//!   run, and a waiting queue longer than the new `waiting` keeps its items; the
//!   source is not pulled again until the queue is below the limit.
//! - `workers == 0` pauses: nothing new starts, running work finishes.
//! - The window of an ordered stream is fixed when it is built.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::observe::{self, Cause, LimitSeries};
use crate::wake::Control;

/// A handle to a stream's `workers` and `waiting` budgets, to read or change them
/// while the stream runs, from any task or thread.
///
/// Returned by [`BoundedBuffered::limits`](crate::BoundedBuffered::limits) and
/// [`Spawned::limits`](crate::Spawned::limits) (a handle taken before
/// [`spawn_on`](crate::BoundedBuffered::spawn_on) keeps working after it);
/// `Clone + Send + Sync`, and it stays valid (changing nothing) after the stream is
/// dropped.
///
/// - **Raising** takes effect at once: the handle wakes the stream's task, which
///   starts items without waiting for another completion.
/// - **Lowering** never cancels running work: new starts wait until fewer than the
///   new `workers` run. A waiting queue longer than the new `waiting` keeps its
///   items, dropping none, and the source is not pulled again until the queue is
///   below the limit.
/// - **`set_workers(0)` pauses**: nothing new starts, running work finishes;
///   raising it again resumes. (`bounded(0, _)` still panics: a stream built with
///   no worker and no handle could never resume.)
/// - Once the limits are stable and the work is within them (after a lowering,
///   once the excess running work has finished and the queue is down to the new
///   `waiting`; at once after a raise), the admission bound is exact for them:
///   with every future blocked, `workers` run or hold an output and `waiting`
///   wait (`min(workers, window)` and `waiting` ordered; the window is fixed at
///   construction; with keys or weights `max(waiting, 1)` wait, as they always
///   keep one waiting place).
///
/// [`Stats`](crate::Stats) reports the limits in force alongside the counts.
///
/// # Examples
///
/// ```
/// use bounded_buffered::BoundedStreamExt;
/// use futures::{StreamExt, stream};
///
/// # futures::executor::block_on(async {
/// let mut jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(2, 2);
/// let limits = jobs.limits();
/// assert_eq!((limits.workers(), limits.waiting()), (2, 2));
/// limits.set_workers(8); // from any thread, while the stream runs
/// assert_eq!(jobs.next().await, Some(0));
/// assert_eq!(jobs.stats().workers_limit, 8);
/// # });
/// ```
#[derive(Clone)]
pub struct Limits {
    settings: Arc<Settings>,
}

/// What a stream and its handles share: the limits in force as `stats()`
/// reports them (in place, a handle's change is applied at the stream's next
/// poll, and reported at once), and how a change reaches the stream and the
/// `metrics` exporter.
pub(crate) struct Settings {
    workers: AtomicUsize,
    waiting: AtomicUsize,
    /// The start rate (`rate`), if the stream has one: `(n, per)`. Changed
    /// rarely, read only when a change is signalled, so a lock suffices.
    rate: Mutex<Option<(u32, Duration)>>,
    /// Locked by whoever changes a limit (a handle, the controller) and by a
    /// switch of mode, never by the stream while it runs, and never across
    /// the signal itself.
    reach: Mutex<Reach>,
}

/// Whom a change of limits reaches.
struct Reach {
    /// The stream: replaced once if it changes mode ([`spawn_on`]) after a
    /// handle was taken.
    ///
    /// [`spawn_on`]: crate::BoundedBuffered::spawn_on
    signal: Signal,
    /// The `metrics` exporter's limit series, if any: a change is counted
    /// and shown where it is made, under this lock, so that of two handles
    /// racing the last store is the value shown.
    series: Option<Arc<LimitSeries>>,
}

/// How a handle tells its stream that the limits changed.
#[derive(Clone)]
pub(crate) enum Signal {
    /// The control bit of the in-place wake tree.
    InPlace(Control),
    /// A lock section of the spawned state, which applies the limits there and
    /// sends a task for any start a raise freed.
    Spawned(Arc<dyn Retarget>),
}

/// The spawned state as a [`Limits`] handle sees it.
pub(crate) trait Retarget: Send + Sync {
    /// Applies `limits.get()`, read under the state's lock so that of two
    /// handles racing, the last value stored is the one applied.
    fn apply(&self, limits: &Settings);
}

impl Settings {
    pub(crate) fn new(
        workers: usize,
        waiting: usize,
        rate: Option<(u32, Duration)>,
        signal: Signal,
    ) -> Self {
        Self {
            workers: AtomicUsize::new(workers),
            waiting: AtomicUsize::new(waiting),
            rate: Mutex::new(rate),
            reach: Mutex::new(Reach {
                signal,
                series: None,
            }),
        }
    }

    fn reach(&self) -> MutexGuard<'_, Reach> {
        self.reach.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets the limits given, for `cause`: a change of one in force is
    /// counted and shown by the exporter, if any, and logged (`tracing`). The
    /// caller then signals the stream, unless the stream made it.
    pub(crate) fn set(&self, workers: Option<usize>, waiting: Option<usize>, cause: Cause) {
        let reach = self.reach();
        let old = self.get();
        if let Some(workers) = workers {
            self.workers.store(workers, SeqCst);
        }
        if let Some(waiting) = waiting {
            self.waiting.store(waiting, SeqCst);
        }
        let new = self.get();
        if new != old {
            observe::limit_changed(old, new, cause);
            if let Some(series) = &reach.series {
                series.changed(old, new);
            }
        }
    }

    /// The controller's initial `workers`: not a change, but shown.
    pub(crate) fn set_initial_workers(&self, workers: usize) {
        let reach = self.reach();
        self.workers.store(workers, SeqCst);
        if let Some(series) = &reach.series {
            series.show(self.get());
        }
    }

    /// The stream's `metrics` exporter publishes the limits' changes from
    /// now on, starting with the limits in force.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn attach(&self, series: Arc<LimitSeries>) {
        let mut reach = self.reach();
        series.show(self.get());
        reach.series = Some(series);
    }

    /// The limits the handles last set.
    pub(crate) fn get(&self) -> (usize, usize) {
        (self.workers.load(SeqCst), self.waiting.load(SeqCst))
    }

    fn rate_lock(&self) -> MutexGuard<'_, Option<(u32, Duration)>> {
        self.rate.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The start rate the handles last set, if the stream has one.
    pub(crate) fn rate(&self) -> Option<(u32, Duration)> {
        *self.rate_lock()
    }

    /// The stream was given a rate (`rate`, after a handle was taken).
    pub(crate) fn set_initial_rate(&self, rate: (u32, Duration)) {
        *self.rate_lock() = Some(rate);
    }

    /// Points the handles at another driver of the same stream, and has it
    /// apply the current limits, so a change made during the switch is not
    /// lost (it reaches the old driver, the new one, or both).
    pub(crate) fn redirect(&self, signal: Signal) {
        self.reach().signal = signal;
        self.signal();
    }

    fn signal(&self) {
        // A clone, so that no lock is held while the stream reacts (a spawner
        // may poll a new task, which may use a handle, before returning).
        let signal = self.reach().signal.clone();
        match signal {
            Signal::InPlace(control) => control.signal(),
            Signal::Spawned(state) => state.apply(self),
        }
    }
}

impl Limits {
    pub(crate) fn new(settings: Arc<Settings>) -> Self {
        Self { settings }
    }

    /// How many futures may run at once.
    pub fn workers(&self) -> usize {
        self.settings.workers.load(SeqCst)
    }

    /// How many items may be pulled ahead of the workers.
    pub fn waiting(&self) -> usize {
        self.settings.waiting.load(SeqCst)
    }

    /// Sets how many futures may run at once; see the [type docs](Self) for what
    /// raising, lowering and 0 do.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// let jobs = stream::iter(0..10u32).map(|n| async move { n }).bounded(4, 0);
    /// let limits = jobs.limits();
    /// limits.set_workers(0); // paused: nothing starts until it is raised again
    /// assert_eq!(limits.workers(), 0);
    /// ```
    pub fn set_workers(&self, workers: usize) {
        self.settings.set(Some(workers), None, Cause::Handle);
        self.settings.signal();
    }

    /// Sets how many items may be pulled ahead of the workers; see the
    /// [type docs](Self) for what raising and lowering do.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// let jobs = stream::iter(0..10u32).map(|n| async move { n }).bounded(4, 0);
    /// jobs.limits().set_waiting(16); // prefetch from now on
    /// assert_eq!(jobs.stats().waiting_limit, 16);
    /// ```
    pub fn set_waiting(&self, waiting: usize) {
        self.settings.set(None, Some(waiting), Cause::Handle);
        self.settings.signal();
    }

    /// The start rate, `(n, per)`, if the stream has one
    /// ([`rate`](crate::BoundedBuffered::rate)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// let jobs = stream::iter(0..10u32).map(|n| async move { n }).bounded(4, 0);
    /// assert_eq!(jobs.limits().rate(), None);
    /// let jobs = jobs
    ///     .timer(|_: Instant| std::future::pending())
    ///     .rate(50, Duration::from_secs(1));
    /// assert_eq!(jobs.limits().rate(), Some((50, Duration::from_secs(1))));
    /// ```
    pub fn rate(&self) -> Option<(u32, Duration)> {
        self.settings.rate()
    }

    /// Sets the start rate to `n` starts per `per`, from now on (the burst
    /// stays as built). What the bucket owed under the old rate carries
    /// over in time: a start due in 30 ms is still due in 30 ms. A raise
    /// takes effect at once, as a raise of `workers` does.
    ///
    /// # Panics
    ///
    /// If the stream has no rate (one can be changed, not added: build the
    /// stream with [`rate`](crate::BoundedBuffered::rate)), or if `n` is 0
    /// or `per` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// let jobs = stream::iter(0..10u32)
    ///     .map(|n| async move { n })
    ///     .bounded(4, 0)
    ///     .timer(|_: Instant| std::future::pending())
    ///     .rate(50, Duration::from_secs(1));
    /// jobs.limits().set_rate(10, Duration::from_secs(1)); // the service asked us to slow down
    /// assert_eq!(jobs.limits().rate(), Some((10, Duration::from_secs(1))));
    /// ```
    #[track_caller]
    pub fn set_rate(&self, n: u32, per: Duration) {
        assert!(
            n > 0,
            "`set_rate` needs at least one start per period: with `n == 0` nothing could ever start"
        );
        assert!(!per.is_zero(), "`set_rate` needs a period longer than zero");
        {
            let mut rate = self.settings.rate_lock();
            assert!(
                rate.is_some(),
                "`set_rate` on a stream without a rate: build it with `.rate(n, per)`"
            );
            *rate = Some((n, per));
        }
        self.settings.signal();
    }
}

impl fmt::Debug for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut limits = f.debug_struct("Limits");
        limits
            .field("workers", &self.workers())
            .field("waiting", &self.waiting());
        // Only a stream with a rate has one to show.
        if let Some(rate) = self.rate() {
            limits.field("rate", &rate);
        }
        limits.finish()
    }
}
