//! Helpers shared by the `spawn_*` tests: executors, a probe that counts what
//! the source and the futures do, and waits with a watchdog.
#![allow(dead_code)] // each test file uses a different part

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use bounded_buffered::{Spawned, Spawner};
use futures::channel::oneshot;
use futures::executor::LocalPool;
use futures::future::BoxFuture;
use futures::stream::{self, Stream, StreamExt};
use futures::task::{SpawnExt, noop_waker_ref};

/// How long a wait may take before the test fails as hung. Never reached when
/// the code works: it only turns a hang into a failure.
pub const WATCHDOG: Duration = Duration::from_secs(20);

/// A tokio runtime with two worker threads.
pub fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap()
}

/// A smol executor run by `threads` threads until the guard is dropped.
pub struct SmolPool {
    pub executor: Arc<smol::Executor<'static>>,
    stop: Option<smol::channel::Sender<()>>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl SmolPool {
    pub fn new(threads: usize) -> Self {
        let executor = Arc::new(smol::Executor::new());
        let (stop, stopped) = smol::channel::bounded::<()>(1);
        let threads = (0..threads)
            .map(|_| {
                let executor = Arc::clone(&executor);
                let stopped = stopped.clone();
                thread::spawn(move || {
                    let _ = smol::block_on(executor.run(stopped.recv()));
                })
            })
            .collect();
        Self {
            executor,
            stop: Some(stop),
            threads,
        }
    }
}

impl Drop for SmolPool {
    fn drop(&mut self) {
        drop(self.stop.take()); // closing the channel ends every `run`
        for thread in self.threads.drain(..) {
            thread.join().unwrap();
        }
    }
}

/// A deterministic executor for exact checks: tasks run only inside
/// [`Stepper::run_until_stalled`], which returns once no task can make progress.
pub struct Stepper {
    pool: LocalPool,
    spawned: mpsc::Receiver<BoxFuture<'static, ()>>,
    live: Arc<AtomicUsize>,
    spawns: Arc<AtomicUsize>,
}

impl Stepper {
    pub fn new() -> (Self, impl Spawner) {
        let (sender, spawned) = mpsc::channel();
        let spawns = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&spawns);
        let spawner = move |task: BoxFuture<'static, ()>| {
            counted.fetch_add(1, Ordering::SeqCst);
            sender.send(task).unwrap();
        };
        let stepper = Self {
            pool: LocalPool::new(),
            spawned,
            live: Arc::new(AtomicUsize::new(0)),
            spawns,
        };
        (stepper, spawner)
    }

    /// Runs every task until none can make progress.
    pub fn run_until_stalled(&mut self) {
        loop {
            let mut spawned_any = false;
            while let Ok(task) = self.spawned.try_recv() {
                spawned_any = true;
                let alive = Alive::new(&self.live);
                self.pool
                    .spawner()
                    .spawn(async move {
                        let _alive = alive;
                        task.await;
                    })
                    .unwrap();
            }
            self.pool.run_until_stalled();
            if !spawned_any {
                return;
            }
        }
    }

    /// Tasks spawned and not yet dropped by the pool.
    pub fn live_tasks(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// Calls of `Spawner::spawn` so far.
    pub fn spawns(&self) -> usize {
        self.spawns.load(Ordering::SeqCst)
    }
}

struct Alive(Arc<AtomicUsize>);

