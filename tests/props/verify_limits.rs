//! Contract points 1 to 5 and 25 under random schedules of gate openings and
//! limit changes (from this thread or another), in place, unordered and
//! ordered:
//! - nothing is lost or duplicated, and every output arrives once (in input
//!   order when ordered): lowering cancels nothing;
//! - a poll that starts an item leaves `active <= workers` for the limits in
//!   force, and a poll that pulls leaves `waiting <= waiting`;
//! - once the limits are stable and the work is within them ("settled"), every
//!   budget holds, and a pending stream has them exactly full;
//! - a change of limits wakes the consumer (else the schedule runs out of
//!   actions with the stream pending: a lost wake).
//!
//! Raises sometimes cross the wake tree's first level (63 slots).
//!
//! 256 cases by default; `PROPTEST_CASES=10000 cargo test --release --test
//! verify_limits` runs more.

use std::task::{Context, Poll};

use bounded_buffered::BoundedStreamExt;
use futures::stream::Stream;
use futures_test::task::new_count_waker;
use proptest::prelude::*;
use support::{Change, Gates, InForce};

#[derive(Debug, Clone)]
struct Case {
    workers: usize,
    waiting: usize,
    window: Option<usize>,
    items: usize,
    /// Limit changes, each applied once, at a point the choices pick.
    changes: Vec<(Change, bool)>,
    choices: Vec<usize>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1..=5usize,
        0..=4usize,
        prop::option::of(1..=7usize),
        0..=90usize,
        prop::collection::vec((Change::strategy(60..=70), any::<bool>()), 0..=8),
        prop::collection::vec(any::<usize>(), 0..=150),
    )
        .prop_map(|(workers, waiting, window, items, changes, choices)| Case {
            workers,
            waiting,
            window,
            items,
            changes,
            choices,
        })
}

fn run(case: &Case) {
    let gates = Gates::new();
    let mut stream = gates.source(case.items).bounded(case.workers, case.waiting);
    if let Some(window) = case.window {
        stream = stream.ordered(window);
    }
    let handle = stream.limits();
    let mut stream = Box::pin(stream);
    let mut limits = InForce::new(case.workers, case.waiting, case.window);
    let mut changes = case.changes.clone();
    changes.reverse();
    let (waker, woken) = new_count_waker();
    let mut cx = Context::from_waker(&waker);
    let mut choices = case.choices.iter().copied().chain(std::iter::repeat(0));
    let mut out = Vec::new();
    let mut spins = 0;
    loop {
        let before = (woken.get(), stream.stats());
        let poll = stream.as_mut().poll_next(&mut cx);
        if let Poll::Ready(Some(id)) = poll {
            out.push(id);
        }
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
        assert_eq!(stats.active, gates.running(), "{stats:?}");
        // Starts and pulls obey the limits in force, settled or not.
        let started = gates.started() > before.1.completed as usize + before.1.active;
        if started {
            assert!(
                stats.active <= limits.workers,
                "started over the limit: {stats:?}"
            );
        }
        if stats.pulled > before.1.pulled {
            assert!(
                stats.waiting <= limits.waiting,
                "pulled over the limit: {stats:?}"
            );
        }
        limits.settled |= limits.within(&stats);
        if limits.settled {
            assert!(limits.within(&stats), "over budget once settled: {stats:?}");
        }
        match poll {
            Poll::Ready(Some(_)) => continue,
            Poll::Ready(None) => break,
            Poll::Pending => {}
        }
        if limits.settled && pulled < case.items {
            // Exactly full: the waiting budget, and the workers or the window.
            assert_eq!(
                stats.waiting, limits.waiting,
                "waiting left idle: {stats:?}"
            );
            assert!(
                stats.active == limits.workers || stats.active + stats.held == limits.span(),
                "workers left idle: {stats:?}"
            );
        }
        if woken.get() > before.0 {
            spins += 1;
            assert!(spins < 1_000, "the stream spins without progress");
            continue;
        }
        let pending_at = woken.get();
        while woken.get() == pending_at {
            let closed = gates.closed_started();
            let mut options = closed.len() + changes.len().min(1);
            if options == 0 && limits.workers == 0 {
                // Every change was made and the stream is paused: resume it.
                changes.push((Change::Workers(1), false));
                options = 1;
            }
            assert!(
                options > 0,
                "lost wakeup: pending, not woken, and nothing left to wake it: {stats:?}"
            );
            let pick = choices.next().unwrap() % options;
            if pick < closed.len() {
                gates.open(closed[pick]);
                continue;
            }
            let (change, elsewhere) = changes.pop().unwrap();
            change.make(&handle, elsewhere);
            limits.apply(change);
            assert!(
                woken.get() > pending_at,
                "a change of limits did not wake the stream"
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
    assert_eq!(gates.counts().futures_dropped, case.items);
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
