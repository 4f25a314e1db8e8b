//! The admission properties' fixed cases (contract points 5 and 27 to 29):
//! runs the properties found, or that were found by hand, kept so that each
//! is checked in every run by the same stepper and rules.

use bounded_buffered::{BoundedStreamExt, Keyed, Shed, Weighted};
use futures::StreamExt;
use support::{Gates, Mode, both_modes, drive};

use super::{Config, run};

/// One key's items with these weights, for the cases below.
struct Known {
    workers: usize,
    waiting: usize,
    window: Option<usize>,
    per_key: Option<usize>,
    running_weight: Option<u64>,
    waiting_weight: Option<u64>,
    shed: Option<Shed>,
    weights: &'static [u64],
}

impl Known {
    /// Runs the case through the same stepper and rules as the properties,
    /// under a few schedules.
    fn check(self, mode: Mode) {
        for seed in 0..4 {
            let config = Config {
                workers: self.workers,
                waiting: self.waiting,
                window: self.window,
                per_key: self.per_key,
                running_weight: self.running_weight,
                waiting_weight: self.waiting_weight,
                shed: self.shed,
                items: self.weights.iter().map(|&weight| (0, weight)).collect(),
                changes: Vec::new(),
                seed,
            };
            run(mode, &config);
        }
    }
}

const PLAIN: Known = Known {
    workers: 1,
    waiting: 0,
    window: None,
    per_key: None,
    running_weight: None,
    waiting_weight: None,
    shed: None,
    weights: &[],
};

// Cases the properties found, or that were found by hand, kept so that each
// is checked in every run whatever the random draws: the same rules as above.
both_modes! {
    /// Points 28 and 29: shedding does not let a light item start past a
    /// heavier one waiting at the head (first come, first served).
    fn a_shedding_stream_starts_no_item_past_an_older_waiting_one(mode) {
        let weights = &[1, 2, 0];
        Known { workers: 2, running_weight: Some(2), shed: Some(Shed::Newest), weights, ..PLAIN }.check(mode);
        Known { workers: 2, running_weight: Some(2), shed: Some(Shed::Oldest), weights, ..PLAIN }.check(mode);
    }

    /// Points 5 and 29: a rejection held in the window does not keep the
    /// item before it from starting: the stream finishes.
    fn an_ordered_shedding_stream_finishes(mode) {
        Known { waiting: 1, window: Some(1), shed: Some(Shed::Newest), weights: &[0, 0, 0], ..PLAIN }.check(mode);
    }

    /// Points 28 and 29: an `Oldest` swap keeps the waiting weight below the
    /// budget plus one item.
    fn an_oldest_swap_keeps_the_waiting_weight_budget(mode) {
        let weights = &[0, 1, 1, 1, 2, 5, 5, 5, 5];
        Known { waiting: 4, waiting_weight: Some(5), shed: Some(Shed::Oldest), weights, ..PLAIN }.check(mode);
    }

    /// Point 29, exactly: only a full queue sheds. One worker busy, two
    /// waiting places, a waiting weight of 1: item 1 (weight 1) fills the
    /// weight, so item 2 takes its place; item 2 weighs 0, so item 3 has a
    /// free place and no item is shed for it; item 4 finds the places full
    /// and item 2 goes. Then the two rejections held use up the allowance:
    /// five items pulled, two waiting, whichever the mode.
    fn an_oldest_swap_that_frees_weight_sheds_nothing_more(mode) {
        let gates = Gates::new();
        let weights = [0u64, 1, 0, 0, 0];
        let items = gates
            .source(weights.len())
            .enumerate()
            .map(move |(id, gate)| Keyed::new(0u8, Weighted::new(weights[id], gate)));
        let mut run = drive!(mode, items.bounded(1, 2).max_waiting_weight(1).shed(Shed::Oldest));
        let _ = run.poll();
        let stats = run.stats();
        assert_eq!((gates.pulled(), stats.waiting, stats.rejected), (5, 2, 2), "{stats:?}");
    }

    /// Points 27 to 29: after an `Oldest` swap frees waiting weight.
    fn an_oldest_swap_that_frees_weight_keeps_the_rules(mode) {
        let weights = &[0, 1, 0, 0, 0];
        Known { waiting: 2, waiting_weight: Some(1), shed: Some(Shed::Oldest), weights, ..PLAIN }.check(mode);
        let weights = &[0, 3, 3, 3, 0, 0];
        Known {
            workers: 4,
            waiting: 2,
            per_key: Some(1),
            waiting_weight: Some(3),
            shed: Some(Shed::Oldest),
            weights,
            ..PLAIN
        }
        .check(mode);
    }

    /// Point 28: a budget not set is no budget: `u64::MAX` weights neither
    /// overflow nor stop the pulling, beside the other budget.
    fn u64_max_weights_beside_an_unset_budget(mode) {
        const MAX: u64 = u64::MAX;
        Known { waiting: 2, running_weight: Some(1), weights: &[0, 1, MAX], ..PLAIN }.check(mode);
        Known { waiting: 2, running_weight: Some(1), weights: &[0, MAX, 0], ..PLAIN }.check(mode);
        Known { workers: 2, waiting_weight: Some(1), weights: &[MAX, 1], ..PLAIN }.check(mode);
    }

    /// Point 28: a budget of `u64::MAX`, with weights that sum past it.
    fn a_u64_max_budget_with_weights_that_sum_past_it(mode) {
        const MAX: u64 = u64::MAX;
        Known { workers: 2, per_key: Some(1), running_weight: Some(MAX), weights: &[1, MAX], ..PLAIN }.check(mode);
        Known { workers: 2, running_weight: Some(MAX), weights: &[1, MAX], ..PLAIN }.check(mode);
        Known { waiting: 2, waiting_weight: Some(MAX), weights: &[0, 1, MAX], ..PLAIN }.check(mode);
    }
}
