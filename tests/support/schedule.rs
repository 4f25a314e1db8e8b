//! A spawned stream driven by a random interleaving of task polls (on the
//! [`StepExecutor`]), gate openings (on this thread or another) and consumer
//! polls, with the budgets checked after every single step.

use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::thread;

use bounded_buffered::{
    BoundedBuffered, BoundedStreamExt, Clocking, FutureStream, Spawned, Spawner, Stats,
    TryBoundedBuffered, TryFutureStream,
};
use futures::Stream;
use futures::StreamExt;
use futures_test::task::{AwokenCount, new_count_waker};

use super::executors::StepExecutor;
use super::gate::{Fault, Gates, Output};
use super::panic::caught;
use super::rng::Rng;

/// `.ordered(window)` when there is a window, for tests that run both modes.
pub trait OrderedIf {
    fn ordered_if(self, window: Option<usize>) -> Self;
}

impl<S: FutureStream, K: Clocking, N> OrderedIf for BoundedBuffered<S, K, N> {
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

/// One random run: budgets, length, the schedule's seed, where it fails.
#[derive(Clone, Debug)]
pub struct Case {
    pub workers: usize,
    pub waiting: usize,
    pub window: Option<usize>,
    pub items: usize,
    pub seed: u64,
    pub fault: Fault,
}

impl Case {
    /// How many items may be running or held at once: the window when
    /// ordered, else the workers (an untaken output keeps its worker).
    pub fn span(&self) -> usize {
        self.window.unwrap_or(self.workers)
    }

    /// Gates for this case, and its stream spawned on `spawner`.
    pub fn spawn_on(&self, spawner: impl Spawner) -> (Gates, Spawned<Output>) {
        let gates = Gates::with_fault(self.fault);
        let stream = gates
            .tracked_source(self.items)
            .bounded(self.workers, self.waiting)
            .ordered_if(self.window);
        (gates, stream.spawn_on(spawner))
    }

    /// The budgets every state must keep, whatever the schedule.
    pub fn check_budgets(&self, stats: &Stats, gates: &Gates, yielded: usize) {
        let (span, pulled, running) = (self.span(), gates.pulled(), gates.running());
        check(
            &[
                (stats.active <= self.workers, "active over budget"),
                (stats.waiting <= self.waiting, "waiting over budget"),
                (stats.active + stats.held <= span, "held over budget"),
                (
                    running <= self.workers.min(span),
                    "futures running over budget",
                ),
                (running + stats.held <= span, "running and held over budget"),
                (
                    pulled - yielded <= span + self.waiting,
                    "source too far ahead",
                ),
            ],
            || format!("{self:?} {stats:?} pulled {pulled} yielded {yielded} running {running}"),
        );
    }

