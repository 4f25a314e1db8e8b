//! Expiry at pickup: the one rule of [`max_wait`](crate::BoundedBuffered::max_wait),
//! written here and used by both modes.
//!
//! An item pulled into the waiting queue carries the time it was pulled. When a
//! worker frees up for it, the time it waited is checked: if it waited longer than
//! the limit, it is not started (never polled), takes no worker, and is handed to
//! the consumer as an [`Expired`] outcome, with the untouched future inside; the
//! next waiting item is considered at once. An item pulled straight into a free
//! worker never waited, so it never expires. There are no timers: the check is
//! made only at pickup, so the adapter stays executor-agnostic.

use std::convert::Infallible;
use std::error::Error;
use std::fmt;
use std::time::Duration;

use crate::time::{Cancelled, DeadlinePassed, Late};

/// A waiting item that was not started because it waited longer than the
/// stream's [`max_wait`](crate::BoundedBuffered::max_wait).
///
/// It holds the item's future, never polled: [`into_inner`](Self::into_inner)
/// hands it back, so nothing is lost (record it, retry it, or run it anyway).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use bounded_buffered::BoundedStreamExt;
/// use futures::{StreamExt, stream};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// // One worker, a 10 ms job each: the third item waits 20 ms in the queue.
/// let mut jobs = stream::iter(0..3u32)
///     .map(|n| async move {
///         tokio::time::sleep(Duration::from_millis(10)).await;
///         n
///     })
///     .bounded(1, 2)
///     .max_wait(Duration::from_millis(15))
///     .clock(|| tokio::time::Instant::now().into_std());
/// assert_eq!(jobs.next().await.unwrap().ok(), Some(0));
/// assert_eq!(jobs.next().await.unwrap().ok(), Some(1));
/// let expired = jobs.next().await.unwrap().unwrap_err();
/// assert_eq!(expired.waited(), Duration::from_millis(20));
/// assert_eq!(expired.into_inner().await, 2); // the untouched future still runs
/// assert_eq!(jobs.stats().expired, 1);
/// # }
/// ```
pub struct Expired<F> {
    future: F,
    waited: Duration,
}

impl<F> Expired<F> {
    pub(crate) fn new(future: F, waited: Duration) -> Self {
        Self { future, waited }
    }

    /// How long the item waited, from its pull to the pickup that found it
    /// expired.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// The item's future, never polled.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F> fmt::Debug for Expired<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expired")
            .field("waited", &self.waited)
            .finish_non_exhaustive()
    }
}

impl<F> fmt::Display for Expired<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the item waited {:?} for a worker, longer than its limit, and was not started",
            self.waited
        )
    }
}

impl<F> Error for Expired<F> {}

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// What a stream hands back for an item it did not start: nothing (the
/// default, [`Infallible`]: every item runs), an [`Expired`] item (made by
/// [`max_wait`](crate::BoundedBuffered::max_wait)), a [`Rejected`] one (made
/// by [`shed`](crate::BoundedBuffered::shed)), or either, as a [`NotRun`] (both
/// set). The stream's third type parameter, so its type says what may come
/// back: `BoundedBuffered<St, Clocked, Expired<St::Item>>` yields `Result<T,
/// Expired<St::Item>>`.
///
/// Part of the stream's type; you never implement or call it.
///
/// [`Rejected`]: crate::Rejected
/// [`NotRun`]: crate::NotRun
pub trait Unstarted<F>: sealed::Sealed + Sized {
    /// Whether an item may expire at all: with `false`, every branch on it
    /// compiles away.
    #[doc(hidden)]
    const EXPIRES: bool;
    /// Whether an item may be rejected (shed) at all.
    #[doc(hidden)]
    const REJECTS: bool;
    /// Whether the stream has deadlines: an item may come back late or
    /// cancelled, and the run may end at its deadline.
    #[doc(hidden)]
    const DEADLINES: bool = false;

    /// An item that expired at pickup, as this type holds it; handed back if
    /// it cannot hold one (never asked: only a stream that may expire has a
    /// `max_wait`).
    #[doc(hidden)]
    fn expired(expired: Expired<F>) -> Result<Self, Expired<F>>;

    /// An item that was shed, as this type holds it; handed back if it cannot
    /// hold one (never asked: only a stream that may reject sheds).
    #[doc(hidden)]
    fn rejected(rejected: crate::Rejected<F>) -> Result<Self, crate::Rejected<F>>;

    /// Whether this is a rejection (else an expiry, or one of a deadline's).
    #[doc(hidden)]
    fn is_rejected(&self) -> bool;

    /// An item a deadline kept from starting, as this type holds it; handed
    /// back if it cannot hold one (never asked: only a stream with
    /// deadlines has them).
    #[doc(hidden)]
    fn late(late: Late<F>) -> Result<Self, Late<F>> {
        Err(late)
    }

    /// An item cancelled at the run's deadline, if this type holds one.
    #[doc(hidden)]
    fn cancelled(_: Cancelled) -> Option<Self> {
        None
    }

    /// The run's deadline, as its last outcome, if this type holds one.
    #[doc(hidden)]
    fn deadline_passed(_: DeadlinePassed) -> Option<Self> {
        None
    }
}

impl sealed::Sealed for Infallible {}

impl<F> Unstarted<F> for Infallible {
    const EXPIRES: bool = false;
    const REJECTS: bool = false;

    fn expired(expired: Expired<F>) -> Result<Self, Expired<F>> {
        Err(expired)
    }

    fn rejected(rejected: crate::Rejected<F>) -> Result<Self, crate::Rejected<F>> {
        Err(rejected)
    }

    fn is_rejected(&self) -> bool {
        match *self {}
    }
}

impl<F> sealed::Sealed for Expired<F> {}

impl<F> Unstarted<F> for Expired<F> {
    const EXPIRES: bool = true;
    const REJECTS: bool = false;

    fn expired(expired: Expired<F>) -> Result<Self, Expired<F>> {
        Ok(expired)
    }

    fn rejected(rejected: crate::Rejected<F>) -> Result<Self, crate::Rejected<F>> {
        Err(rejected)
    }

    fn is_rejected(&self) -> bool {
        false
    }
}

/// The limit of [`max_wait`](crate::BoundedBuffered::max_wait), and its rule.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MaxWait {
    /// The limit in nanoseconds (durations beyond 584 years are as good as
    /// forever).
    limit: u64,
}

impl MaxWait {
    pub(crate) fn new(limit: Duration) -> Self {
        Self {
            limit: u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// The rule: an item expires if it waited *longer* than the limit; one that
    /// waited exactly the limit still starts.
    #[inline]
    pub(crate) fn expired(self, waited: u64) -> bool {
        waited > self.limit
    }
}
