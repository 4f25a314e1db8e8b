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

mod sealed {
    pub trait Sealed {}
}

/// Whether waiting items expire: [`Fresh`] (they never do, the default) or
/// [`MaxWait`] (made by [`max_wait`](crate::BoundedBuffered::max_wait)).
///
/// Part of the stream's type; you never implement or call it.
pub trait Expiry: sealed::Sealed {
    /// What the stream holds per item: the output, or
    /// `Result<output, Expired<F>>` with `max_wait`.
    #[doc(hidden)]
    type Outcome<T, F>;
    /// What an expired pickup carries: uninhabited for [`Fresh`], so every
    /// branch on an expiry compiles away.
    #[doc(hidden)]
    type Proof;
    /// Whether any item may expire.
    #[doc(hidden)]
    const EXPIRES: bool;

    /// Whether an item that waited `waited` nanoseconds has expired.
    #[doc(hidden)]
    fn check(&self, waited: u64) -> Option<Self::Proof>;

    /// The outcome of an item that completed with `output`.
    #[doc(hidden)]
    fn done<T, F>(output: T) -> Self::Outcome<T, F>;

    /// The outcome of an item that expired.
    #[doc(hidden)]
    fn expired<T, F>(proof: Self::Proof, expired: Expired<F>) -> Self::Outcome<T, F>;

    /// Whether an outcome is an expiry.
    #[doc(hidden)]
    fn is_expired<T, F>(outcome: &Self::Outcome<T, F>) -> bool;
}

/// Waiting items never expire (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct Fresh;

impl sealed::Sealed for Fresh {}

impl Expiry for Fresh {
    type Outcome<T, F> = T;
    type Proof = Infallible;
    const EXPIRES: bool = false;

    #[inline(always)]
    fn check(&self, _: u64) -> Option<Infallible> {
        None
    }

    #[inline(always)]
    fn done<T, F>(output: T) -> T {
        output
    }

    fn expired<T, F>(proof: Infallible, _: Expired<F>) -> T {
        match proof {}
    }

    #[inline(always)]
    fn is_expired<T, F>(_: &T) -> bool {
        false
    }
}

/// Waiting items expire after a limit (made by
/// [`max_wait`](crate::BoundedBuffered::max_wait)).
#[derive(Clone, Copy, Debug)]
pub struct MaxWait {
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
}

impl sealed::Sealed for MaxWait {}

impl Expiry for MaxWait {
    type Outcome<T, F> = Result<T, Expired<F>>;
    type Proof = ();
    const EXPIRES: bool = true;

    /// The rule: an item expires if it waited *longer* than the limit; one that
    /// waited exactly the limit still starts.
    #[inline]
    fn check(&self, waited: u64) -> Option<()> {
        (waited > self.limit).then_some(())
    }

    #[inline]
    fn done<T, F>(output: T) -> Result<T, Expired<F>> {
        Ok(output)
    }

    fn expired<T, F>((): (), expired: Expired<F>) -> Result<T, Expired<F>> {
        Err(expired)
    }

    #[inline]
    fn is_expired<T, F>(outcome: &Result<T, Expired<F>>) -> bool {
        outcome.is_err()
    }
}
