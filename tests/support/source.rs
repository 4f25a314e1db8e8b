//! Sources whose progress the test counts or controls.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use futures::Stream;

use super::gate::lock;

/// A source that counts the items it yields and the polls it receives.
#[derive(Debug)]
pub struct Counted<S> {
    inner: S,
    counts: SourceCounts,
}

/// The test's view of a [`Counted`] source.
#[derive(Clone, Debug, Default)]
pub struct SourceCounts(Arc<(AtomicUsize, AtomicUsize)>);

impl SourceCounts {
    /// Items the source yielded.
    pub fn pulled(&self) -> usize {
        self.0.0.load(SeqCst)
    }

    /// Polls the source received.
    pub fn polls(&self) -> usize {
        self.0.1.load(SeqCst)
    }
}

/// Wraps `inner` so that the items it yields and the polls it gets are counted.
pub fn counted<S: Stream>(inner: S) -> (Counted<S>, SourceCounts) {
    let counts = SourceCounts::default();
    let source = Counted {
        inner,
        counts: counts.clone(),
    };
    (source, counts)
}

impl<S> Counted<S> {
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl<S: Stream + Unpin> Stream for Counted<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        self.counts.0.1.fetch_add(1, SeqCst);
        let poll = Pin::new(&mut self.inner).poll_next(cx);
        if let Poll::Ready(Some(_)) = &poll {
            self.counts.0.0.fetch_add(1, SeqCst);
        }
        poll
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

struct FeedState<T> {
    items: VecDeque<T>,
    closed: bool,
    waker: Option<Waker>,
}

/// A source that yields what the test pushes into its [`Feed`], is `Pending`
/// while it has nothing, and ends once the feed is closed and drained.
pub struct FedSource<T>(Arc<Mutex<FeedState<T>>>);

/// The test's end of a [`FedSource`].
pub struct Feed<T>(Arc<Mutex<FeedState<T>>>);

pub fn fed_source<T>() -> (FedSource<T>, Feed<T>) {
    let state = Arc::new(Mutex::new(FeedState {
        items: VecDeque::new(),
        closed: false,
        waker: None,
    }));
    (FedSource(Arc::clone(&state)), Feed(state))
}

impl<T> Feed<T> {
    /// Changes the state, then wakes the source's consumer if it waits.
    fn update(&self, change: impl FnOnce(&mut FeedState<T>)) {
        let waker = {
            let mut state = lock(&self.0);
            change(&mut state);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Adds an item.
    pub fn push(&self, item: T) {
        self.update(|state| state.items.push_back(item));
    }

    /// Ends the source once the pushed items are taken.
    pub fn close(&self) {
        self.update(|state| state.closed = true);
    }

    /// Items pushed and not yet taken by the consumer.
    pub fn unread(&self) -> usize {
        lock(&self.0).items.len()
    }

    /// Whether the consumer is waiting for an item (its waker is registered).
    pub fn has_waiter(&self) -> bool {
        lock(&self.0).waker.is_some()
    }
}

impl<T> Stream for FedSource<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut state = lock(&self.0);
        if let Some(item) = state.items.pop_front() {
            Poll::Ready(Some(item))
        } else if state.closed {
            Poll::Ready(None)
        } else {
            state.waker = Some(cx.waker().clone());
            Poll::Pending
        }
    }
}
