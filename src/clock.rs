//! Time, when a stream needs it: the clock, read at most once per `poll_next`,
//! and the stamps each item carries from its pull to its hand-out.
//!
//! A plain stream is [`Untimed`]: it never reads a clock, and its stamps are `()`,
//! so nothing of this module costs it anything. [`max_wait`], [`timed`] and
//! [`clock`] make it [`Clocked`]: then each waiting item carries the time it was
//! pulled, each running future the time it started, each held output the time
//! it completed, and the clock is read lazily, once per `poll_next` at most:
//! every event one call handles gets the same reading. That is the resolution of
//! every duration the stream measures: the time one `poll_next` takes.
//!
//! [`max_wait`]: crate::BoundedBuffered::max_wait
//! [`timed`]: crate::BoundedBuffered::timed
//! [`clock`]: crate::BoundedBuffered::clock

use std::fmt;
use std::num::NonZeroU64;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use pin_project_lite::pin_project;

use crate::expiry::MaxWait;
use crate::observe::{Kind, Samples};
use crate::time::Time;
use crate::timings::Timings;

mod sealed {
    pub trait Sealed {}
}

/// Whether a stream reads the time: [`Untimed`] (the default) or [`Clocked`].
///
/// Part of the stream's type; you never implement or call it. Both are `Send`,
/// `Sync` and `Unpin`, so they add nothing to what the stream needs of its
/// items for those.
pub trait Clocking: sealed::Sealed + Send + Sync + Unpin + 'static {
    /// Whether the stream reads a clock at all: only such a stream can have
    /// time budgets, and so a timer to arm.
    #[doc(hidden)]
    const TIMED: bool;

    /// A flag only a stream that reads a clock keeps: `bool`, or `()` (of
    /// size zero, always down) for one that does not, so that what carries
    /// it costs the others nothing.
    #[doc(hidden)]
    type Flag: Flag;

    /// What an item carries to remember when something happened to it.
    #[doc(hidden)]
    type Stamp: Copy + Default + Send + Sync + Unpin + 'static;

    /// A `poll_next` begins: the time read by the previous one is stale.
    #[doc(hidden)]
    fn begin_poll(&mut self);

    /// Now, for an item pulled into the waiting queue.
    #[doc(hidden)]
    fn stamp_pulled(&mut self) -> Self::Stamp;

    /// Now, for an item that starts.
    #[doc(hidden)]
    fn stamp(&mut self) -> Self::Stamp;

    /// A worker picks up a waiting item pulled at `pulled`: `None` to start it
    /// (its wait is recorded), or, if the stream's items may `expire` at all,
    /// how long it waited when that was longer than the stream's `max_wait`.
    #[doc(hidden)]
    fn pick_up(&mut self, pulled: Self::Stamp, expire: bool) -> Option<Duration>;

    /// An item starts as soon as it is pulled: it waited no time.
    #[doc(hidden)]
    fn started_at_once(&mut self);

    /// An item that started at `started` completed: records how long it ran and
    /// returns the completion's stamp.
    #[doc(hidden)]
    fn completed(&mut self, started: Self::Stamp) -> Self::Stamp;

    /// An output held since `completed` is handed out: records how long it was
    /// held.
    #[doc(hidden)]
    fn handed_out(&mut self, completed: Self::Stamp);

    /// When an item that ran from `started` to `completed` started (from the
    /// first reading) and how long it ran, if this clock measures runs for an
    /// adaptive controller.
    #[doc(hidden)]
    fn run_of(&self, started: Self::Stamp, completed: Self::Stamp) -> Option<(Duration, Duration)>;

    /// A copy of the distributions, if timing is on.
    #[doc(hidden)]
    fn timings(&self) -> Option<Timings>;

    /// Keeps every duration it records, for a `metrics` exporter to drain;
    /// returns whether it records any (timing is on).
    #[doc(hidden)]
    fn tap(&mut self) -> bool;

    /// Hands the durations kept since the last call to `f`: the kind (wait,
    /// run, held), nanoseconds, how many.
    #[doc(hidden)]
    fn drain_samples(&mut self, f: &mut dyn FnMut(usize, u64, usize));

    /// Whether `clock` gave the stream the caller's own clock.
    #[doc(hidden)]
    fn has_own_clock(&self) -> bool {
        false
    }

    /// The time budgets, with this poll's reading, if the stream has any
    /// (never for [`Untimed`]: every branch on them compiles away).
    #[doc(hidden)]
    fn time(&self) -> Option<&Time>;

    /// The same, to apply them.
    #[doc(hidden)]
    fn time_mut(&mut self) -> Option<&mut Time>;

    /// The same settings on a clock: how `max_wait`, `timed` and `clock` turn an
    /// [`Untimed`] stream into a [`Clocked`] one, and keep what a [`Clocked`]
    /// one had.
    #[doc(hidden)]
    fn into_clocked(self) -> Clocked;
}

