//! Contract points 9, 10 and 11: dropping the stream drops everything it owns
//! exactly once and at once; panics from futures and the source propagate and
//! leave a stream that still drops cleanly and refuses to be polled again; bad
//! budgets panic.

// Under `--cfg loom` the crate uses loom's primitives, which work only inside
// `loom::model`, and smol is not built: these tests are for the normal build.

use std::sync::Arc;
use std::task::{Poll, Wake, Waker};

use bounded_buffered::BoundedStreamExt;
use futures::StreamExt;
use futures::stream::{self, Stream};
use support::{Fault, Gates, INJECTED, Output, Poller, caught, counted};

/// A waker that only counts how many handles to it exist.
struct Idle;

impl Wake for Idle {
    fn wake(self: Arc<Self>) {}
}

#[test]
fn dropping_drops_source_running_waiting_and_held_each_exactly_once() {
    for ordered in [false, true] {
        let gates = Gates::new();
        let (source, counts) = counted(gates.tracked_source(usize::MAX));
        let mut stream = source.bounded(2, 3);
        if ordered {
            stream = stream.ordered(4);
        }
        let idle = Arc::new(Idle);
        let waker = Waker::from(Arc::clone(&idle));
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(stream.poll_next_unpin(&mut cx).is_pending());

        // Unordered: both complete, one is taken, one held, item 2 starts.
        // Ordered: item 1 completes behind the running head and is held.
        let taken = if ordered {
            gates.open(1);
            assert!(stream.poll_next_unpin(&mut cx).is_pending());
            None
        } else {
            gates.open(0);
            gates.open(1);
            match stream.poll_next_unpin(&mut cx) {
                Poll::Ready(Some(output)) => Some(output),
                other => panic!("expected an output, got pending: {}", other.is_pending()),
            }
        };
        let stats = stream.stats();
        assert_eq!(
            (stats.active, stats.waiting, stats.held),
            (if ordered { 2 } else { 1 }, 3, 1),
            "ordered={ordered}"
        );
        let pulled = counts.pulled();
        // Either way one worker was freed and refilled from the waiting queue,
        // which pulled one more: workers + waiting + 1.
        assert_eq!(pulled, 2 + 3 + 1);
        let completed = if ordered { 1 } else { 2 };
        let drops = gates.counts();
        assert_eq!(
            drops.futures_dropped, completed,
            "completed futures are dropped at once"
        );
        assert_eq!(drops.outputs_dropped, 0);
        assert_eq!(drops.source_drops, 0);

        drop(stream);
        let drops = gates.counts();
        assert_eq!(drops.source_drops, 1, "ordered={ordered}");
        assert_eq!(drops.futures_dropped, pulled, "ordered={ordered}");
        for id in 0..pulled {
            assert_eq!(gates.drops(id), 1, "ordered={ordered}: item {id}");
        }
        let held_outputs = 1;
        assert_eq!(drops.outputs_dropped, held_outputs, "ordered={ordered}");
        drop(taken);
        let drops = gates.counts();
        assert_eq!(drops.outputs_dropped, drops.outputs_made);
        assert_eq!(
            Arc::strong_count(&idle),
            2,
            "only the test's own waker may still refer to the task"
        );
        drop(waker);
        assert_eq!(Arc::strong_count(&idle), 1);

        // A waker kept by a future that was dropped may still fire: harmless.
        let running = (0..pulled).find(|&id| gates.waker(id).is_some());
        gates.nudge(running.expect("a future was running at drop time"));
    }
}

#[test]
fn into_inner_drops_everything_but_the_source() {
    let gates = Gates::new();
    let (source, counts) = counted(gates.tracked_source(usize::MAX));
    let mut stream = source.bounded(3, 2);
    let poller = Poller::new();
    assert!(poller.poll(&mut stream).is_pending());
    let mut source = stream.into_inner();
    assert_eq!(gates.counts().futures_dropped, 5);
    assert_eq!(gates.counts().source_drops, 0);
    // The source resumes where the adapter left it.
    let next = futures::executor::block_on(source.next()).expect("an endless source");
    drop(next);
    assert_eq!(counts.pulled(), 6);
    assert_eq!(gates.drops(5), 1);
    drop(source);
    assert_eq!(gates.counts().source_drops, 1);
}

/// Polls once, expecting a panic; returns its message.
fn poll_expecting_panic<S: Stream + Unpin>(poller: &Poller, stream: &mut S) -> String {
    match caught(|| poller.poll(stream)) {
        Ok(poll) => panic!("expected a panic, got pending: {}", poll.is_pending()),
        Err(message) => message,
    }
}

fn check_after_panic<S: Stream + Unpin>(
    poller: &Poller,
    mut stream: S,
    gates: &Gates,
    pulled: usize,
    outputs_taken: Vec<Output>,
) {
    let again = poll_expecting_panic(poller, &mut stream);
    assert!(again.contains("after a panic"), "message: {again}");
    drop(stream);
    assert_eq!(gates.counts().futures_dropped, pulled);
    for id in 0..pulled {
        assert_eq!(gates.drops(id), 1, "item {id}");
    }
    drop(outputs_taken);
    let drops = gates.counts();
    assert_eq!(drops.outputs_dropped, drops.outputs_made);
}

