//! Shared by the `verify_spawned_*` tests: an executor whose schedule is drawn
//! at random, items whose every drop is counted per item, and a runner that
//! interleaves task polls, gate openings and consumer polls at random while it
//! checks the budgets after every single step.
#![allow(dead_code)] // each test file uses a different part

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex, Once};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use bounded_buffered::{BoundedStreamExt, Spawned, Spawner, Stats};
use futures::future::BoxFuture;
use futures::stream::{self, Stream, StreamExt};
use futures_test::task::{AwokenCount, new_count_waker};

/// Every injected panic message starts with this, so the quiet hook can tell
/// them from real failures.
pub const INJECTED: &str = "injected panic";

/// The stream's panic when polled again after it re-raised one.
pub const POLLED_AFTER_PANIC: &str = "polled after it re-raised a panic";

/// Keeps the expected panics (injected ones, and the stream's refusal to be
/// polled after re-raising one) out of the test output; any other panic still
/// reports as usual.
pub fn quiet_injected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let message = panic_message(info.payload());
            // `starts_with`: a failed assertion that quotes an injected
            // panic must still show.
            if !message.starts_with(INJECTED) && !message.contains(POLLED_AFTER_PANIC) {
                default(info);
            }
        }));
    });
}

pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        message.to_string()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        String::new()
    }
}

/// A small deterministic generator (splitmix64): any seed, including 0, gives a
/// full-period sequence, so proptest can shrink seeds freely.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound > 0`).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

/// An executor that polls one task at a time, the one the caller picks among
/// those woken, and only when asked: the test decides the interleaving, and
/// checks the stream's state between any two task polls.
pub struct RandomExecutor {
    /// Tasks handed to the spawner and not yet taken in.
    inbox: Arc<Mutex<Vec<BoxFuture<'static, ()>>>>,
    /// Ids of the woken tasks, each listed at most once.
    ready: Arc<Mutex<Vec<usize>>>,
    /// Every task taken in, by id; `None` once it completed.
    tasks: Vec<Option<(BoxFuture<'static, ()>, Arc<TaskWake>)>>,
    /// Messages of the panics that escaped a task's poll: spawned tasks are
    /// meant to catch their own.
    pub escaped: Vec<String>,
}

struct TaskWake {
    id: usize,
    listed: AtomicBool,
    ready: Arc<Mutex<Vec<usize>>>,
}

impl Wake for TaskWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.listed.swap(true, SeqCst) {
            self.ready.lock().unwrap().push(self.id);
        }
    }
}

impl RandomExecutor {
    pub fn new() -> Self {
        Self {
            inbox: Arc::default(),
            ready: Arc::default(),
            tasks: Vec::new(),
            escaped: Vec::new(),
        }
    }

    pub fn spawner(&self) -> impl Spawner + use<> {
        let inbox = Arc::clone(&self.inbox);
        move |task: BoxFuture<'static, ()>| inbox.lock().unwrap().push(task)
    }

    fn take_in_spawned(&mut self) {
        let spawned = std::mem::take(&mut *self.inbox.lock().unwrap());
        for task in spawned {
            let wake = Arc::new(TaskWake {
                id: self.tasks.len(),
                listed: AtomicBool::new(false),
                ready: Arc::clone(&self.ready),
            });
            wake.wake_by_ref();
            self.tasks.push(Some((task, wake)));
        }
    }

    /// Whether some task was woken (or spawned) and waits to be polled.
    pub fn has_ready(&mut self) -> bool {
        self.take_in_spawned();
        !self.ready.lock().unwrap().is_empty()
    }

