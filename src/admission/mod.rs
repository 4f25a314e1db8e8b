//! Admission beyond counts: which waiting item a free worker starts, and
//! whether the source may be pulled, by the items' keys ([`keyed`]) and
//! weights ([`weighted`]). Each rule is written once, in its module, and both
//! modes call it through [`Admission`]; a stream that uses neither has
//! [`Unkeyed`] and [`Unweighted`], whose every branch compiles away, and runs
//! the count rules of [`crate::budget`] alone.
//!
//! With either, an item is pulled into a free waiting place only, never
//! straight into a worker: whether it may start is known only once it is
//! pulled (its key, its weight), and one that may not must have somewhere to
//! wait. Pulled and allowed, it starts at once, having waited no time. So a
//! stream with keys or weights has at least one waiting place.

mod keyed;
pub(crate) mod weighted;

pub use self::keyed::{KeyOf, KeyRule, Keyed, PerKey, Unkeyed};
pub use self::weighted::{Unweighted, WeightOf, WeightRule, Weighted, Weights};

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// The key and weight rules of one stream, together: what the drivers ask
/// (through [`Admits`]).
#[derive(Debug, Default)]
pub(crate) struct Admission<Q, W> {
    pub(crate) keys: Q,
    pub(crate) weights: W,
}

/// The rules beyond counts, for items of type `F`, as the drivers call them.
pub(crate) trait Admits<F>: Send + Sync + Unpin + 'static {
    /// What a running item carries for the rules until it completes.
    type Ticket: Copy + Default + Send + Sync + Unpin + 'static;
    /// Whether any rule beyond the counts applies: with `false`, every branch
    /// on them compiles away and the stream runs the count rules alone.
    const APPLIES: bool;
    /// Whether a key rule applies, and whether weight budgets do (what the
    /// `metrics` exporter publishes of them).
    const RULES: (bool, bool);
    /// Whether the key rule ranks the items it allows
    /// ([`KeyRule::RANKED`]).
    const RANKED: bool;

    /// The waiting item a free worker starts: the oldest whose key is below
    /// its limit, if it fits the running weight. Weights go first come, first
    /// served, so a key-eligible item that does not fit stops the search.
    /// `items` are the waiting items, oldest first, each with whether the
    /// ordered window lets it start.
    fn pick<'a>(&self, items: impl Iterator<Item = (&'a F, bool)>) -> Option<usize>
    where
        F: 'a;

    /// What `item` counts for in the weight waiting (0 without weights).
    fn waiting_weight(&self, item: &F) -> u64;

    /// Whether the rules let one more item be pulled into the queue (the
    /// count rule aside), were waiting items counting `gone` in all (their
    /// [`waiting_weight`](Self::waiting_weight)s summed) gone: 0 for the
    /// queue as it is; more for what [`crate::shed`] asks before it makes
    /// room.
    fn may_queue_without(&self, gone: u128) -> bool;

    /// Whether `item` may take the place of waiting items counting `gone` in
    /// all without the weight waiting growing past what its budget allows:
    /// no budget, or no growth ([`crate::shed`], with budgets lowered below
    /// what waits).
    fn may_replace(&self, gone: u128, item: &F) -> bool;

    /// `item` entered the waiting queue.
    fn queued(&mut self, item: &F);

    /// `item` left the waiting queue: to start (then [`started`](Self::started)
    /// follows), expired, shed or dropped.
    fn unqueued(&mut self, item: &F);

    /// `item` starts; returns its ticket.
    fn started(&mut self, item: &F) -> Self::Ticket;

    /// The item with `ticket` completed.
    fn finished(&mut self, ticket: Self::Ticket);

    /// Every item is gone (fail fast): forget them all.
    fn clear(&mut self);

    /// See [`KeyRule::take_unblocked`].
    fn take_unblocked(&mut self) -> bool;

    /// Keys with an item running, the waiting items whose key is at its limit
    /// among `waiting`, and the weights in use (see [`WeightRule::in_use`]).
    fn report<'a>(&self, waiting: impl Iterator<Item = &'a F>) -> (usize, usize, [u64; 4])
    where
        F: 'a;
}

impl<Q, W> Admission<Q, W> {
    /// [`Admits::pick`] for a rule with ranks: of the items the keys and the
    /// window allow, the lowest rank (the oldest of equals); weights then go
    /// first come, first served in that order, as they do in input order.
    #[inline(never)]
    fn pick_ranked<'a, F: 'a>(&self, items: impl Iterator<Item = (&'a F, bool)>) -> Option<usize>
    where
        Q: KeyRule<F>,
        W: WeightRule<F>,
    {
        let mut best: Option<(u128, usize, &F)> = None;
        for (index, (item, in_window)) in items.enumerate() {
            if !in_window || !self.keys.may_start(item) {
                continue;
            }
            let rank = self.keys.rank(item);
            if best.is_none_or(|(lowest, _, _)| rank < lowest) {
                best = Some((rank, index, item));
            }
        }
        let (_, index, item) = best?;
        self.weights.may_start(item).then_some(index)
    }
}

impl<F, Q: KeyRule<F>, W: WeightRule<F>> Admits<F> for Admission<Q, W> {
    type Ticket = (Q::Ticket, W::Ticket);
    const APPLIES: bool = Q::KEYED || W::WEIGHTED;
    const RULES: (bool, bool) = (Q::KEYED, W::WEIGHTED);
    const RANKED: bool = Q::RANKED;

    #[inline]
    fn pick<'a>(&self, items: impl Iterator<Item = (&'a F, bool)>) -> Option<usize>
    where
        F: 'a,
    {
        if Q::RANKED {
            return self.pick_ranked(items);
        }
        for (index, (item, in_window)) in items.enumerate() {
            if !self.keys.may_start(item) {
                continue;
            }
            return (in_window && self.weights.may_start(item)).then_some(index);
        }
        None
    }

    #[inline(always)]
    fn take_unblocked(&mut self) -> bool {
        Q::RANKED && self.keys.take_unblocked()
    }

    #[inline(always)]
    fn waiting_weight(&self, item: &F) -> u64 {
        self.weights.waiting_weight(item)
    }

    #[inline(always)]
    fn may_queue_without(&self, gone: u128) -> bool {
        self.weights.may_queue_without(gone)
    }

    #[inline(always)]
    fn may_replace(&self, gone: u128, item: &F) -> bool {
        self.weights.may_replace(gone, item)
    }

    #[inline(always)]
    fn queued(&mut self, item: &F) {
        self.keys.queued(item);
        self.weights.queued(item);
    }

    #[inline(always)]
    fn unqueued(&mut self, item: &F) {
        self.keys.unqueued(item);
        self.weights.unqueued(item);
    }

    #[inline(always)]
    fn started(&mut self, item: &F) -> Self::Ticket {
        (self.keys.started(item), self.weights.started(item))
    }

    #[inline(always)]
    fn finished(&mut self, (key, weight): Self::Ticket) {
        self.keys.finished(key);
        self.weights.finished(weight);
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.weights.clear();
    }

    fn report<'a>(&self, waiting: impl Iterator<Item = &'a F>) -> (usize, usize, [u64; 4])
    where
        F: 'a,
    {
        let blocked = if Q::KEYED {
            waiting.filter(|item| !self.keys.may_start(item)).count()
        } else {
            0
        };
        (self.keys.keys_running(), blocked, self.weights.in_use())
    }
}
