//! Weight budgets: the one rule of
//! [`max_running_weight`](crate::BoundedBuffered::max_running_weight) and
//! [`max_waiting_weight`](crate::BoundedBuffered::max_waiting_weight),
//! written here and used by both modes.
//!
//! Each item carries a weight ([`Weighted`]: bytes, tokens, test slots). An
//! item counts as `min(weight, budget)`: one heavier than a budget counts as
//! exactly that budget, so it starts alone, or waits alone, and never
//! deadlocks.
//!
//! - **Running**: an item starts only if the weights running plus its own stay
//!   within the budget, or nothing runs (an item heavier than the budget then
//!   runs alone). Weights go first come, first served: a heavy item at the
//!   head of the waiting queue is not passed by lighter ones behind it (which
//!   could keep it from ever starting); the worker waits for weight to free.
//! - **Waiting**: the source is not pulled while the weight waiting is at or
//!   above its budget. A weight is only known once its item is pulled, so the
//!   queue may go over the budget by less than one item: the weight waiting
//!   stays below `budget + the last item's weight` (at most twice the budget).
//!   A shedding stream keeps to the same bound (see [`crate::shed`]).
//!
//! A budget not set is no budget, and the sums are kept wide enough that no
//! weight, `u64::MAX` included, can overflow them; a budget of `u64::MAX` is
//! a budget like any other.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::sealed;

pin_project! {
    /// A future with a weight, for
    /// [`max_running_weight`](crate::BoundedBuffered::max_running_weight) and
    /// [`max_waiting_weight`](crate::BoundedBuffered::max_waiting_weight): bytes
    /// of a document, tokens of a request, slots of a test. It is a future
    /// itself, with the output of the future it holds.
    ///
    /// Nest it with [`Keyed`](crate::Keyed) in either order to give an item a
    /// weight and a key.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::{BoundedStreamExt, Weighted};
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// // Documents of 1 to 4 MB: at most 8 MB in flight, whatever their count.
    /// let sizes = [4u64, 1, 3, 2, 4, 1];
    /// let mut parsed = stream::iter(sizes)
    ///     .map(|mb| Weighted::new(mb, async move { mb }))
    ///     .bounded(4, 2)
    ///     .max_running_weight(8);
    /// let mut total = 0;
    /// while let Some(mb) = parsed.next().await {
    ///     total += mb;
    /// }
    /// assert_eq!(total, 15);
    /// assert!(parsed.stats().peak_running_weight <= 8);
    /// # });
    /// ```
    #[must_use = "futures do nothing unless polled"]
    pub struct Weighted<F> {
        weight: u64,
        #[pin]
        future: F,
    }
}

impl<F> Weighted<F> {
    /// `future`, weighing `weight`.
    pub fn new(weight: u64, future: F) -> Self {
        Self { weight, future }
    }

    /// The item's weight.
    pub fn weight(&self) -> u64 {
        self.weight
    }

    /// The future, without its weight.
    pub fn into_inner(self) -> F {
        self.future
    }

    pub(crate) fn future_ref(&self) -> &F {
        &self.future
    }
}

impl<F: Future> Future for Weighted<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.project().future.poll(cx)
    }
}

impl<F> fmt::Debug for Weighted<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Weighted")
            .field("weight", &self.weight)
            .finish_non_exhaustive()
    }
}

/// An item that carries a weight: [`Weighted`], or a [`Keyed`](crate::Keyed)
/// around one (through any nesting of the two).
///
/// Part of the stream's type; you never implement or call it.
pub trait WeightOf: sealed::Sealed {
    /// The item's weight.
    #[doc(hidden)]
    fn weight_of(&self) -> u64;
}

impl<F> sealed::Sealed for Weighted<F> {}

impl<F> WeightOf for Weighted<F> {
    #[inline]
    fn weight_of(&self) -> u64 {
        self.weight
    }
}

impl<K, F: WeightOf> WeightOf for crate::Keyed<K, F> {
    #[inline]
    fn weight_of(&self) -> u64 {
        self.future_ref().weight_of()
    }
}