    /// Polls one woken task, picked by `pick`. Returns `false` if none was woken.
    /// A task whose poll panics is dropped and its panic recorded in
    /// [`escaped`](Self::escaped), as tokio and smol do.
    pub fn poll_one(&mut self, pick: usize) -> bool {
        self.take_in_spawned();
        let id = {
            let mut ready = self.ready.lock().unwrap();
            if ready.is_empty() {
                return false;
            }
            let at = pick % ready.len();
            ready.swap_remove(at)
        };
        let Some((task, wake)) = &mut self.tasks[id] else {
            // A late wake of a task that already completed.
            return true;
        };
        // Unlisted before the poll, so a wake during the poll lists it again.
        wake.listed.store(false, SeqCst);
        let waker = Waker::from(Arc::clone(wake));
        let poll = panic::catch_unwind(AssertUnwindSafe(|| {
            task.as_mut().poll(&mut Context::from_waker(&waker))
        }));
        match poll {
            Ok(Poll::Pending) => {}
            Ok(Poll::Ready(())) => self.tasks[id] = None,
            Err(payload) => {
                // As tokio and smol do: the task is gone, its panic recorded.
                self.escaped.push(panic_message(&*payload));
                self.tasks[id] = None;
            }
        }
        true
    }

    /// Polls woken tasks in a random order until none is woken.
    pub fn run_until_idle(&mut self, rng: &mut Rng) {
        let mut polls = 0u64;
        while self.poll_one(rng.below(usize::MAX)) {
            polls += 1;
            assert!(polls < 1_000_000, "the tasks keep waking each other");
        }
    }

    /// Tasks spawned and not completed.
    pub fn live_tasks(&mut self) -> usize {
        self.take_in_spawned();
        self.tasks.iter().filter(|task| task.is_some()).count()
    }
}

/// Where the one injected panic goes, if anywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    /// Item `k` panics when polled after its gate opened.
    PollOf(usize),
    /// Item `k` panics in its first poll.
    FirstPollOf(usize),
    /// The source panics instead of yielding item `k`.
    SourceAt(usize),
    /// Item `k`'s future panics in its destructor (after its drop is counted),
    /// wherever that runs: in a worker after it completed, or when a cancelled
    /// task drops its work.
    DropOf(usize),
}

/// What a gate knows: whether the test opened it, and who to wake when it does.
#[derive(Default)]
struct Gate {
    open: bool,
    waker: Option<Waker>,
}

/// Per-item counters shared by the source, the futures and the outputs.
pub struct Ledger {
    pub items: usize,
    fault: Fault,
    pub fault_fired: AtomicBool,
    pulled: AtomicUsize,
    /// Futures polled at least once and neither complete nor dropped.
    running: AtomicUsize,
    source_drops: AtomicUsize,
    gates: Vec<Mutex<Gate>>,
    future_drops: Vec<AtomicUsize>,
    outputs_made: Vec<AtomicBool>,
    output_drops: Vec<AtomicUsize>,
    /// Signalled when an item is pulled, for threads that wait for gates to open.
    changed: Condvar,
    lock: Mutex<()>,
}

impl Ledger {
    pub fn new(items: usize, fault: Fault) -> Arc<Self> {
        let counts = || (0..items).map(|_| AtomicUsize::new(0)).collect();
        Arc::new(Self {
            items,
            fault,
            fault_fired: AtomicBool::new(false),
            pulled: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            source_drops: AtomicUsize::new(0),
            gates: (0..items).map(|_| Mutex::default()).collect(),
            future_drops: counts(),
            outputs_made: (0..items).map(|_| AtomicBool::new(false)).collect(),
            output_drops: counts(),
            changed: Condvar::new(),
            lock: Mutex::new(()),
        })
    }

    pub fn pulled(&self) -> usize {
        self.pulled.load(SeqCst)
    }

    pub fn running(&self) -> usize {
        self.running.load(SeqCst)
    }

    pub fn outputs_made(&self) -> usize {
        let made = self.outputs_made.iter();
        made.filter(|made| made.load(SeqCst)).count()
    }

    pub fn outputs_dropped(&self) -> usize {
        self.output_drops
            .iter()
            .map(|drops| drops.load(SeqCst))
            .sum()
    }

