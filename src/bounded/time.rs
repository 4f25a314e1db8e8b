//! The time budgets' builder methods ([`crate::time`]): a timer, a deadline
//! for the run, deadlines carried by items, and a start rate, for
//! [`BoundedBuffered`] (documented in full) and [`TryBoundedBuffered`]
//! (documented by reference).

use std::time::{Duration, Instant};

use super::{BoundedBuffered, TryBoundedBuffered};
use crate::admission::{KeyRule, WeightRule};
use crate::clock::{Clocked, Clocking};
use crate::items::{FutureStream, TryFutureStream};
use crate::time::{DeadlineOf, Timer, Unfinished};
#[cfg(doc)]
use crate::{Deadline, Limits, Stats};

/// The checks of the time budgets' builder methods, at the caller's line.
mod check {
    #[track_caller]
    pub(super) fn timer(own_clock: bool) {
        assert!(
            !own_clock,
            "`timer` after `clock`: a timer brings its own clock (`Timer::now`), and a stream has \
             one notion of now; give the timer the clock instead"
        );
    }

    #[track_caller]
    pub(super) fn needs_timer(method: &str, has_timer: bool) {
        assert!(
            has_timer,
            "`{method}` needs a timer to wake the stream when nothing else would: call `.timer(..)` \
             first (for example `.timer(TokioTimer)`)"
        );
    }

    #[track_caller]
    pub(super) fn rate(n: u32, per: std::time::Duration) {
        assert!(
            n > 0,
            "`rate` needs at least one start per period: with `n == 0` nothing could ever start"
        );
        assert!(!per.is_zero(), "`rate` needs a period longer than zero");
    }

    #[track_caller]
    pub(super) fn burst(burst: u32, has_rate: bool) {
        assert!(
            burst > 0,
            "`burst` needs at least one start: with `burst == 0` nothing could ever start"
        );
        assert!(
            has_rate,
            "`burst` without a rate: call `.rate(n, per)` first"
        );
    }
}

