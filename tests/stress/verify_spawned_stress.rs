//! Contract points 16 and 17 under stress across threads for the spawned mode:
//! many items run as worker tasks on tokio's multi-thread runtime (2 workers)
//! and on a smol executor run by 2 threads, ordered and unordered, while two
//! other OS threads complete their futures. Every output arrives exactly once
//! (in input order when ordered), the budgets hold throughout, and every task
//! ends once the stream is dropped. A lost wakeup shows as a hang, which a
//! watchdog thread turns into a failure.
//!
//! `BB_STRESS_ITEMS` sets the number of items per test (default 100 000, which
//! keeps the debug `cargo test` quick; use 1 000 000 in release).
//! `BB_STRESS_STALL_SECS` (default 30) is how long the watchdog waits for the
//! next sign of progress before it fails the test.

use std::sync::{Arc, Mutex};

use bounded_buffered::{BoundedStreamExt, Spawned, Spawner};
use support::stress::{Completers, each_exactly_once, items, stall_watchdog};
use support::{SmolPool, Watchdog, eventually, tokio_multi_thread};

const WORKERS: usize = 8;
const WAITING: usize = 16;
const WINDOW: usize = 32;

/// Drains `outputs`, checking that each of `0..items` arrives exactly once (in
/// order when `ordered`) and, every 1000 outputs, that the budgets hold.
async fn check_outputs(outputs: &mut Spawned<u64>, items: u64, ordered: bool, watchdog: &Watchdog) {
    let span = if ordered { WINDOW } else { WORKERS };
    each_exactly_once(outputs, items, ordered, 1_000, |outputs| {
        let stats = outputs.stats();
        assert!(stats.active <= WORKERS, "{stats:?}");
        assert!(stats.waiting <= WAITING, "{stats:?}");
        assert!(stats.active + stats.held <= span, "{stats:?}");
        watchdog.tick();
    })
    .await;
    let stats = outputs.stats();
    assert_eq!((stats.pulled, stats.completed), (items, items));
    assert!(stats.peak_active <= WORKERS, "{stats:?}");
    assert!(stats.peak_waiting <= WAITING, "{stats:?}");
    assert!(stats.peak_held <= span, "{stats:?}");
}

fn spawned(
    completers: &Completers,
    items: u64,
    ordered: bool,
    executor: impl Spawner,
) -> Spawned<u64> {
    let stream = completers.source(items, true).bounded(WORKERS, WAITING);
    if ordered {
        stream.ordered(WINDOW).spawn_on(executor)
    } else {
        stream.spawn_on(executor)
    }
}

fn on_tokio(name: &'static str, ordered: bool) {
    let watchdog = stall_watchdog(name);
    let items = items();
    let completers = Completers::start();
    let runtime = tokio_multi_thread();
    let mut outputs = spawned(&completers, items, ordered, runtime.handle().clone());
    runtime.block_on(check_outputs(&mut outputs, items, ordered, &watchdog));
    drop(outputs);
    let metrics = runtime.metrics();
    eventually("every task to end", || metrics.num_alive_tasks() == 0);
    completers.stop();
}

fn on_smol(name: &'static str, ordered: bool) {
    let watchdog = stall_watchdog(name);
    let items = items();
    let completers = Completers::start();
    let pool = SmolPool::new(2);
    let mut outputs = spawned(&completers, items, ordered, Arc::clone(&pool.executor));
    smol::block_on(check_outputs(&mut outputs, items, ordered, &watchdog));
    drop(outputs);
    eventually("every task to end", || pool.executor.is_empty());
    drop(pool);
    completers.stop();
}

/// The stress tests run one at a time: each wants the machine's cores, and a
/// test starved by another would only be slower, but its watchdog less useful.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn unordered_on_tokio_multi_thread_with_futures_completed_on_os_threads() {
    let _one = exclusive();
    on_tokio("tokio, unordered", false);
}

#[test]
fn ordered_on_tokio_multi_thread_with_futures_completed_on_os_threads() {
    let _one = exclusive();
    on_tokio("tokio, ordered", true);
}

#[test]
fn unordered_on_smol_executor_with_futures_completed_on_os_threads() {
    let _one = exclusive();
    on_smol("smol, unordered", false);
}

#[test]
fn ordered_on_smol_executor_with_futures_completed_on_os_threads() {
    let _one = exclusive();
    on_smol("smol, ordered", true);
}
