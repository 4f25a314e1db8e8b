//! Time budgets in spawned mode (contract points 23 and 24, with 16 and 17;
//! point 21 for `try_bounded`): `max_wait` expires a waiting item when a worker
//! task frees up for it, exactly at its boundary (waited exactly the limit:
//! started; longer: expired), never polls it, hands its future back untouched
//! (dropped exactly once, wherever it ends up), yields it in completion order
//! or at its input position, counts it in `stats().expired`, and holds it
//! against the waiting budget (unordered) or the window (ordered) until it is
//! taken. `timed()` records exactly the wait, run and held times of a known
//! schedule, each read at the lock section that sees the transition; a clock
//! nothing needs is never read.
//!
//! Deterministic: the worker tasks run on an executor the test steps by hand,
//! the futures are gates the test opens, and the clock (`support::now`) moves
//! only when the test advances it. No sleeps, no real time.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bounded_buffered::{BoundedStreamExt, Expired, Spawned};
use futures::{FutureExt, Stream, StreamExt};
use support::{
    Gate, Gates, StepExecutor, advance, counted, ms, now, poll_once, readings, reset_clock,
};

/// A gate that says which item it is without being polled, so an expired item
/// can be recognised from its untouched future.
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

/// Gates `0..count`, tagged with their ids.
fn tagged(gates: &Gates, count: usize) -> impl Stream<Item = Tagged> + Send + Unpin + 'static {
    gates
        .source(count)
        .enumerate()
        .map(|(id, gate)| Tagged { id, gate })
}

type Outcome = Result<usize, Expired<Tagged>>;

/// An outcome as the tests compare it: the output, or the expired item's id
/// and how long it waited.
fn seen(outcome: Outcome) -> Result<usize, (usize, Duration)> {
    outcome.map_err(|expired| {
        let waited = expired.waited();
        (expired.into_inner().id, waited)
    })
}

fn seen_all(outcomes: Vec<Outcome>) -> Vec<Result<usize, (usize, Duration)>> {
    outcomes.into_iter().map(seen).collect()
}

/// Runs the tasks until none is woken, then takes every output the stream has
/// ready, running the tasks again after each poll (a take may free a start,
/// the first poll spawns the first task), until the stream has nothing more
/// and no task is woken, or it ended. The clock does not move meanwhile.
fn take_ready<T>(stream: &mut Spawned<T>, stepper: &mut StepExecutor) -> Vec<T> {
    let mut taken = Vec::new();
    loop {
        stepper.run_until_stalled();
        match poll_once(stream) {
            Poll::Ready(Some(output)) => taken.push(output),
            Poll::Ready(None) => return taken,
            Poll::Pending if stepper.has_ready() => {}
            Poll::Pending => return taken,
        }
    }
}

/// Like [`take_ready`], to the end: fails if the stream stalls before it.
fn take_to_end<T>(stream: &mut Spawned<T>, stepper: &mut StepExecutor) -> Vec<T> {
    let mut taken = Vec::new();
    loop {
        stepper.run_until_stalled();
        match poll_once(stream) {
            Poll::Ready(Some(output)) => taken.push(output),
            Poll::Ready(None) => return taken,
            Poll::Pending if stepper.has_ready() => {}
            Poll::Pending => panic!("stalled before the end: nothing woken, nothing to take"),
        }
    }
}

/// A never-polled stream's ordering, for tests that run both modes.
fn ordered_if<S>(
    stream: bounded_buffered::BoundedBuffered<S>,
    window: Option<usize>,
) -> bounded_buffered::BoundedBuffered<S>
where
    S: Stream<Item: Future>,
{
    match window {
        Some(window) => stream.ordered(window),
        None => stream,
    }
}

