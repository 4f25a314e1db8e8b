//! Deadlines, in both modes, ordered and not (contract points 31 to 33): the
//! run's deadline stops everything at its exact instant (before it items
//! still start; from it on nothing is pulled or started), hands back every
//! waiting item late and untouched, reports every running one cancelled by
//! its input position, still yields what completed, and ends with the
//! deadline; the timer wakes the stream for it once, with nothing else to
//! wake it; items' own deadlines are checked at pickup, at their exact
//! boundary, and keep the admission bound.
//!
//! Deterministic: the futures are gates the test opens, the clock and the
//! timer (`support::HandTimer`) move only when the test advances them, and
//! spawned streams run their tasks on an executor the test steps.

use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, Deadline, Unfinished};
use futures::StreamExt;
use support::{
    Gate, Gates, HandTimer, OrderedIf, advance_timers, both_modes, drive, ms, now, reset_clock,
    reset_timers, timer_use,
};

/// What came back, as the tests compare it: an output, or the cause and the
/// item's input position (or, for the deadline, whether the source ended).
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Done(usize),
    Late(u64),
    Cancelled(u64),
    Deadline { source_ended: bool },
}

/// Reads an outcome, checking that a late item hands back its own future
/// (gate `n` is the source's `n`th item), which is dropped here.
fn seen<F: Into<Gate>>(outcome: Result<usize, Unfinished<F>>) -> Seen {
    match outcome {
        Ok(id) => Seen::Done(id),
        Err(Unfinished::Late(late)) => {
            let position = late.position();
            assert!(!late.is_own(), "the run's deadline");
            let gate: Gate = late.into_inner().into();
            assert_eq!(gate.id() as u64, position, "its own future");
            Seen::Late(position)
        }
        Err(Unfinished::Cancelled(cancelled)) => Seen::Cancelled(cancelled.position()),
        Err(Unfinished::Deadline(end)) => Seen::Deadline {
            source_ended: end.source_ended(),
        },
        Err(other) => panic!("unexpected {other}"),
    }
}

fn seen_all<F: Into<Gate>>(outcomes: Vec<Result<usize, Unfinished<F>>>) -> Vec<Seen> {
    outcomes.into_iter().map(seen).collect()
}

fn fresh() {
    reset_clock();
    reset_timers();
}

