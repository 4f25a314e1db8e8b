//! The source, as the worker tasks pull from it under the state's lock.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use crate::engine::SendSpec;

/// What one pull gave.
pub(super) enum Pull<R: SendSpec> {
    /// A future to run, or the error that ends the run (`try_bounded`).
    Item(Result<R::Future, R::Error>),
    /// Nothing now: the source will wake the task that polled it.
    Pending,
    /// The source returned `None` just now (or is gone already); here it is,
    /// to be dropped once the lock is released (its destructor is user code).
    Ended(Option<Pin<Box<R::Source>>>),
    /// The source panicked; here it is (if it can be dropped at all) with the
    /// payload, both to be dealt with once the lock is released.
    Panicked(Pin<Box<R::Source>>, Box<dyn Any + Send>),
}

/// The source, with the task it will wake while it is pending: which task
/// that is, is this driver's business; whether the source may be pulled at
/// all is the engine's ([`Life::may_pull`](crate::engine::Life::may_pull)).
pub(super) struct Source<R: SendSpec> {
    /// `None` once it ended, panicked, or was taken away to be dropped.
    stream: Option<Pin<Box<R::Source>>>,
    /// The task whose waker the source holds since it returned `Pending`;
    /// nobody polls it until that task was polled again.
    waiter: Option<usize>,
}

impl<R: SendSpec> Source<R> {
    pub(super) fn new(stream: Option<Pin<Box<R::Source>>>) -> Self {
        Self {
            stream,
            waiter: None,
        }
    }

    /// What the source says it has left: nothing once it is gone. User code,
    /// called under the lock like `poll_next`: a panic in it is caught here,
    /// so the lock is never poisoned, and handed back for the caller to
    /// re-raise once the lock is released (it changed nothing: `&self`).
    pub(super) fn size_hint(&self) -> Result<(usize, Option<usize>), Box<dyn Any + Send>> {
        let Some(stream) = &self.stream else {
            return Ok((0, Some(0)));
        };
        panic::catch_unwind(AssertUnwindSafe(|| stream.as_ref().get_ref().size_hint()))
    }

    /// The task the source will wake, if it is pending.
    pub(super) fn waiter(&self) -> Option<usize> {
        self.waiter
    }

    /// Task `index`, the source's waiter, was polled again (woken by the
    /// source, or by anything else): the source may be pulled again.
    pub(super) fn waiter_polled(&mut self) {
        self.waiter = None;
    }

    /// Polls the source once for task `index`, whose context `cx` is (the
    /// engine checked that it may be pulled: it is not pending, and not
    /// gone). The source's panic is caught here, under the lock, so the lock
    /// is never poisoned and nobody else pulls from a source that panicked.
    pub(super) fn pull(&mut self, index: usize, cx: &mut Context<'_>) -> Pull<R> {
        debug_assert!(self.waiter.is_none(), "pulled while pending");
        let Some(stream) = &mut self.stream else {
            return Pull::Ended(None);
        };
        match panic::catch_unwind(AssertUnwindSafe(|| R::poll_source(stream.as_mut(), cx))) {
            Ok(Poll::Ready(Some(item))) => Pull::Item(item),
            Ok(Poll::Ready(None)) => Pull::Ended(self.take()),
            Ok(Poll::Pending) => {
                self.waiter = Some(index);
                Pull::Pending
            }
            Err(payload) => Pull::Panicked(self.take().expect("polled just now"), payload),
        }
    }

    /// Takes the source away (to drop it once the lock is released): nothing
    /// is pulled from then on.
    pub(super) fn take(&mut self) -> Option<Pin<Box<R::Source>>> {
        self.waiter = None;
        self.stream.take()
    }
}
