//! The executors the tests run on: tokio's runtimes, a smol pool, and a
//! deterministic executor stepped by the test.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;

use bounded_buffered::Spawner;
use futures::future::BoxFuture;

use super::gate::lock;
use super::rng::Rng;
use super::watchdog::eventually;

/// A tokio runtime with two worker threads.
pub fn tokio_multi_thread() -> tokio::runtime::Runtime {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

pub fn tokio_current_thread() -> tokio::runtime::Runtime {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_all().build().expect("a tokio runtime")
}

/// A smol executor run by `threads` threads until the pool is dropped.
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
                let (executor, stopped) = (Arc::clone(&executor), stopped.clone());
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

/// A multi-threaded executor, tokio's or smol's, for a test that must hold on
/// both: write it once with [`both_pools!`](crate::both_pools).
pub enum Pool {
    /// [`tokio_multi_thread`]: two worker threads.
    Tokio(tokio::runtime::Runtime),
    /// A [`SmolPool`] of three threads.
    Smol(SmolPool),
}

impl Pool {
    pub fn tokio() -> Self {
        Pool::Tokio(tokio_multi_thread())
    }

    pub fn smol() -> Self {
        Pool::Smol(SmolPool::new(3))
    }

    /// The crate's own spawner for the pool (a `Handle`, an
    /// `Arc<Executor>`), boxed so both kinds have one type.
    pub fn spawner(&self) -> Box<dyn Fn(BoxFuture<'static, ()>) + Send> {
        fn boxed(spawner: impl Spawner) -> Box<dyn Fn(BoxFuture<'static, ()>) + Send> {
            Box::new(move |task| spawner.spawn(task))
        }
        match self {
            Pool::Tokio(runtime) => boxed(runtime.handle().clone()),
            Pool::Smol(pool) => boxed(Arc::clone(&pool.executor)),
        }
    }

    /// Runs `future` to completion on the test's thread (tokio: inside the
    /// runtime).
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        match self {
            Pool::Tokio(runtime) => runtime.block_on(future),
            Pool::Smol(_) => smol::block_on(future),
        }
    }

    /// Waits until every task spawned on it has ended.
    pub fn wait_for_no_tasks(&self) {
        let what = "every task to end";
        match self {
            Pool::Tokio(runtime) => {
                let metrics = runtime.metrics();
                eventually(what, || metrics.num_alive_tasks() == 0);
            }
            Pool::Smol(pool) => eventually(what, || pool.executor.is_empty()),
        }
    }
}

/// A test written once, run on both pools: `both_pools! { fn name(pool) { ..
/// } }` makes a module `name` with the tests `tokio_multi_thread` and
/// `smol_executor`, each running the body with `pool` a [`Pool`] of that
/// kind.
#[macro_export]
macro_rules! both_pools {
    ($($(#[$meta:meta])* fn $name:ident($pool:ident) $body:block)*) => {$(
        $crate::one_test_per_case! {
            $(#[$meta])* $name($pool) $body,
            tokio_multi_thread = $crate::Pool::tokio(),
            smol_executor = $crate::Pool::smol(),
        }
    )*};
}

/// An executor that polls one task at a time, the one the caller picks among
/// those woken, and only when asked: the test decides the interleaving, and
/// checks the stream's state between any two task polls.
#[derive(Default)]
pub struct StepExecutor {
    /// Tasks handed to the spawner and not yet taken in.
    inbox: Arc<Mutex<Vec<BoxFuture<'static, ()>>>>,
    /// Calls of `Spawner::spawn` so far.
    spawns: Arc<AtomicUsize>,
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
            lock(&self.ready).push(self.id);
        }
    }
}

impl StepExecutor {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn spawner(&self) -> impl Spawner + use<> {
        let (inbox, spawns) = (Arc::clone(&self.inbox), Arc::clone(&self.spawns));
        move |task: BoxFuture<'static, ()>| {
            spawns.fetch_add(1, SeqCst);
            lock(&inbox).push(task);
        }
    }

    /// Calls of the spawner so far.
    pub fn spawns(&self) -> usize {
        self.spawns.load(SeqCst)
    }

    fn take_in_spawned(&mut self) {
        let spawned = std::mem::take(&mut *lock(&self.inbox));
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
        !lock(&self.ready).is_empty()
    }

    /// Tasks woken (or spawned) and not polled since.
    pub fn ready_tasks(&mut self) -> usize {
        self.take_in_spawned();
        lock(&self.ready).len()
    }

    /// Polls one woken task, picked by `pick`. Returns `false` if none was
    /// woken. A task whose poll panics is dropped and its panic recorded in
    /// [`escaped`](Self::escaped), as tokio and smol do.
    pub fn poll_one(&mut self, pick: usize) -> bool {
        self.take_in_spawned();
        let id = {
            let mut ready = lock(&self.ready);
            if ready.is_empty() {
                return false;
            }
            let at = pick % ready.len();
            ready.swap_remove(at)
        };
        let Some((task, wake)) = &mut self.tasks[id] else {
            return true; // a late wake of a task that already completed
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
                self.escaped.push(super::panic::message(&*payload));
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

    /// Polls woken tasks in a fixed order until none is woken; fails if a panic
    /// escaped a task.
    pub fn run_until_stalled(&mut self) {
        self.run_until_idle(&mut Rng::new(0));
        self.assert_none_escaped("a task");
    }

    pub fn assert_none_escaped(&self, from: &str) {
        let escaped = &self.escaped;
        assert!(
            escaped.is_empty(),
            "a panic escaped {from} into the executor: {escaped:?}"
        );
    }

    /// Tasks spawned and not completed.
    pub fn live_tasks(&mut self) -> usize {
        self.take_in_spawned();
        self.tasks.iter().filter(|task| task.is_some()).count()
    }
}
