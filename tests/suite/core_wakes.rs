//! Contract point 12: wakes from other threads, repeated wakes and stale wakes
//! from futures that already finished are neither lost nor misdirected (and,
//! point 7, repeated wakes cost one poll).

// Under `--cfg loom` the crate uses loom's primitives, which work only inside
// `loom::model`, and smol is not built: these tests are for the normal build.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::thread;

use bounded_buffered::BoundedStreamExt;
use futures::StreamExt;
use futures::executor::block_on;
use support::{Gates, Poller, Rng, Watchdog, fed_source, yield_then};

#[test]
fn a_wake_from_another_thread_reaches_the_consumer() {
    let gates = Gates::new();
    let mut stream = gates.source(4).bounded(4, 0);
    let poller = Poller::new();
    for id in [2, 0, 3, 1] {
        // Only a `Pending` obliges the stream to wake its task later.
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        let wakes = poller.wakes();
        let opener = gates.clone();
        thread::spawn(move || opener.open(id))
            .join()
            .expect("the opening thread panicked");
        assert_eq!(poller.wakes(), wakes + 1, "the wake of gate {id} was lost");
        assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(id)));
    }
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
}

#[test]
fn many_threads_opening_gates_lose_no_output() {
    let _watchdog = Watchdog::start("many_threads_opening_gates_lose_no_output");
    for seed in 0..5 {
        let count = 200;
        let gates = Gates::new();
        let mut order: Vec<usize> = (0..count).collect();
        Rng::new(seed).shuffle(&mut order);
        // Four threads open every gate, in a shuffled order, as soon as it
        // was started; the consumer meanwhile sleeps in `block_on`.
        let openers: Vec<_> = order
            .chunks(count / 4)
            .map(|ids| {
                let gates = gates.clone();
                let ids = ids.to_vec();
                thread::spawn(move || {
                    for id in ids {
                        while !gates.is_started(id) {
                            thread::yield_now();
                        }
                        gates.open(id);
                    }
                })
            })
            .collect();
        let outputs: Vec<usize> = block_on(gates.source(count).bounded(count, 0).collect());
        for opener in openers {
            opener.join().expect("an opening thread panicked");
        }
        let mut sorted = outputs;
        sorted.sort_unstable();
        assert_eq!(sorted, (0..count).collect::<Vec<_>>(), "seed {seed}");
    }
}

#[test]
fn threads_waking_running_futures_over_and_over_change_no_output() {
    let _watchdog =
        Watchdog::start("threads_waking_running_futures_over_and_over_change_no_output");
    let count = 300;
    let gates = Gates::new();
    let stop = Arc::new(AtomicBool::new(false));
    // Spurious wakes from other threads, on whatever futures run (or ran).
    let nudgers: Vec<_> = (0..2)
        .map(|seed| {
            let gates = gates.clone();
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                let mut rng = Rng::new(seed);
                while !stop.load(Ordering::Relaxed) {
                    gates.nudge(rng.below(count));
                    thread::yield_now();
                }
            })
        })
        .collect();
    // Opens every gate once it has started, scanning from the newest down,
    // so later items often complete before earlier ones.
    let opener = {
        let gates = gates.clone();
        thread::spawn(move || {
            let mut opened = vec![false; count];
            let mut left = count;
            while left > 0 {
                for id in (0..count).rev() {
                    if !opened[id] && gates.is_started(id) {
                        gates.open(id);
                        opened[id] = true;
                        left -= 1;
                    }
                }
                thread::yield_now();
            }
        })
    };
    let outputs: Vec<usize> = block_on(gates.source(count).bounded(8, 4).ordered(16).collect());
    stop.store(true, Ordering::Relaxed);
    opener.join().expect("the opener panicked");
    for nudger in nudgers {
        nudger.join().expect("a nudging thread panicked");
    }
    assert_eq!(outputs, (0..count).collect::<Vec<_>>());
}

#[test]
fn repeated_wakes_of_one_future_cost_one_poll_and_one_consumer_wake() {
    let gates = Gates::new();
    let mut stream = gates.source(10).bounded(3, 1);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    let waker = gates.waker(1).expect("gate 1 runs");
    let wakes = poller.wakes();
    for _ in 0..10 {
        waker.wake_by_ref();
    }
    assert_eq!(
        poller.wakes(),
        wakes + 1,
        "a burst of wakes costs the task one wake-up"
    );
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(gates.polls_of(3), [1, 2, 1]);
}