impl<St: FutureStream, K: Clocking, N, Q: KeyRule<St::Item>, W: WeightRule<St::Item>>
    BoundedBuffered<St, K, N, Q, W>
{
    /// Gives the stream a [`Timer`] to sleep on, for a
    /// [`deadline`](Self::deadline) or a [`rate`](Self::rate): the stream
    /// wakes at the deadline, or when a start waits only for the rate, even
    /// while every future it runs is blocked and its source is quiet. The
    /// timer's [`now`](Timer::now) becomes the stream's clock, for every rule
    /// and measure that reads one (the deadline, the rate, `max_wait`,
    /// `timed`), so that they all agree: with `TokioTimer`
    /// they follow tokio's paused clock in tests.
    ///
    /// Alone, it changes nothing: a plain stream never reads the clock nor
    /// arms the timer, and one with a deadline or a rate arms it only when
    /// it would otherwise sleep with that time to come (one sleep, re-armed
    /// in place). Spawned, the timer moves to a task of its own, the alarm
    /// task, spawned with the first worker.
    ///
    /// # Panics
    ///
    /// If [`clock`](Self::clock) gave the stream a clock of its own (a timer
    /// brings its clock: implement [`Timer::now`] instead), or if the stream
    /// has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, TokioTimer};
    /// use futures::{StreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let start = tokio::time::Instant::now();
    /// // 20 starts a second: 5 items take 200 ms of tokio's (paused) time.
    /// let jobs: Vec<u32> = stream::iter(0..5u32)
    ///     .map(|n| async move { n })
    ///     .bounded(4, 4)
    ///     .timer(TokioTimer)
    ///     .rate(20, Duration::from_secs(1))
    ///     .collect()
    ///     .await;
    /// assert_eq!(jobs, [0, 1, 2, 3, 4]);
    /// assert_eq!(start.elapsed(), Duration::from_millis(200));
    /// # }
    /// ```
    #[track_caller]
    pub fn timer<T: Timer>(self, timer: T) -> BoundedBuffered<St, Clocked, N, Q, W> {
        check::timer(self.inner.engine().has_own_clock());
        BoundedBuffered {
            inner: self.inner.timer(timer, |engine, now| engine.timer(now)),
        }
    }

    /// Gives the whole run a deadline: from `at` on, nothing more is pulled
    /// from the source and nothing more starts. The stream then yields
    /// `Result<T, Unfinished<St::Item>>`, and at the deadline:
    ///
    /// - each item still waiting comes back as [`Unfinished::Late`], with
    ///   its untouched future, to record or retry;
    /// - each item running is cancelled (its future dropped) and comes back
    ///   as [`Unfinished::Cancelled`] with its input position: it had
    ///   started and was not seen to complete, so what it does outside the
    ///   stream (a write, a request) may or may not have happened, and the
    ///   caller must reconcile it;
    /// - outputs that completed before the deadline are still yielded:
    ///   completed work is never thrown away;
    /// - last comes [`Unfinished::Deadline`] (whether the source had ended
    ///   is in it), then the end. [`Stats::deadline_passed`],
    ///   [`Stats::late`] and [`Stats::cancelled`] say the same.
    ///
    /// Every item pulled comes back exactly once, as an output or as one of
    /// these. Ordered, each comes at its input position and the deadline
    /// last; unordered, the late and cancelled ones in input order after
    /// the outputs held. An item that completes in the same poll that sees
    /// the deadline (spawned: whose task reports it before the section
    /// that does) is an output, not a cancellation.
    ///
    /// The stream acts on the deadline at its first poll (spawned, lock
    /// section) at or after `at`, by the stream's clock; its timer wakes it
    /// then if nothing else does, so it is late by the timer's resolution
    /// and the executor's delay in running the woken task, no more. A stream
    /// [`close`](Self::close)d before the deadline drains as usual, and the
    /// deadline cuts the drain short if it lasts past it. A deadline passed
    /// before the first poll pulls nothing: the stream yields the deadline
    /// and ends. The deadline set last is in force; items' own deadlines
    /// ([`item_deadlines`](Self::item_deadlines)) compose with it.
    ///
    /// # Panics
    ///
    /// If the stream has no [`timer`](Self::timer) (call it first), or if it
    /// has already been polled.
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
    /// let at = tokio::time::Instant::now().into_std() + Duration::from_millis(25);
    /// // One worker, one waiting place, 10 ms a job: at 25 ms job 2 runs,
    /// // job 3 waits, jobs 4 and on were never pulled.
    /// let outcomes: Vec<_> = stream::iter(0..10u32)
    ///     .map(|n| async move {
    ///         tokio::time::sleep(Duration::from_millis(10)).await;
    ///         n
    ///     })
    ///     .bounded(1, 1)
    ///     .ordered(1)
    ///     .timer(TokioTimer)
    ///     .deadline(at)
    ///     .collect()
    ///     .await;
    /// assert_eq!(outcomes[0].as_ref().ok(), Some(&0));
    /// assert_eq!(outcomes[1].as_ref().ok(), Some(&1));
    /// assert!(matches!(&outcomes[2], Err(Unfinished::Cancelled(item)) if item.position() == 2));
    /// assert!(matches!(&outcomes[3], Err(Unfinished::Late(item)) if item.position() == 3));
    /// let Err(Unfinished::Deadline(end)) = &outcomes[4] else { panic!() };
    /// assert!(!end.source_ended());
    /// assert_eq!(outcomes.len(), 5);
    /// # }
    /// ```
    #[track_caller]
    pub fn deadline(self, at: Instant) -> BoundedBuffered<St, Clocked, Unfinished<St::Item>, Q, W> {
        check::needs_timer("deadline", self.inner.has_timer());
        BoundedBuffered {
            inner: self.inner.rebuilt("deadline", |engine| engine.deadline(at)),
        }
    }

    /// Checks the deadline each item carries ([`Deadline`], or a
    /// [`Keyed`](crate::Keyed) or [`Weighted`](crate::Weighted) around one)
    /// when a worker picks it up: an item whose deadline has passed (now is
    /// at or after it) is never started, and comes back as
    /// [`Unfinished::Late`] with its untouched future. The stream then yields
    /// `Result<T, Unfinished<St::Item>>`.
    ///
    /// - The check is made at every pickup, from the queue or straight from
    ///   the source, before anything else, and only there, as `max_wait`'s
    ///   is: an item waits for a worker even if its deadline passed long
    ///   before, and a running item is not cancelled at its own deadline
    ///   (give its future a timeout of its own for that: it knows what a
    ///   half-done item must undo). It needs no timer.
    /// - An item's effective deadline is the earlier of its own and the
    ///   run's ([`deadline`](Self::deadline)); with `max_wait` too, whichever
    ///   comes first (the deadline is checked first).
    /// - As with keys, every item is pulled into a waiting place first (at
    ///   least one, even with `waiting == 0`): with every future blocked
    ///   the source has advanced at most `workers + max(waiting, 1)` items
    ///   beyond the consumer. A late item not yet taken counts against the
    ///   waiting budget, as an expired one does. [`Stats::late`] counts them.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// use bounded_buffered::{BoundedStreamExt, Deadline};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let now = Instant::now();
    /// // Requests whose callers gave up 1 s ago, or will in a minute.
    /// let deadlines = [now + Duration::from_secs(60), now - Duration::from_secs(1)];
    /// let outcomes: Vec<_> = stream::iter(0..6usize)
    ///     .map(|n| Deadline::new(deadlines[n % 2], async move { n }))
    ///     .bounded(2, 2)
    ///     .item_deadlines()
    ///     .collect()
    ///     .await;
    /// let done: Vec<_> = outcomes.iter().filter_map(|outcome| outcome.as_ref().ok()).collect();
    /// assert_eq!(done, [&0, &2, &4]);
    /// # });
    /// ```
    #[track_caller]
    pub fn item_deadlines(self) -> BoundedBuffered<St, Clocked, Unfinished<St::Item>, Q, W>
    where
        St::Item: DeadlineOf,
    {
        BoundedBuffered {
            inner: self.inner.rebuilt("item_deadlines", |engine| {
                engine.item_deadlines(<St::Item as DeadlineOf>::deadline_of)
            }),
        }
    }

    /// Bounds how many items start per unit of time, beside how many run:
    /// at most `n` starts in any window of length `per` (a token bucket on
    /// starts, the generic cell rate algorithm). Starts are spaced `per / n`
    /// apart; [`burst`](Self::burst) lets more start at once after a quiet
    /// spell (then at most `n + burst - 1` in any window of `per`). For
    /// quotas ("100 requests a second", a 429's refill rate).
    ///
    /// - A start needs a free worker and a token. While no token is free,
    ///   nothing starts: the waiting items wait, more are pulled ahead as the
    ///   waiting budget allows, so the admission bound is the same as
    ///   without a rate, and the stream's timer wakes it when the next token
    ///   is due. A worker never idles while a token and an item are both
    ///   there.
    /// - It works ordered or not, with keys, weights and shedding (a start
    ///   the rate refuses waits as one the workers refuse: a shedding stream
    ///   sheds once the queue is full). A start costs one token, whatever
    ///   the item's weight.
    /// - With [`adaptive`](Self::adaptive), both hold: the controller sets
    ///   `workers`, the rate caps the starts, and a start the rate refused is
    ///   not saturation (the controller does not raise the limit for it).
    /// - [`Stats::rate_waited`] says how long starts waited for tokens;
    ///   [`Limits::set_rate`] changes the rate while the stream runs.
    ///
    /// # Panics
    ///
    /// If `n` is 0 or `per` is zero, if the stream has no
    /// [`timer`](Self::timer) (call it first), or if it has already been
    /// polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, TokioTimer};
    /// use futures::{StreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let start = tokio::time::Instant::now();
    /// let mut started = Vec::new();
    /// let mut jobs = stream::iter(0..6u32)
    ///     .map(|n| async move { (n, tokio::time::Instant::now()) })
    ///     .bounded(8, 8)
    ///     .timer(TokioTimer)
    ///     .rate(2, Duration::from_secs(1))
    ///     .burst(2);
    /// while let Some((_, at)) = jobs.next().await {
    ///     started.push((at - start).as_millis());
    /// }
    /// // Two at once, then one every 500 ms.
    /// assert_eq!(started, [0, 0, 500, 1000, 1500, 2000]);
    /// # }
    /// ```
    #[track_caller]
    pub fn rate(self, n: u32, per: Duration) -> BoundedBuffered<St, Clocked, N, Q, W> {
        check::rate(n, per);
        check::needs_timer("rate", self.inner.has_timer());
        BoundedBuffered {
            inner: self.inner.rebuilt("rate", |engine| engine.rate(n, per)),
        }
    }

    /// Lets up to `burst` items start at once after a quiet spell, under
    /// the [`rate`](Self::rate): the bucket holds `burst` tokens (1 by
    /// default). Then at most `n + burst - 1` items start in any window of
    /// `per`.
    ///
    /// # Panics
    ///
    /// If `burst` is 0, if the stream has no rate (call
    /// [`rate`](Self::rate) first), or if it has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, TokioTimer};
    /// use futures::{StreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let start = tokio::time::Instant::now();
    /// let jobs = stream::iter(0..20u32)
    ///     .map(|n| async move { n })
    ///     .bounded(20, 20)
    ///     .timer(TokioTimer)
    ///     .rate(10, Duration::from_secs(1))
    ///     .burst(10);
    /// assert_eq!(jobs.count().await, 20);
    /// // Ten at once, then one every 100 ms.
    /// assert_eq!(start.elapsed(), Duration::from_secs(1));
    /// # }
    /// ```
    #[track_caller]
    pub fn burst(mut self, burst: u32) -> Self {
        check::burst(burst, self.inner.engine().has_rate());
        self.inner.set_burst(burst);
        self
    }
}

