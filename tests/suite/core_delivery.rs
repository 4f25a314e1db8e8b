//! Contract point 1: every output is yielded exactly once, and the stream ends
//! (then stays ended) only after the source ended and every output was yielded.

// Under `--cfg loom` the crate uses loom's primitives, which work only inside
// `loom::model`, and smol is not built: these tests are for the normal build.

use std::task::Poll;

use bounded_buffered::BoundedStreamExt;
use futures::stream::{self, FusedStream, Stream};
use futures::{StreamExt, executor::block_on};
use support::{Gates, Poller, Rng, assert_all_done, counted, fed_source, fresh_stats};

#[test]
fn every_output_is_yielded_exactly_once_for_any_completion_order() {
    for seed in 0..20 {
        for ordered in [false, true] {
            let count = 60;
            let gates = Gates::new();
            let (source, counts) = counted(gates.source(count));
            let mut stream = source.bounded(4, 3);
            if ordered {
                stream = stream.ordered(6);
            }
            let poller = Poller::new();
            let mut rng = Rng::new(seed);
            let mut outputs = poller.drain_ready(&mut stream);
            // Open a random started gate at a time until every gate was opened.
            let mut opened = vec![false; count];
            while opened.iter().any(|open| !open) {
                let startable: Vec<usize> = (0..count)
                    .filter(|&id| !opened[id] && gates.is_started(id))
                    .collect();
                assert!(
                    !startable.is_empty(),
                    "seed {seed}: nothing runs, the stream stalled"
                );
                let id = startable[rng.below(startable.len())];
                opened[id] = true;
                gates.open(id);
                outputs.extend(poller.drain_ready(&mut stream));
            }
            assert_eq!(poller.poll(&mut stream), Poll::Ready(None), "seed {seed}");
            assert_eq!(outputs.len(), count, "seed {seed}: outputs {outputs:?}");
            if ordered {
                assert_eq!(outputs, (0..count).collect::<Vec<_>>(), "seed {seed}");
            } else {
                let mut sorted = outputs.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..count).collect::<Vec<_>>(), "seed {seed}");
            }
            assert_eq!(counts.pulled(), count);
            assert_all_done(&stream.stats(), count);
        }
    }
}

#[test]
fn many_ready_futures_are_each_yielded_once() {
    let outputs: Vec<u32> = block_on(
        stream::iter(0..5_000u32)
            .map(|i| async move { i })
            .bounded(7, 5)
            .collect(),
    );
    let mut sorted = outputs.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..5_000).collect::<Vec<_>>());
}

#[test]
fn does_not_end_while_the_source_has_not_ended() {
    let (source, feed) = fed_source();
    let mut stream = source.bounded(2, 1);
    let poller = Poller::new();
    feed.push(std::future::ready(1));
    feed.push(std::future::ready(2));
    let mut outputs = poller.drain_ready(&mut stream);
    outputs.sort_unstable();
    assert_eq!(outputs, [1, 2]);
    // Nothing runs, waits or is held, but the source may still produce.
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert!(!stream.is_terminated());
    let wakes = poller.wakes();
    feed.push(std::future::ready(3));
    assert_eq!(
        poller.wakes(),
        wakes + 1,
        "the source's wake must reach the consumer"
    );
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(3)));
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    feed.close();
    assert_eq!(poller.wakes(), wakes + 2);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    assert!(stream.is_terminated());
}

#[test]
fn does_not_end_while_a_future_runs_or_an_output_is_held() {
    for ordered in [false, true] {
        let gates = Gates::new();
        let mut stream = gates.source(3).bounded(3, 0);
        if ordered {
            stream = stream.ordered(3);
        }
        let poller = Poller::new();
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        // The source has ended by now: it had three items and three workers.
        gates.open(2);
        gates.open(1);
        let first = poller.drain_ready(&mut stream);
        if ordered {
            assert_eq!(first, [] as [usize; 0], "the head is still running");
            assert_eq!(stream.stats().held, 2);
        } else {
            assert_eq!(first.len(), 2);
        }
        assert!(!stream.is_terminated());
        gates.open(0);
        let rest = poller.drain_ready(&mut stream);
        if ordered {
            assert_eq!(rest, [0, 1, 2]);
        } else {
            assert_eq!(rest, [0]);
        }
        assert!(stream.is_terminated(), "drain_ready stops at the end");
    }
}

#[test]
fn is_terminated_only_once_none_was_returned() {
    let mut stream = stream::iter([10, 20])
        .map(|i| async move { i })
        .bounded(1, 0);
    assert!(!stream.is_terminated(), "before the first poll");
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(10)));
    assert!(!stream.is_terminated());
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(20)));
    // Every output is out, but `None` was not returned yet.
    assert!(!stream.is_terminated());
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    assert!(stream.is_terminated());
}

#[test]
fn returns_none_forever_and_never_polls_the_source_again() {
    let (source, counts) = counted(stream::iter(0..3).map(|i| async move { i }));
    let mut stream = source.bounded(2, 2);
    let poller = Poller::new();
    let outputs = poller.drain_ready(&mut stream);
    assert_eq!(outputs.len(), 3);
    assert!(stream.is_terminated());
    let source_polls = counts.polls();
    for _ in 0..10 {
        assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
        assert!(stream.is_terminated());
    }
    assert_eq!(
        counts.polls(),
        source_polls,
        "a source that ended must not be polled again"
    );
    assert_eq!(stream.size_hint(), (0, Some(0)));
}

#[test]
fn an_empty_source_ends_at_once() {
    for ordered in [false, true] {
        let (source, counts) = counted(stream::empty::<std::future::Ready<u8>>());
        let mut stream = source.bounded(3, 2);
        if ordered {
            stream = stream.ordered(4);
        }
        let poller = Poller::new();
        assert!(!stream.is_terminated());
        assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
        assert!(stream.is_terminated());
        assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
        assert_eq!(counts.polls(), 1);
        assert_eq!(stream.stats(), fresh_stats(3, 2));
        assert_eq!(poller.wakes(), 0);
    }
}

#[test]
fn a_source_that_is_pending_first_then_ends_yields_nothing() {
    let (source, feed) = fed_source::<std::future::Ready<u8>>();
    let mut stream = source.bounded(1, 0);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert!(!stream.is_terminated());
    feed.close();
    assert_eq!(poller.wakes(), 1);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    assert!(stream.is_terminated());
}
