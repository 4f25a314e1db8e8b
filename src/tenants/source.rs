//! [`Tenants`]: one source per tenant, as one stream of [`Tenanted`] items.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;

use super::fair::FairShare;
use super::share::{Share, Tenanted};
use super::watch::{Registry, TenantShares, register, unregister};
use crate::clock::Untimed;
use crate::{BoundedBuffered, BoundedStreamExt, TryBoundedBuffered};

/// A tenant held by the source.
struct Held<K, S> {
    share: Arc<Share<K>>,
    /// `None` once it ended: it is never polled again, and the tenant goes
    /// once nothing of it waits or runs.
    stream: Option<Pin<Box<S>>>,
}

/// Several sources, one per tenant, each with a key and a weight, run
/// with fair shares of one `workers` budget and a `waiting` budget each.
///
/// Build it with [`new`](Self::new) (a fixed set, each added with
/// [`with`](Self::with)) or [`joining`](Self::joining) (tenants that
/// arrive while it runs), then run it with [`bounded`](Self::bounded):
///
/// - **`workers`** is shared: at most this many items run at once, of all
///   tenants together.
/// - **`waiting`** is per tenant: each tenant has its own waiting
///   places, at least one (`0` counts as one, as with keys), and one
///   tenant's backlog never takes another's. The source is pulled from
///   a tenant only while it has a free place.
/// - **Fair starts**: when a worker frees, it starts the oldest waiting
///   item of the tenant the fair-share rule picks, so that tenants that
///   stay busy get starts in proportion to their weights, within one
///   start each; see [Fair shares](crate::guide::tenants). No worker is
///   ever idle while a tenant has an item its cap allows.
/// - **A cap** ([`cap`](Self::cap)), optionally: at most this many items
///   of one tenant run at once.
///
/// With every future blocked, the source has given at most
/// `workers + waiting × tenants` items (at most `cap + waiting` of one
/// tenant), where `tenants` is how many are held: at most
/// `max_tenants`, or the fixed set's size. A tenant is held from when
/// it is added until its source ended and none of its items waits or
/// runs.
///
/// The result is a [`BoundedBuffered`], so every setting composes:
/// `.ordered(window)` yields in the order items were pulled, which is
/// each tenant's input order, tenants interleaved as they were pulled;
/// `max_wait`, deadlines, `shed`, `limits`, `timed`, `metrics` and
/// `spawn_on` apply to every tenant's items alike. An item handed back
/// unstarted is a [`Tenanted`], which says whose it was.
///
/// # Examples
///
/// ```
/// use bounded_buffered::Tenants;
/// use futures::{Stream, StreamExt, stream};
///
/// // Every tenant's source has one type: here, one function makes them.
/// fn jobs(tenant: &'static str, count: u32) -> impl Stream<Item = impl Future<Output = (&'static str, u32)>> {
///     stream::iter(0..count).map(move |n| async move { (tenant, n) })
/// }
///
/// # futures::executor::block_on(async {
/// let done: Vec<(&str, u32)> = Tenants::new()
///     .with("batch", 1, jobs("batch", 100))
///     .with("interactive", 2, jobs("interactive", 10))
///     .bounded(4, 8) // 4 workers shared; 8 waiting places per tenant
///     .collect()
///     .await;
/// assert_eq!(done.len(), 110);
/// # });
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct Tenants<K, S, J = FixedTenants<K, S>> {
    held: Vec<Held<K, S>>,
    // Slots of tenants that left, for the next to arrive.
    free: Vec<usize>,
    // The tenant polled first next time (round robin).
    cursor: usize,
    joining: Pin<Box<J>>,
    joining_done: bool,
    max_tenants: Option<usize>,
    cap: usize,
    room: usize,
    // The tenants held, for `shares`.
    registry: Registry<K>,
}

impl<K, S> Tenants<K, S> {
    /// A fixed set of tenants, none yet: add each with [`with`](Self::with).
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Tenants;
    /// use futures::future::ready;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let tenants = Tenants::new().with("a", 1, stream::iter(vec![ready(1)]));
    /// assert_eq!(tenants.bounded(1, 1).collect::<Vec<_>>().await, [1]);
    /// # });
    /// ```
    pub fn new() -> Self {
        Self::with_arrivals(FixedTenants(PhantomData), None)
    }
}

