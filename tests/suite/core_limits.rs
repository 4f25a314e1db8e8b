//! Limits that move, in place (contract point 25): a `Limits` handle raises,
//! lowers and pauses `workers` and `waiting` while the stream runs, from this
//! thread or another. Raising wakes the stream and starts items with no
//! completion; lowering cancels nothing and drops nothing; once the limits are
//! stable and the work is within them, the admission bound is exact for them.

use std::task::Poll;

use bounded_buffered::{BoundedBuffered, BoundedStreamExt};
use futures::{StreamExt, TryStreamExt, stream};
use support::{Gates, Poller};

/// The counts that matter here: (running futures, waiting items, items pulled).
fn shape<S: futures::Stream<Item: std::future::Future>>(
    stream: &BoundedBuffered<S>,
    gates: &Gates,
) -> (usize, usize, usize) {
    let stats = stream.stats();
    assert_eq!(stats.active, gates.running(), "stats and futures disagree");
    (stats.active, stats.waiting, gates.pulled())
}

#[test]
fn raising_workers_wakes_the_stream_and_starts_items_without_a_completion() {
    let gates = Gates::new();
    let mut stream = gates.source(100).bounded(2, 1);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(shape(&stream, &gates), (2, 1, 3));

    let limits = stream.limits();
    limits.set_workers(5);
    assert_eq!(poller.wakes(), 1, "raising wakes the stream's task");
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    // Exact for the new limits: 5 running, 1 waiting, 6 pulled.
    assert_eq!(shape(&stream, &gates), (5, 1, 6));
    assert_eq!(gates.counts().futures_dropped, 0);
    let stats = stream.stats();
    assert_eq!((stats.workers_limit, stats.waiting_limit), (5, 1));
}

#[test]
fn a_change_from_another_thread_wakes_the_stream() {
    let gates = Gates::new();
    let mut stream = gates.source(100).bounded(1, 0);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    let limits = stream.limits();
    std::thread::spawn(move || {
        limits.set_waiting(3);
        limits.set_workers(2);
    })
    .join()
    .unwrap();
    assert!(poller.wakes() >= 1);
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(shape(&stream, &gates), (2, 3, 5));
}

#[test]
fn raising_waiting_pulls_ahead_at_once() {
    let gates = Gates::new();
    let mut stream = gates.source(100).bounded(2, 0);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(shape(&stream, &gates), (2, 0, 2));
    stream.limits().set_waiting(4);
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(shape(&stream, &gates), (2, 4, 6));
}

#[test]
fn lowering_cancels_nothing_and_starts_only_below_the_new_limit() {
    let gates = Gates::new();
    let mut stream = gates.source(100).bounded(4, 3);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(shape(&stream, &gates), (4, 3, 7));

    let limits = stream.limits();
    limits.set_workers(2);
    limits.set_waiting(1);
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    // Nothing cancelled, nothing dropped from the queue, nothing pulled.
    assert_eq!(shape(&stream, &gates), (4, 3, 7));
    assert_eq!(gates.counts().futures_dropped, 0);

    // 4 -> 3 running: still at or above 2, so nothing starts.
    gates.open(0);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(0)));
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(shape(&stream, &gates), (3, 3, 7));
    gates.open(1);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(1)));
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(shape(&stream, &gates), (2, 3, 7));
    // 2 -> 1 running: one starts from the queue (3 -> 2, still over the new
    // waiting limit of 1, so the source is not pulled).
    gates.open(2);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(2)));
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(shape(&stream, &gates), (2, 2, 7));
    gates.open(3);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(3)));
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(shape(&stream, &gates), (2, 1, 7));
    // The queue is at its limit now: from here the bound is exact for (2, 1).
    gates.open(4);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(4)));
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(shape(&stream, &gates), (2, 1, 8));
    assert_eq!(stream.stats().peak_active, 4);
}

#[test]
fn workers_zero_pauses_and_raising_resumes() {
    let gates = Gates::new();
    let mut stream = gates.source(10).bounded(2, 2);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    let limits = stream.limits();
    limits.set_workers(0);
    gates.open(0);
    gates.open(1);
    // Running work finishes and is handed out; nothing new starts.
    let outputs = poller.drain_ready(&mut stream);
    assert_eq!(outputs, [0, 1]);
    assert_eq!(shape(&stream, &gates), (0, 2, 4));
    assert!(!futures::stream::FusedStream::is_terminated(&stream));
    // Opening a waiting item's gate changes nothing: it is not started.
    gates.open(2);
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(gates.polls(2), 0);

    let wakes = poller.wakes();
    limits.set_workers(1);
    assert_eq!(poller.wakes(), wakes + 1);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(2)));
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(shape(&stream, &gates), (1, 2, 6));
}

