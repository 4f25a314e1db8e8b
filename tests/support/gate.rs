//! Gates: futures that stay pending until the test opens them, and that count
//! what the adapter does with each of them (polls, completion, drop, and the
//! drop of its output), so every check is made at a known point of a
//! deterministic schedule instead of after a sleep.
//!
//! Thread-safe: gates can be opened from other threads, run on multi-threaded
//! executors, and waited for ([`Gates::wait_until`]).

use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use bounded_buffered::Weighted;
use futures::{Stream, StreamExt};

use super::fail_fast::Log;
use super::panic::{INJECTED, caught};
use super::watchdog::HANG_LIMIT;

/// Locks `mutex`, ignoring poison: a test that panics on purpose must not turn
/// every later check into a poison error (the state is updated in single steps).
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where the one injected panic goes, if anywhere. Each message starts with
/// [`INJECTED`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fault {
    #[default]
    None,
    /// Item `k` panics when polled after its gate opened.
    PollOf(usize),
    /// Item `k` panics in its first poll.
    FirstPollOf(usize),
    /// The source panics instead of yielding item `k`.
    SourceAt(usize),
    /// Item `k`'s future panics in its destructor (after its drop is counted),
    /// wherever that runs, unless the thread is already unwinding.
    DropOf(usize),
}

/// What one gate has seen.
#[derive(Clone, Default)]
struct Item {
    open: bool,
    /// Handed out by [`Gates::gate`] or a source: the item was pulled.
    created: bool,
    polls: usize,
    finished: bool,
    drops: usize,
    /// Armed by [`Gates::self_wake_once`]: once open, wake itself and stay
    /// pending for one more poll.
    self_wake: bool,
    /// The waker of the latest pending poll, until the gate is opened.
    waker: Option<Waker>,
    output_made: bool,
    output_drops: usize,
}

#[derive(Default)]
pub(super) struct State {
    items: Vec<Item>,
    /// What a gate not touched yet starts as.
    fresh: Item,
    fault: Fault,
    fault_fired: bool,
    /// Items the source yields at most: with `source_drops`, tells a waiting
    /// opener that no gate will ever close again.
    source_len: Option<usize>,
    source_drops: usize,
    /// Gates polled, neither finished nor dropped.
    running: usize,
    peak_running: usize,
    /// When each pull and poll happened, for the fail-fast tests.
    pub(super) log: Log,
}

impl State {
    fn item(&mut self, id: usize) -> &mut Item {
        if self.items.len() <= id {
            let fresh = self.fresh.clone();
            self.items.resize(id + 1, fresh);
        }
        &mut self.items[id]
    }

    fn counts(&self) -> Counts {
        let mut counts = Counts {
            running: self.running,
            peak_running: self.peak_running,
            source_drops: self.source_drops,
            ..Counts::default()
        };
        for item in &self.items {
            counts.pulled += usize::from(item.created);
            counts.started += usize::from(item.polls > 0);
            counts.futures_dropped += item.drops;
            counts.outputs_made += usize::from(item.output_made);
            counts.outputs_dropped += item.output_drops;
        }
        counts
    }

    /// Pulled items whose gate is still closed.
    fn closed_pulled(&self) -> Vec<usize> {
        let items = self.items.iter().enumerate();
        items
            .filter(|(_, item)| item.created && !item.open)
            .map(|(id, _)| id)
            .collect()
    }

    /// Records that the injected fault fires, and returns the message to panic with.
    fn fire(&mut self, what: &str) -> String {
        self.fault_fired = true;
        format!("{INJECTED} {what}")
    }
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

/// A family of gates, by id. Gate `id` resolves to `id`, or to an [`Output`]
/// whose drop is counted when it comes from a `tracked_` constructor.
#[derive(Clone, Default)]
pub struct Gates(Arc<Shared>);

/// A snapshot of what the gates have seen, summed over every gate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub pulled: usize,
    pub started: usize,
    pub running: usize,
    pub peak_running: usize,
    pub futures_dropped: usize,
    pub outputs_made: usize,
    pub outputs_dropped: usize,
    pub source_drops: usize,
}

impl Counts {
    /// The source, every pulled future and every output made were dropped.
    pub fn all_dropped(&self) -> bool {
        self.source_drops == 1
            && self.futures_dropped == self.pulled
            && self.outputs_dropped == self.outputs_made
    }
}

impl fmt::Debug for Gates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gates {:?}", self.counts())
    }
}