impl<K, S> Default for Tenants<K, S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, S, J> Tenants<K, S, J> {
    /// Tenants that arrive while the stream runs, each `(key, weight,
    /// source)`: a server adds one per connection or customer. At most
    /// `max_tenants` are held at once; at that bound `tenants` is not
    /// polled until one leaves (its source ended and nothing of it waits
    /// or runs). Tenants added with [`with`](Self::with) count too.
    ///
    /// # Panics
    ///
    /// If `max_tenants` is 0. When the stream is polled, if a tenant
    /// arrives with weight 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Tenants;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let arrivals = stream::iter((0..3u32).map(|tenant| {
    ///     (tenant, 1, stream::iter((0..4u32).map(move |n| async move { tenant * 10 + n })))
    /// }));
    /// let done: Vec<u32> = Tenants::joining(2, arrivals).bounded(2, 1).collect().await;
    /// assert_eq!(done.len(), 12);
    /// # });
    /// ```
    #[track_caller]
    pub fn joining(max_tenants: usize, tenants: J) -> Self
    where
        J: Stream<Item = (K, u32, S)>,
    {
        assert!(
            max_tenants > 0,
            "`Tenants::joining`: `max_tenants` must be at least 1"
        );
        Self::with_arrivals(tenants, Some(max_tenants))
    }

    /// No tenant yet; `arrivals` to come, at most `max_tenants` held (a
    /// fixed set, `None`: as many as are added).
    fn with_arrivals(arrivals: J, max_tenants: Option<usize>) -> Self {
        Tenants {
            held: Vec::new(),
            free: Vec::new(),
            cursor: 0,
            joining: Box::pin(arrivals),
            // A fixed set has no arrivals to poll.
            joining_done: max_tenants.is_none(),
            max_tenants,
            cap: usize::MAX,
            room: 1,
            registry: Registry::default(),
        }
    }

    /// Adds a tenant: its key, its weight (its share of the starts, against
    /// the other tenants' weights) and its source, a stream of futures.
    ///
    /// # Panics
    ///
    /// If `weight` is 0, or if the tenants would be more than
    /// [`joining`](Self::joining)'s `max_tenants`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Tenants;
    /// use futures::future::ready;
    /// use futures::stream;
    ///
    /// // Tenant "b" gets two starts for each of "a"'s while both are busy.
    /// let tenants = Tenants::new()
    ///     .with("a", 1, stream::iter(vec![ready(1)]))
    ///     .with("b", 2, stream::iter(vec![ready(2)]));
    /// # drop(tenants);
    /// ```
    #[track_caller]
    pub fn with(mut self, key: K, weight: u32, source: S) -> Self {
        assert!(
            weight > 0,
            "`Tenants::with`: a tenant's weight must be at least 1"
        );
        if let Some(max) = self.max_tenants {
            assert!(
                self.held.len() < max,
                "`Tenants::with`: more tenants than `max_tenants` ({max})"
            );
        }
        self.admit(key, weight, source);
        self
    }

    /// At most `cap` items of one tenant run at once (no cap by default).
    /// Unlike a cap alone ([`per_key`](crate::BoundedBuffered::per_key)), the
    /// tenants' shares still apply below it, and a worker a capped tenant
    /// cannot use goes to another.
    ///
    /// # Panics
    ///
    /// If `cap` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Tenants;
    /// use futures::future::ready;
    /// use futures::stream;
    ///
    /// let tenants = Tenants::new().with("a", 1, stream::iter(vec![ready(1)])).cap(2);
    /// # drop(tenants);
    /// ```
    #[track_caller]
    pub fn cap(mut self, cap: usize) -> Self {
        assert!(cap > 0, "`Tenants::cap`: `cap` must be at least 1");
        self.cap = cap;
        self
    }

    fn admit(&mut self, key: K, weight: u32, source: S) {
        admit(
            (&mut self.held, &mut self.free, &self.registry),
            self.room,
            (key, weight, source),
        );
    }

    /// A handle on the tenants' counts (running, waiting, started,
    /// completed), to read while the stream runs.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Tenants;
    /// use futures::future::ready;
    /// use futures::stream;
    ///
    /// let tenants = Tenants::new().with("a", 2, stream::iter(vec![ready(1)]));
    /// let shares = tenants.shares();
    /// assert_eq!(shares.stats()[0].weight, 2);
    /// # drop(tenants);
    /// ```
    pub fn shares(&self) -> TenantShares<K> {
        TenantShares::new(Arc::clone(&self.registry))
    }

