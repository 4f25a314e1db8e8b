//! Contract point 5: ordered outputs come in input order through a reorder
//! window that caps `active + held`, and a blocked head item does not stop the
//! other workers before the window is full.

// Under `--cfg loom` the crate uses loom's primitives, which work only inside
// `loom::model`, and smol is not built: these tests are for the normal build.

use std::task::Poll;

use bounded_buffered::BoundedStreamExt;
use futures::StreamExt;
use support::{Gates, Poller, Rng, counted};

#[test]
fn reversed_completion_is_yielded_in_input_order() {
    let gates = Gates::new();
    let mut stream = gates.source(5).bounded(5, 0).ordered(5);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    for id in (1..5).rev() {
        gates.open(id);
        assert_eq!(
            poller.poll(&mut stream),
            Poll::Pending,
            "item {id} waits for item 0"
        );
        assert_eq!(stream.stats().held, 5 - id);
    }
    gates.open(0);
    assert_eq!(poller.drain_ready(&mut stream), [0, 1, 2, 3, 4]);
    assert!(futures::stream::FusedStream::is_terminated(&stream));
}

#[test]
fn random_completion_is_yielded_in_input_order_within_the_window() {
    // (workers, window, waiting)
    let cases = [
        (1, 1, 0),
        (2, 2, 1),
        (4, 2, 3),
        (3, 6, 0),
        (4, 9, 2),
        (8, 8, 8),
    ];
    for seed in 0..10 {
        for (workers, window, waiting) in cases {
            let count = 60;
            let gates = Gates::new();
            let mut stream = gates
                .source(count)
                .bounded(workers, waiting)
                .ordered(window);
            let poller = Poller::new();
            let mut rng = Rng::new(seed);
            let mut outputs = Vec::new();
            let case = format!("seed {seed} W={workers} window={window} Q={waiting}");
            loop {
                let poll = poller.poll(&mut stream);
                let stats = stream.stats();
                assert!(stats.active + stats.held <= window, "{case}: {stats:?}");
                assert!(stats.active <= workers.min(window), "{case}: {stats:?}");
                assert!(stats.waiting <= waiting, "{case}: {stats:?}");
                assert!(gates.running() <= workers.min(window), "{case}");
                // Started but not yet handed out (counting the output this poll
                // returned): never more than the window.
                let handed_out = outputs.len() + usize::from(matches!(poll, Poll::Ready(Some(_))));
                assert!(gates.started() - handed_out <= window, "{case}");
                match poll {
                    Poll::Ready(Some(id)) => outputs.push(id),
                    Poll::Ready(None) => break,
                    Poll::Pending => {
                        let pending: Vec<usize> =
                            (0..count).filter(|&id| gates.waker(id).is_some()).collect();
                        assert!(!pending.is_empty(), "{case}: stalled");
                        gates.open(pending[rng.below(pending.len())]);
                    }
                }
            }
            assert_eq!(outputs, (0..count).collect::<Vec<_>>(), "{case}");
            let stats = stream.stats();
            assert!(stats.peak_held <= window, "{case}: {stats:?}");
        }
    }
}

#[test]
fn a_window_equal_to_the_workers_behaves_like_buffered() {
    // The same schedule drives both streams: after each step, compare what was
    // yielded and, whenever both are pending, how far each pulled its source.
    for seed in 0..10 {
        for workers in [1, 2, 3, 5] {
            let count = 30;
            let ours_gates = Gates::new();
            let theirs_gates = Gates::new();
            let (ours_source, ours_counts) = counted(ours_gates.source(count));
            let (theirs_source, theirs_counts) = counted(theirs_gates.source(count));
            let mut ours = ours_source.bounded(workers, 0).ordered(workers);
            let mut theirs = theirs_source.buffered(workers);
            let poller = Poller::new();
            let mut rng = Rng::new(seed);
            let case = format!("seed {seed} W={workers}");
            loop {
                let ours_out = poller.drain_ready(&mut ours);
                let theirs_out = poller.drain_ready(&mut theirs);
                assert_eq!(ours_out, theirs_out, "{case}");
                assert_eq!(ours_counts.pulled(), theirs_counts.pulled(), "{case}");
                assert_eq!(ours_gates.started(), theirs_gates.started(), "{case}");
                let pending: Vec<usize> = (0..count)
                    .filter(|&id| ours_gates.waker(id).is_some())
                    .collect();
                let theirs_pending: Vec<usize> = (0..count)
                    .filter(|&id| theirs_gates.waker(id).is_some())
                    .collect();
                assert_eq!(pending, theirs_pending, "{case}");
                if pending.is_empty() {
                    break;
                }
                let id = pending[rng.below(pending.len())];
                ours_gates.open(id);
                theirs_gates.open(id);
            }
            assert_eq!(poller.poll(&mut ours), Poll::Ready(None), "{case}");
            assert_eq!(ours_counts.pulled(), count);
        }
    }
}

#[test]
fn a_blocked_head_lets_other_workers_run_up_to_exactly_the_window() {
    for (workers, window, waiting) in [(2, 5, 0), (2, 5, 3), (3, 4, 1), (2, 3, 2), (4, 12, 0)] {
        let case = format!("W={workers} window={window} Q={waiting}");
        let gates = Gates::new();
        let (source, counts) = counted(gates.source(100));
        let mut stream = source.bounded(workers, waiting).ordered(window);
        let poller = Poller::new();
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        assert_eq!(gates.started(), workers, "{case}");

        // Item 0 stays blocked; every other started item completes at once.
        let mut next = 1;
        while gates.started() < window {
            assert!(gates.is_started(next), "{case}: item {next} should run");
            gates.open(next);
            assert_eq!(
                poller.poll(&mut stream),
                Poll::Pending,
                "{case}: the head blocks output"
            );
            next += 1;
        }
        // Items still running besides the head complete too; with the window
        // full, nothing new may start, however often the stream is polled.
        let still_running: Vec<usize> = (1..window)
            .filter(|&id| gates.waker(id).is_some())
            .collect();
        for id in still_running {
            gates.open(id);
        }
        for _ in 0..3 {
            assert_eq!(poller.poll(&mut stream), Poll::Pending);
        }
        let stats = stream.stats();
        assert_eq!(
            (stats.active, stats.held),
            (1, window - 1),
            "{case}: {stats:?}"
        );
        assert_eq!(gates.started(), window, "{case}: started past the window");
        assert!(!gates.is_started(window), "{case}");
        assert_eq!(counts.pulled(), window + waiting, "{case}");

        // Opening the head releases the whole window, in order, and the freed
        // positions start the next items.
        gates.open(0);
        for id in 0..window {
            assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(id)), "{case}");
        }
        assert!(gates.is_started(window), "{case}");
    }
}

#[test]
fn items_complete_at_once_behind_a_blocked_head_only_up_to_the_window() {
    // Every item but the first is ready on its first poll.
    let gates = Gates::new();
    for id in 1..50 {
        gates.open(id);
    }
    let (source, counts) = counted(gates.source(50));
    let mut stream = source.bounded(2, 0).ordered(6);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(counts.pulled(), 6);
    assert_eq!(gates.started(), 6);
    let stats = stream.stats();
    assert_eq!((stats.active, stats.held), (1, 5));
    gates.open(0);
    assert_eq!(poller.drain_ready(&mut stream), (0..50).collect::<Vec<_>>());
    assert!(stream.stats().peak_held <= 6);
}
