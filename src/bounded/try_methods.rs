//! [`TryBoundedBuffered`]'s builder methods and accessors: those of
//! [`BoundedBuffered`], for a stream that fails fast, each documented by
//! reference to its namesake there, with an example of its own.

use std::hash::Hash;
use std::pin::Pin;
use std::time::Instant;

#[cfg(doc)]
use super::BoundedBuffered;
use super::{Spawning, TryBoundedBuffered};
use crate::admission::{KeyOf, KeyRule, PerKey, WeightOf, WeightRule, Weights, weighted};
use crate::clock::{Clocked, Clocking};
use crate::engine::Engine;
use crate::failure::FailFast;
use crate::items::TryFutureStream;
use crate::limits::Limits;
use crate::spawn::{Spawnable, Spawned, Spawner};
use crate::stats::Stats;
use crate::timings::Timings;
use futures_core::Stream;

impl<St: TryFutureStream, K: Clocking, N, Q: KeyRule<St::Ok>, W: WeightRule<St::Ok>>
    TryBoundedBuffered<St, K, N, Q, W>
{
    /// Yields outputs in input order, letting work run at most `window`
    /// items ahead of the oldest output not yet yielded.
    ///
    /// As [`BoundedBuffered::ordered`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Panics
    ///
    /// If `window` is 0 (no item could ever start), or if the stream has
    /// already been polled (outputs may already have been handed out in
    /// completion order): contract point 11.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(4, 0).ordered(4);
    /// let outputs: Vec<_> = jobs.collect().await;
    /// assert_eq!(outputs.len(), 100); // in input order
    /// # });
    /// ```
    #[track_caller]
    pub fn ordered(self, window: usize) -> Self {
        Self {
            inner: self.inner.ordered(window),
        }
    }

    /// Records where items spend their time: how long each waited (pull
    /// to start), ran (start to completion) and was held (completion to
    /// hand-out), read with [`timings`](Self::timings).
    ///
    /// As [`BoundedBuffered::timed`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 2).timed();
    /// while jobs.next().await.is_some() {}
    /// let timings = jobs.timings().expect("timed");
    /// assert_eq!(timings.run.count(), 100);
    /// # });
    /// ```
    #[track_caller]
    pub fn timed(self) -> TryBoundedBuffered<St, Clocked, N, Q, W> {
        TryBoundedBuffered {
            inner: self.inner.rebuilt("timed", Engine::timed),
        }
    }

    /// Replaces `Instant::now` as the clock of
    /// [`max_wait`](Self::max_wait), [`timed`](Self::timed) and
    /// [`adaptive`](Self::adaptive), for tests and simulations, in either
    /// order with them: any closure (it may capture a simulation's
    /// time), or a function.
    ///
    /// As [`BoundedBuffered::clock`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled.
    ///
    /// # Examples
    ///
    /// On tokio's paused clock, and on a clock of the test's own:
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use std::time::{Duration, Instant};
    ///
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// let jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(1, 0);
    /// let jobs = jobs.timed().clock(|| tokio::time::Instant::now().into_std());
    /// # drop(jobs);
    ///
    /// let now = Arc::new(Mutex::new(Instant::now()));
    /// let clock = Arc::clone(&now);
    /// let jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(1, 0)
    ///     .max_wait(Duration::from_millis(5))
    ///     .clock(move || *clock.lock().unwrap());
    /// *now.lock().unwrap() += Duration::from_millis(10); // time moves when the test says
    /// # drop(jobs);
    /// ```
    #[track_caller]
    pub fn clock(
        self,
        now: impl Fn() -> Instant + Send + Sync + 'static,
    ) -> TryBoundedBuffered<St, Clocked, N, Q, W> {
        assert!(
            !self.inner.has_timer(),
            "`clock` after `timer`: the timer's clock is the stream's, and a stream has one notion \
             of now; give the timer the clock instead (`Timer::now`)"
        );
        TryBoundedBuffered {
            inner: self.inner.rebuilt("clock", |engine| engine.clock(now)),
        }
    }

    /// A copy of the time distributions if [`timed`](Self::timed) was
    /// called, `None` otherwise. See [`Timings`].
    ///
    /// As [`BoundedBuffered::timings`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// let jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 0);
    /// assert!(jobs.timings().is_none());
    /// assert!(jobs.timed().timings().is_some());
    /// ```
    pub fn timings(&self) -> Option<Timings> {
        self.inner.timings()
    }

    /// Stops taking items from the source; the stream then finishes every
    /// running and waiting item, yields their outputs, and ends.
    ///
    /// As [`BoundedBuffered::close`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 3);
    /// assert!(jobs.next().await.is_some());
    /// // 2 running and 3 waiting were pulled besides the one handed out.
    /// jobs.close();
    /// assert_eq!(jobs.by_ref().count().await, 5); // every pulled item, and nothing more
    /// let source = jobs.into_inner();
    /// assert_eq!(source.size_hint(), (94, Some(94))); // resumes at item 6
    /// # });
    /// ```
    pub fn close(&self) {
        self.inner.close();
    }

    /// Resumes a stream that [`close`](Self::close) stopped: it pulls
    /// from the same source again, from the item after the last one it
    /// pulled. Works with any source, `Unpin` or not (a paged query built
    /// with `stream::unfold`, say): the stream is `Unpin` itself, so it
    /// needs no `pin!`, and nothing moves out of it.
    ///
    /// As [`BoundedBuffered::reopen`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Panics
    ///
    /// If the run failed (fail fast): what was pulled after the error
    /// was dropped, so resuming would lose items silently.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 3);
    /// assert!(jobs.next().await.is_some());
    /// jobs.close();
    /// let first = 1 + jobs.by_ref().count().await; // drained: 6 in all
    /// jobs.reopen();
    /// let rest = jobs.by_ref().count().await;
    /// assert_eq!((first, rest), (6, 94)); // every item once
    /// # });
    /// ```
    #[track_caller]
    pub fn reopen(&mut self) {
        self.inner.reopen();
    }

    /// Returns a snapshot of the counts the budgets bound; see [`Stats`].
    ///
    /// As [`BoundedBuffered::stats`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 3);
    /// assert!(jobs.next().await.is_some());
    /// // Before handing out the first output, the freed worker was
    /// // refilled and the waiting queue topped up: 2 running or held,
    /// // 3 waiting.
    /// let stats = jobs.stats();
    /// assert_eq!(stats.active + stats.held, 2);
    /// assert_eq!((stats.waiting, stats.pulled), (3, 6));
    /// # });
    /// ```
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// A handle to change this stream's `workers` and `waiting` while it
    /// runs, from any task or thread; see [`Limits`] for what raising,
    /// lowering and pausing do. Every call returns a handle to the same
    /// limits.
    ///
    /// As [`BoundedBuffered::limits`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(4, 4);
    /// let limits = jobs.limits();
    /// std::thread::spawn(move || limits.set_workers(1)).join().unwrap();
    /// assert!(jobs.next().await.is_some());
    /// let stats = jobs.stats();
    /// assert_eq!((stats.workers_limit, stats.peak_active), (1, 1));
    /// # });
    /// ```
    pub fn limits(&self) -> Limits {
        self.inner.limits()
    }

    /// Acquires a reference to the source stream.
    ///
    /// As [`BoundedBuffered::get_ref`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// let jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 0);
    /// assert_eq!(jobs.get_ref().size_hint(), (100, Some(100)));
    /// ```
    pub fn get_ref(&self) -> &St {
        self.inner.source()
    }

    /// Acquires a mutable reference to the source stream, if it is
    /// `Unpin` (use [`get_pin_mut`](Self::get_pin_mut) otherwise).
    ///
    /// As [`BoundedBuffered::get_mut`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// let mut jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 0);
    /// assert_eq!(jobs.get_mut().size_hint(), (100, Some(100)));
    /// ```
    pub fn get_mut(&mut self) -> &mut St
    where
        St: Unpin,
    {
        self.inner.source_mut()
    }

    /// Acquires a pinned mutable reference to the source stream, whatever
    /// it is.
    ///
    /// As [`BoundedBuffered::get_pin_mut`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::pin::Pin;
    ///
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// let mut jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 0);
    /// assert_eq!(Pin::new(&mut jobs).get_pin_mut().size_hint(), (100, Some(100)));
    /// ```
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut St> {
        self.get_mut().inner.source_mut().as_mut()
    }

    /// Consumes the adapter and returns the source stream, if it is
    /// `Unpin` (a source that is not is resumed in place with
    /// [`reopen`](Self::reopen)).
    ///
    /// As [`BoundedBuffered::into_inner`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) })).try_bounded(2, 1);
    /// assert!(jobs.next().await.is_some());
    /// // 2 started and 1 waiting were pulled besides the one handed out
    /// // (4 in all); they are dropped, and the source resumes after them.
    /// let rest = jobs.into_inner();
    /// assert_eq!(rest.size_hint(), (96, Some(96)));
    /// # });
    /// ```
    pub fn into_inner(self) -> St
    where
        St: Unpin,
    {
        *Pin::into_inner(self.inner.into_source())
    }

    /// Caps each key at `limit` running items: the stream's futures are
    /// [`Keyed`](crate::Keyed) (nested in [`Weighted`](crate::Weighted)
    /// or not), and at most `limit` items of one key run at once.
    ///
    /// As [`BoundedBuffered::per_key`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Panics
    ///
    /// If `limit` is 0, or if the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::{BoundedStreamExt, Keyed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// // 100 jobs of 4 tenants, at most 2 of one tenant at once.
    /// let mut jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(Keyed::new(n % 4, async move { Ok::<_, String>(n) }))).try_bounded(6, 4).per_key(2);
    /// let mut done = 0;
    /// while jobs.next().await.is_some() {
    ///     done += 1;
    /// }
    /// assert_eq!(done, 100);
    /// # });
    /// ```
    #[track_caller]
    pub fn per_key<Key>(self, limit: usize) -> TryBoundedBuffered<St, K, N, PerKey<Key>, W>
    where
        St::Ok: KeyOf<Key>,
        Key: Hash + Eq + Clone + Send + Sync + Unpin + 'static,
    {
        let keys = PerKey::new(limit);
        TryBoundedBuffered {
            inner: self.inner.rebuilt("per_key", |engine| engine.key(keys)),
        }
    }

    /// The fair shares of a [`Tenants`](crate::Tenants) stream: its key
    /// rule, set by [`Tenants::try_bounded`](crate::Tenants::try_bounded).
    #[track_caller]
    pub(crate) fn fair_shares<Key>(
        self,
        shares: crate::FairShare<Key>,
    ) -> TryBoundedBuffered<St, K, N, crate::FairShare<Key>, W>
    where
        crate::FairShare<Key>: KeyRule<St::Ok>,
    {
        TryBoundedBuffered {
            inner: self
                .inner
                .rebuilt("try_bounded", |engine| engine.key(shares)),
        }
    }

    /// Bounds the sum of the running items' weights, in addition to
    /// `workers` (tokens in flight, test slots, bytes being processed):
    /// the stream's futures are [`Weighted`](crate::Weighted).
    ///
    /// As [`BoundedBuffered::max_running_weight`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Panics
    ///
    /// If `max` is 0, or if the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::{BoundedStreamExt, Weighted};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// // Weights 1 to 3 (`n % 3 + 1`): at most 4 in flight.
    /// let mut jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(Weighted::new(u64::from(n % 3 + 1), async move { Ok::<_, String>(n) }))).try_bounded(8, 4).max_running_weight(4);
    /// while jobs.next().await.is_some() {}
    /// assert!(jobs.stats().peak_running_weight <= 4);
    /// # });
    /// ```
    #[track_caller]
    pub fn max_running_weight(self, max: u64) -> TryBoundedBuffered<St, K, N, Q, Weights>
    where
        St::Ok: WeightOf,
    {
        let max = weighted::running_budget(max);
        TryBoundedBuffered {
            inner: self.inner.rebuilt("max_running_weight", |engine| {
                engine.weigh(|weights| weights.with_max_running(max))
            }),
        }
    }

    /// Bounds the sum of the waiting items' weights, in addition to the
    /// `waiting` count: a byte budget for what is pulled ahead (eight
    /// waiting places hold eight small ids or eight large documents;
    /// this holds at most `max` bytes of them). The stream's futures are
    /// [`Weighted`](crate::Weighted).
    ///
    /// As [`BoundedBuffered::max_waiting_weight`], for a fallible stream: see there for
    /// what it does in detail.
    ///
    /// # Panics
    ///
    /// If `max` is 0, or if the stream has already been polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::{BoundedStreamExt, Weighted};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..100u32).map(|n| Ok::<_, String>(Weighted::new(u64::from(n % 3 + 1), async move { Ok::<_, String>(n) }))).try_bounded(2, 100).max_waiting_weight(6);
    /// while jobs.next().await.is_some() {}
    /// // At most 6 waiting, plus less than one item (weights 1 to 3).
    /// assert!(jobs.stats().peak_waiting_weight < 6 + 3);
    /// # });
    /// ```
    #[track_caller]
    pub fn max_waiting_weight(self, max: u64) -> TryBoundedBuffered<St, K, N, Q, Weights>
    where
        St::Ok: WeightOf,
    {
        let max = weighted::waiting_budget(max);
        TryBoundedBuffered {
            inner: self.inner.rebuilt("max_waiting_weight", |engine| {
                engine.weigh(|weights| weights.with_max_waiting(max))
            }),
        }
    }

    /// Publishes what [`stats`](Self::stats) and [`timings`](Self::timings)
    /// report through the [`metrics`](https://docs.rs/metrics/0.24) facade.
    ///
    /// As [`BoundedBuffered::metrics`], for a fallible stream: see there for
    /// the names, when they are published and what it costs.
    /// `bounded_failed_total` counts 1 once the run failed fast.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled, or, called after `.metrics`,
    /// with another recorder current than `.metrics` had.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// // To the recorder the application installed, if any.
    /// let jobs = stream::iter(0..10u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) }));
    /// let mut jobs = jobs.try_bounded(4, 4).metrics("imports");
    /// assert_eq!(jobs.by_ref().count().await, 10);
    /// # });
    /// ```
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    #[track_caller]
    pub fn metrics(self, name: impl Into<metrics::SharedString>) -> Self {
        let labels = vec![metrics::Label::new("stream", name.into())];
        Self {
            inner: self.inner.metrics(labels),
        }
    }

    /// [`metrics`](Self::metrics), with labels of your own instead of
    /// `stream = name`, as [`BoundedBuffered::metrics_with_labels`] does.
    ///
    /// # Panics
    ///
    /// As [`metrics`](Self::metrics).
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let jobs = stream::iter(0..10u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) }));
    /// let mut jobs = jobs.try_bounded(4, 4).metrics_with_labels(&[("pipeline", "imports")]);
    /// assert_eq!(jobs.by_ref().count().await, 10);
    /// # });
    /// ```
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    #[track_caller]
    pub fn metrics_with_labels(self, labels: impl metrics::IntoLabels) -> Self {
        Self {
            inner: self.inner.metrics(labels.into_labels()),
        }
    }

    /// Runs the same budgets with the futures in worker tasks on `executor`,
    /// failing fast there as in place.
    ///
    /// As [`BoundedBuffered::spawn_on`], for a fallible stream: see there for
    /// what it does in detail. The first error, in a task or from the source,
    /// cancels every task at once (contract point 21).
    ///
    /// # Panics
    ///
    /// If the stream was already polled: its in-flight work cannot move.
    ///
    /// # Examples
    ///
    /// The error ends the run while the slow first item still runs (it is
    /// cancelled, not waited for).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, TryStreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
    /// # async fn main() {
    /// let saved: Result<Vec<u32>, String> = stream::iter(0..100u32)
    ///     .map(|n| {
    ///         Ok(async move {
    ///             match n {
    ///                 0 => {
    ///                     tokio::time::sleep(Duration::from_secs(3600)).await;
    ///                     Ok(n)
    ///                 }
    ///                 3 => Err(format!("item {n} failed")),
    ///                 _ => Ok(n),
    ///             }
    ///         })
    ///     })
    ///     .try_bounded(4, 4)
    ///     .ordered(8)
    ///     .spawn_on(tokio::runtime::Handle::current())
    ///     .try_collect()
    ///     .await;
    /// assert_eq!(saved, Err("item 3 failed".to_string()));
    /// # }
    /// ```
    #[track_caller]
    pub fn spawn_on<E: Spawner>(self, executor: E) -> Spawned<<Self as Stream>::Item>
    where
        Self: Spawnable,
    {
        Spawnable::spawn(self, Box::new(executor))
    }

    /// The source and the engine, for the spawned mode, before the
    /// first poll.
    #[track_caller]
    pub(crate) fn into_spawned(self) -> Spawning<St, FailFast, K, N, Q, W> {
        self.inner.into_spawned()
    }
}
