//! Outputs that are complete but not yet handed to the consumer.
//!
//! Unordered, they wait in completion order. Ordered, each started item takes the
//! next position of the reorder window when it starts, and outputs leave only from
//! the front, in input order. Either way the storage grows to its budget once and
//! is then reused, whatever the number of items that flow through.

use std::collections::VecDeque;

pub(crate) struct Held<T> {
    /// Outputs held, in either order: the budget check reads it on every start.
    len: usize,
    order: Order<T>,
}

enum Order<T> {
    /// Completion order; and the items started so far, which number the next
    /// one's position: its place in start order.
    Unordered(VecDeque<T>, u64),
    /// Input order. The item at input position `p` owns `ring[p % ring.len()]`
    /// from its start until it is yielded: `None` while it runs, `Some` once it
    /// completed and waits for the ones before it. `front..next` are the items
    /// started and not yet yielded; the window keeps that span below its size,
    /// and the ring (a power of two, so `%` is a mask) doubles when the span
    /// reaches it, up to the window.
    Ordered {
        ring: Vec<Option<T>>,
        front: u64,
        next: u64,
    },
}

impl<T> Held<T> {
    pub(crate) fn unordered() -> Self {
        Self {
            len: 0,
            order: Order::Unordered(VecDeque::new(), 0),
        }
    }

    pub(crate) fn ordered() -> Self {
        Self {
            len: 0,
            order: Order::Ordered {
                ring: Vec::new(),
                front: 0,
                next: 0,
            },
        }
    }

    /// Complete outputs not yet handed out.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Ordered: the input position of the oldest output not yet handed out
    /// (the window runs from it). Unordered: 0.
    #[inline]
    pub(crate) fn front(&self) -> u64 {
        match &self.order {
            Order::Unordered(..) => 0,
            Order::Ordered { front, .. } => *front,
        }
    }

    /// Reserves an entry for an item about to start and returns its position:
    /// its place in input order, or unordered in start order (the outputs do
    /// not need it there, but the worker slots poll a batch of wakes oldest
    /// first by it).
    #[inline]
    pub(crate) fn begin(&mut self) -> u64 {
        match &mut self.order {
            Order::Unordered(_, started) => {
                let position = *started;
                *started = position.wrapping_add(1);
                position
            }
            Order::Ordered { ring, front, next } => {
                if (*next - *front) as usize == ring.len() {
                    grow(ring, *front..*next);
                }
                *next += 1;
                *next - 1
            }
        }
    }

    /// Stores the output of the item at `position`.
    #[inline]
    pub(crate) fn complete(&mut self, position: u64, output: T) {
        match &mut self.order {
            Order::Unordered(done, _) => done.push_back(output),
            Order::Ordered { ring, .. } => {
                let mask = ring.len() - 1;
                let entry = &mut ring[position as usize & mask];
                debug_assert!(entry.is_none(), "an item completed twice");
                *entry = Some(output);
            }
        }
        self.len += 1;
    }

    /// Takes the next output that may be handed to the consumer.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        let output = match &mut self.order {
            Order::Unordered(done, _) => done.pop_front()?,
            Order::Ordered { ring, front, next } => {
                if *front == *next {
                    return None;
                }
                let mask = ring.len() - 1;
                let output = ring[*front as usize & mask].take()?;
                *front += 1;
                output
            }
        };
        self.len -= 1;
        Some(output)
    }
}

impl<T> Held<T> {
    /// How many held outputs match `matches`.
    #[cold]
    pub(crate) fn count(&self, mut matches: impl FnMut(&T) -> bool) -> usize {
        match &self.order {
            Order::Unordered(done, _) => done.iter().filter(|output| matches(output)).count(),
            Order::Ordered { ring, .. } => ring
                .iter()
                .flatten()
                .filter(|output| matches(output))
                .count(),
        }
    }

    /// After a failure: keeps only the outputs that may still be handed out
    /// without breaking the output order, and hands the rest to `removed`.
    /// Unordered, that is all of them. Ordered, the complete prefix from the
    /// oldest unyielded position; the first gap is an item that will never
    /// complete (it was cancelled), so nothing behind it can be yielded in
    /// order. In place `removed` drops them at once; spawned, it keeps them to
    /// drop once the lock is released.
    #[cold]
    pub(crate) fn keep_in_order_prefix(&mut self, mut removed: impl FnMut(T)) {
        let Order::Ordered { ring, front, next } = &mut self.order else {
            return;
        };
        let mask = ring.len().wrapping_sub(1);
        let mut end = *front;
        while end < *next && ring[end as usize & mask].is_some() {
            end += 1;
        }
        for position in end..*next {
            if let Some(output) = ring[position as usize & mask].take() {
                self.len -= 1;
                removed(output);
            }
        }
        *next = end;
    }

    /// Hands every held output to `each`, in no particular order: for a drop
    /// that runs each destructor on its own.
    #[cold]
    pub(crate) fn for_each_output(self, each: impl FnMut(T)) {
        match self.order {
            Order::Unordered(done, _) => done.into_iter().for_each(each),
            Order::Ordered { ring, .. } => ring.into_iter().flatten().for_each(each),
        }
    }
}

/// Doubles `ring`, moving the entries of the items at `span` to their places in
/// the larger ring.
#[cold]
fn grow<T>(ring: &mut Vec<Option<T>>, span: std::ops::Range<u64>) {
    let old = std::mem::take(ring);
    let len = (old.len() * 2).max(4);
    ring.resize_with(len, || None);
    let (old_mask, mask) = (old.len().wrapping_sub(1), len - 1);
    let mut old = old;
    for position in span {
        ring[position as usize & mask] = old[position as usize & old_mask].take();
    }
}
