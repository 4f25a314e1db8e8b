//! [`BoundedBuffered`]'s builder methods and accessors: the budgets, time,
//! stopping and resuming, the source, keys and weights, metrics, and the
//! spawned mode (`adaptive.rs` has the adaptive controller's). [`TryBoundedBuffered`](super::TryBoundedBuffered) has the same, in
//! `try_methods.rs`, documented there by reference to these.

use std::hash::Hash;
use std::pin::Pin;
use std::time::Instant;

use super::{BoundedBuffered, Spawning};
use crate::admission::{KeyOf, KeyRule, PerKey, WeightOf, WeightRule, Weights, weighted};
use crate::clock::{Clocked, Clocking};
use crate::engine::Engine;
use crate::failure::Outputs;
use crate::items::FutureStream;
use crate::limits::Limits;
use crate::spawn::{Spawnable, Spawned, Spawner};
use crate::stats::Stats;
use crate::timings::Timings;
use futures_core::Stream;

impl<St: FutureStream, K: Clocking, N, Q: KeyRule<St::Item>, W: WeightRule<St::Item>>
    BoundedBuffered<St, K, N, Q, W>
{
    /// Yields outputs in input order, letting work run at most `window`
    /// items ahead of the oldest output not yet yielded.
    ///
    /// Every item between the oldest unyielded output and the newest
    /// started one is running or held, so `active + held <= window`. With
    /// `window == workers` this behaves like `buffered(workers)`; a larger
    /// window lets the other workers keep going past a slow item, at the
    /// cost of holding up to `window` outputs. Contract points 3 and 5 of
    /// the [crate documentation](crate#what-the-adapter-guarantees) say
    /// exactly what holds. Held outputs live in a ring indexed by input
    /// position, which doubles as the span of started items grows, up to
    /// the power of two at or above `window`, and is then reused.
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
    /// let jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(4, 0).ordered(4);
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
    /// Off by default, because reading a clock costs more than the
    /// adapter's own work per item. When on, the clock is read at most
    /// once per `poll_next`, and every event that call handles gets that
    /// reading: a duration is exact to within the time one `poll_next`
    /// takes (the first polls of the futures it starts, the woken futures
    /// it polls). The three histograms are allocated once, here;
    /// recording allocates nothing.
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
    /// let mut jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(2, 2).timed();
    /// while jobs.next().await.is_some() {}
    /// let timings = jobs.timings().expect("timed");
    /// assert_eq!(timings.run.count(), 100);
    /// # });
    /// ```
    #[track_caller]
    pub fn timed(self) -> BoundedBuffered<St, Clocked, N, Q, W> {
        BoundedBuffered {
            inner: self.inner.rebuilt("timed", Engine::timed),
        }
    }

    /// Replaces `Instant::now` as the clock of
    /// [`max_wait`](Self::max_wait), [`timed`](Self::timed) and
    /// [`adaptive`](Self::adaptive), for tests and simulations, in either
    /// order with them: any closure (it may capture a simulation's
    /// time), or a function.
    ///
    /// Alone, it changes nothing: a clock nothing asks for is never read.
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
    /// let jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(1, 0);
    /// let jobs = jobs.timed().clock(|| tokio::time::Instant::now().into_std());
    /// # drop(jobs);
    ///
    /// let now = Arc::new(Mutex::new(Instant::now()));
    /// let clock = Arc::clone(&now);
    /// let jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(1, 0)
    ///     .max_wait(Duration::from_millis(5))
    ///     .clock(move || *clock.lock().unwrap());
    /// *now.lock().unwrap() += Duration::from_millis(10); // time moves when the test says
    /// # drop(jobs);
    /// ```
    #[track_caller]
    pub fn clock(
        self,
        now: impl Fn() -> Instant + Send + Sync + 'static,
    ) -> BoundedBuffered<St, Clocked, N, Q, W> {
        assert!(
            !self.inner.has_timer(),
            "`clock` after `timer`: the timer's clock is the stream's, and a stream has one notion \
             of now; give the timer the clock instead (`Timer::now`)"
        );
        BoundedBuffered {
            inner: self.inner.rebuilt("clock", |engine| engine.clock(now)),
        }
    }

    /// A copy of the time distributions if [`timed`](Self::timed) was
    /// called, `None` otherwise. See [`Timings`].
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// let jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(2, 0);
    /// assert!(jobs.timings().is_none());
    /// assert!(jobs.timed().timings().is_some());
    /// ```
    pub fn timings(&self) -> Option<Timings> {
        self.inner.timings()
    }

    /// Stops taking items from the source; the stream then finishes every
    /// running and waiting item, yields their outputs, and ends.
    ///
    /// This is the graceful stop (shutdown, a quota reached, a bad item
    /// seen by the consumer): nothing already pulled is lost, and nothing
    /// more is pulled. An item is either pulled, and its output is
    /// yielded, or still in the source: after the stream has ended,
    /// [`reopen`](Self::reopen) resumes it from the next item, and
    /// [`into_inner`](Self::into_inner) hands back the source positioned
    /// right after the last item pulled. Called before the first poll,
    /// the stream pulls nothing and just ends. With
    /// [`try_bounded`](crate::BoundedStreamExt::try_bounded), an error
    /// during the drain still fails fast.
    ///
    /// It takes `&self`, so it works from a `select!` branch between two
    /// polls, and through a shared reference. It wakes the task that last
    /// polled the stream, so a stream waiting only on its source ends
    /// without another wake.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(2, 3);
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
    /// Called after the stream ended (`close`, then `None`), the stream
    /// is no longer terminated: its next poll pulls again. Called during
    /// the drain, the drain stops and the stream carries on as if it had
    /// not been closed. A source that itself ended is not polled again
    /// (contract point 1): the stream then just ends again.
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
    /// let mut jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(2, 3);
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
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(2, 3);
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
    /// A stream whose limits never change pays nothing for this: the
    /// handle signals the stream through the wake tree it looks at
    /// anyway.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(4, 4);
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
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// let jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(2, 0);
    /// assert_eq!(jobs.get_ref().size_hint(), (100, Some(100)));
    /// ```
    pub fn get_ref(&self) -> &St {
        self.inner.source()
    }

    /// Acquires a mutable reference to the source stream, if it is
    /// `Unpin` (use [`get_pin_mut`](Self::get_pin_mut) otherwise).
    ///
    /// Polling the source through this reference takes its items away
    /// from the adapter; its budgets then no longer describe the source's
    /// position.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// let mut jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(2, 0);
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
    /// The warning on [`get_mut`](Self::get_mut) applies here too.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::pin::Pin;
    ///
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// let mut jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(2, 0);
    /// assert_eq!(Pin::new(&mut jobs).get_pin_mut().size_hint(), (100, Some(100)));
    /// ```
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut St> {
        self.get_mut().inner.source_mut().as_mut()
    }

    /// Consumes the adapter and returns the source stream, if it is
    /// `Unpin` (a source that is not is resumed in place with
    /// [`reopen`](Self::reopen)).
    ///
    /// Running futures, waiting items and held outputs are dropped. The
    /// source is positioned right after the last item the adapter
    /// pulled; after [`close`](Self::close) and the end of the stream,
    /// that is every item whose output was yielded.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(2, 1);
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
    /// - A free worker starts the **oldest waiting item whose key is
    ///   below its limit**. An item whose key is at its limit stays in
    ///   the waiting queue, counting against `waiting`; later items of
    ///   other keys may start past it. With `per_key(1)`, the items of
    ///   one key run one at a time, in input order, while different keys
    ///   run concurrently.
    /// - Every item is pulled into a waiting place first (an item's key
    ///   is known only once it is pulled, and one that may not start
    ///   must wait somewhere): the stream has at least one, even with
    ///   `waiting == 0`. Pulled with a worker free for it, an item starts
    ///   at once, having waited no time.
    /// - **Bound**: with every future blocked, the source has advanced
    ///   exactly `active + max(waiting, 1)` items beyond the consumer,
    ///   and `active` is below `workers` only while every waiting item's
    ///   key is at its limit (a queue full of one key's items). Nothing
    ///   waits outside the waiting budget: the per-key state is one count
    ///   per key with an item running or waiting.
    /// - **Fairness** reaches as far as the waiting budget looks ahead in
    ///   the one source: a tenant whose items are all behind another
    ///   tenant's `waiting` items is not seen until those are pulled.
    /// - Ordered, each item takes its input position when it is pulled:
    ///   an item that starts past a blocked one is still yielded after
    ///   it.
    ///
    /// A key is cloned when it first enters the stream (not for each
    /// item of it). [`Stats::keys_running`] and
    /// [`Stats::blocked_by_key`] show the rule at work. Calling it again
    /// sets the limit anew.
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
    /// let mut jobs = stream::iter(0..100u32).map(|n| Keyed::new(n % 4, async move { n })).bounded(6, 4).per_key(2);
    /// let mut done = 0;
    /// while jobs.next().await.is_some() {
    ///     done += 1;
    /// }
    /// assert_eq!(done, 100);
    /// # });
    /// ```
    #[track_caller]
    pub fn per_key<Key>(self, limit: usize) -> BoundedBuffered<St, K, N, PerKey<Key>, W>
    where
        St::Item: KeyOf<Key>,
        Key: Hash + Eq + Clone + Send + Sync + Unpin + 'static,
    {
        let keys = PerKey::new(limit);
        BoundedBuffered {
            inner: self.inner.rebuilt("per_key", |engine| engine.key(keys)),
        }
    }

    /// The fair shares of a [`Tenants`](crate::Tenants) stream: its key
    /// rule, set by [`Tenants::bounded`](crate::Tenants::bounded).
    #[track_caller]
    pub(crate) fn fair_shares<Key>(
        self,
        shares: crate::FairShare<Key>,
    ) -> BoundedBuffered<St, K, N, crate::FairShare<Key>, W>
    where
        crate::FairShare<Key>: KeyRule<St::Item>,
    {
        BoundedBuffered {
            inner: self.inner.rebuilt("bounded", |engine| engine.key(shares)),
        }
    }

    /// Bounds the sum of the running items' weights, in addition to
    /// `workers` (tokens in flight, test slots, bytes being processed):
    /// the stream's futures are [`Weighted`](crate::Weighted).
    ///
    /// An item starts only if the weights running plus its own stay
    /// within `max`, or nothing runs: one heavier than `max` counts as
    /// exactly `max`, so it runs alone and never deadlocks. Weights go
    /// first come, first served: a heavy item at the head of the queue
    /// is not passed by lighter ones behind it, which could keep it from
    /// ever starting. As with [`per_key`](Self::per_key), every item is
    /// pulled into a waiting place first (at least one).
    /// [`Stats::running_weight`] and its peak show the budget in use
    /// (saturating at `u64::MAX`). Without it (only a waiting budget
    /// set), nothing bounds the running weight. No weight, `u64::MAX`
    /// included, can overflow the sums.
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
    /// let mut jobs = stream::iter(0..100u32).map(|n| Weighted::new(u64::from(n % 3 + 1), async move { n })).bounded(8, 4).max_running_weight(4);
    /// while jobs.next().await.is_some() {}
    /// assert!(jobs.stats().peak_running_weight <= 4);
    /// # });
    /// ```
    #[track_caller]
    pub fn max_running_weight(self, max: u64) -> BoundedBuffered<St, K, N, Q, Weights>
    where
        St::Item: WeightOf,
    {
        let max = weighted::running_budget(max);
        BoundedBuffered {
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
    /// A weight is known only once its item is pulled, so the rule is:
    /// the source is not pulled while the weight waiting is at or above
    /// `max`. The queue may go over by less than one item: the weight
    /// waiting stays below `max` plus the last item's weight, each
    /// counted at most `max` (so below `2 × max`). An item heavier than
    /// `max` counts as `max`, and waits alone. [`Stats::waiting_weight`]
    /// and its peak show the budget in use (saturating at `u64::MAX`).
    /// Without it (only a running budget set), nothing bounds the
    /// weight waiting.
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
    /// let mut jobs = stream::iter(0..100u32).map(|n| Weighted::new(u64::from(n % 3 + 1), async move { n })).bounded(2, 100).max_waiting_weight(6);
    /// while jobs.next().await.is_some() {}
    /// // At most 6 waiting, plus less than one item (weights 1 to 3).
    /// assert!(jobs.stats().peak_waiting_weight < 6 + 3);
    /// # });
    /// ```
    #[track_caller]
    pub fn max_waiting_weight(self, max: u64) -> BoundedBuffered<St, K, N, Q, Weights>
    where
        St::Item: WeightOf,
    {
        let max = weighted::waiting_budget(max);
        BoundedBuffered {
            inner: self.inner.rebuilt("max_waiting_weight", |engine| {
                engine.weigh(|weights| weights.with_max_waiting(max))
            }),
        }
    }

    /// Publishes what [`stats`](Self::stats) and [`timings`](Self::timings)
    /// report through the [`metrics`](https://docs.rs/metrics/0.24) facade,
    /// to whatever exporter the application installed (Prometheus,
    /// OpenTelemetry, StatsD), each series labelled `stream = name`.
    ///
    /// | name | kind | value |
    /// | --- | --- | --- |
    /// | `bounded_active` | gauge | [`Stats::active`] |
    /// | `bounded_waiting` | gauge | [`Stats::waiting`] |
    /// | `bounded_held` | gauge | [`Stats::held`] |
    /// | `bounded_workers_limit` | gauge | [`Stats::workers_limit`] |
    /// | `bounded_waiting_limit` | gauge | [`Stats::waiting_limit`] |
    /// | `bounded_keys_running` | gauge, with [`per_key`](Self::per_key) | [`Stats::keys_running`] |
    /// | `bounded_blocked_by_key` | gauge, with `per_key` | [`Stats::blocked_by_key`] |
    /// | `bounded_running_weight` | gauge, with weight budgets | [`Stats::running_weight`] |
    /// | `bounded_waiting_weight` | gauge, with weight budgets | [`Stats::waiting_weight`] |
    /// | `bounded_pulled_total` | counter | [`Stats::pulled`] |
    /// | `bounded_completed_total` | counter | [`Stats::completed`] |
    /// | `bounded_expired_total` | counter | [`Stats::expired`] |
    /// | `bounded_rejected_total` | counter | [`Stats::rejected`] |
    /// | `bounded_failed_total` | counter | 1 once the run failed fast ([`try_bounded`](crate::BoundedStreamExt::try_bounded)'s error) |
    /// | `bounded_limit_changes_total` | counter, labels `limit` (`workers`, `waiting`) and `direction` (`up`, `down`) | changes of a limit in force, by a [`Limits`] handle or the [adaptive](crate#adjusting-and-adaptive-limits) controller |
    /// | `bounded_wait_seconds` | histogram, with [`timed`](Self::timed) | every duration of [`Timings::wait`] |
    /// | `bounded_run_seconds` | histogram, with `timed` | every duration of [`Timings::run`] |
    /// | `bounded_held_seconds` | histogram, with `timed` | every duration of [`Timings::held`] |
    ///
    /// - **When**: once the stream is at rest, every gauge and counter has
    ///   the value [`stats`](Self::stats) reports, and each histogram every
    ///   duration [`timings`](Self::timings) recorded: in place once
    ///   `poll_next` returns `Pending` or the end; spawned at the end of
    ///   every lock section while the consumer waits (it is parked, or
    ///   being woken), and once the run is over. While the consumer takes
    ///   one output after another, the stream publishes every 64th poll
    ///   (spawned: lock section), so the exporter lags by at most that: a
    ///   busy stream pays for a publish once per 64 outputs, not per output.
    ///   A limit's gauge and change counter move where the limit changes
    ///   (a [`Limits`] handle, the controller), at once. Each publish sets
    ///   the gauges that moved and adds to each counter what it gained: a
    ///   poll that changed nothing calls nothing.
    /// - **Histograms**: each duration is recorded at the top of its bucket
    ///   of the stream's own histograms (64 per power of two: at most 1/64
    ///   above the true value, never below, so a latency objective read off
    ///   them is never flattered), one `record_many` per bucket hit since
    ///   the last publish. Prometheus renders a histogram without buckets
    ///   as a summary: set [`HISTOGRAM_BUCKETS`](crate::HISTOGRAM_BUCKETS)
    ///   for the `bounded_` histograms.
    /// - **Registration**: this call registers the series, and describes
    ///   each name with its unit, with the recorder current now (the
    ///   global one, or the one `metrics::with_local_recorder` set); a
    ///   builder call after it that adds series (`timed`, `per_key`, the
    ///   weight budgets) registers them with the same recorder, and panics
    ///   if another one is current by then. The gauges of keys and weights
    ///   exist only for a stream with them, the histograms only for a timed
    ///   one.
    /// - **Names** are fixed, and Prometheus-style (`_total`, `_seconds`):
    ///   one dashboard fits every stream, told apart by the `stream`
    ///   label (or labels of your own:
    ///   [`metrics_with_labels`](Self::metrics_with_labels)). For a prefix
    ///   of your own, wrap the recorder in
    ///   `metrics_util::layers::PrefixLayer`. Two streams with the same
    ///   labels add to the same counters and overwrite each other's gauges:
    ///   give each one that runs at the same time its own.
    /// - **Failures**: with `bounded`, an `Err` is an output like any
    ///   other (in `bounded_completed_total`); count those where you handle
    ///   the outputs. A panic propagates to the consumer, uncounted.
    /// - **Cost**: without `.metrics` a stream pays one check per
    ///   `poll_next`, within 2 % of a plain stream's instructions; with it,
    ///   a count per poll and a publish per 64 (the guide's metrics page has
    ///   the figures, measured with the Prometheus exporter). Spawned, the
    ///   facade is called under the stream's lock, so that the gauges move
    ///   in the order the counts did.
    ///
    /// When the stream is dropped (spawned: once its tasks let go of it),
    /// its gauges of counts and weights go to 0; the limits and the totals
    /// stay. [`spawn_on`](Self::spawn_on) carries it all over.
    ///
    /// # Panics
    ///
    /// If the stream has already been polled, or, called after `.metrics`,
    /// with another recorder current than `.metrics` had.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// # use std::sync::{Arc, Mutex, atomic::{AtomicU64, Ordering}};
    /// # use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
    /// # /// A recorder that keeps each counter's total, by name.
    /// # #[derive(Default)]
    /// # struct Totals(Mutex<BTreeMap<String, Arc<AtomicU64>>>);
    /// # impl Totals {
    /// #     fn get(&self, name: &str) -> u64 {
    /// #         self.0.lock().unwrap()[name].load(Ordering::Relaxed)
    /// #     }
    /// # }
    /// # impl Recorder for Totals {
    /// #     fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    /// #     fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    /// #     fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    /// #     fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
    /// #         let mut totals = self.0.lock().unwrap();
    /// #         Counter::from_arc(Arc::clone(totals.entry(key.name().to_string()).or_default()))
    /// #     }
    /// #     fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
    /// #         Gauge::noop()
    /// #     }
    /// #     fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
    /// #         Histogram::noop()
    /// #     }
    /// # }
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// // A service installs its exporter's recorder at startup; here, one of
    /// // the test's own, for this thread only.
    /// let recorder = Totals::default();
    /// let jobs = stream::iter(0..100u32).map(|n| async move { n }).bounded(4, 4);
    /// let mut jobs = metrics::with_local_recorder(&recorder, || jobs.metrics("jobs"));
    /// while jobs.next().await.is_some() {}
    /// assert_eq!(recorder.get("bounded_completed_total"), 100);
    /// assert_eq!(recorder.get("bounded_pulled_total"), jobs.stats().pulled);
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
    /// `stream = name`: for an application whose own label is `stream`, or
    /// that tells streams apart by more than a name (a tenant, a pipeline).
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
    /// let labels = [("pipeline", "imports"), ("tenant", "a")];
    /// let jobs = stream::iter(0..10u32).map(|n| async move { n }).bounded(4, 4);
    /// let mut jobs = jobs.metrics_with_labels(&labels); // to the global recorder, if any
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
    /// so they make progress while the consumer is busy elsewhere, and run in
    /// parallel on a multi-threaded executor.
    ///
    /// The returned [`Spawned`] stream yields the same outputs under the same
    /// budgets as this stream would; outputs the consumer has not taken stop the
    /// workers, and so the pulling. Nothing is spawned until the first poll;
    /// then worker tasks are spawned as items need them, never more than
    /// `workers` (so `bounded(usize::MAX, q)` works), and pull from the source
    /// themselves. Dropping the stream cancels them all, and a panic in a task
    /// is re-raised by the stream. Contract points 16 to 20 of the [crate
    /// documentation](crate#what-the-adapter-guarantees) say exactly what
    /// holds.
    ///
    /// Everything set on this stream carries over: the failure policy
    /// ([`try_bounded`](crate::BoundedStreamExt::try_bounded) fails fast in the
    /// tasks, point 21), the window, [`max_wait`](Self::max_wait) (checked by
    /// the task that picks an item up), [`timed`](Self::timed) (read with
    /// [`Spawned::timings`]), the [`clock`](Self::clock), the
    /// [`adaptive`](Self::adaptive) controller (fed by the task that completes
    /// an item), a [`close`](Self::close), any [`Limits`] handle taken
    /// already, and `.metrics(name)` (feature `metrics`: published at the end
    /// of each lock section). With the feature `tracing`, the span current
    /// here is entered by the tasks while they poll (contract point 30).
    ///
    /// # Panics
    ///
    /// If the stream was already polled: its in-flight work cannot move.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
    /// # async fn main() {
    /// let handle = tokio::runtime::Handle::current();
    /// let squares: Vec<u64> = stream::iter(1..=5u64)
    ///     .map(|n| async move { n * n }) // runs on the runtime's worker threads
    ///     .bounded(2, 2)
    ///     .ordered(4)
    ///     .spawn_on(handle)
    ///     .collect()
    ///     .await;
    /// assert_eq!(squares, [1, 4, 9, 16, 25]);
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
    pub(crate) fn into_spawned(self) -> Spawning<St, Outputs, K, N, Q, W> {
        self.inner.into_spawned()
    }
}
