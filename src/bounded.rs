//! The [`BoundedBuffered`] adapter and its `poll_next`.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::stream::{FusedStream, Stream};
use pin_project_lite::pin_project;

use crate::budget::Budgets;
use crate::held::Held;
use crate::slots::Slots;
use crate::stats::Stats;

/// How many woken slots one `poll_next` may poll before it hands control back to
/// the executor (the same figure as tokio's per-task budget). First polls of newly
/// started futures are not counted: the worker and waiting budgets bound those.
const POLL_BUDGET: usize = 128;

pin_project! {
    /// Stream for the [`bounded`](crate::BoundedStreamExt::bounded) method.
    ///
    /// See the [crate documentation](crate) for the budgets it enforces.
    #[must_use = "streams do nothing unless polled"]
    pub struct BoundedBuffered<S>
    where
        S: Stream,
        S::Item: Future,
    {
        #[pin]
        source: S,
        core: Core<S::Item>,
    }
}

/// Everything but the source: none of it is pinned (running futures sit in their
/// own pinned boxes), so the driving code is plain `&mut self` methods.
struct Core<F: Future> {
    budgets: Budgets,
    phase: Phase,
    source_done: bool,
    /// The source returned `Pending` during the current `poll_next` and will wake
    /// the consumer itself: asking it again before then is wasted work.
    source_pending: bool,
    waiting: VecDeque<F>,
    slots: Slots<F>,
    /// Futures started and not yet complete.
    active: usize,
    held: Held<F::Output>,
    /// Peaks and totals; current counts are read off the parts above.
    stats: Stats,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Never polled: `ordered` may still be called.
    New,
    /// Between two calls of `poll_next`.
    Idle,
    /// Inside `poll_next`. Seen on entry only if a panic escaped the previous call.
    Polling,
    /// Returned `None`.
    Done,
}

