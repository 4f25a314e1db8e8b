//! The [`Timer`] trait: how a stream with a run deadline or a start rate
//! wakes at a time when nothing else would wake it, on any executor; its
//! implementations for tokio, smol and closures; and [`Alarm`], the one
//! sleep a driver keeps armed for the engine.

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

/// A clock and a way to sleep until a time on it: what a stream with a
/// [`deadline`](crate::BoundedBuffered::deadline) or a
/// [`rate`](crate::BoundedBuffered::rate) uses to wake when the deadline
/// passes or a start becomes free, while every future it runs is blocked and
/// its source is quiet. As [`Spawner`](crate::Spawner) lets a stream spawn on
/// any executor, a `Timer` lets it sleep on any.
///
/// [`timer`](crate::BoundedBuffered::timer) gives a stream its timer, and
/// makes the timer's [`now`](Timer::now) the stream's clock: one notion of
/// now for the deadline, the rate, `max_wait` and the timings.
///
/// Implemented for `TokioTimer` (feature `tokio`, which follows tokio's
/// paused clock in tests), `SmolTimer` (feature `smol`), and any
/// `Fn(Instant) -> Fut` closure whose future completes at that instant (with
/// `Instant::now` as its clock). A stream keeps one sleep and re-arms it: it
/// asks for a new one only when the instant it waits for changes.
///
/// # Examples
///
/// A closure on tokio's timer, without the `tokio` feature:
///
/// ```
/// use std::time::{Duration, Instant};
///
/// use bounded_buffered::BoundedStreamExt;
/// use futures::{StreamExt, stream};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let deadline = Instant::now() + Duration::from_secs(5);
/// let outcomes: Vec<_> = stream::iter(0..3u32)
///     .map(|n| async move { n })
///     .bounded(2, 2)
///     .timer(|at: Instant| tokio::time::sleep_until(at.into()))
///     .deadline(deadline)
///     .collect()
///     .await;
/// assert_eq!(outcomes.len(), 3); // all three completed long before it
/// # }
/// ```
pub trait Timer: Send + Sync + 'static {
    /// What [`sleep_until`](Timer::sleep_until) returns.
    type Sleep: Future<Output = ()> + Send + 'static;

    /// Now, on this timer's clock: the stream's clock once it has this
    /// timer. `Instant::now()` unless the timer keeps time of its own (a
    /// paused or simulated clock).
    fn now(&self) -> Instant {
        Instant::now()
    }

    /// A future that completes once [`now`](Timer::now) reaches `deadline`
    /// (at once, if it has), and wakes its task then.
    fn sleep_until(&self, deadline: Instant) -> Self::Sleep;
}

impl<F, S> Timer for F
where
    F: Fn(Instant) -> S + Send + Sync + 'static,
    S: Future<Output = ()> + Send + 'static,
{
    type Sleep = S;

    fn sleep_until(&self, deadline: Instant) -> S {
        self(deadline)
    }
}

/// tokio's timer (`tokio::time::sleep_until`), and tokio's clock: under a
/// paused runtime (`start_paused`, `tokio::time::pause`) the stream's
/// deadline, rate and timings follow the paused clock.
///
/// The stream must be polled inside a tokio runtime with the time driver
/// enabled (`enable_time`, or `enable_all`), as any `tokio::time::sleep`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use bounded_buffered::{BoundedStreamExt, TokioTimer, Unfinished};
/// use futures::{StreamExt, stream};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let start = tokio::time::Instant::now().into_std();
/// // Two jobs of 10 ms and one of an hour, a deadline at 50 ms.
/// let outcomes: Vec<_> = stream::iter([10u64, 10, 3_600_000])
///     .map(|ms| async move {
///         tokio::time::sleep(Duration::from_millis(ms)).await;
///         ms
///     })
///     .bounded(3, 0)
///     .timer(TokioTimer)
///     .deadline(start + Duration::from_millis(50))
///     .collect()
///     .await;
/// assert_eq!(outcomes[0].as_ref().ok(), Some(&10));
/// assert_eq!(outcomes[1].as_ref().ok(), Some(&10));
/// assert!(matches!(outcomes[2], Err(Unfinished::Cancelled(_))));
/// assert!(matches!(outcomes[3], Err(Unfinished::Deadline(_))));
/// assert_eq!(tokio::time::Instant::now().into_std() - start, Duration::from_millis(50));
/// # }
/// ```
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioTimer;

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl Timer for TokioTimer {
    type Sleep = tokio::time::Sleep;

    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }

    fn sleep_until(&self, deadline: Instant) -> tokio::time::Sleep {
        tokio::time::sleep_until(deadline.into())
    }
}

