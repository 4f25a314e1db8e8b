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

use crate::clock::Clocking;
use crate::expiry::{Expired, Expiry};
use crate::failure::Policy;

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
    type Clock: Clocking<Stamp: Send + Default> + Send + 'static;
    /// Whether an error may end the run (`try_bounded`).
    const FALLIBLE: bool;

    /// Pulls the next item: a future to run, or an error.
    fn poll_source(
        source: Pin<&mut Self::Source>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Self::Future, Self::Error>>>;

    /// A complete future's output: its outcome, or the error that ends the run.
    fn settle(output: Self::Output) -> Result<Self::Outcome, Self::Error>;

    /// The outcome of a waiting item that expired at pickup.
    fn expire(proof: Proof<Self>, future: Self::Future, waited: Duration) -> Self::Outcome;

    /// Whether an outcome is an expired item.
    fn is_expired(outcome: &Self::Outcome) -> bool;

    /// An outcome, as the consumer gets it.
    fn ok(outcome: Self::Outcome) -> Self::Item;

    /// The error that ended the run, as the consumer gets it.
    fn err(error: Self::Error) -> Self::Item;
}

/// What an expired pickup carries (uninhabited without `max_wait`).
pub(crate) type Proof<R> = <<<R as Run>::Clock as Clocking>::Expiry as Expiry>::Proof;

/// [`Run`] for `BoundedBuffered<S, P, K>`. Holds nothing: a marker that is
/// `Send + Sync` whatever its parameters are.
pub(crate) struct Spec<S, P, K>(PhantomData<Marker<S, P, K>>);

type Marker<S, P, K> = fn() -> (S, P, K);

/// What `BoundedBuffered<S, P, K>` holds per item.
type Outcome<S, P, K> =
    <<K as Clocking>::Expiry as Expiry>::Outcome<<P as Policy<S>>::Ok, <P as Policy<S>>::Source>;

impl<S, P, K> Run for Spec<S, P, K>
where
    S: Stream + Send + 'static,
    P: Policy<S> + 'static,
    P::Future: Send + 'static,
    <P::Future as Future>::Output: Send + 'static,
    P::Error: Send + 'static,
    Outcome<S, P, K>: Send + 'static,
    P::Item<Outcome<S, P, K>>: Send + 'static,
    K: Clocking<Stamp: Send + Default> + Send + 'static,
{
    type Source = S;
    type Future = P::Future;
    type Output = <P::Future as Future>::Output;
    type Error = P::Error;
    type Outcome = Outcome<S, P, K>;
    type Item = P::Item<Outcome<S, P, K>>;
    type Clock = K;
    const FALLIBLE: bool = P::FALLIBLE;

    #[inline(always)]
    fn poll_source(
        source: Pin<&mut S>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<P::Future, P::Error>>> {
        P::poll_source(source, cx)
    }

    #[inline(always)]
    fn settle(output: Self::Output) -> Result<Self::Outcome, P::Error> {
        P::settle(output).map(K::Expiry::done)
    }

    fn expire(proof: Proof<Self>, future: P::Future, waited: Duration) -> Self::Outcome {
        K::Expiry::expired(proof, Expired::new(P::into_source(future), waited))
    }

    #[inline(always)]
    fn is_expired(outcome: &Self::Outcome) -> bool {
        K::Expiry::is_expired(outcome)
    }

    #[inline(always)]
    fn ok(outcome: Self::Outcome) -> Self::Item {
        P::ok(outcome)
    }

    fn err(error: P::Error) -> Self::Item {
        P::err(error)
    }
}
