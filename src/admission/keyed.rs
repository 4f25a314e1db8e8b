//! Per-key limits: the one rule of [`per_key`](crate::BoundedBuffered::per_key),
//! written here and used by both modes.
//!
//! Each item carries a key ([`Keyed`]). At most `limit` items of one key run
//! at once. A free worker starts the oldest waiting item whose key is below
//! its limit; an item whose key is at its limit stays where it is in the
//! waiting queue (counting against `waiting`), and later items of other keys
//! may start past it. The state is one count per key with an item running or
//! waiting, so it is bounded by the budgets: at most `workers + waiting` keys.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::sealed;

pin_project! {
    /// A future with a key, for [`per_key`](crate::BoundedBuffered::per_key):
    /// at most a given number of items of one key run at once. It is a future
    /// itself, with the output of the future it holds.
    ///
    /// Nest it with [`Weighted`](crate::Weighted) in either order to give an
    /// item a key and a weight.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::{BoundedStreamExt, Keyed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// // Jobs of three tenants; at most one job per tenant runs at a time.
    /// let outputs: Vec<u32> = stream::iter(0..9u32)
    ///     .map(|n| Keyed::new(n % 3, async move { n }))
    ///     .bounded(4, 4)
    ///     .per_key(1)
    ///     .collect()
    ///     .await;
    /// assert_eq!(outputs.len(), 9);
    ///
    /// let job = Keyed::new("tenant-a", async { 1 });
    /// assert_eq!(*job.key(), "tenant-a");
    /// assert_eq!(job.into_inner().await, 1);
    /// # });
    /// ```
    #[must_use = "futures do nothing unless polled"]
    pub struct Keyed<K, F> {
        key: K,
        #[pin]
        future: F,
    }
}

impl<K, F> Keyed<K, F> {
    /// `future`, with `key`.
    pub fn new(key: K, future: F) -> Self {
        Self { key, future }
    }

    /// The item's key.
    pub fn key(&self) -> &K {
        &self.key
    }

    /// The future, without its key.
    pub fn into_inner(self) -> F {
        self.future
    }

    pub(crate) fn future_ref(&self) -> &F {
        &self.future
    }
}

impl<K, F: Future> Future for Keyed<K, F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.project().future.poll(cx)
    }
}

impl<K: fmt::Debug, F> fmt::Debug for Keyed<K, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyed")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// An item that carries a key of type `K`: [`Keyed`], or a
/// [`Weighted`](crate::Weighted) around one (through any nesting of the two).
///
/// Part of the stream's type; you never implement or call it.
pub trait KeyOf<K>: sealed::Sealed {
    /// The item's key.
    #[doc(hidden)]
    fn key_of(&self) -> &K;
}

impl<K, F> sealed::Sealed for Keyed<K, F> {}

impl<K, F> KeyOf<K> for Keyed<K, F> {
    #[inline]
    fn key_of(&self) -> &K {
        &self.key
    }
}

/// How a stream admits items by key: [`Unkeyed`] (the default: keys play no
/// part) or [`PerKey`] (made by [`per_key`](crate::BoundedBuffered::per_key)).
///
/// Part of the stream's type; you never implement or call it. Both are
/// `Send`, `Sync` and `Unpin` (a key must be `Send + Sync`).
pub trait KeyRule<F>: sealed::Sealed + Send + Sync + Unpin + 'static {
    /// What a running item carries until it completes: its key.
    #[doc(hidden)]
    type Ticket: Copy + Default + Send + Sync + Unpin + 'static;
    /// Whether keys play any part: with `false`, every branch on them
    /// compiles away.
    #[doc(hidden)]
    const KEYED: bool;

    /// Whether `item`'s key is below its limit: it may start.
    #[doc(hidden)]
    fn may_start(&self, item: &F) -> bool;

    /// `item` entered the waiting queue.
    #[doc(hidden)]
    fn queued(&mut self, item: &F);

    /// `item` left the waiting queue: it starts (see [`started`](Self::started)),
    /// expired, was rejected or dropped.
    #[doc(hidden)]
    fn unqueued(&mut self, item: &F);

    /// `item` starts: counts it against its key, returns its ticket.
    #[doc(hidden)]
    fn started(&mut self, item: &F) -> Self::Ticket;

    /// The item with `ticket` completed, or was dropped running.
    #[doc(hidden)]
    fn finished(&mut self, ticket: Self::Ticket);

    /// Every item is gone (fail fast): forget them all.
    #[doc(hidden)]
    fn clear(&mut self);

    /// Keys with an item running.
    #[doc(hidden)]
    fn keys_running(&self) -> usize;

    /// Whether the rule orders the items it allows by a rank of its own
    /// (the lowest starts first; ties to the oldest) instead of taking the
    /// oldest: the fair shares of [`Tenants`](crate::Tenants).
    #[doc(hidden)]
    const RANKED: bool = false;

    /// `item`'s rank, when [`RANKED`](Self::RANKED).
    #[doc(hidden)]
    #[inline(always)]
    fn rank(&self, _item: &F) -> u128 {
        0
    }

    /// Whether, since the last call, the source may have an item again that
    /// it held back for the rule's sake (a tenant's waiting places filled):
    /// the engine then lets the source be pulled before it wakes.
    #[doc(hidden)]
    #[inline(always)]
    fn take_unblocked(&mut self) -> bool {
        false
    }
}

