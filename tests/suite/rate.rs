//! The start rate, in both modes, ordered and not (contract point 34):
//! starts at the exact instants the bucket allows (none a nanosecond early),
//! the burst at its boundary, waiting items pulled ahead within the waiting
//! budget while starts wait for tokens (the admission bound unchanged), the
//! timer waking the stream once per token and never otherwise, the rate
//! changed through `Limits`, and its interplay with keys and shedding.
//!
//! Deterministic: gates the test opens, the hand clock and timer
//! (`support::HandTimer`), spawned tasks on an executor the test steps.

use std::time::Duration;

use bounded_buffered::{BoundedStreamExt, Keyed, Shed};
use futures::StreamExt;
use support::{
    Gates, HandTimer, OrderedIf, advance_timers, both_modes, drive, ms, reset_clock, reset_timers,
    timer_use,
};

fn fresh() {
    reset_clock();
    reset_timers();
}

/// 100 starts a second: one every 10 ms.
const PER_SECOND: u32 = 100;

both_modes! {
    /// Point 34: one start per 10 ms, each at its exact instant, and none
    /// before it; meanwhile the queue is full, so with every future blocked
    /// the source advanced exactly the items started plus `waiting`.
    fn starts_come_at_the_rates_exact_instants(mode) {
        for window in [None, Some(8)] {
            fresh();
            let gates = Gates::new();
            let mut run = drive!(
                mode,
                gates.source(20)
                    .bounded(4, 3)
                    .ordered_if(window)
                    .timer(HandTimer)
                    .rate(PER_SECOND, Duration::from_secs(1))
            );
            assert!(run.take_ready().is_empty());
            assert_eq!((gates.started(), gates.pulled()), (1, 4), "{window:?}");
            for started in 2..=4 {
                advance_timers(ms(10) - Duration::from_nanos(1));
                run.settle();
                assert!(run.take_ready().is_empty());
                assert_eq!(gates.started(), started - 1, "not a nanosecond early");
                advance_timers(Duration::from_nanos(1));
                run.settle();
                assert!(run.take_ready().is_empty());
                assert_eq!(gates.started(), started, "{window:?}");
                assert_eq!(gates.pulled(), started + 3, "the queue kept full");
            }
            // Every worker busy now: the rate no longer decides.
            advance_timers(ms(100));
            run.settle();
            assert!(run.take_ready().is_empty());
            assert_eq!((gates.started(), gates.pulled()), (4, 7));
            assert!(run.stats().peak_active <= 4 && run.stats().peak_waiting <= 3);
            run.drop_stream();
            gates.check_all_dropped_once();
        }
    }

    /// Points 31 and 34: the timer is armed once per token a start waits
    /// for, and wakes the stream once for each; with nothing waiting for a
    /// token, it is not armed.
    fn the_timer_wakes_the_stream_once_per_token(mode) {
        fresh();
        let gates = Gates::open_except(&[]);
        let mut run = drive!(
            mode,
            gates.source(4).bounded(2, 2).timer(HandTimer).rate(PER_SECOND, Duration::from_secs(1))
        );
        let mut outputs = run.take_woken();
        assert_eq!(outputs, [0]);
        let wakes = run.wakes();
        for token in 1..=3u64 {
            advance_timers(ms(10));
            run.settle();
            outputs.extend(run.take_woken());
            assert_eq!(outputs.len() as u64, token + 1);
        }
        assert!(run.take_to_end().is_empty());
        let (arms, _) = timer_use();
        assert_eq!(arms, 3, "one sleep per token waited for");
        assert!(run.wakes() - wakes <= 3 + 1, "one wake per token (and the end)");
        assert_eq!(run.stats().rate_waited, ms(30), "30 ms waited for tokens");
        run.drop_stream();
    }

    /// Point 34: a burst of `b` starts at once after a quiet spell, and the
    /// next one `per / n` after the first; then at most `n + b - 1` in any
    /// window of `per`.
    fn a_burst_starts_at_once_then_the_rate_holds(mode) {
        fresh();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            gates.source(10)
                .bounded(10, 0)
                .timer(HandTimer)
                .rate(PER_SECOND, Duration::from_secs(1))
                .burst(3)
        );
        assert!(run.take_ready().is_empty());
        assert_eq!(gates.started(), 3, "the burst at once");
        advance_timers(ms(10) - Duration::from_nanos(1));
        assert!(run.take_ready().is_empty());
        assert_eq!(gates.started(), 3);
        advance_timers(Duration::from_nanos(1));
        assert!(run.take_ready().is_empty());
        assert_eq!(gates.started(), 4);
        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Points 25 and 34: `Limits::set_rate` changes the rate while the
    /// stream runs. The bucket keeps the tokens it holds (or owes), and
    /// refills at the new rate from then on.
    fn the_rate_changes_through_limits(mode) {
        fresh();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            gates.source(10).bounded(10, 2).timer(HandTimer).rate(1, Duration::from_secs(1))
        );
        assert!(run.take_ready().is_empty());
        assert_eq!(gates.started(), 1);
        advance_timers(ms(500));
        assert!(run.take_ready().is_empty());
        assert_eq!(gates.started(), 1, "half a token so far");
        // Ten a second from now: the half token left to come takes 50 ms.
        run.limits().set_rate(10, Duration::from_secs(1));
        assert!(run.take_ready().is_empty());
        assert_eq!(run.limits().rate(), Some((10, Duration::from_secs(1))));
        advance_timers(ms(50) - Duration::from_nanos(1));
        assert!(run.take_ready().is_empty());
        assert_eq!(gates.started(), 1);
        advance_timers(Duration::from_nanos(1));
        assert!(run.take_ready().is_empty());
        assert_eq!(gates.started(), 2, "at the new rate");
        advance_timers(ms(100));
        assert!(run.take_ready().is_empty());
        assert_eq!(gates.started(), 3);
        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Points 27 and 34: with keys, the rate and the key limits both hold;
    /// a token is not spent on an item its key keeps waiting.
    fn the_rate_and_keys_both_hold(mode) {
        fresh();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            gates.source(6)
                .map(|gate| Keyed::new(gate.id() % 2, gate))
                .bounded(4, 4)
                .per_key(1)
                .timer(HandTimer)
                .rate(PER_SECOND, Duration::from_secs(1))
        );
        assert!(run.take_ready().is_empty());
        assert_eq!(gates.started(), 1);
        advance_timers(ms(10));
        assert!(run.take_ready().is_empty());
        assert_eq!(gates.started(), 2, "item 1, of the other key");
        advance_timers(ms(10));
        assert!(run.take_ready().is_empty());
        assert_eq!(gates.started(), 2, "both keys at their limit: no start");
        gates.open(0);
        assert_eq!(run.take_ready(), [0]);
        assert_eq!(gates.started(), 3, "item 2, on the token that waited");
        assert!(gates.is_started(2));
        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Points 29 and 34: a shedding stream whose starts wait for tokens
    /// sheds once its queue is full, as when its workers are busy: the
    /// items past the full queue come back at once, and the waiting ones
    /// start as tokens come.
    fn a_rate_limited_stream_sheds_when_its_queue_is_full(mode) {
        fresh();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            gates.source(10)
                .bounded(4, 2)
                .shed(Shed::Newest)
                .timer(HandTimer)
                .rate(PER_SECOND, Duration::from_secs(1))
        );
        let rejected: Vec<usize> = run
            .take_woken()
            .into_iter()
            .map(|outcome| outcome.unwrap_err().into_inner().id())
            .collect();
        assert_eq!(rejected, [3, 4, 5, 6, 7, 8, 9], "shed while the tokens keep them waiting");
        assert_eq!((gates.started(), run.stats().waiting), (1, 2));
        advance_timers(ms(10));
        assert!(run.take_woken().is_empty());
        assert_eq!(gates.started(), 2);
        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Points 8 and 31: a timer whose sleeps end at once (its clock ahead
    /// of the stream's) makes the stream yield, never spin: a poll of the
    /// consumer (in place) or of the alarm task (spawned) returns, woken
    /// again, with no start the rate does not allow.
    fn a_timer_that_fires_at_once_gets_a_yield_not_a_spin(mode) {
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            gates.source(3)
                .bounded(2, 1)
                .timer(|_: std::time::Instant| std::future::ready(()))
                .rate(1, Duration::from_secs(3_600))
        );
        if mode.is_spawned() {
            assert!(run.poll_alone().is_pending());
            // Each poll of a task returns; the alarm task keeps waking
            // itself, and nothing more starts.
            for _ in 0..20 {
                assert!(run.executor().poll_one(0), "a task is woken");
            }
        } else {
            for _ in 0..3 {
                let wakes = run.wakes();
                assert!(run.poll_alone().is_pending());
                assert_eq!(run.wakes(), wakes + 1, "it yields, woken again");
            }
        }
        assert_eq!(gates.started(), 1, "one token, one start");
        run.drop_stream();
        gates.check_all_dropped_once();
    }
}
