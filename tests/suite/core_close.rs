//! `close()` in place: from the call on nothing more is pulled; every running and
//! waiting item finishes and is yielded; then the stream ends, and `into_inner`
//! resumes the source at the first item never pulled (contract point 22).

// Under `--cfg loom` the crate uses loom's primitives, which work only inside
// `loom::model`, and smol is not built: these tests are for the normal build.

use std::pin::Pin;
use std::task::Poll;

use bounded_buffered::BoundedStreamExt;
use futures::StreamExt;
use futures::stream::{FusedStream, Stream};
use support::{Gates, Poller, counted, fed_source};

#[test]
fn close_pulls_nothing_more_and_yields_everything_pulled() {
    for (workers, waiting) in [(1, 0), (1, 3), (3, 0), (4, 4)] {
        let gates = Gates::new();
        let (source, counts) = counted(gates.source(1_000));
        let mut stream = source.bounded(workers, waiting);
        let poller = Poller::new();
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        gates.open(0);
        assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(0)));
        let pulled = counts.pulled();
        assert_eq!(pulled, workers + waiting + 1, "W={workers} Q={waiting}");

        stream.close();
        for id in 1..pulled {
            gates.open(id);
        }
        let mut rest: Vec<usize> = poller.drain_ready(&mut stream);
        rest.sort_unstable();
        // Exactly `pulled - already yielded` outputs, then the end.
        assert_eq!(rest, (1..pulled).collect::<Vec<_>>());
        assert!(stream.is_terminated());
        assert_eq!(counts.pulled(), pulled, "nothing pulled after close");
        assert_eq!(gates.started(), pulled);

        // The source resumes at the first item the stream never pulled.
        let mut source = stream.into_inner();
        let next = futures::executor::block_on(source.next()).expect("items left");
        gates.open(pulled);
        assert_eq!(futures::executor::block_on(next), pulled);
    }
}

#[test]
fn closed_ordered_streams_drain_in_input_order() {
    let gates = Gates::new();
    let (source, counts) = counted(gates.source(1_000));
    let mut stream = source.bounded(2, 3).ordered(4);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(counts.pulled(), 5);
    stream.close();
    for id in (0..5).rev() {
        gates.open(id);
    }
    assert_eq!(poller.drain_ready(&mut stream), [0, 1, 2, 3, 4]);
    assert!(stream.is_terminated());
    assert_eq!(counts.pulled(), 5);
}

#[test]
fn close_before_the_first_poll_ends_the_stream_at_once() {
    let gates = Gates::new();
    let (source, counts) = counted(gates.source(10));
    let mut stream = source.bounded(2, 2);
    stream.close();
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    assert_eq!((counts.pulled(), counts.polls()), (0, 0));
    assert_eq!(stream.into_inner().size_hint(), (10, Some(10)));
}

#[test]
fn close_works_through_a_pinned_reference() {
    // An `async` source is `!Unpin`, and so is the stream: reach it through
    // `Pin<Box<_>>::as_mut()`.
    let gates = Gates::new();
    let source = futures::stream::unfold(0usize, {
        let gates = gates.clone();
        move |id| {
            let gate = gates.gate(id);
            async move { Some((gate, id + 1)) }
        }
    });
    let mut stream: Pin<Box<_>> = Box::pin(source.bounded(2, 1));
    let poller = Poller::new();
    assert_eq!(poller.poll_pinned(stream.as_mut()), Poll::Pending);
    stream.as_mut().close();
    for id in 0..3 {
        gates.open(id);
    }
    let mut out = Vec::new();
    while let Poll::Ready(Some(id)) = poller.poll_pinned(stream.as_mut()) {
        out.push(id);
    }
    out.sort_unstable();
    assert_eq!(out, [0, 1, 2]);
    assert!(stream.is_terminated());
}

#[test]
fn close_wakes_a_stream_that_waits_only_on_its_source() {
    let (source, feed) = fed_source::<std::future::Ready<u32>>();
    let mut stream = source.bounded(2, 2);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert!(feed.has_waiter());
    let wakes = poller.wakes();
    stream.close();
    assert_eq!(poller.wakes(), wakes + 1, "the consumer is woken");
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    feed.push(std::future::ready(1));
    assert_eq!(feed.unread(), 1, "not pulled after close");
}

#[test]
fn close_while_the_source_is_pending_keeps_the_items_already_pulled() {
    let gates = Gates::new();
    let (source, feed) = fed_source();
    let mut stream = source.bounded(2, 2);
    let poller = Poller::new();
    feed.push(gates.gate(0));
    feed.push(gates.gate(1));
    feed.push(gates.gate(2));
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    stream.close();
    feed.push(gates.gate(3));
    for id in 0..4 {
        gates.open(id);
    }
    let mut out = poller.drain_ready(&mut stream);
    out.sort_unstable();
    assert_eq!(out, [0, 1, 2]);
    assert!(stream.is_terminated());
    assert_eq!(feed.unread(), 1);
}
