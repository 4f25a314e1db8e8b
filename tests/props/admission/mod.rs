//! Contract points 27 (per key), 28 (weights) and 29 (shedding), with 1 to
//! 5 and 25 (limit changes), under random items, budgets, completion orders
//! and limit changes, in both modes, unordered and ordered. One random
//! stepper opens the gates of started items in a random order, polls the
//! consumer, and moves `workers` and `waiting` through the `Limits` handle;
//! after every step it checks the stream against the rules:
//!
//! - counts: never more futures running than `workers` (the limits in force
//!   after a start, the largest set so far otherwise: lowering cancels
//!   nothing); the waiting count within `max(waiting, 1)` after a pull; the
//!   source never further ahead of the consumer than the span (`workers`, or
//!   the window ordered), the waiting places and, shedding, the rejection
//!   allowance (`max(waiting, 1)`);
//! - per key (27): at most `limit` items of one key running;
//! - weights (28): the running items' weights, each counted at most the
//!   budget, within `max_running_weight`; the waiting weight below
//!   `max_waiting_weight` plus the capped weight of the newest waiting item;
//!   `Stats` reports the weight waiting exactly;
//! - order (27, 28): items of one key (all items, without `per_key`) start
//!   in input order, since a free worker takes the oldest waiting item whose
//!   key is below its limit and weights go first come, first served; ordered,
//!   an item starts only while its position is within the window;
//! - at rest (a poll found nothing and nothing woke the consumer): no worker
//!   is idle while the oldest key-eligible waiting item fits and is within
//!   the window; unordered, the source is not left unpulled while a waiting
//!   place and waiting weight are free, and a shedding stream has drained it;
//! - shedding (29): a rejected item was never polled; `Newest` never hands
//!   back an item that was waiting, `Oldest` only the oldest waiting one;
//! - the end: once every gate is open the stream finishes (no deadlock);
//!   every item comes back exactly once, as an output or a rejection (in
//!   input order when ordered), `Stats::rejected` counts the rejections, and
//!   every future is dropped exactly once.
//!
//! Weights are drawn as 0, 1, a small one, exactly a budget, one above it,
//! or `u64::MAX`, against budgets of 1 to 6 (or `u64::MAX`).
//!
//! 512 cases per mode and family by default (a quarter in a debug build:
//! `support::cases`); `PROPTEST_CASES=N` runs N. The
//! cases found so far (and the known ones) are kept as fixed cases (`known`),
//! checked by the same rules in every run.
//!
//! This module holds the draws (`Config` and its strategies) and the
//! properties; `model` the rules checked after every step, `stepper` the
//! random stepper that drives each stream through them, `known` the fixed
//! cases.

use bounded_buffered::{Keyed, Rejected, Shed, Weighted};
use futures::{Stream, StreamExt};
use proptest::prelude::*;
use support::{Gate, Gates, prop_both_modes};

mod known;
mod model;
mod stepper;

use stepper::run;

/// Every stream's item: a key and a weight around a gate (the policies not
/// set ignore them).
type Item = Keyed<u8, Weighted<Gate>>;

/// A rejected item's id; drops its future.
fn rejected_id(rejected: Rejected<Item>) -> usize {
    rejected.into_inner().into_inner().into_inner().id()
}

/// A weight, drawn against the budgets it is meant to test.
#[derive(Clone, Copy, Debug)]
enum Weight {
    Zero,
    One,
    Small(u64),
    /// Exactly the running budget (`true`) or the waiting one.
    Budget(bool),
    /// One above it.
    Above(bool),
    Max,
}

impl Weight {
    fn strategy() -> impl Strategy<Value = Weight> {
        prop_oneof![
            2 => Just(Weight::Zero),
            2 => Just(Weight::One),
            3 => (2..=3u64).prop_map(Weight::Small),
            2 => any::<bool>().prop_map(Weight::Budget),
            1 => any::<bool>().prop_map(Weight::Above),
            1 => Just(Weight::Max),
        ]
    }

