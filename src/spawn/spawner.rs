//! The [`Spawner`] trait: how spawned mode hands its worker tasks to an
//! executor, and its implementations for closures, tokio and smol.

use std::pin::Pin;

/// Something that can run a `Send + 'static` future to completion in the
/// background: an executor handle, or a closure that spawns onto one.
///
/// A [`Spawned`](crate::Spawned) stream calls [`spawn`](Spawner::spawn) once
/// per worker task it needs: the first on its first poll, then one more
/// whenever an item could start and no worker task is idle, never more than
/// `workers` in all (`bounded(100_000, 0)` over 5 items spawns 6). The tasks
/// need no join handle: they stop by themselves when the stream ends or is
/// dropped.
///
/// Implemented for any `Fn(Pin<Box<dyn Future<Output = ()> + Send>>)` closure
/// (`futures::future::BoxFuture<'static, ()>` names the same type), for
/// `tokio::runtime::Handle` (feature `tokio`), and for
/// `Arc<smol::Executor<'static>>` and `SmolGlobal` (feature `smol`).
///
/// # Examples
///
/// A closure that spawns on a tokio runtime, without the `tokio` feature:
///
/// ```
/// use bounded_buffered::BoundedStreamExt;
/// use futures::future::BoxFuture;
/// use futures::{StreamExt, stream};
///
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// let handle = runtime.handle().clone();
/// let mut doubled = stream::iter(0..10u32)
///     .map(|n| async move { n * 2 })
///     .bounded(4, 4)
///     .spawn_on(move |task: BoxFuture<'static, ()>| {
///         handle.spawn(task);
///     });
/// let mut sum = 0;
/// runtime.block_on(async {
///     while let Some(n) = doubled.next().await {
///         sum += n;
///     }
/// });
/// assert_eq!(sum, 90);
/// ```
pub trait Spawner: Send + 'static {
    /// Starts `task` in the background. The task must be polled until it
    /// completes; dropping it unfinished (a runtime shutting down, say) makes the
    /// [`Spawned`](crate::Spawned) stream panic on its next poll instead of
    /// losing items quietly.
    ///
    /// It may be called from the stream's own tasks as well as from the task
    /// that polls the stream, but never by two threads at once, and never while
    /// the stream holds a lock: a spawner that polls the task before it returns
    /// is fine.
    fn spawn(&self, task: Pin<Box<dyn Future<Output = ()> + Send>>);
}

impl<F> Spawner for F
where
    F: Fn(Pin<Box<dyn Future<Output = ()> + Send>>) + Send + 'static,
{
    fn spawn(&self, task: Pin<Box<dyn Future<Output = ()> + Send>>) {
        self(task);
    }
}

/// Spawns on the tokio runtime behind the handle; the tasks are detached.
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl Spawner for tokio::runtime::Handle {
    fn spawn(&self, task: Pin<Box<dyn Future<Output = ()> + Send>>) {
        // Dropping the join handle detaches the task; it stops when the stream does.
        drop(tokio::runtime::Handle::spawn(self, task));
    }
}

/// Spawns on this smol executor; the tasks are detached. The executor must be
/// run (`Executor::run`, on as many threads as you want parallelism).
#[cfg(feature = "smol")]
#[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
impl Spawner for std::sync::Arc<smol::Executor<'static>> {
    fn spawn(&self, task: Pin<Box<dyn Future<Output = ()> + Send>>) {
        smol::Executor::spawn(self, task).detach();
    }
}

/// smol's global executor: spawns with [`smol::spawn`], which runs its tasks on
/// a pool of threads (`SMOL_THREADS`, one by default).
///
/// # Examples
///
/// ```
/// use bounded_buffered::{BoundedStreamExt, SmolGlobal};
/// use futures::{StreamExt, stream};
///
/// let total: u32 = smol::block_on(
///     stream::iter(1..=4u32)
///         .map(|n| async move { n })
///         .bounded(2, 2)
///         .spawn_on(SmolGlobal)
///         .fold(0, |sum, n| async move { sum + n }),
/// );
/// assert_eq!(total, 10);
/// ```
#[cfg(feature = "smol")]
#[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
#[derive(Clone, Copy, Debug, Default)]
pub struct SmolGlobal;

#[cfg(feature = "smol")]
#[cfg_attr(docsrs, doc(cfg(feature = "smol")))]
impl Spawner for SmolGlobal {
    fn spawn(&self, task: Pin<Box<dyn Future<Output = ()> + Send>>) {
        smol::spawn(task).detach();
    }
}