/// See [`Clocking::Flag`]. Public only because that trait names it; it
/// cannot be named from outside.
#[doc(hidden)]
pub trait Flag: Copy + Default + Send + Sync + Unpin + 'static {
    fn raise(&mut self);
    fn is_raised(self) -> bool;
}

impl Flag for () {
    #[inline(always)]
    fn raise(&mut self) {}

    #[inline(always)]
    fn is_raised(self) -> bool {
        false
    }
}

impl Flag for bool {
    #[inline(always)]
    fn raise(&mut self) {
        *self = true;
    }

    #[inline(always)]
    fn is_raised(self) -> bool {
        self
    }
}

/// A stream that never reads a clock (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct Untimed;

impl sealed::Sealed for Untimed {}

impl Clocking for Untimed {
    const TIMED: bool = false;
    type Flag = ();
    type Stamp = ();

    #[inline(always)]
    fn begin_poll(&mut self) {}

    #[inline(always)]
    fn stamp_pulled(&mut self) {}

    #[inline(always)]
    fn stamp(&mut self) {}

    #[inline(always)]
    fn pick_up(&mut self, (): (), _: bool) -> Option<Duration> {
        None
    }

    #[inline(always)]
    fn started_at_once(&mut self) {}

    #[inline(always)]
    fn completed(&mut self, (): ()) {}

    #[inline(always)]
    fn handed_out(&mut self, (): ()) {}

    #[inline(always)]
    fn run_of(&self, (): (), (): ()) -> Option<(Duration, Duration)> {
        None
    }

    fn timings(&self) -> Option<Timings> {
        None
    }

    fn tap(&mut self) -> bool {
        false
    }

    fn drain_samples(&mut self, _: &mut dyn FnMut(usize, u64, usize)) {}

    #[inline(always)]
    fn time(&self) -> Option<&Time> {
        None
    }

    #[inline(always)]
    fn time_mut(&mut self) -> Option<&mut Time> {
        None
    }

    fn into_clocked(self) -> Clocked {
        Clocked {
            now: Box::new(Instant::now),
            own_clock: false,
            time: None,
            epoch: None,
            read: None,
            max_wait: None,
            timings: None,
            samples: Samples::default(),
            runs: false,
        }
    }
}