    fn resolve(self, running: Option<u64>, waiting: Option<u64>) -> u64 {
        let budget = |of_running: bool| {
            let (first, second) = if of_running {
                (running, waiting)
            } else {
                (waiting, running)
            };
            first.or(second).unwrap_or(4)
        };
        match self {
            Weight::Zero => 0,
            Weight::One => 1,
            Weight::Small(weight) => weight,
            Weight::Budget(of_running) => budget(of_running),
            Weight::Above(of_running) => budget(of_running).saturating_add(1),
            Weight::Max => u64::MAX,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Change {
    Workers(usize),
    Waiting(usize),
}

/// One run: the budgets and policies, the items (key, weight), the limit
/// changes (each made at a random step) and the schedule's seed.
#[derive(Clone, Debug)]
struct Config {
    workers: usize,
    waiting: usize,
    window: Option<usize>,
    per_key: Option<usize>,
    running_weight: Option<u64>,
    waiting_weight: Option<u64>,
    shed: Option<Shed>,
    items: Vec<(u8, u64)>,
    changes: Vec<Change>,
    seed: u64,
}

fn budget() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![
        2 => Just(None),
        4 => (1..=6u64).prop_map(Some),
        1 => Just(Some(u64::MAX)),
    ]
}

/// Which policies a property draws: each family fails on its own, so one
/// broken rule does not hide the others.
#[derive(Clone, Copy)]
struct Family {
    keys: bool,
    weights: bool,
    shed: bool,
}

fn config(family: Family) -> impl Strategy<Value = Config> {
    let change = prop_oneof![
        (0..=5usize).prop_map(Change::Workers),
        (0..=4usize).prop_map(Change::Waiting),
    ];
    let per_key = if family.keys {
        (1..=3usize).prop_map(Some).boxed()
    } else {
        Just(None).boxed()
    };
    let budgets = if family.weights {
        (budget(), budget())
            .prop_filter("a weight budget", |budgets| budgets != &(None, None))
            .boxed()
    } else {
        Just((None, None)).boxed()
    };
    let shed = if family.shed {
        prop_oneof![Just(Some(Shed::Newest)), Just(Some(Shed::Oldest))].boxed()
    } else {
        Just(None).boxed()
    };
    (
        (1..=4usize, 0..=3usize, prop::option::of(1..=5usize)),
        (per_key, budgets, shed),
        prop::collection::vec((0..3u8, Weight::strategy()), 0..=24),
        prop::collection::vec(change, 0..=3),
        any::<u64>(),
    )
        .prop_map(
            |(
                (workers, waiting, window),
                (per_key, (running_weight, waiting_weight), shed),
                items,
                changes,
                seed,
            )| {
                let items = items
                    .into_iter()
                    .map(|(key, weight)| (key, weight.resolve(running_weight, waiting_weight)))
                    .collect();
                Config {
                    workers,
                    waiting,
                    window,
                    per_key,
                    running_weight,
                    waiting_weight,
                    shed,
                    items,
                    changes,
                    seed,
                }
            },
        )
}

fn source(gates: &Gates, config: &Config) -> impl Stream<Item = Item> + Send + Unpin + use<> {
    let items = config.items.clone();
    gates
        .source(items.len())
        .enumerate()
        .map(move |(id, gate)| {
            let (key, weight) = items[id];
            Keyed::new(key, Weighted::new(weight, gate))
        })
}

const KEYS: Family = Family {
    keys: true,
    weights: false,
    shed: false,
};
const WEIGHTS: Family = Family {
    keys: false,
    weights: true,
    shed: false,
};
const KEYS_AND_WEIGHTS: Family = Family {
    keys: true,
    weights: true,
    shed: false,
};
/// Shedding, alone or with keys or weights.
fn shedding() -> impl Strategy<Value = Config> {
    prop_oneof![
        config(Family {
            keys: false,
            weights: false,
            shed: true
        }),
        config(Family {
            keys: true,
            weights: false,
            shed: true
        }),
        config(Family {
            keys: false,
            weights: true,
            shed: true
        }),
        config(Family {
            keys: true,
            weights: true,
            shed: true
        }),
    ]
}

prop_both_modes! {
    /// Point 27: the per-key cap, skip-ahead pickup and per-key order.
    fn per_key_keeps_its_cap_order_and_every_item(mode, config in config(KEYS))
        cases(512, 512)
    {
        run(mode, &config);
    }

    /// Point 28: both weight budgets, oversized and zero weights.
    fn weight_budgets_hold_first_come_first_served(mode, config in config(WEIGHTS))
        cases(512, 512)
    {
        run(mode, &config);
    }

    /// Points 27 and 28 together.
    fn keys_and_weights_hold_together(mode, config in config(KEYS_AND_WEIGHTS))
        cases(512, 512)
    {
        run(mode, &config);
    }

    /// Point 29, with keys and weights: shedding stays within the waiting
    /// budgets and hands back the right item, and nothing is lost.
    fn shedding_hands_back_the_right_item_within_the_budgets(mode, config in shedding())
        cases(512, 512)
    {
        run(mode, &config);
    }
}
