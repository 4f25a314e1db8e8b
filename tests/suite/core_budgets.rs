//! Contract points 2 and 3: the worker budget and the waiting budget, each
//! checked at its exact boundary with every future blocked (ordered too, where
//! the boundary is `min(workers, window) + waiting`).

// Under `--cfg loom` the crate uses loom's primitives, which work only inside
// `loom::model`, and smol is not built: these tests are for the normal build.

use std::task::Poll;

use bounded_buffered::BoundedStreamExt;
use support::{Gates, Poller, Rng, counted, fed_source};

/// (workers, waiting) pairs: one worker, no prefetch, and both larger.
const BUDGETS: [(usize, usize); 8] = [
    (1, 0),
    (1, 1),
    (1, 5),
    (2, 0),
    (3, 7),
    (4, 8),
    (8, 2),
    (16, 16),
];

#[test]
fn with_every_future_blocked_the_source_advances_exactly_workers_plus_waiting() {
    for (workers, waiting) in BUDGETS {
        let gates = Gates::new();
        let (source, counts) = counted(gates.source(1_000));
        let mut stream = source.bounded(workers, waiting);
        let poller = Poller::new();
        assert_eq!(
            counts.pulled(),
            0,
            "nothing is pulled before the first poll"
        );

        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        let bound = workers + waiting;
        assert_eq!(counts.pulled(), bound, "W={workers} Q={waiting}");
        assert_eq!(gates.started(), workers, "W={workers} Q={waiting}");
        assert_eq!(gates.running(), workers);
        let stats = stream.stats();
        assert_eq!(
            (stats.active, stats.waiting, stats.held),
            (workers, waiting, 0)
        );
        assert_eq!(stats.pulled, bound as u64);

        // More polls, with and without spurious wakes, change nothing.
        for id in 0..workers {
            gates.nudge(id);
            assert_eq!(poller.poll(&mut stream), Poll::Pending);
            assert_eq!(poller.poll(&mut stream), Poll::Pending);
        }
        assert_eq!(
            counts.pulled(),
            bound,
            "W={workers} Q={waiting}: pulled past the bound"
        );
        assert_eq!(gates.started(), workers);

        // One output frees one worker: one waiting item starts, one is pulled.
        gates.open(0);
        assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(0)));
        assert_eq!(counts.pulled(), bound + 1, "W={workers} Q={waiting}");
        assert_eq!(gates.started(), workers + 1);
        let stats = stream.stats();
        assert_eq!((stats.active, stats.waiting), (workers, waiting));
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        assert_eq!(counts.pulled(), bound + 1);
    }
}

#[test]
fn ordered_with_every_future_blocked_the_source_advances_min_of_workers_and_window_plus_waiting() {
    // (workers, window, waiting): window below, at and above the workers.
    let cases = [
        (4, 2, 3),
        (4, 1, 0),
        (3, 3, 0),
        (3, 3, 2),
        (2, 8, 0),
        (2, 8, 5),
        (1, 1, 1),
        (6, 4, 6),
    ];
    for (workers, window, waiting) in cases {
        let gates = Gates::new();
        let (source, counts) = counted(gates.source(1_000));
        let mut stream = source.bounded(workers, waiting).ordered(window);
        let poller = Poller::new();
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        let running = workers.min(window);
        let case = format!("W={workers} window={window} Q={waiting}");
        assert_eq!(counts.pulled(), running + waiting, "{case}");
        assert_eq!(gates.started(), running, "{case}");
        for _ in 0..3 {
            assert_eq!(poller.poll(&mut stream), Poll::Pending);
        }
        assert_eq!(counts.pulled(), running + waiting, "{case}");
        let stats = stream.stats();
        assert_eq!((stats.active, stats.waiting), (running, waiting), "{case}");
    }
}

