//! Per-tenant counts on request: [`TenantShares`], a handle on the tenants
//! a [`Tenants`](super::Tenants) stream holds.

use std::fmt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, PoisonError};

use super::share::Share;

/// The tenants held, as the handles see them. Locked only when a tenant
/// arrives or leaves and when a handle reads it, never per item.
pub(crate) type Registry<K> = Arc<Mutex<Vec<Arc<Share<K>>>>>;

pub(crate) fn register<K>(registry: &Registry<K>, share: &Arc<Share<K>>) {
    lock(registry).push(Arc::clone(share));
}

pub(crate) fn unregister<K>(registry: &Registry<K>, share: &Arc<Share<K>>) {
    lock(registry).retain(|held| !Arc::ptr_eq(held, share));
}

fn lock<K>(registry: &Registry<K>) -> std::sync::MutexGuard<'_, Vec<Arc<Share<K>>>> {
    // Nothing that holds the lock can panic half-way: a poisoned list is
    // still whole.
    registry.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A handle on a [`Tenants`](super::Tenants) stream's tenants, from
/// [`Tenants::shares`](super::Tenants::shares): each tenant's counts, read
/// while it runs, from any thread.
///
/// # Examples
///
/// ```
/// use bounded_buffered::Tenants;
/// use futures::future::ready;
/// use futures::{StreamExt, stream};
///
/// # futures::executor::block_on(async {
/// let tenants = Tenants::new().with("a", 1, stream::iter(vec![ready(1), ready(2)]));
/// let shares = tenants.shares();
/// let mut run = tenants.bounded(1, 1);
/// while run.next().await.is_some() {}
/// let a = &shares.stats()[0];
/// assert_eq!((a.tenant, a.started, a.completed), ("a", 2, 2));
/// # });
/// ```
pub struct TenantShares<K> {
    registry: Registry<K>,
}

impl<K> TenantShares<K> {
    pub(crate) fn new(registry: Registry<K>) -> Self {
        Self { registry }
    }

    /// Each tenant held now, in the order they arrived, with its counts. A
    /// tenant is listed until the source lets it go: when the source is
    /// next polled after its own source ended and nothing of it waits or
    /// runs (so the tenants of a finished run stay listed, with their
    /// final counts).
    pub fn stats(&self) -> Vec<TenantStats<K>>
    where
        K: Clone,
    {
        lock(&self.registry)
            .iter()
            .map(|share| TenantStats {
                tenant: share.key.clone(),
                weight: share.weight,
                running: share.running.load(Relaxed),
                waiting: share.queued.load(Relaxed),
                started: share.started.load(Relaxed),
                completed: share.finished.load(Relaxed),
            })
            .collect()
    }
}

#[cfg(feature = "metrics")]
impl<K: fmt::Display> TenantShares<K> {
    /// Publishes each tenant held now through the `metrics` facade, to the
    /// current recorder, labelled `stream = stream` and `tenant = ` the
    /// key: the gauges `bounded_tenant_running` and
    /// `bounded_tenant_waiting`, and the counters
    /// `bounded_tenant_started_total` and `bounded_tenant_completed_total`
    /// (set to the totals). Call it when you scrape, or on a timer: nothing
    /// is published per item, and the series are as many as the tenants
    /// held. A tenant that left is no longer published; its series keep
    /// their last values in the recorder.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Tenants;
    /// use futures::future::ready;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let tenants = Tenants::new().with("a", 1, stream::iter(vec![ready(1), ready(2)]));
    /// let shares = tenants.shares();
    /// let mut run = tenants.bounded(1, 1);
    /// run.next().await;
    /// shares.publish("jobs"); // to the global recorder, if any
    /// # });
    /// ```
    pub fn publish(&self, stream: &str) {
        for share in lock(&self.registry).iter() {
            let labels = [
                ("stream", stream.to_owned()),
                ("tenant", share.key.to_string()),
            ];
            metrics::gauge!("bounded_tenant_running", &labels)
                .set(share.running.load(Relaxed) as f64);
            metrics::gauge!("bounded_tenant_waiting", &labels)
                .set(share.queued.load(Relaxed) as f64);
            metrics::counter!("bounded_tenant_started_total", &labels)
                .absolute(share.started.load(Relaxed));
            metrics::counter!("bounded_tenant_completed_total", &labels)
                .absolute(share.finished.load(Relaxed));
        }
    }
}

impl<K> Clone for TenantShares<K> {
    fn clone(&self) -> Self {
        Self {
            registry: Arc::clone(&self.registry),
        }
    }
}

impl<K: fmt::Debug> fmt::Debug for TenantShares<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(lock(&self.registry).iter().map(|share| &share.key))
            .finish()
    }
}

/// One tenant's counts ([`TenantShares::stats`]).
///
/// # Examples
///
/// ```
/// use bounded_buffered::Tenants;
/// use futures::future::ready;
/// use futures::stream;
///
/// let tenants = Tenants::new().with("a", 3, stream::iter(vec![ready(1)]));
/// let a = &tenants.shares().stats()[0];
/// assert_eq!((a.tenant, a.weight, a.running, a.waiting, a.started, a.completed), ("a", 3, 0, 0, 0, 0));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TenantStats<K> {
    /// The tenant's key.
    pub tenant: K,
    /// Its weight.
    pub weight: u32,
    /// Its items running now.
    pub running: usize,
    /// Its items in its waiting places now.
    pub waiting: usize,
    /// Its items started so far.
    pub started: u64,
    /// Its items that finished so far (completed, or dropped while
    /// running).
    pub completed: u64,
}