/// A stream that reads a clock, for [`max_wait`](crate::BoundedBuffered::max_wait),
/// [`timed`](crate::BoundedBuffered::timed),
/// [`adaptive`](crate::BoundedBuffered::adaptive) or
/// [`clock`](crate::BoundedBuffered::clock).
pub struct Clocked {
    /// `Instant::now` unless [`clock`](crate::BoundedBuffered::clock) or
    /// [`timer`](crate::BoundedBuffered::timer) gave another (boxing a
    /// function item allocates nothing).
    now: Box<dyn Fn() -> Instant + Send + Sync>,
    /// Whether `now` is the caller's own (`clock`): a timer brings its own
    /// clock, and a stream has one notion of now.
    own_clock: bool,
    /// The run's deadline and the start rate, if any: then the clock is read
    /// at the start of every poll, for their rules ([`crate::time`]).
    time: Option<Box<Time>>,
    /// The first reading: stamps count nanoseconds from it, so that a duration
    /// is one subtraction of integers (and a stamp is 8 bytes, not 16).
    epoch: Option<Instant>,
    /// The reading of the current `poll_next`, once taken.
    read: Option<Tick>,
    /// The limit of [`max_wait`](crate::BoundedBuffered::max_wait), if set.
    max_wait: Option<MaxWait>,
    /// The distributions, once [`timed`](crate::BoundedBuffered::timed) was called.
    timings: Option<Box<Timings>>,
    /// The durations recorded since a `metrics` exporter last took them, once
    /// it asked ([`Clocking::tap`]; nothing without the feature).
    samples: Samples,
    /// Whether an adaptive controller needs every item's run time.
    runs: bool,
}

/// A reading of the clock: nanoseconds since the stream's first reading, plus
/// one (so that `Option<Tick>` is as small as a `Tick`).
pub(crate) type Tick = NonZeroU64;

/// Nanoseconds from `earlier` to `later` (0 if the clock went back).
#[inline]
fn between(earlier: Tick, later: Tick) -> u64 {
    later.get().saturating_sub(earlier.get())
}

impl fmt::Debug for Clocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Clocked")
            .field("timed", &self.timings.is_some())
            .field("max_wait", &self.max_wait)
            .finish_non_exhaustive()
    }
}

impl sealed::Sealed for Clocked {}

impl Clocked {
    /// Now, read once per `poll_next` at most.
    #[inline]
    fn now(&mut self) -> Tick {
        match self.read {
            Some(tick) => tick,
            None => self.read_clock(),
        }
    }

    fn read_clock(&mut self) -> Tick {
        let now = (self.now)();
        self.take_reading(now)
    }

    fn take_reading(&mut self, now: Instant) -> Tick {
        let epoch = *self.epoch.get_or_insert(now);
        let nanos =
            u64::try_from(now.saturating_duration_since(epoch).as_nanos()).unwrap_or(u64::MAX - 1);
        let tick = Tick::MIN.saturating_add(nanos);
        self.read = Some(tick);
        tick
    }

    /// A stream with time budgets reads the clock as each poll begins, for
    /// their rules, which ask for now without a `&mut`.
    #[cold]
    fn read_for_time(&mut self) {
        let now = (self.now)();
        self.take_reading(now);
        if let Some(time) = &mut self.time {
            time.read(now);
        }
    }

    /// Now, if `needed`; `None` (and no reading) otherwise.
    #[inline]
    fn now_if(&mut self, needed: bool) -> Option<Tick> {
        needed.then(|| self.now())
    }

    /// Whether anything needs to know how long items run and are held.
    #[inline]
    fn measures(&self) -> bool {
        self.runs || self.timings.is_some()
    }
}

impl Clocking for Clocked {
    const TIMED: bool = true;
    type Flag = bool;
    /// `None` where nothing needs the time: no reading is taken for it.
    type Stamp = Option<Tick>;

    #[inline]
    fn begin_poll(&mut self) {
        self.read = None;
        if self.time.is_some() {
            self.read_for_time();
        }
    }

    #[inline]
    fn stamp_pulled(&mut self) -> Option<Tick> {
        self.now_if(self.max_wait.is_some() || self.measures())
    }

    #[inline]
    fn stamp(&mut self) -> Option<Tick> {
        self.now_if(self.measures())
    }

