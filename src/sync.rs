//! The synchronisation primitives the crate's threads share, swapped for loom's
//! model-checked versions under `RUSTFLAGS="--cfg loom"`.
//!
//! In place, only what carries a wake from a worker slot to the consumer goes
//! through here: the words of the ready tree, the `parked` flag, the
//! consumer's waker and the lock on its current root (the thread-local self-wake mark in `wake.rs` switches to
//! `loom::thread_local!` the same way); the rest of the in-place adapter is
//! touched by one thread at a time. In spawned mode everything the consumer and
//! the tasks share goes through here: the state's mutex, the `Arc` around it,
//! the cancellation flag, each task's waker and its source-wake flag. Wakers
//! themselves come from the executor (under loom, from `loom::future::block_on`).

#[cfg(not(loom))]
pub(crate) use std::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use futures_util::task::AtomicWaker;

#[cfg(loom)]
pub(crate) use loom::sync::Arc;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::Weak;

/// loom's `Arc` has no weak count; a strong reference stands in (the models
/// never outlive their streams, so it changes nothing they check).
#[cfg(loom)]
pub(crate) struct Weak<T>(Arc<T>);

#[cfg(loom)]
impl<T> Weak<T> {
    pub(crate) fn upgrade(&self) -> Option<Arc<T>> {
        Some(Arc::clone(&self.0))
    }
}

/// `Arc::downgrade`, in both builds.
pub(crate) fn downgrade<T>(this: &Arc<T>) -> Weak<T> {
    #[cfg(not(loom))]
    return Arc::downgrade(this);
    #[cfg(loom)]
    return Weak(Arc::clone(this));
}

#[cfg(not(loom))]
use std::sync as imp;

#[cfg(loom)]
use loom::sync as imp;

pub(crate) use imp::MutexGuard;

/// A mutex whose `lock` carries on after a panic poisoned it: the crate never
/// panics while it holds one (user code that may panic runs outside, or inside
/// `catch_unwind`), so a poisoned lock still guards whole counts.
pub(crate) struct Mutex<T>(imp::Mutex<T>);

impl<T: std::fmt::Debug> std::fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(imp::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The lock if it is free now, else `None`.
    pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        match self.0.try_lock() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

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