    /// Gives each tenant `waiting` places (at least one), and says how many
    /// that makes for all the tenants that may be held at once.
    #[track_caller]
    fn budgeted(mut self, waiting: usize) -> (Self, usize) {
        self.room = waiting.max(1);
        for held in &self.held {
            held.share.set_room(self.room);
        }
        let Some(total) = self.room.checked_mul(self.max_held()) else {
            panic!("`Tenants::bounded`: `waiting × max_tenants` overflows");
        };
        (self, total)
    }

    /// The tenants' bound on how many are held at once.
    fn max_held(&self) -> usize {
        self.max_tenants.unwrap_or(self.held.len()).max(1)
    }
}

impl<K, S, J> Tenants<K, S, J>
where
    K: Send + Sync + 'static,
    S: Stream<Item: Future>,
    J: Stream<Item = (K, u32, S)>,
{
    /// Runs the tenants' items: at most `workers` at once, of all tenants
    /// together; up to `waiting` more of each tenant pulled ahead (at least
    /// one); the next to start chosen by the tenants' fair shares.
    ///
    /// # Panics
    ///
    /// If `workers` is 0, or if `waiting × max_tenants` overflows.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Tenants;
    /// use futures::future::ready;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let sum: u32 = Tenants::new()
    ///     .with("a", 1, stream::iter(vec![ready(1), ready(2)]))
    ///     .bounded(2, 0)
    ///     .fold(0, |sum, n| async move { sum + n })
    ///     .await;
    /// assert_eq!(sum, 3);
    /// # });
    /// ```
    #[track_caller]
    pub fn bounded(
        self,
        workers: usize,
        waiting: usize,
    ) -> BoundedBuffered<Self, Untimed, Infallible, FairShare<K>> {
        let (tenants, total) = self.budgeted(waiting);
        let cap = tenants.cap;
        BoundedStreamExt::bounded(tenants, workers, total).fair_shares(FairShare::new(cap))
    }

    /// Like [`bounded`](Self::bounded), for tenants whose futures are
    /// fallible, failing fast: the first `Err` of any tenant's future ends
    /// the whole run, as with [`try_bounded`](crate::BoundedStreamExt::try_bounded)
    /// (a tenant whose errors must not stop the others returns them as
    /// `Ok` outputs instead). The tenants' sources themselves do not fail.
    ///
    /// # Panics
    ///
    /// As [`bounded`](Self::bounded).
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Tenants;
    /// use futures::future::ready;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let outputs: Vec<Result<u32, &str>> = Tenants::new()
    ///     .with("a", 1, stream::iter(vec![ready(Ok(1)), ready(Err("broken")), ready(Ok(3))]))
    ///     .try_bounded(1, 0)
    ///     .collect()
    ///     .await;
    /// assert_eq!(outputs, [Ok(1), Err("broken")]);
    /// # });
    /// ```
    #[track_caller]
    pub fn try_bounded<T, E>(
        self,
        workers: usize,
        waiting: usize,
    ) -> TryBoundedBuffered<Fallible<Self>, Untimed, Infallible, FairShare<K>>
    where
        S::Item: Future<Output = Result<T, E>>,
    {
        let (tenants, total) = self.budgeted(waiting);
        let cap = tenants.cap;
        BoundedStreamExt::try_bounded(Fallible { tenants }, workers, total)
            .fair_shares(FairShare::new(cap))
    }
}

/// A [`Tenants`] stream whose futures are fallible, as
/// [`Tenants::try_bounded`] runs it: each item is `Ok`, since the tenants'
/// sources themselves do not fail.
#[must_use = "streams do nothing unless polled"]
pub struct Fallible<T> {
    tenants: T,
}

/// The error type of a `Result` (what [`Fallible`]'s items fail with).
pub trait ErrorOf: crate::admission::sealed::Sealed {
    /// The `E` of `Result<T, E>`.
    type Error;
}

impl<T, E> crate::admission::sealed::Sealed for Result<T, E> {}

impl<T, E> ErrorOf for Result<T, E> {
    type Error = E;
}

