//! Per-key limits, in both modes (contract point 27): at most `limit` items of
//! one key run at once; a free worker starts the oldest waiting item whose key
//! is below its limit, so items of other keys start past a blocked one; with
//! `per_key(1)` the items of one key run one at a time, in input order; every
//! item is pulled into a waiting place first (at least one), so with every
//! future blocked the source has advanced exactly `active + max(waiting, 1)`
//! items, and `active` is below `workers` only while every waiting item's key
//! is at its limit. Ordered, outputs still come in input order.

use std::time::Duration;

use bounded_buffered::{BoundedStreamExt, Keyed};
use futures::{Stream, StreamExt};
use support::{Gate, Gates, advance, both_modes, counted, drive, ms, now, reset_clock};

/// Gates `0..keys.len()`, item `id` with key `keys[id]`.
fn keyed(
    gates: &Gates,
    keys: &'static [u32],
) -> impl Stream<Item = Keyed<u32, Gate>> + Send + Unpin + use<> {
    gates
        .source(keys.len())
        .enumerate()
        .map(|(id, gate)| Keyed::new(keys[id], gate))
}

/// The items started so far, by id.
fn started(gates: &Gates, count: usize) -> Vec<usize> {
    (0..count).filter(|&id| gates.is_started(id)).collect()
}

