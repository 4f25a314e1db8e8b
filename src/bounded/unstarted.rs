//! `max_wait` and `shed`, on each form of the two stream types: each sets
//! what comes back for an item not run, so each form has its own pair, and
//! its own return types.

use std::convert::Infallible;
use std::time::Duration;

use super::{BoundedBuffered, TryBoundedBuffered};
use crate::admission::{KeyRule, WeightRule};
use crate::clock::{Clocked, Clocking};
use crate::expiry::Expired;
use crate::items::{FutureStream, TryFutureStream};
use crate::shed::{NotRun, Rejected, Shed};
#[cfg(doc)]
use crate::stats::Stats;

/// `max_wait` and `shed` for one form of a stream type: each sets what comes
/// back for an item not run, so each form has its own pair.
macro_rules! unstarted_methods {
    (
        $Stream:ident<$N:ty> where St: $Bound:ident, F = $F:ty;
        $(#[$max_wait_doc:meta])* max_wait -> $E:ty;
        $(#[$shed_doc:meta])* shed -> $R:ty;
    ) => {
        impl<St, K, Q, W> $Stream<St, K, $N, Q, W>
        where
            St: $Bound,
            K: Clocking,
            Q: KeyRule<$F>,
            W: WeightRule<$F>,
        {
            $(#[$max_wait_doc])*
            #[track_caller]
            pub fn max_wait(self, limit: Duration) -> $Stream<St, Clocked, $E, Q, W> {
                $Stream {
                    inner: self.inner.rebuilt("max_wait", |engine| engine.max_wait(limit)),
                }
            }

            $(#[$shed_doc])*
            #[track_caller]
            pub fn shed(self, shed: Shed) -> $Stream<St, K, $R, Q, W> {
                $Stream {
                    inner: self.inner.rebuilt("shed", |engine| engine.shed(shed)),
                }
            }
        }
    };
}

unstarted_methods! {
    BoundedBuffered<Infallible> where St: FutureStream, F = St::Item;
    /// Expires waiting items: when a worker frees up for an item that waited in
    /// the queue longer than `limit`, the item is not started. The stream then
    /// yields `Result<T, Expired<St::Item>>`, with the expired item as an
    /// [`Expired`] in its place.
    ///
    /// - The time waited runs from the item's pull to its pickup; an item that
    ///   waited exactly `limit` still starts. An item pulled straight into a free
    ///   worker never waited and never expires.
    /// - An expired item is never polled: [`Expired::into_inner`] hands back its
    ///   untouched future. It takes no worker: the next waiting item is
    ///   considered at once. It is yielded in completion order, or at its input
    ///   position when [ordered](Self::ordered); until then it counts against the
    ///   waiting budget (unordered) or holds its place in the window (ordered).
    ///   [`Stats::expired`] counts them.
    /// - The check is made only at pickup: no timers, so the adapter stays
    ///   executor-agnostic, and an item waits until a worker is free for it even
    ///   if it expired long before. The clock is read at most once per
    ///   `poll_next` (see [`clock`](Self::clock)).
    ///
    /// Whether an expiry aborts the run or is a recorded per-item failure is the
    /// caller's decision: record it and go on, or [`close`](Self::close) or drop
    /// the stream when one arrives.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
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
    /// // One worker, 10 ms per job, 30 ms of patience: items 0 to 3 run, the rest
    /// // waited too long by the time the worker got to them.
    /// let outcomes: Vec<_> = stream::iter(0..6u32)
    ///     .map(|n| async move {
    ///         tokio::time::sleep(Duration::from_millis(10)).await;
    ///         n
    ///     })
    ///     .bounded(1, 5)
    ///     .max_wait(Duration::from_millis(30))
    ///     .clock(|| tokio::time::Instant::now().into_std())
    ///     .map(|outcome| outcome.map_err(|expired| expired.waited()))
    ///     .collect()
    ///     .await;
    /// let ms = Duration::from_millis;
    /// assert_eq!(outcomes, [Ok(0), Ok(1), Ok(2), Ok(3), Err(ms(40)), Err(ms(40))]);
    /// # }
    /// ```
    max_wait -> Expired<St::Item>;
    /// Sheds instead of waiting: while no waiting item may start and the
    /// waiting queue is full, the stream keeps pulling from the source instead
    /// of back-pressuring it, and hands an item back, never polled, as a
    /// [`Rejected`]: the item just pulled ([`Shed::Newest`]), or the oldest
    /// waiting one, whose place the new item takes ([`Shed::Oldest`]). For a
    /// source that should never wait (telemetry, market data, a channel fed by
    /// request handlers that answer "busy" at once).
    ///
    /// - An item pulled while a worker is free for it starts, as without
    ///   shedding: only a full queue sheds. With keys or weights, it starts
    ///   only if the rules pick it after the waiting items: it never passes a
    ///   waiting item of its own key, nor a heavier waiting item that the free
    ///   worker waits for (weights go first come, first served).
    /// - With weights, `Oldest` hands back as many of the oldest waiting items
    ///   as the new one needs room for, so the weight waiting keeps the bound
    ///   of [`max_waiting_weight`](Self::max_waiting_weight); if the allowance
    ///   left (below) cannot cover them, the new item is handed back instead.
    ///   Below budgets lowered under what waits, it swaps one for one (the
    ///   queue does not grow), so what waits stays the newest.
    ///   Whatever a swap frees (a heavy item out, a light one in) is filled
    ///   again before the call returns.
    /// - Rejections the consumer has not taken count against an allowance of
    ///   their own, as many as `waiting` (at least one): while it is used up,
    ///   nothing more is pulled, so a consumer that stops stops the pulling.
    ///   **Bound**: with every future blocked, the source has advanced at most
    ///   `workers + waiting + max(waiting, 1)` items beyond the consumer; with
    ///   keys or weights, which keep one waiting place even with `waiting ==
    ///   0` ([`per_key`](Self::per_key)), `workers + 2 × max(waiting, 1)`.
    /// - Ordered, each item takes its input position when pulled, and a
    ///   rejection is yielded at it, as an expired item is (never ahead of an
    ///   item pulled before it); unordered, as it is made. A held rejection
    ///   takes no place in the window (it may lie past it, and the items
    ///   before it must still start): at most `window` items run or are held,
    ///   plus the allowance's rejections.
    /// - With [`max_wait`](Self::max_wait) too, the stream yields one error type
    ///   for an item not run, [`NotRun`], with its cause.
    ///
    /// [`Stats::rejected`] counts them. Calling it again changes which item
    /// goes.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::pending;
    ///
    /// use bounded_buffered::{BoundedStreamExt, Shed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// // Two workers busy for good, two waiting places: everything after is
    /// // handed back, the oldest waiting first.
    /// let mut replies = stream::iter(0..10u32)
    ///     .map(|n| async move {
    ///         if n < 2 {
    ///             pending::<()>().await;
    ///         }
    ///         n
    ///     })
    ///     .bounded(2, 2)
    ///     .shed(Shed::Oldest);
    /// let rejected = replies.next().await.unwrap().unwrap_err();
    /// assert_eq!(rejected.into_inner().await, 2); // item 2 made way for item 4
    /// // 2 shed before the first was taken (the allowance: as many as waiting
    /// // places), one more when taking it freed a place in the allowance.
    /// assert_eq!(replies.stats().rejected, 3);
    /// # });
    /// ```
    shed -> Rejected<St::Item>;
}

unstarted_methods! {
    BoundedBuffered<Expired<St::Item>> where St: FutureStream, F = St::Item;
    /// As on the stream without it (see [`BoundedBuffered::max_wait`] on
    /// `BoundedBuffered<St, K>`): expires waiting items; it already expires them, and this sets the limit anew; with `shed`, an item not run comes back as a [`NotRun`].
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, Shed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..10u32).map(|n| async move { n }).bounded(2, 2)
    ///     .shed(Shed::Newest)
    ///     .max_wait(Duration::from_secs(1))
    ///     .max_wait(Duration::from_secs(2)); // the last one counts
    /// assert_eq!(jobs.by_ref().count().await, 10);
    /// # });
    /// ```
    max_wait -> Expired<St::Item>;
    /// As on the stream without it (see [`BoundedBuffered::shed`] on
    /// `BoundedBuffered<St, K>`): sheds instead of waiting; it already expires them, and this sets the limit anew; with `shed`, an item not run comes back as a [`NotRun`].
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, Shed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..10u32).map(|n| async move { n }).bounded(2, 2)
    ///     .max_wait(Duration::from_secs(1))
    ///     .shed(Shed::Oldest)
    ///     .shed(Shed::Newest); // the last one counts
    /// assert_eq!(jobs.by_ref().count().await, 10);
    /// # });
    /// ```
    shed -> NotRun<St::Item>;
}

unstarted_methods! {
    BoundedBuffered<Rejected<St::Item>> where St: FutureStream, F = St::Item;
    /// As on the stream without it (see [`BoundedBuffered::max_wait`] on
    /// `BoundedBuffered<St, K>`): expires waiting items; the stream sheds already, so an item not run comes back as a [`NotRun`], expired or rejected.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, Shed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..10u32).map(|n| async move { n }).bounded(2, 2)
    ///     .shed(Shed::Newest)
    ///     .max_wait(Duration::from_secs(1))
    ///     .max_wait(Duration::from_secs(2)); // the last one counts
    /// assert_eq!(jobs.by_ref().count().await, 10);
    /// # });
    /// ```
    max_wait -> NotRun<St::Item>;
    /// As on the stream without it (see [`BoundedBuffered::shed`] on
    /// `BoundedBuffered<St, K>`): sheds instead of waiting; the stream sheds already, so an item not run comes back as a [`NotRun`], expired or rejected.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, Shed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..10u32).map(|n| async move { n }).bounded(2, 2)
    ///     .max_wait(Duration::from_secs(1))
    ///     .shed(Shed::Oldest)
    ///     .shed(Shed::Newest); // the last one counts
    /// assert_eq!(jobs.by_ref().count().await, 10);
    /// # });
    /// ```
    shed -> Rejected<St::Item>;
}

unstarted_methods! {
    BoundedBuffered<NotRun<St::Item>> where St: FutureStream, F = St::Item;
    /// As on the stream without it (see [`BoundedBuffered::max_wait`] on
    /// `BoundedBuffered<St, K>`): expires waiting items; it does both already, and this sets the setting anew.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, Shed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..10u32).map(|n| async move { n }).bounded(2, 2)
    ///     .shed(Shed::Newest)
    ///     .max_wait(Duration::from_secs(1))
    ///     .max_wait(Duration::from_secs(2)); // the last one counts
    /// assert_eq!(jobs.by_ref().count().await, 10);
    /// # });
    /// ```
    max_wait -> NotRun<St::Item>;
    /// As on the stream without it (see [`BoundedBuffered::shed`] on
    /// `BoundedBuffered<St, K>`): sheds instead of waiting; it does both already, and this sets the setting anew.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, Shed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..10u32).map(|n| async move { n }).bounded(2, 2)
    ///     .max_wait(Duration::from_secs(1))
    ///     .shed(Shed::Oldest)
    ///     .shed(Shed::Newest); // the last one counts
    /// assert_eq!(jobs.by_ref().count().await, 10);
    /// # });
    /// ```
    shed -> NotRun<St::Item>;
}

unstarted_methods! {
    TryBoundedBuffered<Infallible> where St: TryFutureStream, F = St::Ok;
    /// Expires waiting items, as [`BoundedBuffered::max_wait`] does: an item
    /// that waited longer than `limit` when a worker frees up for it is not
    /// started, and comes back as an [`Expired`] holding its untouched future.
    ///
    /// The stream then yields `Result<Result<T, Expired<St::Ok>>, St::Error>`:
    /// the outer `Result` is the run's (its `Err` ends the run, as without
    /// `max_wait`), the inner one the item's (an expired item is a per-item
    /// outcome, and the run goes on). So `try_next()` and `try_collect()` see
    /// the expired items as values, and `?` still stops at the error.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, TryStreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let outcomes: Vec<_> = stream::iter(0..4u32)
    ///     .map(|n| Ok::<_, String>(async move {
    ///         tokio::time::sleep(Duration::from_millis(10)).await;
    ///         Ok(n)
    ///     }))
    ///     .try_bounded(1, 3)
    ///     .max_wait(Duration::from_millis(15))
    ///     .clock(|| tokio::time::Instant::now().into_std())
    ///     .try_collect()
    ///     .await
    ///     .expect("no item fails");
    /// let expired = outcomes.iter().filter(|outcome| outcome.is_err()).count();
    /// assert_eq!(expired, 2); // items 2 and 3 waited 20 ms
    /// # }
    /// ```
    max_wait -> Expired<St::Ok>;
    /// Sheds instead of waiting: while no waiting item may start and the
    /// waiting queue is full, the stream keeps pulling from the source instead
    /// of back-pressuring it, and hands an item back, never polled, as a
    /// [`Rejected`] inside the run's `Ok` (a rejection does not end the run): the item just pulled ([`Shed::Newest`]), or the oldest
    /// waiting one, whose place the new item takes ([`Shed::Oldest`]). For a
    /// source that should never wait (telemetry, market data, a channel fed by
    /// request handlers that answer "busy" at once).
    ///
    /// - An item pulled while a worker is free for it starts, as without
    ///   shedding: only a full queue sheds. With keys or weights, it starts
    ///   only if the rules pick it after the waiting items: it never passes a
    ///   waiting item of its own key, nor a heavier waiting item that the free
    ///   worker waits for (weights go first come, first served).
    /// - With weights, `Oldest` hands back as many of the oldest waiting items
    ///   as the new one needs room for, so the weight waiting keeps the bound
    ///   of [`max_waiting_weight`](Self::max_waiting_weight); if the allowance
    ///   left (below) cannot cover them, the new item is handed back instead.
    ///   Below budgets lowered under what waits, it swaps one for one (the
    ///   queue does not grow), so what waits stays the newest.
    ///   Whatever a swap frees (a heavy item out, a light one in) is filled
    ///   again before the call returns.
    /// - Rejections the consumer has not taken count against an allowance of
    ///   their own, as many as `waiting` (at least one): while it is used up,
    ///   nothing more is pulled, so a consumer that stops stops the pulling.
    ///   **Bound**: with every future blocked, the source has advanced at most
    ///   `workers + waiting + max(waiting, 1)` items beyond the consumer; with
    ///   keys or weights, which keep one waiting place even with `waiting ==
    ///   0` ([`per_key`](Self::per_key)), `workers + 2 × max(waiting, 1)`.
    /// - Ordered, each item takes its input position when pulled, and a
    ///   rejection is yielded at it, as an expired item is (never ahead of an
    ///   item pulled before it); unordered, as it is made. A held rejection
    ///   takes no place in the window (it may lie past it, and the items
    ///   before it must still start): at most `window` items run or are held,
    ///   plus the allowance's rejections.
    /// - With [`max_wait`](Self::max_wait) too, the stream yields one error type
    ///   for an item not run, [`NotRun`], with its cause.
    ///
    /// [`Stats::rejected`] counts them. Calling it again changes which item
    /// goes.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::pending;
    ///
    /// use bounded_buffered::{BoundedStreamExt, Shed};
    /// use futures::{StreamExt, TryStreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut replies = stream::iter(0..10u32)
    ///     .map(|n| Ok::<_, String>(async move {
    ///         if n < 2 {
    ///             pending::<()>().await;
    ///         }
    ///         Ok(n)
    ///     }))
    ///     .try_bounded(2, 2)
    ///     .shed(Shed::Oldest);
    /// // The run's `Result`, then the item's: shed, not failed.
    /// let rejected = replies.try_next().await.unwrap().unwrap().unwrap_err();
    /// assert_eq!(rejected.into_inner().await, Ok(2));
    /// # });
    /// ```
    shed -> Rejected<St::Ok>;
}

unstarted_methods! {
    TryBoundedBuffered<Expired<St::Ok>> where St: TryFutureStream, F = St::Ok;
    /// As on the stream without it (see [`TryBoundedBuffered::max_wait`] on
    /// `TryBoundedBuffered<St, K>`): expires waiting items; it already expires them, and this sets the limit anew; with `shed`, an item not run comes back as a [`NotRun`].
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, Shed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..10u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 2)
    ///     .shed(Shed::Newest)
    ///     .max_wait(Duration::from_secs(1))
    ///     .max_wait(Duration::from_secs(2)); // the last one counts
    /// assert_eq!(jobs.by_ref().count().await, 10);
    /// # });
    /// ```
    max_wait -> Expired<St::Ok>;
    /// As on the stream without it (see [`TryBoundedBuffered::shed`] on
    /// `TryBoundedBuffered<St, K>`): sheds instead of waiting; it already expires them, and this sets the limit anew; with `shed`, an item not run comes back as a [`NotRun`].
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, Shed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..10u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 2)
    ///     .max_wait(Duration::from_secs(1))
    ///     .shed(Shed::Oldest)
    ///     .shed(Shed::Newest); // the last one counts
    /// assert_eq!(jobs.by_ref().count().await, 10);
    /// # });
    /// ```
    shed -> NotRun<St::Ok>;
}

