//! `Spawned::close`: nothing more is pulled once it returns; every item pulled
//! before is finished and yielded; then the stream ends and its tasks with it.
//!
//! Deterministic: the tasks run on an executor the test steps by hand, the
//! futures are gates the test opens.

use std::task::Poll;

use bounded_buffered::BoundedStreamExt;
use futures::StreamExt;
use futures::future::ready;
use futures::stream::FusedStream;
use support::{Gates, Poller, StepExecutor, fed_source, poll_once};

#[test]
fn closed_before_the_first_poll_it_spawns_and_pulls_nothing_and_ends() {
    let gates = Gates::new();
    let stepper = StepExecutor::new();
    let mut stream = gates.source(10).bounded(2, 2).spawn_on(stepper.spawner());
    stream.close();
    assert!(matches!(poll_once(&mut stream), Poll::Ready(None)));
    assert_eq!(stepper.spawns(), 0);
    assert_eq!(gates.pulled(), 0);
    assert_eq!(gates.counts().source_drops, 1, "the source was dropped");
}

#[test]
fn closed_in_place_before_spawn_on_it_stays_closed() {
    let gates = Gates::new();
    let stepper = StepExecutor::new();
    let stream = gates.source(10).bounded(2, 2);
    stream.close();
    let mut stream = stream.spawn_on(stepper.spawner());
    assert!(matches!(poll_once(&mut stream), Poll::Ready(None)));
    assert_eq!(stepper.spawns(), 0);
    assert_eq!(gates.pulled(), 0);
    assert_eq!(gates.counts().source_drops, 1, "the source was dropped");
}

#[test]
fn closed_midway_it_yields_exactly_what_was_pulled_and_pulls_nothing_more() {
    for ordered in [false, true] {
        let (workers, waiting) = (3, 2);
        let gates = Gates::new();
        let mut stepper = StepExecutor::new();
        let stream = gates.tracked_source(100).bounded(workers, waiting);
        let stream = if ordered {
            stream.ordered(workers)
        } else {
            stream
        };
        let mut stream = stream.spawn_on(stepper.spawner());
        assert!(poll_once(&mut stream).is_pending());
        stepper.run_until_stalled();
        // Item 1 completes and is yielded; its freed start takes a waiting
        // item, and the queue is topped up again.
        gates.open(if ordered { 0 } else { 1 });
        stepper.run_until_stalled();
        let first = match poll_once(&mut stream) {
            Poll::Ready(Some(output)) => output.id,
            other => panic!("expected an output, got {other:?}"),
        };
        stepper.run_until_stalled();
        let pulled = gates.pulled();
        assert_eq!(pulled, workers + waiting + 1, "ordered: {ordered}");

        stream.close();
        assert_eq!(gates.counts().source_drops, 1, "close drops the source");
        gates.open_all();
        stepper.run_until_stalled();
        let mut rest = Vec::new();
        loop {
            match poll_once(&mut stream) {
                Poll::Ready(Some(output)) => rest.push(output.id),
                Poll::Ready(None) => break,
                Poll::Pending => stepper.run_until_stalled(),
            }
        }
        // Exactly the items pulled and not yet yielded, each once, and
        // nothing pulled after the close.
        let mut all: Vec<usize> = rest.clone();
        all.push(first);
        all.sort_unstable();
        assert_eq!(all, (0..pulled).collect::<Vec<_>>(), "ordered: {ordered}");
        if ordered {
            assert!(rest.is_sorted(), "ordered output: {rest:?}");
        }
        assert_eq!(gates.pulled(), pulled);
        assert_eq!(stream.stats().pulled as usize, pulled);
        assert!(stream.is_terminated());
        stepper.run_until_stalled();
        assert_eq!(stepper.live_tasks(), 0, "tasks outlived the stream");
        drop(stream);
        gates.check_all_dropped_once();
    }
}

#[test]
fn close_wakes_a_consumer_parked_on_a_pending_source() {
    let (source, feed) = fed_source::<u32>();
    let mut stepper = StepExecutor::new();
    let mut stream = source.map(ready).bounded(2, 2).spawn_on(stepper.spawner());
    let poller = Poller::new();
    assert!(poller.poll(&mut stream).is_pending());
    stepper.run_until_stalled();
    feed.push(7);
    stepper.run_until_stalled();
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(7)));
    // Everything pulled was yielded; the source is pending and holds a task's
    // waker; the consumer parks.
    assert!(poller.poll(&mut stream).is_pending());
    stepper.run_until_stalled();
    let wakes = poller.wakes();
    stream.close();
    assert_eq!(poller.wakes(), wakes + 1, "close wakes the parked consumer");
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    // An item fed after the close is never pulled.
    feed.push(8);
    stepper.run_until_stalled();
    assert_eq!(feed.unread(), 1);
    assert_eq!(stream.stats().pulled, 1);
}
