//! Contract points 1, 2 to 5 and 12 (16 and 17 spawned) under stress across
//! threads, in both modes, ordered and unordered: many items whose futures
//! are completed by two other OS threads, the stream polled on
//! `futures::executor` in place, or spawned on tokio's multi-thread runtime
//! (2 workers) or a smol executor run by 2 threads; and in place, items that
//! are tokio tasks with the consumer itself a task on the multi-thread
//! runtime. Every output arrives exactly once (in input order when ordered),
//! the budgets hold throughout, and (spawned) every task ends once the stream
//! is dropped. A lost wakeup shows as a hang, which a watchdog thread turns
//! into a failure.
//!
//! `BB_STRESS_ITEMS` sets the number of items per test (default 20 000, 625
//! times the window, which keeps the debug `cargo test` quick; the release
//! run of `.ci/run` uses 1 000 000). `BB_STRESS_STALL_SECS` (default 30)
//! is how long the watchdog waits for the next sign of progress before it
//! fails the test.

use std::sync::{Mutex, MutexGuard, PoisonError, mpsc};
use std::thread;
use std::time::Duration;

use bounded_buffered::{BoundedBuffered, BoundedStreamExt};
use futures::channel::oneshot;
use futures::stream::{self, Stream, StreamExt};
use support::{Observe, OrderedIf, Pool, Watchdog, both_pools, tokio_multi_thread, yield_now};

const WORKERS: usize = 8;
const WAITING: usize = 16;
const WINDOW: usize = 32;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// The stress tests run one at a time: each wants the machine's cores, and a
/// test starved by another would only be slower, but its watchdog less useful.
/// Each gets its item count, and a watchdog that fails the binary when no
/// output came for `BB_STRESS_STALL_SECS`: a lost wakeup hangs the stream.
fn exclusive(name: &'static str) -> (MutexGuard<'static, ()>, u64, Watchdog) {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let limit = Duration::from_secs(env_or("BB_STRESS_STALL_SECS", 30));
    (
        one,
        env_or("BB_STRESS_ITEMS", 20_000),
        Watchdog::with_limit(name, limit),
    )
}

