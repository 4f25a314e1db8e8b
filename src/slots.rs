//! The worker slots: where started futures live while they run.
//!
//! A slot is created the first time the worker budget needs it and then reused
//! for every future that runs in it: its future sits in a pinned box that is
//! refilled with `Pin::set`, and its waker is built once, so starting a future
//! allocates nothing. Only slots whose waker fired are polled again.
//!
//! Woken slots wait in one queue, each at most once however many wakes it got.
//! A future that wakes itself while being polled goes to the back, behind every
//! slot already waiting, so a future that always wakes itself gets one poll per
//! pass and cannot starve the others. The queue is reserved to hold every slot,
//! so it never grows while polling.
//!
//! The wakes that come through the tree carry no order of their own, only slot
//! numbers. Each batch of them joins the queue oldest future first (by the
//! position it started at), not in slot order: when one event wakes many
//! futures that compete for one thing, such as a freed server that wakes all
//! its waiters and lets the first poll take it, the one that has waited
//! longest wins, as in a queue. In slot order the lowest slots would win every
//! time, and a future in a high slot could wait for ever.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use pin_project_lite::pin_project;

use crate::index_queue::IndexQueue;
use crate::wake::{Control, PollGuard, ReadyTree};

/// A set of worker slots, each running at most one future.
pub(crate) struct Slots<F> {
    slots: Vec<Slot<F>>,
    /// Slots that hold no future, most recently freed last (reused first, while
    /// its memory is still warm).
    free: Vec<usize>,
    ready: ReadyTree,
    /// Slots to poll, in the order their wakes were seen. A slot is listed at
    /// most once: woken twice before it is polled (it woke itself, and another
    /// thread woke it through the tree), one poll answers both wakes. A future
    /// that wakes itself goes to the back, so each pass of
    /// [`Slots::poll_woken`] polls every slot at most once.
    woken: IndexQueue,
}

struct Slot<F> {
    running: Pin<Box<Running<F>>>,
    waker: Waker,
}

pin_project! {
    /// What a slot's box holds. The position sits next to the future, not in the
    /// slot, because a poll touches both: the slots stay small and dense.
    struct Running<F> {
        // The position of the item running here: its place in input order
        // (which the ordered window needs), or unordered in start order. A
        // batch of wakes is polled by it, oldest first.
        position: u64,
        #[pin]
        future: Option<F>,
    }
}

