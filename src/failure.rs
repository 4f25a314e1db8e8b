//! The failure policies: what an item of the source and an output of a future
//! mean, and the one rule of fail-fast, written here and used by both modes.
//!
//! [`bounded`](crate::BoundedStreamExt::bounded) knows no failure: every output,
//! an `Err` included, is yielded in its place ([`Outputs`]).
//! [`try_bounded`](crate::BoundedStreamExt::try_bounded) runs a `TryStream` of
//! `TryFuture`s and fails fast ([`FailFast`]): the first `Err`, from the source
//! or from a future, ends the run. From the moment the adapter observes it:
//!
//! - nothing more is pulled from the source and nothing more starts;
//! - every running future and every waiting item is dropped, at once;
//! - held outputs are yielded only while that keeps the output order: all of
//!   them unordered (each completed before the error was seen), the complete
//!   prefix from the oldest unyielded position when ordered; the rest are dropped;
//! - then the `Err` is yielded, then `None` forever.
//!
//! The policy is a type parameter, so the plain adapter pays nothing for it: its
//! error type is [`Infallible`], and every branch on a failure compiles away.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::stream::{Stream, TryStream};
use futures_core::{Future, TryFuture};
use pin_project_lite::pin_project;

mod sealed {
    pub trait Sealed {}
}

/// How a [`BoundedBuffered`](crate::BoundedBuffered) reads its source and settles
/// its outputs: [`Outputs`] (made by `bounded`) or [`FailFast`] (made by
/// `try_bounded`).
///
/// You never implement or call this trait; it appears in the stream's type, and in
/// yours only if you name that type (in a struct field, say).
pub trait Policy<S>: sealed::Sealed {
    /// What runs in a worker.
    #[doc(hidden)]
    type Future: Future;
    /// The source's future as the caller made it: what an expired item hands back.
    #[doc(hidden)]
    type Source;
    /// What a completed future settles to when it succeeded.
    #[doc(hidden)]
    type Ok;
    /// What ends the run: [`Infallible`] for [`Outputs`].
    #[doc(hidden)]
    type Error;
    /// What the stream yields for a held output `O`: `O` itself for [`Outputs`],
    /// `Result<O, Error>` for [`FailFast`].
    #[doc(hidden)]
    type Item<O>;
    /// Whether any item may end the run.
    #[doc(hidden)]
    const FALLIBLE: bool;

    /// Pulls the next item from the source: a future to run, or an error.
    #[doc(hidden)]
    fn poll_source(
        source: Pin<&mut S>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Self::Future, Self::Error>>>;

    /// Whether a complete future succeeded.
    #[doc(hidden)]
    fn settle(output: <Self::Future as Future>::Output) -> Result<Self::Ok, Self::Error>;

    /// The caller's future inside a waiting item.
    #[doc(hidden)]
    fn into_source(future: Self::Future) -> Self::Source;

    /// An output, as the stream yields it.
    #[doc(hidden)]
    fn ok<O>(output: O) -> Self::Item<O>;

    /// The error that ended the run, as the stream yields it.
    #[doc(hidden)]
    fn err<O>(error: Self::Error) -> Self::Item<O>;
}

/// The failure policy of [`bounded`](crate::BoundedStreamExt::bounded): there is
/// none. Every output, an `Err` included, is yielded in its place, and the run
/// goes on; to stop, drop the stream or [`close`](crate::BoundedBuffered::close) it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outputs;

impl sealed::Sealed for Outputs {}

impl<S> Policy<S> for Outputs
where
    S: Stream,
    S::Item: Future,
{
    type Future = S::Item;
    type Source = S::Item;
    type Ok = <S::Item as Future>::Output;
    type Error = Infallible;
    type Item<O> = O;
    const FALLIBLE: bool = false;

    #[inline(always)]
    fn poll_source(
        source: Pin<&mut S>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<S::Item, Infallible>>> {
        match source.poll_next(cx) {
            Poll::Ready(Some(future)) => Poll::Ready(Some(Ok(future))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    #[inline(always)]
    fn settle(output: Self::Ok) -> Result<Self::Ok, Infallible> {
        Ok(output)
    }

    #[inline(always)]
    fn into_source(future: S::Item) -> S::Item {
        future
    }

    #[inline(always)]
    fn ok<O>(output: O) -> O {
        output
    }

    fn err<O>(error: Infallible) -> O {
        match error {}
    }
}

/// The failure policy of [`try_bounded`](crate::BoundedStreamExt::try_bounded):
/// the first `Err`, from the source or from a future, ends the run (see
/// [Failure and shutdown](crate#failure-and-shutdown)).
#[derive(Clone, Copy, Debug, Default)]
pub struct FailFast;

impl sealed::Sealed for FailFast {}

impl<S> Policy<S> for FailFast
where
    S: TryStream,
    S::Ok: TryFuture<Error = S::Error>,
{
    type Future = TryRun<S::Ok>;
    type Source = S::Ok;
    type Ok = <S::Ok as TryFuture>::Ok;
    type Error = S::Error;
    type Item<O> = Result<O, S::Error>;
    const FALLIBLE: bool = true;

    #[inline(always)]
    fn poll_source(
        source: Pin<&mut S>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<TryRun<S::Ok>, S::Error>>> {
        match source.try_poll_next(cx) {
            Poll::Ready(Some(item)) => Poll::Ready(Some(item.map(|future| TryRun { future }))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    #[inline(always)]
    fn settle(output: Result<Self::Ok, S::Error>) -> Result<Self::Ok, S::Error> {
        output
    }

    fn into_source(future: TryRun<S::Ok>) -> S::Ok {
        future.future
    }

    #[inline(always)]
    fn ok<O>(output: O) -> Result<O, S::Error> {
        Ok(output)
    }

    fn err<O>(error: S::Error) -> Result<O, S::Error> {
        Err(error)
    }
}

pin_project! {
    /// A `TryFuture` run as the `Future` of its `Result`.
    #[doc(hidden)]
    #[derive(Debug)]
    pub struct TryRun<F> {
        #[pin]
        future: F,
    }
}

impl<F: TryFuture> Future for TryRun<F> {
    type Output = Result<F::Ok, F::Error>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().future.try_poll(cx)
    }
}
