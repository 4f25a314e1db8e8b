//! Helpers shared by the `core_*` tests: futures and sources whose progress the
//! test controls and counts, so every check is made at a known point of a
//! deterministic schedule instead of after a sleep.
//!
//! Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, mpsc};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::Stream;
use futures_test::task::{AwokenCount, new_count_waker};

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panics on purpose must not turn every later check into a
    // poison error: the state behind these locks is updated in single steps.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a set of gates has seen, per gate id.
#[derive(Default)]
struct GateState {
    open: bool,
    polls: usize,
    finished: bool,
    drops: usize,
    /// The waker of the gate's latest pending poll.
    waker: Option<Waker>,
}

/// A family of futures that stay pending until the test opens them, and that
/// record how often each was polled and dropped. Gate `id` resolves to `id`.
///
/// Thread-safe, so gates can be opened from other threads and used on
/// multi-threaded executors.
#[derive(Clone, Default)]
pub struct Gates {
    states: Arc<Mutex<Vec<GateState>>>,
}

impl Gates {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<R>(&self, id: usize, f: impl FnOnce(&mut GateState) -> R) -> R {
        let mut states = lock(&self.states);
        if states.len() <= id {
            states.resize_with(id + 1, GateState::default);
        }
        f(&mut states[id])
    }

    /// The future for gate `id`.
    pub fn gate(&self, id: usize) -> Gate {
        self.with(id, |_| ());
        Gate {
            id,
            gates: self.clone(),
        }
    }

    /// A source of gates `0..count`.
    pub fn source(&self, count: usize) -> GateSource {
        GateSource {
            gates: self.clone(),
            next: 0,
            end: count,
        }
    }

