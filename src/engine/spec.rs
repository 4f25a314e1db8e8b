//! [`Spec`]: every type a stream is made of, in one parameter, for the engine
//! and both drivers.
//!
//! A public stream type is `BoundedBuffered<St, K, N, Q, W>` (or
//! `TryBoundedBuffered`): the source, the clocking, what comes back for an
//! item not run, and the key and weight rules, with the failure policy fixed
//! by the type. The engine and the drivers name all of it through one
//! parameter, `R: Spec`, implemented by the marker [`Of`]. The policies' rules
//! stay written where they are ([`crate::failure`], [`crate::expiry`],
//! [`crate::shed`]): this only routes to them. The spawned driver asks for
//! more of the same types ([`SendSpec`]: `Send + 'static`), never for other
//! ones.

use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;

use crate::admission::Admits;
use crate::clock::Clocking;
use crate::expiry::{Expired, Unstarted};
use crate::failure::Policy;
use crate::shed::Rejected;

/// The types of one stream, and the failure policy's rules on them: what a
/// stream's type names, with nothing asked of them yet (a public stream type
/// holds its engine whatever its parameters are).
pub(crate) trait Types {
    /// The source, as the caller gave it.
    type Source: Stream;
    /// The caller's future inside what runs: what an item that never ran
    /// hands back, and what the key and weight rules read.
    type Job;
    /// What a worker runs.
    type Future: Future<Output = Self::Output>;
    /// What it returns.
    type Output;
    /// A settled output that does not end the run.
    type Ok;
    /// What ends the run (uninhabited for `bounded`).
    type Error;
    /// What comes back for an item that was not run (uninhabited unless
    /// `max_wait` or `shed`).
    type Unstarted;
    /// Whether the stream reads a clock, and what it measures.
    type Clock: Clocking;
    /// The key and weight rules.
    type Admission: Admits<Self::Job>;
    /// What the stream yields for an outcome or the error.
    type Item;
    /// Whether an error may end the run (`try_bounded`).
    const FALLIBLE: bool;

    /// Pulls the next item: a future to run, or an error.
    fn poll_source(
        source: Pin<&mut Self::Source>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Self::Future, Self::Error>>>;

    /// A complete future's output: what the stream holds, or the error that
    /// ends the run.
    fn settle(output: Self::Output) -> Result<Self::Ok, Self::Error>;

    /// The caller's future inside `future`.
    fn job(future: &Self::Future) -> &Self::Job;

    /// The caller's future, out of what runs.
    fn into_job(future: Self::Future) -> Self::Job;

    /// What runs, around the caller's future.
    fn from_job(job: Self::Job) -> Self::Future;

    /// An outcome, as the stream yields it.
    fn ok(outcome: Outcome<Self>) -> Self::Item;

    /// The error that ended the run, as the stream yields it.
    fn err(error: Self::Error) -> Self::Item;
}

/// [`Types`] a stream runs with: what comes back for an item not run is
/// one of the crate's ([`Unstarted`]).
pub(crate) trait Spec: Types<Unstarted: Unstarted<<Self as Types>::Job>> {
    /// The outcome of a waiting item that waited too long, or the item back
    /// if this stream's outcomes cannot hold one (such a stream has no
    /// `max_wait`: never asked).
    fn expire(future: Self::Future, waited: Duration) -> Result<Self::Unstarted, Self::Future> {
        Self::Unstarted::expired(Expired::new(Self::into_job(future), waited))
            .map_err(|expired| Self::from_job(expired.into_inner()))
    }

    /// The outcome of an item shed, or the item back if this stream's
    /// outcomes cannot hold one (such a stream does not shed: never asked).
    fn reject(future: Self::Future) -> Result<Self::Unstarted, Self::Future> {
        Self::Unstarted::rejected(Rejected::new(Self::into_job(future)))
            .map_err(|rejected| Self::from_job(rejected.into_inner()))
    }
}

impl<R: Types<Unstarted: Unstarted<R::Job>>> Spec for R {}

/// What the stream holds for an item until it is handed out: the settled
/// output, or the item itself if it was not run.
pub(crate) type Outcome<R> = Result<<R as Types>::Ok, <R as Types>::Unstarted>;

/// When something happened to an item: `()` unless the stream reads a clock.
pub(crate) type Stamp<R> = <<R as Types>::Clock as Clocking>::Stamp;

/// What a running item carries until it completes: when it started, and its
/// admission ticket (`((), ((), ()))` for a plain stream).
pub(crate) type Started<R> = (
    Stamp<R>,
    <<R as Types>::Admission as Admits<<R as Types>::Job>>::Ticket,
);

/// `SendSpec`, the spawned driver's [`Spec`], where every type crosses
/// threads: the bounds written once, for the trait and its one impl.
macro_rules! send_spec {
    ($($bounds:tt)*) => {
        /// The spawned driver's [`Spec`]: every type crosses threads.
        pub(crate) trait SendSpec: Spec<$($bounds)*> + 'static {}

        impl<R: Spec<$($bounds)*> + 'static> SendSpec for R {}
    };
}

send_spec!(
    Source: Send + 'static,
    Future: Send + 'static,
    Output: Send + 'static,
    Ok: Send + 'static,
    Error: Send + 'static,
    Unstarted: Send + 'static,
    Item: Send + 'static,
);

/// [`Types`] for a stream of source `S`, failure policy `P`, clocking `K`,
/// unstarted items `N` and admission `A`. Holds nothing: a marker that is
/// `Send + Sync` whatever its parameters are.
pub(crate) struct Of<S, P, K, N, A>(PhantomData<Marker<S, P, K, N, A>>);

type Marker<S, P, K, N, A> = fn() -> (S, P, K, N, A);

impl<S, P, K, N, A> Types for Of<S, P, K, N, A>
where
    S: Stream,
    P: Policy<S>,
    K: Clocking,
    A: Admits<P::Job>,
{
    type Source = S;
    type Job = P::Job;
    type Future = P::Future;
    type Output = <P::Future as Future>::Output;
    type Ok = P::Ok;
    type Error = P::Error;
    type Unstarted = N;
    type Clock = K;
    type Admission = A;
    type Item = P::Item<Result<P::Ok, N>>;
    const FALLIBLE: bool = P::FALLIBLE;

    #[inline(always)]
    fn poll_source(
        source: Pin<&mut S>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<P::Future, P::Error>>> {
        P::poll_source(source, cx)
    }

    #[inline(always)]
    fn settle(output: Self::Output) -> Result<P::Ok, P::Error> {
        P::settle(output)
    }

    #[inline(always)]
    fn job(future: &P::Future) -> &P::Job {
        P::job(future)
    }

    fn into_job(future: P::Future) -> P::Job {
        P::into_job(future)
    }

    fn from_job(job: P::Job) -> P::Future {
        P::from_job(job)
    }

    #[inline(always)]
    fn ok(outcome: Result<P::Ok, N>) -> Self::Item {
        P::ok(outcome)
    }

    fn err(error: P::Error) -> Self::Item {
        P::err(error)
    }
}
