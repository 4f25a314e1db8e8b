//! Randomized schedules with `max_wait` on, in place: after every poll the
//! budgets hold (expired items count against `waiting` unordered, and hold their
//! place in the window ordered), and every item appears exactly once, as its
//! output or as an `Expired` whose future is the item's own, never polled; in
//! input order when ordered (contract points 3 to 5 and 23).
//!
//! The clock is a counter the schedule advances, so each case is exact. One test
//! in this binary: the clock is a static.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::task::Poll;
use std::time::{Duration, Instant};

use bounded_buffered::BoundedStreamExt;
use futures::{FutureExt, StreamExt};
use proptest::prelude::*;
use support::{Gates, Poller, counted};

static BASE: LazyLock<Instant> = LazyLock::new(Instant::now);
static NOW_MS: AtomicU64 = AtomicU64::new(0);

fn now() -> Instant {
    *BASE + Duration::from_millis(NOW_MS.load(SeqCst))
}

/// A gate that says which item it is without being polled.
struct Tagged {
    id: usize,
    gate: support::Gate,
}

impl Future for Tagged {
    type Output = usize;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<usize> {
        std::pin::Pin::new(&mut self.gate).poll(cx)
    }
}

#[derive(Debug, Clone)]
struct Case {
    workers: usize,
    waiting: usize,
    window: Option<usize>,
    limit_ms: u64,
    items: usize,
    /// Per step: advance the clock by `step % 4` ms, then open the
    /// `step / 4 % count`-th started, unopened gate.
    steps: Vec<usize>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1..=4usize,
        0..=4usize,
        prop::option::of(1..=6usize),
        0..=6u64,
        1..=20usize,
        prop::collection::vec(any::<usize>(), 0..=60),
    )
        .prop_map(|(workers, waiting, window, limit_ms, items, steps)| Case {
            workers,
            waiting,
            window,
            limit_ms,
            items,
            steps,
        })
}

fn run(case: &Case) {
    NOW_MS.store(0, SeqCst);
    let gates = Gates::new();
    let (source, counts) = counted(
        gates
            .source(case.items)
            .enumerate()
            .map(|(id, gate)| Tagged { id, gate }),
    );
    let mut stream = source
        .bounded(case.workers, case.waiting)
        .max_wait(Duration::from_millis(case.limit_ms))
        .clock(now);
    if let Some(window) = case.window {
        stream = stream.ordered(window);
    }
    let poller = Poller::new();
    let mut seen = Vec::new();
    let mut opened = vec![false; case.items];
    let mut steps = case.steps.iter();
    let mut yielded_expired = 0;
    loop {
        match poller.poll(&mut stream) {
            Poll::Ready(Some(Ok(id))) => seen.push(id),
            Poll::Ready(Some(Err(expired))) => {
                yielded_expired += 1;
                // The expired item's own future, never polled; it still runs to
                // its output.
                let tagged = expired.into_inner();
                let id = tagged.id;
                assert_eq!(gates.polls(id), 0, "expired item {id} was polled");
                gates.open(id);
                opened[id] = true;
                assert_eq!(tagged.now_or_never(), Some(id));
                seen.push(id);
            }
            Poll::Ready(None) => break,
            Poll::Pending => {
                let candidates: Vec<usize> = (0..case.items)
                    .filter(|&id| gates.is_started(id) && !opened[id])
                    .collect();
                let step = steps.next().copied().unwrap_or(0);
                NOW_MS.fetch_add((step % 4) as u64, SeqCst);
                let id = candidates[step / 4 % candidates.len()];
                opened[id] = true;
                gates.open(id);
            }
        }
        // The budgets, for the limits in force, after every poll.
        let stats = stream.stats();
        assert!(stats.active <= case.workers);
        assert!(stats.waiting <= case.waiting);
        let pulled = counts.pulled();
        assert_eq!(
            pulled,
            stats.active + stats.waiting + stats.held + seen.len()
        );
        match case.window {
            Some(window) => assert!(stats.active + stats.held <= window),
            // Held outputs count against the workers, expired ones against
            // `waiting`: together, never more alive than both budgets.
            None => {
                assert!(stats.active + stats.waiting + stats.held <= case.workers + case.waiting)
            }
        }
    }
    assert_eq!(stream.stats().expired, yielded_expired);
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        (0..case.items).collect::<Vec<_>>(),
        "each item exactly once"
    );
    if case.window.is_some() {
        assert_eq!(seen, sorted, "input order");
    }
}

proptest! {
    #[test]
    fn with_expiry_the_budgets_hold_and_every_item_appears_exactly_once(case in case()) {
        run(&case);
    }
}
