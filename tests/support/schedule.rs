//! One random stepper for both modes: a stream in place or spawned on a
//! [`StepExecutor`] (see [`Mode`]), driven by a random interleaving of steps,
//! with the budgets checked after every single step.
//!
//! A step polls one woken worker task (spawned), opens a gate and delivers its
//! wake in one of several ways (here, from another thread, twice, later, again
//! after the item finished, or the future wakes itself once more), delivers a
//! wake held back, polls the consumer (when woken, now and then spuriously),
//! changes the limits, or moves the hand clock. In place a future runs only
//! inside the consumer's poll (contract point 14), so "a step" there is a
//! consumer poll or a gate opening; spawned, the tasks run when the schedule
//! says (point 18). Either way the state between two steps is exact.

use std::ops::RangeInclusive;
use std::task::{Poll, Waker};
use std::thread;
use std::time::Duration;

use bounded_buffered::{
    BoundedBuffered, BoundedStreamExt, Clocking, FutureStream, Limits, Stats, TryBoundedBuffered,
    TryFutureStream,
};
use proptest::prelude::*;

use super::clock::{advance, ms};
use super::executors::StepExecutor;
use super::fail_fast::{Failures, TryOutput};
use super::gate::{Counts, Fault, GateSource, Gates, Output};
use super::limits::{Change, InForce};
use super::mode::{Driven, Mode};
use super::panic::{INJECTED, caught};
use super::rng::Rng;

/// `.ordered(window)` when there is a window, for tests that run both modes.
pub trait OrderedIf {
    fn ordered_if(self, window: Option<usize>) -> Self;
}

impl<S, K, N, Q, W> OrderedIf for BoundedBuffered<S, K, N, Q, W>
where
    S: FutureStream,
    K: Clocking,
    Q: bounded_buffered::KeyRule<S::Item>,
    W: bounded_buffered::WeightRule<S::Item>,
{
    fn ordered_if(self, window: Option<usize>) -> Self {
        match window {
            Some(window) => self.ordered(window),
            None => self,
        }
    }
}

impl<S: TryFutureStream, K: Clocking, N> OrderedIf for TryBoundedBuffered<S, K, N> {
    fn ordered_if(self, window: Option<usize>) -> Self {
        match window {
            Some(window) => self.ordered(window),
            None => self,
        }
    }
}

/// One random run: budgets, length, the schedule's seed, and what the run
/// throws at the stream.
#[derive(Clone, Debug, Default)]
pub struct Case {
    pub workers: usize,
    pub waiting: usize,
    pub window: Option<usize>,
    pub items: usize,
    pub seed: u64,
    /// The one injected panic, if any.
    pub fault: Fault,
    /// Where a `try_bounded` run fails.
    pub failures: Failures,
    /// Limit changes, in order, each made once (`true`: from another thread).
    pub changes: Vec<(Change, bool)>,
    /// `max_wait`, for runs whose clock the schedule moves.
    pub max_wait: Option<Duration>,
}

impl Case {
    pub fn new(workers: usize, waiting: usize, window: Option<usize>, items: usize) -> Self {
        Self {
            workers,
            waiting,
            window,
            items,
            ..Self::default()
        }
    }

    /// Budgets and a length from these ranges, and a seed.
    pub fn strategy(
        workers: RangeInclusive<usize>,
        waiting: RangeInclusive<usize>,
        window: RangeInclusive<usize>,
        items: RangeInclusive<usize>,
    ) -> impl Strategy<Value = Case> {
        let window = prop::option::of(window);
        (workers, waiting, window, items, any::<u64>()).prop_map(
            |(workers, waiting, window, items, seed)| Case {
                seed,
                ..Case::new(workers, waiting, window, items)
            },
        )
    }

