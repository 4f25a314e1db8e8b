//! Polling streams by hand, with wakers the test owns.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use futures::Stream;
use futures::task::noop_waker_ref;
use futures_test::task::{AwokenCount, new_count_waker};

/// Polls streams by hand with a waker that counts its wakes.
pub struct Poller {
    waker: Waker,
    wakes: AwokenCount,
}

impl Default for Poller {
    fn default() -> Self {
        Self::new()
    }
}

impl Poller {
    pub fn new() -> Self {
        let (waker, wakes) = new_count_waker();
        Self { waker, wakes }
    }

    pub fn poll<S: Stream + Unpin + ?Sized>(&self, stream: &mut S) -> Poll<Option<S::Item>> {
        self.poll_pinned(Pin::new(stream))
    }

    pub fn poll_pinned<S: Stream + ?Sized>(&self, stream: Pin<&mut S>) -> Poll<Option<S::Item>> {
        stream.poll_next(&mut Context::from_waker(&self.waker))
    }

    /// Polls until the stream is `Pending` or ends; returns the outputs seen.
    pub fn drain_ready<S: Stream + Unpin + ?Sized>(&self, stream: &mut S) -> Vec<S::Item> {
        let mut outputs = Vec::new();
        while let Poll::Ready(Some(output)) = self.poll(stream) {
            outputs.push(output);
        }
        outputs
    }

    /// Polls to the end, with nothing but the stream's own wakes to go on:
    /// calls `on_pending` with the wakes seen since the previous poll each time
    /// the stream is `Pending` (a `Pending` with none would hang an executor).
    /// Returns the outputs, sorted.
    pub fn drain_self_woken<S>(
        &self,
        stream: &mut S,
        mut on_pending: impl FnMut(usize),
    ) -> Vec<S::Item>
    where
        S: Stream<Item: Ord> + Unpin + ?Sized,
    {
        let mut outputs = Vec::new();
        loop {
            let wakes = self.wakes();
            match self.poll(stream) {
                Poll::Ready(Some(output)) => outputs.push(output),
                Poll::Ready(None) => break,
                Poll::Pending => on_pending(self.wakes() - wakes),
            }
        }
        outputs.sort_unstable();
        outputs
    }

    /// How often the waker was woken so far.
    pub fn wakes(&self) -> usize {
        self.wakes.get()
    }
}

/// Polls the stream once with a waker that does nothing: for streams whose
/// progress the test drives some other way (an executor it steps by hand).
pub fn poll_once<S: Stream + Unpin + ?Sized>(stream: &mut S) -> Poll<Option<S::Item>> {
    Pin::new(stream).poll_next(&mut Context::from_waker(noop_waker_ref()))
}
