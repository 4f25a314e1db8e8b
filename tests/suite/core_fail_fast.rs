//! Fail fast in place (`try_bounded`): the first `Err`, from a future or from the
//! source, stops pulling and starting, drops every running future and waiting
//! item at once, yields exactly the held outputs that keep the output order,
//! then the error, then `None` forever (contract point 21).

// Under `--cfg loom` the crate uses loom's primitives, which work only inside
// `loom::model`, and smol is not built: these tests are for the normal build.

use std::task::Poll;

use bounded_buffered::BoundedStreamExt;
use futures::stream::{self, FusedStream, Stream};
use futures::{FutureExt, StreamExt, TryStreamExt};
use support::{Gates, POLLED_AFTER_ESCAPE, Poller, caught, counted, fed_source};

/// The error of these tests: which item failed.
#[derive(Debug, PartialEq, Eq)]
struct Failed(usize);

/// A `TryStream` of gated items `0..count`: item `id` resolves to `Ok(id)`, or to
/// `Err(Failed(id))` when `id` is in `failing`.
fn items(
    gates: &Gates,
    count: usize,
    failing: &'static [usize],
) -> impl Stream<Item = Result<impl Future<Output = Result<usize, Failed>>, Failed>> + Unpin {
    gates.source(count).map(move |gate| {
        Ok(gate.map(move |id| {
            if failing.contains(&id) {
                Err(Failed(id))
            } else {
                Ok(id)
            }
        }))
    })
}

/// Everything the stream created was dropped: futures that started or waited.
fn assert_all_dropped(gates: &Gates, pulled: usize) {
    for id in 0..pulled {
        assert_eq!(gates.drops(id), 1, "item {id} dropped exactly once");
    }
}

#[test]
fn an_error_from_a_future_cancels_everything_at_once() {
    let gates = Gates::new();
    let (source, counts) = counted(items(&gates, 100, &[1]));
    let mut stream = source.try_bounded(4, 3);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!((counts.pulled(), gates.started()), (7, 4));

    gates.open(1);
    let started = gates.started();
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(Err(Failed(1)))));
    // Nothing started after the error, nothing more was pulled, and everything
    // pulled is already dropped when the error is yielded.
    assert_eq!(gates.started(), started);
    assert_eq!(gates.started(), 4, "no future's first poll after the error");
    assert_eq!(counts.pulled(), 7);
    assert_all_dropped(&gates, 7);
    let stats = stream.stats();
    assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));

    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    assert!(stream.is_terminated());
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    assert_eq!(counts.pulled(), 7);
}

#[test]
fn unordered_every_output_completed_before_the_error_comes_first() {
    let gates = Gates::new();
    let mut stream = items(&gates, 100, &[2]).try_bounded(4, 0);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    // 0 and 1 complete in one pass: 0 is handed out (its worker refilled with
    // item 4), 1 stays held. Then 2 fails: 1 is still yielded before the error.
    gates.open(0);
    gates.open(1);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(Ok(0))));
    assert_eq!(stream.stats().held, 1);
    assert_eq!(gates.started(), 5);
    gates.open(2);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(Ok(1))));
    // The error was seen by that poll: running items 3 and 4 are gone already.
    assert_all_dropped(&gates, 5);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(Err(Failed(2)))));
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    assert_eq!(gates.started(), 5, "nothing started after the error");
}

#[test]
fn unordered_a_pass_stops_at_the_error() {
    // Four complete before the consumer polls; the pass polls woken slots in
    // index order: 0 completes, 1 fails, and 2 and 3 are never polled again.
    let gates = Gates::new();
    let mut stream = items(&gates, 100, &[1]).try_bounded(4, 4);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    for id in [3, 0, 2, 1] {
        gates.open(id);
    }
    let out: Vec<_> = poller.drain_ready(&mut stream);
    assert_eq!(out, [Ok(0), Err(Failed(1))]);
    assert_eq!(
        (gates.polls(2), gates.polls(3)),
        (1, 1),
        "no poll after the error"
    );
    assert_eq!(gates.started(), 4);
    assert_all_dropped(&gates, 8);
}

#[test]
fn ordered_the_error_does_not_wait_for_a_slow_head() {
    let gates = Gates::new();
    let mut stream = items(&gates, 100, &[3]).try_bounded(4, 2).ordered(8);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    // The head (item 0) stays pending; later items complete, then item 3 fails.
    gates.open(1);
    gates.open(2);
    gates.open(4);
    gates.open(3);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(Err(Failed(3)))));
    // The head was cancelled, not waited for, and held outputs behind it (1, 2,
    // 4) cannot be yielded in order: dropped with it.
    assert_eq!(gates.drops(0), 1);
    assert_eq!(gates.polls(0), 1);
    let stats = stream.stats();
    assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    let pulled = stream.stats().pulled as usize;
    assert_all_dropped(&gates, pulled);
}