impl<K, F: super::KeyOf<K>> super::KeyOf<K> for Weighted<F> {
    #[inline]
    fn key_of(&self) -> &K {
        self.future.key_of()
    }
}

/// How a stream admits items by weight: [`Unweighted`] (the default) or
/// [`Weights`] (made by
/// [`max_running_weight`](crate::BoundedBuffered::max_running_weight) or
/// [`max_waiting_weight`](crate::BoundedBuffered::max_waiting_weight)).
///
/// Part of the stream's type; you never implement or call it.
pub trait WeightRule<F>: sealed::Sealed + Send + Sync + Unpin + 'static {
    /// What a running item carries until it completes: its weight.
    #[doc(hidden)]
    type Ticket: Copy + Default + Send + Sync + Unpin + 'static;
    /// Whether weights play any part: with `false`, every branch on them
    /// compiles away.
    #[doc(hidden)]
    const WEIGHTED: bool;

    /// Whether `item` fits in the running budget now.
    #[doc(hidden)]
    fn may_start(&self, item: &F) -> bool;

    /// What `item` counts for in the weight waiting (0 without weights).
    #[doc(hidden)]
    fn waiting_weight(&self, item: &F) -> u64;

    /// Whether the weight waiting leaves room to pull one more item, were
    /// waiting items counting `gone` in all (their
    /// [`waiting_weight`](Self::waiting_weight)s summed) gone (0: the queue
    /// as it is).
    #[doc(hidden)]
    fn may_queue_without(&self, gone: u128) -> bool;

    /// Whether `item` may take the place of waiting items counting `gone`
    /// without the weight waiting growing past what the budget allows: no
    /// budget, or no growth.
    #[doc(hidden)]
    fn may_replace(&self, gone: u128, item: &F) -> bool;

    /// `item` entered the waiting queue.
    #[doc(hidden)]
    fn queued(&mut self, item: &F);

    /// `item` left the waiting queue (to start, or not).
    #[doc(hidden)]
    fn unqueued(&mut self, item: &F);

    /// `item` starts; returns its ticket.
    #[doc(hidden)]
    fn started(&mut self, item: &F) -> Self::Ticket;

    /// The item with `ticket` completed, or was dropped running.
    #[doc(hidden)]
    fn finished(&mut self, ticket: Self::Ticket);

    /// Every item is gone (fail fast).
    #[doc(hidden)]
    fn clear(&mut self);

    /// These budgets as [`Weights`], to set one of them (a stream without
    /// budgets has none set).
    #[doc(hidden)]
    fn into_weights(self) -> Weights;

    /// The weights running and waiting now, and their peaks: `[running,
    /// waiting, peak running, peak waiting]`.
    #[doc(hidden)]
    fn in_use(&self) -> [u64; 4];
}

/// Weights play no part (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct Unweighted;

impl sealed::Sealed for Unweighted {}

impl<F> WeightRule<F> for Unweighted {
    type Ticket = ();
    const WEIGHTED: bool = false;

    #[inline(always)]
    fn may_start(&self, _: &F) -> bool {
        true
    }

    #[inline(always)]
    fn waiting_weight(&self, _: &F) -> u64 {
        0
    }

    #[inline(always)]
    fn may_queue_without(&self, _: u128) -> bool {
        true
    }

    #[inline(always)]
    fn may_replace(&self, _: u128, _: &F) -> bool {
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

    fn in_use(&self) -> [u64; 4] {
        [0; 4]
    }

    fn into_weights(self) -> Weights {
        Weights::default()
    }
}

/// Budgets for the weights running and waiting (made by
/// [`max_running_weight`](crate::BoundedBuffered::max_running_weight) and
/// [`max_waiting_weight`](crate::BoundedBuffered::max_waiting_weight)); a
/// budget not set is unlimited.
#[derive(Clone, Copy, Debug)]
pub struct Weights {
    // The budgets and the sums of `u64` weights, in `u128`: no sum can
    // overflow (each item counts at most `u64::MAX`, and there are far fewer
    // than `2^64` of them), and a budget not set, [`NONE`], is one no sum can
    // reach, so the rules need no case of their own for it.
    max_running: u128,
    max_waiting: u128,
    running: u128,
    waiting: u128,
    peak_running: u128,
    peak_waiting: u128,
}

/// A budget not set: above any sum of weights.
const NONE: u128 = u128::MAX;

impl Default for Weights {
    fn default() -> Self {
        Self {
            max_running: NONE,
            max_waiting: NONE,
            running: 0,
            waiting: 0,
            peak_running: 0,
            peak_waiting: 0,
        }
    }
}

impl Weights {
    /// The same weights with a running budget, checked by [`running_budget`].
    pub(crate) fn with_max_running(self, max: u64) -> Self {
        Self {
            max_running: u128::from(max),
            ..self
        }
    }