both_modes! {
    /// Point 32: the boundary. Before the deadline an item still starts;
    /// from it on nothing is pulled or started: the running item is
    /// cancelled (its position said), the waiting one comes back late and
    /// never polled, the rest of the source is never pulled, and the
    /// deadline comes last.
    fn the_deadline_stops_the_run_at_its_exact_instant(mode) {
        for window in [None, Some(2)] {
            fresh();
            let gates = Gates::new();
            let mut run = drive!(
                mode,
                gates.source(10)
                    .bounded(1, 1)
                    .ordered_if(window)
                    .timer(HandTimer)
                    .deadline(now() + ms(10))
            );
            // t = 0: item 0 runs, item 1 waits.
            assert!(run.take_ready().is_empty());
            assert_eq!((gates.started(), gates.pulled()), (1, 2));

            // t = 9: item 0 completes, item 1 starts, item 2 is pulled.
            advance_timers(ms(9));
            gates.open(0);
            assert_eq!(seen_all(run.take_ready()), [Seen::Done(0)], "{window:?}");
            assert_eq!((gates.started(), gates.pulled()), (2, 3), "{window:?}");

            // t = 10: the timer wakes the stream; the run stops.
            advance_timers(ms(1));
            assert_eq!(
                seen_all(run.take_to_end()),
                [Seen::Cancelled(1), Seen::Late(2), Seen::Deadline { source_ended: false }],
                "{window:?}"
            );
            assert_eq!((gates.started(), gates.pulled()), (2, 3), "nothing after the deadline");
            assert_eq!(gates.polls(2), 0, "a late item is never polled");
            let stats = run.stats();
            assert!(stats.deadline_passed);
            assert_eq!((stats.completed, stats.cancelled, stats.late), (1, 1, 1));
            assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));
            run.drop_stream();
            gates.check_all_dropped_once();
        }
    }

    /// Points 31 and 32: with every future blocked and the consumer parked,
    /// the timer alone wakes the stream, once, at the deadline; it is armed
    /// once, not re-armed on every poll, and nothing polls it before then.
    fn only_the_timer_wakes_a_blocked_run_once_at_its_deadline(mode) {
        fresh();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            gates.source(3).bounded(2, 1).timer(HandTimer).deadline(now() + ms(50))
        );
        assert!(run.poll_woken().is_pending());
        let wakes = run.wakes();
        let (arms, _) = timer_use();
        assert_eq!(arms, 1, "one sleep, for the deadline");

        advance_timers(ms(49));
        run.settle();
        assert_eq!(run.wakes(), wakes, "nothing to wake for before the deadline");

        advance_timers(ms(1));
        run.settle();
        assert_eq!(run.wakes(), wakes + 1, "one wake, at the deadline");
        assert_eq!(
            seen_all(run.take_to_end()),
            [Seen::Cancelled(0), Seen::Cancelled(1), Seen::Late(2), Seen::Deadline { source_ended: false }]
        );
        assert_eq!(timer_use().0, 1, "never re-armed for the same instant");
        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Point 32: completed work is never thrown away. Ordered, an output
    /// held behind a running item is yielded after that item's
    /// cancellation, at its own position.
    fn outputs_held_at_the_deadline_are_still_yielded_in_order(mode) {
        fresh();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            gates.source(3).bounded(3, 0).ordered(3).timer(HandTimer).deadline(now() + ms(5))
        );
        assert!(run.take_ready().is_empty());
        gates.open(1);
        assert!(run.take_ready().is_empty(), "held behind item 0");
        advance_timers(ms(5));
        assert_eq!(
            seen_all(run.take_to_end()),
            [
                Seen::Cancelled(0),
                Seen::Done(1),
                Seen::Cancelled(2),
                // With no waiting place, the stream never pulled past item 2.
                Seen::Deadline { source_ended: false },
            ]
        );
        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Point 32 with point 22: `close` drains as usual, and the deadline cuts
    /// a drain that lasts past it.
    fn the_deadline_cuts_a_drain_short(mode) {
        fresh();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            gates.source(5).bounded(2, 1).timer(HandTimer).deadline(now() + ms(5))
        );
        assert!(run.take_ready().is_empty());
        run.close();
        gates.open(0);
        assert_eq!(seen_all(run.take_ready()), [Seen::Done(0)]);
        advance_timers(ms(5));
        let rest = seen_all(run.take_to_end());
        assert_eq!(rest.last(), Some(&Seen::Deadline { source_ended: false }));
        assert!(rest.contains(&Seen::Cancelled(1)), "{rest:?}");
        assert_eq!(run.stats().cancelled + run.stats().late, 2);
        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Point 32: a deadline passed before the first poll pulls nothing.
    fn a_deadline_already_passed_pulls_nothing(mode) {
        fresh();
        let gates = Gates::new();
        let deadline = now();
        let mut run = drive!(
            mode,
            gates.source(5).bounded(2, 2).timer(HandTimer).deadline(deadline)
        );
        assert_eq!(seen_all(run.take_woken()), [Seen::Deadline { source_ended: false }]);
        assert!(matches!(run.poll(), Poll::Ready(None)));
        assert_eq!((gates.pulled(), run.stats().pulled), (0, 0));
        run.drop_stream();
    }

    /// Point 33: an item's own deadline is checked at pickup, at its exact
    /// boundary: now before it, it starts; now at it, it is late, never
    /// polled, its future handed back.
    fn an_items_own_deadline_is_checked_at_pickup_at_its_boundary(mode) {
        for window in [None, Some(3)] {
            fresh();
            let gates = Gates::new();
            let start = now();
            // Item n must start before t = 10 + n ms.
            let mut run = drive!(
                mode,
                gates.source(4)
                    .map(move |gate| Deadline::new(start + ms(10 + gate.id() as u64), gate))
                    .bounded(1, 3)
                    .ordered_if(window)
                    .item_deadlines()
                    .clock(now)
            );
            assert!(run.take_ready().is_empty());
            // t = 10: item 0 completes; item 1 (deadline 11) starts.
            advance_timers(ms(10));
            gates.open(0);
            // t = 12: item 1 completes; item 2's deadline (12) is now: late;
            // item 3 (13) starts.
            let first = run.take_ready();
            advance_timers(ms(2));
            gates.open(1);
            let mut outcomes = first;
            outcomes.extend(run.take_ready());
            gates.open(3);
            outcomes.extend(run.take_to_end());
            let outcomes: Vec<_> = outcomes
                .into_iter()
                .map(|outcome| match outcome {
                    Ok(id) => Ok(id),
                    Err(Unfinished::Late(late)) => {
                        assert!(late.is_own());
                        assert_eq!(late.deadline(), start + ms(12));
                        Err(late.into_inner().into_inner().id())
                    }
                    Err(other) => panic!("unexpected {other}"),
                })
                .collect();
            assert_eq!(outcomes, [Ok(0), Ok(1), Err(2), Ok(3)], "{window:?}");
            assert_eq!(gates.polls(2), 0, "never polled");
            assert_eq!(run.stats().late, 1);
            run.drop_stream();
            gates.check_all_dropped_once();
        }
    }

    /// Point 33: with items' own deadlines every item goes through a waiting
    /// place (at least one): with every future blocked the source advanced
    /// exactly `workers + max(waiting, 1)` items.
    fn item_deadlines_keep_the_admission_bound(mode) {
        for waiting in [0, 2] {
            fresh();
            let gates = Gates::new();
            let later = now() + ms(1_000);
            let mut run = drive!(
                mode,
                gates.source(20)
                    .map(move |gate| Deadline::new(later, gate))
                    .bounded(3, waiting)
                    .item_deadlines()
                    .clock(now)
            );
            assert!(run.take_ready().is_empty());
            assert_eq!(gates.pulled(), 3 + waiting.max(1), "waiting {waiting}");
            assert_eq!(gates.started(), 3);
            run.drop_stream();
            gates.check_all_dropped_once();
        }
    }

    /// Point 33: an item still waiting when the run's deadline passes comes
    /// back with the earlier of its own deadline and the run's: one whose
    /// own came first says so (its caller is gone), the others carry the
    /// run's (to retry).
    fn a_waiting_item_late_at_the_run_deadline_names_the_deadline_that_came_first(mode) {
        fresh();
        let gates = Gates::new();
        let start = now();
        // Item 1's caller gave it 5 ms; item 2 has all the time in the world.
        let own = move |id: usize| start + if id == 1 { ms(5) } else { ms(1_000) };
        let mut run = drive!(
            mode,
            gates.source(3)
                .map(move |gate| Deadline::new(own(gate.id()), gate))
                .bounded(1, 2)
                .item_deadlines()
                .timer(HandTimer)
                .deadline(start + ms(10))
        );
        assert!(run.take_ready().is_empty());
        advance_timers(ms(10));
        let outcomes = run.take_to_end();
        let lates: Vec<(u64, bool, std::time::Duration)> = outcomes
            .iter()
            .filter_map(|outcome| match outcome {
                Err(Unfinished::Late(late)) => {
                    assert_eq!(late.get_ref().deadline(), own(late.position() as usize));
                    Some((late.position(), late.is_own(), late.deadline() - start))
                }
                _ => None,
            })
            .collect();
        assert_eq!(lates, [(1, true, ms(5)), (2, false, ms(10))]);
        drop(outcomes);
        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Points 21 and 32: a run that failed fast before its deadline is over:
    /// the deadline passing later adds nothing, and the error comes last.
    fn a_deadline_after_a_failure_changes_nothing(mode) {
        fresh();
        let failing = futures::stream::iter(0..4u32).map(|n| {
            Ok::<_, String>(async move { if n == 1 { Err(format!("item {n}")) } else { Ok(n) } })
        });
        let mut run = drive!(
            mode,
            failing.try_bounded(1, 1).timer(HandTimer).deadline(now() + ms(10))
        );
        // Item 0's output is taken; item 1's error is seen, not yet taken,
        // when the deadline passes.
        let Poll::Ready(Some(first)) = run.poll_woken() else {
            panic!("item 0's output");
        };
        assert!(run.stats().completed >= 2, "the error is seen");
        advance_timers(ms(10));
        let mut outcomes = vec![first];
        outcomes.extend(run.take_to_end());
        let seen: Vec<_> = outcomes
            .into_iter()
            .map(|outcome| outcome.map(|item| item.map_err(|unfinished| unfinished.to_string())))
            .collect();
        assert_eq!(seen, [Ok(Ok(0)), Err("item 1".to_string())]);
        assert!(!run.stats().deadline_passed);
    }
}