impl Alive {
    fn new(live: &Arc<AtomicUsize>) -> Self {
        live.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(live))
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Polls the stream once with a waker that does nothing (the stepper runs the
/// tasks, so nothing waits for the wake).
pub fn poll_once<T>(stream: &mut Spawned<T>) -> Poll<Option<T>> {
    stream.poll_next_unpin(&mut Context::from_waker(noop_waker_ref()))
}

/// Counts everything the source and its futures do, and lets tests wait for a
/// count to be reached.
#[derive(Default)]
pub struct Probe {
    pub pulled: AtomicUsize,
    pub started: AtomicUsize,
    pub running: AtomicUsize,
    pub peak_running: AtomicUsize,
    pub futures_dropped: AtomicUsize,
    pub outputs_made: AtomicUsize,
    pub outputs_dropped: AtomicUsize,
    pub source_dropped: AtomicBool,
    gates: Mutex<HashMap<usize, oneshot::Sender<()>>>,
    changed: Condvar,
    lock: Mutex<()>,
}

/// An item's output: its input index, and a token counted when it is dropped.
#[derive(Debug)]
pub struct Output {
    pub index: usize,
    _token: Token,
}

/// Which items wait for [`Probe::open`] before completing.
#[derive(Clone, Copy)]
pub enum Gates {
    All,
    None,
    Only(usize),
}

impl Gates {
    fn closes(self, index: usize) -> bool {
        match self {
            Self::All => true,
            Self::None => false,
            Self::Only(gated) => gated == index,
        }
    }
}

impl Probe {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn get(counter: &AtomicUsize) -> usize {
        counter.load(Ordering::SeqCst)
    }

    fn bump(&self, counter: &AtomicUsize) -> usize {
        let now = counter.fetch_add(1, Ordering::SeqCst) + 1;
        self.notify();
        now
    }

    fn notify(&self) {
        let _lock = self.lock.lock().unwrap();
        self.changed.notify_all();
    }

    /// Blocks the calling thread until `condition` holds; fails the test after
    /// [`WATCHDOG`].
    pub fn wait_until(&self, what: &str, condition: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + WATCHDOG;
        let mut lock = self.lock.lock().unwrap();
        while !condition(self) {
            let left = deadline
                .checked_duration_since(Instant::now())
                .unwrap_or_else(|| panic!("watchdog: still waiting for {what}"));
            lock = self.changed.wait_timeout(lock, left).unwrap().0;
        }
    }

    /// A source of `count` items; the items `gates` names wait for [`Probe::open`].
    pub fn source(
        self: &Arc<Self>,
        count: usize,
        gates: Gates,
    ) -> impl Stream<Item = impl Future<Output = Output> + Send + 'static + use<>> + Send + 'static + use<>
    {
        let source_token = SourceToken(Arc::clone(self));
        let probe = Arc::clone(self);
        stream::iter(0..count).map(move |index| {
            let _ = &source_token;
            probe.bump(&probe.pulled);
            probe.item(index, gates.closes(index))
        })
    }

    fn item(
        self: &Arc<Self>,
        index: usize,
        gated: bool,
    ) -> impl Future<Output = Output> + Send + 'static + use<> {
        let token = Token::new(self, |probe| &probe.futures_dropped);
        let gate = gated.then(|| {
            let (open, gate) = oneshot::channel();
            self.gates.lock().unwrap().insert(index, open);
            gate
        });
        let probe = Arc::clone(self);
        async move {
            let _token = token;
            probe.bump(&probe.started);
            let running = probe.running.fetch_add(1, Ordering::SeqCst) + 1;
            probe.peak_running.fetch_max(running, Ordering::SeqCst);
            if let Some(gate) = gate {
                let _ = gate.await;
            }
            probe.running.fetch_sub(1, Ordering::SeqCst);
            probe.bump(&probe.outputs_made);
            Output {
                index,
                _token: Token::new(&probe, |probe| &probe.outputs_dropped),
            }
        }
    }

    /// Lets the gated item `index` complete. Returns `false` if it was not
    /// pulled yet.
    pub fn open(&self, index: usize) -> bool {
        match self.gates.lock().unwrap().remove(&index) {
            Some(open) => {
                let _ = open.send(());
                true
            }
            None => false,
        }
    }

    /// Opens every gate of the items pulled so far.
    pub fn open_all(&self) {
        for (_, open) in self.gates.lock().unwrap().drain() {
            let _ = open.send(());
        }
    }

    /// Everything the source made was dropped exactly once: the source itself,
    /// every future, every output.
    pub fn all_dropped(&self) -> bool {
        self.source_dropped.load(Ordering::SeqCst)
            && Self::get(&self.futures_dropped) == Self::get(&self.pulled)
            && Self::get(&self.outputs_dropped) == Self::get(&self.outputs_made)
    }

    pub fn counts(&self) -> String {
        format!(
            "pulled {}, started {}, futures dropped {}, outputs made {}, outputs dropped {}, source dropped {}",
            Self::get(&self.pulled),
            Self::get(&self.started),
            Self::get(&self.futures_dropped),
            Self::get(&self.outputs_made),
            Self::get(&self.outputs_dropped),
            self.source_dropped.load(Ordering::SeqCst),
        )
    }
}

/// Counts its own drop in one of the probe's counters.
#[derive(Debug)]
struct Token {
    probe: Arc<Probe>,
    counter: fn(&Probe) -> &AtomicUsize,
}

impl Token {
    fn new(probe: &Arc<Probe>, counter: fn(&Probe) -> &AtomicUsize) -> Self {
        Self {
            probe: Arc::clone(probe),
            counter,
        }
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        self.probe.bump((self.counter)(&self.probe));
    }
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.counts())
    }
}

struct SourceToken(Arc<Probe>);

impl Drop for SourceToken {
    fn drop(&mut self) {
        self.0.source_dropped.store(true, Ordering::SeqCst);
        self.0.notify();
    }
}

/// Spins (yielding the thread) until `condition` holds; for conditions no
/// probe announces, such as an executor's task count. Fails after [`WATCHDOG`].
pub fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + WATCHDOG;
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "watchdog: still waiting for {what}"
        );
        thread::yield_now();
    }
}

/// A future that returns `Pending` once after waking itself: a yield that works
/// on any executor.
pub struct YieldNow(bool);

pub fn yield_now() -> YieldNow {
    YieldNow(false)
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Ends the whole test process with a message if it is still alive after
/// [`WATCHDOG`]: for waits that cannot time out themselves (an executor's
/// `block_on`). Dropping the guard disarms it.
pub struct Watchdog(Option<mpsc::Sender<()>>);

pub fn watchdog(what: &'static str) -> Watchdog {
    let (disarm, disarmed) = mpsc::channel::<()>();
    thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = disarmed.recv_timeout(WATCHDOG) {
            eprintln!("watchdog: {what} hung for {WATCHDOG:?}");
            std::process::exit(101);
        }
    });
    Watchdog(Some(disarm))
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.0.take());
    }
}
