//! Contract point 13, the allocation bound: the adapter's storage (slots,
//! wakers, waiting queue, reorder window, ready list) grows to its budgets once
//! and is then reused, so running 1 000 or 200 000 items through the same
//! budgets performs the same number of allocations.
//!
//! One test in this binary: the counting allocator is process-wide, and it counts
//! only on the thread that turned counting on, so libtest's own threads do not
//! disturb the figures.

use std::task::{Context, Poll};

use bounded_buffered::BoundedStreamExt;
use futures::stream::{self, Stream, StreamExt};
use futures_test::task::noop_waker;
use support::yield_then;

use crate::counting::{allocations, counting};

/// Allocations made while building the stream and draining `items` items
/// through it (ordered when `window` is given). Polls by hand with a waker that
/// does not allocate.
fn allocations_for(items: u64, window: Option<usize>) -> u64 {
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    counting(true);
    let before = allocations();
    // Each item completes with its id after waking itself 0..=4 times, in a
    // pattern that is not a multiple of the worker count: items finish out of
    // input order, slots are woken and reused, and ordered outputs are held.
    // `yield_then` allocates nothing itself.
    let source = stream::iter(0..items).map(|id| yield_then((id * 7 % 5) as usize, id));
    let mut stream = source.bounded(4, 8);
    if let Some(window) = window {
        stream = stream.ordered(window);
    }
    let mut stream = std::pin::pin!(stream);
    let mut sum = 0u64;
    let mut count = 0u64;
    loop {
        match stream.as_mut().poll_next(&mut cx) {
            Poll::Ready(Some(id)) => {
                sum += id;
                count += 1;
            }
            Poll::Ready(None) => break,
            Poll::Pending => {}
        }
    }
    let after = allocations();
    counting(false);
    assert_eq!(count, items);
    assert_eq!(sum, items * (items - 1) / 2);
    after - before
}

#[test]
fn allocations_do_not_grow_with_the_number_of_items() {
    for window in [None, Some(4), Some(16)] {
        let small = allocations_for(1_000, window);
        let large = allocations_for(200_000, window);
        println!("window {window:?}: {small} allocations for 1 000 items, {large} for 200 000");
        assert_eq!(
            small, large,
            "window {window:?}: allocations grow with the items"
        );
        assert!(
            small > 0,
            "the counting allocator saw nothing: the test would prove nothing"
        );
    }
}
