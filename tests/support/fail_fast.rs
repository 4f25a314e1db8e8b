//! Fallible items for the fail-fast tests of both modes.
//!
//! [`Case::fallible`] builds a `try_bounded` stream of gates (see `gate`):
//! item `id` resolves to `Ok(Output)` once its gate opens, or to
//! `Err(Failed)` when the case makes it fail; the source yields `Err(Failed)`
//! instead of an item where the case says so. The gates number every event
//! the fail-fast rule talks about (each item's polls, its `Ok` completion,
//! each pull, the first error: a [`Log`]), so a test can ask what happened
//! *after* the error was made: in place that is after the consumer's poll saw
//! it; on an executor the test steps by hand, after the adapter saw it.

use std::fmt;
use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, TryBoundedBuffered};
use futures::{Stream, StreamExt};

use super::gate::{Gate, GateOutput, Gates, Output};
use super::schedule::{Case, Got, OrderedIf};

/// What the fail-fast streams of these tests yield.
pub type TryOutput = Result<Output, Failed>;

/// The error of the fail-fast tests: which item failed (the source's error
/// names the position it took). Its gates count its drops.
pub struct Failed {
    pub id: usize,
    gates: Gates,
}

impl fmt::Debug for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Failed({})", self.id)
    }
}

impl Drop for Failed {
    fn drop(&mut self) {
        self.gates.update(|state| state.log.errors_dropped += 1);
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

/// The order of what happened to a family of gates, each event numbered.
#[derive(Default)]
pub(super) struct Log {
    /// The number of the latest event.
    tick: u64,
    /// Per item: when it was first polled.
    first_poll: Vec<Option<u64>>,
    /// When any item was last polled.
    last_poll: u64,
    /// Per item: when it completed with `Ok`.
    ok: Vec<Option<u64>>,
    /// Every item (or error) the source yielded, when.
    pulls: Vec<u64>,
    /// The items whose futures fail.
    failing: Vec<usize>,
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

    pub(super) fn polled(&mut self, id: usize) {
        let tick = self.next();
        self.last_poll = tick;
        Log::at(&mut self.first_poll, id).get_or_insert(tick);
    }

    pub(super) fn pulled(&mut self) {
        let tick = self.next();
        self.pulls.push(tick);
    }

    fn error_tick(&self) -> u64 {
        self.error.map_or(u64::MAX, |(_, tick, _)| tick)
    }

    fn ok_before_error(&self, id: usize) -> bool {
        let ok = self.ok.get(id).copied().flatten();
        ok.is_some_and(|tick| tick < self.error_tick())
    }
}

/// The fail-fast rule's questions, asked of what the gates logged.
impl Gates {
    fn error(&self, id: usize, from_source: bool) -> Failed {
        self.update(|state| {
            let tick = state.log.next();
            state.log.error.get_or_insert((id, tick, from_source));
            state.log.errors_made += 1;
        });
        Failed {
            id,
            gates: self.clone(),
        }
    }

    /// The item of the first error made, if any.
    pub fn first_error(&self) -> Option<usize> {
        self.state().log.error.map(|(id, _, _)| id)
    }

    /// Whether the source made the first error.
    pub fn source_failed_first(&self) -> bool {
        let error = self.state().log.error;
        error.is_some_and(|(_, _, from_source)| from_source)
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
        let log = &self.state().log;
        log.error.is_some() && log.last_poll > log.error_tick()
    }

    /// Items first polled after the first error was made.
    pub fn started_after_error(&self) -> Vec<usize> {
        let log = &self.state().log;
        let polls = log.first_poll.iter().enumerate();
        let late = polls.filter(|(_, tick)| tick.is_some_and(|tick| tick > log.error_tick()));
        late.map(|(id, _)| id).collect()
    }

    /// Whether item `id` completed with `Ok` before the first error was made.
    fn ok_before_error(&self, id: usize) -> bool {
        self.state().log.ok_before_error(id)
    }

    /// The items that completed with `Ok` before the first error was made.
    pub fn completed_before_error(&self) -> Vec<usize> {
        let log = &self.state().log;
        (0..log.ok.len())
            .filter(|&id| log.ok_before_error(id))
            .collect()
    }

    /// Items (and errors) the source yielded after the first error was made.
    pub fn pulls_after_error(&self) -> usize {
        let log = &self.state().log;
        let after = log.error_tick();
        log.pulls.iter().filter(|&&tick| tick > after).count()
    }

    /// Errors made and errors dropped so far.
    pub fn errors(&self) -> (usize, usize) {
        let log = &self.state().log;
        (log.errors_made, log.errors_dropped)
    }
}

/// A gate of a fallible case resolves to its output, or fails if its case
/// says so (its future dropping the output it made at once).
impl GateOutput for TryOutput {
    fn make(id: usize, gates: &Gates) -> Self {
        let output = Output::make(id, gates);
        let fails = gates.update(|state| {
            let log = &mut state.log;
            let fails = log.failing.contains(&id);
            if !fails {
                let tick = log.next();
                *Log::at(&mut log.ok, id) = Some(tick);
            }
            fails
        });
        if fails {
            drop(output);
            return Err(gates.error(id, false));
        }
        Ok(output)
    }
}

impl Case {
    /// This case's `try_bounded` stream of `self.items` gates (outputs
    /// tracked), failing where `self.failures` says. The source's error
    /// takes the gate of its position, which is dropped at once: every gate
    /// the source made counts as pulled.
    pub fn fallible(
        &self,
        gates: &Gates,
    ) -> TryBoundedBuffered<
        impl Stream<Item = Result<Gate<TryOutput>, Failed>> + Send + Unpin + use<>,
    > {
        gates.update(|state| state.log.failing.clone_from(&self.failures.futures));
        let (gates_in, at) = (gates.clone(), self.failures.source);
        let source = gates.source_of::<TryOutput>(self.items).map(move |gate| {
            if at == Some(gate.id()) {
                let id = gate.id();
                drop(gate);
                return Err(gates_in.error(id, true));
            }
            Ok(gate)
        });
        source
            .try_bounded(self.workers, self.waiting)
            .ordered_if(self.window)
    }

    /// The outputs yielded before the error are exactly those the rule allows
    /// for what `gates` logged: every `Ok` completed before the error
    /// (unordered), the complete prefix of them (ordered).
    pub fn check_yielded_before_error(&self, yielded: &[usize], gates: &Gates) {
        if self.window.is_some() {
            let prefix = (0..self.items)
                .take_while(|&id| gates.ok_before_error(id))
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
                gates.completed_before_error(),
                "unordered: every output completed before the error, once ({self:?})"
            );
        }
    }
}
