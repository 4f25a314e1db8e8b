//! Drains the `ready` or `yield_once` workload once with `.metrics(name)` on,
//! publishing to a recorder of atomics (what an exporter such as
//! `metrics-exporter-prometheus` does per call: an atomic add or store), and
//! exits: the target `scripts/instructions-per-item.sh` counts for the cost of
//! the feature `metrics` in use.
//!
//! ```text
//! cargo run --release -p compare --features metrics --bin metrics_once -- <mode> <workers> <ready|yield_once> <items>
//! ```
//!
//! `<mode>`: `metrics_bounded` (`bounded(workers, workers).metrics(..)`, in
//! place), `metrics_timed` (with `.timed()`: the histograms too),
//! `metrics_spawned` and `metrics_spawned_timed` (the same through
//! `spawn_on`, on the one-thread executor of `spawned_once.rs`, run by hand).
//! Compare with `bounded`, `bounded_timed`, `spawned` and `spawned_timed`.

#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use bounded_buffered::{BoundedStreamExt, Spawned};
use futures::future::BoxFuture;
use futures::stream::{self, Stream, StreamExt};
use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};

/// Every series an atomic: counters and gauges as `metrics` implements them
/// for `AtomicU64`, histograms a count and a sum.
struct Atomics;

#[derive(Default)]
struct Sums {
    count: AtomicU64,
    sum: AtomicU64,
}

impl HistogramFn for Sums {
    fn record(&self, value: f64) {
        self.record_many(value, 1);
    }

    fn record_many(&self, value: f64, count: usize) {
        self.count.fetch_add(count as u64, Ordering::Relaxed);
        self.sum
            .fetch_add((value * 1e9) as u64 * count as u64, Ordering::Relaxed);
    }
}

impl Recorder for Atomics {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(AtomicU64::new(0)))
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(Arc::new(AtomicU64::new(0)))
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(Arc::new(Sums::default()))
    }
}

/// Ready at once (`ready`), or after waking itself once (`yield_once`).
struct Job {
    yielded: bool,
    value: u64,
}

impl Future for Job {
    type Output = u64;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        if self.yielded {
            return Poll::Ready(self.value);
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// The consumer polls in a loop: it needs no wake.
struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// Tasks woken and not polled since, oldest first.
type Queue = Arc<Mutex<VecDeque<Arc<Task>>>>;

struct Task {
    future: Mutex<Option<BoxFuture<'static, ()>>>,
    queue: Queue,
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        let queue = Arc::clone(&self.queue);
        queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(self);
    }
}

fn main() -> ExitCode {
    const MODES: [&str; 4] = [
        "metrics_bounded",
        "metrics_timed",
        "metrics_spawned",
        "metrics_spawned_timed",
    ];
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [name, workers, kind, items] if MODES.contains(&name.as_str()) => {
            let yielding = match kind.as_str() {
                "ready" => Some(false),
                "yield_once" => Some(true),
                _ => None,
            };
            workers
                .parse::<usize>()
                .ok()
                .zip(yielding)
                .zip(items.parse::<u64>().ok())
        }
        _ => None,
    };
    let Some(((workers, yielding), items)) = parsed else {
        eprintln!(
            "usage: metrics_once <{}> <workers> <ready|yield_once> <items>",
            MODES.join("|")
        );
        return ExitCode::FAILURE;
    };
    let name = args[0].as_str();
    metrics::set_global_recorder(Atomics).expect("the only recorder");

    let jobs = stream::iter(0..items).map(move |value| Job {
        yielded: !yielding,
        value,
    });
    let bounded = jobs.bounded(workers, workers).metrics("bench");
    let queue: Queue = Arc::default();
    let spawner = {
        let queue = Arc::clone(&queue);
        move |future: BoxFuture<'static, ()>| {
            let task = Arc::new(Task {
                future: Mutex::new(Some(future)),
                queue: Arc::clone(&queue),
            });
            queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push_back(task);
        }
    };
    let sum = match name {
        "metrics_bounded" => drain_in_place(bounded),
        "metrics_timed" => drain_in_place(bounded.timed()),
        "metrics_spawned" => drain_spawned(bounded.spawn_on(spawner), &queue),
        _ => drain_spawned(bounded.timed().spawn_on(spawner), &queue),
    };
    assert_eq!(
        sum,
        (0..items).fold(0u64, u64::wrapping_add),
        "an output lost"
    );
    println!("{name}: {items} items");
    ExitCode::SUCCESS
}

/// Polls `outputs` in place until it ends (its futures wake only
/// themselves, inside its polls).
fn drain_in_place(mut outputs: impl Stream<Item = u64> + Unpin) -> u64 {
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut sum = 0u64;
    loop {
        match Pin::new(&mut outputs).poll_next(&mut cx) {
            Poll::Ready(Some(output)) => sum = sum.wrapping_add(output),
            Poll::Ready(None) => return sum,
            Poll::Pending => {}
        }
    }
}

/// Polls `outputs` until it ends, running every woken task once whenever it
/// is pending (as `spawned_once.rs` does).
fn drain_spawned(mut outputs: Spawned<u64>, queue: &Queue) -> u64 {
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut sum = 0u64;
    loop {
        match Pin::new(&mut outputs).poll_next(&mut cx) {
            Poll::Ready(Some(output)) => sum = sum.wrapping_add(output),
            Poll::Ready(None) => return sum,
            Poll::Pending => {
                let ready: Vec<Arc<Task>> = queue
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .drain(..)
                    .collect();
                assert!(
                    !ready.is_empty(),
                    "the stream is pending with no task to run"
                );
                for task in ready {
                    let waker = Waker::from(Arc::clone(&task));
                    let mut slot = task.future.lock().unwrap_or_else(PoisonError::into_inner);
                    if let Some(future) = slot.as_mut() {
                        if future
                            .as_mut()
                            .poll(&mut Context::from_waker(&waker))
                            .is_ready()
                        {
                            *slot = None;
                        }
                    }
                }
            }
        }
    }
}