#[test]
fn a_panic_in_a_running_future_propagates_and_drops_cleanly() {
    for ordered in [false, true] {
        let gates = Gates::with_fault(Fault::PollOf(2));
        let (source, counts) = counted(gates.tracked_source(usize::MAX));
        let mut stream = source.bounded(3, 2);
        if ordered {
            stream = stream.ordered(5);
        }
        let poller = Poller::new();
        assert!(poller.poll(&mut stream).is_pending());
        // Item 1 completes and is held (ordered) or taken (unordered) first.
        gates.open(1);
        let mut taken = Vec::new();
        if let Poll::Ready(Some(output)) = poller.poll(&mut stream) {
            assert_eq!(output.id, 1);
            taken.push(output);
        }
        gates.open(2);
        let message = poll_expecting_panic(&poller, &mut stream);
        assert_eq!(message, format!("{INJECTED} in the poll of item 2"));
        let pulled = counts.pulled();
        check_after_panic(&poller, stream, &gates, pulled, taken);
        if ordered {
            let made = gates.counts().outputs_made;
            assert_eq!(made, 1, "the held output of item 1");
        }
    }
}

#[test]
fn a_panic_on_a_futures_first_poll_propagates_and_drops_cleanly() {
    for ordered in [false, true] {
        let gates = Gates::with_fault(Fault::FirstPollOf(4));
        let (source, counts) = counted(gates.tracked_source(usize::MAX));
        let mut stream = source.bounded(2, 3);
        if ordered {
            stream = stream.ordered(2);
        }
        let poller = Poller::new();
        assert!(poller.poll(&mut stream).is_pending());
        let mut taken = Vec::new();
        for id in 0..2 {
            gates.open(id);
            match poller.poll(&mut stream) {
                Poll::Ready(Some(output)) => taken.push(output),
                _ => panic!("item {id} should be yielded"),
            }
        }
        // Item 4 starts when item 2 completes; its first poll panics, and the
        // output of item 2, already taken off the stream, is lost with the poll.
        gates.open(2);
        let message = poll_expecting_panic(&poller, &mut stream);
        assert_eq!(message, format!("{INJECTED} in the first poll of item 4"));
        let pulled = counts.pulled();
        check_after_panic(&poller, stream, &gates, pulled, taken);
    }
}

#[test]
fn a_panic_in_the_source_propagates_and_drops_cleanly() {
    for ordered in [false, true] {
        // The source panics on its seventh pull, instead of yielding item 6.
        let gates = Gates::with_fault(Fault::SourceAt(6));
        let (source, counts) = counted(gates.tracked_source(usize::MAX));
        let mut stream = source.bounded(3, 3);
        if ordered {
            stream = stream.ordered(3);
        }
        let poller = Poller::new();
        assert!(poller.poll(&mut stream).is_pending());
        assert_eq!(counts.pulled(), 6);
        gates.open(0);
        let message = poll_expecting_panic(&poller, &mut stream);
        assert_eq!(message, format!("{INJECTED} in the source at item 6"));
        assert_eq!(gates.counts().source_drops, 0);
        let pulled = counts.pulled();
        check_after_panic(&poller, stream, &gates, pulled, Vec::new());
        assert_eq!(gates.counts().source_drops, 1);
    }
}

#[test]
#[should_panic(expected = "workers == 0")]
fn zero_workers_panics() {
    let _ = stream::iter([std::future::ready(())]).bounded(0, 4);
}

#[test]
#[should_panic(expected = "workers == 0")]
fn zero_workers_panics_even_with_no_waiting() {
    let _ = stream::empty::<std::future::Ready<()>>().bounded(0, 0);
}

#[test]
#[should_panic(expected = "window == 0")]
fn zero_window_panics() {
    let _ = stream::iter([std::future::ready(())])
        .bounded(2, 0)
        .ordered(0);
}

#[test]
#[should_panic(expected = "before the stream is first polled")]
fn ordered_after_the_first_poll_panics() {
    let gates = Gates::new();
    let mut stream = gates.source(3).bounded(2, 0);
    assert!(Poller::new().poll(&mut stream).is_pending());
    let _ = stream.ordered(2);
}

#[test]
#[should_panic(expected = "before the stream is first polled")]
fn ordered_after_the_stream_ended_panics() {
    let mut stream = stream::empty::<std::future::Ready<()>>().bounded(2, 0);
    assert_eq!(Poller::new().poll(&mut stream), Poll::Ready(None));
    let _ = stream.ordered(2);
}

#[test]
fn calling_ordered_twice_before_polling_uses_the_last_window() {
    let gates = Gates::new();
    let (source, counts) = counted(gates.source(10));
    let mut stream = source.bounded(8, 0).ordered(2).ordered(3);
    assert!(Poller::new().poll(&mut stream).is_pending());
    assert_eq!(counts.pulled(), 3);
}
