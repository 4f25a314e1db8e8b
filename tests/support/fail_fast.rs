//! Fallible sources and futures for the fail-fast tests of both modes.
//!
//! A [`TryCase`] builds a `TryStream` of gated items (see `gate`): item `id`
//! resolves to `Ok(Output)` once its gate opens, or to `Err(Failed)` when the
//! case makes it fail; the source yields `Err(Failed)` instead of an item where
//! the case says so. A [`Journal`] numbers every event the fail-fast rule talks
//! about (each item's first poll, its `Ok` completion, each pull, the first
//! error), so a test can ask what happened *after* the error was made: on an
//! executor the test steps by hand, that is after the adapter saw it.

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;

use bounded_buffered::{BoundedStreamExt, Spawned, Spawner, TryBoundedBuffered};
use futures::{Stream, StreamExt};
use futures_test::task::{AwokenCount, new_count_waker};

use super::executors::StepExecutor;
use super::gate::{Fault, Gate, Gates, Output, lock};
use super::panic::caught;
use super::poller::poll_once;
use super::rng::Rng;
use super::schedule::Case;

/// What the fail-fast streams of these tests yield.
pub type TryOutput = Result<Output, Failed>;

/// A spawned `try_bounded` stream of gated items.
pub type TrySpawned = Spawned<TryOutput>;

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
    pub fn none() -> Self {
        Self::default()
    }

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

/// What a poll of a fail-fast stream gave, in a form tests compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Got {
    Ok(usize),
    Err(usize),
    End,
    Pending,
}

impl Got {
    /// Reads a poll (the consumer drops the output or error at once).
    pub fn of(poll: Poll<Option<TryOutput>>) -> Self {
        match poll {
            Poll::Ready(Some(Ok(output))) => Got::Ok(output.id),
            Poll::Ready(Some(Err(error))) => Got::Err(error.id),
            Poll::Ready(None) => Got::End,
            Poll::Pending => Got::Pending,
        }
    }
}

/// Polls `stream` once with a waker that does nothing.
pub fn poll_got<S: Stream<Item = TryOutput> + Unpin>(stream: &mut S) -> Got {
    Got::of(poll_once(stream))
}

/// Polls a spawned stream to its end, running the tasks until they stall
/// whenever it is pending; fails on a hang (pending, and no task to run).
pub fn drain(stream: &mut TrySpawned, executor: &mut StepExecutor) -> Vec<Got> {
    let mut got = Vec::new();
    loop {
        match poll_got(stream) {
            Got::End => {
                got.push(Got::End);
                return got;
            }
            Got::Pending => {
                assert!(
                    executor.has_ready(),
                    "hang: pending with no task to run, after {got:?}"
                );
                executor.run_until_stalled();
            }
            next => got.push(next),
        }
    }
}

#[derive(Default)]
struct Log {
    /// The number of the next event.
    tick: u64,
    /// Per item: when it was first polled.
    first_poll: Vec<Option<u64>>,
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

/// The order of what happened to a [`TryCase`]'s items; see the module docs.
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

    /// Items first polled so far.
    pub fn started(&self) -> usize {
        lock(&self.0).first_poll.iter().flatten().count()
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

/// A gated item's future: records its first poll and its completion, and
/// fails if its case says so (dropping the gate's output at once).
pub struct Probe {
    gate: Gate<Output>,
    id: usize,
    fails: bool,
    polled: bool,
    journal: Journal,
}

impl Future for Probe {
    type Output = TryOutput;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<TryOutput> {
        let this = &mut *self;
        if !std::mem::replace(&mut this.polled, true) {
            this.journal.polled(this.id);
        }
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
) -> impl Stream<Item = Result<Probe, Failed>> + Send + Unpin + 'static {
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
            polled: false,
            journal: journal.clone(),
        })
    })
}

/// Budgets, length and failures of one fail-fast run.
#[derive(Clone, Debug)]
pub struct TryCase {
    pub workers: usize,
    pub waiting: usize,
    pub window: Option<usize>,
    pub items: usize,
    pub failures: Failures,
}

impl TryCase {
    pub fn new(workers: usize, waiting: usize, window: Option<usize>, items: usize) -> Self {
        Self {
            workers,
            waiting,
            window,
            items,
            failures: Failures::none(),
        }
    }

    pub fn failing(self, failures: Failures) -> Self {
        Self { failures, ..self }
    }