impl<K, S, J> Stream for Fallible<Tenants<K, S, J>>
where
    S: Stream<Item: Future<Output: ErrorOf>>,
    J: Stream<Item = (K, u32, S)>,
{
    type Item = Result<Tenanted<K, S::Item>, <<S::Item as Future>::Output as ErrorOf>::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.get_mut().tenants)
            .poll_next(cx)
            .map(|item| item.map(Ok))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.tenants.size_hint()
    }
}

impl<T: fmt::Debug> fmt::Debug for Fallible<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.tenants.fmt(f)
    }
}

impl<K, S, J> Stream for Tenants<K, S, J>
where
    S: Stream<Item: Future>,
    J: Stream<Item = (K, u32, S)>,
{
    type Item = Tenanted<K, S::Item>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            // Tenants whose source ended and that have nothing left go.
            let (free, registry) = (&mut this.free, &this.registry);
            this.held.retain(|held| {
                let gone = held.stream.is_none() && held.share.is_idle();
                if gone {
                    free.push(held.share.slot);
                    unregister(registry, &held.share);
                }
                !gone
            });
            // New tenants, while fewer than the bound are held.
            let max = this.max_tenants.unwrap_or(usize::MAX);
            while !this.joining_done && this.held.len() < max {
                match this.joining.as_mut().poll_next(cx) {
                    Poll::Ready(Some(tenant)) => {
                        assert!(
                            tenant.1 > 0,
                            "`Tenants::joining`: a tenant arrived with weight 0"
                        );
                        let parts = (&mut this.held, &mut this.free, &this.registry);
                        admit(parts, this.room, tenant);
                    }
                    Poll::Ready(None) => this.joining_done = true,
                    Poll::Pending => break,
                }
            }
            // One item, from the next tenant with a free waiting place.
            let count = this.held.len();
            let mut left = false;
            for turn in 0..count {
                let at = (this.cursor + turn) % count;
                let held = &mut this.held[at];
                let Some(stream) = &mut held.stream else {
                    continue;
                };
                if !held.share.has_room() {
                    continue;
                }
                match stream.as_mut().poll_next(cx) {
                    Poll::Ready(Some(future)) => {
                        this.cursor = at + 1;
                        return Poll::Ready(Some(Tenanted::new(Arc::clone(&held.share), future)));
                    }
                    Poll::Ready(None) => {
                        held.stream = None;
                        left |= held.share.is_idle();
                    }
                    Poll::Pending => {}
                }
            }
            if this.joining_done && this.held.iter().all(|held| held.stream.is_none()) {
                return Poll::Ready(None);
            }
            // A tenant that left makes room for one more: look again.
            if !left || this.joining_done {
                return Poll::Pending;
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let mut low = 0usize;
        let mut high = Some(0usize);
        for held in &self.held {
            if let Some(stream) = &held.stream {
                let (l, h) = stream.size_hint();
                low = low.saturating_add(l);
                high = high.zip(h).and_then(|(a, b)| a.checked_add(b));
            }
        }
        (low, if self.joining_done { high } else { None })
    }
}

/// Takes in a tenant: a slot (one that left, or a new one), its share, its
/// place in the registry.
fn admit<K, S>(
    (held, free, registry): (&mut Vec<Held<K, S>>, &mut Vec<usize>, &Registry<K>),
    room: usize,
    (key, weight, source): (K, u32, S),
) {
    let slot = free.pop().unwrap_or(held.len() + free.len());
    let share = Arc::new(Share::new(key, weight, slot, room));
    register(registry, &share);
    held.push(Held {
        share,
        stream: Some(Box::pin(source)),
    });
}

impl<K: fmt::Debug, S, J> fmt::Debug for Tenants<K, S, J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tenants")
            .field(
                "tenants",
                &self
                    .held
                    .iter()
                    .map(|held| &held.share.key)
                    .collect::<Vec<_>>(),
            )
            .field("max_tenants", &self.max_tenants)
            .field("joining_done", &self.joining_done)
            .finish_non_exhaustive()
    }
}

/// The tenants of a fixed set: none joins ([`Tenants::new`]).
pub struct FixedTenants<K, S>(PhantomData<fn() -> (K, S)>);

impl<K, S> Stream for FixedTenants<K, S> {
    type Item = (K, u32, S);

    fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(None)
    }
}

impl<K, S> fmt::Debug for FixedTenants<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FixedTenants")
    }
}
