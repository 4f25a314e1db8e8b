//! Contract points 1 to 5 and 12 under randomized schedules: the budgets hold
//! after every poll (exactly full while the stream is pending), no wake is lost
//! and every output arrives exactly once (in input order when ordered).
//!
//! Each item is a gate the test opens in a random order, waking the gate's waker
//! in one of several ways (on this thread, from another thread, twice, later, or
//! again long after the item finished, or the future wakes itself once more).
//! The consumer polls by hand with a counting waker: after `Pending` it polls
//! again only once that waker was woken, and if nothing is left that could wake
//! it, a wake was lost and the test fails.
//!
//! 256 cases per property by default; `PROPTEST_CASES=10000 cargo test --release
//! --test verify_props` runs more.

use std::task::{Context, Poll, Waker};

use bounded_buffered::{BoundedStreamExt, Stats};
use futures::stream::Stream;
use futures_test::task::new_count_waker;
use proptest::prelude::*;
use support::Gates;

/// How the test delivers the wake of an opened gate.
#[derive(Clone, Copy, Debug)]
enum WakeMode {
    /// `wake_by_ref` on the test's thread.
    Here,
    /// `wake` on a thread spawned for it (joined before the test goes on).
    OtherThread,
    /// Two wakes for one opening.
    Twice,
    /// The gate opens now, the wake comes at a later step of the schedule.
    Delayed,
    /// Woken now, and again at a later step, when the item has likely finished
    /// and its slot may run another item.
    AgainAfterCompletion,
    /// Woken now; the future then wakes itself during its next poll and
    /// completes only on the poll after that.
    SelfWakeOnce,
}

fn wake_mode() -> impl Strategy<Value = WakeMode> {
    prop_oneof![
        Just(WakeMode::Here),
        Just(WakeMode::OtherThread),
        Just(WakeMode::Twice),
        Just(WakeMode::Delayed),
        Just(WakeMode::AgainAfterCompletion),
        Just(WakeMode::SelfWakeOnce),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    workers: usize,
    waiting: usize,
    window: Option<usize>,
    modes: Vec<WakeMode>,
    /// Each step picks among the possible actions with `choice % count`.
    choices: Vec<usize>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1..=5usize,
        0..=4usize,
        prop::option::of(1..=7usize),
        prop::collection::vec(wake_mode(), 0..=40),
        prop::collection::vec(any::<usize>(), 0..=120),
    )
        .prop_map(|(workers, waiting, window, modes, choices)| Case {
            workers,
            waiting,
            window,
            modes,
            choices,
        })
}

/// Something the test can do between two polls of the stream.
enum Action {
    Open(usize),
    WakeLater(Waker),
}

fn check_budgets(case: &Case, stats: &Stats, pulled: u64, yielded: u64) {
    let span = case.window.unwrap_or(case.workers);
    assert!(
        stats.active <= case.workers,
        "active over budget: {stats:?}"
    );
    assert!(
        stats.waiting <= case.waiting,
        "waiting over budget: {stats:?}"
    );
    assert!(
        stats.active + stats.held <= span,
        "held over budget: {stats:?}"
    );
    assert_eq!(
        stats.pulled, pulled,
        "stats disagree with the source's count"
    );
    // Everything pulled and not yielded is running, waiting or held: nothing
    // vanished, and the source is never further ahead than the budgets allow.
    let in_flight = (stats.active + stats.waiting + stats.held) as u64;
    assert_eq!(
        pulled - yielded,
        in_flight,
        "items lost or duplicated: {stats:?}"
    );
    assert!(
        in_flight <= (span + case.waiting) as u64,
        "source too far ahead: {stats:?}"
    );
}

