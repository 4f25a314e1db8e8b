//! Contract points 16, 17 and 25 under random schedules, in spawned mode: task
//! polls (one at a time, on the hand-stepped executor), gate openings, consumer
//! polls and limit changes (from this thread or another), interleaved at
//! random, unordered and ordered:
//! - nothing is lost or duplicated, and every output arrives once (in input
//!   order when ordered): lowering cancels nothing;
//! - a step that starts an item leaves `active <= workers` for the limits in
//!   force, and one that pulls leaves `waiting <= waiting`;
//! - once the limits are stable and the work is within them ("settled"), every
//!   budget holds, and with the tasks idle they are exactly full (a raise of
//!   `waiting` made while every task was busy included: a busy task is sent
//!   to pull);
//! - no wake is lost: the consumer is never `Ready` without having been woken,
//!   and a run never stalls with work left.
//!
//! 256 cases by default; `PROPTEST_CASES=10000 cargo test --release --test
//! verify_spawned_limits` runs more.

use std::task::{Context, Poll};

use bounded_buffered::{BoundedStreamExt, Stats};
use futures::StreamExt;
use futures_test::task::new_count_waker;
use proptest::prelude::*;
use support::{Change, Gates, InForce, OrderedIf, Rng, StepExecutor};

#[derive(Debug, Clone)]
struct Case {
    workers: usize,
    waiting: usize,
    window: Option<usize>,
    items: usize,
    /// Limit changes, in order, each made once (`true`: from another thread).
    changes: Vec<(Change, bool)>,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1..=4usize,
        0..=4usize,
        prop::option::of(1..=6usize),
        0..=40usize,
        prop::collection::vec((Change::strategy(30..=40), any::<bool>()), 0..=8),
        any::<u64>(),
    )
        .prop_map(|(workers, waiting, window, items, changes, seed)| Case {
            workers,
            waiting,
            window,
            items,
            changes,
            seed,
        })
}

/// Whether the budgets are exactly full. Pulling ahead is done by tasks: a
/// stream paused before its first task was spawned has none to do it.
fn full(limits: &InForce, stats: &Stats, tasks: usize) -> bool {
    let workers_full = stats.active == limits.workers || stats.active + stats.held == limits.span();
    let waiting_full = tasks == 0 || stats.waiting == limits.waiting;
    workers_full && waiting_full
}

fn run(case: &Case) {
    let gates = Gates::new();
    let mut executor = StepExecutor::new();
    let stream = gates
        .source(case.items)
        .bounded(case.workers, case.waiting)
        .ordered_if(case.window);
    // Half the runs take the handle before the switch: it must keep working.
    let early = (case.seed % 2 == 0).then(|| stream.limits());
    let mut stream = stream.spawn_on(executor.spawner());
    let handle = early.unwrap_or_else(|| stream.limits());
    let mut limits = InForce::new(case.workers, case.waiting, case.window);
    let mut changes = case.changes.clone();
    changes.reverse();
    let mut rng = Rng::new(case.seed);
    let (waker, woken) = new_count_waker();
    let mut cx = Context::from_waker(&waker);
    // The consumer's wake count at its last `Pending`; `None` when it may poll.
    let mut pending_at: Option<usize> = None;
    let mut out = Vec::new();
    // The first poll spawns the first task: before it, nothing is idle.
    let mut polled = false;
    for steps in 0.. {
        assert!(steps < 100_000, "no end after {steps} steps");
        let before = stream.stats();
        let closed = gates.closed_started();
        let consumer_woken = pending_at.is_none_or(|at| woken.get() > at);
        let tasks_ready = executor.has_ready();
        if !tasks_ready && closed.is_empty() && !consumer_woken && changes.is_empty() {
            if limits.workers == 0 {
                // Every change was made and the stream is paused: resume it.
                changes.push((Change::Workers(1), false));
            } else {
                // Nothing can happen but a spurious poll: it must show the end.
                let poll = stream.poll_next_unpin(&mut cx);
                assert!(
                    matches!(poll, Poll::Ready(None)),
                    "hang: nothing woken, no gate to open, and the stream says {:?} ({:?})",
                    poll.map(|_| ()),
                    stream.stats()
                );
                break;
            }
        }
        match rng.below(8) {
            0..=2 if tasks_ready => {
                executor.poll_one(rng.below(usize::MAX));
            }
            3 | 4 if !closed.is_empty() => {
                gates.open(closed[rng.below(closed.len())]);
            }
            5 if consumer_woken => match (polled = true, stream.poll_next_unpin(&mut cx)).1 {
                Poll::Pending => pending_at = Some(woken.get()),
                Poll::Ready(next) => {
                    pending_at = None;
                    match next {
                        Some(id) => out.push(id),
                        None => break,
                    }
                }
            },
            6 if !changes.is_empty() => {
                let (change, elsewhere) = changes.pop().unwrap();
                change.make(&handle, elsewhere);
                limits.apply(change);
            }
            _ => continue,
        }
        executor.assert_none_escaped("a spawned task");

        let stats = stream.stats();
        let pulled = gates.pulled();
        assert_eq!(stats.pulled, pulled as u64);
        assert_eq!(
            (stats.workers_limit, stats.waiting_limit),
            (limits.workers, limits.waiting)
        );
        assert_eq!(
            pulled - out.len(),
            stats.active + stats.waiting + stats.held,
            "items lost or duplicated: {stats:?}"
        );
        assert!(gates.running() <= stats.active, "{stats:?}");
        // Starts and pulls obey the limits in force, settled or not.
        if stats.active + stats.completed as usize > before.active + before.completed as usize {
            assert!(
                stats.active <= limits.workers,
                "started over the limit: {stats:?}"
            );
        }
        if stats.pulled > before.pulled {
            assert!(
                stats.waiting <= limits.waiting,
                "pulled over the limit: {stats:?}"
            );
        }
        limits.settled |= limits.within(&stats);
        if limits.settled {
            assert!(limits.within(&stats), "over budget once settled: {stats:?}");
            let idle = polled && !executor.has_ready() && pulled < case.items;
            assert!(
                !idle || full(&limits, &stats, executor.spawns()),
                "tasks idle with budget left: {stats:?}, workers {} waiting {}",
                limits.workers,
                limits.waiting
            );
        }
    }
    if case.window.is_none() {
        out.sort_unstable();
    }
    assert_eq!(
        out,
        (0..case.items).collect::<Vec<_>>(),
        "an output missing, repeated or out of order"
    );
    drop(stream);
    executor.run_until_stalled();
    assert_eq!(executor.live_tasks(), 0, "tasks outlived the stream");
    gates.check_all_dropped_once();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(256)
    ))]

    #[test]
    fn random_limit_changes_keep_the_budgets_in_force_and_lose_nothing(case in case()) {
        run(&case);
    }
}
