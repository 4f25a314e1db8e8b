//! A clock the test moves by hand, for `.clock(...)`: one schedule of times
//! runs the same in place and spawned (on a step-by-step executor).
//!
//! [`now`] is a plain `fn() -> Instant`, so it can be passed to `.clock(now)`:
//! a fixed base plus an offset that only [`advance`] moves. The offset is per
//! thread: every lock section that reads it must run on the test's thread,
//! which holds for a spawned stream on the [`StepExecutor`](super::StepExecutor)
//! (it polls the worker tasks on the caller's thread) and for the consumer's
//! polls. Each test runs on its own thread, so tests in one binary do not see
//! each other's time; a property test that runs many cases on one thread calls
//! [`reset_clock`] at the start of each.

use std::cell::Cell;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// The clock's zero, shared by every thread (only offsets differ).
static BASE: LazyLock<Instant> = LazyLock::new(Instant::now);

thread_local! {
    /// Nanoseconds the test moved this thread's clock since its zero.
    static OFFSET: Cell<u64> = const { Cell::new(0) };
    /// How often [`now`] was called on this thread.
    static READINGS: Cell<u64> = const { Cell::new(0) };
}

/// The hand clock's current time on this thread. Counts its own calls.
pub fn now() -> Instant {
    READINGS.with(|readings| readings.set(readings.get() + 1));
    *BASE + Duration::from_nanos(OFFSET.with(Cell::get))
}

/// Moves this thread's clock forward by `by`.
pub fn advance(by: Duration) {
    let by = u64::try_from(by.as_nanos()).expect("a test advances less than 584 years");
    OFFSET.with(|offset| offset.set(offset.get() + by));
}

/// How often this thread read the clock since its zero (or the last reset).
pub fn readings() -> u64 {
    READINGS.with(Cell::get)
}

/// Puts this thread's clock back to its zero and its reading count to 0.
pub fn reset_clock() {
    OFFSET.with(|offset| offset.set(0));
    READINGS.with(|readings| readings.set(0));
}

/// `n` milliseconds.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

thread_local! {
    /// The wakers of the hand timer's sleeps that wait, with their times.
    static SLEEPERS: std::cell::RefCell<Vec<(Instant, std::task::Waker)>> =
        const { std::cell::RefCell::new(Vec::new()) };
    /// How many sleeps the hand timer made, and how often one was polled.
    static ARMS: Cell<u64> = const { Cell::new(0) };
    static SLEEP_POLLS: Cell<u64> = const { Cell::new(0) };
}

/// A [`Timer`](bounded_buffered::Timer) on the hand clock: its `now` is
/// [`now`], and a sleep completes once [`advance_timers`] moved the clock to
/// its time, waking its task then. Per thread, as the clock is.
#[derive(Clone, Copy, Debug, Default)]
pub struct HandTimer;

/// A sleep of the [`HandTimer`].
#[derive(Debug)]
pub struct HandSleep {
    at: Instant,
}

impl bounded_buffered::Timer for HandTimer {
    type Sleep = HandSleep;

    fn now(&self) -> Instant {
        now()
    }

    fn sleep_until(&self, at: Instant) -> HandSleep {
        ARMS.with(|arms| arms.set(arms.get() + 1));
        HandSleep { at }
    }
}

impl std::future::Future for HandSleep {
    type Output = ();

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        SLEEP_POLLS.with(|polls| polls.set(polls.get() + 1));
        if now() >= self.at {
            return std::task::Poll::Ready(());
        }
        SLEEPERS.with(|sleepers| sleepers.borrow_mut().push((self.at, cx.waker().clone())));
        std::task::Poll::Pending
    }
}

/// [`advance`], then wakes every hand-timer sleep whose time came.
pub fn advance_timers(by: Duration) {
    advance(by);
    let due: Vec<_> = SLEEPERS.with(|sleepers| {
        let mut sleepers = sleepers.borrow_mut();
        let now = *BASE + Duration::from_nanos(OFFSET.with(Cell::get));
        let (due, waiting) = sleepers.drain(..).partition(|(at, _)| *at <= now);
        *sleepers = waiting;
        due
    });
    for (_, waker) in due {
        waker.wake();
    }
}

/// How many sleeps the hand timer made on this thread, and how often one
/// was polled, since the last [`reset_timers`].
pub fn timer_use() -> (u64, u64) {
    (ARMS.with(Cell::get), SLEEP_POLLS.with(Cell::get))
}

/// Forgets the hand timer's sleepers and counts on this thread.
pub fn reset_timers() {
    SLEEPERS.with(|sleepers| sleepers.borrow_mut().clear());
    ARMS.with(|arms| arms.set(0));
    SLEEP_POLLS.with(|polls| polls.set(0));
}
