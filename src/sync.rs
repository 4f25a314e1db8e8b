//! The synchronisation primitives behind the wake protocol, swapped for loom's
//! model-checked versions under `RUSTFLAGS="--cfg loom"`.
//!
//! Only what carries a wake from a worker slot to the consumer goes through here:
//! the words of the ready tree, the `parked` flag, the consumer's waker and the
//! lock on its current root (the thread-local self-wake mark in `wake.rs`
//! switches to `loom::thread_local!` the same way). The rest of the in-place
//! adapter is touched by one thread at a time; the spawned mode uses `std` and
//! `async-channel` directly and is checked by its own tests, not by loom.

#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use futures_util::task::AtomicWaker;

#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// loom's `AtomicWaker` registers by reference under another name; this wrapper
/// gives it the `futures` spelling so the protocol code reads the same in both builds.
#[cfg(loom)]
#[derive(Debug, Default)]
pub(crate) struct AtomicWaker(loom::future::AtomicWaker);

#[cfg(loom)]
impl AtomicWaker {
    pub(crate) fn new() -> Self {
        Self(loom::future::AtomicWaker::new())
    }

    pub(crate) fn register(&self, waker: &std::task::Waker) {
        self.0.register_by_ref(waker);
    }

    pub(crate) fn wake(&self) {
        self.0.wake();
    }

    pub(crate) fn take(&self) -> Option<std::task::Waker> {
        self.0.take_waker()
    }
}
