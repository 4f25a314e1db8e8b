//! Random schedules with time budgets, in both modes, ordered and not
//! (contract points 31 to 34, with 2 to 5 and 25): a run deadline (in most
//! cases), items' own deadlines, a start rate with a burst, and rate changes
//! through `Limits`, on the hand clock and timer, with gates opened, time
//! moved, tasks run and the consumer polled in a random order. After every
//! step:
//! - nothing starts at or after the run's deadline (nor, in place, where a
//!   start is the first poll, its own), and nothing is pulled at or after
//!   the run's deadline;
//! - the source never runs ahead of the consumer by more than the admission
//!   bound (`workers + max(waiting, 1)`; ordered, `window + max(waiting,
//!   1)`: running and held, late items held included, then the waiting
//!   places);
//! - the starts never exceed `n + burst - 1` in any window of `per` (with
//!   `n` the largest rate set so far). A start is when the stream takes the
//!   item and its token; spawned, the task polls it when the executor runs
//!   it, which the stream does not decide.
//!
//! At the end every item pulled came back exactly once: as its output, late
//! (never polled, its own future handed back), or cancelled (it had
//! started); the deadline's outcome came last if the run was stopped; the
//! stats agree; and every future was dropped exactly once.
//!
//! 128 cases per mode by default (a quarter in a debug build:
//! `support::cases`); `PROPTEST_CASES=N` runs N.

use std::collections::BTreeMap;
use std::task::Poll;
use std::time::{Duration, Instant};

use bounded_buffered::{BoundedStreamExt, Deadline, Unfinished};
use futures::StreamExt;
use proptest::prelude::*;
use support::{
    Gates, HandTimer, Mode, Rng, advance_timers, drive, ms, now, prop_both_modes, reset_clock,
    reset_timers,
};

/// One random case.
#[derive(Clone, Debug)]
struct Case {
    workers: usize,
    waiting: usize,
    window: Option<usize>,
    items: usize,
    /// The run's deadline, in ms from the start.
    deadline: Option<u64>,
    /// Each item's own deadline, in ms from the start (`None`: far away).
    own: Vec<Option<u64>>,
    /// Starts per 10 ms, and the burst.
    rate: Option<(u32, u32)>,
    /// Rates set later, through `Limits` (starts per 10 ms).
    changes: Vec<u32>,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (
            1..=4usize,
            0..=3usize,
            prop::option::of(1..=5usize),
            0..=16usize,
        ),
        prop::option::weighted(0.8, 0..=40u64),
        prop::collection::vec(prop::option::weighted(0.4, 0..=30u64), 16),
        prop::option::weighted(0.6, (1..=3u32, 1..=3u32)),
        prop::collection::vec(1..=4u32, 0..=3),
        any::<u64>(),
    )
        .prop_map(
            |((workers, waiting, window, items), deadline, own, rate, changes, seed)| {
                let changes = if rate.is_some() { changes } else { Vec::new() };
                Case {
                    workers,
                    waiting,
                    window,
                    items,
                    deadline,
                    own: own[..items].to_vec(),
                    rate,
                    changes,
                    seed,
                }
            },
        )
}

/// What an outcome was, by item.
#[derive(Debug, PartialEq, Eq)]
enum Came {
    Done,
    Late,
    Cancelled,
}