impl Gates {
    /// Gates that stay closed until opened.
    pub fn new() -> Self {
        Self::default()
    }

    /// Gates whose one injected panic is `fault`.
    pub fn with_fault(fault: Fault) -> Self {
        let gates = Self::new();
        gates.state().fault = fault;
        gates
    }

    /// Gates open from the start (their futures complete in their first poll),
    /// except those in `closed`.
    pub fn open_except(closed: &[usize]) -> Self {
        let gates = Self::new();
        let mut state = gates.state();
        state.fresh.open = true;
        for &id in closed {
            state.item(id).open = false;
        }
        drop(state);
        gates
    }

    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.0.state)
    }

    /// Changes the state, then tells whoever waits for a change.
    pub(super) fn update<R>(&self, change: impl FnOnce(&mut State) -> R) -> R {
        let result = change(&mut self.state());
        self.0.changed.notify_all();
        result
    }

    fn make<O>(&self, id: usize) -> Gate<O> {
        self.update(|state| {
            state.item(id).created = true;
            state.log.pulled();
        });
        Gate {
            id,
            gates: self.clone(),
            output: PhantomData,
        }
    }

    /// The future for gate `id`; it resolves to `id`.
    pub fn gate(&self, id: usize) -> Gate {
        self.make(id)
    }

    /// A source of gates `0..count`.
    pub fn source(&self, count: usize) -> GateSource {
        self.source_of(count)
    }

    /// A source of gates `0..count` whose outputs count their drops.
    pub fn tracked_source(&self, count: usize) -> GateSource<Output> {
        self.source_of(count)
    }

    /// A source of gates `0..weights.len()`, gate `id` weighing
    /// `weights[id]` (for the weight budgets).
    pub fn weighted_source(
        &self,
        weights: &'static [u64],
    ) -> impl Stream<Item = Weighted<Gate>> + Send + Unpin + use<> {
        let mut id = 0;
        self.source(weights.len()).map(move |gate| {
            id += 1;
            Weighted::new(weights[id - 1], gate)
        })
    }

    /// A source of gates `ids`, one of several (a tenant's): the gates'
    /// source length is not set by it.
    pub fn range_source(&self, ids: std::ops::Range<usize>) -> GateSource {
        GateSource {
            gates: self.clone(),
            next: ids.start,
            end: ids.end,
            output: PhantomData,
        }
    }

    pub(super) fn source_of<O>(&self, count: usize) -> GateSource<O> {
        self.state().source_len = Some(count);
        GateSource {
            gates: self.clone(),
            next: 0,
            end: count,
            output: PhantomData,
        }
    }

    /// Opens gate `id` (also one not pulled yet) and wakes the task that last
    /// polled it, if any. Returns whether this opened a pulled, closed gate.
    pub fn open(&self, id: usize) -> bool {
        let (opened, waker) = self.update(|state| {
            let item = state.item(id);
            let opened = item.created && !item.open;
            item.open = true;
            (opened, item.waker.take())
        });
        // Woken outside the lock: the waker may poll the gate on this thread.
        if let Some(waker) = waker {
            waker.wake();
        }
        opened
    }

    /// Opens gate `id` without waking anyone: returns the waker of its latest
    /// pending poll, for the test to deliver the wake its own way.
    pub fn open_taking_waker(&self, id: usize) -> Option<Waker> {
        self.update(|state| {
            let item = state.item(id);
            item.open = true;
            item.waker.take()
        })
    }

    /// Opens every gate pulled so far.
    pub fn open_all(&self) {
        let closed = self.closed_pulled();
        for id in closed {
            self.open(id);
        }
    }

    /// Makes gate `id`, once open, wake itself and return `Pending` once more
    /// before it completes.
    pub fn self_wake_once(&self, id: usize) {
        self.update(|state| state.item(id).self_wake = true);
    }

    /// Wakes the task that last polled gate `id` without opening it (a spurious
    /// wake, as a future that re-checks a condition would send).
    pub fn nudge(&self, id: usize) {
        if let Some(waker) = self.waker(id) {
            waker.wake();
        }
    }

    /// A clone of the waker gate `id` was last polled with while closed.
    pub fn waker(&self, id: usize) -> Option<Waker> {
        self.state().item(id).waker.clone()
    }

    pub fn polls(&self, id: usize) -> usize {
        self.state().item(id).polls
    }

    /// Whether gate `id`'s future completed: it returned its output, so it
    /// runs no more (a policy's running counts may forget it).
    pub fn is_finished(&self, id: usize) -> bool {
        self.state().item(id).finished
    }

    /// Polls per gate, indexed by id, for gates `0..count`.
    pub fn polls_of(&self, count: usize) -> Vec<usize> {
        (0..count).map(|id| self.polls(id)).collect()
    }

    /// Drops of gate `id`'s future.
    pub fn drops(&self, id: usize) -> usize {
        self.state().item(id).drops
    }

    /// Whether gate `id` was polled at least once.
    /// Whether gate `id` was made: its source gave it.
    pub fn was_pulled(&self, id: usize) -> bool {
        self.state().item(id).created
    }

    pub fn is_started(&self, id: usize) -> bool {
        self.polls(id) > 0
    }

    pub fn counts(&self) -> Counts {
        self.state().counts()
    }

    /// Gates polled at least once: the futures the adapter started.
    pub fn started(&self) -> usize {
        self.counts().started
    }

    /// Gates polled, neither finished nor dropped: the futures running right
    /// now, as seen from the futures' side.
    pub fn running(&self) -> usize {
        self.state().running
    }

    /// Gates handed out: the items pulled from a source.
    pub fn pulled(&self) -> usize {
        self.counts().pulled
    }

    /// Pulled items whose gate is still closed.
    pub fn closed_pulled(&self) -> Vec<usize> {
        self.state().closed_pulled()
    }

    /// Gates polled at least once and still closed.
    pub fn closed_started(&self) -> Vec<usize> {
        let state = self.state();
        let items = state.items.iter().enumerate();
        items
            .filter(|(_, item)| item.polls > 0 && !item.open)
            .map(|(id, _)| id)
            .collect()
    }

    pub fn fault_fired(&self) -> bool {
        self.state().fault_fired
    }

    /// Drops `stream` (one over these gates). Its drop re-raises the first
    /// panic of a destructor it runs itself (contract point 10), so it may
    /// panic, but only with the injected [`Fault::DropOf`].
    pub fn drop_stream<T>(&self, stream: T) {
        let Err(message) = caught(|| drop(stream)) else {
            return;
        };
        let expected = match self.state().fault {
            Fault::DropOf(id) => format!("{INJECTED} in the drop of item {id}"),
            _ => String::from("no panic: no destructor fault was injected"),
        };
        assert_eq!(message, expected, "the stream's drop panicked");
    }

    /// Blocks until `check` returns something; fails the test after
    /// [`HANG_LIMIT`]. Every change to the gates wakes it.
    fn wait<R>(&self, what: &str, mut check: impl FnMut(&State) -> Option<R>) -> R {
        let deadline = Instant::now() + HANG_LIMIT;
        let mut state = self.state();
        loop {
            if let Some(result) = check(&state) {
                return result;
            }
            let left = deadline
                .checked_duration_since(Instant::now())
                .unwrap_or_else(|| panic!("watchdog: still waiting for {what}"));
            state = self
                .0
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Blocks until `condition` holds; fails the test after [`HANG_LIMIT`].
    pub fn wait_until(&self, what: &str, condition: impl Fn(&Counts) -> bool) {
        self.wait(what, |state| condition(&state.counts()).then_some(()))
    }

    /// Blocks until some pulled item has a closed gate (returned), or none ever
    /// will: the source is gone or every item was pulled and opened (`None`).
    pub fn wait_for_closed_gates(&self) -> Option<Vec<usize>> {
        self.wait("an item to be pulled", |state| {
            let closed = state.closed_pulled();
            if !closed.is_empty() {
                Some(Some(closed))
            } else if state.source_drops > 0 || Some(state.counts().pulled) == state.source_len {
                Some(None)
            } else {
                None
            }
        })
    }

    /// Everything made was dropped exactly once: the source, every pulled
    /// future, every output; and no future counts as running.
    pub fn check_all_dropped_once(&self) {
        self.check_all_dropped_once_of(1);
    }

    /// [`Gates::check_all_dropped_once`] with `sources` sources (one per
    /// tenant, made by [`Gates::range_source`]).
    pub fn check_all_dropped_once_of(&self, sources: usize) {
        let state = self.state();
        assert_eq!(state.source_drops, sources, "source drops");
        for (id, item) in state.items.iter().enumerate() {
            let (created, made) = (item.created, item.output_made);
            assert_eq!(
                item.drops,
                usize::from(created),
                "drops of item {id}'s future (pulled: {created})"
            );
            assert_eq!(
                item.output_drops,
                usize::from(made),
                "drops of item {id}'s output (made: {made})"
            );
        }
        assert_eq!(state.running, 0, "futures still counted as running");
    }
}

/// What a gate resolves to.
pub trait GateOutput {
    fn make(id: usize, gates: &Gates) -> Self;
}

impl GateOutput for usize {
    fn make(id: usize, _: &Gates) -> Self {
        id
    }
}

/// An item's output: its id; its drop is counted per id.
pub struct Output {
    pub id: usize,
    gates: Gates,
}

impl GateOutput for Output {
    fn make(id: usize, gates: &Gates) -> Self {
        gates.update(|state| state.item(id).output_made = true);
        Self {
            id,
            gates: gates.clone(),
        }
    }
}

impl fmt::Debug for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Output({})", self.id)
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.gates
            .update(|state| state.item(self.id).output_drops += 1);
    }
}