#[test]
fn an_item_that_waited_exactly_the_limit_starts_one_that_waited_longer_expires() {
    for window in [None, Some(4)] {
        reset_clock();
        let gates = Gates::new();
        let mut stepper = StepExecutor::new();
        let mut stream = ordered_if(tagged(&gates, 4).bounded(1, 3), window)
            .max_wait(ms(10))
            .clock(now)
            .spawn_on(stepper.spawner());
        // t = 0: item 0 runs, items 1, 2 and 3 wait.
        assert!(take_ready(&mut stream, &mut stepper).is_empty());
        assert_eq!((gates.running(), stream.stats().waiting), (1, 3));

        // t = 10: item 0 completes; item 1 has waited exactly the limit and
        // starts.
        advance(ms(10));
        gates.open(0);
        let taken = seen_all(take_ready(&mut stream, &mut stepper));
        assert_eq!(taken, [Ok(0)], "{window:?}");
        assert!(gates.is_started(1), "waited exactly the limit: started");
        assert_eq!(stream.stats().expired, 0);

        // t = 11: item 1 completes; items 2 and 3 have waited 11 ms: expired,
        // never polled, and the next considered at once.
        advance(ms(1));
        gates.open(1);
        let taken = seen_all(take_to_end(&mut stream, &mut stepper));
        assert_eq!(
            taken,
            [Ok(1), Err((2, ms(11))), Err((3, ms(11)))],
            "{window:?}"
        );
        assert_eq!(
            gates.polls_of(4)[2..],
            [0, 0],
            "expired items are never polled"
        );
        let stats = stream.stats();
        assert_eq!((stats.expired, stats.completed, stats.pulled), (2, 2, 4));
    }
}

#[test]
fn an_expired_future_is_never_polled_runs_from_into_inner_and_is_dropped_exactly_once() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = tagged(&gates, 3)
        .bounded(1, 2)
        .max_wait(ms(5))
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    advance(ms(10));
    gates.open(0);
    let mut taken = take_to_end(&mut stream, &mut stepper).into_iter();
    assert_eq!(taken.next().map(|outcome| outcome.ok()), Some(Some(0)));
    let first = taken.next().unwrap().unwrap_err();
    let second = taken.next().unwrap().unwrap_err();
    assert_eq!((first.waited(), second.waited()), (ms(10), ms(10)));
    assert_eq!(stream.stats().expired, 2);
    assert_eq!((gates.polls(1), gates.polls(2)), (0, 0), "never polled");
    assert_eq!(
        (gates.drops(1), gates.drops(2)),
        (0, 0),
        "held inside the `Expired`, not dropped"
    );

    // The untouched future still runs to its output, and is dropped once.
    let first = first.into_inner();
    assert_eq!(first.id, 1);
    gates.open(1);
    assert_eq!(first.now_or_never(), Some(1));
    assert_eq!(gates.drops(1), 1);
    // An `Expired` dropped unused drops its future, once.
    drop(second);
    assert_eq!(gates.drops(2), 1);

    drop(stream);
    stepper.run_until_stalled();
    assert_eq!(stepper.live_tasks(), 0);
    gates.check_all_dropped_once();
}

#[test]
fn expired_items_still_held_are_dropped_once_with_the_stream() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    // Ordered: the completed item and the expired ones are held until taken.
    let mut stream = tagged(&gates, 3)
        .bounded(1, 2)
        .ordered(3)
        .max_wait(ms(5))
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();
    advance(ms(6));
    gates.open(0);
    stepper.run_until_stalled();
    let stats = stream.stats();
    assert_eq!((stats.expired, stats.held, stats.active), (2, 3, 0));
    assert_eq!((gates.polls(1), gates.polls(2)), (0, 0));
    assert_eq!(
        gates.counts().futures_dropped,
        1,
        "item 0's, which completed"
    );

    drop(stream);
    stepper.run_until_stalled();
    assert_eq!(stepper.live_tasks(), 0);
    gates.check_all_dropped_once();
}

#[test]
fn ordered_expired_items_come_at_their_input_positions() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    // Two workers, window 4: items 0 and 1 run, 2, 3 and 4 wait. The same
    // schedule as the in-place test (`core_time.rs`), the gates opened at the
    // times its sleeps end.
    let mut stream = tagged(&gates, 5)
        .bounded(2, 3)
        .ordered(4)
        .max_wait(ms(15))
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    assert_eq!((gates.running(), stream.stats().waiting), (2, 3));

    // t = 10: item 1 completes (held behind item 0); item 2 waited 10: starts.
    advance(ms(10));
    gates.open(1);
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    assert!(gates.is_started(2));

    // t = 20: item 2 completes; item 3 waited 20 > 15: expired, held at its
    // position. The window (0 running; 1, 2 and 3 held) is full: item 4 waits.
    advance(ms(10));
    gates.open(2);
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    let stats = stream.stats();
    assert_eq!(
        (stats.expired, stats.active, stats.held, stats.waiting),
        (1, 1, 3, 1)
    );

    // t = 30: item 0 completes; taking it frees the window, and item 4, picked
    // up now, waited 30.
    advance(ms(10));
    gates.open(0);
    let taken = seen_all(take_to_end(&mut stream, &mut stepper));
    assert_eq!(
        taken,
        [Ok(0), Ok(1), Ok(2), Err((3, ms(20))), Err((4, ms(30)))]
    );
    assert_eq!(stream.stats().expired, 2);
    assert_eq!((gates.polls(3), gates.polls(4)), (0, 0));
}

