//! The worker tasks, as the shared state sees them: which exist, which are idle
//! (parked with no item), and whether one is on its way to look for work (the
//! *searcher*). Grows one entry per task spawned, never per item.

use std::task::Waker;

use crate::index_queue::IndexQueue;
use crate::sync::{Arc, AtomicBool, AtomicWaker, Ordering};

/// What a task shares with whoever wakes it, outside the state's lock.
pub(super) struct TaskHandle {
    /// The waker of the task's latest poll, registered at the start of every
    /// poll: idle wakes and cancellation take it from here.
    pub(super) waker: AtomicWaker,
    /// Set (under the state's lock) while the source holds this task's waker
    /// after returning `Pending`, so the task's next poll, whatever woke it,
    /// lets the source be pulled again. Read without the lock on every poll.
    pub(super) source_waiter: AtomicBool,
    /// Set (under the state's lock) when this task, busy with an item, is sent
    /// to pull ahead: a waiting place was freed while no start was, and no
    /// task was idle. Its next poll makes the pull before it polls its future
    /// again. Read without the lock on every poll.
    refill: AtomicBool,
}

impl TaskHandle {
    /// Whether the source may have woken this task.
    pub(super) fn is_source_waiter(&self) -> bool {
        self.source_waiter.load(Ordering::Relaxed)
    }

    /// Whether this task was sent to pull ahead; clears the request.
    pub(super) fn take_refill(&self) -> bool {
        // A load first: the request is rare, and the load keeps the common
        // poll free of a read-modify-write.
        self.refill.load(Ordering::Relaxed) && self.refill.swap(false, Ordering::Relaxed)
    }
}

struct Slot {
    handle: Arc<TaskHandle>,
    /// In the idle queue, waiting for a start.
    idle: bool,
    /// Woken (or spawned) as the searcher, and not polled since.
    notified: bool,
}

/// Every worker task of one stream, by index (the order they were spawned in).
pub(super) struct Tasks {
    slots: Vec<Slot>,
    /// Idle tasks, longest idle first. An entry whose task is no longer idle
    /// (it was polled for another reason and took an item) is skipped.
    idle: IndexQueue,
    /// A task was woken or spawned to take a free start and has not looked yet.
    /// At most one at a time: see the protocol in `mod.rs`.
    searching: bool,
    /// Tasks handed to the spawner so far; the ones after it are counted but
    /// not spawned yet.
    spawned: usize,
}

impl Tasks {
    pub(super) fn new() -> Self {
        Self {
            slots: Vec::new(),
            idle: IndexQueue::new(0),
            searching: false,
            spawned: 0,
        }
    }

    /// Tasks counted so far, spawned or about to be.
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(super) fn is_searching(&self) -> bool {
        self.searching
    }

    /// Task `index` is being polled with no item: if it was the searcher, it
    /// has arrived; if it was idle (woken by something else), it is no longer.
    pub(super) fn arrive(&mut self, index: usize) {
        let slot = &mut self.slots[index];
        slot.idle = false;
        if slot.notified {
            slot.notified = false;
            self.searching = false;
        }
    }

    /// Task `index` found nothing to start and goes to sleep.
    pub(super) fn park(&mut self, index: usize) {
        self.slots[index].idle = true;
        self.idle.push(index);
    }

    /// Makes the task idle longest the searcher and takes its waker, for the
    /// caller to wake once the lock is released. `None` if no task is idle.
    ///
    /// The waker may be `None` too, when the task is registering a new one at
    /// this moment: `AtomicWaker` then has the task wake itself.
    pub(super) fn wake_idle(&mut self) -> Option<Option<Waker>> {
        while let Some(index) = self.idle.pop() {
            let slot = &mut self.slots[index];
            if slot.idle {
                slot.idle = false;
                slot.notified = true;
                self.searching = true;
                return Some(slot.handle.waker.take());
            }
        }
        None
    }

    /// With no task idle: sends a busy one to pull ahead (see
    /// [`TaskHandle::take_refill`]) and takes its waker, for the caller to wake
    /// once the lock is released. `None` if no task is spawned, or one was sent
    /// already and has not looked yet. Call only when [`Tasks::wake_idle`]
    /// found nobody: then every spawned task is busy, and the first will do.
    pub(super) fn wake_busy_to_refill(&mut self) -> Option<Option<Waker>> {
        let slot = self.slots[..self.spawned].first()?;
        debug_assert!(!slot.idle, "a task was idle, and `wake_idle` missed it");
        if slot.handle.refill.swap(true, Ordering::Relaxed) {
            return None;
        }
        Some(slot.handle.waker.take())
    }

    /// Counts one more task, the searcher, to be spawned once the lock is
    /// released (see [`Tasks::next_to_spawn`]).
    pub(super) fn add(&mut self) {
        self.slots.push(Slot {
            handle: Arc::new(TaskHandle {
                waker: AtomicWaker::new(),
                source_waiter: AtomicBool::new(false),
                refill: AtomicBool::new(false),
            }),
            idle: false,
            notified: true,
        });
        self.idle.grow_to(self.slots.len());
        self.searching = true;
    }

    /// The next task counted and not spawned yet, with its handle; marks it
    /// spawned.
    pub(super) fn next_to_spawn(&mut self) -> Option<(usize, Arc<TaskHandle>)> {
        let index = self.spawned;
        let slot = self.slots.get(index)?;
        self.spawned += 1;
        Some((index, Arc::clone(&slot.handle)))
    }

    pub(super) fn has_unspawned(&self) -> bool {
        self.spawned < self.slots.len()
    }

    /// Records whether task `index` is the one the source will wake.
    pub(super) fn set_source_waiter(&self, index: usize, waiting: bool) {
        self.slots[index]
            .handle
            .source_waiter
            .store(waiting, Ordering::Relaxed);
    }

    /// The stream was cancelled: no task is idle any more (each will end when
    /// polled). Returns every spawned task's handle, to wake them all once the
    /// lock is released.
    pub(super) fn end_all(&mut self) -> Vec<Arc<TaskHandle>> {
        self.idle.clear();
        self.searching = false;
        self.slots[..self.spawned]
            .iter()
            .map(|slot| Arc::clone(&slot.handle))
            .collect()
    }
}
