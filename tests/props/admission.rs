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
//! cases found so far (and the known ones) are kept below as fixed cases,
//! checked by the same rules in every run.

use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, Keyed, Rejected, Shed, Stats, Weighted};
use futures::{Stream, StreamExt};
use proptest::prelude::*;
use support::{Driven, Gate, Gates, Mode, Rng, both_modes, drive, prop_both_modes};

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

/// The stream `config` asks for, in `mode`, handed to [`check`]: each mix of
/// policies is a type of its own.
macro_rules! with_policies {
    ($mode:expr, $config:expr, $gates:expr) => {{
        let (mode, config, gates) = ($mode, $config, $gates);
        let stream = source(gates, config).bounded(config.workers, config.waiting);
        let stream = match config.window {
            Some(window) => stream.ordered(window),
            None => stream,
        };
        match config.per_key {
            Some(limit) => with_policies!(@weights mode, config, gates, stream.per_key(limit)),
            None => with_policies!(@weights mode, config, gates, stream),
        }
    }};
    (@weights $mode:expr, $config:expr, $gates:expr, $stream:expr) => {{
        let stream = $stream;
        match ($config.running_weight, $config.waiting_weight) {
            (None, None) => with_policies!(@shed $mode, $config, $gates, stream),
            (Some(running), None) => {
                with_policies!(@shed $mode, $config, $gates, stream.max_running_weight(running))
            }
            (None, Some(waiting)) => {
                with_policies!(@shed $mode, $config, $gates, stream.max_waiting_weight(waiting))
            }
            (Some(running), Some(waiting)) => with_policies!(
                @shed $mode, $config, $gates,
                stream.max_running_weight(running).max_waiting_weight(waiting)
            ),
        }
    }};
    (@shed $mode:expr, $config:expr, $gates:expr, $stream:expr) => {{
        let stream = $stream;
        match $config.shed {
            Some(shed) => check(
                drive!($mode, stream.shed(shed)),
                $config,
                $gates,
                |outcome: Result<usize, Rejected<Item>>| outcome.map_err(rejected_id),
            ),
            None => check(drive!($mode, stream), $config, $gates, Ok),
        }
    }};
}

/// What the stepper knows of the run, and the rules it checks after each step.
struct Model<'c> {
    config: &'c Config,
    gates: Gates,
    workers: usize,
    waiting: usize,
    /// The largest limits set so far: what lowering leaves running or waiting.
    most_workers: usize,
    most_waiting: usize,
    step: usize,
    /// The step at which each item was first seen started.
    started_at: Vec<Option<usize>>,
    /// What came back, in order: an output's id, or a rejected item's.
    yielded: Vec<Result<usize, usize>>,
    /// The step at which each item came back as a rejection.
    rejected_at: Vec<Option<usize>>,
    /// Items seen waiting at a step where the waiting set was known exactly.
    seen_waiting: Vec<bool>,
    pulled_before: usize,
    waiting_before: usize,
}

impl<'c> Model<'c> {
    fn new(config: &'c Config, gates: &Gates) -> Self {
        let items = config.items.len();
        Self {
            config,
            gates: gates.clone(),
            workers: config.workers,
            waiting: config.waiting,
            most_workers: config.workers,
            most_waiting: config.waiting,
            step: 0,
            started_at: vec![None; items],
            yielded: Vec::new(),
            rejected_at: vec![None; items],
            seen_waiting: vec![false; items],
            pulled_before: 0,
            waiting_before: 0,
        }
    }

    /// The waiting places that `waiting` gives: with keys, weights or
    /// shedding every item is pulled into a waiting place first, so there is
    /// at least one (points 27 to 29).
    fn places(&self, waiting: usize) -> usize {
        let config = self.config;
        let seated = config.per_key.is_some()
            || config.running_weight.is_some()
            || config.waiting_weight.is_some()
            || config.shed.is_some();
        if seated { waiting.max(1) } else { waiting }
    }

    fn key(&self, id: usize) -> u8 {
        self.config.items[id].0
    }

    fn weight(&self, id: usize) -> u64 {
        self.config.items[id].1
    }

    /// Items start in input order within this group: their key with
    /// `per_key`, all of them without.
    fn order_group(&self, id: usize) -> u8 {
        if self.config.per_key.is_some() {
            self.key(id)
        } else {
            0
        }
    }

    fn record(&mut self, outcome: Result<usize, usize>) {
        if let Err(id) = outcome {
            assert_eq!(self.gates.polls(id), 0, "rejected item {id} was polled");
            assert!(self.rejected_at[id].is_none(), "item {id} rejected twice");
            self.rejected_at[id] = Some(self.step);
        }
        self.yielded.push(outcome);
    }