#[test]
fn unordered_expired_items_come_at_once_and_an_item_pulled_into_a_free_worker_never_expires() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = tagged(&gates, 4)
        .bounded(1, 2)
        .max_wait(ms(3))
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    // t = 5: item 0 completes; taking it frees the worker, which meets two
    // expired items and then starts item 3, pulled straight into it.
    advance(ms(5));
    gates.open(0);
    let taken = seen_all(take_ready(&mut stream, &mut stepper));
    assert_eq!(taken, [Ok(0), Err((1, ms(5))), Err((2, ms(5)))]);
    assert!(gates.is_started(3));
    assert_eq!(stream.stats().expired, 2);
    // However long it then runs, item 3 never waited: it cannot expire.
    advance(ms(100));
    gates.open(3);
    let taken = seen_all(take_to_end(&mut stream, &mut stepper));
    assert_eq!(taken, [Ok(3)]);
    assert_eq!(stream.stats().expired, 2);

    // No waiting queue: every item starts as it is pulled, even with a zero
    // limit and a clock that moves between every two steps.
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = tagged(&gates, 6)
        .bounded(2, 0)
        .max_wait(Duration::ZERO)
        .clock(now)
        .spawn_on(stepper.spawner());
    let mut taken = take_ready(&mut stream, &mut stepper);
    for id in 0..6 {
        advance(ms(7));
        gates.open(id);
        taken.extend(take_ready(&mut stream, &mut stepper));
    }
    taken.extend(take_to_end(&mut stream, &mut stepper));
    assert_eq!(seen_all(taken), (0..6).map(Ok).collect::<Vec<_>>());
    assert_eq!(stream.stats().expired, 0);
}

#[test]
fn expired_items_held_count_against_the_waiting_budget_exactly() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let (source, pulled) = counted(tagged(&gates, 100));
    let mut stream = source
        .bounded(2, 3)
        .max_wait(ms(5))
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();
    assert_eq!(pulled.pulled(), 5, "2 running + 3 waiting");

    // t = 10: item 0 completes. Taking it frees a worker, which meets three
    // expired items (held for the consumer in place of their waiting places)
    // and starts item 5, pulled at once.
    advance(ms(10));
    gates.open(0);
    stepper.run_until_stalled();
    assert_eq!(
        poll_once(&mut stream).map(|o| o.map(seen)),
        Poll::Ready(Some(Ok(0)))
    );
    stepper.run_until_stalled();
    let stats = stream.stats();
    assert_eq!(stats.expired, 3);
    assert_eq!((stats.active, stats.waiting, stats.held), (2, 0, 3));
    // Expired items count against `waiting`: nothing more is pulled while they
    // are held, so the source advanced exactly 2 + 3 beyond what was handed out.
    assert_eq!(pulled.pulled(), 6);
    assert!(gates.is_started(5));

    // Each one taken frees one waiting place, never more.
    for held in (0..3).rev() {
        assert!(matches!(poll_once(&mut stream), Poll::Ready(Some(Err(_)))));
        stepper.run_until_stalled();
        let stats = stream.stats();
        assert_eq!(stats.held, held);
        assert!(stats.waiting + stats.held <= 3, "{stats:?}");
        assert!(pulled.pulled() - 4 <= 2 + 3, "the source ran ahead");
    }
}

