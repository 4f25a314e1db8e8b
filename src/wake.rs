//! How a wake travels from a worker slot to the task that polls the stream.
//!
//! Every worker slot owns one [`SlotWaker`], created with the slot and lent to
//! each future that runs in it, so starting a future allocates nothing. Waking it
//! puts the slot's index on the shared ready list, at most once until the
//! consumer takes the index back, and wakes the consumer only if the consumer has
//! parked. Wakes that arrive while the consumer is inside `poll_next` (a future
//! waking itself during its own poll is the common case) cost no trip through the
//! executor: the consumer looks at the ready list again before it sleeps.
//!
//! The protocol has three rules, each needed for "no wake is lost":
//! 1. A slot clears its `queued` flag with a read-modify-write *before* it is
//!    polled, so a wake that lands during the poll queues the slot again, and a
//!    wake that saw the flag still set is ordered before the poll that follows.
//! 2. The consumer registers its waker, then sets `parked`, then looks at the
//!    ready list under its lock; a waker pushes under the same lock, then reads
//!    `parked`. The lock orders the two, so either the consumer sees the index or
//!    the waker sees `parked` and wakes it.
//! 3. Only one waker turns `parked` off (a swap), so a burst of wakes costs the
//!    executor one wake-up.

use std::mem;
use std::ops::DerefMut;
use std::sync::{Arc, PoisonError};
use std::task::{Wake, Waker};

use crate::sync::{AtomicBool, AtomicWaker, Mutex, Ordering};

/// State shared between the consumer and every slot's waker.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Indices of slots woken since the consumer last took the list. Each slot
    /// appears at most once (see [`SlotWaker::queued`]), so its length never
    /// exceeds the number of slots and it stops growing once the slots exist.
    ready: Mutex<Vec<usize>>,
    /// A hint that `ready` is not empty, so the consumer's hot path can skip the
    /// lock. Written under the lock; a stale `false` only delays a poll until the
    /// consumer's locked look in [`Shared::park`].
    nonempty: AtomicBool,
    /// The consumer is about to sleep, or sleeps: the next waker must wake it.
    parked: AtomicBool,
    /// The waker of the task that polls the stream.
    consumer: AtomicWaker,
}

impl Shared {
    pub(crate) fn new() -> Self {
        Self {
            ready: Mutex::new(Vec::new()),
            nonempty: AtomicBool::new(false),
            parked: AtomicBool::new(false),
            consumer: AtomicWaker::new(),
        }
    }

    fn ready(&self) -> impl DerefMut<Target = Vec<usize>> + '_ {
        // Nothing panics while the lock is held (a push that cannot allocate
        // aborts), so a poisoned lock still guards a consistent list.
        self.ready.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, index: usize) {
        {
            let mut ready = self.ready();
            if ready.is_empty() {
                self.nonempty.store(true, Ordering::Release);
            }
            ready.push(index);
        }
        if self.parked.load(Ordering::Acquire) && self.parked.swap(false, Ordering::AcqRel) {
            self.consumer.wake();
        }
    }

    /// Whether some slot may have been woken since the last [`Shared::take_ready`].
    pub(crate) fn has_ready(&self) -> bool {
        self.nonempty.load(Ordering::Acquire)
    }

    /// Moves the indices of every woken slot into `batch`, which must be empty;
    /// the two vectors trade buffers, so neither allocates once both are grown.
    pub(crate) fn take_ready(&self, batch: &mut Vec<usize>) {
        debug_assert!(batch.is_empty());
        let mut ready = self.ready();
        mem::swap(&mut *ready, batch);
        self.nonempty.store(false, Ordering::Release);
    }

    /// The consumer starts a `poll_next`: wakes that arrive now need not reach the
    /// executor, since the consumer checks the ready list before it sleeps.
    pub(crate) fn unpark(&self) {
        if self.parked.load(Ordering::Relaxed) {
            self.parked.store(false, Ordering::Relaxed);
        }
    }

    /// The consumer wants to sleep: registers `waker`, then returns `true` if no
    /// slot was woken meanwhile (sleep; the next wake reaches `waker`), or `false`
    /// if one was (poll it instead of sleeping).
    pub(crate) fn park(&self, waker: &Waker) -> bool {
        self.consumer.register(waker);
        self.parked.store(true, Ordering::SeqCst);
        if self.ready().is_empty() {
            true
        } else {
            self.parked.store(false, Ordering::Relaxed);
            false
        }
    }

    /// Drops the consumer's waker, so wakers that outlive the stream do not keep
    /// the consumer's task alive.
    pub(crate) fn forget_consumer(&self) {
        drop(self.consumer.take());
    }
}

/// The waker of one worker slot.
#[derive(Debug)]
pub(crate) struct SlotWaker {
    index: usize,
    /// Set by a wake that queued this slot; cleared by the consumer just before it
    /// polls the slot. While set, further wakes have nothing to do.
    queued: AtomicBool,
    shared: Arc<Shared>,
}

impl SlotWaker {
    pub(crate) fn new(index: usize, shared: Arc<Shared>) -> Self {
        Self {
            index,
            queued: AtomicBool::new(false),
            shared,
        }
    }

    /// Called by the consumer right before it polls the slot (rule 1).
    pub(crate) fn clear(&self) {
        // A swap, not a store: it reads the latest wake in the flag's order, so
        // whatever that wake published is visible to the poll that follows.
        self.queued.swap(false, Ordering::AcqRel);
    }
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.shared.push(self.index);
        }
    }
}
