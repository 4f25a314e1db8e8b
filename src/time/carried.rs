//! Deadlines carried by items: [`Deadline`], and [`DeadlineOf`], which reads
//! one through any nesting with [`Keyed`](crate::Keyed) and
//! [`Weighted`].

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use pin_project_lite::pin_project;

use crate::admission::{KeyOf, WeightOf, Weighted, sealed};

pin_project! {
    /// A future with a deadline of its own, for
    /// [`item_deadlines`](crate::BoundedBuffered::item_deadlines): an end-to-end
    /// deadline a request brought with it ("answer within 800 ms", of which
    /// 600 went upstream). The stream checks it when a worker picks the item
    /// up, and an item whose deadline passed is never started: it comes back
    /// as [`Late`](crate::Late), holding this future. It is a future itself,
    /// with the output of the future it holds.
    ///
    /// The deadline is not enforced while the item runs: to bound the run
    /// too, give the future a timeout of its own (`tokio::time::timeout_at`
    /// with the same instant), which knows what a half-done item must undo.
    ///
    /// Nest it with [`Keyed`](crate::Keyed) and [`Weighted`](crate::Weighted)
    /// in any order.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// use bounded_buffered::{BoundedStreamExt, Deadline, Keyed};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let soon = Instant::now() + Duration::from_secs(30);
    /// let outputs: Vec<_> = stream::iter(0..4u32)
    ///     .map(|n| Keyed::new(n % 2, Deadline::new(soon, async move { n })))
    ///     .bounded(2, 2)
    ///     .per_key(1)
    ///     .item_deadlines()
    ///     .filter_map(|outcome| async move { outcome.ok() })
    ///     .collect()
    ///     .await;
    /// assert_eq!(outputs.len(), 4);
    ///
    /// let job = Deadline::new(soon, async { 1 });
    /// assert_eq!(job.deadline(), soon);
    /// assert_eq!(job.into_inner().await, 1);
    /// # });
    /// ```
    #[must_use = "futures do nothing unless polled"]
    pub struct Deadline<F> {
        deadline: Instant,
        #[pin]
        future: F,
    }
}

impl<F> Deadline<F> {
    /// `future`, to be started before `deadline` or not at all.
    pub fn new(deadline: Instant, future: F) -> Self {
        Self { deadline, future }
    }

    /// The item's deadline.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The future, without its deadline.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Deadline<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.project().future.poll(cx)
    }
}

impl<F> fmt::Debug for Deadline<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deadline")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// An item that carries a deadline: [`Deadline`], or a
/// [`Keyed`](crate::Keyed) or [`Weighted`] around one
/// (through any nesting of the three).
///
/// Part of the stream's type; you never implement or call it.
pub trait DeadlineOf: sealed::Sealed {
    /// The item's deadline.
    #[doc(hidden)]
    fn deadline_of(&self) -> Instant;
}

impl<F> sealed::Sealed for Deadline<F> {}

impl<F> DeadlineOf for Deadline<F> {
    #[inline]
    fn deadline_of(&self) -> Instant {
        self.deadline
    }
}

impl<K, F: DeadlineOf> DeadlineOf for crate::Keyed<K, F> {
    #[inline]
    fn deadline_of(&self) -> Instant {
        self.future_ref().deadline_of()
    }
}

impl<F: DeadlineOf> DeadlineOf for Weighted<F> {
    #[inline]
    fn deadline_of(&self) -> Instant {
        self.future_ref().deadline_of()
    }
}

impl<K, F: KeyOf<K>> KeyOf<K> for Deadline<F> {
    #[inline]
    fn key_of(&self) -> &K {
        self.future.key_of()
    }
}

impl<F: WeightOf> WeightOf for Deadline<F> {
    #[inline]
    fn weight_of(&self) -> u64 {
        self.future.weight_of()
    }
}