    /// One fault of five kinds (none, a panic in a future's poll or first
    /// poll, in the source, in a future's destructor) at an item in `at`.
    pub fn faults(at: RangeInclusive<usize>) -> impl Strategy<Value = Fault> {
        (0..5u8, at).prop_map(|(kind, at)| match kind {
            0 => Fault::None,
            1 => Fault::PollOf(at),
            2 => Fault::FirstPollOf(at),
            3 => Fault::SourceAt(at),
            _ => Fault::DropOf(at),
        })
    }

    pub fn failing(self, failures: Failures) -> Self {
        Self { failures, ..self }
    }

    /// How many items may be running or held at once: the window when
    /// ordered, else the workers (an untaken output keeps its worker).
    pub fn span(&self) -> usize {
        self.window.unwrap_or(self.workers)
    }

    /// Gates with this case's fault, and its stream of tracked gates.
    pub fn stream(&self) -> (Gates, BoundedBuffered<GateSource<Output>>) {
        let gates = Gates::with_fault(self.fault);
        let stream = gates
            .tracked_source(self.items)
            .bounded(self.workers, self.waiting)
            .ordered_if(self.window);
        (gates, stream)
    }

    /// The peaks a finished stream reports stayed within the budgets.
    pub fn check_peaks(&self, stats: &Stats) {
        let span = self.span();
        assert!(stats.peak_active <= self.workers.min(span), "{stats:?}");
        assert!(stats.peak_waiting <= self.waiting, "{stats:?}");
        assert!(stats.peak_held <= span, "{stats:?}");
    }

    /// The outputs arrived exactly once each, in input order when ordered.
    pub fn check_delivery(&self, yielded: &[usize]) {
        let all: Vec<usize> = (0..self.items).collect();
        if self.window.is_some() {
            assert_eq!(yielded, all, "ordered output out of order");
        } else {
            let mut sorted = yielded.to_vec();
            sorted.sort_unstable();
            assert_eq!(sorted, all, "an output missing or repeated");
        }
    }
}

/// What a consumer's poll gave, in a form tests compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Got {
    Ok(usize),
    Err(usize),
    /// An `Expired` item, by id.
    Expired(usize),
    End,
    Pending,
}

/// What a step of [`Run`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    Progress,
    /// The stream returned `None`.
    Finished,
    /// A poll of the stream panicked with this message.
    Panicked(String),
}

/// A stream in either mode, stepped at random; see the module docs.
pub struct Run<T: 'static> {
    pub case: Case,
    pub gates: Gates,
    pub driven: Driven<'static, T>,
    pub rng: Rng,
    /// What the consumer's polls gave, `Pending` left out.
    pub got: Vec<Got>,
    /// The gates' counts and the stats when the consumer got the error.
    pub at_error: Option<(Counts, Stats)>,
    read: Box<dyn FnMut(T) -> Got>,
    limits: InForce,
    handle: Limits,
    /// The changes not made yet, the next last.
    changes: Vec<(Change, bool)>,
    /// Wakes held back, delivered at a later step.
    later: Vec<Waker>,
    /// The consumer's wake count when its poll last began and returned
    /// `Pending`; `None` before the first poll and after a `Ready`.
    pending_at: Option<usize>,
    /// The consumer polled, so spawned, the tasks exist.
    polled: bool,
    /// The stream is as the consumer's latest poll left it (in place until a
    /// limit changes, spawned for that step only), and whether that poll
    /// returned `Pending`.
    rests: Option<bool>,
    spins: usize,
    steps: usize,
}

impl Run<Output> {
    /// `case` on gates, in `mode`. Half the runs take the limits handle
    /// before the switch to spawned: it must keep working (point 25).
    pub fn new(mode: Mode, case: Case) -> Self {
        let (gates, stream) = case.stream();
        let early = (case.seed % 2 == 0).then(|| stream.limits());
        let driven = crate::drive!(mode, stream);
        Run::with(case, gates, driven, early, |output| Got::Ok(output.id))
    }
}