fn run(case: &Case) {
    let items = case.modes.len();
    let gates = Gates::new();
    let mut stream = gates.source(items).bounded(case.workers, case.waiting);
    if let Some(window) = case.window {
        stream = stream.ordered(window);
    }
    let mut stream = Box::pin(stream);

    let (waker, woken) = new_count_waker();
    let mut cx = Context::from_waker(&waker);
    let mut later: Vec<Waker> = Vec::new();
    let mut choices = case.choices.iter().copied().chain(std::iter::repeat(0));
    let mut out = Vec::new();
    let mut polls_without_progress = 0;
    loop {
        let before = woken.get();
        let poll = stream.as_mut().poll_next(&mut cx);
        let pulled_now = gates.pulled() as u64;
        if let Poll::Ready(Some(id)) = poll {
            out.push(id);
        }
        check_budgets(case, &stream.stats(), pulled_now, out.len() as u64);
        match poll {
            Poll::Ready(Some(_)) => {
                polls_without_progress = 0;
                continue;
            }
            Poll::Ready(None) => break,
            Poll::Pending => {}
        }
        // Work-conserving: with the source not exhausted, a pending stream has
        // every budget full (the exact boundary) and, unordered, holds nothing.
        let stats = stream.stats();
        if pulled_now < items as u64 {
            let span = case.window.unwrap_or(case.workers);
            assert_eq!(
                stats.waiting, case.waiting,
                "waiting budget left idle: {stats:?}"
            );
            assert!(
                stats.active == case.workers || stats.active + stats.held == span,
                "worker budget left idle: {stats:?}"
            );
        }
        if case.window.is_none() {
            assert_eq!(stats.held, 0, "pending while holding an output: {stats:?}");
        }
        // A wake during the poll itself (a future that woke itself, or the
        // stream yielding after its poll budget) asks for another poll.
        if woken.get() > before {
            polls_without_progress += 1;
            assert!(
                polls_without_progress < 1_000,
                "the stream spins without progress"
            );
            continue;
        }
        let pending_at = woken.get();
        while woken.get() == pending_at {
            let mut actions: Vec<Action> = gates
                .closed_started()
                .into_iter()
                .map(Action::Open)
                .collect();
            actions.extend(later.drain(..).map(Action::WakeLater));
            assert!(
                !actions.is_empty(),
                "lost wakeup: the stream is pending, its waker was not woken, and nothing is left to wake it"
            );
            let pick = choices.next().unwrap() % actions.len();
            let action = actions.swap_remove(pick);
            for rest in actions {
                if let Action::WakeLater(waker) = rest {
                    later.push(waker);
                }
            }
            match action {
                Action::WakeLater(waker) => waker.wake(),
                Action::Open(id) => {
                    if matches!(case.modes[id], WakeMode::SelfWakeOnce) {
                        gates.self_wake_once(id);
                    }
                    let waker = gates
                        .open_taking_waker(id)
                        .expect("a started, closed gate has a waker");
                    match case.modes[id] {
                        WakeMode::Here | WakeMode::SelfWakeOnce => waker.wake(),
                        WakeMode::OtherThread => {
                            std::thread::spawn(move || waker.wake()).join().unwrap()
                        }
                        WakeMode::Twice => {
                            waker.wake_by_ref();
                            waker.wake();
                        }
                        WakeMode::Delayed => later.push(waker),
                        WakeMode::AgainAfterCompletion => {
                            waker.wake_by_ref();
                            later.push(waker);
                        }
                    }
                }
            }
        }
    }
    // Late wakes after the end reach nothing and break nothing.
    for waker in later {
        waker.wake();
    }
    assert!(
        stream.as_mut().poll_next(&mut cx).is_ready(),
        "a finished stream stays finished"
    );

    if case.window.is_some() {
        assert_eq!(
            out,
            (0..items).collect::<Vec<_>>(),
            "ordered output out of order"
        );
    } else {
        out.sort_unstable();
        assert_eq!(
            out,
            (0..items).collect::<Vec<_>>(),
            "an output missing or repeated"
        );
    }
    let stats = stream.stats();
    assert_eq!(
        (stats.pulled, stats.completed),
        (items as u64, items as u64)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(256)
    ))]

    #[test]
    fn random_schedules_keep_budgets_and_deliver_every_output_once(case in case()) {
        run(&case);
    }
}