    fn notify(&self) {
        let _lock = self.lock.lock().unwrap();
        self.changed.notify_all();
    }

    /// The source: `items` gated futures; it panics at `Fault::SourceAt`.
    pub fn source(self: &Arc<Self>) -> impl Stream<Item = GateFuture> + Send + 'static + use<> {
        let dropped = SourceDropped(Arc::clone(self));
        let ledger = Arc::clone(self);
        stream::iter(0..self.items).map(move |index| {
            let _ = &dropped;
            if ledger.fault == Fault::SourceAt(index) {
                ledger.fault_fired.store(true, SeqCst);
                panic!("{INJECTED} in the source at item {index}");
            }
            ledger.pulled.fetch_add(1, SeqCst);
            ledger.notify();
            GateFuture {
                ledger: Arc::clone(&ledger),
                index,
                started: false,
                finished: false,
            }
        })
    }

    /// Items pulled whose gate is still closed.
    pub fn closed_gates(&self) -> Vec<usize> {
        self.closed_gates_of(self.pulled())
    }

    fn closed_gates_of(&self, pulled: usize) -> Vec<usize> {
        (0..pulled)
            .filter(|&index| !self.gates[index].lock().unwrap().open)
            .collect()
    }

    /// Opens item `index`'s gate and wakes its future if it waits. Returns
    /// `false` if it was open already.
    pub fn open(&self, index: usize) -> bool {
        let waker = {
            let mut gate = self.gates[index].lock().unwrap();
            if gate.open {
                return false;
            }
            gate.open = true;
            gate.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }

    /// Blocks until some pulled item has a closed gate, or every item was
    /// pulled and opened, or the source is gone (`None`). Fails the test after
    /// `watchdog`.
    pub fn wait_for_closed_gates(&self, watchdog: Duration) -> Option<Vec<usize>> {
        let deadline = Instant::now() + watchdog;
        let mut lock = self.lock.lock().unwrap();
        loop {
            // One reading of `pulled` for both checks, after the source's
            // state: an item pulled in between would otherwise be taken for
            // opened.
            let source_gone = self.source_drops.load(SeqCst) > 0;
            let pulled = self.pulled();
            let closed = self.closed_gates_of(pulled);
            if !closed.is_empty() {
                return Some(closed);
            }
            if pulled == self.items || source_gone {
                return None;
            }
            let left = deadline
                .checked_duration_since(Instant::now())
                .unwrap_or_else(|| panic!("watchdog: no item pulled for {watchdog:?}"));
            lock = self.changed.wait_timeout(lock, left).unwrap().0;
        }
    }

    /// Everything made was dropped exactly once: the source, every pulled
    /// future, every output; nothing was made beyond what was pulled.
    pub fn check_all_dropped_once(&self) {
        assert_eq!(self.source_drops.load(SeqCst), 1, "source drops");
        let pulled = self.pulled();
        for index in 0..self.items {
            let future_drops = self.future_drops[index].load(SeqCst);
            let output_drops = self.output_drops[index].load(SeqCst);
            let made = self.outputs_made[index].load(SeqCst);
            if index < pulled {
                assert_eq!(future_drops, 1, "drops of item {index}'s future");
            } else {
                assert_eq!(future_drops, 0, "item {index} was never pulled");
            }
            assert_eq!(
                output_drops,
                usize::from(made),
                "drops of item {index}'s output (made: {made})"
            );
        }
        assert_eq!(self.running(), 0, "futures still counted as running");
    }
}

struct SourceDropped(Arc<Ledger>);

impl Drop for SourceDropped {
    fn drop(&mut self) {
        self.0.source_drops.fetch_add(1, SeqCst);
        self.0.notify();
    }
}

/// Item `index`: completes once its gate is open.
pub struct GateFuture {
    ledger: Arc<Ledger>,
    index: usize,
    started: bool,
    finished: bool,
}