impl Run<TryOutput> {
    /// `case` with `try_bounded`, failing where `case.failures` says.
    pub fn fallible(mode: Mode, case: Case) -> Self {
        let gates = Gates::with_fault(case.fault);
        let driven = crate::drive!(mode, case.fallible(&gates));
        Run::with(case, gates, driven, None, Got::of_try)
    }
}

impl<T: 'static> Run<T> {
    /// A run of `driven`, built from `case` on `gates`; `read` says what each
    /// output is (it may check it, too).
    pub fn with(
        case: Case,
        gates: Gates,
        driven: Driven<'static, T>,
        handle: Option<Limits>,
        read: impl FnMut(T) -> Got + 'static,
    ) -> Self {
        let handle = handle.unwrap_or_else(|| driven.limits());
        let mut changes = case.changes.clone();
        changes.reverse();
        Self {
            rng: Rng::new(case.seed),
            limits: InForce::new(case.workers, case.waiting, case.window),
            case,
            gates,
            driven,
            got: Vec::new(),
            at_error: None,
            read: Box::new(read),
            handle,
            changes,
            later: Vec::new(),
            pending_at: None,
            polled: false,
            rests: None,
            spins: 0,
            steps: 0,
        }
    }

    fn spawned(&self) -> bool {
        self.driven.mode().is_spawned()
    }

    /// The ids of the `Ok` outputs the consumer got, in order.
    pub fn oks(&self) -> Vec<usize> {
        self.ids(|got| matches!(got, Got::Ok(_)))
    }

    /// The ids of the outputs and expired items the consumer got, in order.
    pub fn yielded(&self) -> Vec<usize> {
        self.ids(|got| matches!(got, Got::Ok(_) | Got::Expired(_)))
    }

    /// How many errors the consumer got.
    pub fn errors(&self) -> usize {
        self.ids(|got| matches!(got, Got::Err(_))).len()
    }

    fn ids(&self, which: impl Fn(&Got) -> bool) -> Vec<usize> {
        let ids = self.got.iter().filter(|got| which(got));
        let ids = ids.map(|got| match got {
            Got::Ok(id) | Got::Err(id) | Got::Expired(id) => *id,
            Got::End | Got::Pending => unreachable!("an end has no id"),
        });
        ids.collect()
    }

    fn consumer_woken(&self) -> bool {
        self.pending_at.is_none_or(|at| self.driven.wakes() > at)
    }

    fn tasks_ready(&mut self) -> bool {
        self.spawned() && self.driven.executor().has_ready()
    }

    /// A panic fired or an error was made: from then on only the budgets
    /// hold, not the exact counts.
    fn failed(&self) -> bool {
        self.gates.fault_fired() || self.gates.first_error().is_some()
    }

    /// Polls the stream once. `Ready` although its waker was not woken since
    /// its last `Pending` means a wake was lost (in place, too: a poll that
    /// nothing woke polls no future, point 7).
    pub fn poll_consumer(&mut self) -> Step {
        let woken = self.consumer_woken();
        let wakes = self.driven.wakes();
        self.polled = true;
        let driven = &mut self.driven;
        let poll = match caught(|| driven.poll_alone()) {
            Ok(poll) => poll,
            Err(message) => return Step::Panicked(message),
        };
        self.rests = Some(poll.is_pending());
        let Poll::Ready(next) = poll else {
            // A wake during the poll itself (a future that woke itself, the
            // stream yielding after its poll budget) asks for another poll.
            if self.driven.wakes() > wakes {
                self.spins += 1;
                assert!(self.spins < 1_000, "the stream spins without progress");
            }
            self.pending_at = Some(wakes);
            return Step::Progress;
        };
        assert!(
            woken,
            "lost wakeup: the stream had something to return but did not wake its consumer"
        );
        (self.pending_at, self.spins) = (None, 0);
        let got = next.map_or(Got::End, |output| (self.read)(output));
        if matches!(got, Got::Err(_)) {
            self.at_error = Some((self.gates.counts(), self.driven.stats()));
        }
        self.got.push(got);
        if got == Got::End {
            Step::Finished
        } else {
            Step::Progress
        }
    }

    /// Opens gate `id` (moving the clock first, when the run has one) and
    /// delivers the wake one of six ways.
    fn open(&mut self, id: usize) {
        if self.case.max_wait.is_some() {
            advance(ms(self.rng.below(3) as u64));
        }
        let how = self.rng.below(6);
        if how == 0 {
            let gates = self.gates.clone();
            thread::spawn(move || gates.open(id)).join().unwrap();
            return;
        }
        if how == 1 {
            self.gates.self_wake_once(id);
        }
        // A gate not polled yet has nobody to wake.
        let Some(waker) = self.gates.open_taking_waker(id) else {
            return;
        };
        match how {
            1 | 2 => waker.wake(),
            3 => {
                waker.wake_by_ref();
                waker.wake();
            }
            4 => self.later.push(waker),
            // Again later, when the item has likely finished and its worker
            // may run another.
            _ => {
                waker.wake_by_ref();
                self.later.push(waker);
            }
        }
    }

    /// Makes the next limit change. In place it wakes a pending consumer
    /// (point 25: a change wakes the stream); spawned it wakes the tasks.
    fn change(&mut self) {
        let (change, elsewhere) = self.changes.pop().expect("a change left");
        let (pending, wakes) = (!self.consumer_woken(), self.driven.wakes());
        change.make(&self.handle, elsewhere);
        self.limits.apply(change);
        self.rests = None;
        if pending && !self.spawned() {
            assert!(
                self.driven.wakes() > wakes,
                "a change of limits did not wake the stream"
            );
        }
    }

    /// Does one random thing, then checks the budgets.
    pub fn step(&mut self) -> Step {
        self.steps += 1;
        assert!(self.steps < 200_000, "no end after {} steps", self.steps);
        let closed = self.gates.closed_pulled();
        let woken = self.consumer_woken();
        let tasks_ready = self.tasks_ready();
        let quiet = !tasks_ready && closed.is_empty() && self.later.is_empty() && !woken;
        if quiet && self.changes.is_empty() {
            if self.limits.workers == 0 {
                // Every change was made and the stream is paused: resume it.
                self.changes.push((Change::Workers(1), false));
            } else {
                // Nothing can happen but a spurious poll: it must show the
                // end or a panic, or the stream hangs.
                let step = self.poll_consumer();
                assert_ne!(
                    step,
                    Step::Progress,
                    "hang: no task woken, no gate to open, the consumer not woken, and the \
                     stream pending ({:?}, got {:?})",
                    self.case,
                    self.got
                );
                return step;
            }
        }
        // Spawned, any step but this poll may change the state (point 18).
        if self.spawned() {
            self.rests = None;
        }
        let before = self.driven.stats();
        let step = match self.rng.below(12) {
            0..=3 if tasks_ready => {
                let pick = self.rng.below(usize::MAX);
                self.driven.executor().poll_one(pick);
                Step::Progress
            }
            4 | 5 if !closed.is_empty() => {
                let id = closed[self.rng.below(closed.len())];
                self.open(id);
                Step::Progress
            }
            6 if !self.later.is_empty() => {
                let at = self.rng.below(self.later.len());
                self.later.swap_remove(at).wake();
                Step::Progress
            }
            7 | 8 if woken => self.poll_consumer(),
            // A spurious poll, now and then.
            9 if self.rng.below(4) == 0 => self.poll_consumer(),
            10 if !self.changes.is_empty() => {
                self.change();
                Step::Progress
            }
            11 if self.case.max_wait.is_some() => {
                advance(ms(self.rng.below(4) as u64));
                Step::Progress
            }
            _ => Step::Progress,
        };
        if self.spawned() {
            self.driven.executor().assert_none_escaped("a spawned task");
        }
        if step == Step::Progress {
            self.check(&before);
        }
        step
    }

    /// Runs until the stream ends or panics.
    pub fn run_to_end(&mut self) -> Step {
        loop {
            match self.step() {
                Step::Progress => {}
                end => return end,
            }
        }
    }

    /// The budgets, between any two steps. Starts and pulls obey the limits
    /// in force, settled or not (point 25); once the work is within them,
    /// every budget holds. Until a panic or an error the counts also add up
    /// exactly, and a stream at rest has every budget exactly full.
    fn check(&mut self, before: &Stats) {
        let stats = self.driven.stats();
        let (pulled, running) = (self.gates.pulled(), self.gates.running());
        let yielded = self.yielded().len();
        let expired_taken = self.got.iter().filter(|got| matches!(got, Got::Expired(_)));
        let expired_taken = expired_taken.count();
        let (spawned, failed) = (self.spawned(), self.failed());
        let limits = &mut self.limits;
        let context = format!(
            "{:?} {stats:?} pulled {pulled} yielded {yielded} running {running} expired taken \
             {expired_taken} limits {} {}",
            self.case, limits.workers, limits.waiting
        );
        let held_expired = (stats.expired as usize)
            .checked_sub(expired_taken)
            .filter(|&held| held <= stats.held)
            .unwrap_or_else(|| panic!("expired items held uncounted: {context}"));
        if stats.active + stats.completed as usize > before.active + before.completed as usize {
            assert!(
                stats.active <= limits.workers,
                "started over the limit: {context}"
            );
        }
        if stats.pulled > before.pulled {
            assert!(
                stats.waiting <= limits.waiting,
                "pulled over the limit: {context}"
            );
        }
        assert_eq!(
            (stats.workers_limit, stats.waiting_limit),
            (limits.workers, limits.waiting),
            "{context}"
        );
        limits.settled |= limits.within(&stats, held_expired);
        if limits.settled {
            limits.check(&stats, held_expired, running, pulled - yielded, &context);
        }
        if failed {
            return;
        }
        assert_eq!(
            stats.pulled as usize, pulled,
            "stats disagree with the source: {context}"
        );
        assert_eq!(
            pulled - yielded,
            stats.active + stats.waiting + stats.held,
            "items lost or counted twice: {context}"
        );
        if self.rests == Some(true) && self.case.window.is_none() {
            assert_eq!(stats.held, 0, "pending while holding an output: {context}");
        }
        if spawned {
            assert!(
                running <= stats.active,
                "a future runs uncounted: {context}"
            );
        } else {
            assert_eq!(running, stats.active, "{context}");
        }
        // At rest: spawned, every task stalled (once the consumer polled,
        // which spawns them); in place, after a poll, which refills before
        // it hands out an output (point 6) or returns `Pending`.
        let at_rest = if spawned {
            self.polled && !self.driven.executor().has_ready()
        } else {
            self.rests.is_some()
        };
        if limits.settled && at_rest && pulled < self.case.items {
            // Spawned, pulling ahead is done by tasks: a stream paused
            // before its first task was spawned has none to do it.
            let no_task = spawned && self.driven.spawns() == 0;
            limits.check_full(&stats, held_expired, no_task, &context);
            assert_eq!(
                running, stats.active,
                "a start claimed but not made: {context}"
            );
        }
    }

    /// Delivers the wakes still held back: late wakes reach nothing and
    /// break nothing.
    pub fn wake_the_rest(&mut self) {
        for waker in self.later.drain(..) {
            waker.wake();
        }
    }

    /// Spawned: runs every woken task in a random order; afterwards none is
    /// left. In place: nothing (nothing runs outside a poll).
    pub fn run_tasks_out(&mut self) {
        if self.spawned() {
            let mut rng = Rng::new(self.rng.next_u64());
            run_out(self.driven.executor(), &mut rng);
        }
    }

    /// Drops the stream, then (spawned) lets the executor run the cancelled
    /// tasks: every task ends, everything (errors included) was dropped
    /// exactly once. Untaken outputs go with the stream itself, at once.
    pub fn drop_stream_and_check(&mut self) {
        let mut rng = Rng::new(self.rng.next_u64());
        if let Err(message) = drop_and_check(&mut self.driven, &self.gates, &mut rng) {
            // Point 10: a destructor's panic propagates out of the drop, once
            // everything was dropped; spawned, for what the dropping thread
            // drops (the source, waiting items, held outputs), while a running
            // future's stays in its task (points 19 and 20).
            assert!(
                message.starts_with(INJECTED),
                "unexpected panic on drop: {message}"
            );
            assert!(
                matches!(self.case.fault, Fault::DropOf(_)),
                "drop panicked without a faulty destructor"
            );
        }
    }
}

