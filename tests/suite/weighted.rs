//! Weight budgets, in both modes (contract point 28): an item starts only if
//! the weights running plus its own stay within `max_running_weight`, or
//! nothing runs (an item heavier than the budget counts as the budget and runs
//! alone); weights go first come, first served; the source is not pulled while
//! the weight waiting is at or above `max_waiting_weight`, so the queue goes
//! over by less than one item. Keys and weights compose in either nesting.

use bounded_buffered::{BoundedStreamExt, Keyed, Weighted};
use futures::StreamExt;
use support::{Gates, both_modes, counted, drive};

/// The items running now: polled, and their gates still closed.
fn running(gates: &Gates) -> Vec<usize> {
    gates.closed_started()
}

both_modes! {
    /// Point 28: the running weight stays within its budget, first come,
    /// first served: a light item does not pass a heavy one that does not fit.
    fn the_running_weight_stays_within_its_budget_first_come_first_served(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.weighted_source(&[3, 3, 3, 1]).bounded(4, 4).max_running_weight(6));
        assert!(run.take_ready().is_empty());
        assert_eq!(running(&gates), [0, 1], "3 + 3 = 6; item 2 does not fit, item 3 waits behind it");
        let stats = run.stats();
        assert_eq!((stats.running_weight, stats.waiting_weight, stats.waiting), (6, 4, 2));
        gates.open(0);
        assert_eq!(run.take_ready(), [0]);
        assert_eq!(running(&gates), [1, 2], "3 freed: item 2 fits; 3 + 3 + 1 would not");
        assert_eq!(run.stats().running_weight, 6);
        gates.open(1);
        assert_eq!(run.take_ready(), [1]);
        assert!(gates.is_started(3), "3 + 1 fits");
        assert_eq!(run.stats().running_weight, 4);
        assert_eq!(run.stats().peak_running_weight, 6);
        gates.open_all();
        assert_eq!(run.take_to_end().len(), 2);
    }

    /// Point 28: an item heavier than the budget counts as exactly the budget:
    /// it runs alone, never deadlocks, and nothing starts beside it.
    fn an_oversized_item_runs_alone(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.weighted_source(&[1, 10, 1]).bounded(4, 4).max_running_weight(4));
        assert!(run.take_ready().is_empty());
        assert_eq!(running(&gates), [0], "item 1 (counted as 4) waits for item 0");
        gates.open(0);
        assert_eq!(run.take_ready(), [0]);
        assert_eq!(running(&gates), [1], "it runs alone, counted as the budget");
        assert_eq!(run.stats().running_weight, 4);
        gates.open(1);
        assert_eq!(run.take_ready(), [1]);
        assert!(gates.is_started(2));
        gates.open(2);
        assert_eq!(run.take_to_end(), [2]);
    }

    /// Point 28's waiting bound, exactly: pulled while the weight waiting is
    /// below the budget, so over it by less than one item; an oversized item
    /// counts as the budget and waits alone.
    fn the_waiting_weight_stops_the_pulling_at_its_budget_exactly(mode) {
        // One worker busy with item 0; 2 + 2 = 4 < 5, so a third item is
        // pulled (6), and nothing more.
        let gates = Gates::new();
        let (source, pulled) = counted(gates.weighted_source(&[2, 2, 2, 2, 2, 2]));
        let mut run = drive!(mode, source.bounded(1, 10).max_waiting_weight(5));
        assert!(run.take_ready().is_empty());
        assert_eq!(pulled.pulled(), 1 + 3);
        let stats = run.stats();
        assert_eq!((stats.waiting, stats.waiting_weight), (3, 6));
        assert!(stats.waiting_weight < 5 + 2, "over by less than one item");
        // Taking one frees 2: 4 < 5, one more is pulled.
        gates.open(0);
        assert_eq!(run.take_ready(), [0]);
        assert_eq!((pulled.pulled(), run.stats().waiting_weight), (5, 6));

        // An item heavier than the budget waits alone.
        let gates = Gates::new();
        let (source, pulled) = counted(gates.weighted_source(&[1, 100, 1]));
        let mut run = drive!(mode, source.bounded(1, 10).max_waiting_weight(10));
        assert!(run.take_ready().is_empty());
        assert_eq!(pulled.pulled(), 2, "item 1 counts as 10: nothing more is pulled");
        assert_eq!(run.stats().waiting_weight, 10);
    }

    /// Points 25 and 28: the weight budgets hold beside the counts as the
    /// limits move.
    fn weights_and_counts_bound_together_as_the_limits_move(mode) {
        let gates = Gates::new();
        let (source, pulled) = counted(gates.weighted_source(&[1; 12]));
        let mut run = drive!(
            mode,
            source.bounded(2, 2).max_running_weight(3).max_waiting_weight(8)
        );
        assert!(run.take_ready().is_empty());
        assert_eq!((run.stats().active, pulled.pulled()), (2, 4), "the counts bind first");
        let limits = run.limits();
        limits.set_workers(5);
        limits.set_waiting(20);
        assert!(run.take_ready().is_empty());
        let stats = run.stats();
        assert_eq!((stats.active, stats.running_weight), (3, 3), "then the running weight");
        assert_eq!((stats.waiting, stats.waiting_weight), (8, 8), "then the waiting weight");
        assert_eq!(pulled.pulled(), 11);
    }

    /// Points 27 and 28: keys and weights compose, in either nesting.
    fn keys_and_weights_compose_in_either_nesting(mode) {
        // Keyed around Weighted: key 0 at most 1, weight at most 4.
        let gates = Gates::new();
        let keys = [0u32, 0, 1, 1];
        let weights = [2u64, 2, 3, 1];
        let source = gates
            .source(4)
            .enumerate()
            .map(move |(id, gate)| Keyed::new(keys[id], Weighted::new(weights[id], gate)));
        let mut run = drive!(mode, source.bounded(4, 4).per_key(1).max_running_weight(4));
        assert!(run.take_ready().is_empty());
        assert_eq!(running(&gates), [0], "item 1: key 0 busy; item 2: 2 + 3 > 4, and first come");
        gates.open(0);
        assert_eq!(run.take_ready(), [0]);
        assert_eq!(running(&gates), [1], "item 1 (key 0 free, weight 2) is the oldest that may");

        // Weighted around Keyed.
        let gates = Gates::new();
        let source = gates
            .source(4)
            .enumerate()
            .map(move |(id, gate)| Weighted::new(weights[id], Keyed::new(keys[id], gate)));
        let mut run = drive!(mode, source.bounded(4, 4).max_running_weight(4).per_key(1));
        assert!(run.take_ready().is_empty());
        assert_eq!(running(&gates), [0]);
        let stats = run.stats();
        assert_eq!((stats.keys_running, stats.running_weight), (1, 2));
    }

    /// Point 28: a budget not set is no budget, and no weight overflows the
    /// sums, `u64::MAX` included; `Stats` saturates at `u64::MAX`.
    fn an_unset_budget_is_none_and_no_weight_overflows(mode) {
        // Only the running budget set: items of `u64::MAX` (counted as 1
        // running) are pulled like any other, and the waiting sum goes past
        // `u64::MAX`.
        let gates = Gates::new();
        let (source, pulled) = counted(gates.weighted_source(&[0, u64::MAX, 0, u64::MAX]));
        let mut run = drive!(mode, source.bounded(1, 3).max_running_weight(1));
        assert!(run.take_ready().is_empty());
        assert_eq!(pulled.pulled(), 4, "the waiting count binds, not a weight");
        let stats = run.stats();
        assert_eq!((stats.waiting, stats.waiting_weight), (3, u64::MAX), "saturated");
        gates.open_all();
        assert_eq!(run.take_to_end().len(), 4);
        assert_eq!(run.stats().peak_running_weight, 1);

        // Only the waiting budget set: nothing limits the running weight.
        let gates = Gates::new();
        let mut run = drive!(mode, gates.weighted_source(&[u64::MAX, 1]).bounded(2, 0).max_waiting_weight(1));
        assert!(run.take_ready().is_empty());
        assert_eq!(running(&gates), [0, 1]);
        assert_eq!(run.stats().running_weight, u64::MAX, "saturated");
        gates.open_all();
        assert_eq!(run.take_to_end().len(), 2);
    }
}

/// Point 11: a budget of 0 panics at the call.
#[test]
fn a_zero_weight_budget_panics() {
    let gates = Gates::new();
    assert!(
        std::panic::catch_unwind(|| gates
            .weighted_source(&[1])
            .bounded(1, 0)
            .max_running_weight(0))
        .is_err()
    );
    assert!(
        std::panic::catch_unwind(|| gates
            .weighted_source(&[1])
            .bounded(1, 0)
            .max_waiting_weight(0))
        .is_err()
    );
}