#[test]
fn a_source_that_ends_early_is_not_polled_past_its_end() {
    let gates = Gates::new();
    let (source, counts) = counted(gates.source(5));
    let mut stream = source.bounded(4, 8);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(counts.pulled(), 5);
    // Five items, then the `None` that ended it.
    assert_eq!(counts.polls(), 6);
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(counts.polls(), 6);
    assert_eq!(stream.stats().waiting, 1);
}

#[test]
fn active_never_exceeds_workers_and_reaches_it() {
    for seed in 0..10 {
        for (workers, waiting) in BUDGETS {
            let count = 40;
            let gates = Gates::new();
            let mut stream = gates.source(count).bounded(workers, waiting);
            let poller = Poller::new();
            let mut rng = Rng::new(seed);
            let mut yielded = 0;
            let mut peak_running = 0;
            loop {
                match poller.poll(&mut stream) {
                    Poll::Ready(Some(_)) => yielded += 1,
                    Poll::Ready(None) => break,
                    Poll::Pending => {
                        // Blocked: open one running gate, picked at random.
                        // A pending gate that was not opened yet still has its waker.
                        let running: Vec<usize> =
                            (0..count).filter(|&id| gates.waker(id).is_some()).collect();
                        assert!(!running.is_empty(), "stalled with nothing running");
                        gates.open(running[rng.below(running.len())]);
                    }
                }
                // Seen from the futures' side and from the adapter's.
                assert!(gates.running() <= workers, "seed {seed} W={workers}");
                let stats = stream.stats();
                assert!(
                    stats.active <= workers,
                    "seed {seed} W={workers}: {stats:?}"
                );
                assert!(
                    stats.waiting <= waiting,
                    "seed {seed} Q={waiting}: {stats:?}"
                );
                peak_running = peak_running.max(gates.running());
            }
            assert_eq!(yielded, count);
            assert_eq!(
                peak_running, workers,
                "enough blocked items fill every worker"
            );
            let stats = stream.stats();
            assert_eq!(stats.peak_active, workers);
            assert_eq!(stats.peak_waiting, waiting);
        }
    }
}

#[test]
fn keeps_pulling_into_the_waiting_queue_while_the_workers_are_busy() {
    let gates = Gates::new();
    let (source, feed) = fed_source();
    let (source, counts) = counted(source);
    let mut stream = source.bounded(2, 3);
    let poller = Poller::new();

    feed.push(gates.gate(0));
    feed.push(gates.gate(1));
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(gates.started(), 2);
    assert!(
        feed.has_waiter(),
        "the adapter asked the source for a waiting item"
    );

    // The source produces while both workers are blocked: the items are pulled
    // into the waiting queue, up to its budget, without any future completing.
    let wakes = poller.wakes();
    for id in 2..7 {
        feed.push(gates.gate(id));
    }
    assert_eq!(
        poller.wakes(),
        wakes + 1,
        "the source's wake reached the consumer"
    );
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(counts.pulled(), 5);
    assert_eq!(feed.unread(), 2, "pulled exactly up to the waiting budget");
    let stats = stream.stats();
    assert_eq!((stats.active, stats.waiting), (2, 3));
    assert_eq!(gates.started(), 2, "waiting items are not started");

    // A freed worker takes the oldest waiting item; the queue is topped up.
    gates.open(1);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(1)));
    assert!(gates.is_started(2));
    assert_eq!(counts.pulled(), 6);
    assert_eq!(stream.stats().waiting, 3);
}

#[test]
fn a_slow_source_is_asked_again_once_it_wakes() {
    // One worker, no prefetch: the adapter must still come back to the source
    // after it said `Pending`, or the stream would hang.
    let (source, feed) = fed_source();
    let mut stream = source.bounded(1, 0);
    let poller = Poller::new();
    for round in 0..5 {
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        let wakes = poller.wakes();
        feed.push(std::future::ready(round));
        assert_eq!(poller.wakes(), wakes + 1);
        assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(round)));
    }
    feed.close();
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
}
