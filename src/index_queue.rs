//! A first-in, first-out queue of small indices in which each index is listed at
//! most once: the woken worker slots in place, the idle worker tasks spawned.

use std::collections::VecDeque;

pub(crate) struct IndexQueue {
    order: VecDeque<usize>,
    /// Per index: whether it is in `order`.
    listed: Vec<bool>,
}

impl IndexQueue {
    /// A queue for indices below `len`.
    pub(crate) fn new(len: usize) -> Self {
        let mut queue = Self {
            order: VecDeque::new(),
            listed: Vec::new(),
        };
        queue.grow_to(len);
        queue
    }

    /// Lets indices below `len` in. Reserves room for all of them at once, so a
    /// push never allocates.
    pub(crate) fn grow_to(&mut self, len: usize) {
        if len > self.listed.len() {
            self.listed.resize(len, false);
            self.order.reserve(len - self.order.len());
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    /// Puts `index` at the back, unless it is listed already.
    #[inline]
    pub(crate) fn push(&mut self, index: usize) {
        let listed = &mut self.listed[index];
        if !*listed {
            *listed = true;
            self.order.push_back(index);
        }
    }

    /// Whether `index` is listed.
    pub(crate) fn is_listed(&self, index: usize) -> bool {
        self.listed[index]
    }

    /// Takes the index listed longest.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<usize> {
        let index = self.order.pop_front()?;
        self.listed[index] = false;
        Some(index)
    }

    /// Sorts what was pushed after the first `from` indices by `key`.
    pub(crate) fn sort_batch<K: Ord>(&mut self, from: usize, key: impl FnMut(&usize) -> K) {
        if self.order.len() - from > 1 {
            self.order.make_contiguous()[from..].sort_unstable_by_key(key);
        }
    }

    pub(crate) fn clear(&mut self) {
        while self.pop().is_some() {}
    }
}
