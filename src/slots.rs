//! The worker slots: where started futures live while they run.
//!
//! A slot is created the first time the worker budget needs it and then reused
//! for every future that runs in it: its future sits in a pinned box that is
//! refilled with `Pin::set`, and its waker is built once, so starting a future
//! allocates nothing. Only slots whose waker fired are polled again.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crate::wake::{PollGuard, ReadyTree};

/// A set of worker slots, each running at most one future.
pub(crate) struct Slots<F> {
    slots: Vec<Slot<F>>,
    /// Slots that hold no future, most recently freed last (reused first, while
    /// its memory is still warm).
    free: Vec<usize>,
    ready: ReadyTree,
    /// This round of woken slots, polled from `next_woken` on. What one
    /// `poll_next` leaves here when its budget runs out is polled by the next.
    woken: Vec<usize>,
    next_woken: usize,
    /// Counts the rounds of [`Slots::poll_woken`]; see [`Slot::polled_in_round`].
    round: u64,
    /// Slots whose future woke itself while being polled: they start the next
    /// round, without going through the ready tree.
    again: Vec<usize>,
}

struct Slot<F> {
    future: Pin<Box<Option<F>>>,
    waker: Waker,
    /// Identifies this slot's waker to [`PollGuard`].
    mark: usize,
    /// The input position of the item running here (used by the ordered window).
    position: u64,
    /// The last round of [`Slots::poll_woken`] that polled this slot. A slot can
    /// be listed twice in one round (it woke itself, and another thread woke it
    /// through the tree during the same poll); one poll answers both wakes.
    polled_in_round: u64,
}

impl<F: Future> Slots<F> {
    /// Slots for at most `capacity` futures at once. Creates no slot yet.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            slots: Vec::new(),
            free: Vec::new(),
            ready: ReadyTree::new(capacity),
            woken: Vec::new(),
            next_woken: 0,
            round: 0,
            again: Vec::new(),
        }
    }

    /// Puts `future` to work in a free slot and polls it once, so it is under way
    /// before the consumer sees anything.
    pub(crate) fn start(&mut self, future: F, position: u64) -> Poll<F::Output> {
        let index = match self.free.last() {
            Some(&index) => index,
            None => self.grow(),
        };
        let slot = &mut self.slots[index];
        slot.position = position;
        slot.future.set(Some(future));
        let (poll, self_woken) = slot.poll();
        // A future that finished during its first poll leaves its slot free.
        if poll.is_pending() {
            self.free.pop();
            if self_woken {
                self.again.push(index);
            }
        }
        poll
    }

    /// Creates a slot and lists it as free.
    fn grow(&mut self) -> usize {
        let index = self.slots.len();
        let (waker, mark) = self.ready.waker(index);
        self.slots.push(Slot {
            future: Box::pin(None),
            waker,
            mark,
            position: 0,
            polled_in_round: 0,
        });
        self.free.push(index);
        index
    }

    /// Whether [`Slots::poll_woken`] has anything to do.
    pub(crate) fn has_woken(&self) -> bool {
        self.next_woken < self.woken.len() || !self.again.is_empty() || self.ready.has_ready()
    }

    /// Polls slots whose waker fired, each at most once, until none is left or
    /// `budget` runs out; every slot taken off the ready tree costs one unit, even
    /// one whose future already finished, so wakes sent from elsewhere in a loop
    /// cannot keep the consumer here. Hands each finished future's output to
    /// `done` with its input position.
    pub(crate) fn poll_woken(&mut self, budget: &mut usize, mut done: impl FnMut(u64, F::Output)) {
        if self.next_woken == self.woken.len() {
            // A new round: first the slots that woke themselves, then the tree.
            self.woken.clear();
            self.next_woken = 0;
            std::mem::swap(&mut self.woken, &mut self.again);
            self.round += 1;
            if self.ready.has_ready() {
                self.ready.take(&mut self.woken);
            }
        }
        while *budget > 0 && self.next_woken < self.woken.len() {
            let index = self.woken[self.next_woken];
            self.next_woken += 1;
            *budget -= 1;
            let slot = &mut self.slots[index];
            // A late wake from a future that has finished, or a second listing
            // of a slot already polled this round: nothing to do.
            if slot.future.is_none() || slot.polled_in_round == self.round {
                continue;
            }
            slot.polled_in_round = self.round;
            match slot.poll() {
                (Poll::Ready(output), _) => {
                    self.free.push(index);
                    done(slot.position, output);
                }
                (Poll::Pending, true) => self.again.push(index),
                (Poll::Pending, false) => {}
            }
        }
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
    fn poll(&mut self) -> (Poll<F::Output>, bool) {
        let Some(future) = self.future.as_mut().as_pin_mut() else {
            unreachable!("a slot is polled only while it holds a future");
        };
        let polling = PollGuard::enter(self.mark);
        match future.poll(&mut Context::from_waker(&self.waker)) {
            Poll::Ready(output) => {
                drop(polling);
                self.future.set(None);
                (Poll::Ready(output), false)
            }
            Poll::Pending => (Poll::Pending, polling.self_woken()),
        }
    }
}