    /// The same weights with a waiting budget, checked by [`waiting_budget`].
    pub(crate) fn with_max_waiting(self, max: u64) -> Self {
        Self {
            max_waiting: u128::from(max),
            ..self
        }
    }
}

/// `max`, checked as a running weight budget at the caller's line.
///
/// # Panics
///
/// If `max` is 0: no item could ever start (contract point 11).
#[track_caller]
pub(crate) fn running_budget(max: u64) -> u64 {
    assert!(
        max > 0,
        "`max_running_weight` needs a budget of at least 1: with 0 no item could ever start"
    );
    max
}

/// `max`, checked as a waiting weight budget at the caller's line.
///
/// # Panics
///
/// If `max` is 0: nothing could ever be pulled (contract point 11).
#[track_caller]
pub(crate) fn waiting_budget(max: u64) -> u64 {
    assert!(
        max > 0,
        "`max_waiting_weight` needs a budget of at least 1: with 0 nothing could ever be pulled"
    );
    max
}

impl Weights {
    /// What `item` counts for running: its weight, at most the budget.
    #[inline]
    fn running_weight<F: WeightOf>(&self, item: &F) -> u128 {
        self.max_running.min(u128::from(item.weight_of()))
    }
}

impl sealed::Sealed for Weights {}

impl<F: WeightOf> WeightRule<F> for Weights {
    /// The weight the item was counted with, running.
    type Ticket = u64;
    const WEIGHTED: bool = true;

    /// The rule: the weights running plus this one within the budget, or
    /// nothing running (an item heavier than the budget then runs alone).
    #[inline]
    fn may_start(&self, item: &F) -> bool {
        self.running == 0 || self.running + self.running_weight(item) <= self.max_running
    }

    #[inline]
    fn waiting_weight(&self, item: &F) -> u64 {
        // At most the item's own weight: it fits.
        self.max_waiting.min(u128::from(item.weight_of())) as u64
    }

    /// The rule: the weight waiting (less `gone`) below its budget.
    #[inline]
    fn may_queue_without(&self, gone: u128) -> bool {
        self.waiting - gone < self.max_waiting
    }

    fn may_replace(&self, gone: u128, item: &F) -> bool {
        self.max_waiting == NONE || gone >= u128::from(WeightRule::<F>::waiting_weight(self, item))
    }

    fn queued(&mut self, item: &F) {
        self.waiting += u128::from(WeightRule::<F>::waiting_weight(self, item));
        self.peak_waiting = self.peak_waiting.max(self.waiting);
    }

    fn unqueued(&mut self, item: &F) {
        self.waiting -= u128::from(WeightRule::<F>::waiting_weight(self, item));
    }

    fn started(&mut self, item: &F) -> u64 {
        let weight = self.running_weight(item);
        self.running += weight;
        self.peak_running = self.peak_running.max(self.running);
        // At most the item's own weight: it fits.
        weight as u64
    }

    fn finished(&mut self, weight: u64) {
        self.running -= u128::from(weight);
    }

    fn clear(&mut self) {
        self.running = 0;
        self.waiting = 0;
    }

    fn into_weights(self) -> Weights {
        self
    }

    /// The sums as `u64`, saturating: [`Stats`](crate::Stats) reports
    /// `u64::MAX` for a sum beyond it.
    fn in_use(&self) -> [u64; 4] {
        [
            self.running,
            self.waiting,
            self.peak_running,
            self.peak_waiting,
        ]
        .map(|sum| u64::try_from(sum).unwrap_or(u64::MAX))
    }
}
