//! Fallible sources and futures for the fail-fast tests of both modes.
//!
//! [`Case::fallible`] builds a `try_bounded` stream of gated items (see
//! `gate`): item `id` resolves to `Ok(Output)` once its gate opens, or to
//! `Err(Failed)` when the case makes it fail; the source yields `Err(Failed)`
//! instead of an item where the case says so. A [`Journal`] numbers every
//! event the fail-fast rule talks about (each item's polls, its `Ok`
//! completion, each pull, the first error), so a test can ask what happened
//! *after* the error was made: in place that is after the consumer's poll saw
//! it; on an executor the test steps by hand, after the adapter saw it.

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bounded_buffered::{BoundedStreamExt, TryBoundedBuffered};
use futures::{Stream, StreamExt};

use super::gate::{Gate, Gates, Output, lock};
use super::schedule::{Case, Got, OrderedIf};

/// What the fail-fast streams of these tests yield.
pub type TryOutput = Result<Output, Failed>;

/// The error of the fail-fast tests: which item failed (the source's error
/// names the position it took). Counts its own drops in the [`Journal`].
pub struct Failed {
    pub id: usize,
    journal: Journal,
}

impl fmt::Debug for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Failed({})", self.id)
    }
}

impl Drop for Failed {
    fn drop(&mut self) {
        lock(&self.journal.0).errors_dropped += 1;
    }
}

/// Where a run fails: these items' futures, and the source at this position.
#[derive(Clone, Debug, Default)]
pub struct Failures {
    pub futures: Vec<usize>,
    pub source: Option<usize>,
}

impl Failures {
    /// The futures of `items` fail.
    pub fn futures(items: &[usize]) -> Self {
        Self {
            futures: items.to_vec(),
            source: None,
        }
    }

    /// The source yields an error instead of item `at`.
    pub fn source_at(at: usize) -> Self {
        Self {
            futures: Vec::new(),
            source: Some(at),
        }
    }
}

impl Got {
    /// Reads an output (the consumer drops it, or the error, at once).
    pub fn of_try(output: TryOutput) -> Self {
        match output {
            Ok(output) => Got::Ok(output.id),
            Err(error) => Got::Err(error.id),
        }
    }

    /// Reads a poll.
    pub fn of(poll: Poll<Option<TryOutput>>) -> Self {
        match poll {
            Poll::Ready(Some(output)) => Got::of_try(output),
            Poll::Ready(None) => Got::End,
            Poll::Pending => Got::Pending,
        }
    }
}

#[derive(Default)]
struct Log {
    /// The number of the next event.
    tick: u64,
    /// Per item: when it was first polled.
    first_poll: Vec<Option<u64>>,
    /// When any item was last polled.
    last_poll: u64,
    /// Per item: when it completed with `Ok`.
    ok: Vec<Option<u64>>,
    /// Every item (or error) the source yielded, when.
    pulls: Vec<u64>,
    /// The first error made: its item, when, and whether the source made it.
    error: Option<(usize, u64, bool)>,
    errors_made: usize,
    errors_dropped: usize,
}

impl Log {
    fn next(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    fn at(list: &mut Vec<Option<u64>>, id: usize) -> &mut Option<u64> {
        if list.len() <= id {
            list.resize(id + 1, None);
        }
        &mut list[id]
    }

    fn error_tick(&self) -> u64 {
        self.error.map_or(u64::MAX, |(_, tick, _)| tick)
    }
}

/// The order of what happened to a fallible case's items; see the module docs.
#[derive(Clone, Default)]
pub struct Journal(Arc<Mutex<Log>>);

impl Journal {
    fn error(&self, id: usize, from_source: bool) -> Failed {
        let mut log = lock(&self.0);
        let tick = log.next();
        log.error.get_or_insert((id, tick, from_source));
        log.errors_made += 1;
        Failed {
            id,
            journal: self.clone(),
        }
    }

    fn polled(&self, id: usize) {
        let mut log = lock(&self.0);
        let tick = log.next();
        log.last_poll = tick;
        Log::at(&mut log.first_poll, id).get_or_insert(tick);
    }

    fn completed(&self, id: usize) {
        let mut log = lock(&self.0);
        let tick = log.next();
        *Log::at(&mut log.ok, id) = Some(tick);
    }

    fn pulled(&self) {
        let mut log = lock(&self.0);
        let tick = log.next();
        log.pulls.push(tick);
    }

    /// The item of the first error made, if any.
    pub fn first_error(&self) -> Option<usize> {
        lock(&self.0).error.map(|(id, _, _)| id)
    }

    /// Whether the source made the first error.
    pub fn source_failed_first(&self) -> bool {
        lock(&self.0)
            .error
            .is_some_and(|(_, _, from_source)| from_source)
    }

