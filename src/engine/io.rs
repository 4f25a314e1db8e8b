//! [`Io`]: the only things the engine asks of a driver while it decides. It
//! pulls from the source and lets go of items only through these, so the
//! rules in the engine do no I/O and hold no waker: the in-place driver does
//! each at once, the spawned one under its lock or after it.

use std::collections::VecDeque;

use super::spec::{Outcome, Spec, Stamp, Types};

/// What one pull from the source gave.
pub(crate) enum Pulled<R: Types> {
    /// A future to run, or the error that ends the run (`try_bounded`).
    Item(Result<R::Future, R::Error>),
    /// Nothing now; the source will wake whoever polled it.
    Pending,
    /// The source returned `None`.
    Ended,
    /// The source is gone and the run is over (spawned: it panicked, and the
    /// driver has recorded the panic).
    Broken,
}

/// An item the stream will never yield, handed back to the driver to drop.
pub(crate) enum Discarded<R: Types> {
    /// The waiting items, never polled, all at once: in place their
    /// destructors all run even if one panics.
    Waiting(VecDeque<(Stamp<R>, R::Future)>),
    /// A held outcome that can no longer be yielded in order.
    Held(Outcome<R>),
}

/// What the engine needs a driver to do for it.
pub(crate) trait Io<R: Spec> {
    /// Polls the source once (the engine checked that it may be pulled).
    fn pull(&mut self) -> Pulled<R>;

    /// Every running future goes (in place, dropped now; spawned, each by
    /// its task), and `each` is told the input position of each (for the
    /// run's deadline, which says which items it cancelled). The engine
    /// counts none of them as running after.
    fn cancel_running(&mut self, each: &mut dyn FnMut(u64));

    /// Lets go of an item (in place, dropped now; spawned, once the lock is
    /// released, since its destructor is the caller's code).
    fn discard(&mut self, item: Discarded<R>);
}