impl<S> BoundedBuffered<S>
where
    S: Stream,
    S::Item: Future,
{
    #[track_caller]
    pub(crate) fn new(source: S, workers: usize, waiting: usize) -> Self {
        assert!(
            workers > 0,
            "`bounded` needs at least one worker: with `workers == 0` no future could ever run"
        );
        Self {
            source,
            core: Core {
                budgets: Budgets::new(workers, waiting),
                phase: Phase::New,
                source_done: false,
                source_pending: false,
                waiting: VecDeque::new(),
                slots: Slots::new(workers),
                active: 0,
                held: Held::unordered(),
                stats: Stats::default(),
            },
        }
    }

    /// Yields outputs in input order, letting work run at most `window` items
    /// ahead of the oldest output not yet yielded.
    ///
    /// Every item between the oldest unyielded output and the newest started one
    /// is running or held, so `active + held <= window`. With `window ==
    /// workers` this behaves like `buffered(workers)`; a larger window lets the
    /// other workers keep going past a slow item, at the cost of holding up to
    /// `window` outputs. Contract points 3 and 5 of the
    /// [crate documentation](crate#what-the-adapter-guarantees) say exactly what
    /// holds. Held outputs live in a ring indexed by input position, which
    /// doubles as the span of started items grows, up to the power of two at or
    /// above `window`, and is then reused.
    ///
    /// # Panics
    ///
    /// If `window` is 0 (no item could ever start), or if the stream has already
    /// been polled (outputs may already have been handed out in completion
    /// order): contract point 11.
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
    /// let out: Vec<u64> = stream::iter([30, 10, 20])
    ///     .map(|ms| async move {
    ///         tokio::time::sleep(Duration::from_millis(ms)).await;
    ///         ms
    ///     })
    ///     .bounded(3, 0)
    ///     .ordered(3)
    ///     .collect()
    ///     .await;
    /// assert_eq!(out, [30, 10, 20]); // input order, though the first finished last
    /// # }
    /// ```
    #[track_caller]
    pub fn ordered(mut self, window: usize) -> Self {
        assert!(
            window > 0,
            "`ordered` needs a window of at least one item: with `window == 0` no item could ever start"
        );
        assert!(
            self.core.phase == Phase::New,
            "`ordered` must be called before the stream is first polled"
        );
        let core = &mut self.core;
        core.budgets = core.budgets.ordered(window);
        core.slots = Slots::new(core.budgets.workers.min(window));
        core.held = Held::ordered();
        self
    }

    /// Takes the adapter apart before it was ever polled, for a driver that runs
    /// the same budgets elsewhere (the spawned mode).
    ///
    /// # Panics
    ///
    /// If the stream was already polled: its in-flight work cannot move.
    #[track_caller]
    pub(crate) fn into_parts(self) -> (S, Budgets) {
        assert!(
            self.core.phase == Phase::New,
            "a `BoundedBuffered` can change mode only before it is first polled"
        );
        (self.source, self.core.budgets)
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
    /// let mut doubled = stream::iter(0..8u32)
    ///     .map(|n| async move { n * 2 })
    ///     .bounded(2, 3);
    /// assert_eq!(doubled.next().await, Some(0));
    /// // Before handing out the first output, the freed worker was refilled and
    /// // the waiting queue topped up: 2 running or held, 3 waiting.
    /// let stats = doubled.stats();
    /// assert_eq!(stats.active + stats.held, 2);
    /// assert_eq!((stats.waiting, stats.pulled), (3, 6));
    /// # });
    /// ```
    pub fn stats(&self) -> Stats {
        let core = &self.core;
        Stats {
            active: core.active,
            waiting: core.waiting.len(),
            held: core.held.len(),
            ..core.stats
        }
    }

    /// Acquires a reference to the source stream.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// let jobs = stream::iter(0..3).map(|n| async move { n }).bounded(2, 0);
    /// assert_eq!(jobs.get_ref().size_hint(), (3, Some(3)));
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.source
    }

    /// Acquires a mutable reference to the source stream.
    ///
    /// Polling the source through this reference takes its items away from the
    /// adapter; its budgets then no longer describe the source's position.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::channel::mpsc;
    /// use futures::StreamExt;
    ///
    /// let (sender, receiver) = mpsc::unbounded::<u32>();
    /// let mut jobs = receiver.map(|n| async move { n }).bounded(2, 0);
    /// jobs.get_mut().get_mut().close(); // reach the receiver inside the `map`
    /// assert!(sender.is_closed());
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.source
    }

    /// Acquires a pinned mutable reference to the source stream.
    ///
    /// The warning on [`get_mut`](Self::get_mut) applies here too.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::pin::pin;
    ///
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// let jobs = pin!(stream::iter(0..3).map(|n| async move { n }).bounded(2, 0));
    /// assert_eq!(jobs.get_pin_mut().size_hint(), (3, Some(3)));
    /// ```
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut S> {
        self.project().source
    }

    /// Consumes the adapter and returns the source stream.
    ///
    /// Running futures, waiting items and held outputs are dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{Stream, StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut jobs = stream::iter(0..10).map(|n| async move { n }).bounded(2, 1);
    /// assert!(jobs.next().await.is_some());
    /// // 2 started and 1 waiting were pulled besides the one handed out (4 in
    /// // all); they are dropped, and the source resumes after them.
    /// let rest = jobs.into_inner();
    /// assert_eq!(rest.size_hint(), (6, Some(6)));
    /// # });
    /// ```
    pub fn into_inner(self) -> S {
        self.source
    }
}

impl<S> Stream for BoundedBuffered<S>
where
    S: Stream,
    S::Item: Future,
{
    type Item = <S::Item as Future>::Output;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        this.core.poll_next(this.source, cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let core = &self.core;
        if core.phase == Phase::Done {
            return (0, Some(0));
        }
        // Everything running, waiting or held will be yielded, plus whatever the
        // source still has.
        let in_flight = core
            .active
            .saturating_add(core.waiting.len())
            .saturating_add(core.held.len());
        let (lower, upper) = if core.source_done {
            (0, Some(0))
        } else {
            self.source.size_hint()
        };
        (
            lower.saturating_add(in_flight),
            upper.and_then(|upper| upper.checked_add(in_flight)),
        )
    }
}

impl<S> FusedStream for BoundedBuffered<S>
where
    S: Stream,
    S::Item: Future,
{
    fn is_terminated(&self) -> bool {
        self.core.phase == Phase::Done
    }
}