impl Future for GateFuture {
    type Output = Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Output> {
        let index = self.index;
        assert!(!self.finished, "item {index} polled after it completed");
        let ledger = Arc::clone(&self.ledger);
        if !self.started {
            self.started = true;
            ledger.running.fetch_add(1, SeqCst);
            if ledger.fault == Fault::FirstPollOf(index) {
                ledger.fault_fired.store(true, SeqCst);
                panic!("{INJECTED} in the first poll of item {index}");
            }
        }
        let mut gate = ledger.gates[index].lock().unwrap();
        if !gate.open {
            match &mut gate.waker {
                Some(waker) => waker.clone_from(cx.waker()),
                None => gate.waker = Some(cx.waker().clone()),
            }
            return Poll::Pending;
        }
        drop(gate);
        if ledger.fault == Fault::PollOf(index) {
            ledger.fault_fired.store(true, SeqCst);
            panic!("{INJECTED} in the poll of item {index}");
        }
        self.finished = true;
        ledger.running.fetch_sub(1, SeqCst);
        let made = ledger.outputs_made[index].swap(true, SeqCst);
        assert!(!made, "item {index} completed twice");
        Poll::Ready(Output { ledger, index })
    }
}

impl Drop for GateFuture {
    fn drop(&mut self) {
        if self.started && !self.finished {
            self.ledger.running.fetch_sub(1, SeqCst);
        }
        self.ledger.future_drops[self.index].fetch_add(1, SeqCst);
        if self.ledger.fault == Fault::DropOf(self.index) && !thread::panicking() {
            self.ledger.fault_fired.store(true, SeqCst);
            panic!("{INJECTED} in the drop of item {}", self.index);
        }
    }
}

/// An item's output; its drop is counted per item.
pub struct Output {
    ledger: Arc<Ledger>,
    pub index: usize,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Output({})", self.index)
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.ledger.output_drops[self.index].fetch_add(1, SeqCst);
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

/// A spawned stream driven by a random interleaving of task polls (on the
/// [`RandomExecutor`]), gate openings (on this thread or another) and consumer
/// polls, with the budgets checked after every step.
pub struct Run {
    pub case: Case,
    pub ledger: Arc<Ledger>,
    pub executor: RandomExecutor,
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
    pub steps: usize,
}

impl Run {
    pub fn new(case: Case) -> Self {
        let ledger = Ledger::new(case.items, case.fault);
        let executor = RandomExecutor::new();
        let stream = ledger.source().bounded(case.workers, case.waiting);
        let stream = match case.window {
            Some(window) => stream.ordered(window),
            None => stream,
        };
        let stream = stream.spawn_on(executor.spawner());
        let (waker, wakes) = new_count_waker();
        Self {
            rng: Rng::new(case.seed),
            case,
            ledger,
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

    fn stream(&mut self) -> &mut Spawned<Output> {
        self.stream.as_mut().expect("the stream was dropped")
    }

    /// Polls the stream once. `Ready` although its waker was not woken since
    /// it last returned `Pending` means a wake was lost.
    fn poll_consumer(&mut self) -> Step {
        let woken = match self.pending_at {
            None => true,
            Some(at) => self.wakes.get() > at,
        };
        self.polled = true;
        let mut cx = Context::from_waker(&self.waker);
        let stream = self.stream.as_mut().expect("the stream was dropped");
        let poll = panic::catch_unwind(AssertUnwindSafe(|| stream.poll_next_unpin(&mut cx)));
        let poll = match poll {
            Ok(poll) => poll,
            Err(payload) => return Step::Panicked(panic_message(&*payload)),
        };
        match poll {
            Poll::Pending => {
                self.pending_at = Some(self.wakes.get());
                Step::Progress
            }
            Poll::Ready(next) => {
                assert!(
                    woken,
                    "lost wakeup: the stream had something to return but did not wake its consumer"
                );
                self.pending_at = None;
                match next {
                    Some(output) => {
                        self.yielded.push(output.index);
                        Step::Progress
                    }
                    None => Step::Finished,
                }
            }
        }
    }

    /// Does one random thing: polls a woken task, opens a gate (here or from
    /// another thread), or polls the consumer (when woken, or spuriously).
    /// Then checks the budgets.
    pub fn step(&mut self) -> Step {
        self.steps += 1;
        assert!(self.steps < 200_000, "no end after {} steps", self.steps);
        let closed = self.ledger.closed_gates();
        let consumer_woken = match self.pending_at {
            None => true,
            Some(at) => self.wakes.get() > at,
        };
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
                let index = closed[self.rng.below(closed.len())];
                if self.rng.below(2) == 0 {
                    self.ledger.open(index);
                } else {
                    let ledger = Arc::clone(&self.ledger);
                    thread::spawn(move || ledger.open(index)).join().unwrap();
                }
                Step::Progress
            }
            6 if consumer_woken => self.poll_consumer(),
            // A spurious poll, now and then.
            7 if self.rng.below(4) == 0 => self.poll_consumer(),
            _ => Step::Progress,
        };
        assert!(
            self.executor.escaped.is_empty(),
            "a panic escaped a spawned task into the executor: {:?}",
            self.executor.escaped
        );
        if step == Step::Progress {
            self.check_budgets();
        }
        step
    }

