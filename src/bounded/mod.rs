//! The in-place streams: [`BoundedBuffered`] (made by
//! [`bounded`](crate::BoundedStreamExt::bounded)) and [`TryBoundedBuffered`]
//! (made by [`try_bounded`](crate::BoundedStreamExt::try_bounded)).
//!
//! Both are the same engine ([`crate::engine`]) with a failure policy fixed,
//! driven in place (`drive.rs`), as futures-util has `BufferUnordered` and
//! `TryBufferUnordered`: each type
//! says in its own terms what it holds and yields, so what a user reads in
//! their signatures is the source's own types (`St::Item`, `St::Ok`), never a
//! projection through the crate's machinery. Their type parameters:
//!
//! - `St`, the source;
//! - `K`, whether the stream reads a clock: [`Untimed`] unless
//!   [`max_wait`](BoundedBuffered::max_wait), [`timed`](BoundedBuffered::timed),
//!   [`clock`](BoundedBuffered::clock) or
//!   [`adaptive`](BoundedBuffered::adaptive) made it [`Clocked`];
//! - `N`, what comes back for an item that was not started: [`Infallible`]
//!   (nothing: every item runs) unless `max_wait` made it [`Expired`]`<F>`
//!   (or `shed` a `Rejected<F>`, both a `NotRun<F>`);
//! - `Q` and `W`, the key and weight rules.
//!
//! `methods.rs` holds `BoundedBuffered`'s builder methods and accessors with
//! their full documentation; `try_methods.rs` the same for
//! `TryBoundedBuffered`, documented by reference; `unstarted.rs` `max_wait`
//! and `shed` for each form of each type.
//!
//! The source sits in a box of its own, and nothing else of the stream is
//! ever pinned in place, so both types are `Unpin` whatever the source and
//! its futures are.

mod adaptive;
mod drive;
mod forms;
mod methods;
mod time;
mod try_methods;

use std::convert::Infallible;
use std::fmt;
use std::pin::Pin;

pub(crate) use self::drive::InPlace;
use crate::admission::{Admission, KeyRule, Unkeyed, Unweighted, WeightRule};
use crate::clock::{Clocking, Untimed};
use crate::engine::{Engine, Of};
use crate::failure::{FailFast, Outputs};
use crate::items::{FutureStream, TryFutureStream};
#[cfg(doc)]
use crate::{clock::Clocked, expiry::Expired};

/// Stream for the [`bounded`](crate::BoundedStreamExt::bounded) method.
///
/// Yields the outputs of the source's futures, run with at most `workers` at
/// once and up to `waiting` more pulled ahead; `Result<T, Expired<St::Item>>`
/// after [`max_wait`](Self::max_wait). See the [crate documentation](crate) for
/// the budgets it enforces, and [Naming the stream's
/// type](crate#naming-the-streams-type) for its parameters.
#[must_use = "streams do nothing unless polled"]
pub struct BoundedBuffered<St, K = Untimed, N = Infallible, Q = Unkeyed, W = Unweighted>
where
    St: FutureStream,
    K: Clocking,
    Q: KeyRule<St::Item>,
    W: WeightRule<St::Item>,
{
    inner: Driven<St, Outputs, K, N, Q, W>,
}

/// Stream for the [`try_bounded`](crate::BoundedStreamExt::try_bounded) method.
///
/// Yields `Ok` with the outputs of the source's fallible futures, under the
/// same budgets as [`BoundedBuffered`], and ends at the first error, from the
/// source or a future, which it yields last (fail fast). After
/// [`max_wait`](Self::max_wait), an `Ok` holds `Result<T, Expired<St::Ok>>`:
/// the outer `Err` ends the run, an expired item does not. See [Failure and
/// shutdown](crate#failure-and-shutdown).
#[must_use = "streams do nothing unless polled"]
pub struct TryBoundedBuffered<
    St: TryFutureStream,
    K: Clocking = Untimed,
    N = Infallible,
    Q: KeyRule<St::Ok> = Unkeyed,
    W: WeightRule<St::Ok> = Unweighted,
> {
    inner: Driven<St, FailFast, K, N, Q, W>,
}

/// A public stream type's insides: its engine, with the failure policy `P`,
/// driven in place.
type Driven<St, P, K, N, Q, W> = InPlace<Of<St, P, K, N, Admission<Q, W>>>;

/// What `spawn_on` takes from a never-polled stream: its source, its
/// engine, whole, and its timer, if any.
pub(crate) type Spawning<St, P, K, N, Q, W> = (
    Pin<Box<St>>,
    Engine<Of<St, P, K, N, Admission<Q, W>>>,
    Option<crate::time::Alarm>,
);

impl<St: FutureStream> BoundedBuffered<St> {
    #[track_caller]
    pub(crate) fn new(source: St, workers: usize, waiting: usize) -> Self {
        Self {
            inner: InPlace::new(source, Engine::new(workers, waiting)),
        }
    }
}

impl<St: TryFutureStream> TryBoundedBuffered<St> {
    #[track_caller]
    pub(crate) fn new(source: St, workers: usize, waiting: usize) -> Self {
        Self {
            inner: InPlace::new(source, Engine::new(workers, waiting)),
        }
    }
}
impl<St, K, N, Q, W> fmt::Debug for BoundedBuffered<St, K, N, Q, W>
where
    St: FutureStream + fmt::Debug,
    K: Clocking,
    Q: KeyRule<St::Item>,
    W: WeightRule<St::Item>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt_as("BoundedBuffered", f)
    }
}

impl<St: TryFutureStream + fmt::Debug, K: Clocking, N, Q: KeyRule<St::Ok>, W: WeightRule<St::Ok>>
    fmt::Debug for TryBoundedBuffered<St, K, N, Q, W>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt_as("TryBoundedBuffered", f)
    }
}
