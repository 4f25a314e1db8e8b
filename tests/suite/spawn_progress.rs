//! Contract point 18: spawned futures make progress while the consumer is busy
//! elsewhere, and run in parallel on a multi-threaded executor.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bounded_buffered::{BoundedStreamExt, Spawned, Stats};
use futures::channel::oneshot;
use futures::{StreamExt, stream};
use support::{HANG_LIMIT, SmolPool, Watchdog, tokio_multi_thread, yield_now};

/// The futurelock shape: after taking its first output, the consumer awaits
/// something that only the other in-flight futures produce. In place that
/// deadlocks, since nobody polls them; spawned, they finish on their own.
fn consumer_waits_for_the_workers(
    spawn: impl FnOnce(Vec<futures::future::BoxFuture<'static, usize>>) -> Spawned<usize>,
    block_on: impl FnOnce(futures::future::BoxFuture<'_, ()>),
) {
    const WORKERS: usize = 3;
    let finished = Arc::new(AtomicUsize::new(0));
    let (all_done, all_done_seen) = oneshot::channel();
    let all_done = Arc::new(std::sync::Mutex::new(Some(all_done)));
    // The first item completes at once; the others each need another task to
    // poll them (a yield), and the last of them to finish signals the consumer.
    let items = (0..WORKERS)
        .map(|index| {
            let finished = Arc::clone(&finished);
            let all_done = Arc::clone(&all_done);
            Box::pin(async move {
                if index > 0 {
                    yield_now().await;
                    if finished.fetch_add(1, Ordering::SeqCst) + 1 == WORKERS - 1 {
                        let _ = all_done.lock().unwrap().take().unwrap().send(());
                    }
                }
                index
            }) as futures::future::BoxFuture<'static, usize>
        })
        .collect();
    let mut stream = spawn(items);
    block_on(Box::pin(async move {
        let _watchdog = Watchdog::start("a consumer waiting for in-flight futures");
        let first = stream.next().await.unwrap();
        // Not polling the stream now: only the worker tasks can make this happen.
        all_done_seen.await.unwrap();
        let mut rest: Vec<usize> = stream.collect().await;
        rest.push(first);
        rest.sort_unstable();
        assert_eq!(rest, [0, 1, 2]);
    }));
}

#[test]
fn futures_progress_while_the_consumer_awaits_something_else_on_tokio_multi_thread() {
    let runtime = tokio_multi_thread();
    consumer_waits_for_the_workers(
        |items| {
            stream::iter(items)
                .bounded(3, 0)
                .ordered(3)
                .spawn_on(runtime.handle().clone())
        },
        |future| runtime.block_on(future),
    );
}

#[test]
fn futures_progress_while_the_consumer_awaits_something_else_on_smol_executor() {
    let pool = SmolPool::new(3);
    consumer_waits_for_the_workers(
        |items| {
            stream::iter(items)
                .bounded(3, 0)
                .spawn_on(Arc::clone(&pool.executor))
        },
        |future| smol::block_on(future),
    );
}

/// Each item is a chain of five 10 ms timers, like a request that takes a few
/// round trips.
fn round_trips(
    items: u64,
) -> impl futures::Stream<Item = impl Future<Output = u64> + Send + use<>> + Send + use<> {
    stream::iter(0..items).map(|index| async move {
        for _ in 0..5 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        index
    })
}

/// Takes one output, then spends a long (virtual) second on it, then reads the
/// stats the stream shows.
async fn slow_consumer<S>(stream: &mut S, stats: impl Fn(&S) -> Stats) -> Stats
where
    S: futures::Stream<Item = u64> + Unpin,
{
    stream.next().await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    stats(stream)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn timers_keep_running_while_the_consumer_is_slow() {
    let (workers, waiting) = (4, 4);

    // Spawned: during the consumer's second, the item that replaced the taken
    // one runs all its round trips, and then every worker holds an output.
    let mut spawned = round_trips(20)
        .bounded(workers, waiting)
        .spawn_on(tokio::runtime::Handle::current());
    let stats = slow_consumer(&mut spawned, Spawned::stats).await;
    assert_eq!(
        (stats.completed, stats.held, stats.active),
        (workers as u64 + 1, workers, 0)
    );

    // In place, for contrast: the replacement item was started (polled once)
    // when the first output was handed out, then nobody polled it.
    let mut in_place = Box::pin(round_trips(20).bounded(workers, waiting));
    let stats = slow_consumer(&mut in_place, |stream| stream.stats()).await;
    assert_eq!(
        (stats.completed, stats.held, stats.active),
        (workers as u64, workers - 1, 1)
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_slow_consumer_overlaps_with_the_round_trips() {
    // Spawned, the consumer's 100 ms per item hides the futures' 50 ms: the
    // whole run takes the first item's 50 ms plus the consumer's time.
    let items = 12;
    let started = tokio::time::Instant::now();
    let mut stream = round_trips(items)
        .bounded(4, 4)
        .spawn_on(tokio::runtime::Handle::current());
    while stream.next().await.is_some() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(50 + 100 * items),
        "{elapsed:?}"
    );
    assert!(
        elapsed < Duration::from_millis(50 + 100 * items + 10),
        "{elapsed:?}"
    );
}

/// Two items that each block their thread until both run at the same time: it
/// completes only if two threads run them at once. The wait is bounded by the
/// watchdog, after which the item reports that it ran alone.
fn both_at_once(
    running: &Arc<AtomicUsize>,
) -> impl futures::Stream<Item = impl Future<Output = bool> + Send + use<>> + Send + use<> {
    let running = Arc::clone(running);
    stream::iter(0..2).map(move |_| {
        let running = Arc::clone(&running);
        async move {
            running.fetch_add(1, Ordering::SeqCst);
            let deadline = Instant::now() + HANG_LIMIT;
            while running.load(Ordering::SeqCst) < 2 {
                if Instant::now() > deadline {
                    return false;
                }
                std::hint::spin_loop();
            }
            true
        }
    })
}

#[test]
fn cpu_bound_futures_run_in_parallel_on_tokio_multi_thread() {
    let runtime = tokio_multi_thread();
    let running = Arc::new(AtomicUsize::new(0));
    let stream = both_at_once(&running)
        .bounded(2, 0)
        .spawn_on(runtime.handle().clone());
    let together: Vec<bool> = runtime.block_on(stream.collect());
    assert_eq!(together, [true, true]);
}

#[test]
fn cpu_bound_futures_run_in_parallel_on_smol_executor() {
    let pool = SmolPool::new(2);
    let running = Arc::new(AtomicUsize::new(0));
    let stream = both_at_once(&running)
        .bounded(2, 0)
        .spawn_on(Arc::clone(&pool.executor));
    let together: Vec<bool> = smol::block_on(stream.collect());
    assert_eq!(together, [true, true]);
}
