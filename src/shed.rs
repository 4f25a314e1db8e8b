//! Shedding: the one rule of [`shed`](crate::BoundedBuffered::shed), written
//! here and used by both modes.
//!
//! While every worker is busy (or no waiting item may start) and the waiting
//! queue is full, a plain stream stops pulling: back-pressure. A shedding
//! stream keeps pulling, and hands an item back, never polled, as a
//! [`Rejected`]: the item just pulled ([`Shed::Newest`]), or the oldest waiting
//! one, whose place the new item takes ([`Shed::Oldest`]). A firehose source
//! (telemetry, a channel fed by request handlers) then never waits for the
//! workers, and what runs is what is newest.
//!
//! With keys or weights, an item pulled past the full queue starts at once
//! only if the rules ([`crate::admission`]), looking at the waiting items
//! first and at it last, pick it: a lighter item never passes a heavier
//! waiting one that a free worker waits for, and an item never passes a
//! waiting item of its own key.
//!
//! `Oldest` makes room by weight too: it hands back as many of the oldest
//! waiting items as the new one needs (one, unless weights differ), so the
//! weight waiting stays below its budget plus one item's weight, as without
//! shedding. Where the budgets were lowered below what waits, it hands back
//! as many as the new one replaces without the queue growing, by count or
//! weight (so what waits stays the newest). If the allowance left cannot
//! cover that many, the new item is handed back instead. Either way, what
//! was freed is filled again at once.
//!
//! Rejections the consumer has not taken yet count against an allowance of
//! their own, as many as waiting places (at least one): while it is used up,
//! nothing more is pulled, so a consumer that stops stops the pulling too.
//! Held, a rejection takes no worker and no waiting place, and ordered it
//! takes no place in the window either (see `Budgets::may_start_admitted`):
//! it may lie past the window, pulled as it was past the full queue, and is
//! yielded only after the items before it, which must be able to start.
//! Unordered, a rejection is yielded among the outputs as it is made; ordered,
//! at its input position, as an expired item is (each item takes its position
//! when it is pulled, so a rejection never passes an item pulled before it).

use std::error::Error;
use std::fmt;
use std::time::Duration;

use crate::expiry::{Expired, Unstarted, sealed};

/// Which item a shedding stream hands back when the waiting queue is full; see
/// [`shed`](crate::BoundedBuffered::shed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shed {
    /// The item just pulled is handed back at once: what waits is what came
    /// first.
    #[default]
    Newest,
    /// The oldest waiting item is handed back, and the new one takes its place:
    /// what waits is what came last (a newer item is worth more than a stale
    /// one).
    Oldest,
}

/// An item a shedding stream handed back instead of running it (see
/// [`shed`](crate::BoundedBuffered::shed)): the waiting queue was full.
///
/// It holds the item's future, never polled: [`into_inner`](Self::into_inner)
/// hands it back, so nothing is lost (answer "busy", retry later, or run it
/// elsewhere).
///
/// # Examples
///
/// ```
/// use std::future::pending;
///
/// use bounded_buffered::{BoundedStreamExt, Shed};
/// use futures::{StreamExt, stream};
///
/// # futures::executor::block_on(async {
/// // One worker held by a request that never ends, no waiting place: every
/// // later request is handed back at once.
/// let mut replies = stream::iter(0..4u32)
///     .map(|n| async move {
///         if n == 0 {
///             pending::<()>().await;
///         }
///         n
///     })
///     .bounded(1, 0)
///     .shed(Shed::Newest);
/// let rejected = replies.next().await.unwrap().unwrap_err();
/// assert_eq!(rejected.to_string(), "the item was shed: the waiting queue was full");
/// assert_eq!(rejected.into_inner().await, 1); // the untouched future still runs
/// # });
/// ```
pub struct Rejected<F> {
    future: F,
}

impl<F> Rejected<F> {
    pub(crate) fn new(future: F) -> Self {
        Self { future }
    }

    /// The item's future, never polled.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F> fmt::Debug for Rejected<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected").finish_non_exhaustive()
    }
}

impl<F> fmt::Display for Rejected<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the item was shed: the waiting queue was full")
    }
}

impl<F> Error for Rejected<F> {}

impl<F> sealed::Sealed for Rejected<F> {}

impl<F> Unstarted<F> for Rejected<F> {
    const EXPIRES: bool = false;
    const REJECTS: bool = true;

    fn expired(expired: Expired<F>) -> Result<Self, Expired<F>> {
        Err(expired)
    }

    fn rejected(rejected: Rejected<F>) -> Result<Self, Rejected<F>> {
        Ok(rejected)
    }

