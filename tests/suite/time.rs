//! Time budgets, in both modes (contract points 23 and 24; 21 with
//! `try_bounded`; 16 and 17 spawned): `max_wait` expires a waiting item when a
//! worker frees up for it, exactly at its boundary (waited exactly the limit:
//! started; longer: expired), never polls it, hands its future back untouched
//! (dropped exactly once, wherever it ends up), yields it in completion order
//! or at its input position, counts it in `stats().expired`, and holds it
//! against the waiting budget (unordered) or the window (ordered) until it is
//! taken. `timed()` records exactly the wait, run and held times of a known
//! schedule; a clock nothing needs is never read.
//!
//! Deterministic: the futures are gates the test opens, the clock
//! (`support::now`) moves only when the test advances it, and spawned streams
//! run their tasks on an executor the test steps (`support::drive!`).

use std::task::Poll;
use std::time::Duration;

use bounded_buffered::{BoundedStreamExt, Expired};
use futures::{FutureExt, Stream, StreamExt, stream};
use support::{
    Gate, Gates, Mode, OrderedIf, advance, both_modes, counted, drive, ms, now, poll_once,
    readings, reset_clock,
};

type Outcome = Result<usize, Expired<Gate>>;

/// An outcome as the tests compare it: the output, or the expired item's id
/// and how long it waited.
fn seen(outcome: Outcome) -> Result<usize, (usize, Duration)> {
    outcome.map_err(|expired| {
        let waited = expired.waited();
        (expired.into_inner().id(), waited)
    })
}

fn seen_all(outcomes: Vec<Outcome>) -> Vec<Result<usize, (usize, Duration)>> {
    outcomes.into_iter().map(seen).collect()
}