/// One gate; see [`Gates`].
pub struct Gate<O = usize> {
    id: usize,
    gates: Gates,
    output: PhantomData<fn() -> O>,
}

impl<O> Gate<O> {
    /// Which gate this is, known without polling it (so an expired item is
    /// recognised from its untouched future).
    pub fn id(&self) -> usize {
        self.id
    }
}

/// What one poll of a gate does, decided under the lock and done after it.
enum Step {
    Wait,
    WakeSelf,
    Ready,
    Panic(String),
}

impl<O: GateOutput> Future for Gate<O> {
    type Output = O;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<O> {
        let id = self.id;
        let step = self.gates.update(|state| {
            let fault = state.fault;
            state.log.polled(id);
            let item = state.item(id);
            assert!(!item.finished, "gate {id} polled after it completed");
            item.polls += 1;
            let first = item.polls == 1;
            let step = if first && fault == Fault::FirstPollOf(id) {
                Step::Panic(String::from("in the first poll"))
            } else if !item.open {
                // `clone_from` keeps the stored waker when it is the same one.
                match &mut item.waker {
                    Some(waker) => waker.clone_from(cx.waker()),
                    None => item.waker = Some(cx.waker().clone()),
                }
                Step::Wait
            } else if std::mem::take(&mut item.self_wake) {
                Step::WakeSelf
            } else if fault == Fault::PollOf(id) {
                Step::Panic(String::from("in the poll"))
            } else {
                item.finished = true;
                Step::Ready
            };
            if first {
                state.running += 1;
                state.peak_running = state.peak_running.max(state.running);
            }
            match step {
                Step::Ready => state.running -= 1,
                Step::Panic(what) => {
                    return Step::Panic(state.fire(&format!("{what} of item {id}")));
                }
                _ => {}
            }
            step
        });
        match step {
            Step::Wait => Poll::Pending,
            Step::WakeSelf => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Step::Ready => Poll::Ready(O::make(id, &self.gates)),
            Step::Panic(message) => panic!("{message}"),
        }
    }
}