    fn is_rejected(&self) -> bool {
        true
    }
}

/// An item a stream with both [`max_wait`](crate::BoundedBuffered::max_wait)
/// and [`shed`](crate::BoundedBuffered::shed) did not run, with the cause: it
/// expired waiting, or it was shed. One error type for both, so the stream
/// yields `Result<T, NotRun<F>>`, not two nested `Result`s.
///
/// # Examples
///
/// ```
/// use std::future::pending;
/// use std::time::Duration;
///
/// use bounded_buffered::{BoundedStreamExt, NotRun, Shed};
/// use futures::{StreamExt, stream};
///
/// # futures::executor::block_on(async {
/// let mut replies = stream::iter(0..3u32)
///     .map(|n| async move {
///         if n == 0 {
///             pending::<()>().await;
///         }
///         n
///     })
///     .bounded(1, 0)
///     .max_wait(Duration::from_secs(1))
///     .shed(Shed::Newest);
/// match replies.next().await.unwrap() {
///     Err(NotRun::Rejected(rejected)) => assert_eq!(rejected.into_inner().await, 1),
///     other => panic!("{other:?}"),
/// }
/// # });
/// ```
pub enum NotRun<F> {
    /// It waited longer than the stream's `max_wait`.
    Expired(Expired<F>),
    /// It was shed: the waiting queue was full.
    Rejected(Rejected<F>),
}

impl<F> NotRun<F> {
    /// The item's future, never polled.
    pub fn into_inner(self) -> F {
        match self {
            NotRun::Expired(expired) => expired.into_inner(),
            NotRun::Rejected(rejected) => rejected.into_inner(),
        }
    }

    /// How long it waited, if it expired.
    pub fn waited(&self) -> Option<Duration> {
        match self {
            NotRun::Expired(expired) => Some(expired.waited()),
            NotRun::Rejected(_) => None,
        }
    }
}

impl<F> fmt::Debug for NotRun<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotRun::Expired(expired) => f.debug_tuple("Expired").field(expired).finish(),
            NotRun::Rejected(rejected) => f.debug_tuple("Rejected").field(rejected).finish(),
        }
    }
}

impl<F> fmt::Display for NotRun<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotRun::Expired(expired) => expired.fmt(f),
            NotRun::Rejected(rejected) => rejected.fmt(f),
        }
    }
}

impl<F> Error for NotRun<F> {}

impl<F> sealed::Sealed for NotRun<F> {}

impl<F> Unstarted<F> for NotRun<F> {
    const EXPIRES: bool = true;
    const REJECTS: bool = true;

    fn expired(expired: Expired<F>) -> Result<Self, Expired<F>> {
        Ok(NotRun::Expired(expired))
    }

    fn rejected(rejected: Rejected<F>) -> Result<Self, Rejected<F>> {
        Ok(NotRun::Rejected(rejected))
    }

    fn is_rejected(&self) -> bool {
        matches!(self, NotRun::Rejected(_))
    }
}

/// Whether a shedding stream may pull past its full waiting queue now: fewer
/// untaken rejections than its allowance (as many as waiting places, at least
/// one).
#[inline]
pub(crate) fn may_shed(rejected_held: usize, waiting: usize) -> bool {
    rejected_held < allowance(waiting)
}

/// The rejection allowance of a stream with `waiting` places.
#[inline]
fn allowance(waiting: usize) -> usize {
    waiting.max(1)
}

/// How many of the oldest waiting items to hand back to make room for an
/// item pulled past the full queue, which may not start: with `Oldest`, the
/// fewest after which the rules have room for it (`room_without(n, gone)`:
/// whether there is room once the `n` oldest, counting `gone` in waiting
/// weight, are gone), or, with budgets lowered below what waits, whose place
/// it takes without the queue growing by count or weight (`replaces(gone)`);
/// if the rejections left cover them. 0 (with `Newest`, or when they do not):
/// hand back the new item itself.
pub(crate) fn oldest_to_shed(
    shed: Shed,
    waiting_weights: impl Iterator<Item = u64>,
    rejected_held: usize,
    waiting: usize,
    mut room_without: impl FnMut(usize, u128) -> bool,
    replaces: impl Fn(u128) -> bool,
) -> usize {
    if shed == Shed::Newest {
        return 0;
    }
    let left = allowance(waiting) - rejected_held;
    let mut gone = 0;
    for (n, weight) in (1..=left).zip(waiting_weights) {
        gone += u128::from(weight);
        if room_without(n, gone) || replaces(gone) {
            return n;
        }
    }
    0
}
