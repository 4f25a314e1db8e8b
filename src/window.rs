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
    /// Completion order.
    Unordered(VecDeque<T>),
    /// Input order. `entries[i]` belongs to the item at input position `front + i`:
    /// `None` while it runs, `Some` once it completed and waits for the ones before
    /// it. Its length is the number of items started and not yet yielded.
    Ordered {
        entries: VecDeque<Option<T>>,
        front: u64,
    },
}

impl<T> Held<T> {
    pub(crate) fn unordered() -> Self {
        Self {
            len: 0,
            order: Order::Unordered(VecDeque::new()),
        }
    }

    pub(crate) fn ordered() -> Self {
        Self {
            len: 0,
            order: Order::Ordered {
                entries: VecDeque::new(),
                front: 0,
            },
        }
    }

    /// Complete outputs not yet handed out.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Reserves an entry for an item about to start and returns its position
    /// (unordered, positions are not needed: always 0).
    pub(crate) fn begin(&mut self) -> u64 {
        match &mut self.order {
            Order::Unordered(_) => 0,
            Order::Ordered { entries, front } => {
                entries.push_back(None);
                *front + entries.len() as u64 - 1
            }
        }
    }

    /// Stores the output of the item at `position`.
    pub(crate) fn complete(&mut self, position: u64, output: T) {
        match &mut self.order {
            Order::Unordered(done) => done.push_back(output),
            Order::Ordered { entries, front } => {
                let entry = &mut entries[(position - *front) as usize];
                debug_assert!(entry.is_none(), "an item completed twice");
                *entry = Some(output);
            }
        }
        self.len += 1;
    }

    /// Takes the next output that may be handed to the consumer.
    pub(crate) fn pop(&mut self) -> Option<T> {
        let output = match &mut self.order {
            Order::Unordered(done) => done.pop_front()?,
            Order::Ordered { entries, front } => {
                let output = entries.front_mut()?.take()?;
                entries.pop_front();
                *front += 1;
                output
            }
        };
        self.len -= 1;
        Some(output)
    }
}
