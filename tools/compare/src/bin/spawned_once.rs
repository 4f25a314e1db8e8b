//! Drains one overhead workload through spawned mode, once, on an executor of
//! one thread that this binary runs by hand, and exits: a deterministic target
//! for callgrind, so that spawned mode's own instructions per item can be
//! counted exactly (a real multi-threaded executor would add its scheduling,
//! which varies from run to run).
//!
//! ```text
//! cargo run --release -p compare --bin spawned_once -- spawned <workers> <ready|yield_once> <items>
//! ```
//!
//! `spawned` is `bounded(workers, workers).spawn_on(..)`; `spawned_timed` and
//! `spawned_max_wait` add `.timed()` or `.max_wait(1 hour)` before `spawn_on`
//! (no item expires: what is counted is the clock). The executor keeps
//! the woken tasks in a queue; the consumer polls the stream until it is
//! pending, then every queued task is polled once, and so on. Its own cost per
//! item (a queue push and pop, a waker clone per poll) is part of the count,
//! the same before and after a change to the crate.
//! `scripts/instructions-per-item.sh <workers> <kind> spawned` runs it under
//! callgrind at two item counts and prints the difference per item.

#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use std::time::Duration;

use bounded_buffered::{BoundedStreamExt, Spawned};
use futures::future::BoxFuture;
use futures::stream::{self, Stream, StreamExt};

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

/// The consumer polls in a loop: it needs no wake.
struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// Ready at once (`ready`), or after waking itself once (`yield_once`): the
/// overhead workloads of `benches/common`, without their tokio runtime.
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

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [name, workers, kind, items]
            if ["spawned", "spawned_timed", "spawned_max_wait"].contains(&name.as_str()) =>
        {
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
            "usage: spawned_once <spawned|spawned_timed|spawned_max_wait> <workers> <ready|yield_once> <items>"
        );
        return ExitCode::FAILURE;
    };
    let name = args[0].as_str();

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
    let jobs = stream::iter(0..items).map(move |value| Job {
        yielded: !yielding,
        value,
    });
    let bounded = jobs.bounded(workers, workers);
    let sum = match name {
        "spawned_timed" => drain(bounded.timed().spawn_on(spawner), &queue, |value| value),
        "spawned_max_wait" => drain(
            bounded
                .max_wait(Duration::from_secs(3600))
                .spawn_on(spawner),
            &queue,
            |outcome| outcome.expect("nothing waits an hour"),
        ),
        _ => drain(bounded.spawn_on(spawner), &queue, |value| value),
    };
    assert_eq!(
        sum,
        (0..items).fold(0u64, u64::wrapping_add),
        "an output lost"
    );
    println!("{name}: {items} items");
    ExitCode::SUCCESS
}

/// Polls `outputs` until it ends, running every woken task once whenever it
/// is pending; returns the sum of the values `value` reads off the outputs.
fn drain<T>(mut outputs: Spawned<T>, queue: &Queue, value: impl Fn(T) -> u64) -> u64 {
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut sum = 0u64;
    loop {
        match Pin::new(&mut outputs).poll_next(&mut cx) {
            Poll::Ready(Some(output)) => sum = sum.wrapping_add(value(output)),
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