both_modes! {
    /// Point 23: the boundary is inclusive: waited exactly the limit, started.
    fn an_item_that_waited_exactly_the_limit_starts_one_that_waited_longer_expires(mode) {
        for window in [None, Some(4)] {
            reset_clock();
            let gates = Gates::new();
            let mut run = drive!(
                mode,
                gates.source(4)
                    .bounded(1, 3)
                    .ordered_if(window)
                    .max_wait(ms(10))
                    .clock(now)
            );
            // t = 0: item 0 runs, items 1, 2 and 3 wait.
            assert!(run.take_ready().is_empty());
            assert_eq!((gates.running(), run.stats().waiting), (1, 3));

            // t = 10: item 0 completes; item 1 has waited exactly the limit and
            // starts.
            advance(ms(10));
            gates.open(0);
            assert_eq!(seen_all(run.take_ready()), [Ok(0)], "{window:?}");
            assert!(gates.is_started(1), "waited exactly the limit: started");
            assert_eq!(run.stats().expired, 0);

            // t = 11: item 1 completes; items 2 and 3 have waited 11 ms:
            // expired, never polled, and the next considered at once.
            advance(ms(1));
            gates.open(1);
            assert_eq!(
                seen_all(run.take_to_end()),
                [Ok(1), Err((2, ms(11))), Err((3, ms(11)))],
                "{window:?}"
            );
            assert_eq!(gates.polls_of(4)[2..], [0, 0], "expired items are never polled");
            let stats = run.stats();
            assert_eq!((stats.expired, stats.completed, stats.pulled), (2, 2, 4));
        }
    }

    /// Point 23: an expired item holds its future untouched.
    fn an_expired_future_is_never_polled_runs_from_into_inner_and_is_dropped_exactly_once(mode) {
        reset_clock();
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(3).bounded(1, 2).max_wait(ms(5)).clock(now));
        assert!(run.take_ready().is_empty());
        advance(ms(10));
        gates.open(0);
        let mut taken = run.take_to_end().into_iter();
        assert_eq!(taken.next().map(|outcome| outcome.ok()), Some(Some(0)));
        let first = taken.next().unwrap().unwrap_err();
        let second = taken.next().unwrap().unwrap_err();
        assert_eq!((first.waited(), second.waited()), (ms(10), ms(10)));
        assert_eq!(run.stats().expired, 2);
        assert_eq!((gates.polls(1), gates.polls(2)), (0, 0), "never polled");
        assert_eq!(
            (gates.drops(1), gates.drops(2)),
            (0, 0),
            "held inside the `Expired`, not dropped"
        );
        assert_eq!(gates.counts().futures_dropped, 1, "only item 0 was dropped so far");

        // The untouched future still runs to its output, and is dropped once.
        let first = first.into_inner();
        assert_eq!(first.id(), 1);
        gates.open(1);
        assert_eq!(first.now_or_never(), Some(1));
        assert_eq!(gates.drops(1), 1);
        // An `Expired` dropped unused drops its future, once.
        drop(second);
        assert_eq!(gates.drops(2), 1);

        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Points 9 and 19: expired items still held go with the stream, once.
    fn expired_items_still_held_are_dropped_once_with_the_stream(mode) {
        reset_clock();
        let gates = Gates::new();
        // Ordered: the completed item and the expired ones are held until taken.
        let mut run = drive!(
            mode,
            gates.source(3).bounded(1, 2).ordered(3).max_wait(ms(5)).clock(now)
        );
        assert!(run.poll().is_pending());
        advance(ms(6));
        gates.open(0);
        if mode.is_spawned() {
            // Point 18: the tasks complete item 0 and pick up the expired ones
            // while the consumer is away.
            run.settle();
            let stats = run.stats();
            assert_eq!((stats.expired, stats.held, stats.active), (2, 3, 0));
        } else {
            // Point 14: in place, the consumer's poll does it, and hands out item
            // 0 in the same call.
            assert!(matches!(run.poll(), Poll::Ready(Some(Ok(0)))));
            let stats = run.stats();
            assert_eq!((stats.expired, stats.held, stats.active), (2, 2, 0));
        }
        assert_eq!((gates.polls(1), gates.polls(2)), (0, 0));
        assert_eq!(gates.counts().futures_dropped, 1, "item 0's, which completed");

        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Point 23 with point 5: an expired item is yielded at its input position.
    fn ordered_expired_items_come_at_their_input_positions(mode) {
        reset_clock();
        let gates = Gates::new();
        // Two workers, window 4: items 0 and 1 run, 2, 3 and 4 wait.
        let mut run = drive!(
            mode,
            gates.source(5).bounded(2, 3).ordered(4).max_wait(ms(15)).clock(now)
        );
        assert!(run.take_ready().is_empty());
        assert_eq!((gates.running(), run.stats().waiting), (2, 3));

        // t = 10: item 1 completes (held behind item 0); item 2 waited 10: starts.
        advance(ms(10));
        gates.open(1);
        assert!(run.take_ready().is_empty());
        assert!(gates.is_started(2));

        // t = 20: item 2 completes; item 3 waited 20 > 15: expired, held at its
        // position. The window (0 running; 1, 2 and 3 held) is full: item 4 waits.
        advance(ms(10));
        gates.open(2);
        assert!(run.take_ready().is_empty());
        let stats = run.stats();
        assert_eq!((stats.expired, stats.active, stats.held, stats.waiting), (1, 1, 3, 1));

        // t = 30: item 0 completes; taking it frees the window, and item 4,
        // picked up now, waited 30.
        advance(ms(10));
        gates.open(0);
        assert_eq!(
            seen_all(run.take_to_end()),
            [Ok(0), Ok(1), Ok(2), Err((3, ms(20))), Err((4, ms(30)))]
        );
        assert_eq!(run.stats().expired, 2);
        assert_eq!((gates.polls(3), gates.polls(4)), (0, 0));
    }

    /// Point 23: unordered, an expired item comes at once; an item pulled
    /// straight into a free worker never waited, so it never expires.
    fn unordered_expired_items_come_at_once_and_an_item_pulled_into_a_free_worker_never_expires(
        mode
    ) {
        reset_clock();
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(4).bounded(1, 2).max_wait(ms(3)).clock(now));
        assert!(run.take_ready().is_empty());
        // t = 5: item 0 completes; taking it frees the worker, which meets two
        // expired items and then starts item 3, pulled straight into it.
        advance(ms(5));
        gates.open(0);
        assert_eq!(seen_all(run.take_ready()), [Ok(0), Err((1, ms(5))), Err((2, ms(5)))]);
        assert!(gates.is_started(3));
        assert_eq!(run.stats().expired, 2);
        // However long it then runs, item 3 never waited: it cannot expire.
        advance(ms(100));
        gates.open(3);
        assert_eq!(seen_all(run.take_to_end()), [Ok(3)]);
        assert_eq!(run.stats().expired, 2);

        // No waiting queue: every item starts as it is pulled, even with a zero
        // limit and a clock that moves between every two steps.
        reset_clock();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            gates.source(6).bounded(2, 0).max_wait(Duration::ZERO).clock(now)
        );
        let mut taken = run.take_ready();
        for id in 0..6 {
            advance(ms(7));
            gates.open(id);
            taken.extend(run.take_ready());
        }
        taken.extend(run.take_to_end());
        assert_eq!(seen_all(taken), (0..6).map(Ok).collect::<Vec<_>>());
        assert_eq!(run.stats().expired, 0);

        // With a queue and a zero limit, an item that waited any time at all
        // expires; one picked up in the section it was pulled in waited zero.
        reset_clock();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            gates.source(4).bounded(1, 3).max_wait(Duration::ZERO).clock(now)
        );
        assert!(run.take_ready().is_empty());
        advance(ms(3));
        gates.open(0);
        assert_eq!(
            seen_all(run.take_to_end()),
            [Ok(0), Err((1, ms(3))), Err((2, ms(3))), Err((3, ms(3)))]
        );
    }

    /// Points 3, 16 and 23: expired items held count against `waiting`,
    /// exactly; taken, the queue is topped up again, exactly.
    fn expired_items_held_count_against_the_waiting_budget_exactly(mode) {
        reset_clock();
        let gates = Gates::new();
        let (source, pulled) = counted(gates.source(100));
        let mut run = drive!(mode, source.bounded(2, 3).max_wait(ms(5)).clock(now));
        assert!(run.poll().is_pending());
        assert_eq!(pulled.pulled(), 5, "2 running + 3 waiting");

        // t = 10: item 0 completes. Taking it frees a worker, which meets three
        // expired items (held for the consumer in place of their waiting
        // places) and starts item 5, pulled at once.
        advance(ms(10));
        gates.open(0);
        assert_eq!(run.poll().map(|o| o.map(seen)), Poll::Ready(Some(Ok(0))));
        let stats = run.stats();
        assert_eq!(stats.expired, 3);
        assert_eq!((stats.active, stats.waiting, stats.held), (2, 0, 3));
        // Nothing more is pulled while they are held, so the source advanced
        // exactly 2 + 3 beyond what was handed out.
        assert_eq!(pulled.pulled(), 6);
        assert!(gates.is_started(5));

        // Each one taken frees one waiting place, never more.
        for held in (0..3).rev() {
            assert!(matches!(run.poll(), Poll::Ready(Some(Err(_)))));
            let stats = run.stats();
            assert_eq!(stats.held, held);
            assert_eq!(stats.waiting + stats.held, 3, "{stats:?}");
            assert_eq!(pulled.pulled() - (3 - held), 6, "the source ran ahead");
        }
        // Every future (items 1 and 5) is blocked and nothing is held: the
        // waiting queue is full again, exactly.
        assert_eq!(gates.closed_started(), [1, 5]);
        let stats = run.stats();
        assert_eq!(
            (stats.active, stats.waiting, stats.held, pulled.pulled()),
            (2, 3, 0, 4 + 2 + 3),
            "the waiting queue was not topped up after the expired items were taken"
        );
    }

    /// Point 24: the three durations of a known schedule, exactly.
    fn timings_match_a_known_schedule_exactly(mode) {
        // One worker, four items of 10 ms, pulled at once: waits 0, 10, 20, 30;
        // every run 10 ms; the consumer takes each output the moment it exists.
        reset_clock();
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(4).bounded(1, 3).timed().clock(now));
        let mut taken = run.take_ready();
        for id in 0..4 {
            advance(ms(10));
            gates.open(id);
            taken.extend(run.take_ready());
        }
        taken.extend(run.take_to_end());
        assert_eq!(taken, [0, 1, 2, 3]);
        let timings = run.timings().expect("timed");
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
        let mut run = drive!(mode, gates.source(4).bounded(4, 0).timed().clock(now));
        assert!(run.take_ready().is_empty());
        advance(ms(1));
        gates.open_all();
        if mode.is_spawned() {
            run.settle();
            assert_eq!(run.stats().held, 4, "all four complete at 1 ms");
        }
        let mut outputs = 0;
        loop {
            match run.poll() {
                Poll::Ready(Some(_)) => outputs += 1,
                Poll::Ready(None) => break,
                Poll::Pending => panic!("stalled"),
            }
            advance(ms(5));
        }
        assert_eq!(outputs, 4);
        let timings = run.timings().expect("timed");
        assert_eq!((timings.wait.count(), timings.wait.max()), (4, ms(0)));
        assert_eq!((timings.run.min(), timings.run.max()), (ms(1), ms(1)));
        // Handed out at 1, 6, 11 and 16 ms.
        let held = timings.held;
        assert_eq!(
            (held.count(), held.min(), held.max(), held.mean()),
            (4, ms(0), ms(15), ms(7) + ms(1) / 2)
        );
        let p75 = held.quantile(0.75).as_secs_f64();
        assert!((p75 - 0.010).abs() <= 0.010 * 0.01, "p75 {p75}");
    }

    /// Point 24 with point 5: a slow head item shows in `held`.
    fn ordered_head_of_line_blocking_shows_in_held(mode) {
        reset_clock();
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(4).bounded(4, 0).ordered(4).timed().clock(now));
        assert!(run.take_ready().is_empty());
        // Items 1 to 3 complete at 5 ms and wait for item 0 until 20 ms.
        advance(ms(5));
        for id in 1..4 {
            gates.open(id);
        }
        assert!(run.take_ready().is_empty());
        advance(ms(15));
        gates.open(0);
        assert_eq!(run.take_to_end(), [0, 1, 2, 3]);
        let timings = run.timings().expect("timed");
        let held = timings.held;
        assert_eq!((held.count(), held.min(), held.max()), (4, ms(0), ms(15)));
        assert_eq!(
            (timings.run.min(), timings.run.max()),
            (ms(5), ms(20)),
            "runs of 20, 5, 5 and 5 ms"
        );
    }

    /// Point 24: expired items are held, never waited for or run.
    fn expired_items_show_in_held_not_in_wait_or_run(mode) {
        // The waits recorded are of items that started: never above the limit.
        reset_clock();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            gates.source(4).bounded(1, 3).max_wait(ms(10)).timed().clock(now)
        );
        assert!(run.take_ready().is_empty());
        advance(ms(10));
        gates.open(0);
        let mut taken = run.take_ready();
        advance(ms(1));
        gates.open(1);
        taken.extend(run.take_to_end());
        assert_eq!(seen_all(taken), [Ok(0), Ok(1), Err((2, ms(11))), Err((3, ms(11)))]);
        let timings = run.timings().expect("timed");
        assert_eq!(
            (timings.wait.count(), timings.wait.max()),
            (2, ms(10)),
            "item 0 waited 0, item 1 exactly the limit"
        );
        assert_eq!(timings.run.count(), 2);
        assert_eq!(timings.held.count(), 4, "every outcome handed out");
    }

    /// Point 24: `timings()` is `Some` exactly when `timed()` was called, in
    /// either order with `max_wait`.
    fn timings_are_none_unless_timed(mode) {
        let gates = Gates::new();
        assert!(drive!(mode, gates.source(1).bounded(1, 0)).timings().is_none());
        let expiring = drive!(mode, gates.source(1).bounded(1, 0).max_wait(ms(1)));
        assert!(expiring.timings().is_none());
        let clocked = drive!(mode, gates.source(1).bounded(1, 0).clock(now));
        assert!(clocked.timings().is_none());
        let timed = drive!(mode, gates.source(1).bounded(1, 0).max_wait(ms(1)).timed());
        let timings = timed.timings().expect("timed");
        assert_eq!(
            (timings.wait.count(), timings.run.count(), timings.held.count()),
            (0, 0, 0)
        );
        let timed = drive!(mode, gates.source(1).bounded(1, 0).timed().max_wait(ms(1)));
        assert!(timed.timings().is_some(), "in either order");
    }

    /// Point 24: a stream reads the clock only for what needs it.
    fn a_clock_nothing_needs_is_never_read(mode) {
        /// Runs the stream to its end, opening the pulled gates one at a time.
        fn run_all<T>(run: &mut support::Driven<'_, T>, gates: &Gates) -> usize {
            let mut taken = run.take_ready().len();
            while let Some(closed) = gates.closed_pulled().first().copied() {
                advance(ms(1));
                gates.open(closed);
                taken += run.take_ready().len();
            }
            taken + run.take_to_end().len()
        }

        // `.clock(...)` alone.
        reset_clock();
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(10).bounded(2, 2).clock(now));
        assert_eq!(run_all(&mut run, &gates), 10);
        assert_eq!(readings(), 0);

        // `max_wait` with no waiting queue: no item ever waits, so no pull,
        // start or completion needs the time.
        reset_clock();
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(10).bounded(2, 0).max_wait(ms(1)).clock(now));
        assert_eq!(run_all(&mut run, &gates), 10);
        assert_eq!(readings(), 0);

        // With a queue, the pulls into it and the pickups read it.
        reset_clock();
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(10).bounded(2, 2).max_wait(ms(100)).clock(now));
        assert_eq!(run_all(&mut run, &gates), 10);
        assert!(readings() > 0);
    }

    /// Points 21 and 23: with `try_bounded`, an expiry is an outcome and an
    /// error still fails fast.
    fn with_try_bounded_an_expiry_is_an_outcome_and_an_error_still_fails_fast(mode) {
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
                    if id == 4 { Err(format!("item {id} failed")) } else { Ok(id) }
                })
            })
        }

        // Two workers, 0 and 1 run, 2 to 5 wait; 2 and 3 start at 10 ms having
        // waited 10; 4 and 5 have waited 20 at 20 ms: both expire, so item 4
        // never gets to fail.
        reset_clock();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            fallible(&gates).try_bounded(2, 4).ordered(6).max_wait(ms(10)).clock(now)
        );
        let mut taken = run.take_ready();
        for pair in [[0, 1], [2, 3]] {
            advance(ms(10));
            for id in pair {
                gates.open(id);
            }
            taken.extend(run.take_ready());
        }
        taken.extend(run.take_to_end());
        let seen: Vec<_> = taken
            .into_iter()
            .map(|item| item.expect("no item fails").map_err(|e| e.waited()))
            .collect();
        assert_eq!(seen, [Ok(0), Ok(1), Ok(2), Ok(3), Err(ms(20)), Err(ms(20))]);
        assert_eq!((gates.polls(4), gates.polls(5)), (0, 0));
        assert_eq!(run.stats().expired, 2);

        // With a looser limit item 4 runs, fails, and ends the run: item 5,
        // still running, is dropped.
        reset_clock();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            fallible(&gates).try_bounded(2, 4).ordered(6).max_wait(ms(100)).clock(now)
        );
        let mut taken = run.take_ready();
        for pair in [[0, 1], [2, 3]] {
            advance(ms(10));
            for id in pair {
                gates.open(id);
            }
            taken.extend(run.take_ready());
        }
        assert!(gates.is_started(4) && gates.is_started(5));
        gates.open(4);
        taken.extend(run.take_to_end());
        let seen: Vec<_> = taken
            .into_iter()
            .map(|item| item.map(|outcome| outcome.map_err(|e| e.waited())))
            .collect();
        assert_eq!(
            seen,
            [Ok(Ok(0)), Ok(Ok(1)), Ok(Ok(2)), Ok(Ok(3)), Err(String::from("item 4 failed"))]
        );
        assert_eq!(run.stats().expired, 0);
        run.settle();
        assert_eq!(gates.drops(5), 1, "the running item 5 was dropped, once");
    }

    /// Point 23: `max_wait` and `ordered` combine in either order.
    fn max_wait_and_ordered_work_in_either_order(mode) {
        fn outcomes(mode: Mode, ordered_first: bool) -> Vec<Result<usize, (usize, Duration)>> {
            reset_clock();
            let gates = Gates::new();
            let source = gates.source(6).bounded(1, 5);
            let mut run = if ordered_first {
                drive!(mode, source.ordered(3).max_wait(ms(9)).clock(now))
            } else {
                drive!(mode, source.max_wait(ms(9)).ordered(3).clock(now))
            };
            let mut taken = run.take_ready();
            for id in 0..6 {
                advance(ms(4));
                gates.open(id);
                taken.extend(run.take_ready());
            }
            taken.extend(run.take_to_end());
            seen_all(taken)
        }
        let first = outcomes(mode, true);
        assert_eq!(first, outcomes(mode, false));
        // One worker, 4 ms each, window 3: item 1 waited 4, item 2 8, item 3
        // 12 > 9 (expired, held), then item 4 waited 12 and item 5 12 too.
        assert_eq!(
            first,
            [Ok(0), Ok(1), Ok(2), Err((3, ms(12))), Err((4, ms(12))), Err((5, ms(12)))]
        );
    }
}