/// Two OS threads that complete the futures: each item sends its oneshot sender
/// to one of them when it is pulled, so the completion races the first poll,
/// and every wake comes from a thread the executor does not own.
struct Completers {
    requests: Vec<mpsc::Sender<(u64, oneshot::Sender<u64>)>>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Completers {
    fn start() -> Self {
        let (requests, threads) = (0..2)
            .map(|_| {
                let (requests, incoming) = mpsc::channel::<(u64, oneshot::Sender<u64>)>();
                let thread = thread::spawn(move || {
                    for (id, sender) in incoming {
                        let _ = sender.send(id);
                    }
                });
                (requests, thread)
            })
            .unzip();
        Self { requests, threads }
    }

    /// `items` futures, each completed by a completer thread, every third
    /// after one yield (so some are polled before and some after their
    /// completion), under the budgets; ordered if `ordered`.
    fn stream(
        &self,
        items: u64,
        ordered: bool,
    ) -> BoundedBuffered<
        impl Stream<Item = impl Future<Output = u64> + Send + use<>> + Send + Unpin + use<>,
    > {
        let requests = self.requests.clone();
        let source = stream::iter(0..items).map(move |id| {
            let (sender, receiver) = oneshot::channel();
            requests[id as usize % requests.len()]
                .send((id, sender))
                .expect("a completer thread stopped");
            async move {
                if id % 3 == 0 {
                    yield_now().await;
                }
                receiver.await.expect("a completer dropped a sender")
            }
        });
        let window = ordered.then_some(WINDOW);
        source.bounded(WORKERS, WAITING).ordered_if(window)
    }

    fn stop(self) {
        drop(self.requests);
        for thread in self.threads {
            thread.join().unwrap();
        }
    }
}

/// Drains `outputs`, checking that each of `0..items` arrives exactly once (in
/// order when `ordered`) and, every 1000 outputs, that the budgets hold (and
/// ticking the watchdog); at the end, the totals and the peaks.
async fn check_outputs<S: Observe<u64> + Unpin>(
    outputs: &mut S,
    items: u64,
    ordered: bool,
    watchdog: &Watchdog,
) {
    let span = if ordered { WINDOW } else { WORKERS };
    let mut seen = vec![false; items as usize];
    let mut count = 0u64;
    while let Some(id) = outputs.next().await {
        if ordered {
            assert_eq!(id, count, "ordered output out of order");
        }
        assert!(
            !std::mem::replace(&mut seen[id as usize], true),
            "output {id} twice"
        );
        count += 1;
        if count % 1_000 == 0 {
            let stats = outputs.stats();
            assert!(stats.active <= WORKERS, "{stats:?}");
            assert!(stats.waiting <= WAITING, "{stats:?}");
            assert!(stats.active + stats.held <= span, "{stats:?}");
            watchdog.tick();
        }
    }
    assert_eq!(count, items, "outputs missing");
    let stats = outputs.stats();
    assert_eq!((stats.pulled, stats.completed), (items, items));
    assert!(stats.peak_active <= WORKERS, "{stats:?}");
    assert!(stats.peak_waiting <= WAITING, "{stats:?}");
    assert!(stats.peak_held <= span, "{stats:?}");
}

/// In place: every wake comes from another OS thread, racing the consumer's
/// polls and parks.
fn in_place_on_os_threads(name: &'static str, ordered: bool) {
    let (_one, items, watchdog) = exclusive(name);
    let completers = Completers::start();
    let mut outputs = completers.stream(items, ordered);
    futures::executor::block_on(check_outputs(&mut outputs, items, ordered, &watchdog));
    drop(outputs); // it holds the completers' channels
    completers.stop();
}

/// In place, items that are tasks spawned on a multi-thread runtime, and the
/// consumer itself a task there, so it moves between worker threads and
/// re-registers its waker.
fn in_place_on_tokio_workers(name: &'static str, ordered: bool) {
    let (_one, items, watchdog) = exclusive(name);
    let runtime = tokio_multi_thread();
    let consumer = runtime.spawn(async move {
        let source = stream::iter(0..items).map(|id| {
            let task = tokio::spawn(async move {
                // Half the tasks finish at once, half after a trip through the scheduler.
                if id % 2 == 0 {
                    tokio::task::yield_now().await;
                }
                id
            });
            async move { task.await.expect("task panicked") }
        });
        let window = ordered.then_some(WINDOW);
        let mut outputs = source.bounded(WORKERS, WAITING).ordered_if(window);
        check_outputs(&mut outputs, items, ordered, &watchdog).await;
    });
    runtime.block_on(consumer).unwrap();
}

fn spawned(pool: Pool, name: &'static str, ordered: bool) {
    let (_one, items, watchdog) = exclusive(name);
    let completers = Completers::start();
    let stream = completers.stream(items, ordered);
    let mut outputs = stream.spawn_on(pool.spawner());
    pool.block_on(check_outputs(&mut outputs, items, ordered, &watchdog));
    drop(outputs);
    pool.wait_for_no_tasks();
    drop(pool);
    completers.stop();
}

#[test]
fn futures_completed_on_os_threads_unordered_all_arrive() {
    in_place_on_os_threads("os threads, unordered", false);
}

#[test]
fn futures_completed_on_os_threads_ordered_all_arrive_in_order() {
    in_place_on_os_threads("os threads, ordered", true);
}

#[test]
fn futures_on_tokio_worker_threads_unordered_all_arrive() {
    in_place_on_tokio_workers("tokio workers, unordered", false);
}

#[test]
fn futures_on_tokio_worker_threads_ordered_all_arrive_in_order() {
    in_place_on_tokio_workers("tokio workers, ordered", true);
}

both_pools! {
    fn unordered_spawned_with_futures_completed_on_os_threads(pool) {
        spawned(pool, "spawned, unordered", false);
    }

    fn ordered_spawned_with_futures_completed_on_os_threads(pool) {
        spawned(pool, "spawned, ordered", true);
    }
}