impl<St: TryFutureStream, K: Clocking, N, Q: KeyRule<St::Ok>, W: WeightRule<St::Ok>>
    TryBoundedBuffered<St, K, N, Q, W>
{
    /// Gives the stream a [`Timer`] to sleep on, for a
    /// [`deadline`](Self::deadline) or a [`rate`](Self::rate), and makes its
    /// clock the stream's.
    ///
    /// As [`BoundedBuffered::timer`], for a fallible stream: see there.
    ///
    /// # Panics
    ///
    /// If [`clock`](Self::clock) gave the stream a clock of its own, or if
    /// the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, TokioTimer};
    /// use futures::{StreamExt, TryStreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let jobs: Vec<u32> = stream::iter(0..3u32)
    ///     .map(|n| Ok::<_, String>(async move { Ok(n) }))
    ///     .try_bounded(2, 2)
    ///     .timer(TokioTimer)
    ///     .rate(10, Duration::from_secs(1))
    ///     .try_collect()
    ///     .await
    ///     .unwrap();
    /// assert_eq!(jobs, [0, 1, 2]);
    /// # }
    /// ```
    #[track_caller]
    pub fn timer<T: Timer>(self, timer: T) -> TryBoundedBuffered<St, Clocked, N, Q, W> {
        check::timer(self.inner.engine().has_own_clock());
        TryBoundedBuffered {
            inner: self.inner.timer(timer, |engine, now| engine.timer(now)),
        }
    }

    /// Gives the whole run a deadline: from `at` on, nothing more is pulled
    /// or started; waiting items come back late, running ones cancelled,
    /// completed outputs are still yielded, and the deadline comes last.
    ///
    /// As [`BoundedBuffered::deadline`], for a fallible stream: these
    /// outcomes are per-item, inside the run's `Ok`
    /// (`Result<Result<T, Unfinished<St::Ok>>, E>`), and an error before the
    /// deadline fails fast as without one.
    ///
    /// # Panics
    ///
    /// If the stream has no [`timer`](Self::timer), or if it has already
    /// been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, TokioTimer, Unfinished};
    /// use futures::{StreamExt, TryStreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let at = tokio::time::Instant::now().into_std() + Duration::from_millis(5);
    /// let outcomes: Vec<_> = stream::iter(0..2u64)
    ///     .map(|n| Ok::<_, String>(async move {
    ///         tokio::time::sleep(Duration::from_millis(n * 10)).await;
    ///         Ok(n)
    ///     }))
    ///     .try_bounded(2, 0)
    ///     .timer(TokioTimer)
    ///     .deadline(at)
    ///     .try_collect()
    ///     .await
    ///     .expect("no item fails");
    /// assert_eq!(outcomes[0].as_ref().ok(), Some(&0));
    /// assert!(matches!(outcomes[1], Err(Unfinished::Cancelled(_))));
    /// assert!(matches!(outcomes[2], Err(Unfinished::Deadline(_))));
    /// # }
    /// ```
    #[track_caller]
    pub fn deadline(
        self,
        at: Instant,
    ) -> TryBoundedBuffered<St, Clocked, Unfinished<St::Ok>, Q, W> {
        check::needs_timer("deadline", self.inner.has_timer());
        TryBoundedBuffered {
            inner: self.inner.rebuilt("deadline", |engine| engine.deadline(at)),
        }
    }

    /// Checks the deadline each item carries ([`Deadline`]) when a worker
    /// picks it up: a late item is never started, and comes back as
    /// [`Unfinished::Late`] inside the run's `Ok`.
    ///
    /// As [`BoundedBuffered::item_deadlines`], for a fallible stream: see
    /// there.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// use bounded_buffered::{BoundedStreamExt, Deadline};
    /// use futures::{StreamExt, TryStreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let gone = Instant::now() - Duration::from_secs(1);
    /// let outcomes: Vec<_> = stream::iter(0..2u32)
    ///     .map(|n| Ok::<_, String>(Deadline::new(gone, async move { Ok(n) })))
    ///     .try_bounded(2, 2)
    ///     .item_deadlines()
    ///     .try_collect()
    ///     .await
    ///     .unwrap();
    /// assert!(outcomes.iter().all(|outcome| outcome.is_err()));
    /// # });
    /// ```
    #[track_caller]
    pub fn item_deadlines(self) -> TryBoundedBuffered<St, Clocked, Unfinished<St::Ok>, Q, W>
    where
        St::Ok: DeadlineOf,
    {
        TryBoundedBuffered {
            inner: self.inner.rebuilt("item_deadlines", |engine| {
                engine.item_deadlines(<St::Ok as DeadlineOf>::deadline_of)
            }),
        }
    }

    /// Bounds how many items start per unit of time: at most `n` starts in
    /// any window of `per`.
    ///
    /// As [`BoundedBuffered::rate`], for a fallible stream: see there.
    ///
    /// # Panics
    ///
    /// If `n` is 0 or `per` is zero, if the stream has no
    /// [`timer`](Self::timer), or if it has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, TokioTimer};
    /// use futures::{StreamExt, TryStreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let start = tokio::time::Instant::now();
    /// let total: u32 = stream::iter(0..4u32)
    ///     .map(|n| Ok::<_, String>(async move { Ok(n) }))
    ///     .try_bounded(4, 4)
    ///     .timer(TokioTimer)
    ///     .rate(4, Duration::from_secs(1))
    ///     .try_fold(0, |sum, n| async move { Ok(sum + n) })
    ///     .await
    ///     .unwrap();
    /// assert_eq!(total, 6);
    /// assert_eq!(start.elapsed(), Duration::from_millis(750));
    /// # }
    /// ```
    #[track_caller]
    pub fn rate(self, n: u32, per: Duration) -> TryBoundedBuffered<St, Clocked, N, Q, W> {
        check::rate(n, per);
        check::needs_timer("rate", self.inner.has_timer());
        TryBoundedBuffered {
            inner: self.inner.rebuilt("rate", |engine| engine.rate(n, per)),
        }
    }

    /// Lets up to `burst` items start at once under the
    /// [`rate`](Self::rate).
    ///
    /// As [`BoundedBuffered::burst`], for a fallible stream: see there.
    ///
    /// # Panics
    ///
    /// If `burst` is 0, if the stream has no rate, or if it has already
    /// been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, TokioTimer};
    /// use futures::{StreamExt, TryStreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let start = tokio::time::Instant::now();
    /// let jobs: Vec<u32> = stream::iter(0..3u32)
    ///     .map(|n| Ok::<_, String>(async move { Ok(n) }))
    ///     .try_bounded(3, 1)
    ///     .timer(TokioTimer)
    ///     .rate(1, Duration::from_secs(1))
    ///     .burst(3)
    ///     .try_collect()
    ///     .await
    ///     .unwrap();
    /// assert_eq!(jobs.len(), 3);
    /// assert_eq!(start.elapsed(), Duration::ZERO); // all three at once
    /// # }
    /// ```
    #[track_caller]
    pub fn burst(mut self, burst: u32) -> Self {
        check::burst(burst, self.inner.engine().has_rate());
        self.inner.set_burst(burst);
        self
    }
}