#[test]
fn taking_expired_items_tops_the_waiting_queue_up_as_in_place() {
    // The same schedule as above: once the three expired items are taken, the
    // in-place stream has its waiting queue full again (`core_time.rs`,
    // `expired_items_count_against_the_waiting_budget_exactly`), and with
    // every future blocked the source has advanced exactly `workers + waiting`
    // items beyond the consumer (contract point 16).
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let (source, pulled) = counted(tagged(&gates, 100));
    let mut stream = source
        .bounded(2, 3)
        .max_wait(ms(5))
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();
    advance(ms(10));
    gates.open(0);
    let taken = seen_all(take_ready(&mut stream, &mut stepper));
    assert_eq!(
        taken,
        [Ok(0), Err((2, ms(10))), Err((3, ms(10))), Err((4, ms(10)))]
    );
    stepper.run_until_stalled();
    // Every future (items 1 and 5) is blocked and nothing is held.
    assert_eq!(gates.closed_started(), [1, 5]);
    let stats = stream.stats();
    assert_eq!(
        (stats.active, stats.waiting, stats.held, pulled.pulled()),
        (2, 3, 0, 4 + 2 + 3),
        "the waiting queue was not topped up after the expired items were taken"
    );
}

#[test]
fn timings_match_a_known_schedule_exactly() {
    // One worker, four items of 10 ms, pulled at once: waits 0, 10, 20, 30;
    // every run 10 ms; the consumer takes each output the moment it exists.
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates
        .source(4)
        .bounded(1, 3)
        .timed()
        .clock(now)
        .spawn_on(stepper.spawner());
    let mut taken = take_ready(&mut stream, &mut stepper);
    for id in 0..4 {
        advance(ms(10));
        gates.open(id);
        taken.extend(take_ready(&mut stream, &mut stepper));
    }
    taken.extend(take_to_end(&mut stream, &mut stepper));
    assert_eq!(taken, [0, 1, 2, 3]);
    let timings = stream.timings().expect("timed");
    assert_eq!(timings.wait.count(), 4);
    assert_eq!((timings.wait.min(), timings.wait.max()), (ms(0), ms(30)));
    assert_eq!(timings.wait.mean(), ms(15));
    assert_eq!(timings.run.count(), 4);
    assert_eq!((timings.run.min(), timings.run.max()), (ms(10), ms(10)));
    assert_eq!(timings.run.quantile(0.5), ms(10));
    assert_eq!(timings.held.count(), 4);
    assert_eq!((timings.held.min(), timings.held.max()), (ms(0), ms(0)));

    // A slow consumer shows in `held`: 5 ms of its own work per output.
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates
        .source(4)
        .bounded(4, 0)
        .timed()
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    advance(ms(1));
    gates.open_all();
    stepper.run_until_stalled();
    assert_eq!(stream.stats().held, 4, "all four complete at 1 ms");
    let mut outputs = 0;
    loop {
        stepper.run_until_stalled();
        match poll_once(&mut stream) {
            Poll::Ready(Some(_)) => outputs += 1,
            Poll::Ready(None) => break,
            Poll::Pending => panic!("stalled"),
        }
        advance(ms(5));
    }
    assert_eq!(outputs, 4);
    let timings = stream.timings().expect("timed");
    assert_eq!((timings.wait.count(), timings.wait.max()), (4, ms(0)));
    assert_eq!((timings.run.min(), timings.run.max()), (ms(1), ms(1)));
    // Handed out at 1, 6, 11 and 16 ms.
    let held = timings.held;
    assert_eq!(
        (held.count(), held.min(), held.max(), held.mean()),
        (4, ms(0), ms(15), ms(7) + ms(1) / 2)
    );
}

#[test]
fn ordered_head_of_line_blocking_shows_in_held() {
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates
        .source(4)
        .bounded(4, 0)
        .ordered(4)
        .timed()
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    // Items 1 to 3 complete at 5 ms and wait for item 0 until 20 ms.
    advance(ms(5));
    for id in 1..4 {
        gates.open(id);
    }
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    advance(ms(15));
    gates.open(0);
    assert_eq!(take_to_end(&mut stream, &mut stepper), [0, 1, 2, 3]);
    let timings = stream.timings().expect("timed");
    let held = timings.held;
    assert_eq!((held.count(), held.min(), held.max()), (4, ms(0), ms(15)));
    assert_eq!(
        (timings.run.min(), timings.run.max()),
        (ms(5), ms(20)),
        "runs of 20, 5, 5 and 5 ms"
    );
}

