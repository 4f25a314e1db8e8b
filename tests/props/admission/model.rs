//! The admission properties' model (contract points 27 to 29, with 1 to 5
//! and 25): what the stepper knows of a run, and the rules it checks after
//! every step and at the end (see the module's header for the rules).

use bounded_buffered::{Shed, Stats};
use support::Gates;

use super::{Change, Config};

/// What the stepper knows of the run, and the rules it checks after each step.
pub(super) struct Model<'c> {
    config: &'c Config,
    gates: Gates,
    pub(super) workers: usize,
    waiting: usize,
    /// The largest limits set so far: what lowering leaves running or waiting.
    most_workers: usize,
    most_waiting: usize,
    step: usize,
    /// The step at which each item was first seen started.
    started_at: Vec<Option<usize>>,
    /// What came back, in order: an output's id, or a rejected item's.
    pub(super) yielded: Vec<Result<usize, usize>>,
    /// The step at which each item came back as a rejection.
    rejected_at: Vec<Option<usize>>,
    /// Items seen waiting at a step where the waiting set was known exactly.
    seen_waiting: Vec<bool>,
    pulled_before: usize,
    waiting_before: usize,
}

impl<'c> Model<'c> {
    pub(super) fn new(config: &'c Config, gates: &Gates) -> Self {
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

    pub(super) fn record(&mut self, outcome: Result<usize, usize>) {
        if let Err(id) = outcome {
            assert_eq!(self.gates.polls(id), 0, "rejected item {id} was polled");
            assert!(self.rejected_at[id].is_none(), "item {id} rejected twice");
            self.rejected_at[id] = Some(self.step);
        }
        self.yielded.push(outcome);
    }

    pub(super) fn change(&mut self, change: Change) {
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
    pub(super) fn check(&mut self, stats: &Stats, polled: bool, at_rest: bool) {
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
    pub(super) fn check_end(&self, stats: &Stats) {
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
