//! What the stress binaries (`verify_stress`, `verify_spawned_stress`) share:
//! the item count, the stall limit, threads that complete the futures, and
//! the exactly-once tally of the outputs.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use futures::channel::oneshot;
use futures::stream::{self, Stream, StreamExt};

use super::watchdog::Watchdog;
use super::yielding::yield_now;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Items per test: `BB_STRESS_ITEMS`, or 100 000 (quick in a debug build).
pub fn items() -> u64 {
    env_or("BB_STRESS_ITEMS", 100_000)
}

/// A watchdog that fails the binary when no output came for
/// `BB_STRESS_STALL_SECS` (default 30): a lost wakeup hangs the stream.
pub fn stall_watchdog(name: &'static str) -> Watchdog {
    Watchdog::with_limit(
        name,
        Duration::from_secs(env_or("BB_STRESS_STALL_SECS", 30)),
    )
}

/// Two OS threads that complete the futures: each item sends its oneshot sender
/// to one of them when it is pulled, so the completion races the first poll,
/// and every wake comes from a thread the executor does not own.
pub struct Completers {
    requests: Vec<mpsc::Sender<(u64, oneshot::Sender<u64>)>>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Completers {
    pub fn start() -> Self {
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

    /// `items` futures, each completed by a completer thread; with `yields`,
    /// every third one first yields once, so some are polled before and some
    /// after completion.
    pub fn source(
        &self,
        items: u64,
        yields: bool,
    ) -> impl Stream<Item = impl Future<Output = u64> + Send + use<>> + Send + Unpin + use<> {
        let requests = self.requests.clone();
        stream::iter(0..items).map(move |id| {
            let (sender, receiver) = oneshot::channel();
            requests[id as usize % requests.len()]
                .send((id, sender))
                .expect("a completer thread stopped");
            async move {
                if yields && id % 3 == 0 {
                    yield_now().await;
                }
                receiver.await.expect("a completer dropped a sender")
            }
        })
    }

    pub fn stop(self) {
        drop(self.requests);
        for thread in self.threads {
            thread.join().unwrap();
        }
    }
}

/// Drains `outputs`, checking that each of `0..items` arrives exactly once (in
/// order when `ordered`); calls `every` with the count after each `period`
/// outputs (to tick a watchdog, check budgets).
pub async fn each_exactly_once<S: Stream<Item = u64> + Unpin>(
    outputs: &mut S,
    items: u64,
    ordered: bool,
    period: u64,
    mut every: impl FnMut(&S),
) {
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
        if count % period == 0 {
            every(outputs);
        }
    }
    assert_eq!(count, items, "outputs missing");
}
