//! "Barbara battles buffered streams", measured: a consumer that does slow async
//! work per item (here: writes each result to a slow sink) while the futures
//! themselves need several timer round trips each.
//!
//! In place, the futures are polled only while the consumer polls the stream:
//! during the consumer's own work their timers fire, but nobody takes the next
//! step. Spawned, they run on the runtime's worker threads meanwhile, so the
//! run takes about as long as the consumer alone; in place it takes longer.
//!
//! Run with `cargo run --release --example in_place_vs_spawned`.

use std::time::{Duration, Instant};

use bounded_buffered::{BoundedStreamExt, Stats};
use futures::{Stream, StreamExt, stream};

const ITEMS: u64 = 40;
const ROUND_TRIPS: u32 = 10;
const ROUND_TRIP: Duration = Duration::from_millis(5);
const SINK_WRITE: Duration = Duration::from_millis(20);
const WORKERS: usize = 4;
const WAITING: usize = 4;

/// Each item: a request that needs a few sequential round trips.
fn requests() -> impl Stream<Item = impl Future<Output = u64> + Send + 'static> + Send + 'static {
    stream::iter(0..ITEMS).map(|id| async move {
        for _ in 0..ROUND_TRIPS {
            tokio::time::sleep(ROUND_TRIP).await;
        }
        id
    })
}

/// The consumer: awaits a slow write for every result.
async fn consume(mut results: impl Stream<Item = u64> + Unpin) -> u64 {
    let mut count = 0;
    while let Some(_id) = results.next().await {
        tokio::time::sleep(SINK_WRITE).await;
        count += 1;
    }
    count
}

fn report(mode: &str, elapsed: Duration, stats: Stats) {
    println!(
        "{mode:>9}: {:>5} ms  (completed={}, peak_active={}, peak_waiting={}, peak_held={})",
        elapsed.as_millis(),
        stats.completed,
        stats.peak_active,
        stats.peak_waiting,
        stats.peak_held,
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let busy = ITEMS as u128 * SINK_WRITE.as_millis();
    let work = (ITEMS as u128).div_ceil(WORKERS as u128)
        * u128::from(ROUND_TRIPS)
        * ROUND_TRIP.as_millis();
    println!(
        "{ITEMS} requests of {ROUND_TRIPS} x {} ms, a {} ms write per result, workers={WORKERS}, waiting={WAITING}",
        ROUND_TRIP.as_millis(),
        SINK_WRITE.as_millis(),
    );
    println!("the consumer alone needs {busy} ms, the requests alone about {work} ms\n");

    let started = Instant::now();
    let mut in_place = Box::pin(requests().bounded(WORKERS, WAITING));
    assert_eq!(consume(in_place.as_mut()).await, ITEMS);
    report("in place", started.elapsed(), in_place.stats());

    let started = Instant::now();
    let mut spawned = requests()
        .bounded(WORKERS, WAITING)
        .spawn_on(tokio::runtime::Handle::current());
    assert_eq!(consume(&mut spawned).await, ITEMS);
    report("spawned", started.elapsed(), spawned.stats());
}