fn run(mode: Mode, case: Case) {
    reset_clock();
    reset_timers();
    let start = now();
    let at = |offset: u64| start + ms(offset);
    let period = Duration::from_millis(10);
    let own: Vec<Instant> = case
        .own
        .iter()
        .map(|own| own.map_or(start + Duration::from_secs(3_600), at))
        .collect();
    let deadlines = own.clone();
    let gates = Gates::new();
    let stream = gates
        .source(case.items)
        .map(move |gate| Deadline::new(deadlines[gate.id()], gate))
        .bounded(case.workers, case.waiting);
    let stream = match case.window {
        Some(window) => stream.ordered(window),
        None => stream,
    };
    let stream = stream.item_deadlines().timer(HandTimer);
    let stream = match case.rate {
        Some((n, burst)) => stream.rate(n, period).burst(burst),
        None => stream,
    };
    // Every case gets a deadline for the run, far away if the case has
    // none: the stream type is one, and a far one never passes.
    let run_deadline = case.deadline.map_or(start + Duration::from_secs(3_600), at);
    let mut driven = drive!(mode, stream.deadline(run_deadline));
    let limits = driven.limits();

    let mut rng = Rng::new(case.seed);
    let mut changes = case.changes.clone();
    let mut largest_rate = case.rate.map_or(0, |(n, _)| n);
    let burst = case.rate.map_or(1, |(_, burst)| burst);
    let mut starts: Vec<Instant> = Vec::new();
    let mut started_at = std::collections::BTreeSet::new();
    let mut pulls = 0;
    let mut came: BTreeMap<u64, Came> = BTreeMap::new();
    let mut taken = 0usize;
    let mut stopped = false;
    let mut ended = false;
    // Running or held: `workers` unordered (a late item held counts against
    // `waiting` there), `window` ordered; then the waiting places, at least
    // one (every item goes through one).
    let bound = case.window.unwrap_or(case.workers) + case.waiting.max(1);

    for step in 0.. {
        assert!(step < 100_000, "no end: {case:?}");
        match rng.below(10) {
            0 | 1 => {
                let closed = gates.closed_pulled();
                if !closed.is_empty() {
                    gates.open(closed[rng.below(closed.len())]);
                }
            }
            2 | 3 => advance_timers(ms(rng.below(4) as u64)),
            4 if !changes.is_empty() => {
                let n = changes.pop().expect("a change");
                largest_rate = largest_rate.max(n);
                limits.set_rate(n, period);
            }
            5 | 6 if mode.is_spawned() && driven.executor().has_ready() => {
                let pick = rng.below(usize::MAX);
                driven.executor().poll_one(pick);
            }
            _ => match driven.poll_alone() {
                Poll::Ready(Some(outcome)) => {
                    assert!(!stopped, "an outcome after the deadline's: {case:?}");
                    taken += 1;
                    let (position, what) = match outcome {
                        Ok(id) => (id as u64, Came::Done),
                        Err(Unfinished::Late(late)) => {
                            let position = late.position();
                            let gate = late.into_inner().into_inner();
                            assert_eq!(gate.id() as u64, position, "its own future");
                            assert_eq!(gates.polls(gate.id()), 0, "a late item was polled");
                            (position, Came::Late)
                        }
                        Err(Unfinished::Cancelled(cancelled)) => {
                            let position = cancelled.position();
                            assert!(
                                mode.is_spawned() || started_at.contains(&(position as usize)),
                                "item {position} cancelled, never started: {case:?}"
                            );
                            (position, Came::Cancelled)
                        }
                        Err(Unfinished::Deadline(_)) => {
                            taken -= 1;
                            stopped = true;
                            continue;
                        }
                        Err(other) => panic!("unexpected {other}: {case:?}"),
                    };
                    assert!(
                        came.insert(position, what).is_none(),
                        "item {position} twice"
                    );
                }
                Poll::Ready(None) => {
                    ended = true;
                }
                Poll::Pending => {}
            },
        }
        if mode.is_spawned() && rng.below(3) == 0 {
            driven.settle();
        }

        // What happened in this step, on the hand clock: the starts the
        // stream counted (when it took the item and its token; spawned, the
        // task may poll it later, as the executor runs it), and in place the
        // first polls, which are the starts.
        let now = now();
        let stats = driven.stats();
        let counted = stats.completed + stats.active as u64 + stats.cancelled;
        while (starts.len() as u64) < counted {
            assert!(now < run_deadline, "a start at the deadline: {case:?}");
            starts.push(now);
        }
        for (id, own) in own.iter().enumerate() {
            if gates.polls(id) > 0 && started_at.insert(id) && !mode.is_spawned() {
                assert!(
                    now < *own,
                    "item {id} started at its own deadline: {case:?}"
                );
            }
        }
        let pulled = gates.pulled();
        if pulled > pulls {
            assert!(now < run_deadline, "pulled at the deadline: {case:?}");
            pulls = pulled;
        }
        assert!(
            pulled - taken <= bound,
            "{} items beyond the consumer, bound {bound}: {case:?}",
            pulled - taken
        );
        if largest_rate > 0 {
            let most = (largest_rate + burst - 1) as usize;
            for (from, first) in starts.iter().enumerate() {
                let within = starts[from..]
                    .iter()
                    .take_while(|&&t| t < *first + period)
                    .count();
                assert!(within <= most, "{within} starts in {period:?}: {case:?}");
            }
        }
        if ended {
            break;
        }
    }

    // Every item pulled came back once; the rest were never pulled.
    let pulled = gates.pulled();
    assert_eq!(came.len(), pulled, "{case:?} {came:?}");
    assert!(came.keys().all(|&position| (position as usize) < pulled));
    let count = |what: Came| came.values().filter(|&came| *came == what).count() as u64;
    let stats = driven.stats();
    assert_eq!(stats.deadline_passed, stopped, "{case:?}");
    assert_eq!(
        (stats.completed, stats.late, stats.cancelled),
        (count(Came::Done), count(Came::Late), count(Came::Cancelled)),
        "{case:?}"
    );
    if !stopped {
        assert_eq!(pulled, case.items, "not stopped, yet items left: {case:?}");
    }
    driven.drop_stream();
    gates.open_all();
    gates.check_all_dropped_once();
}

prop_both_modes! {
    fn with_deadlines_and_a_rate_every_item_comes_back_once_and_every_bound_holds(
        mode,
        case in case(),
    ) cases(128, 128) {
        run(mode, case);
    }
}
