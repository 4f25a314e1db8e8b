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
use std::sync::{Arc, Mutex, PoisonError};

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
///   construction).
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

/// What a stream and its handles share.
pub(crate) struct Settings {
    workers: AtomicUsize,
    waiting: AtomicUsize,
    /// Replaced once if the stream changes mode ([`spawn_on`]) after a handle
    /// was taken. Locked only by handles and that switch, never by the stream
    /// while it runs, and never across the signal itself.
    ///
    /// [`spawn_on`]: crate::BoundedBuffered::spawn_on
    signal: Mutex<Signal>,
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
    pub(crate) fn new(workers: usize, waiting: usize, signal: Signal) -> Self {
        Self {
            workers: AtomicUsize::new(workers),
            waiting: AtomicUsize::new(waiting),
            signal: Mutex::new(signal),
        }
    }

    /// The limits the handles last set.
    pub(crate) fn get(&self) -> (usize, usize) {
        (self.workers.load(SeqCst), self.waiting.load(SeqCst))
    }

    /// The stream's own controller set `workers`: the handles read it, and
    /// the stream, which made the change, needs no signal.
    pub(crate) fn set_workers_quietly(&self, workers: usize) {
        self.workers.store(workers, SeqCst);
    }

    /// Points the handles at another driver of the same stream, and has it
    /// apply the current limits, so a change made during the switch is not
    /// lost (it reaches the old driver, the new one, or both).
    pub(crate) fn redirect(&self, signal: Signal) {
        *self.signal.lock().unwrap_or_else(PoisonError::into_inner) = signal;
        self.signal();
    }

    fn signal(&self) {
        // A clone, so that no lock is held while the stream reacts (a spawner
        // may poll a new task, which may use a handle, before returning).
        let signal = self
            .signal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
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
        self.settings.workers.store(workers, SeqCst);
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
        self.settings.waiting.store(waiting, SeqCst);
        self.settings.signal();
    }
}

impl fmt::Debug for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limits")
            .field("workers", &self.workers())
            .field("waiting", &self.waiting())
            .finish()
    }
}