impl<F: Future> Slots<F> {
    /// Slots for at most `capacity` futures at once. Creates no slot yet.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            slots: Vec::new(),
            free: Vec::new(),
            ready: ReadyTree::new(capacity),
            woken: IndexQueue::new(0),
        }
    }

    /// Puts `future` to work in a free slot and polls it once, so it is under way
    /// before the consumer sees anything.
    #[inline(always)]
    pub(crate) fn start(&mut self, future: F, position: u64) -> Poll<F::Output> {
        let index = match self.free.last() {
            Some(&index) => index,
            None => self.grow(),
        };
        let slot = &mut self.slots[index];
        let mut running = slot.running.as_mut().project();
        *running.position = position;
        running.future.set(Some(future));
        let (poll, self_woken) = slot.poll();
        // A future that finished during its first poll leaves its slot free.
        if poll.is_pending() {
            self.free.pop();
            if self_woken {
                self.woken.push(index);
            }
        }
        poll
    }

    /// Creates a slot and lists it as free.
    #[cold]
    fn grow(&mut self) -> usize {
        let index = self.slots.len();
        if index == self.ready.capacity() {
            self.rebuild();
        }
        let waker = self.ready.waker(index);
        self.slots.push(Slot {
            running: Box::pin(Running {
                position: 0,
                future: None,
            }),
            waker,
        });
        self.woken.grow_to(self.slots.len());
        self.free.push(index);
        index
    }

    /// The worker budget was raised past what the ready tree was built for:
    /// rebuilds it a level deeper, gives every slot its new waker, and lists every
    /// running future as woken, so that its next poll registers the new waker.
    #[cold]
    fn rebuild(&mut self) {
        self.ready.rebuild(self.slots.len() + 1);
        for (index, slot) in self.slots.iter_mut().enumerate() {
            slot.waker = self.ready.waker(index);
            if slot.running.future.is_some() {
                self.woken.push(index);
            }
        }
    }

    /// Slots of another future type for `capacity` futures, keeping the wake
    /// tree's consumer (and so every `Limits` handle's signal). Before the first
    /// start only.
    pub(crate) fn renew<G: Future>(mut self, capacity: usize) -> Slots<G> {
        debug_assert!(self.slots.is_empty(), "renewed after a start");
        self.ready.rebuild(capacity);
        Slots {
            slots: Vec::new(),
            free: Vec::new(),
            ready: self.ready,
            woken: IndexQueue::new(0),
        }
    }

    /// The handle that tells the consumer its limits changed.
    pub(crate) fn control(&self) -> Control {
        self.ready.control()
    }

    /// Whether [`Slots::poll_woken`] has anything to do.
    #[inline]
    pub(crate) fn has_woken(&self) -> bool {
        !self.woken.is_empty() || self.ready.has_ready()
    }

    /// Whether a future was woken from outside its own poll since the last
    /// [`Slots::poll_woken`] took the tree's wakes.
    #[inline]
    pub(crate) fn woken_by_others(&self) -> bool {
        self.ready.has_ready()
    }

    /// Takes the wakes that came through the tree (listed oldest future first:
    /// see the module's documentation), then makes one pass over the woken
    /// slots, polling each once, until the pass ends or `budget` runs out.
    /// Every slot taken off the queue costs one unit, even one whose future
    /// already finished, so wakes sent from elsewhere in a loop cannot keep the
    /// consumer here. Hands each finished future's output to `done` with its
    /// input position; the pass stops early if `done` returns `false`. Calls
    /// `control` first if the limits changed.
    #[inline(always)]
    pub(crate) fn poll_woken(
        &mut self,
        budget: &mut usize,
        mut done: impl FnMut(u64, F::Output) -> bool,
        control: impl FnOnce(),
    ) {
        if self.ready.has_ready() {
            let woken = &mut self.woken;
            let listed = woken.len();
            self.ready.take(|index| woken.push(index), control);
            let slots = &self.slots;
            woken.sort_batch(listed, |&index| slots[index].running.position);
        }
        // Slots that wake themselves during this pass go behind it.
        let pass = self.woken.len().min(*budget);
        *budget -= pass;
        for left in (0..pass).rev() {
            let Some(index) = self.woken.pop() else {
                break;
            };
            let slot = &mut self.slots[index];
            // A late wake from a future that has finished: nothing to do.
            if slot.running.future.is_none() {
                continue;
            }
            match slot.poll() {
                (Poll::Ready(output), _) => {
                    self.free.push(index);
                    if !done(slot.running.position, output) {
                        return;
                    }
                }
                (Poll::Pending, true) => self.woken.push(index),
                (Poll::Pending, false) => {}
            }
            // A wake through the tree meanwhile, maybe for a slot still
            // listed in this pass: that slot's poll here answers it (contract
            // point 7: once), so it is taken off the tree now rather than
            // left to make the next pass poll the slot again for nothing.
            // After the pass's last poll no slot of it is left to answer.
            if left > 0 && self.ready.has_ready() {
                self.answer_listed();
            }
        }
    }

    /// Takes the tree's wakes during a pass. A wake for a slot still listed
    /// is answered by its poll in this pass and goes; any other (a slot
    /// polled earlier in the pass, or not listed) is sent through the tree
    /// again, as a wake from another future, for the next pass, and so is
    /// a change of limits.
    #[cold]
    #[inline(never)]
    fn answer_listed(&mut self) {
        let Self {
            slots,
            ready,
            woken,
            ..
        } = self;
        let mut limits_changed = false;
        // A wake sent again lands in a word this take has swapped already,
        // so the take does not see it: it waits in the tree.
        ready.take(
            |index| {
                if !woken.is_listed(index) {
                    slots[index].waker.wake_by_ref();
                }
            },
            || limits_changed = true,
        );
        if limits_changed {
            ready.control().signal();
        }
    }

    /// Drops every running future, each exactly once, and frees its slot,
    /// telling `each` the position it ran at. Their wakers stay valid: a late
    /// wake finds the slot empty and is ignored.
    #[cold]
    pub(crate) fn cancel_all(&mut self, each: &mut dyn FnMut(u64)) {
        self.woken.clear();
        for (index, slot) in self.slots.iter_mut().enumerate() {
            let running = slot.running.as_mut().project();
            let mut future = running.future;
            if future.is_some() {
                // Freed first, so that a destructor that panics leaves the
                // slot free and the position told.
                self.free.push(index);
                each(*running.position);
                future.set(None);
            }
        }
    }

    /// See [`ReadyTree::wake_consumer`].
    pub(crate) fn wake_consumer(&self) {
        self.ready.wake_consumer();
    }

    /// See [`ReadyTree::park`].
    pub(crate) fn park(&mut self, waker: &Waker) -> bool {
        self.ready.park(waker)
    }

    /// See [`ReadyTree::unpark`].
    pub(crate) fn unpark(&mut self) {
        self.ready.unpark();
    }
}

impl<F: Future> Slot<F> {
    /// Polls the future in this slot, and says whether it woke itself meanwhile.
    /// A finished future is dropped at once, so what it holds is released before
    /// its output is handed on.
    #[inline(always)]
    fn poll(&mut self) -> (Poll<F::Output>, bool) {
        let Some(future) = self.running.as_mut().project().future.as_pin_mut() else {
            unreachable!("a slot is polled only while it holds a future");
        };
        let polling = PollGuard::enter(&self.waker);
        match future.poll(&mut Context::from_waker(&self.waker)) {
            Poll::Ready(output) => {
                drop(polling);
                self.running.as_mut().project().future.set(None);
                (Poll::Ready(output), false)
            }
            Poll::Pending => (Poll::Pending, polling.self_woken()),
        }
    }
}