    /// How many items may run at once with every output held back.
    pub fn span(&self) -> usize {
        self.window
            .map_or(self.workers, |window| window.min(self.workers))
    }

    /// The stream in place, on gates of its own.
    pub fn in_place(
        &self,
        gates: &Gates,
        journal: &Journal,
    ) -> TryBoundedBuffered<impl Stream<Item = Result<Probe, Failed>> + Send + Unpin + 'static>
    {
        let stream = try_source(gates, journal, self.items, &self.failures)
            .try_bounded(self.workers, self.waiting);
        match self.window {
            Some(window) => stream.ordered(window),
            None => stream,
        }
    }

    /// The stream spawned on `spawner`, on closed gates, with its journal.
    pub fn spawn_on(&self, spawner: impl Spawner) -> (Gates, Journal, TrySpawned) {
        self.spawn_with(Gates::new(), spawner)
    }

    /// The stream on `gates`, spawned on `spawner`, with its journal.
    pub fn spawn_with(&self, gates: Gates, spawner: impl Spawner) -> (Gates, Journal, TrySpawned) {
        let journal = Journal::default();
        let stream = self.in_place(&gates, &journal).spawn_on(spawner);
        (gates, journal, stream)
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

/// What a step of [`TryRun`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum TryStep {
    Progress,
    /// The stream returned `None`.
    Ended,
    /// A poll of the stream panicked with this message.
    Panicked(String),
}

/// A spawned fail-fast stream on a [`StepExecutor`], stepped at random: each
/// step polls a woken task, opens a pulled gate (here or from another thread)
/// or polls the consumer (when woken, now and then spuriously); the budgets
/// are checked after every step.
pub struct TryRun {
    pub case: TryCase,
    pub gates: Gates,
    pub journal: Journal,
    pub executor: StepExecutor,
    pub stream: Option<TrySpawned>,
    pub rng: Rng,
    /// What the consumer's polls gave, `Pending` left out.
    pub got: Vec<Got>,
    waker: Waker,
    wakes: AwokenCount,
    /// The consumer's wake count when its poll last returned `Pending`; `None`
    /// before the first poll and after a `Ready`, when it may poll at once.
    pending_at: Option<usize>,
    polled: bool,
    steps: usize,
}

impl TryRun {
    /// `case` on gates with `fault`, stepped by a generator seeded with `seed`.
    pub fn new(case: TryCase, fault: Fault, seed: u64) -> Self {
        let executor = StepExecutor::new();
        let (gates, journal, stream) =
            case.spawn_with(Gates::with_fault(fault), executor.spawner());
        let (waker, wakes) = new_count_waker();
        Self {
            case,
            gates,
            journal,
            executor,
            stream: Some(stream),
            rng: Rng::new(seed),
            got: Vec::new(),
            waker,
            wakes,
            pending_at: None,
            polled: false,
            steps: 0,
        }
    }

    /// The ids of the `Ok` outputs the consumer got.
    pub fn oks(&self) -> Vec<usize> {
        let oks = self.got.iter().filter_map(|got| match got {
            Got::Ok(id) => Some(*id),
            _ => None,
        });
        oks.collect()
    }

    fn consumer_woken(&self) -> bool {
        self.pending_at.is_none_or(|at| self.wakes.get() > at)
    }

    /// Polls the stream once. `Ready` although its waker was not woken since
    /// it last returned `Pending` means a wake was lost.
    pub fn poll_consumer(&mut self) -> TryStep {
        let woken = self.consumer_woken();
        self.polled = true;
        let mut cx = Context::from_waker(&self.waker);
        let stream = self.stream.as_mut().expect("the stream was dropped");
        let poll = match caught(|| stream.poll_next_unpin(&mut cx)) {
            Ok(Poll::Pending) => {
                self.pending_at = Some(self.wakes.get());
                return TryStep::Progress;
            }
            Ok(poll) => poll,
            Err(message) => return TryStep::Panicked(message),
        };
        assert!(
            woken,
            "lost wakeup: the stream had something to return but did not wake its consumer"
        );
        self.pending_at = None;
        let got = Got::of(poll);
        self.got.push(got);
        if got == Got::End {
            TryStep::Ended
        } else {
            TryStep::Progress
        }
    }

