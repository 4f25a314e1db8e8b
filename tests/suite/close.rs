//! `close()`, in both modes (contract point 22): from the call on nothing more
//! is pulled; every running and waiting item finishes and is yielded, in input
//! order when ordered; then the stream ends. In place the source stays with
//! the stream, and `into_inner` resumes it at the first item never pulled;
//! spawned, `close` drops it (and a stream closed before `spawn_on` stays
//! closed), and the tasks end with the stream.
//!
//! Deterministic: the futures are gates the test opens, and spawned streams
//! run their tasks on an executor the test steps (`support::drive!`).

use std::future::ready;
use std::task::Poll;

use bounded_buffered::BoundedStreamExt;
use futures::StreamExt;
use futures::executor::block_on;
use futures::stream::Stream;
use support::{Gates, OrderedIf, both_modes, counted, drain_ready, drive, fed_source, poll_once};

both_modes! {
    /// Point 22: nothing more is pulled, and exactly what was pulled and not
    /// yet yielded comes out, each once.
    fn close_pulls_nothing_more_and_yields_everything_pulled(mode) {
        // (workers, waiting, window, the item that completes first)
        let cases = [
            (1, 0, None, 0), (1, 3, None, 0), (3, 0, None, 0),
            (4, 4, None, 0), (3, 2, None, 1), (3, 2, Some(3), 0),
        ];
        for (workers, waiting, window, first) in cases {
            let case = format!("W={workers} Q={waiting} window={window:?}");
            let gates = Gates::new();
            let stream = gates.tracked_source(1_000).bounded(workers, waiting);
            let mut run = drive!(mode, stream.ordered_if(window));
            assert!(run.poll().is_pending());
            // Its output is yielded; its freed start takes a waiting item, and
            // the queue is topped up again.
            gates.open(first);
            assert!(matches!(run.poll(), Poll::Ready(Some(output)) if output.id == first));
            let pulled = gates.pulled();
            assert_eq!(pulled, workers + waiting + 1, "{case}");

            run.close();
            // Spawned, close drops the source; in place `into_inner` hands it
            // back (see below).
            let source_drops = usize::from(mode.is_spawned());
            assert_eq!(gates.counts().source_drops, source_drops, "{case}");
            gates.open_all();
            let rest: Vec<usize> = run.take_to_end().iter().map(|output| output.id).collect();
            if window.is_some() {
                assert!(rest.is_sorted(), "{case}: ordered output: {rest:?}");
            }
            let mut all = rest.clone();
            all.push(first);
            all.sort_unstable();
            assert_eq!(all, (0..pulled).collect::<Vec<_>>(), "{case}");
            assert!(run.is_terminated());
            assert_eq!(gates.pulled(), pulled, "{case}: nothing pulled after close");
            assert_eq!(gates.started(), pulled);
            assert_eq!(run.stats().pulled as usize, pulled);
            if mode.is_spawned() {
                run.settle();
                assert_eq!(run.executor().live_tasks(), 0, "tasks outlived the stream");
            }
            run.drop_stream();
            gates.check_all_dropped_once();
        }
    }

    /// Point 22: a closed ordered stream drains in input order.
    fn closed_ordered_streams_drain_in_input_order(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(1_000).bounded(2, 3).ordered(4));
        assert!(run.poll().is_pending());
        assert_eq!(gates.pulled(), 5);
        run.close();
        for id in (0..5).rev() {
            gates.open(id);
        }
        assert_eq!(run.take_ready(), [0, 1, 2, 3, 4]);
        assert!(run.is_terminated());
        assert_eq!(gates.pulled(), 5);
    }

    /// Point 22: closed before the first poll (spawned: before or after
    /// `spawn_on`), the stream pulls and spawns nothing and ends at once.
    fn close_before_the_first_poll_ends_the_stream_at_once(mode) {
        for close_before_driving in [true, false] {
            let gates = Gates::new();
            let (source, counts) = counted(gates.source(10));
            let stream = source.bounded(2, 2);
            if close_before_driving {
                stream.close();
            }
            let mut run = drive!(mode, stream);
            if !close_before_driving {
                run.close();
            }
            assert_eq!(run.poll_alone(), Poll::Ready(None));
            assert_eq!((counts.pulled(), counts.polls()), (0, 0));
            // Spawned, the source is dropped at once; in place `into_inner`
            // hands it back untouched (see below).
            assert_eq!(gates.counts().source_drops, usize::from(mode.is_spawned()));
            if mode.is_spawned() {
                assert_eq!(run.spawns(), 0);
            }
        }
    }

    /// Point 22 with point 14: an `async` source is `!Unpin`, and so is the
    /// stream, reached through its pin.
    fn close_works_on_a_stream_that_is_not_unpin(mode) {
        let gates = Gates::new();
        let source = futures::stream::unfold(0usize, {
            let gates = gates.clone();
            move |id| {
                let gate = gates.gate(id);
                async move { Some((gate, id + 1)) }
            }
        });
        let mut run = drive!(mode, source.bounded(2, 1));
        assert!(run.poll().is_pending());
        run.close();
        gates.open_all();
        let mut out = run.take_to_end();
        out.sort_unstable();
        assert_eq!(out, [0, 1, 2], "the three items pulled");
    }

    /// Point 22: `close` wakes a consumer that waits only on its source,
    /// before and after anything was pulled.
    fn close_wakes_a_consumer_parked_on_a_pending_source(mode) {
        for pulled_first in [false, true] {
            let (source, feed) = fed_source::<u32>();
            let mut run = drive!(mode, source.map(ready).bounded(2, 2));
            assert!(run.poll().is_pending());
            if pulled_first {
                feed.push(7);
                assert_eq!(run.poll(), Poll::Ready(Some(7)));
                assert!(run.poll().is_pending());
            }
            // Everything pulled was yielded; the source is pending and holds
            // the waker of whoever pulls (spawned: a task); the consumer parks.
            assert!(feed.has_waiter());
            let wakes = run.wakes();
            run.close();
            assert_eq!(run.wakes(), wakes + 1, "close wakes the parked consumer");
            assert_eq!(run.poll(), Poll::Ready(None));
            // An item fed after the close is never pulled.
            feed.push(8);
            run.settle();
            assert_eq!(feed.unread(), 1, "not pulled after close");
            assert_eq!(run.stats().pulled, u64::from(pulled_first));
        }
    }

    /// Point 22: items pulled before a close while the source is pending
    /// are all yielded; what the source produces later is not pulled.
    fn close_while_the_source_is_pending_keeps_the_items_already_pulled(mode) {
        let gates = Gates::new();
        let (source, feed) = fed_source();
        let mut run = drive!(mode, source.bounded(2, 2));
        for id in 0..3 {
            feed.push(gates.gate(id));
        }
        assert!(run.poll().is_pending());
        run.close();
        feed.push(gates.gate(3));
        for id in 0..4 {
            gates.open(id);
        }
        let mut out = run.take_ready();
        out.sort_unstable();
        assert_eq!(out, [0, 1, 2]);
        assert!(run.is_terminated());
        assert_eq!(feed.unread(), 1);
    }
}

/// Point 22, in place: after `close` and the drain, `into_inner` hands the
/// source back positioned at the first item never pulled; closed before the
/// first poll, untouched.
#[test]
fn into_inner_after_close_resumes_the_source_at_the_first_item_never_pulled() {
    for (workers, waiting) in [(1, 0), (1, 3), (3, 0), (4, 4)] {
        let gates = Gates::new();
        let mut stream = gates.source(1_000).bounded(workers, waiting);
        assert_eq!(poll_once(&mut stream), Poll::Pending);
        gates.open(0);
        assert_eq!(poll_once(&mut stream), Poll::Ready(Some(0)));
        stream.close();
        gates.open_all();
        drain_ready(&mut stream);
        assert!(futures::stream::FusedStream::is_terminated(&stream));
        let pulled = gates.pulled();
        let mut source = stream.into_inner();
        let next = block_on(source.next()).expect("items left");
        gates.open(pulled);
        assert_eq!(block_on(next), pulled);
    }

    let gates = Gates::new();
    let mut stream = gates.source(10).bounded(2, 2);
    stream.close();
    assert_eq!(poll_once(&mut stream), Poll::Ready(None));
    assert_eq!(stream.into_inner().size_hint(), (10, Some(10)));
}