#[test]
fn limits_set_before_the_first_poll_are_the_ones_it_starts_with() {
    let gates = Gates::new();
    let mut stream = gates.source(100).bounded(1, 0);
    let limits = stream.limits();
    limits.set_workers(3);
    limits.set_waiting(2);
    assert_eq!(Poller::new().poll(&mut stream), Poll::Pending);
    assert_eq!(shape(&stream, &gates), (3, 2, 5));
}

#[test]
fn ordered_the_window_stays_fixed_and_caps_a_raise() {
    let gates = Gates::new();
    let mut stream = gates.source(100).bounded(2, 1).ordered(4);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(shape(&stream, &gates), (2, 1, 3));
    stream.limits().set_workers(10);
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    // min(workers, window) + waiting = 4 + 1.
    assert_eq!(shape(&stream, &gates), (4, 1, 5));
    // Completions behind the head are held: the window stops further starts.
    gates.open(1);
    gates.open(2);
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(shape(&stream, &gates), (2, 1, 5));
    assert_eq!(stream.stats().held, 2);
    gates.open(0);
    assert_eq!(poller.drain_ready(&mut stream), [0, 1, 2]);
    assert_eq!(shape(&stream, &gates), (4, 1, 8));
}

#[test]
fn raising_past_the_wake_tree_rebuilds_it_and_loses_no_wake() {
    // 63 slots fit one word of the ready tree, 4,032 two: raise across both.
    for (from, to) in [(2, 63), (2, 64), (60, 200), (100, 5_000)] {
        let items = to + 10;
        let gates = Gates::new();
        let mut stream = gates.source(items).bounded(from, 0);
        let poller = Poller::new();
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        // A waker from before the rebuild: waking it later must be harmless.
        let stale = gates.waker(0).expect("item 0 runs");
        stream.limits().set_workers(to);
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        assert_eq!(shape(&stream, &gates), (to, 0, to), "raise {from} -> {to}");
        stale.wake();
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        // Every running future, old or new, wakes the stream through its
        // current waker: open every gate from another thread, in reverse.
        let opener = gates.clone();
        std::thread::spawn(move || {
            for id in (0..items).rev() {
                opener.open(id);
            }
        })
        .join()
        .unwrap();
        let mut outputs = Vec::new();
        let mut wakes = poller.wakes();
        loop {
            match poller.poll(&mut stream) {
                Poll::Ready(Some(id)) => outputs.push(id),
                Poll::Ready(None) => break,
                Poll::Pending => {
                    // Pending with nothing left to wait for: only a wake
                    // already sent (the poll budget's) may ask for more.
                    assert!(poller.wakes() > wakes, "lost wake: {from} -> {to}");
                    wakes = poller.wakes();
                }
            }
        }
        outputs.sort_unstable();
        assert_eq!(outputs, (0..items).collect::<Vec<_>>(), "{from} -> {to}");
        let counts = gates.counts();
        assert_eq!(counts.futures_dropped, items);
    }
}

#[test]
fn a_handle_outlives_its_stream_and_every_handle_is_the_same() {
    let stream = stream::iter(0..3u8).map(std::future::ready).bounded(2, 2);
    let first = stream.limits();
    let second = stream.limits();
    second.set_workers(7);
    assert_eq!(first.workers(), 7);
    drop(stream);
    first.set_workers(1);
    first.set_waiting(0);
    assert_eq!((second.workers(), second.waiting()), (1, 0));
    assert_eq!(format!("{first:?}"), "Limits { workers: 1, waiting: 0 }");
}

#[test]
fn try_bounded_streams_have_limits_too() {
    let gates = Gates::new();
    let source = gates
        .source(100)
        .map(Ok::<_, ()>)
        .map_ok(|gate| async move { Ok::<_, ()>(gate.await) });
    let mut stream = source.try_bounded(1, 0);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    stream.limits().set_workers(3);
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(gates.running(), 3);
    assert_eq!(stream.stats().workers_limit, 3);
}