/// Point 24, in place: the clock is read at most once per `poll_next` (spawned
/// mode reads it at most once per lock section, which a test cannot count from
/// outside).
#[test]
fn the_clock_is_read_at_most_once_per_poll_in_place() {
    reset_clock();
    let mut stream = stream::iter(0..100u32)
        .map(|n| async move { n })
        .bounded(4, 4)
        .timed()
        .clock(now);
    let mut polls = 0;
    loop {
        polls += 1;
        if let Poll::Ready(None) = poll_once(&mut stream) {
            break;
        }
    }
    let reads = readings();
    assert!(
        reads > 0 && reads <= polls,
        "{reads} readings in {polls} polls"
    );
}

/// Point 11: `max_wait` must come before the first poll.
#[test]
#[should_panic(expected = "`max_wait` must be called before the stream is first polled")]
fn max_wait_after_the_first_poll_panics() {
    let mut stream = stream::iter(0..3u32)
        .map(|n| async move { n })
        .bounded(1, 0);
    let _ = poll_once(&mut stream);
    let _ = stream.max_wait(ms(1));
}

/// Point 24, spawned: each duration is read at the lock section that sees its
/// transition. The wait ends when a task takes the item (not when it was sent
/// for), the run when the task hands the output over, the hold when the
/// consumer takes it: the clock moves between each of these steps, which in
/// place all happen inside one `poll_next`.
#[test]
fn spawned_each_duration_is_read_at_the_lock_section_that_sees_its_transition() {
    reset_clock();
    let gates = Gates::new();
    let mut run = drive!(
        Mode::Spawned,
        gates.source(3).bounded(1, 1).timed().clock(now)
    );
    // t = 0: item 0 starts at once (wait 0), item 1 is pulled into the queue.
    assert!(run.take_ready().is_empty());
    // t = 10: item 0 completes (run 10); its output keeps the worker.
    advance(ms(10));
    gates.open(0);
    run.settle();
    // t = 13: the consumer takes it (held 3), which sends for the idle task;
    // the task is not run yet.
    advance(ms(3));
    assert_eq!(run.poll_alone(), Poll::Ready(Some(0)));
    // t = 17: the task takes item 1 (pulled at 0: wait 17) and pulls item 2.
    advance(ms(4));
    run.settle();
    // t = 22: item 1 completes (run 5) and is taken at once (held 0).
    advance(ms(5));
    gates.open(1);
    run.settle();
    assert_eq!(run.poll_alone(), Poll::Ready(Some(1)));
    // t = 23: the task takes item 2 (pulled at 17: wait 6).
    advance(ms(1));
    run.settle();
    // t = 25: item 2 completes (run 2) and is taken at once (held 0).
    advance(ms(2));
    gates.open(2);
    assert_eq!(run.take_to_end(), [2]);

    let timings = run.timings().expect("timed");
    let (wait, run_time, held) = (timings.wait, timings.run, timings.held);
    assert_eq!(
        (wait.count(), wait.min(), wait.max(), wait.mean()),
        (3, ms(0), ms(17), Duration::from_nanos(23_000_000 / 3))
    );
    assert_eq!(
        (
            run_time.count(),
            run_time.min(),
            run_time.max(),
            run_time.mean()
        ),
        (3, ms(2), ms(10), Duration::from_nanos(17_000_000 / 3))
    );
    assert_eq!(
        (held.count(), held.min(), held.max(), held.mean()),
        (3, ms(0), ms(3), ms(1))
    );
}
