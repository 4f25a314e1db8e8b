//! The worker slots: where started futures live while they run.
//!
//! A slot is created the first time the worker budget needs it and then reused
//! for every future that runs in it: its future sits in a pinned box that is
//! refilled with `Pin::set`, and its waker is built once, so starting a future
//! allocates nothing. Only slots whose waker fired are polled again.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::wake::{Shared, SlotWaker};

/// A set of worker slots, each running at most one future.
pub(crate) struct Slots<F> {
    slots: Vec<Slot<F>>,
    /// Slots that hold no future, most recently freed last (reused first, while
    /// its memory is still warm).
    free: Vec<usize>,
    shared: Arc<Shared>,
    /// Woken slots taken from the ready list and not polled yet. What one
    /// `poll_next` leaves here when its budget runs out is polled by the next.
    batch: Vec<usize>,
    next_in_batch: usize,
}

struct Slot<F> {
    future: Pin<Box<Option<F>>>,
    waker: Waker,
    handle: Arc<SlotWaker>,
    /// The input position of the item running here (used by the ordered window).
    position: u64,
}

impl<F: Future> Slots<F> {
    pub(crate) fn new() -> Self {
        Self {
            slots: Vec::new(),
            free: Vec::new(),
            shared: Arc::new(Shared::new()),
            batch: Vec::new(),
            next_in_batch: 0,
        }
    }

    /// Futures started and not yet complete.
    pub(crate) fn active(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Puts `future` to work in a free slot and polls it once, so it is under way
    /// before the consumer sees anything.
    pub(crate) fn start(&mut self, future: F, position: u64) -> Poll<F::Output> {
        let index = match self.free.pop() {
            Some(index) => index,
            None => self.grow(),
        };
        let slot = &mut self.slots[index];
        slot.position = position;
        slot.future.set(Some(future));
        let poll = slot.poll();
        if poll.is_ready() {
            self.free.push(index);
        }
        poll
    }

    fn grow(&mut self) -> usize {
        let index = self.slots.len();
        let handle = Arc::new(SlotWaker::new(index, Arc::clone(&self.shared)));
        self.slots.push(Slot {
            future: Box::pin(None),
            waker: Waker::from(Arc::clone(&handle)),
            handle,
            position: 0,
        });
        index
    }

    /// Whether [`Slots::poll_woken`] has anything to do.
    pub(crate) fn has_woken(&self) -> bool {
        self.next_in_batch < self.batch.len() || self.shared.has_ready()
    }

    /// Polls slots whose waker fired, each at most once, until none is left or
    /// `budget` runs out; every slot taken off the ready list costs one unit, even
    /// a stale one, so wakes sent from elsewhere in a loop cannot keep the consumer
    /// here. Hands each finished future's output to `done` with its position.
    pub(crate) fn poll_woken(&mut self, budget: &mut usize, mut done: impl FnMut(u64, F::Output)) {
        if self.next_in_batch == self.batch.len() {
            self.batch.clear();
            self.next_in_batch = 0;
            self.shared.take_ready(&mut self.batch);
        }
        while *budget > 0 && self.next_in_batch < self.batch.len() {
            let index = self.batch[self.next_in_batch];
            self.next_in_batch += 1;
            *budget -= 1;
            let slot = &mut self.slots[index];
            slot.handle.clear();
            // An empty slot got a wake from a future that has finished: nothing to do.
            if slot.future.is_none() {
                continue;
            }
            if let Poll::Ready(output) = slot.poll() {
                self.free.push(index);
                done(slot.position, output);
            }
        }
    }

    /// See [`Shared::park`].
    pub(crate) fn park(&self, waker: &Waker) -> bool {
        self.shared.park(waker)
    }

    /// See [`Shared::unpark`].
    pub(crate) fn unpark(&self) {
        self.shared.unpark();
    }
}

impl<F> Drop for Slots<F> {
    fn drop(&mut self) {
        self.shared.forget_consumer();
    }
}

impl<F: Future> Slot<F> {
    /// Polls the future in this slot; a finished future is dropped at once, so
    /// what it holds is released before its output is handed on.
    fn poll(&mut self) -> Poll<F::Output> {
        let Some(future) = self.future.as_mut().as_pin_mut() else {
            unreachable!("a slot is polled only while it holds a future");
        };
        let output = std::task::ready!(future.poll(&mut Context::from_waker(&self.waker)));
        self.future.set(None);
        Poll::Ready(output)
    }
}
