//! `adaptive`, on both stream types: a controller sets the `workers`
//! limit from what the items show ([`crate::adaptive`], [`crate::aimd`]).

use futures_core::{Future, TryFuture};

use super::{BoundedBuffered, TryBoundedBuffered};
use crate::adaptive::{Classify, Controller};
use crate::admission::{KeyRule, WeightRule};
use crate::clock::{Clocked, Clocking};
use crate::items::{FutureStream, TryFutureStream};

impl<St: FutureStream, K: Clocking, N, Q: KeyRule<St::Item>, W: WeightRule<St::Item>>
    BoundedBuffered<St, K, N, Q, W>
{
    /// Lets `controller` set the `workers` limit from what the items show: each
    /// item's run time (start to completion, on the stream's
    /// [`clock`](Self::clock)), the [`Verdict`](crate::Verdict) `classify` gives its output
    /// (success, back-pressure such as an HTTP 429 or 503, or ignore), and
    /// whether the limit was reached. `classify` may return a `bool` instead,
    /// `true` meaning back-pressure. An ignored output, and an item that never
    /// completes (expired, or cancelled by fail fast, `close` or drop), is not
    /// heard of: it feeds neither the run times nor the back-pressure. The
    /// limit the controller returns applies at once, as a
    /// [`Limits`](crate::Limits) handle's would. [`Aimd`](crate::Aimd) is the
    /// controller the crate ships; [`Controller`] lets you plug in your own.
    ///
    /// The controller's [`initial`](Controller::initial) limit replaces the
    /// `workers` given to `bounded`; [`limits`](Self::limits) shows the current
    /// value. The controller owns `workers`: a handle's `set_workers` lasts
    /// until its next decision (`set_waiting` is the handle's alone). A limit
    /// of 0 from a controller is taken as 1, since only a completion could
    /// raise it again. The clock is read once per `poll_next` that starts or
    /// completes an item; the stream allocates nothing per item for this.
    /// Must be called before the first poll.
    ///
    /// # Panics
    ///
    /// If the stream was already polled.
    ///
    /// # Examples
    ///
    /// A service that answers "busy" past 8 requests in flight:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{Aimd, BoundedStreamExt};
    /// use futures::{StreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let in_flight = Arc::new(AtomicUsize::new(0));
    /// let call = move |_| {
    ///     let in_flight = Arc::clone(&in_flight);
    ///     async move {
    ///         if in_flight.fetch_add(1, SeqCst) >= 8 {
    ///             in_flight.fetch_sub(1, SeqCst);
    ///             return Err("busy");
    ///         }
    ///         tokio::time::sleep(Duration::from_millis(10)).await;
    ///         in_flight.fetch_sub(1, SeqCst);
    ///         Ok(())
    ///     }
    /// };
    /// let mut replies = stream::iter(0..2_000)
    ///     .map(call)
    ///     .bounded(1, 0)
    ///     .adaptive(Aimd::new(1, 100), |reply: &Result<(), &str>| reply.is_err())
    ///     .clock(|| tokio::time::Instant::now().into_std());
    /// let limits = replies.limits();
    /// let mut busy = 0;
    /// while let Some(reply) = replies.next().await {
    ///     busy += usize::from(reply.is_err());
    /// }
    /// // The service gives no warning before it refuses (its run time never
    /// // rises): the limit finds 8 from the refusals, and each probe of 9
    /// // now and then costs one "busy" answer (19 of 2,000 here).
    /// assert!(busy <= 20, "{busy}");
    /// assert_eq!(limits.workers(), 8);
    /// # }
    /// ```
    #[track_caller]
    pub fn adaptive<C, F>(self, controller: C, classify: F) -> BoundedBuffered<St, Clocked, N, Q, W>
    where
        C: Controller,
        F: Classify<<St::Item as Future>::Output>,
    {
        BoundedBuffered {
            inner: self
                .inner
                .rebuilt("adaptive", |engine| engine.adaptive(controller, classify)),
        }
    }
}

impl<St: TryFutureStream, K: Clocking, N, Q: KeyRule<St::Ok>, W: WeightRule<St::Ok>>
    TryBoundedBuffered<St, K, N, Q, W>
{
    /// Lets `controller` set the `workers` limit from what the items show, as
    /// [`BoundedBuffered::adaptive`] does; `classify` sees each future's
    /// `Result` and gives it a [`Verdict`](crate::Verdict) (or a `bool`): an
    /// `Err` that is back-pressure still ends the run.
    ///
    /// # Panics
    ///
    /// If the stream was already polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::{Aimd, BoundedStreamExt};
    /// use futures::{StreamExt, TryStreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// // A service that answers 503 past 4 requests in flight: back-pressure,
    /// // not a failure of the run (an `Err` would end it).
    /// let in_flight = Arc::new(AtomicUsize::new(0));
    /// let call = move |_| {
    ///     let in_flight = Arc::clone(&in_flight);
    ///     Ok::<_, String>(async move {
    ///         let busy = in_flight.fetch_add(1, SeqCst) >= 4;
    ///         if !busy {
    ///             tokio::time::sleep(Duration::from_millis(10)).await;
    ///         }
    ///         in_flight.fetch_sub(1, SeqCst);
    ///         Ok(if busy { 503u16 } else { 200 })
    ///     })
    /// };
    /// let mut replies = stream::iter(0..1_000)
    ///     .map(call)
    ///     .try_bounded(1, 0)
    ///     .adaptive(Aimd::new(1, 64), |reply: &Result<u16, String>| matches!(reply, Ok(503)))
    ///     .clock(|| tokio::time::Instant::now().into_std());
    /// let limits = replies.limits();
    /// while replies.try_next().await.expect("no item fails").is_some() {}
    /// assert_eq!(limits.workers(), 4);
    /// # }
    /// ```
    #[track_caller]
    pub fn adaptive<C, F>(
        self,
        controller: C,
        classify: F,
    ) -> TryBoundedBuffered<St, Clocked, N, Q, W>
    where
        C: Controller,
        F: Classify<Result<<St::Ok as TryFuture>::Ok, St::Error>>,
    {
        TryBoundedBuffered {
            inner: self
                .inner
                .rebuilt("adaptive", |engine| engine.adaptive(controller, classify)),
        }
    }
}