unstarted_methods! {
    TryBoundedBuffered<Rejected<St::Ok>> where St: TryFutureStream, F = St::Ok;
    /// As on the stream without it (see [`TryBoundedBuffered::max_wait`] on
    /// `TryBoundedBuffered<St, K>`): expires waiting items; the stream sheds already, so an item not run comes back as a [`NotRun`], expired or rejected.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, Shed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..10u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 2)
    ///     .shed(Shed::Newest)
    ///     .max_wait(Duration::from_secs(1))
    ///     .max_wait(Duration::from_secs(2)); // the last one counts
    /// assert_eq!(jobs.by_ref().count().await, 10);
    /// # });
    /// ```
    max_wait -> NotRun<St::Ok>;
    /// As on the stream without it (see [`TryBoundedBuffered::shed`] on
    /// `TryBoundedBuffered<St, K>`): sheds instead of waiting; the stream sheds already, so an item not run comes back as a [`NotRun`], expired or rejected.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, Shed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..10u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 2)
    ///     .max_wait(Duration::from_secs(1))
    ///     .shed(Shed::Oldest)
    ///     .shed(Shed::Newest); // the last one counts
    /// assert_eq!(jobs.by_ref().count().await, 10);
    /// # });
    /// ```
    shed -> Rejected<St::Ok>;
}

unstarted_methods! {
    TryBoundedBuffered<NotRun<St::Ok>> where St: TryFutureStream, F = St::Ok;
    /// As on the stream without it (see [`TryBoundedBuffered::max_wait`] on
    /// `TryBoundedBuffered<St, K>`): expires waiting items; it does both already, and this sets the setting anew.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, Shed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..10u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 2)
    ///     .shed(Shed::Newest)
    ///     .max_wait(Duration::from_secs(1))
    ///     .max_wait(Duration::from_secs(2)); // the last one counts
    /// assert_eq!(jobs.by_ref().count().await, 10);
    /// # });
    /// ```
    max_wait -> NotRun<St::Ok>;
    /// As on the stream without it (see [`TryBoundedBuffered::shed`] on
    /// `TryBoundedBuffered<St, K>`): sheds instead of waiting; it does both already, and this sets the setting anew.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{BoundedStreamExt, Shed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..10u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 2)
    ///     .max_wait(Duration::from_secs(1))
    ///     .shed(Shed::Oldest)
    ///     .shed(Shed::Newest); // the last one counts
    /// assert_eq!(jobs.by_ref().count().await, 10);
    /// # });
    /// ```
    shed -> NotRun<St::Ok>;
}
