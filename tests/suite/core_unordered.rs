//! Contract point 4: unordered outputs come in completion order, and an output
//! the consumer has not taken keeps its worker (`active + held <= workers`).

// Under `--cfg loom` the crate uses loom's primitives, which work only inside
// `loom::model`, and smol is not built: these tests are for the normal build.

use std::task::Poll;

use bounded_buffered::BoundedStreamExt;
use futures::StreamExt;
use futures::stream;
use support::{Gates, Poller, Rng, counted};

#[test]
fn outputs_come_in_completion_order() {
    let order = [3, 1, 4, 0, 2];
    let gates = Gates::new();
    let mut stream = gates.source(order.len()).bounded(order.len(), 0);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    for (step, id) in order.into_iter().enumerate() {
        gates.open(id);
        assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(id)));
        if step + 1 < order.len() {
            assert_eq!(poller.poll(&mut stream), Poll::Pending);
        }
    }
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
}

#[test]
fn a_later_item_that_completes_first_is_yielded_first() {
    // Two workers: the first item blocks, later ones keep flowing past it.
    let gates = Gates::new();
    let mut stream = gates.source(6).bounded(2, 1);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    for id in 1..6 {
        gates.open(id);
        assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(id)));
    }
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    gates.open(0);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(0)));
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
}

#[test]
fn untaken_outputs_keep_their_workers() {
    for workers in [1, 2, 4, 7] {
        let gates = Gates::new();
        let (source, counts) = counted(gates.source(100));
        let waiting = 2;
        let mut stream = source.bounded(workers, waiting);
        let poller = Poller::new();
        assert_eq!(poller.poll(&mut stream), Poll::Pending);

        // Every running future completes before the consumer polls again: one
        // poll finds them all complete, hands out one output and holds the rest.
        for id in 0..workers {
            gates.open(id);
        }
        assert!(matches!(poller.poll(&mut stream), Poll::Ready(Some(_))));
        let stats = stream.stats();
        assert_eq!(stats.held, workers - 1, "W={workers}: {stats:?}");
        // Only the worker of the output just taken is free again.
        assert_eq!(stats.active, 1, "W={workers}: {stats:?}");
        assert_eq!(gates.running(), 1);
        assert_eq!(gates.started(), workers + 1);
        assert_eq!(stats.waiting, waiting);
        assert_eq!(counts.pulled(), workers + waiting + 1);
        assert_eq!(stats.peak_held, workers);

        // Taking the held outputs one by one frees one worker each.
        for taken in 1..workers {
            assert!(matches!(poller.poll(&mut stream), Poll::Ready(Some(_))));
            let stats = stream.stats();
            assert_eq!(stats.held, workers - 1 - taken);
            assert_eq!(stats.active, 1 + taken);
            assert!(stats.active + stats.held <= workers);
        }
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        assert_eq!(gates.running(), workers);
        assert_eq!(counts.pulled(), 2 * workers + waiting);
    }
}

#[test]
fn futures_that_complete_at_once_are_held_within_the_worker_budget() {
    let (source, counts) = counted(stream::iter(0..20).map(std::future::ready));
    let mut stream = source.bounded(3, 2);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(0)));
    let stats = stream.stats();
    assert!(stats.active + stats.held <= 3, "{stats:?}");
    assert_eq!(stats.peak_held, 3);
    assert_eq!(stats.waiting, 2);
    // Three held at first, one taken and one started in its place, two waiting.
    assert_eq!(counts.pulled(), 3 + 1 + 2);
    let rest = poller.drain_ready(&mut stream);
    assert_eq!(rest, (1..20).collect::<Vec<_>>());
    assert!(stream.stats().peak_held <= 3);
}

#[test]
fn active_plus_held_never_exceeds_workers() {
    for seed in 0..20 {
        let workers = 1 + seed as usize % 5;
        let count = 50;
        let gates = Gates::new();
        let mut stream = gates.source(count).bounded(workers, 3);
        let poller = Poller::new();
        let mut rng = Rng::new(seed);
        let mut outputs = Vec::new();
        loop {
            let poll = poller.poll(&mut stream);
            let stats = stream.stats();
            assert!(
                stats.active + stats.held <= workers,
                "seed {seed} W={workers}: {stats:?}"
            );
            assert!(gates.running() <= workers);
            match poll {
                Poll::Ready(Some(id)) => outputs.push(id),
                Poll::Ready(None) => break,
                Poll::Pending => {}
            }
            // Open a random number of the pending gates before the next poll,
            // so several complete between two polls and some outputs are held.
            let pending: Vec<usize> = (0..count).filter(|&id| gates.waker(id).is_some()).collect();
            if matches!(poll, Poll::Pending) || rng.below(2) == 0 {
                for &id in &pending {
                    if rng.below(2) == 0 {
                        gates.open(id);
                    }
                }
                if matches!(poll, Poll::Pending) && !pending.is_empty() {
                    gates.open(pending[rng.below(pending.len())]);
                }
            }
        }
        outputs.sort_unstable();
        assert_eq!(outputs, (0..count).collect::<Vec<_>>(), "seed {seed}");
    }
}
