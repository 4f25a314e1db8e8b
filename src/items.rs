//! What the adapter runs: the two shapes of stream it accepts, named so that a
//! struct holding one needs one bound, and so that a stream of the wrong shape
//! gets an error that says what to change.
//!
//! Each trait is implemented for every stream of its shape and nothing else;
//! the implementations are hidden from diagnostics
//! (`#[diagnostic::do_not_recommend]`), so a stream that is not of the shape
//! gets the trait's own message rather than a trace through its bounds.

use futures_core::stream::{Stream, TryStream};
use futures_core::{Future, TryFuture};

/// A stream of futures: what [`bounded`](crate::BoundedStreamExt::bounded)
/// runs. Implemented for every [`Stream`] whose items are [`Future`]s.
///
/// A struct that holds a [`BoundedBuffered`](crate::BoundedBuffered) names its
/// source with this one bound (or the same as `S: Stream<Item: Future>`).
///
/// # Examples
///
/// ```
/// use bounded_buffered::{BoundedBuffered, BoundedStreamExt, FutureStream};
/// use futures::{StreamExt, stream};
///
/// struct Job<S: FutureStream> {
///     replies: BoundedBuffered<S>,
/// }
///
/// let job = Job {
///     replies: stream::iter(0..3u32).map(|n| async move { n }).bounded(2, 1),
/// };
/// assert_eq!(job.replies.stats().pulled, 0);
/// ```
#[diagnostic::on_unimplemented(
    message = "`bounded` runs a stream of futures, and the items of this stream are not futures",
    label = "its items are not futures",
    note = "map each item to the future that handles it: `.map(|item| async move {{ .. }})`"
)]
pub trait FutureStream: Stream<Item: Future> {}

#[diagnostic::do_not_recommend]
impl<S: Stream<Item: Future>> FutureStream for S {}

/// A stream of `Ok(future)`s whose futures fail with the stream's own error
/// type: what [`try_bounded`](crate::BoundedStreamExt::try_bounded) runs.
/// Implemented for every [`TryStream`] whose `Ok` items are [`TryFuture`]s
/// with the same `Error`.
///
/// A struct that holds a [`TryBoundedBuffered`](crate::TryBoundedBuffered)
/// names its source with this one bound.
///
/// # Examples
///
/// ```
/// use bounded_buffered::{BoundedStreamExt, TryBoundedBuffered, TryFutureStream};
/// use futures::{StreamExt, stream};
///
/// struct Import<S: TryFutureStream> {
///     rows: TryBoundedBuffered<S>,
/// }
///
/// let import = Import {
///     rows: stream::iter(0..3u32)
///         .map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) }))
///         .try_bounded(2, 1),
/// };
/// assert_eq!(import.rows.stats().pulled, 0);
/// ```
#[diagnostic::on_unimplemented(
    message = "`try_bounded` runs a stream of `Ok(future)`s whose futures fail with the stream's error type, and this stream is not one",
    label = "not a stream of `Result<impl TryFuture<Error = E>, E>`",
    note = "wrap each future in `Ok(..)`: `.map(|item| Ok(async move {{ .. }}))`; give the source's items and the futures' outputs the same error type (`.map_err(..)` on either); or use `bounded` for futures that do not fail the run"
)]
pub trait TryFutureStream: TryStream<Ok: TryFuture<Error = <Self as TryStream>::Error>> {}

#[diagnostic::do_not_recommend]
impl<S> TryFutureStream for S where S: TryStream<Ok: TryFuture<Error = <S as TryStream>::Error>> {}

/// A [`FutureStream`] that [`spawn_on`](crate::BoundedBuffered::spawn_on) can
/// move to its worker tasks: the source, its futures and their outputs are
/// `Send`, and the source owns what it captures (`'static`). Implemented for
/// every such stream; what `Spawnable` asks of a `bounded` stream's source.
pub trait SendFutureStream:
    FutureStream<Item: Future<Output: Send> + Send> + Send + 'static
{
}

impl<S> SendFutureStream for S where
    S: FutureStream<Item: Future<Output: Send> + Send> + Send + 'static
{
}

/// A [`TryFutureStream`] that [`spawn_on`](crate::TryBoundedBuffered::spawn_on)
/// can move to its worker tasks: the source, its futures, their outputs and
/// the error are `Send`, and the source owns what it captures (`'static`).
/// What `Spawnable` asks of a `try_bounded` stream's source.
pub trait SendTryFutureStream:
    TryFutureStream<Ok: TryFuture<Ok: Send> + Send, Error: Send> + Send + 'static
{
}

impl<S> SendTryFutureStream for S where
    S: TryFutureStream<Ok: TryFuture<Ok: Send> + Send, Error: Send> + Send + 'static
{
}
