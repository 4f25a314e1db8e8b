//! [`Run`]: everything a spawned stream's types are, in one parameter.
//!
//! In place, a stream is `BoundedBuffered<S, P, K>`: the source, the failure
//! policy and the clocking. The spawned machinery (the state, the tasks) is
//! generic over the same three, but every piece of it would repeat their bounds;
//! [`Spec`] bundles them into one type, [`Run`], that names what the machinery
//! needs: the future a worker runs, how its output settles, what the consumer
//! gets. The policy and the expiry rules stay written where they are
//! ([`crate::failure`], [`crate::expiry`]): this only routes to them.

use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;

use crate::admission::Admits;
use crate::bounded::Settled;
use crate::clock::Clocking;
use crate::expiry::{Expired, Unstarted};
use crate::failure::Policy;
use crate::shed::Rejected;

/// The types of one spawned stream, and the policy's and expiry's rules on them.
pub(crate) trait Run: 'static {
    /// The source, as the caller gave it (its `size_hint` is asked too).
    type Source: Stream + Send + 'static;
    /// What a worker task runs.
    type Future: Future<Output = Self::Output> + Send + 'static;
    /// What it returns.
    type Output: Send + 'static;
    /// What ends the run (uninhabited for `bounded`).
    type Error: Send + 'static;
    /// What the stream holds for an item until it is handed out: the settled
    /// output, or an expiry.
    type Outcome: Send + 'static;
    /// What the consumer gets.
    type Item: Send + 'static;
    /// Whether the stream reads a clock, and what it measures.
    type Clock: Clocking;
    /// The caller's future inside a waiting or running item: what the key and
    /// weight rules read.
    type Unit;
    /// The key and weight rules.
    type Admission: Admits<Self::Unit>;
    /// Whether an error may end the run (`try_bounded`).
    const FALLIBLE: bool;
    /// Whether a waiting item may expire (`max_wait`).
    const EXPIRES: bool;
    /// Whether an item may be shed (`shed`).
    const REJECTS: bool;

    /// The caller's future inside `future`.
    fn unit(future: &Self::Future) -> &Self::Unit;

    /// The outcome of an item that was shed; the item back if this stream's
    /// outcomes cannot hold a rejection (never asked: such a stream does not
    /// shed).
    fn reject(future: Self::Future) -> Result<Self::Outcome, Self::Future>;

    /// Whether an outcome is a rejected item.
    fn is_rejected(outcome: &Self::Outcome) -> bool;

    /// Pulls the next item: a future to run, or an error.
    fn poll_source(
        source: Pin<&mut Self::Source>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Self::Future, Self::Error>>>;

    /// A complete future's output: its outcome, or the error that ends the run.
    fn settle(output: Self::Output) -> Result<Self::Outcome, Self::Error>;

    /// The outcome of a waiting item that expired at pickup; the item back if
    /// this stream's outcomes cannot hold an expiry (never asked: such a
    /// stream has no `max_wait`).
    fn expire(future: Self::Future, waited: Duration) -> Result<Self::Outcome, Self::Future>;

    /// Whether an outcome is an expired item.
    fn is_expired(outcome: &Self::Outcome) -> bool;

    /// An outcome, as the consumer gets it.
    fn ok(outcome: Self::Outcome) -> Self::Item;

    /// The error that ended the run, as the consumer gets it.
    fn err(error: Self::Error) -> Self::Item;
}

/// [`Run`] for a stream of source `S`, failure policy `P`, clocking `K` and
/// unstarted items `N`. Holds nothing: a marker that is `Send + Sync` whatever
/// its parameters are.
pub(crate) struct Spec<S, P, K, N, A>(PhantomData<Marker<S, P, K, N, A>>);

type Marker<S, P, K, N, A> = fn() -> (S, P, K, N, A);

/// What the stream holds per item.
type Outcome<S, P, N> = crate::bounded::Outcome<S, P, N>;

impl<S, P, K, N, A> Run for Spec<S, P, K, N, A>
where
    S: Stream + Send + 'static,
    P: Policy<S> + 'static,
    P::Future: Send + 'static,
    <P::Future as Future>::Output: Send + 'static,
    P::Error: Send + 'static,
    N: Unstarted<P::Source> + Send + 'static,
    Outcome<S, P, N>: Send + 'static,
    Settled<S, P, N>: Send + 'static,
    K: Clocking,
    A: Admits<P::Source>,
{
    type Source = S;
    type Future = P::Future;
    type Output = <P::Future as Future>::Output;
    type Error = P::Error;
    type Outcome = Outcome<S, P, N>;
    type Item = Settled<S, P, N>;
    type Clock = K;
    type Unit = P::Source;
    type Admission = A;
    const FALLIBLE: bool = P::FALLIBLE;
    const EXPIRES: bool = N::EXPIRES;
    const REJECTS: bool = N::REJECTS;

    #[inline(always)]
    fn unit(future: &P::Future) -> &P::Source {
        P::source_ref(future)
    }

    fn reject(future: P::Future) -> Result<Self::Outcome, P::Future> {
        N::rejected(Rejected::new(P::into_source(future)))
            .map(Err)
            .map_err(|rejected| P::from_source(rejected.into_inner()))
    }

    #[inline(always)]
    fn is_rejected(outcome: &Self::Outcome) -> bool {
        N::REJECTS && outcome.as_ref().is_err_and(Unstarted::is_rejected)
    }

    #[inline(always)]
    fn poll_source(
        source: Pin<&mut S>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<P::Future, P::Error>>> {
        P::poll_source(source, cx)
    }

    #[inline(always)]
    fn settle(output: Self::Output) -> Result<Self::Outcome, P::Error> {
        P::settle(output).map(Ok)
    }

    fn expire(future: P::Future, waited: Duration) -> Result<Self::Outcome, P::Future> {
        N::expired(Expired::new(P::into_source(future), waited))
            .map(Err)
            .map_err(|expired| P::from_source(expired.into_inner()))
    }

    #[inline(always)]
    fn is_expired(outcome: &Self::Outcome) -> bool {
        N::EXPIRES
            && outcome
                .as_ref()
                .is_err_and(|unstarted| !unstarted.is_rejected())
    }

    #[inline(always)]
    fn ok(outcome: Self::Outcome) -> Self::Item {
        P::ok(outcome)
    }

    fn err(error: P::Error) -> Self::Item {
        P::err(error)
    }
}