#[test]
fn ordered_the_complete_prefix_is_yielded_before_the_error() {
    let gates = Gates::new();
    let mut stream = items(&gates, 100, &[4]).try_bounded(6, 0).ordered(6);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    // Positions 1 and 2 complete, 0 is still running: nothing can be yielded.
    gates.open(1);
    gates.open(2);
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    // The head completes: 0, 1 and 2 form the complete prefix. 5 completes but
    // sits behind the running 3. Then 4 fails.
    gates.open(0);
    gates.open(5);
    gates.open(4);
    let out = poller.drain_ready(&mut stream);
    assert_eq!(out, [Ok(0), Ok(1), Ok(2), Err(Failed(4))]);
    assert!(stream.is_terminated());
    assert_all_dropped(&gates, 6);
}

#[test]
fn an_error_in_the_first_poll_stops_the_starts_of_the_same_fill() {
    // Item 1 fails at once, while the first fill is starting items.
    let gates = Gates::new();
    gates.open(1);
    let (source, counts) = counted(items(&gates, 100, &[1]));
    let mut stream = source.try_bounded(4, 4);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(Err(Failed(1)))));
    assert_eq!(gates.started(), 2, "items 0 and 1 started, none after");
    assert_eq!(counts.pulled(), 2);
    assert_all_dropped(&gates, 2);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
}

#[test]
fn an_error_from_the_source_stops_pulling() {
    let gates = Gates::new();
    let (source, feed) = fed_source::<Result<usize, Failed>>();
    let (source, counts) = counted(source);
    let gates_in = gates.clone();
    let mut stream = source
        .map_ok(move |id| gates_in.gate(id).map(Ok::<usize, Failed>))
        .try_bounded(2, 2);
    let poller = Poller::new();
    feed.push(Ok(0));
    feed.push(Ok(1));
    feed.push(Ok(2));
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    feed.push(Err(Failed(99)));
    feed.push(Ok(3));
    gates.open(0); // complete before the error is pulled: yielded first
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(Ok(0))));
    // Taking 0 refilled: item 2 started, and the queue pulled the error.
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(Err(Failed(99)))));
    assert_eq!(counts.pulled(), 4, "nothing pulled after the error");
    assert_eq!(feed.unread(), 1);
    assert_all_dropped(&gates, 3);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    assert_eq!(counts.pulled(), 4);
}

#[test]
fn an_error_during_a_close_drain_still_fails_fast() {
    let gates = Gates::new();
    let (source, counts) = counted(items(&gates, 100, &[2]));
    let mut stream = source.try_bounded(2, 2);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    stream.close();
    gates.open(0);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(Ok(0))));
    assert_eq!(gates.started(), 3, "item 2 started from the queue");
    gates.open(2);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(Err(Failed(2)))));
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    assert_eq!(counts.pulled(), 4);
    assert_eq!(gates.started(), 3, "item 3 never started");
    assert_all_dropped(&gates, 4);
}

#[test]
fn without_an_error_it_yields_every_output() {
    futures::executor::block_on(async {
        let out: Vec<u32> = stream::iter(0..50u32)
            .map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) }))
            .try_bounded(3, 2)
            .ordered(4)
            .try_collect()
            .await
            .expect("no item fails");
        assert_eq!(out, (0..50).collect::<Vec<_>>());
    });
}

#[test]
fn the_budgets_hold_exactly_as_for_bounded() {
    for (workers, waiting) in [(1, 0), (2, 3), (4, 8)] {
        let gates = Gates::new();
        let (source, counts) = counted(items(&gates, 1_000, &[]));
        let mut stream = source.try_bounded(workers, waiting);
        let poller = Poller::new();
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        assert_eq!(counts.pulled(), workers + waiting);
        assert_eq!(gates.started(), workers);

        let gates = Gates::new();
        let (source, counts) = counted(items(&gates, 1_000, &[]));
        let window = workers.div_ceil(2);
        let mut stream = source.try_bounded(workers, waiting).ordered(window);
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        assert_eq!(counts.pulled(), workers.min(window) + waiting);
    }
}

#[test]
fn size_hint_counts_the_error_that_may_end_the_run() {
    let gates = Gates::new();
    let stream = items(&gates, 10, &[]).try_bounded(2, 2);
    // Any item may fail: at least one more item, at most all ten.
    assert_eq!(stream.size_hint(), (1, Some(10)));
}

/// Panics when dropped, unless already panicking.
struct PanicOnDrop;

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("a destructor panics");
        }
    }
}

#[test]
fn a_destructor_panicking_during_the_cancellation_leaves_a_stream_that_drops_cleanly() {
    let gates = Gates::new();
    // Item 0's future panics when dropped; item 1 fails.
    let source = stream::iter(0..10).map(|id| {
        let gate = gates.gate(id);
        let bomb = if id == 0 { Some(PanicOnDrop) } else { None };
        Ok::<_, Failed>(async move {
            let _bomb = bomb;
            let id = gate.await;
            if id == 1 { Err(Failed(id)) } else { Ok(id) }
        })
    });
    let mut stream = source.try_bounded(3, 2);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    gates.open(1);
    let panic = caught(|| poller.poll(&mut stream)).expect_err("the destructor's panic propagates");
    assert_eq!(panic, "a destructor panics");
    let again = caught(|| poller.poll(&mut stream))
        .expect_err("a stream a panic escaped from refuses to be polled");
    assert!(again.contains(POLLED_AFTER_ESCAPE), "{again}");
    drop(stream);
    for id in 0..5 {
        assert_eq!(gates.drops(id), 1, "item {id}");
    }
}
