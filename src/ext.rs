//! The extension trait that gives every stream of futures its `bounded`
//! adapters.

use futures_core::stream::Stream;

use crate::{BoundedBuffered, FutureStream, TryBoundedBuffered, TryFutureStream};

/// An extension trait for [`Stream`]s of futures: adds [`bounded`](Self::bounded).
pub trait BoundedStreamExt: Stream {
    /// Runs the futures of this stream with at most `workers` running at once and
    /// up to `waiting` more pulled from the source ahead of time, yielding their
    /// outputs as they complete.
    ///
    /// `workers` bounds the futures running (an output the consumer has not
    /// taken keeps its worker), `waiting` the items pulled ahead; `waiting ==
    /// 0` means no prefetch. Contract points 1 to 4 and 6 to 13 of the
    /// [crate documentation](crate#what-the-adapter-guarantees) say exactly
    /// what holds. Call [`ordered`](BoundedBuffered::ordered) on the result for
    /// outputs in input order.
    ///
    /// # Panics
    ///
    /// If `workers` is 0: no future could ever run, and the stream would hang
    /// (contract point 11).
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let mut lengths: Vec<usize> = stream::iter(["a", "bb", "ccc"])
    ///     .map(|word| async move { word.len() })
    ///     .bounded(2, 1)
    ///     .collect()
    ///     .await;
    /// lengths.sort();
    /// assert_eq!(lengths, [1, 2, 3]);
    /// # });
    /// ```
    #[track_caller]
    fn bounded(self, workers: usize, waiting: usize) -> BoundedBuffered<Self>
    where
        Self: FutureStream + Sized,
    {
        BoundedBuffered::new(self, workers, waiting)
    }

    /// Like [`bounded`](Self::bounded), for a stream of fallible items that fails
    /// fast: runs the `TryFuture`s of this `TryStream` under the same budgets,
    /// yields their `Ok` outputs, and ends at the first error.
    ///
    /// The first `Err`, from the source or from any future, ends the run. From the
    /// moment the adapter sees it, nothing more is pulled or started, every
    /// running future and waiting item is dropped at once, and the outputs that
    /// may still be yielded in order are yielded (unordered, every output that
    /// completed before the error; [ordered](BoundedBuffered::ordered), the
    /// complete prefix from the oldest unyielded position: an earlier item still
    /// running does not make the error wait, it is cancelled). Then the `Err` is
    /// yielded, then `None` forever. See [Failure and shutdown](crate#failure-and-shutdown)
    /// for how this compares with `bounded` and [`close`](BoundedBuffered::close).
    ///
    /// The budgets, [`ordered`](BoundedBuffered::ordered),
    /// [`stats`](BoundedBuffered::stats), [`close`](BoundedBuffered::close) and
    /// [`spawn_on`](BoundedBuffered::spawn_on) work as for `bounded`.
    ///
    /// # Panics
    ///
    /// If `workers` is 0: no future could ever run, and the stream would hang.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::BoundedStreamExt;
    /// use futures::{StreamExt, TryStreamExt, stream};
    ///
    /// # futures::executor::block_on(async {
    /// let parsed: Result<Vec<u32>, String> = stream::iter(["1", "2", "x", "4"])
    ///     .map(|text| Ok::<_, String>(async move {
    ///         text.parse::<u32>().map_err(|_| format!("not a number: {text}"))
    ///     }))
    ///     .try_bounded(2, 2)
    ///     .ordered(2)
    ///     .try_collect()
    ///     .await;
    /// assert_eq!(parsed, Err("not a number: x".to_string()));
    /// # });
    /// ```
    #[track_caller]
    fn try_bounded(self, workers: usize, waiting: usize) -> TryBoundedBuffered<Self>
    where
        Self: TryFutureStream + Sized,
    {
        TryBoundedBuffered::new(self, workers, waiting)
    }
}

impl<S: Stream + ?Sized> BoundedStreamExt for S {}