    /// Opens gate `id` and wakes the task that last polled it, if any.
    pub fn open(&self, id: usize) {
        let waker = self.with(id, |state| {
            state.open = true;
            state.waker.take()
        });
        // Woken outside the lock: the waker may poll the gate on this thread.
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Wakes the task that last polled gate `id` without opening it (a spurious
    /// wake, as a future that re-checks a condition would send).
    pub fn nudge(&self, id: usize) {
        if let Some(waker) = self.waker(id) {
            waker.wake();
        }
    }

    /// A clone of the waker gate `id` was last polled with.
    pub fn waker(&self, id: usize) -> Option<Waker> {
        self.with(id, |state| state.waker.clone())
    }

    pub fn polls(&self, id: usize) -> usize {
        self.with(id, |state| state.polls)
    }

    /// Polls per gate, indexed by id, for gates `0..count`.
    pub fn polls_of(&self, count: usize) -> Vec<usize> {
        (0..count).map(|id| self.polls(id)).collect()
    }

    pub fn total_polls(&self) -> usize {
        lock(&self.states).iter().map(|state| state.polls).sum()
    }

    pub fn drops(&self, id: usize) -> usize {
        self.with(id, |state| state.drops)
    }

    /// Gates polled at least once: the futures the adapter started.
    pub fn started(&self) -> usize {
        lock(&self.states)
            .iter()
            .filter(|state| state.polls > 0)
            .count()
    }

    /// Gates polled at least once and neither finished nor dropped: the futures
    /// running right now, as seen from the futures' side.
    pub fn running(&self) -> usize {
        lock(&self.states)
            .iter()
            .filter(|state| state.polls > 0 && !state.finished && state.drops == 0)
            .count()
    }

    /// Whether gate `id` was polled at least once.
    pub fn is_started(&self, id: usize) -> bool {
        self.polls(id) > 0
    }
}

/// One gate; see [`Gates`].
pub struct Gate {
    id: usize,
    gates: Gates,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Future for Gate {
    type Output = usize;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        let id = self.id;
        self.gates.with(id, |state| {
            assert!(!state.finished, "gate {id} polled after it completed");
            state.polls += 1;
            if state.open {
                state.finished = true;
                state.waker = None;
                Poll::Ready(id)
            } else {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.gates.with(self.id, |state| state.drops += 1);
    }
}

/// A source of gates `next..end`, always ready.
pub struct GateSource {
    gates: Gates,
    next: usize,
    end: usize,
}

impl std::fmt::Debug for GateSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateSource")
            .field("next", &self.next)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl Stream for GateSource {
    type Item = Gate;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Gate>> {
        if self.next == self.end {
            return Poll::Ready(None);
        }
        let gate = self.gates.gate(self.next);
        self.next += 1;
        Poll::Ready(Some(gate))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.end - self.next;
        (left, Some(left))
    }
}

/// A shared counter.
#[derive(Clone, Debug, Default)]
pub struct Counter(Arc<AtomicUsize>);

impl Counter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Counts its own drops: put one inside a future, an item or an output to see
/// when (and how often) the adapter drops it.
#[derive(Debug)]
pub struct DropProbe(Counter);

impl DropProbe {
    pub fn new(drops: &Counter) -> Self {
        Self(drops.clone())
    }
}

impl Drop for DropProbe {
    fn drop(&mut self) {
        self.0.add();
    }
}

/// A source that counts the items it yields and the polls it receives.
#[derive(Debug)]
pub struct Counted<S> {
    inner: S,
    pulled: Counter,
    polls: Counter,
    _dropped: Option<DropProbe>,
}

/// The test's view of a [`Counted`] source.
#[derive(Clone, Debug, Default)]
pub struct SourceCounts {
    pub pulled: Counter,
    pub polls: Counter,
}

impl SourceCounts {
    pub fn pulled(&self) -> usize {
        self.pulled.get()
    }

    pub fn polls(&self) -> usize {
        self.polls.get()
    }
}

/// Wraps `inner` so that the items it yields and the polls it gets are counted.
pub fn counted<S: Stream>(inner: S) -> (Counted<S>, SourceCounts) {
    let counts = SourceCounts::default();
    let source = Counted {
        inner,
        pulled: counts.pulled.clone(),
        polls: counts.polls.clone(),
        _dropped: None,
    };
    (source, counts)
}

impl<S> Counted<S> {
    /// Counts the source's own drop on `drops`.
    pub fn track_drop(mut self, drops: &Counter) -> Self {
        self._dropped = Some(DropProbe::new(drops));
        self
    }

    pub fn inner(&self) -> &S {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }
}

impl<S: Stream + Unpin> Stream for Counted<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        self.polls.add();
        let poll = Pin::new(&mut self.inner).poll_next(cx);
        if let Poll::Ready(Some(_)) = &poll {
            self.pulled.add();
        }
        poll
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

struct FeedState<T> {
    items: VecDeque<T>,
    closed: bool,
    waker: Option<Waker>,
}

/// A source that yields what the test pushes into its [`Feed`], is `Pending`
/// while it has nothing, and ends once the feed is closed and drained.
pub struct FedSource<T> {
    state: Arc<Mutex<FeedState<T>>>,
}

/// The test's end of a [`FedSource`].
pub struct Feed<T> {
    state: Arc<Mutex<FeedState<T>>>,
}

impl<T> Clone for Feed<T> {
    fn clone(&self) -> Self {
        Self {
            state: Arc::clone(&self.state),
        }
    }
}

pub fn fed_source<T>() -> (FedSource<T>, Feed<T>) {
    let state = Arc::new(Mutex::new(FeedState {
        items: VecDeque::new(),
        closed: false,
        waker: None,
    }));
    (
        FedSource {
            state: Arc::clone(&state),
        },
        Feed { state },
    )
}

impl<T> Feed<T> {
    /// Adds an item and wakes the source's consumer if it waits for one.
    pub fn push(&self, item: T) {
        let waker = {
            let mut state = lock(&self.state);
            state.items.push_back(item);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Ends the source once the pushed items are taken.
    pub fn close(&self) {
        let waker = {
            let mut state = lock(&self.state);
            state.closed = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Items pushed and not yet taken by the consumer.
    pub fn unread(&self) -> usize {
        lock(&self.state).items.len()
    }

    /// Whether the consumer is waiting for an item (its waker is registered).
    pub fn has_waiter(&self) -> bool {
        lock(&self.state).waker.is_some()
    }
}

impl<T> Stream for FedSource<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut state = lock(&self.state);
        if let Some(item) = state.items.pop_front() {
            Poll::Ready(Some(item))
        } else if state.closed {
            Poll::Ready(None)
        } else {
            state.waker = Some(cx.waker().clone());
            Poll::Pending
        }
    }
}

/// Polls streams by hand with a waker that counts its wakes.
pub struct Poller {
    waker: Waker,
    wakes: AwokenCount,
}

impl Default for Poller {
    fn default() -> Self {
        Self::new()
    }
}

impl Poller {
    pub fn new() -> Self {
        let (waker, wakes) = new_count_waker();
        Self { waker, wakes }
    }

    pub fn poll<S: Stream + Unpin + ?Sized>(&self, stream: &mut S) -> Poll<Option<S::Item>> {
        Pin::new(stream).poll_next(&mut Context::from_waker(&self.waker))
    }

    pub fn poll_pinned<S: Stream + ?Sized>(&self, stream: Pin<&mut S>) -> Poll<Option<S::Item>> {
        stream.poll_next(&mut Context::from_waker(&self.waker))
    }

    /// Polls until the stream is `Pending` or ends; returns the outputs seen.
    pub fn drain_ready<S: Stream + Unpin + ?Sized>(&self, stream: &mut S) -> Vec<S::Item> {
        let mut outputs = Vec::new();
        while let Poll::Ready(Some(output)) = self.poll(stream) {
            outputs.push(output);
        }
        outputs
    }

    /// How often the waker was woken so far.
    pub fn wakes(&self) -> usize {
        self.wakes.get()
    }
}

/// A small deterministic generator (xorshift64*), so "random" schedules are the
/// same on every run and a failure can be replayed from its seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // Zero is the one state xorshift never leaves.
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..bound` (`bound > 0`).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// A future that wakes itself and returns `Pending` `yields` times, then
/// resolves to `value`: work that needs several polls without any outside event.
pub struct YieldThen<T> {
    yields: usize,
    value: Option<T>,
}

pub fn yield_then<T>(yields: usize, value: T) -> YieldThen<T> {
    YieldThen {
        yields,
        value: Some(value),
    }
}

impl<T: Unpin> Future for YieldThen<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        if self.yields == 0 {
            Poll::Ready(
                self.value
                    .take()
                    .expect("YieldThen polled after completion"),
            )
        } else {
            self.yields -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Runs `body` on its own thread and fails if it has not finished within
/// `limit`: a hang becomes a test failure instead of a stuck test run. The
/// limit is only a safety net, never part of what is checked.
pub fn with_watchdog<T: Send + 'static>(
    limit: Duration,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done, finished) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let result = body();
        // The receiver is gone only if the watchdog already failed the test.
        let _ = done.send(());
        result
    });
    match finished.recv_timeout(limit) {
        Ok(()) => worker.join().expect("the test body panicked"),
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Ok(_) => unreachable!("the body sends before it returns"),
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the test body hung for {limit:?}"),
    }
}

/// The message of a caught panic.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = panic.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = panic.downcast_ref::<String>() {
        message.clone()
    } else {
        String::from("<non-string panic payload>")
    }
}