both_modes! {
    /// Point 27: each key capped at its limit; a free worker skips a waiting
    /// item whose key is at its limit and starts the next one that may.
    fn each_key_runs_at_most_its_limit_and_a_free_worker_skips_a_blocked_key(mode) {
        let gates = Gates::new();
        // Keys 0, 0, 0, 1, 1, 2; limit 2 per key, 4 workers, 4 waiting.
        let mut run = drive!(mode, keyed(&gates, &[0, 0, 0, 1, 1, 2]).bounded(4, 4).per_key(2));
        assert!(run.take_ready().is_empty());
        // Items 0 and 1 (key 0), 3 and 4 (key 1) run; 2 (key 0, at its limit)
        // and 5 (key 2, no worker free) wait.
        assert_eq!(started(&gates, 6), [0, 1, 3, 4]);
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting), (4, 2));
        assert_eq!((stats.keys_running, stats.blocked_by_key), (2, 1));

        // Item 3 (key 1) completes: the freed worker passes item 2 (key 0 at
        // its limit) and starts item 5.
        gates.open(3);
        assert_eq!(run.take_ready(), [3]);
        assert_eq!(started(&gates, 6), [0, 1, 3, 4, 5]);
        let stats = run.stats();
        assert_eq!((stats.keys_running, stats.blocked_by_key, stats.waiting), (3, 1, 1));

        // Item 0 completes: key 0 drops below its limit, item 2 starts.
        gates.open(0);
        assert_eq!(run.take_ready(), [0]);
        assert!(gates.is_started(2));
        assert_eq!(run.stats().blocked_by_key, 0);
        gates.open_all();
        let mut rest = run.take_to_end();
        rest.sort_unstable();
        assert_eq!(rest, [1, 2, 4, 5]);
        assert_eq!(gates.counts().peak_running, 4);
        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Point 27: `per_key(1)`: one key's items one at a time, in input order,
    /// while different keys run at once.
    fn per_key_one_serialises_each_key_in_input_order(mode) {
        let gates = Gates::new();
        let keys = &[0, 1, 0, 1, 0, 1];
        let mut run = drive!(mode, keyed(&gates, keys).bounded(4, 4).per_key(1));
        assert!(run.take_ready().is_empty());
        assert_eq!(started(&gates, 6), [0, 1], "one per key, keys at once");
        // Complete in an order that crosses keys: each completion starts the
        // next item of the same key, never a later one of it.
        let mut outputs = Vec::new();
        for (open, next) in [(1, 3), (0, 2), (2, 4), (3, 5)] {
            gates.open(open);
            outputs.extend(run.take_ready());
            assert!(gates.is_started(next), "item {next} after {open}");
            let running = gates.closed_started();
            for key in 0..2 {
                let of_key = running.iter().filter(|&&id| keys[id] == key).count();
                assert!(of_key <= 1, "key {key} runs {of_key} at once: {running:?}");
            }
        }
        assert_eq!(outputs, [1, 0, 2, 3]);
        gates.open_all();
        let mut rest = run.take_to_end();
        rest.sort_unstable();
        assert_eq!(rest, [4, 5]);
    }

    /// Point 27's bound: a queue full of one key's items, every worker but the
    /// running one idle, and nothing more pulled: exactly `active + waiting`.
    fn a_queue_full_of_one_blocked_key_stops_the_pulling_exactly(mode) {
        for (workers, waiting, places) in [(3, 2, 2), (2, 0, 1)] {
            let gates = Gates::new();
            let (source, pulled) = counted(keyed(&gates, &[7; 20]));
            let mut run = drive!(mode, source.bounded(workers, waiting).per_key(1));
            assert!(run.take_ready().is_empty());
            let stats = run.stats();
            // `waiting == 0` still has one place: an item is looked at before
            // it may start.
            assert_eq!((stats.active, stats.waiting), (1, places), "{workers}, {waiting}");
            assert_eq!(pulled.pulled(), 1 + places, "{workers}, {waiting}");
            assert_eq!(stats.blocked_by_key, places);
            // Each completion lets exactly the next one of the key start.
            gates.open(0);
            assert_eq!(run.take_ready(), [0]);
            assert_eq!(pulled.pulled(), 2 + places);
            assert_eq!(started(&gates, 20), [0, 1]);
        }
    }

    /// Point 27 with point 25: a raise of `waiting` pulls more blocked items
    /// at once; a lowering keeps them; the per-key bound holds for the limits
    /// in force.
    fn limit_changes_move_the_per_key_bound_exactly(mode) {
        let gates = Gates::new();
        let (source, pulled) = counted(keyed(&gates, &[0, 0, 0, 0, 0, 0, 1, 1]));
        let mut run = drive!(mode, source.bounded(2, 1).per_key(1));
        assert!(run.take_ready().is_empty());
        assert_eq!((pulled.pulled(), run.stats().waiting), (2, 1));
        let limits = run.limits();
        limits.set_waiting(3);
        assert!(run.take_ready().is_empty());
        assert_eq!((pulled.pulled(), run.stats().waiting), (4, 3), "raised: 3 places");
        limits.set_waiting(1);
        assert!(run.take_ready().is_empty());
        assert_eq!(pulled.pulled(), 4, "lowered: nothing dropped, nothing pulled");
        // Items drain through key 0 one at a time; the queue shrinks to the
        // new limit before anything more is pulled.
        for id in 0..3 {
            gates.open(id);
            assert_eq!(run.take_ready(), [id]);
        }
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting), (1, 1));
        assert_eq!(pulled.pulled(), 5);
    }

    /// Points 5 and 27: ordered, an item that starts past a blocked one is
    /// still yielded after it.
    fn ordered_outputs_keep_input_order_past_a_blocked_key(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, keyed(&gates, &[0, 0, 1]).bounded(2, 2).ordered(3).per_key(1));
        assert!(run.take_ready().is_empty());
        assert_eq!(started(&gates, 3), [0, 2], "item 2 starts past blocked item 1");
        gates.open(2);
        assert!(run.take_ready().is_empty(), "item 2 waits for items 0 and 1");
        gates.open(0);
        assert_eq!(run.take_ready(), [0]);
        assert!(gates.is_started(1));
        gates.open(1);
        assert_eq!(run.take_to_end(), [1, 2]);
    }

    /// Points 23 and 27: an item blocked by its key can still expire at
    /// pickup, when its key frees and it has waited too long.
    fn an_item_blocked_by_its_key_expires_at_pickup(mode) {
        reset_clock();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            keyed(&gates, &[0, 0]).bounded(2, 2).per_key(1).max_wait(ms(5)).clock(now)
        );
        assert!(run.take_ready().is_empty());
        advance(ms(10));
        gates.open(0);
        let taken: Vec<_> = run
            .take_to_end()
            .into_iter()
            .map(|outcome| outcome.map_err(|expired| expired.waited()))
            .collect();
        assert_eq!(taken, [Ok(0), Err(Duration::from_millis(10))]);
        assert_eq!(run.stats().expired, 1);
        assert!(!gates.is_started(1), "never polled");
    }

    /// Points 21 and 27: with `try_bounded`, keys work the same, and an error
    /// clears every key.
    fn try_bounded_streams_have_per_key_limits_too(mode) {
        let gates = Gates::new();
        let keys = [0u32, 0, 1];
        let source = gates
            .source(3)
            .enumerate()
            .map(move |(id, gate)| Ok::<_, String>(Keyed::new(keys[id], async move {
                let id = gate.await;
                if id == 2 { Err(format!("item {id} failed")) } else { Ok(id) }
            })));
        // Two waiting places: item 1 waits behind its key, item 2 is pulled
        // into the other and starts past it.
        let mut run = drive!(mode, source.try_bounded(3, 2).per_key(1));
        assert!(run.take_ready().is_empty());
        assert_eq!(started(&gates, 3), [0, 2]);
        gates.open(2);
        assert_eq!(run.take_to_end(), [Err(String::from("item 2 failed"))]);
        let stats = run.stats();
        assert_eq!((stats.keys_running, stats.blocked_by_key), (0, 0));
    }
}

/// Point 11: a limit of 0, or `per_key` after the first poll, panics at the
/// call.
#[test]
fn per_key_rejects_bad_input_at_the_call() {
    let gates = Gates::new();
    let zero = std::panic::catch_unwind(|| {
        let _ = keyed(&gates, &[0]).bounded(1, 0).per_key(0);
    });
    assert!(zero.is_err());
    let mut stream = keyed(&gates, &[0]).bounded(1, 0);
    let _ = support::poll_once(&mut stream);
    let late = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = stream.per_key(1);
    }));
    assert!(late.is_err());
}