/// Keys play no part (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct Unkeyed;

impl sealed::Sealed for Unkeyed {}

impl<F> KeyRule<F> for Unkeyed {
    type Ticket = ();
    const KEYED: bool = false;

    #[inline(always)]
    fn may_start(&self, _: &F) -> bool {
        true
    }

    #[inline(always)]
    fn queued(&mut self, _: &F) {}

    #[inline(always)]
    fn unqueued(&mut self, _: &F) {}

    #[inline(always)]
    fn started(&mut self, _: &F) {}

    #[inline(always)]
    fn finished(&mut self, (): ()) {}

    fn clear(&mut self) {}

    fn keys_running(&self) -> usize {
        0
    }
}

/// At most `limit` items of one key run at once (made by
/// [`per_key`](crate::BoundedBuffered::per_key)); `K` is the key's type.
pub struct PerKey<K> {
    limit: usize,
    /// The keys with an item running or waiting, each with the place of its
    /// count in `counts`. A key goes when nothing of it runs or waits, so there
    /// are never more than the items inside the stream.
    places: HashMap<K, usize>,
    /// The counts, by place, with their keys; a place whose key went is reused
    /// (`free`). A running item's ticket is its key's place, so starting and
    /// completing an item clones nothing: a key is cloned once, when it enters
    /// the stream with no item of it inside. The memory grows to the most keys
    /// seen at once and is reused.
    counts: Vec<Count<K>>,
    free: Vec<usize>,
    /// Keys with an item running.
    running: usize,
}

/// One key's count, and the key itself, to forget it when the count is 0.
struct Count<K> {
    key: Option<K>,
    running: usize,
    waiting: usize,
}

impl<K> PerKey<K> {
    /// At most `limit` items of each key at once.
    ///
    /// # Panics
    ///
    /// If `limit` is 0: no item could ever start.
    #[track_caller]
    pub(crate) fn new(limit: usize) -> Self {
        assert!(
            limit > 0,
            "`per_key` needs a limit of at least one item: with 0 no item could ever start"
        );
        Self {
            limit,
            places: HashMap::new(),
            counts: Vec::new(),
            free: Vec::new(),
            running: 0,
        }
    }
}

impl<K> fmt::Debug for PerKey<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerKey")
            .field("limit", &self.limit)
            .field("keys", &self.places.len())
            .field("keys_running", &self.running)
            .finish_non_exhaustive()
    }
}

impl<K> sealed::Sealed for PerKey<K> {}

impl<K, F> KeyRule<F> for PerKey<K>
where
    K: Hash + Eq + Clone + Send + Sync + Unpin + 'static,
    F: KeyOf<K>,
{
    type Ticket = usize;
    const KEYED: bool = true;

    #[inline]
    fn may_start(&self, item: &F) -> bool {
        self.places
            .get(item.key_of())
            .is_none_or(|&place| self.counts[place].running < self.limit)
    }

    fn queued(&mut self, item: &F) {
        let place = self.place(item.key_of());
        self.counts[place].waiting += 1;
    }

    fn unqueued(&mut self, item: &F) {
        if let Some(&place) = self.places.get(item.key_of()) {
            self.counts[place].waiting -= 1;
            self.forget_if_idle(place);
        }
    }

    fn started(&mut self, item: &F) -> usize {
        let place = self.place(item.key_of());
        let count = &mut self.counts[place];
        count.running += 1;
        if count.running == 1 {
            self.running += 1;
        }
        place
    }

    fn finished(&mut self, place: usize) {
        let count = &mut self.counts[place];
        count.running -= 1;
        if count.running == 0 {
            self.running -= 1;
        }
        self.forget_if_idle(place);
    }

    fn clear(&mut self) {
        self.places.clear();
        self.counts.clear();
        self.free.clear();
        self.running = 0;
    }

    fn keys_running(&self) -> usize {
        self.running
    }
}

impl<K: Hash + Eq + Clone> PerKey<K> {
    /// The place of `key`'s count, made at 0 if it has none (the key is
    /// cloned only then).
    fn place(&mut self, key: &K) -> usize {
        if let Some(&place) = self.places.get(key) {
            return place;
        }
        let count = Count {
            key: Some(key.clone()),
            running: 0,
            waiting: 0,
        };
        let place = match self.free.pop() {
            Some(place) => {
                self.counts[place] = count;
                place
            }
            None => {
                self.counts.push(count);
                self.counts.len() - 1
            }
        };
        self.places.insert(key.clone(), place);
        place
    }

    /// Forgets the key at `place` once nothing of it runs or waits.
    fn forget_if_idle(&mut self, place: usize) {
        let count = &mut self.counts[place];
        if count.running == 0 && count.waiting == 0 {
            if let Some(key) = count.key.take() {
                self.places.remove(&key);
            }
            self.free.push(place);
        }
    }
}
