//! Contract points 9, 10 and 11: dropping the stream drops everything it owns
//! exactly once and at once; panics from futures and the source propagate and
//! leave a stream that still drops cleanly and refuses to be polled again; bad
//! budgets panic.

// Under `--cfg loom` the crate uses loom's primitives, which work only inside
// `loom::model`, and smol is not built: these tests are for the normal build.
#![cfg(not(loom))]

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::task::{Poll, Wake, Waker};

use bounded_buffered::BoundedStreamExt;
use common::{Counter, DropProbe, Gates, Poller, counted, panic_message};
use futures::StreamExt;
use futures::stream::{self, Stream};

/// Counts drops of everything a stream can own besides its source.
#[derive(Clone, Default)]
struct Drops {
    /// Futures, running or waiting (each also counted per id by its gate).
    futures: Counter,
    /// Outputs made by completed futures.
    outputs_made: Counter,
    /// Outputs dropped, wherever that happened.
    outputs: Counter,
}

/// What the items of these tests panic on.
#[derive(Clone, Copy, Default)]
struct PanicAt {
    /// This item panics on its first poll, before it waits on its gate.
    first_poll: Option<usize>,
    /// This item panics once its gate opens.
    completion: Option<usize>,
}

/// Output of an item: its id, and a probe that counts the output's drop.
struct Output {
    id: usize,
    _probe: DropProbe,
}

/// A source of gated items `0..` that count their own and their outputs' drops.
fn items(
    gates: Gates,
    drops: Drops,
    panic_at: PanicAt,
) -> impl Stream<Item = impl Future<Output = Output>> + Unpin {
    stream::iter(0..).map(move |id| {
        let gate = gates.gate(id);
        let probe = DropProbe::new(&drops.futures);
        let drops = drops.clone();
        async move {
            let _probe = probe;
            if panic_at.first_poll == Some(id) {
                panic!("item {id} panics on its first poll");
            }
            let id = gate.await;
            if panic_at.completion == Some(id) {
                panic!("item {id} panics on completion");
            }
            drops.outputs_made.add();
            Output {
                id,
                _probe: DropProbe::new(&drops.outputs),
            }
        }
    })
}

/// A waker that only counts how many handles to it exist.
struct Idle;

impl Wake for Idle {
    fn wake(self: Arc<Self>) {}
}

#[test]
fn dropping_drops_source_running_waiting_and_held_each_exactly_once() {
    for ordered in [false, true] {
        let gates = Gates::new();
        let drops = Drops::default();
        let source_drops = Counter::new();
        let (source, counts) = counted(items(gates.clone(), drops.clone(), PanicAt::default()));
        let mut stream = source.track_drop(&source_drops).bounded(2, 3);
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
        assert_eq!(
            drops.futures.get(),
            completed,
            "completed futures are dropped at once"
        );
        assert_eq!(drops.outputs.get(), 0);
        assert_eq!(source_drops.get(), 0);

        drop(stream);
        assert_eq!(source_drops.get(), 1, "ordered={ordered}");
        assert_eq!(drops.futures.get(), pulled, "ordered={ordered}");
        for id in 0..pulled {
            assert_eq!(gates.drops(id), 1, "ordered={ordered}: item {id}");
        }
        let held_outputs = 1;
        assert_eq!(drops.outputs.get(), held_outputs, "ordered={ordered}");
        drop(taken);
        assert_eq!(drops.outputs.get(), drops.outputs_made.get());
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
    let drops = Drops::default();
    let source_drops = Counter::new();
    let (source, counts) = counted(items(gates.clone(), drops.clone(), PanicAt::default()));
    let mut stream = source.track_drop(&source_drops).bounded(3, 2);
    let poller = Poller::new();
    assert!(poller.poll(&mut stream).is_pending());
    let mut source = stream.into_inner();
    assert_eq!(drops.futures.get(), 5);
    assert_eq!(source_drops.get(), 0);
    // The source resumes where the adapter left it.
    let next = futures::executor::block_on(source.next()).expect("an endless source");
    drop(next);
    assert_eq!(counts.pulled(), 6);
    assert_eq!(gates.drops(5), 1);
    drop(source);
    assert_eq!(source_drops.get(), 1);
}

/// Polls once, expecting a panic; returns its message.
fn poll_expecting_panic<S: Stream + Unpin>(poller: &Poller, stream: &mut S) -> String {
    match catch_unwind(AssertUnwindSafe(|| poller.poll(stream))) {
        Ok(poll) => panic!("expected a panic, got pending: {}", poll.is_pending()),
        Err(panic) => panic_message(&*panic),
    }
}

fn check_after_panic<S: Stream + Unpin>(
    poller: &Poller,
    mut stream: S,
    gates: &Gates,
    drops: &Drops,
    pulled: usize,
    outputs_taken: Vec<Output>,
) {
    let again = poll_expecting_panic(poller, &mut stream);
    assert!(again.contains("after a panic"), "message: {again}");
    drop(stream);
    assert_eq!(drops.futures.get(), pulled);
    for id in 0..pulled {
        assert_eq!(gates.drops(id), 1, "item {id}");
    }
    drop(outputs_taken);
    assert_eq!(drops.outputs.get(), drops.outputs_made.get());
}

#[test]
fn a_panic_in_a_running_future_propagates_and_drops_cleanly() {
    for ordered in [false, true] {
        let gates = Gates::new();
        let drops = Drops::default();
        let panic_at = PanicAt {
            completion: Some(2),
            ..PanicAt::default()
        };
        let (source, counts) = counted(items(gates.clone(), drops.clone(), panic_at));
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
        assert_eq!(message, "item 2 panics on completion");
        let pulled = counts.pulled();
        check_after_panic(&poller, stream, &gates, &drops, pulled, taken);
        if ordered {
            assert_eq!(drops.outputs_made.get(), 1, "the held output of item 1");
        }
    }
}

#[test]
fn a_panic_on_a_futures_first_poll_propagates_and_drops_cleanly() {
    for ordered in [false, true] {
        let gates = Gates::new();
        let drops = Drops::default();
        let panic_at = PanicAt {
            first_poll: Some(4),
            ..PanicAt::default()
        };
        let (source, counts) = counted(items(gates.clone(), drops.clone(), panic_at));
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
        assert_eq!(message, "item 4 panics on its first poll");
        let pulled = counts.pulled();
        check_after_panic(&poller, stream, &gates, &drops, pulled, taken);
    }
}

#[test]
fn a_panic_in_the_source_propagates_and_drops_cleanly() {
    for ordered in [false, true] {
        let gates = Gates::new();
        let drops = Drops::default();
        let source_drops = Counter::new();
        let mut inner = items(gates.clone(), drops.clone(), PanicAt::default());
        let panicking_pull = 7;
        let mut pulls = 0;
        let source = stream::poll_fn(move |cx| {
            pulls += 1;
            if pulls == panicking_pull {
                panic!("the source panics on pull {pulls}");
            }
            inner.poll_next_unpin(cx)
        });
        let (source, counts) = counted(source);
        let mut stream = source.track_drop(&source_drops).bounded(3, 3);
        if ordered {
            stream = stream.ordered(3);
        }
        let poller = Poller::new();
        assert!(poller.poll(&mut stream).is_pending());
        assert_eq!(counts.pulled(), 6);
        gates.open(0);
        let message = poll_expecting_panic(&poller, &mut stream);
        assert_eq!(message, "the source panics on pull 7");
        assert_eq!(source_drops.get(), 0);
        let pulled = counts.pulled();
        check_after_panic(&poller, stream, &gates, &drops, pulled, Vec::new());
        assert_eq!(source_drops.get(), 1);
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