#[test]
fn each_duration_is_read_at_the_lock_section_that_sees_its_transition() {
    // The wait ends when a task takes the item (not when it was sent for), the
    // run when the task hands the output over, the hold when the consumer takes
    // it: the clock moves between each of these steps.
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates
        .source(3)
        .bounded(1, 1)
        .timed()
        .clock(now)
        .spawn_on(stepper.spawner());
    // t = 0: item 0 starts at once (wait 0), item 1 is pulled into the queue.
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    // t = 10: item 0 completes (run 10); its output keeps the worker.
    advance(ms(10));
    gates.open(0);
    stepper.run_until_stalled();
    // t = 13: the consumer takes it (held 3), which sends for the idle task.
    advance(ms(3));
    assert_eq!(poll_once(&mut stream), Poll::Ready(Some(0)));
    // t = 17: the task takes item 1 (pulled at 0: wait 17) and pulls item 2.
    advance(ms(4));
    stepper.run_until_stalled();
    // t = 22: item 1 completes (run 5) and is taken at once (held 0).
    advance(ms(5));
    gates.open(1);
    stepper.run_until_stalled();
    assert_eq!(poll_once(&mut stream), Poll::Ready(Some(1)));
    // t = 23: the task takes item 2 (pulled at 17: wait 6).
    advance(ms(1));
    stepper.run_until_stalled();
    // t = 25: item 2 completes (run 2) and is taken at once (held 0).
    advance(ms(2));
    gates.open(2);
    assert_eq!(take_to_end(&mut stream, &mut stepper), [2]);

    let timings = stream.timings().expect("timed");
    let (wait, run, held) = (timings.wait, timings.run, timings.held);
    assert_eq!(
        (wait.count(), wait.min(), wait.max(), wait.mean()),
        (3, ms(0), ms(17), Duration::from_nanos(23_000_000 / 3))
    );
    assert_eq!(
        (run.count(), run.min(), run.max(), run.mean()),
        (3, ms(2), ms(10), Duration::from_nanos(17_000_000 / 3))
    );
    assert_eq!(
        (held.count(), held.min(), held.max(), held.mean()),
        (3, ms(0), ms(3), ms(1))
    );
}

#[test]
fn expired_items_show_in_held_not_in_wait_or_run() {
    // The waits recorded are of items that started: never above the limit.
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = tagged(&gates, 4)
        .bounded(1, 3)
        .max_wait(ms(10))
        .timed()
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(take_ready(&mut stream, &mut stepper).is_empty());
    advance(ms(10));
    gates.open(0);
    let mut taken = take_ready(&mut stream, &mut stepper);
    advance(ms(1));
    gates.open(1);
    taken.extend(take_to_end(&mut stream, &mut stepper));
    assert_eq!(
        seen_all(taken),
        [Ok(0), Ok(1), Err((2, ms(11))), Err((3, ms(11)))]
    );
    let timings = stream.timings().expect("timed");
    assert_eq!(
        (timings.wait.count(), timings.wait.max()),
        (2, ms(10)),
        "item 0 waited 0, item 1 exactly the limit"
    );
    assert_eq!(timings.run.count(), 2);
    assert_eq!(timings.held.count(), 4, "every outcome handed out");
}

#[test]
fn timings_are_none_unless_timed() {
    let gates = Gates::new();
    let stepper = StepExecutor::new();
    let plain = gates.source(1).bounded(1, 0).spawn_on(stepper.spawner());
    assert!(plain.timings().is_none());
    let expiring = gates
        .source(1)
        .bounded(1, 0)
        .max_wait(ms(1))
        .spawn_on(stepper.spawner());
    assert!(expiring.timings().is_none());
    let clocked = gates
        .source(1)
        .bounded(1, 0)
        .clock(now)
        .spawn_on(stepper.spawner());
    assert!(clocked.timings().is_none());
    let timed = gates
        .source(1)
        .bounded(1, 0)
        .max_wait(ms(1))
        .timed()
        .spawn_on(stepper.spawner());
    let timings = timed.timings().expect("timed");
    assert_eq!(
        (
            timings.wait.count(),
            timings.run.count(),
            timings.held.count()
        ),
        (0, 0, 0)
    );
    let timed = gates
        .source(1)
        .bounded(1, 0)
        .timed()
        .max_wait(ms(1))
        .spawn_on(stepper.spawner());
    assert!(timed.timings().is_some(), "in either order");
}