    /// The peaks a finished stream reports stayed within the budgets.
    pub fn check_peaks(&self, stats: &Stats) {
        let span = self.span();
        assert!(stats.peak_active <= self.workers.min(span), "{stats:?}");
        assert!(stats.peak_waiting <= self.waiting, "{stats:?}");
        assert!(stats.peak_held <= span, "{stats:?}");
    }
}

/// Fails on the first check that does not hold, naming it and the context.
fn check(checks: &[(bool, &str)], context: impl Fn() -> String) {
    for (holds, what) in checks {
        assert!(holds, "{what}: {}", context());
    }
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

/// A spawned stream on a [`StepExecutor`], stepped at random.
pub struct Run {
    pub case: Case,
    pub gates: Gates,
    pub executor: StepExecutor,
    pub stream: Option<Spawned<Output>>,
    pub rng: Rng,
    pub yielded: Vec<usize>,
    waker: Waker,
    wakes: AwokenCount,
    /// The consumer's wake count when its poll last returned `Pending`; `None`
    /// before the first poll and after a `Ready`, when it may poll at once.
    pending_at: Option<usize>,
    /// Whether the stream was polled, so its tasks exist.
    polled: bool,
    steps: usize,
}

impl Run {
    pub fn new(case: Case) -> Self {
        let executor = StepExecutor::new();
        let (gates, stream) = case.spawn_on(executor.spawner());
        let (waker, wakes) = new_count_waker();
        Self {
            rng: Rng::new(case.seed),
            case,
            gates,
            executor,
            stream: Some(stream),
            yielded: Vec::new(),
            waker,
            wakes,
            pending_at: None,
            polled: false,
            steps: 0,
        }
    }

    fn consumer_woken(&self) -> bool {
        self.pending_at.is_none_or(|at| self.wakes.get() > at)
    }

    /// Polls the stream once. `Ready` although its waker was not woken since
    /// it last returned `Pending` means a wake was lost.
    fn poll_consumer(&mut self) -> Step {
        let woken = self.consumer_woken();
        self.polled = true;
        let mut cx = Context::from_waker(&self.waker);
        let stream = self.stream.as_mut().expect("the stream was dropped");
        let next = match caught(|| stream.poll_next_unpin(&mut cx)) {
            Ok(Poll::Pending) => {
                self.pending_at = Some(self.wakes.get());
                return Step::Progress;
            }
            Ok(Poll::Ready(next)) => next,
            Err(message) => return Step::Panicked(message),
        };
        assert!(
            woken,
            "lost wakeup: the stream had something to return but did not wake its consumer"
        );
        self.pending_at = None;
        match next {
            Some(output) => {
                self.yielded.push(output.id);
                Step::Progress
            }
            None => Step::Finished,
        }
    }

    /// Does one random thing: polls a woken task, opens a gate (here or from
    /// another thread), or polls the consumer (when woken, or spuriously).
    /// Then checks the budgets.
    pub fn step(&mut self) -> Step {
        self.steps += 1;
        assert!(self.steps < 200_000, "no end after {} steps", self.steps);
        let closed = self.gates.closed_pulled();
        let consumer_woken = self.consumer_woken();
        let tasks_ready = self.executor.has_ready();
        if !tasks_ready && closed.is_empty() && !consumer_woken {
            // Nothing can happen any more but a spurious poll: it must show the
            // end, a panic, or the stream hangs.
            let step = self.poll_consumer();
            assert_ne!(
                step,
                Step::Progress,
                "hang: no task woken, no gate to open, the consumer not woken, and the stream pending"
            );
            return step;
        }
        let step = match self.rng.below(8) {
            0..=3 if tasks_ready => {
                let pick = self.rng.below(usize::MAX);
                self.executor.poll_one(pick);
                Step::Progress
            }
            4 | 5 if !closed.is_empty() => {
                let id = closed[self.rng.below(closed.len())];
                if self.rng.below(2) == 0 {
                    self.gates.open(id);
                } else {
                    let gates = self.gates.clone();
                    thread::spawn(move || gates.open(id)).join().unwrap();
                }
                Step::Progress
            }
            6 if consumer_woken => self.poll_consumer(),
            // A spurious poll, now and then.
            7 if self.rng.below(4) == 0 => self.poll_consumer(),
            _ => Step::Progress,
        };
        self.executor.assert_none_escaped("a spawned task");
        if step == Step::Progress {
            self.check_budgets();
        }
        step
    }

    /// The budgets, checked between any two steps. Until the stream is
    /// cancelled (by a failure) the counts also add up exactly: everything
    /// pulled and not yielded is running, queued or held.
    fn check_budgets(&mut self) {
        let (case, gates) = (&self.case, &self.gates);
        let stats = self
            .stream
            .as_ref()
            .expect("the stream was dropped")
            .stats();
        let (pulled, yielded, running) = (gates.pulled(), self.yielded.len(), gates.running());
        case.check_budgets(&stats, gates, yielded);
        if gates.fault_fired() {
            return;
        }
        // Work-conserving: once the stream was polled (which spawns the tasks)
        // and they are idle with the source not exhausted, every budget is
        // full, exactly.
        let idle = self.polled && !self.executor.has_ready() && pulled < case.items;
        let full = stats.active == case.workers || stats.active + stats.held == case.span();
        check(
            &[
                (
                    stats.pulled as usize == pulled,
                    "stats disagree with the source",
                ),
                (
                    pulled - yielded == stats.active + stats.waiting + stats.held,
                    "items lost or counted twice",
                ),
                (
                    !idle || stats.waiting == case.waiting,
                    "waiting budget left idle",
                ),
                (!idle || full, "worker budget left idle"),
                (
                    !idle || running == stats.active,
                    "a start claimed but not made",
                ),
            ],
            || format!("{case:?} {stats:?} pulled {pulled} yielded {yielded} running {running}"),
        );
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

    /// Drops the stream, then lets the executor run the cancelled tasks: every
    /// task ends and everything is dropped exactly once.
    pub fn drop_stream_and_check(&mut self) {
        let made = self.gates.counts().outputs_made;
        self.gates.drop_stream(self.stream.take());
        // Complete outputs sat in the stream's store and go with it at once;
        // none can be in a task, which hands its output over in the same poll.
        let dropped = self.gates.counts().outputs_dropped;
        assert_eq!(dropped, made, "untaken outputs not dropped with the stream");
        let mut rng = Rng::new(self.rng.next_u64());
        self.executor.run_until_idle(&mut rng);
        assert_eq!(self.executor.live_tasks(), 0, "tasks outlived the stream");
        self.executor.assert_none_escaped("a cancelled task");
        self.gates.check_all_dropped_once();
    }
}