#[test]
fn a_stale_wake_after_slot_reuse_polls_only_the_new_future_and_yields_nothing_wrong() {
    // One worker: item 1 runs in the slot item 0 ran in.
    let gates = Gates::new();
    let mut stream = gates.source(3).bounded(1, 0);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    let stale = gates.waker(0).expect("gate 0 runs");
    gates.open(0);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(0)));
    assert_eq!(gates.polls(1), 1);

    // Item 0's waker fires after item 0 finished.
    let wakes = poller.wakes();
    stale.wake_by_ref();
    assert!(poller.wakes() <= wakes + 1);
    assert_eq!(
        poller.poll(&mut stream),
        Poll::Pending,
        "no output for a stale wake"
    );
    // At most a spurious poll of the future now in that slot, never of item 0.
    assert_eq!(gates.polls(0), 2);
    assert!(gates.polls(1) <= 2);
    assert!(!gates.is_started(2));

    gates.open(1);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(1)));
    stale.wake();
    gates.open(2);
    assert_eq!(poller.drain_ready(&mut stream), [2]);
    assert!(futures::stream::FusedStream::is_terminated(&stream));
}

#[test]
fn a_stale_wake_of_an_empty_slot_is_harmless() {
    let gates = Gates::new();
    let (source, feed) = fed_source();
    let mut stream = source.bounded(2, 0);
    let poller = Poller::new();
    feed.push(gates.gate(0));
    feed.push(gates.gate(1));
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    let stale = gates.waker(0).expect("gate 0 runs");
    gates.open(0);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(0)));
    // The slot of item 0 is empty now: the source has nothing more yet.
    assert_eq!(stream.stats().active, 1);
    stale.wake();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(gates.polls(1), 1, "the other future is not polled");

    feed.push(gates.gate(2));
    feed.close();
    gates.open(1);
    gates.open(2);
    let mut rest = poller.drain_ready(&mut stream);
    rest.sort_unstable();
    assert_eq!(rest, [1, 2]);
    assert!(futures::stream::FusedStream::is_terminated(&stream));
}

#[test]
fn a_wake_during_the_futures_own_poll_is_not_lost() {
    // Futures that wake themselves once before completing: each such wake lands
    // while the consumer is inside `poll_next`, and must still be acted on.
    let count = 50;
    let mut stream = futures::stream::iter(0..count)
        .map(|i| yield_then(1 + i % 3, i))
        .bounded(4, 2);
    let outputs = Poller::new().drain_self_woken(&mut stream, |wakes| {
        assert!(wakes > 0, "pending with no wake pending");
    });
    assert_eq!(outputs, (0..count).collect::<Vec<_>>());
}

#[test]
fn a_wake_between_polls_while_not_parked_is_not_lost() {
    // The gate opens after the stream returned an output (it is not parked:
    // it has not returned Pending since), so the wake must be found on the next
    // poll rather than sent to the executor.
    let gates = Gates::new();
    let mut stream = gates.source(3).bounded(3, 0);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    gates.open(0);
    gates.open(1);
    assert!(matches!(poller.poll(&mut stream), Poll::Ready(Some(_))));
    gates.open(2);
    let mut rest = poller.drain_ready(&mut stream);
    rest.sort_unstable();
    assert_eq!(rest.len(), 2);
    assert!(futures::stream::FusedStream::is_terminated(&stream));
}

#[test]
fn self_wakes_around_a_nested_stream_are_not_lost() {
    // Each outer future wakes itself, then takes one output of an inner bounded
    // stream of self-waking futures, and returns `Pending` until the inner
    // stream ends. Its own wake is all that brings it back: the inner stream's
    // bookkeeping of "the future being polled woke itself" must not swallow it.
    let _watchdog = Watchdog::start("self_wakes_around_a_nested_stream_are_not_lost");
    let mut outer = futures::stream::iter(0..20usize)
        .map(|i| {
            let mut inner = futures::stream::iter(0..5usize)
                .map(move |j| yield_then(j % 3, i * 10 + j))
                .bounded(2, 1);
            let mut sum = 0;
            futures::future::poll_fn(move |cx| {
                cx.waker().wake_by_ref();
                match inner.poll_next_unpin(cx) {
                    Poll::Ready(Some(x)) => {
                        sum += x;
                        Poll::Pending
                    }
                    Poll::Ready(None) => Poll::Ready(sum),
                    Poll::Pending => Poll::Pending,
                }
            })
        })
        .bounded(3, 2);
    let poller = Poller::new();
    let mut outputs = Vec::new();
    loop {
        let wakes = poller.wakes();
        match poller.poll(&mut outer) {
            Poll::Ready(Some(sum)) => outputs.push(sum),
            Poll::Ready(None) => break,
            Poll::Pending => assert!(poller.wakes() > wakes, "pending with no wake pending"),
        }
    }
    outputs.sort_unstable();
    let expected: Vec<usize> = (0..20).map(|i| 50 * i + 10).collect();
    assert_eq!(outputs, expected);
}