#[test]
fn a_clock_nothing_needs_is_never_read() {
    /// Runs the stream to its end, opening the pulled gates one at a time.
    fn run_all<T>(stream: &mut Spawned<T>, stepper: &mut StepExecutor, gates: &Gates) -> usize {
        let mut taken = take_ready(stream, stepper).len();
        while let Some(closed) = gates.closed_pulled().first().copied() {
            advance(ms(1));
            gates.open(closed);
            taken += take_ready(stream, stepper).len();
        }
        taken + take_to_end(stream, stepper).len()
    }

    // `.clock(...)` alone.
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates
        .source(10)
        .bounded(2, 2)
        .clock(now)
        .spawn_on(stepper.spawner());
    assert_eq!(run_all(&mut stream, &mut stepper, &gates), 10);
    assert_eq!(readings(), 0);

    // `max_wait` with no waiting queue: no item ever waits, so no pull, start
    // or completion needs the time.
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates
        .source(10)
        .bounded(2, 0)
        .max_wait(ms(1))
        .clock(now)
        .spawn_on(stepper.spawner());
    assert_eq!(run_all(&mut stream, &mut stepper, &gates), 10);
    assert_eq!(readings(), 0);

    // With a queue, the pulls into it and the pickups read it.
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates
        .source(10)
        .bounded(2, 2)
        .max_wait(ms(100))
        .clock(now)
        .spawn_on(stepper.spawner());
    assert_eq!(run_all(&mut stream, &mut stepper, &gates), 10);
    assert!(readings() > 0);
}

#[test]
fn with_try_bounded_an_expiry_is_an_outcome_and_an_error_still_fails_fast() {
    /// Six gates as fallible futures: item 4 fails.
    fn fallible(
        gates: &Gates,
    ) -> impl Stream<
        Item = Result<impl Future<Output = Result<usize, String>> + Send + 'static, String>,
    > + Send
    + Unpin
    + 'static {
        gates.source(6).map(|gate| {
            Ok(async move {
                let id = gate.await;
                if id == 4 {
                    Err(format!("item {id} failed"))
                } else {
                    Ok(id)
                }
            })
        })
    }

    // Two workers, 0 and 1 run, 2 to 5 wait; 2 and 3 start at 10 ms having
    // waited 10; 4 and 5 have waited 20 at 20 ms: both expire, so item 4 never
    // gets to fail.
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = fallible(&gates)
        .try_bounded(2, 4)
        .ordered(6)
        .max_wait(ms(10))
        .clock(now)
        .spawn_on(stepper.spawner());
    let mut taken = take_ready(&mut stream, &mut stepper);
    for pair in [[0, 1], [2, 3]] {
        advance(ms(10));
        for id in pair {
            gates.open(id);
        }
        taken.extend(take_ready(&mut stream, &mut stepper));
    }
    taken.extend(take_to_end(&mut stream, &mut stepper));
    let seen: Vec<_> = taken
        .into_iter()
        .map(|item| item.expect("no item fails").map_err(|e| e.waited()))
        .collect();
    assert_eq!(seen, [Ok(0), Ok(1), Ok(2), Ok(3), Err(ms(20)), Err(ms(20))]);
    assert_eq!((gates.polls(4), gates.polls(5)), (0, 0));
    assert_eq!(stream.stats().expired, 2);

    // With a looser limit item 4 runs, fails, and ends the run: item 5, still
    // running, is dropped.
    reset_clock();
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = fallible(&gates)
        .try_bounded(2, 4)
        .ordered(6)
        .max_wait(ms(100))
        .clock(now)
        .spawn_on(stepper.spawner());
    let mut taken = take_ready(&mut stream, &mut stepper);
    for pair in [[0, 1], [2, 3]] {
        advance(ms(10));
        for id in pair {
            gates.open(id);
        }
        taken.extend(take_ready(&mut stream, &mut stepper));
    }
    assert!(gates.is_started(4) && gates.is_started(5));
    gates.open(4);
    taken.extend(take_to_end(&mut stream, &mut stepper));
    let seen: Vec<_> = taken
        .into_iter()
        .map(|item| item.map(|outcome| outcome.map_err(|e| e.waited())))
        .collect();
    assert_eq!(
        seen,
        [
            Ok(Ok(0)),
            Ok(Ok(1)),
            Ok(Ok(2)),
            Ok(Ok(3)),
            Err(String::from("item 4 failed"))
        ]
    );
    assert_eq!(stream.stats().expired, 0);
    stepper.run_until_stalled();
    assert_eq!(gates.drops(5), 1, "the running item 5 was dropped, once");
}