impl<O> Drop for Gate<O> {
    fn drop(&mut self) {
        let id = self.id;
        let panic = self.gates.update(|state| {
            let item = state.item(id);
            item.drops += 1;
            if item.polls > 0 && !item.finished {
                state.running -= 1;
            }
            (state.fault == Fault::DropOf(id) && !std::thread::panicking())
                .then(|| state.fire(&format!("in the drop of item {id}")))
        });
        if let Some(message) = panic {
            panic!("{message}");
        }
    }
}

/// A source of gates `next..end`, always ready; counts its own drop, and panics
/// where the gates' [`Fault::SourceAt`] says.
pub struct GateSource<O = usize> {
    gates: Gates,
    next: usize,
    end: usize,
    output: PhantomData<fn() -> O>,
}

impl<O> fmt::Debug for GateSource<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GateSource({}..{})", self.next, self.end)
    }
}

impl<O> Stream for GateSource<O> {
    type Item = Gate<O>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Gate<O>>> {
        let id = self.next;
        if id == self.end {
            return Poll::Ready(None);
        }
        let panic = self.gates.update(|state| {
            (state.fault == Fault::SourceAt(id))
                .then(|| state.fire(&format!("in the source at item {id}")))
        });
        if let Some(message) = panic {
            panic!("{message}");
        }
        self.next += 1;
        Poll::Ready(Some(self.gates.make(id)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.end - self.next;
        (left, Some(left))
    }
}

impl<O> Drop for GateSource<O> {
    fn drop(&mut self) {
        self.gates.update(|state| state.source_drops += 1);
    }
}