/// smol's timer (`smol::Timer::at`), on the real clock.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
///
/// use bounded_buffered::{BoundedStreamExt, SmolTimer};
/// use futures::{StreamExt, stream};
///
/// let started = Instant::now();
/// let outcomes: Vec<_> = smol::block_on(
///     stream::iter(0..10u32)
///         .map(|n| async move { n })
///         .bounded(4, 4)
///         .timer(SmolTimer)
///         .rate(100, Duration::from_secs(1)) // one start every 10 ms
///         .collect(),
/// );
/// assert_eq!(outcomes.len(), 10);
/// assert!(started.elapsed() >= Duration::from_millis(90));
/// ```
#[cfg(feature = "smol")]
#[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
#[derive(Clone, Copy, Debug, Default)]
pub struct SmolTimer;

#[cfg(feature = "smol")]
#[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
impl Timer for SmolTimer {
    type Sleep = SmolSleep;

    fn sleep_until(&self, deadline: Instant) -> SmolSleep {
        SmolSleep(smol::Timer::at(deadline))
    }
}

/// The future of [`SmolTimer::sleep_until`]: `smol::Timer`, whose output
/// (the instant it fired) the stream does not need.
#[cfg(feature = "smol")]
#[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
#[derive(Debug)]
pub struct SmolSleep(smol::Timer);

#[cfg(feature = "smol")]
impl Future for SmolSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx).map(drop)
    }
}

/// A timer with its type erased, and the one sleep it keeps armed: the
/// drivers' mechanism for the engine's [`alarm`](crate::engine::Engine::alarm)
/// (in place, the consumer's poll arms it before it parks; spawned, the
/// stream's alarm task sleeps on it). No rule is here: the engine says when.
pub(crate) struct Alarm {
    timer: Box<dyn Arm>,
}

/// The stream's clock, read off its timer.
pub(crate) type Now = Box<dyn Fn() -> Instant + Send + Sync>;

impl Alarm {
    /// An alarm on `timer`, and the timer's clock, for the stream to read.
    pub(crate) fn new<T: Timer>(timer: T) -> (Self, Now) {
        let timer = Arc::new(timer);
        let clock = Arc::clone(&timer);
        let alarm = Self {
            timer: Box::new(Armed {
                timer,
                sleep: Mutex::new(None),
            }),
        };
        (alarm, Box::new(move || clock.now()))
    }

    /// Waits for `at`: `Ready` once it passed, else `Pending` with `cx`'s
    /// task woken then. The sleep is made the first time, and re-armed (in
    /// the same allocation) only when `at` changes: no allocation per wait.
    pub(crate) fn poll_at(&mut self, at: Instant, cx: &mut Context<'_>) -> Poll<()> {
        self.timer.poll_at(at, cx)
    }

    /// Lets go of the sleep, if any (the run needs no more waking).
    pub(crate) fn disarm(&mut self) {
        self.timer.disarm();
    }
}

impl fmt::Debug for Alarm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Alarm").finish_non_exhaustive()
    }
}

/// What [`Alarm`] asks of its timer, object-safe.
trait Arm: Send + Sync {
    fn poll_at(&mut self, at: Instant, cx: &mut Context<'_>) -> Poll<()>;
    fn disarm(&mut self);
}

struct Armed<T: Timer> {
    timer: Arc<T>,
    /// The sleep, and the instant it was made for. In a mutex only so that
    /// a stream stays `Sync` with a sleep that is not (a `Timer`'s sleep need
    /// only be `Send`): it is reached through `&mut` alone (`get_mut`), never
    /// locked, so it costs nothing.
    sleep: Mutex<Option<Sleeping<T::Sleep>>>,
}

/// A sleep, the instant it was made for, and whether it fired: it is kept
/// (and re-armed in place) across instants, so the stream allocates it once.
struct Sleeping<S> {
    at: Instant,
    sleep: Pin<Box<S>>,
    fired: bool,
}

impl<T: Timer> Armed<T> {
    fn sleep(&mut self) -> &mut Option<Sleeping<T::Sleep>> {
        // Never locked, so never poisoned.
        self.sleep.get_mut().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: Timer> Arm for Armed<T> {
    fn poll_at(&mut self, at: Instant, cx: &mut Context<'_>) -> Poll<()> {
        let Self { timer, sleep } = self;
        let slot = sleep.get_mut().unwrap_or_else(PoisonError::into_inner);
        match slot {
            // Fired for this instant already: a finished future is not
            // polled again.
            Some(Sleeping {
                at: armed,
                fired: true,
                ..
            }) if *armed == at => {
                return Poll::Ready(());
            }
            Some(Sleeping { at: armed, .. }) if *armed == at => {}
            // Another instant: a new sleep in the same allocation.
            Some(Sleeping {
                at: armed,
                sleep,
                fired,
            }) => {
                sleep.set(timer.sleep_until(at));
                (*armed, *fired) = (at, false);
            }
            None => {
                *slot = Some(Sleeping {
                    at,
                    sleep: Box::pin(timer.sleep_until(at)),
                    fired: false,
                });
            }
        }
        let Some(sleeping) = slot else {
            unreachable!("armed just above");
        };
        let fired = sleeping.sleep.as_mut().poll(cx);
        sleeping.fired = fired.is_ready();
        fired
    }

    fn disarm(&mut self) {
        *self.sleep() = None;
    }
}