    /// One random step, then the budgets.
    pub fn step(&mut self) -> TryStep {
        self.steps += 1;
        assert!(self.steps < 200_000, "no end after {} steps", self.steps);
        let closed = self.gates.closed_pulled();
        let consumer_woken = self.consumer_woken();
        let tasks_ready = self.executor.has_ready();
        if !tasks_ready && closed.is_empty() && !consumer_woken {
            // Nothing can happen any more but a spurious poll: it must show
            // something, or the stream hangs.
            let step = self.poll_consumer();
            assert_ne!(
                step,
                TryStep::Progress,
                "hang: no task woken, no gate to open, the consumer not woken, and the stream pending ({:?}, got {:?})",
                self.case,
                self.got
            );
            return step;
        }
        let step = match self.rng.below(8) {
            0..=3 if tasks_ready => {
                let pick = self.rng.below(usize::MAX);
                self.executor.poll_one(pick);
                TryStep::Progress
            }
            4 | 5 if !closed.is_empty() => {
                let id = closed[self.rng.below(closed.len())];
                if self.rng.below(4) == 0 {
                    let gates = self.gates.clone();
                    thread::spawn(move || gates.open(id)).join().unwrap();
                } else {
                    self.gates.open(id);
                }
                TryStep::Progress
            }
            6 if consumer_woken => self.poll_consumer(),
            // A spurious poll, now and then.
            7 if self.rng.below(4) == 0 => self.poll_consumer(),
            _ => TryStep::Progress,
        };
        self.executor.assert_none_escaped("a spawned task");
        if step == TryStep::Progress {
            self.check_budgets();
        }
        step
    }

    /// The budgets, between any two steps. Until the run fails the counts
    /// also add up exactly, and with the tasks idle every budget is full.
    fn check_budgets(&mut self) {
        let case = &self.case;
        let schedule = Case {
            workers: case.workers,
            waiting: case.waiting,
            window: case.window,
            items: case.items,
            seed: 0,
            fault: Fault::None,
        };
        let stats = self
            .stream
            .as_ref()
            .expect("the stream was dropped")
            .stats();
        let yielded = self.oks().len();
        schedule.check_budgets(&stats, &self.gates, yielded);
        if self.journal.first_error().is_some() || self.gates.fault_fired() {
            return;
        }
        let (pulled, running) = (self.gates.pulled(), self.gates.running());
        let context =
            || format!("{case:?} {stats:?} pulled {pulled} yielded {yielded} running {running}");
        assert_eq!(
            stats.pulled as usize,
            pulled,
            "stats disagree with the source: {}",
            context()
        );
        assert_eq!(
            pulled - yielded,
            stats.active + stats.waiting + stats.held,
            "items lost or counted twice: {}",
            context()
        );
        let idle = self.polled && !self.executor.has_ready() && pulled < case.items;
        if idle {
            let full = stats.active == case.workers
                || stats.active + stats.held == case.window.unwrap_or(case.workers);
            assert_eq!(
                stats.waiting,
                case.waiting,
                "waiting budget left idle: {}",
                context()
            );
            assert!(full, "worker budget left idle: {}", context());
            assert_eq!(
                running,
                stats.active,
                "a start claimed but not made: {}",
                context()
            );
        }
    }

    /// Runs until the stream ends or panics.
    pub fn run_to_end(&mut self) -> TryStep {
        loop {
            match self.step() {
                TryStep::Progress => {}
                end => return end,
            }
        }
    }

    /// Lets the executor run every woken task: afterwards none is left.
    pub fn run_tasks_out(&mut self) {
        let mut rng = Rng::new(self.rng.next_u64());
        self.executor.run_until_idle(&mut rng);
        self.executor.assert_none_escaped("a cancelled task");
        assert_eq!(self.executor.live_tasks(), 0, "tasks outlived the run");
    }

    /// Drops the stream, then lets the executor run the cancelled tasks: every
    /// task ends, everything (the errors included) was dropped exactly once.
    pub fn drop_stream_and_check(&mut self) {
        self.gates.drop_stream(self.stream.take());
        let (made, dropped) = (
            self.gates.counts().outputs_made,
            self.gates.counts().outputs_dropped,
        );
        assert_eq!(dropped, made, "untaken outputs not dropped with the stream");
        self.run_tasks_out();
        self.gates.check_all_dropped_once();
        let (made, dropped) = self.journal.errors();
        assert_eq!(dropped, made, "errors made and dropped");
    }
}
