//! Polling a stream by hand with a waker that does nothing: for streams whose
//! progress the test drives some other way (gates it opens, an executor it
//! steps). A test that counts the consumer's wakes drives the stream with
//! [`Driven`](super::Driven) instead.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use futures::task::noop_waker_ref;

/// Polls the stream once.
pub fn poll_once<S: Stream + Unpin + ?Sized>(stream: &mut S) -> Poll<Option<S::Item>> {
    Pin::new(stream).poll_next(&mut Context::from_waker(noop_waker_ref()))
}

/// Polls until the stream is `Pending` or ends; returns the outputs seen.
pub fn drain_ready<S: Stream + Unpin + ?Sized>(stream: &mut S) -> Vec<S::Item> {
    let mut outputs = Vec::new();
    while let Poll::Ready(Some(output)) = poll_once(stream) {
        outputs.push(output);
    }
    outputs
}
