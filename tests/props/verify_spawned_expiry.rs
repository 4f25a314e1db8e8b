//! Randomized schedules with `max_wait` on, in spawned mode (contract points 16,
//! 17, 23 and 24): the worker tasks are polled one at a time in a random order
//! on an executor the test steps, interleaved with gate openings, clock
//! advances and consumer polls (when woken, and spuriously). After every step
//! the budgets hold: expired items held count against `waiting` unordered and
//! hold their place in the window ordered, nothing is lost or counted twice,
//! and no future runs that the stats do not count; with the tasks stalled and
//! items left in the source, the budgets are exactly full (taking an expired
//! item frees a waiting place that a task refills). Every item appears exactly
//! once, as its output or as an `Expired` that waited longer than the limit and
//! holds the item's own future, never polled, which still runs to its output;
//! in input order when ordered. No wake is lost. The timings agree: only the
//! items that started have a wait, none above the limit, and every outcome
//! handed out has a hold. Dropping the stream drops everything exactly once.
//!
//! The clock is `support::now`, moved by the schedule, so each case replays
//! exactly from its seed. 1024 cases by default; `PROPTEST_CASES=N` runs N.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bounded_buffered::{BoundedBuffered, BoundedStreamExt, Expired, Spawned};
use futures::{FutureExt, Stream, StreamExt};
use futures_test::task::{AwokenCount, new_count_waker};
use proptest::prelude::*;
use support::{Gate, Gates, Rng, StepExecutor, advance, ms, now, reset_clock};

/// A gate that says which item it is without being polled.
struct Tagged {
    id: usize,
    gate: Gate,
}

impl Future for Tagged {
    type Output = usize;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        Pin::new(&mut self.gate).poll(cx)
    }
}

#[derive(Debug, Clone)]
struct Case {
    workers: usize,
    waiting: usize,
    window: Option<usize>,
    limit_ms: u64,
    items: usize,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1..=4usize,
        0..=4usize,
        prop::option::of(1..=6usize),
        0..=6u64,
        0..=24usize,
        any::<u64>(),
    )
        .prop_map(|(workers, waiting, window, limit_ms, items, seed)| Case {
            workers,
            waiting,
            window,
            limit_ms,
            items,
            seed,
        })
}

fn ordered_if<S: Stream<Item: Future>>(
    stream: BoundedBuffered<S>,
    window: Option<usize>,
) -> BoundedBuffered<S> {
    match window {
        Some(window) => stream.ordered(window),
        None => stream,
    }
}

/// One case's stream, its gates and what the consumer has seen.
struct Run {
    case: Case,
    gates: Gates,
    stepper: StepExecutor,
    stream: Spawned<Result<usize, Expired<Tagged>>>,
    rng: Rng,
    /// Ids in the order they were yielded, expired ones included.
    yielded: Vec<usize>,
    expired: u64,
    waker: Waker,
    wakes: AwokenCount,
    /// The wake count when the consumer's poll last returned `Pending`.
    pending_at: Option<usize>,
    ended: bool,
}

impl Run {
    fn new(case: Case) -> Self {
        reset_clock();
        let gates = Gates::new();
        let stepper = StepExecutor::new();
        let source = gates
            .source(case.items)
            .enumerate()
            .map(|(id, gate)| Tagged { id, gate });
        let stream = ordered_if(source.bounded(case.workers, case.waiting), case.window)
            .max_wait(ms(case.limit_ms))
            .timed()
            .clock(now)
            .spawn_on(stepper.spawner());
        let (waker, wakes) = new_count_waker();
        Self {
            rng: Rng::new(case.seed),
            case,
            gates,
            stepper,
            stream,
            yielded: Vec::new(),
            expired: 0,
            waker,
            wakes,
            pending_at: None,
            ended: false,
        }
    }

    fn consumer_woken(&self) -> bool {
        self.pending_at.is_none_or(|at| self.wakes.get() > at)
    }

    fn poll_consumer(&mut self) {
        let woken = self.consumer_woken();
        let next = match self
            .stream
            .poll_next_unpin(&mut Context::from_waker(&self.waker))
        {
            Poll::Pending => {
                self.pending_at = Some(self.wakes.get());
                return;
            }
            Poll::Ready(next) => next,
        };
        assert!(woken, "lost wakeup: {:?}", self.case);
        self.pending_at = None;
        match next {
            None => self.ended = true,
            Some(Ok(id)) => {
                assert!(self.gates.is_started(id), "item {id} output but never run");
                self.yielded.push(id);
            }
            Some(Err(expired)) => {
                let limit = ms(self.case.limit_ms);
                assert!(
                    expired.waited() > limit,
                    "expired after {:?}, limit {limit:?}",
                    expired.waited()
                );
                let tagged = expired.into_inner();
                let id = tagged.id;
                assert_eq!(self.gates.polls(id), 0, "expired item {id} was polled");
                // Its own untouched future, which still runs to its output.
                self.gates.open(id);
                assert_eq!(tagged.now_or_never(), Some(id));
                self.expired += 1;
                self.yielded.push(id);
            }
        }
    }

