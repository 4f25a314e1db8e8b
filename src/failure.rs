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

use crate::items::{FutureStream, TryFutureStream};
use futures_core::{Future, TryFuture};
use pin_project_lite::pin_project;

/// How a stream reads its source and settles its outputs: [`Outputs`] (for
/// [`BoundedBuffered`](crate::BoundedBuffered), made by `bounded`) or
/// [`FailFast`] (for [`TryBoundedBuffered`](crate::TryBoundedBuffered), made by
/// `try_bounded`). Internal: each public stream type fixes its policy, so no
/// signature a user reads goes through this trait.
pub(crate) trait Policy<S> {
    /// What runs in a worker.
    type Future: Future;
    /// The job: the future as the caller made it, inside what runs. What an
    /// item that never ran hands back, and what the key and weight rules read.
    type Job;
    /// What a completed future settles to when it succeeded.
    type Ok;
    /// What ends the run: [`Infallible`] for [`Outputs`].
    type Error;
    /// What the stream yields for a held output `O`: `O` itself for [`Outputs`],
    /// `Result<O, Error>` for [`FailFast`].
    type Item<O>;
    /// Whether any item may end the run.
    const FALLIBLE: bool;

    /// Pulls the next item from the source: a future to run, or an error.
    fn poll_source(
        source: Pin<&mut S>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Self::Future, Self::Error>>>;

    /// Whether a complete future succeeded.
    fn settle(output: <Self::Future as Future>::Output) -> Result<Self::Ok, Self::Error>;

    /// The caller's future inside a waiting item.
    fn into_job(future: Self::Future) -> Self::Job;

    /// What runs, around the caller's future (the inverse of `into_job`).
    fn from_job(job: Self::Job) -> Self::Future;

    /// The caller's future inside a waiting or running item, for the rules
    /// that read its key or weight.
    fn job(future: &Self::Future) -> &Self::Job;

    /// An output, as the stream yields it.
    fn ok<O>(output: O) -> Self::Item<O>;

    /// The error that ended the run, as the stream yields it.
    fn err<O>(error: Self::Error) -> Self::Item<O>;
}

/// The failure policy of [`bounded`](crate::BoundedStreamExt::bounded): there is
/// none. Every output, an `Err` included, is yielded in its place, and the run
/// goes on; to stop, drop the stream or [`close`](crate::BoundedBuffered::close) it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Outputs;

impl<S: FutureStream> Policy<S> for Outputs {
    type Future = S::Item;
    type Job = S::Item;
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
    fn into_job(future: S::Item) -> S::Item {
        future
    }

    #[inline(always)]
    fn from_job(job: S::Item) -> S::Item {
        job
    }

    #[inline(always)]
    fn job(future: &S::Item) -> &S::Item {
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
pub(crate) struct FailFast;

impl<S: TryFutureStream> Policy<S> for FailFast {
    type Future = TryRun<S::Ok>;
    type Job = S::Ok;
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

    fn into_job(future: TryRun<S::Ok>) -> S::Ok {
        future.future
    }

    fn from_job(job: S::Ok) -> TryRun<S::Ok> {
        TryRun { future: job }
    }

    #[inline(always)]
    fn job(future: &TryRun<S::Ok>) -> &S::Ok {
        &future.future
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
