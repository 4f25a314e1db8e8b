//! The forms of the two stream types, one per `N` (what comes back for an
//! item not run: nothing, an `Expired`, a `Rejected`, a `NotRun`, or, with
//! deadlines, an `Unfinished`): each
//! has its own item type, so its own `Stream` and `Spawnable`, and its own
//! `max_wait` and `shed`, whose return types say what `N` becomes.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::stream::{FusedStream, Stream};
use futures_core::{Future, TryFuture};

use super::{BoundedBuffered, TryBoundedBuffered};
use crate::admission::{Admission, KeyRule, WeightRule};
use crate::clock::{Clocked, Clocking};
use crate::engine::{Of, Types};
use crate::expiry::Expired;
use crate::failure::{FailFast, Outputs};
use crate::items::{FutureStream, SendFutureStream, SendTryFutureStream, TryFutureStream};
use crate::shed::{NotRun, Rejected, Shed};
use crate::spawn::{self, Spawnable, Spawned, Spawner, sealed::Sealed};
#[cfg(doc)]
use crate::stats::Stats;
use crate::time::Unfinished;

/// One form of a stream type (its `N`, what comes back for an item not
/// run): its `Stream` and `FusedStream`, the item spelled out in the source's
/// own types (what a reader of the docs sees, instead of an alias to look
/// up), how what the engine settles becomes that item, and its `max_wait`
/// and `shed`, which set `N` anew.
macro_rules! form {
    (
        $Stream:ident<$N:ty> where St: $Bound:ident, F = $F:ty, P = $P:ty, Send = $Send:ident;
        type Item = $Item:ty;
        $settled:ident => $item:expr;
        again $already:literal, $jobs:literal, $made:literal;
        max_wait -> $E:ty, $expired:literal;
        shed -> $R:ty, $rejected:literal;
    ) => {
        form! {
            $Stream<$N> where St: $Bound, F = $F, P = $P, Send = $Send;
            type Item = $Item;
            $settled => $item;
            #[doc = concat!("Expires waiting items, on a stream that ", $already, ": as")]
            #[doc = "[`BoundedBuffered::max_wait`] does, with the limit set last in force. An"]
            #[doc = concat!("item not run comes back as ", $expired, ".")]
            #[doc = ""]
            #[doc = "# Panics"]
            #[doc = ""]
            #[doc = "If the stream has already been polled."]
            #[doc = ""]
            #[doc = "# Examples"]
            #[doc = ""]
            #[doc = "```"]
            #[doc = "use bounded_buffered::BoundedStreamExt;"]
            #[doc = "use futures::{StreamExt, stream};"]
            #[doc = ""]
            #[doc = "# futures::executor::block_on(async {"]
            #[doc = concat!("let mut jobs = ", $jobs, "(2, 2)", $made)]
            #[doc = "    .max_wait(std::time::Duration::from_secs(2)); // the last one counts"]
            #[doc = "assert_eq!(jobs.by_ref().count().await, 10);"]
            #[doc = "# });"]
            #[doc = "```"]
            max_wait -> $E;
            #[doc = concat!("Sheds instead of waiting, on a stream that ", $already, ": as")]
            #[doc = "[`BoundedBuffered::shed`] does, with the item to shed set last in force."]
            #[doc = concat!("An item not run comes back as ", $rejected, ".")]
            #[doc = ""]
            #[doc = "# Panics"]
            #[doc = ""]
            #[doc = "If the stream has already been polled."]
            #[doc = ""]
            #[doc = "# Examples"]
            #[doc = ""]
            #[doc = "```"]
            #[doc = "use bounded_buffered::BoundedStreamExt;"]
            #[doc = "use futures::{StreamExt, stream};"]
            #[doc = ""]
            #[doc = "# futures::executor::block_on(async {"]
            #[doc = concat!("let mut jobs = ", $jobs, "(2, 2)", $made)]
            #[doc = "    .shed(bounded_buffered::Shed::Newest); // the last one counts"]
            #[doc = "assert_eq!(jobs.by_ref().count().await, 10);"]
            #[doc = "# });"]
            #[doc = "```"]
            shed -> $R;
        }
    };
    (
        $Stream:ident<$N:ty> where St: $Bound:ident, F = $F:ty, P = $P:ty, Send = $Send:ident;
        type Item = $Item:ty;
        $settled:ident => $item:expr;
        $(#[$max_wait_doc:meta])* max_wait -> $E:ty;
        $(#[$shed_doc:meta])* shed -> $R:ty;
    ) => {
        #[allow(clippy::type_complexity)]
        impl<St: $Bound, K: Clocking, Q: KeyRule<$F>, W: WeightRule<$F>> Stream
            for $Stream<St, K, $N, Q, W>
        {
            type Item = $Item;

            fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<$Item>> {
                self.inner.poll_next(cx, Self::item)
            }

            fn size_hint(&self) -> (usize, Option<usize>) {
                self.inner.size_hint()
            }
        }

        impl<St: $Bound, K: Clocking, Q: KeyRule<$F>, W: WeightRule<$F>> FusedStream
            for $Stream<St, K, $N, Q, W>
        {
            fn is_terminated(&self) -> bool {
                self.inner.is_terminated()
            }
        }

        impl<St: $Send, K: Clocking, Q: KeyRule<$F>, W: WeightRule<$F>> Sealed
            for $Stream<St, K, $N, Q, W>
        {
        }

        impl<St: $Send, K: Clocking, Q: KeyRule<$F>, W: WeightRule<$F>> Spawnable
            for $Stream<St, K, $N, Q, W>
        {
            #[track_caller]
            fn spawn(self, executor: Box<dyn Spawner>) -> Spawned<Self::Item> {
                spawn::spawn(self.into_spawned(), executor, Self::item)
            }
        }

        #[allow(clippy::type_complexity)]
        impl<St: $Bound, K: Clocking, Q: KeyRule<$F>, W: WeightRule<$F>>
            $Stream<St, K, $N, Q, W>
        {
            /// What the engine settled, as this form yields it.
            #[inline(always)]
            pub(crate) fn item(
                $settled: <Of<St, $P, K, $N, Admission<Q, W>> as Types>::Item,
            ) -> $Item {
                $item
            }

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

form! {
    BoundedBuffered<Infallible> where St: FutureStream, F = St::Item, P = Outputs, Send = SendFutureStream;
    type Item = <St::Item as Future>::Output;
    settled => match settled {
        Ok(output) => output,
        Err(never) => match never {},
    };
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

form! {
    BoundedBuffered<Expired<St::Item>> where St: FutureStream, F = St::Item, P = Outputs, Send = SendFutureStream;
    type Item = Result<<St::Item as Future>::Output, Expired<St::Item>>;
    settled => settled;
    again "expires waiting items already", "stream::iter(0..10u32).map(|n| async move { n }).bounded", "\n    .max_wait(std::time::Duration::from_secs(1))";
    max_wait -> Expired<St::Item>, "an [`Expired`]";
    shed -> NotRun<St::Item>, "a [`NotRun`], expired or shed";
}

form! {
    BoundedBuffered<Rejected<St::Item>> where St: FutureStream, F = St::Item, P = Outputs, Send = SendFutureStream;
    type Item = Result<<St::Item as Future>::Output, Rejected<St::Item>>;
    settled => settled;
    again "sheds already", "stream::iter(0..10u32).map(|n| async move { n }).bounded", "\n    .shed(bounded_buffered::Shed::Oldest)";
    max_wait -> NotRun<St::Item>, "a [`NotRun`], expired or shed";
    shed -> Rejected<St::Item>, "a [`Rejected`]";
}

form! {
    BoundedBuffered<NotRun<St::Item>> where St: FutureStream, F = St::Item, P = Outputs, Send = SendFutureStream;
    type Item = Result<<St::Item as Future>::Output, NotRun<St::Item>>;
    settled => settled;
    again "expires waiting items and sheds already", "stream::iter(0..10u32).map(|n| async move { n }).bounded", "\n    .max_wait(std::time::Duration::from_secs(1))\n    .shed(bounded_buffered::Shed::Oldest)";
    max_wait -> NotRun<St::Item>, "a [`NotRun`], expired or shed";
    shed -> NotRun<St::Item>, "a [`NotRun`], expired or shed";
}

form! {
    BoundedBuffered<Unfinished<St::Item>> where St: FutureStream, F = St::Item, P = Outputs, Send = SendFutureStream;
    type Item = Result<<St::Item as Future>::Output, Unfinished<St::Item>>;
    settled => settled;
    again "has deadlines already", "stream::iter(0..10u32).map(|n| async move { n }).bounded", "\n    .timer(|_: std::time::Instant| std::future::pending())\n    .deadline(std::time::Instant::now() + std::time::Duration::from_secs(60))";
    max_wait -> Unfinished<St::Item>, "an [`Unfinished`], with its cause";
    shed -> Unfinished<St::Item>, "an [`Unfinished`], with its cause";
}

form! {
    TryBoundedBuffered<Infallible> where St: TryFutureStream, F = St::Ok, P = FailFast, Send = SendTryFutureStream;
    type Item = Result<<St::Ok as TryFuture>::Ok, St::Error>;
    settled => settled.map(|outcome| match outcome {
        Ok(output) => output,
        Err(never) => match never {},
    });
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
    /// Sheds instead of waiting, as [`BoundedBuffered::shed`] does (see
    /// there for which item goes, the allowance and the bound): while no
    /// waiting item may start and the queue is full, the stream keeps pulling,
    /// and hands an item back, never polled, as a [`Rejected`] inside the
    /// run's `Ok`: a rejection is a per-item outcome, and does not end the
    /// run. With [`max_wait`](Self::max_wait) too, an item not run is a
    /// [`NotRun`], with its cause.
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

form! {
    TryBoundedBuffered<Expired<St::Ok>> where St: TryFutureStream, F = St::Ok, P = FailFast, Send = SendTryFutureStream;
    type Item = Result<Result<<St::Ok as TryFuture>::Ok, Expired<St::Ok>>, St::Error>;
    settled => settled;
    again "expires waiting items already", "stream::iter(0..10u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded", "\n    .max_wait(std::time::Duration::from_secs(1))";
    max_wait -> Expired<St::Ok>, "an [`Expired`]";
    shed -> NotRun<St::Ok>, "a [`NotRun`], expired or shed";
}

form! {
    TryBoundedBuffered<Rejected<St::Ok>> where St: TryFutureStream, F = St::Ok, P = FailFast, Send = SendTryFutureStream;
    type Item = Result<Result<<St::Ok as TryFuture>::Ok, Rejected<St::Ok>>, St::Error>;
    settled => settled;
    again "sheds already", "stream::iter(0..10u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded", "\n    .shed(bounded_buffered::Shed::Oldest)";
    max_wait -> NotRun<St::Ok>, "a [`NotRun`], expired or shed";
    shed -> Rejected<St::Ok>, "a [`Rejected`]";
}

form! {
    TryBoundedBuffered<NotRun<St::Ok>> where St: TryFutureStream, F = St::Ok, P = FailFast, Send = SendTryFutureStream;
    type Item = Result<Result<<St::Ok as TryFuture>::Ok, NotRun<St::Ok>>, St::Error>;
    settled => settled;
    again "expires waiting items and sheds already", "stream::iter(0..10u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded", "\n    .max_wait(std::time::Duration::from_secs(1))\n    .shed(bounded_buffered::Shed::Oldest)";
    max_wait -> NotRun<St::Ok>, "a [`NotRun`], expired or shed";
    shed -> NotRun<St::Ok>, "a [`NotRun`], expired or shed";
}

form! {
    TryBoundedBuffered<Unfinished<St::Ok>> where St: TryFutureStream, F = St::Ok, P = FailFast, Send = SendTryFutureStream;
    type Item = Result<Result<<St::Ok as TryFuture>::Ok, Unfinished<St::Ok>>, St::Error>;
    settled => settled;
    again "has deadlines already", "stream::iter(0..10u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded", "\n    .timer(|_: std::time::Instant| std::future::pending())\n    .deadline(std::time::Instant::now() + std::time::Duration::from_secs(60))";
    max_wait -> Unfinished<St::Ok>, "an [`Unfinished`], with its cause";
    shed -> Unfinished<St::Ok>, "an [`Unfinished`], with its cause";
}