    /// No item is first polled after the error (contract point 21), not even
    /// the one a task took for its start in the very lock section that pulled
    /// the source's error. Exact on the one-thread executors of these tests:
    /// with tasks on several threads, an item another task took just before
    /// may still get its first poll after it.
    pub fn check_no_start_after_error(&self) {
        let late = self.started_after_error();
        assert!(
            late.is_empty(),
            "items first polled after the error: {late:?} (the source failed first: {})",
            self.source_failed_first()
        );
    }

    /// Whether any item was polled at all after the first error was made.
    pub fn polled_after_error(&self) -> bool {
        let log = lock(&self.0);
        log.error.is_some() && log.last_poll > log.error_tick()
    }

    /// Items first polled after the first error was made.
    pub fn started_after_error(&self) -> Vec<usize> {
        let log = lock(&self.0);
        let after = log.error_tick();
        let polls = log.first_poll.iter().enumerate();
        polls
            .filter(|(_, tick)| tick.is_some_and(|tick| tick > after))
            .map(|(id, _)| id)
            .collect()
    }

    /// Whether item `id` completed with `Ok` before the first error was made.
    pub fn ok_before_error(&self, id: usize) -> bool {
        let log = lock(&self.0);
        let after = log.error_tick();
        log.ok
            .get(id)
            .copied()
            .flatten()
            .is_some_and(|tick| tick < after)
    }

    /// The items that completed with `Ok` before the first error was made.
    pub fn completed_before_error(&self) -> Vec<usize> {
        let len = lock(&self.0).ok.len();
        (0..len).filter(|&id| self.ok_before_error(id)).collect()
    }

    /// Items (and errors) the source yielded.
    pub fn pulls(&self) -> usize {
        lock(&self.0).pulls.len()
    }

    /// Items (and errors) the source yielded after the first error was made.
    pub fn pulls_after_error(&self) -> usize {
        let log = lock(&self.0);
        let after = log.error_tick();
        log.pulls.iter().filter(|&&tick| tick > after).count()
    }

    /// Errors made and errors dropped so far.
    pub fn errors(&self) -> (usize, usize) {
        let log = lock(&self.0);
        (log.errors_made, log.errors_dropped)
    }
}

/// A gated item's future: records its polls and its completion, and
/// fails if its case says so (dropping the gate's output at once).
pub struct Probe {
    gate: Gate<Output>,
    id: usize,
    fails: bool,
    journal: Journal,
}

impl Future for Probe {
    type Output = TryOutput;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<TryOutput> {
        let this = &mut *self;
        this.journal.polled(this.id);
        let Poll::Ready(output) = Pin::new(&mut this.gate).poll(cx) else {
            return Poll::Pending;
        };
        if this.fails {
            drop(output);
            Poll::Ready(Err(this.journal.error(this.id, false)))
        } else {
            this.journal.completed(this.id);
            Poll::Ready(Ok(output))
        }
    }
}

/// A `TryStream` of `count` gated items (outputs tracked), failing where
/// `failures` says. The source's error takes the gate of its position, which
/// is dropped at once: every gate the source made counts as pulled.
pub fn try_source(
    gates: &Gates,
    journal: &Journal,
    count: usize,
    failures: &Failures,
) -> impl Stream<Item = Result<Probe, Failed>> + Send + Unpin + use<> {
    let (journal, failures) = (journal.clone(), failures.clone());
    let mut next = 0;
    gates.tracked_source(count).map(move |gate| {
        let id = next;
        next += 1;
        journal.pulled();
        if failures.source == Some(id) {
            drop(gate);
            return Err(journal.error(id, true));
        }
        Ok(Probe {
            gate,
            id,
            fails: failures.futures.contains(&id),
            journal: journal.clone(),
        })
    })
}

impl Case {
    /// This case's `try_bounded` stream on `gates`, its events in `journal`.
    pub fn fallible(
        &self,
        gates: &Gates,
        journal: &Journal,
    ) -> TryBoundedBuffered<impl Stream<Item = Result<Probe, Failed>> + Send + Unpin + use<>> {
        try_source(gates, journal, self.items, &self.failures)
            .try_bounded(self.workers, self.waiting)
            .ordered_if(self.window)
    }

    /// The outputs yielded before the error are exactly those the rule allows
    /// for what `journal` recorded: every `Ok` completed before the error
    /// (unordered), the complete prefix of them (ordered).
    pub fn check_yielded_before_error(&self, yielded: &[usize], journal: &Journal) {
        if self.window.is_some() {
            let prefix = (0..self.items)
                .take_while(|&id| journal.ok_before_error(id))
                .count();
            assert_eq!(
                yielded,
                (0..prefix).collect::<Vec<_>>(),
                "ordered: the complete prefix, and nothing behind its gap ({self:?})"
            );
        } else {
            let mut sorted = yielded.to_vec();
            sorted.sort_unstable();
            assert_eq!(
                sorted,
                journal.completed_before_error(),
                "unordered: every output completed before the error, once ({self:?})"
            );
        }
    }
}