    fn change(&mut self, change: Change) {
        match change {
            Change::Workers(workers) => {
                self.workers = workers;
                self.most_workers = self.most_workers.max(workers);
            }
            Change::Waiting(waiting) => {
                self.waiting = waiting;
                self.most_waiting = self.most_waiting.max(waiting);
            }
        }
    }

    /// The rules, after one step; `polled`: the step was a poll that yielded,
    /// or found nothing (then `at_rest` if nothing woke the consumer since).
    fn check(&mut self, stats: &Stats, polled: bool, at_rest: bool) {
        let config = self.config;
        let context = format!(
            "step {} {config:?}\n{stats:?}\nyielded {:?}",
            self.step, self.yielded
        );
        let gates = &self.gates;
        let pulled = gates.pulled();
        let items = config.items.len();
        assert!(pulled <= items, "{context}");

        let mut started_now = Vec::new();
        for id in 0..pulled {
            if self.started_at[id].is_none() && gates.is_started(id) {
                self.started_at[id] = Some(self.step);
                started_now.push(id);
            }
        }
        let started = |id: usize| self.started_at[id].is_some();
        let running: Vec<usize> = (0..pulled)
            .filter(|&id| started(id) && !gates.is_finished(id) && gates.drops(id) == 0)
            .collect();
        let came_back = self.yielded.len();

        // Counts (points 2 and 25).
        assert!(
            running.len() <= self.most_workers,
            "running {running:?}: {context}"
        );
        assert!(stats.active <= self.most_workers, "{context}");
        if !started_now.is_empty() {
            assert!(
                running.len() <= self.workers,
                "started {started_now:?} with {running:?} running, workers {}: {context}",
                self.workers
            );
        }
        let places = |waiting: usize| self.places(waiting);
        assert!(stats.waiting <= places(self.most_waiting), "{context}");
        if pulled > self.pulled_before {
            assert!(
                stats.waiting <= places(self.waiting).max(self.waiting_before),
                "pulled past the waiting places ({}): {context}",
                self.waiting
            );
        }
        let span = config.window.unwrap_or(self.most_workers);
        let allowance = if config.shed.is_some() {
            places(self.most_waiting)
        } else {
            0
        };
        assert!(
            pulled - came_back <= span + places(self.most_waiting) + allowance,
            "the source ran {} ahead: {context}",
            pulled - came_back
        );
        let rejections = self
            .yielded
            .iter()
            .filter(|outcome| outcome.is_err())
            .count() as u64;
        assert!(stats.rejected >= rejections, "{context}");
        let held_rejections = (stats.rejected - rejections) as usize;
        assert!(held_rejections <= places(self.most_waiting), "{context}");

        // Per key (point 27).
        if let Some(limit) = config.per_key {
            for key in 0..3u8 {
                let of_key = running.iter().filter(|&&id| self.key(id) == key).count();
                assert!(
                    of_key <= limit,
                    "key {key}: {of_key} running {running:?}: {context}"
                );
            }
        }

        // Running weight (point 28).
        let capped_running = |id: usize| {
            u128::from(
                config
                    .running_weight
                    .map_or(0, |max| self.weight(id).min(max)),
            )
        };
        let running_weight: u128 = running.iter().map(|&id| capped_running(id)).sum();
        if let Some(max) = config.running_weight {
            assert!(
                running_weight <= u128::from(max),
                "running weight {running_weight} {running:?}: {context}"
            );
            assert!(stats.running_weight <= max, "{context}");
        }

        // The window (points 5 and 29): positions, ordered output.
        if let Some(window) = config.window {
            let oldest = came_back;
            for &id in &started_now {
                assert!(
                    id < oldest + window,
                    "item {id} started outside the window: {context}"
                );
            }
            let in_window = (0..pulled)
                .filter(|&id| started(id) && id >= oldest)
                .count();
            assert!(
                in_window <= window,
                "{in_window} started and not yielded: {context}"
            );
        }

        // The waiting items: known exactly when no rejection is held.
        let waiting: Vec<usize> = (0..pulled)
            .filter(|&id| !started(id) && self.rejected_at[id].is_none())
            .collect();
        let capped_waiting = |id: usize| {
            u128::from(
                config
                    .waiting_weight
                    .map_or(0, |max| self.weight(id).min(max)),
            )
        };
        if held_rejections == 0 {
            assert_eq!(
                stats.waiting,
                waiting.len(),
                "waiting {waiting:?}: {context}"
            );
        }
        if let Some(max) = config.waiting_weight {
            let newest = waiting
                .iter()
                .map(|&id| capped_waiting(id))
                .max()
                .unwrap_or(0);
            let bound = u128::from(max) + newest;
            assert!(
                u128::from(stats.waiting_weight) < bound || stats.waiting_weight == 0,
                "waiting weight {} over {max} plus one item ({newest}): {context}",
                stats.waiting_weight
            );
            if held_rejections == 0 {
                let weight: u128 = waiting.iter().map(|&id| capped_waiting(id)).sum();
                // `Stats` saturates at `u64::MAX` (point 28).
                assert_eq!(
                    u128::from(stats.waiting_weight),
                    weight.min(u128::from(u64::MAX)),
                    "waiting {waiting:?}: {context}"
                );
                // Pulled only below the budget; an `Oldest` swap, which
                // pulls at it, is bounded by the plus-one-item rule above.
                if let (Some(&youngest), false) =
                    (waiting.last(), config.shed == Some(Shed::Oldest))
                {
                    assert!(
                        weight - capped_waiting(youngest) < u128::from(max),
                        "waiting weight {weight} of {waiting:?}: pulled at or over {max}: {context}"
                    );
                }
            }
        }

        // Unordered, a poll leaves the waiting places topped up (point 6,
        // and 27 to 29: every item is pulled into a waiting place): unless
        // they or the waiting weight are full, or the rejections held use up
        // their own allowance, the source is pulled to its end. A rejection
        // this poll handed out still counted when the stream last decided.
        let pulled_all = pulled == config.items.len();
        let took_rejection = polled
            && matches!(self.yielded.last(), Some(&Err(id)) if self.rejected_at[id] == Some(self.step));
        let held_rejections_then = held_rejections + usize::from(took_rejection);
        if (polled || at_rest) && config.window.is_none() && self.workers > 0 && !pulled_all {
            let weight_full = config
                .waiting_weight
                .is_some_and(|max| stats.waiting_weight >= max);
            assert!(
                stats.waiting >= places(self.waiting)
                    || weight_full
                    || held_rejections_then >= places(self.waiting),
                "a poll left a waiting place free, the source unpulled: {context}"
            );
        }
        if at_rest && held_rejections == 0 {
            self.check_at_rest(&running, running_weight, &waiting, stats, &context);
        }
        if held_rejections == 0 {
            for &id in &waiting {
                self.seen_waiting[id] = true;
            }
        }
        self.pulled_before = pulled;
        self.waiting_before = stats.waiting;
        self.step += 1;
    }