    #[inline]
    fn pick_up(&mut self, pulled: Option<Tick>, expire: bool) -> Option<Duration> {
        let pulled = pulled?;
        let waited = between(pulled, self.now());
        if expire && self.max_wait.is_some_and(|limit| limit.expired(waited)) {
            return Some(Duration::from_nanos(waited));
        }
        if let Some(timings) = &mut self.timings {
            let bucket = timings.wait.record(waited);
            self.samples.record(Kind::Wait, bucket);
        }
        None
    }

    #[inline]
    fn started_at_once(&mut self) {
        if let Some(timings) = &mut self.timings {
            let bucket = timings.wait.record(0);
            self.samples.record(Kind::Wait, bucket);
        }
    }

    #[inline]
    fn completed(&mut self, started: Option<Tick>) -> Option<Tick> {
        let started = started?;
        let now = self.now();
        if let Some(timings) = &mut self.timings {
            let run = between(started, now);
            let bucket = timings.run.record(run);
            self.samples.record(Kind::Run, bucket);
        }
        Some(now)
    }

    #[inline]
    fn handed_out(&mut self, completed: Option<Tick>) {
        let Some(completed) = completed else {
            return;
        };
        let held = between(completed, self.now());
        if let Some(timings) = &mut self.timings {
            let bucket = timings.held.record(held);
            self.samples.record(Kind::Held, bucket);
        }
    }

    #[inline]
    fn run_of(
        &self,
        started: Option<Tick>,
        completed: Option<Tick>,
    ) -> Option<(Duration, Duration)> {
        let (started, completed) = (started?, completed?);
        Some((
            Duration::from_nanos(started.get() - 1),
            Duration::from_nanos(between(started, completed)),
        ))
    }

    fn timings(&self) -> Option<Timings> {
        self.timings.as_deref().cloned()
    }

    fn tap(&mut self) -> bool {
        if self.timings.is_some() {
            self.samples.tap();
        }
        self.timings.is_some()
    }

    fn drain_samples(&mut self, f: &mut dyn FnMut(usize, u64, usize)) {
        self.samples.drain(f);
    }

    fn has_own_clock(&self) -> bool {
        self.own_clock
    }

    #[inline]
    fn time(&self) -> Option<&Time> {
        self.time.as_deref()
    }

    #[inline]
    fn time_mut(&mut self) -> Option<&mut Time> {
        self.time.as_deref_mut()
    }

    fn into_clocked(self) -> Self {
        self
    }
}

impl Clocked {
    pub(crate) fn with_max_wait(mut self, limit: Duration) -> Self {
        self.max_wait = Some(MaxWait::new(limit));
        self
    }

    pub(crate) fn with_run_times(mut self) -> Self {
        self.runs = true;
        self
    }

    pub(crate) fn with_timings(mut self) -> Self {
        self.timings.get_or_insert_with(|| Box::new(Timings::new()));
        self
    }

    pub(crate) fn with_clock(mut self, now: impl Fn() -> Instant + Send + Sync + 'static) -> Self {
        self.now = Box::new(now);
        self.own_clock = true;
        self
    }

    /// The clock of a timer (`timer`): not the caller's own.
    pub(crate) fn with_timer_clock(
        mut self,
        now: impl Fn() -> Instant + Send + Sync + 'static,
    ) -> Self {
        self.now = Box::new(now);
        self.own_clock = false;
        self
    }

    /// The time budgets, made empty if there were none.
    pub(crate) fn time_budgets(&mut self) -> &mut Time {
        self.time.get_or_insert_with(Box::default)
    }
}

pin_project! {
    /// A running future with the time it started: its output comes back with it.
    pub(crate) struct Stamped<St, F> {
        stamp: St,
        #[pin]
        future: F,
    }
}

impl<St, F> Stamped<St, F> {
    #[inline(always)]
    pub(crate) fn new(stamp: St, future: F) -> Self {
        Self { stamp, future }
    }
}

impl<St: Copy, F: Future> Future for Stamped<St, F> {
    type Output = (St, F::Output);

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let stamp = *this.stamp;
        this.future.poll(cx).map(|output| (stamp, output))
    }
}