    /// The budgets, checked between any two steps. Until the stream is
    /// cancelled (by a failure) the counts also add up exactly: everything
    /// pulled and not yielded is running, queued or held.
    pub fn check_budgets(&mut self) {
        let case = self.case.clone();
        let span = case.span();
        let stats: Stats = self.stream().stats();
        let pulled = self.ledger.pulled();
        let yielded = self.yielded.len();
        let running = self.ledger.running();
        let context =
            || format!("{case:?} {stats:?} pulled {pulled} yielded {yielded} running {running}");
        assert!(
            stats.active <= case.workers,
            "active over budget: {}",
            context()
        );
        assert!(
            stats.waiting <= case.waiting,
            "waiting over budget: {}",
            context()
        );
        assert!(
            stats.active + stats.held <= span,
            "held over budget: {}",
            context()
        );
        assert!(
            running <= case.workers.min(span),
            "futures running over budget: {}",
            context()
        );
        assert!(
            running + stats.held <= span,
            "running and held over budget: {}",
            context()
        );
        assert!(
            pulled - yielded <= span + case.waiting,
            "source too far ahead: {}",
            context()
        );
        if self.ledger.fault_fired.load(SeqCst) {
            return;
        }
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
        // Work-conserving: once the stream was polled (which spawns the tasks)
        // and they are idle with the source not exhausted, every budget is
        // full, exactly.
        if self.polled && !self.executor.has_ready() && pulled < case.items {
            assert_eq!(
                stats.waiting,
                case.waiting,
                "waiting budget left idle: {}",
                context()
            );
            assert!(
                stats.active == case.workers || stats.active + stats.held == span,
                "worker budget left idle: {}",
                context()
            );
            assert_eq!(
                running,
                stats.active,
                "a start claimed but not made: {}",
                context()
            );
        }
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
        let made = self.ledger.outputs_made();
        drop(self.stream.take());
        // Complete outputs sat in the stream's store and go with it at once;
        // none can be in a task, which hands its output over in the same poll.
        assert_eq!(
            self.ledger.outputs_dropped(),
            made,
            "untaken outputs not dropped with the stream"
        );
        let mut rng = Rng::new(self.rng.next());
        self.executor.run_until_idle(&mut rng);
        assert_eq!(self.executor.live_tasks(), 0, "tasks outlived the stream");
        assert!(
            self.executor.escaped.is_empty(),
            "a panic escaped a cancelled task into the executor: {:?}",
            self.executor.escaped
        );
        self.ledger.check_all_dropped_once();
    }
}