    /// Nothing is left undone that the rules allow: no idle worker while the
    /// oldest key-eligible waiting item may start, and, unordered, no free
    /// waiting place with the source unpulled.
    fn check_at_rest(
        &self,
        running: &[usize],
        running_weight: u128,
        waiting: &[usize],
        stats: &Stats,
        context: &str,
    ) {
        let config = self.config;
        let key_allows = |id: usize| {
            config.per_key.is_none_or(|limit| {
                running
                    .iter()
                    .filter(|&&other| self.key(other) == self.key(id))
                    .count()
                    < limit
            })
        };
        if let Some(&first) = waiting.iter().find(|&&id| key_allows(id)) {
            let fits = config.running_weight.is_none_or(|max| {
                running_weight == 0
                    || running_weight + u128::from(self.weight(first).min(max)) <= u128::from(max)
            });
            let in_window = config
                .window
                .is_none_or(|window| first < self.yielded.len() + window);
            let worker_free = running.len() < self.workers;
            assert!(
                !(fits && in_window && worker_free),
                "at rest with item {first} free to start, {running:?} running: {context}"
            );
        }
        let pulled = self.gates.pulled();
        if config.window.is_none() && self.workers > 0 && pulled < config.items.len() {
            let weight_full = config
                .waiting_weight
                .is_some_and(|max| stats.waiting_weight >= max);
            let places_full = waiting.len() >= self.places(self.waiting);
            assert!(
                places_full || weight_full,
                "at rest with room to pull ({} waiting): {context}",
                waiting.len()
            );
            assert!(
                config.shed.is_none(),
                "a shedding stream at rest left the source unpulled: {context}"
            );
        }
    }

