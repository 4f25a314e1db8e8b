//! What a tenant's items carry: the tenant's counts, shared by the source
//! (which pulls from a tenant only while its waiting items are below its
//! budget) and the fair-share rule (which counts them). Both are reached
//! under the engine's lock (spawned) or on one thread (in place): the
//! atomics are there to make the type `Sync`, not to order anything.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::fair::UNIT;
use crate::admission::sealed;

/// One tenant, as its items and the rule see it.
pub(crate) struct Share<K> {
    pub(crate) key: K,
    pub(crate) weight: u32,
    /// Its place among the tenants held (reused once it left).
    pub(crate) slot: usize,
    /// How far its tag moves per start: `UNIT / weight`.
    pub(crate) step: u128,
    /// Its waiting budget: items of it in the waiting queue at most (set
    /// once, by [`Tenants::bounded`](super::Tenants::bounded)).
    pub(crate) room: AtomicUsize,
    /// Its items in the waiting queue.
    pub(crate) queued: AtomicUsize,
    /// Its items running.
    pub(crate) running: AtomicUsize,
    /// Its items started and finished (completed, or dropped running).
    pub(crate) started: AtomicU64,
    pub(crate) finished: AtomicU64,
}

impl<K> Share<K> {
    pub(crate) fn new(key: K, weight: u32, slot: usize, room: usize) -> Self {
        Self {
            key,
            weight,
            slot,
            step: UNIT / u128::from(weight),
            room: AtomicUsize::new(room),
            queued: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            started: AtomicU64::new(0),
            finished: AtomicU64::new(0),
        }
    }

    pub(crate) fn set_room(&self, room: usize) {
        self.room.store(room, Relaxed);
    }

    /// Whether the source may pull one more item of this tenant.
    pub(crate) fn has_room(&self) -> bool {
        self.queued.load(Relaxed) < self.room.load(Relaxed)
    }

    /// Whether this tenant's waiting items fill its budget.
    pub(crate) fn is_full(&self, queued: usize) -> bool {
        queued >= self.room.load(Relaxed)
    }

    /// Whether nothing of this tenant waits or runs.
    pub(crate) fn is_idle(&self) -> bool {
        self.queued.load(Relaxed) == 0 && self.running.load(Relaxed) == 0
    }
}

pin_project! {
    /// An item of a [`Tenants`](super::Tenants) stream: the future a
    /// tenant's source gave, with its tenant. It is a future itself, with
    /// the output of the future it holds; an item handed back unstarted
    /// (expired, shed, past a deadline) is one, and says whose it was.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Tenants;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut items = Tenants::new().with("a", 1, stream::iter([async { 1 }]));
    /// let item = items.next().await.expect("one item");
    /// assert_eq!(*item.tenant(), "a");
    /// assert_eq!(item.into_inner().await, 1);
    /// # });
    /// ```
    #[must_use = "futures do nothing unless polled"]
    pub struct Tenanted<K, F> {
        share: Arc<Share<K>>,
        #[pin]
        future: F,
    }
}

impl<K, F> Tenanted<K, F> {
    pub(crate) fn new(share: Arc<Share<K>>, future: F) -> Self {
        Self { share, future }
    }

    /// The key of the item's tenant.
    pub fn tenant(&self) -> &K {
        &self.share.key
    }

    /// The future, without its tenant.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<K, F: Future> Future for Tenanted<K, F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.project().future.poll(cx)
    }
}

impl<K: fmt::Debug, F> fmt::Debug for Tenanted<K, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tenanted")
            .field("tenant", &self.share.key)
            .finish_non_exhaustive()
    }
}

/// An item that belongs to a tenant ([`Tenanted`]).
///
/// Part of the stream's type; you never implement or call it.
pub trait TenantOf<K>: sealed::Sealed {
    /// The tenant's shared counts.
    #[doc(hidden)]
    #[allow(private_interfaces)]
    fn share(&self) -> &Arc<Share<K>>;
}

impl<K, F> sealed::Sealed for Tenanted<K, F> {}

impl<K, F> TenantOf<K> for Tenanted<K, F> {
    #[inline(always)]
    #[allow(private_interfaces)]
    fn share(&self) -> &Arc<Share<K>> {
        &self.share
    }
}

/// A tenant's item nests what it holds: a [`Weighted`](crate::Weighted)
/// future keeps its weight for the weight budgets, a
/// [`Deadline`](crate::Deadline) its deadline for `item_deadlines`.
impl<K, F: crate::WeightOf> crate::WeightOf for Tenanted<K, F> {
    #[inline]
    fn weight_of(&self) -> u64 {
        self.future.weight_of()
    }
}

impl<K, F: crate::DeadlineOf> crate::DeadlineOf for Tenanted<K, F> {
    #[inline]
    fn deadline_of(&self) -> std::time::Instant {
        self.future.deadline_of()
    }
}