impl<S> fmt::Debug for BoundedBuffered<S>
where
    S: Stream + fmt::Debug,
    S::Item: Future,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let budgets = &self.core.budgets;
        f.debug_struct("BoundedBuffered")
            .field("source", &self.source)
            .field("workers", &budgets.workers)
            .field("waiting", &budgets.waiting)
            .field("window", &budgets.window)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<F: Future> Core<F> {
    fn poll_next<S>(&mut self, source: Pin<&mut S>, cx: &mut Context<'_>) -> Poll<Option<F::Output>>
    where
        S: Stream<Item = F>,
    {
        match self.phase {
            Phase::Done => return Poll::Ready(None),
            Phase::Polling => panic!(
                "`BoundedBuffered` polled after a panic escaped from one of its futures or its source"
            ),
            Phase::New | Phase::Idle => self.phase = Phase::Polling,
        }
        let poll = self.drive(source, cx);
        self.phase = match poll {
            Poll::Ready(None) => Phase::Done,
            _ => Phase::Idle,
        };
        poll
    }

    fn drive<S>(&mut self, mut source: Pin<&mut S>, cx: &mut Context<'_>) -> Poll<Option<F::Output>>
    where
        S: Stream<Item = F>,
    {
        self.slots.unpark();
        self.source_pending = false;
        let mut budget = POLL_BUDGET;
        loop {
            // 1. Poll the futures that were woken, and only those.
            if self.slots.has_woken() {
                let Self {
                    slots,
                    active,
                    held,
                    stats,
                    ..
                } = self;
                slots.poll_woken(&mut budget, |position, output| {
                    *active -= 1;
                    complete(held, stats, position, output);
                });
            }

            // 2. Hand out an output. Taking it frees budget, so refill first: the
            //    freed worker is busy again while the consumer handles the output.
            if let Some(output) = self.held.pop() {
                self.fill(source.as_mut(), cx);
                return Poll::Ready(Some(output));
            }

            // 3. Start what the budgets allow and top up the waiting queue. A new
            //    future may finish or wake itself in its first poll: go round again.
            if self.fill(source.as_mut(), cx) {
                continue;
            }

            // 4. The end: the source is exhausted and nothing runs or waits (and
            //    so nothing is held either).
            if self.source_done && self.waiting.is_empty() && self.active == 0 {
                return Poll::Ready(None);
            }

            // 5. Nothing to hand out. Yield if this call did its share of work;
            //    sleep unless a future was woken meanwhile.
            if budget == 0 {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if !self.slots.has_woken() && self.slots.park(cx.waker()) {
                return Poll::Pending;
            }
        }
    }

    /// Starts items while the budgets allow (oldest waiting item first, then the
    /// source), then pulls items into the waiting queue until it is full. Returns
    /// whether it started anything.
    #[inline(always)]
    fn fill<S>(&mut self, mut source: Pin<&mut S>, cx: &mut Context<'_>) -> bool
    where
        S: Stream<Item = F>,
    {
        let mut started = false;
        while self.budgets.may_start(self.active, self.held.len()) {
            let future = match self.waiting.pop_front() {
                Some(future) => future,
                None => match self.pull(source.as_mut(), cx) {
                    Some(future) => future,
                    None => break,
                },
            };
            self.start(future);
            started = true;
        }
        while self.budgets.may_queue(self.waiting.len()) {
            let Some(future) = self.pull(source.as_mut(), cx) else {
                break;
            };
            self.waiting.push_back(future);
            self.stats.peak_waiting = self.stats.peak_waiting.max(self.waiting.len());
        }
        started
    }

    #[inline(always)]
    fn pull<S>(&mut self, source: Pin<&mut S>, cx: &mut Context<'_>) -> Option<F>
    where
        S: Stream<Item = F>,
    {
        if self.source_done || self.source_pending {
            return None;
        }
        match source.poll_next(cx) {
            Poll::Ready(Some(future)) => {
                self.stats.pulled += 1;
                Some(future)
            }
            Poll::Ready(None) => {
                self.source_done = true;
                None
            }
            Poll::Pending => {
                self.source_pending = true;
                None
            }
        }
    }

    #[inline(always)]
    fn start(&mut self, future: F) {
        let position = self.held.begin();
        self.active += 1;
        self.stats.peak_active = self.stats.peak_active.max(self.active);
        if let Poll::Ready(output) = self.slots.start(future, position) {
            self.active -= 1;
            complete(&mut self.held, &mut self.stats, position, output);
        }
    }
}

#[inline(always)]
fn complete<T>(held: &mut Held<T>, stats: &mut Stats, position: u64, output: T) {
    stats.completed += 1;
    held.complete(position, output);
    stats.peak_held = stats.peak_held.max(held.len());
}