    /// At the end: everything came back once, in order when ordered; the
    /// start order within each group; shedding took the right items.
    fn check_end(&self, stats: &Stats) {
        let config = self.config;
        let items = config.items.len();
        let context = format!("{config:?}\n{stats:?}\nyielded {:?}", self.yielded);
        let mut ids: Vec<usize> = self
            .yielded
            .iter()
            .map(|&outcome| outcome.unwrap_or_else(|id| id))
            .collect();
        if config.window.is_some() {
            assert_eq!(
                ids,
                (0..items).collect::<Vec<_>>(),
                "not in input order: {context}"
            );
        }
        ids.sort_unstable();
        assert_eq!(
            ids,
            (0..items).collect::<Vec<_>>(),
            "lost or duplicated: {context}"
        );
        let rejections = self
            .yielded
            .iter()
            .filter(|outcome| outcome.is_err())
            .count() as u64;
        assert_eq!(stats.rejected, rejections, "{context}");
        for outcome in &self.yielded {
            if let Ok(id) = *outcome {
                assert!(self.started_at[id].is_some(), "{context}");
            }
        }
        // Start order (points 27 and 28): an item never starts at a step
        // before an older item of its group that it passed while waiting.
        for later in 0..items {
            let Some(at) = self.started_at[later] else {
                continue;
            };
            for older in 0..later {
                if self.order_group(older) != self.order_group(later) {
                    continue;
                }
                if let Some(older_at) = self.started_at[older] {
                    assert!(
                        older_at <= at,
                        "item {later} started (step {at}) before {older} (step {older_at}): {context}"
                    );
                }
            }
        }
        match config.shed {
            Some(Shed::Newest) => {
                for id in 0..items {
                    assert!(
                        !(self.seen_waiting[id] && self.rejected_at[id].is_some()),
                        "Newest handed back item {id}, which was waiting: {context}"
                    );
                }
            }
            Some(Shed::Oldest) => {
                // The oldest waiting item goes: every older item had started
                // or gone before it (the step is known only unordered).
                for rejected in 0..items {
                    let Some(rejected_at) = self.rejected_at[rejected] else {
                        continue;
                    };
                    // With weights, an item the rejections left cannot make
                    // room for (it needs several oldest ones gone) is handed
                    // back at its pull instead (point 29): never waiting.
                    if config.waiting_weight.is_some() && !self.seen_waiting[rejected] {
                        continue;
                    }
                    for older in 0..rejected {
                        let gone = self.rejected_at[older].is_some()
                            || self.started_at[older]
                                .is_some_and(|at| config.window.is_some() || at <= rejected_at);
                        assert!(
                            gone,
                            "Oldest handed back {rejected} with {older} still waiting: {context}"
                        );
                    }
                }
            }
            None => assert_eq!(rejections, 0),
        }
    }
}

/// Steps the stream at random, then opens everything and drains it.
fn check<T>(
    mut run: Driven<'_, T>,
    config: &Config,
    gates: &Gates,
    read: impl Fn(T) -> Result<usize, usize>,
) {
    let mut rng = Rng::new(config.seed);
    let mut model = Model::new(config, gates);
    let limits = run.limits();
    let mut changes = config.changes.clone().into_iter();
    let steps = 3 * config.items.len() + 10;
    let poll = |run: &mut Driven<'_, T>, model: &mut Model<'_>| {
        let wakes = run.wakes();
        let poll = run.poll();
        let at_rest = poll.is_pending() && run.wakes() == wakes;
        let poll = poll.map(|next| next.map(|outcome| model.record(read(outcome))));
        model.check(&run.stats(), poll.is_ready(), at_rest);
        poll
    };
    for _ in 0..steps {
        match rng.below(10) {
            0..=4 => {
                let closed = gates.closed_started();
                if !closed.is_empty() {
                    gates.open(closed[rng.below(closed.len())]);
                }
                run.settle();
                model.check(&run.stats(), false, false);
            }
            5..=8 => {
                if let Poll::Ready(None) = poll(&mut run, &mut model) {
                    break;
                }
            }
            _ => {
                if let Some(change) = changes.next() {
                    match change {
                        Change::Workers(workers) => limits.set_workers(workers),
                        Change::Waiting(waiting) => limits.set_waiting(waiting),
                    }
                    model.change(change);
                    run.settle();
                    model.check(&run.stats(), false, false);
                }
            }
        }
    }
    // Progress: with a worker and every gate open, the stream finishes.
    if model.workers == 0 {
        limits.set_workers(1);
        model.change(Change::Workers(1));
    }
    let mut stuck = 0;
    loop {
        for id in gates.closed_started() {
            gates.open(id);
        }
        run.settle();
        match poll(&mut run, &mut model) {
            Poll::Ready(None) => break,
            Poll::Ready(Some(())) => stuck = 0,
            Poll::Pending if gates.closed_started().is_empty() => {
                stuck += 1;
                assert!(
                    stuck < 3,
                    "deadlock: every gate open, the stream pending: {config:?}\n{:?}\nyielded {:?}",
                    run.stats(),
                    model.yielded
                );
            }
            Poll::Pending => stuck = 0,
        }
    }
    model.check_end(&run.stats());
    run.drop_stream();
    gates.check_all_dropped_once();
}

/// Runs `config` in `mode`.
fn run(mode: Mode, config: &Config) {
    let gates = Gates::new();
    with_policies!(mode, config, &gates);
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