/// Drops a stream over `gates`: the untaken outputs go with the stream itself,
/// at once; once (spawned) the cancelled tasks ran, in an order `rng` picks,
/// every task ended and everything (errors included) was dropped exactly
/// once. Returns what the drop itself raised (point 10).
pub fn drop_and_check<T>(
    driven: &mut Driven<'_, T>,
    gates: &Gates,
    rng: &mut Rng,
) -> Result<(), String> {
    let (mut executor, dropped) = drop_before_tasks(driven);
    let counts = gates.counts();
    assert_eq!(
        counts.outputs_dropped, counts.outputs_made,
        "untaken outputs not dropped with the stream"
    );
    if let Some(executor) = &mut executor {
        run_out(executor, rng);
    }
    gates.check_all_dropped_once();
    let (made, errors_dropped) = gates.errors();
    assert_eq!(errors_dropped, made, "errors made and dropped");
    dropped
}

/// Runs every woken task in a random order: afterwards none is left, and no
/// panic escaped one.
fn run_out(executor: &mut StepExecutor, rng: &mut Rng) {
    executor.run_until_idle(rng);
    executor.assert_none_escaped("a cancelled task");
    assert_eq!(executor.live_tasks(), 0, "tasks outlived the stream");
}

/// Drops the stream, and hands back (spawned) its executor with the cancelled
/// tasks not run yet, so that a test sees what the drop itself did; and the
/// message of a panic out of the drop (in place, a destructor's: point 10).
pub fn drop_before_tasks<T>(
    driven: &mut Driven<'_, T>,
) -> (Option<StepExecutor>, Result<(), String>) {
    let executor = driven
        .mode()
        .is_spawned()
        .then(|| std::mem::take(driven.executor()));
    (executor, caught(|| driven.drop_stream()))
}

/// A thread that opens the gates of pulled items in a random order, all but
/// `kept_closed`'s, until none will close again or only that one is left
/// (the stream then stops at it or ends): for streams on real runtimes.
pub fn opener(gates: &Gates, seed: u64, kept_closed: Option<usize>) -> thread::JoinHandle<()> {
    let (gates, mut rng) = (gates.clone(), Rng::new(seed));
    thread::spawn(move || {
        while let Some(closed) = gates.wait_for_closed_gates() {
            let openable: Vec<usize> = closed
                .into_iter()
                .filter(|&id| Some(id) != kept_closed)
                .collect();
            if openable.is_empty() {
                return;
            }
            gates.open(openable[rng.below(openable.len())]);
        }
    })
}

/// Once a stream on `runtime` was dropped: the `openers` end, then every
/// task, and everything was dropped exactly once.
pub fn check_ended_on_tokio(
    runtime: &tokio::runtime::Runtime,
    gates: &Gates,
    openers: Vec<thread::JoinHandle<()>>,
) {
    for opener in openers {
        opener.join().unwrap();
    }
    let metrics = runtime.metrics();
    super::watchdog::eventually("every task to end", || metrics.num_alive_tasks() == 0);
    gates.check_all_dropped_once();
}