    /// One random step: a task poll, a gate opening (with the clock moved), a
    /// clock move alone, or a consumer poll.
    fn step(&mut self) {
        let closed = self.gates.closed_started();
        let woken = self.consumer_woken();
        let ready = self.stepper.has_ready();
        if !ready && closed.is_empty() && !woken {
            // Nothing can happen but a spurious poll: it must end the stream.
            self.poll_consumer();
            assert!(
                self.ended,
                "hang: {:?} {:?}",
                self.case,
                self.stream.stats()
            );
            return;
        }
        match self.rng.below(10) {
            0..=3 if ready => {
                let pick = self.rng.below(usize::MAX);
                self.stepper.poll_one(pick);
            }
            4 | 5 if !closed.is_empty() => {
                advance(ms(self.rng.below(3) as u64));
                self.gates.open(closed[self.rng.below(closed.len())]);
            }
            6 => advance(ms(self.rng.below(4) as u64)),
            7 | 8 if woken => self.poll_consumer(),
            9 if self.rng.below(4) == 0 => self.poll_consumer(),
            _ => {}
        }
        self.stepper.assert_none_escaped("a spawned task");
        self.check_budgets();
    }

    /// The budgets and the counts, between any two steps.
    fn check_budgets(&mut self) {
        let stalled = !self.stepper.has_ready();
        let case = &self.case;
        let stats = self.stream.stats();
        let held_expired = (stats.expired - self.expired) as usize;
        let (pulled, yielded, running) = (
            self.gates.pulled(),
            self.yielded.len(),
            self.gates.running(),
        );
        let context = || {
            format!(
                "{case:?} {stats:?} pulled {pulled} yielded {yielded} running {running} held expired {held_expired}"
            )
        };
        assert!(stats.active <= case.workers, "{}", context());
        assert!(stats.waiting <= case.waiting, "{}", context());
        assert!(held_expired <= stats.held, "{}", context());
        match case.window {
            Some(window) => {
                assert!(stats.active <= case.workers.min(window), "{}", context());
                assert!(stats.active + stats.held <= window, "{}", context());
                assert!(pulled - yielded <= window + case.waiting, "{}", context());
            }
            None => {
                // An untaken output keeps its worker; an expired item held
                // keeps its waiting place instead.
                assert!(
                    stats.active + stats.held - held_expired <= case.workers,
                    "{}",
                    context()
                );
                assert!(
                    stats.waiting + held_expired <= case.waiting,
                    "{}",
                    context()
                );
                assert!(
                    pulled - yielded <= case.workers + case.waiting,
                    "{}",
                    context()
                );
            }
        }
        assert_eq!(stats.pulled as usize, pulled, "{}", context());
        assert_eq!(
            pulled - yielded,
            stats.active + stats.waiting + stats.held,
            "items lost or counted twice: {}",
            context()
        );
        assert!(running <= stats.active, "{}", context());

        // With the tasks stalled and items left in the source, the budgets
        // are exactly full: a freed waiting place is always pulled into (a
        // busy task is sent when none is idle), expired items held included.
        if stalled && pulled > 0 && pulled < case.items {
            let (span, expired_in_queue) = match case.window {
                Some(window) => (window, 0),
                None => (case.workers, held_expired),
            };
            let workers_full = stats.active == case.workers
                || stats.active + stats.held - expired_in_queue == span;
            let waiting_full = stats.waiting + expired_in_queue == case.waiting;
            assert!(
                workers_full && waiting_full,
                "budgets not full when stalled: {}",
                context()
            );
        }
    }

    fn run_to_end(&mut self) {
        let mut steps = 0;
        while !self.ended {
            steps += 1;
            assert!(
                steps < 200_000,
                "no end after {steps} steps: {:?}",
                self.case
            );
            self.step();
        }
    }
}

fn run(case: Case) {
    let mut run = Run::new(case.clone());
    run.run_to_end();

    let all: Vec<usize> = (0..case.items).collect();
    if case.window.is_some() {
        assert_eq!(run.yielded, all, "ordered outcomes out of order");
    } else {
        let mut sorted = run.yielded.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, all, "an item missing or repeated");
    }
    let stats = run.stream.stats();
    let items = case.items as u64;
    assert_eq!(stats.expired, run.expired);
    assert_eq!(
        (stats.pulled, stats.completed),
        (items, items - run.expired)
    );
    assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));

    let timings = run.stream.timings().expect("timed");
    assert_eq!(
        timings.wait.count(),
        items - run.expired,
        "a wait per start"
    );
    assert!(timings.wait.max() <= ms(case.limit_ms), "{case:?}");
    assert_eq!(
        timings.run.count(),
        items - run.expired,
        "a run per completion"
    );
    assert_eq!(timings.held.count(), items, "a hold per outcome handed out");

    let Run {
        stream,
        mut stepper,
        gates,
        mut rng,
        ..
    } = run;
    drop(stream);
    stepper.run_until_idle(&mut rng);
    assert_eq!(stepper.live_tasks(), 0, "tasks outlived the stream");
    stepper.assert_none_escaped("a cancelled task");
    gates.check_all_dropped_once();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(support::cases(1024)))]

    #[test]
    fn with_expiry_the_budgets_hold_and_every_item_appears_exactly_once(case in case()) {
        run(case);
    }
}
