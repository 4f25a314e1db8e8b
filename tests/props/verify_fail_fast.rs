//! Randomized schedules for fail fast in place (`try_bounded`): whatever the
//! budgets, the order in which items complete and which item (or which source
//! item) fails, the stream yields exactly the outputs the rule allows, then the
//! error, then `None`; every pulled item is dropped exactly once by the time the
//! error is yielded; no future is first polled after the failure was returned;
//! nothing is pulled after a source error (contract point 21).
//!
//! 256 cases by default; `PROPTEST_CASES=10000 cargo test --release --test
//! verify_fail_fast` runs more.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bounded_buffered::BoundedStreamExt;
use futures::stream::{self, FusedStream, StreamExt};
use proptest::prelude::*;
use support::{Gates, Poller, counted};

#[derive(Debug, PartialEq, Eq)]
struct Failed(usize);

/// The order of events the test cares about, one ticket each.
#[derive(Default)]
struct Tickets {
    next: u64,
    /// The ticket of the latest poll of any item.
    last_poll: u64,
    /// Per item: whether it completed with `Ok`.
    ok: Vec<bool>,
    /// The ticket of the poll that returned the failing `Err`.
    failed_at: Option<u64>,
}

/// A gate that records each poll and its completion on the tickets.
struct Probe {
    gate: support::Gate,
    failing: bool,
    tickets: Arc<Mutex<Tickets>>,
}

impl Future for Probe {
    type Output = Result<usize, Failed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        {
            let mut tickets = this.tickets.lock().unwrap();
            let ticket = tickets.next;
            tickets.next += 1;
            tickets.last_poll = ticket;
        }
        let Poll::Ready(id) = Pin::new(&mut this.gate).poll(cx) else {
            return Poll::Pending;
        };
        let mut tickets = this.tickets.lock().unwrap();
        if this.failing {
            let ticket = tickets.next;
            tickets.failed_at = Some(ticket);
            Poll::Ready(Err(Failed(id)))
        } else {
            tickets.ok[id] = true;
            Poll::Ready(Ok(id))
        }
    }
}

#[derive(Debug, Clone)]
struct Case {
    workers: usize,
    waiting: usize,
    window: Option<usize>,
    items: usize,
    /// Where the failure is: a future (`false`) or the source (`true`), at this item.
    failure: (bool, usize),
    /// Each step opens `1 + choice % 3` gates, each the `choice % count`-th among
    /// the started, unopened ones, so one poll may see several completions.
    choices: Vec<usize>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1..=5usize,
        0..=4usize,
        prop::option::of(1..=7usize),
        1..=24usize,
    )
        .prop_flat_map(|(workers, waiting, window, items)| {
            (
                Just((workers, waiting, window, items)),
                (any::<bool>(), 0..items),
                prop::collection::vec(any::<usize>(), 0..=items),
            )
        })
        .prop_map(
            |((workers, waiting, window, items), failure, choices)| Case {
                workers,
                waiting,
                window,
                items,
                failure,
                choices,
            },
        )
}

fn run(case: &Case) {
    let gates = Gates::new();
    let tickets = Arc::new(Mutex::new(Tickets {
        ok: vec![false; case.items],
        ..Tickets::default()
    }));
    let (from_source, at) = case.failure;
    let source = stream::iter(0..case.items).map({
        let gates = gates.clone();
        let tickets = Arc::clone(&tickets);
        move |id| {
            if from_source && id == at {
                return Err(Failed(id));
            }
            Ok(Probe {
                gate: gates.gate(id),
                failing: !from_source && id == at,
                tickets: Arc::clone(&tickets),
            })
        }
    });
    let (source, counts) = counted(source);
    let mut stream = source.try_bounded(case.workers, case.waiting);
    if let Some(window) = case.window {
        stream = stream.ordered(window);
    }
    let poller = Poller::new();
    let mut yielded = Vec::new();
    let mut opened = vec![false; case.items];
    let mut choices = case.choices.iter();
    let error = loop {
        match poller.poll(&mut stream) {
            Poll::Ready(Some(Ok(id))) => yielded.push(id),
            Poll::Ready(Some(Err(error))) => break error,
            Poll::Ready(None) => panic!("ended without the error: {yielded:?}"),
            Poll::Pending => {
                // Open one started gate; each opening wakes the stream.
                let mut candidates: Vec<usize> = (0..case.items)
                    .filter(|&id| gates.is_started(id) && !opened[id])
                    .collect();
                assert!(
                    !candidates.is_empty(),
                    "pending with nothing to open: a hang"
                );
                let choice = choices.next().copied().unwrap_or(0);
                for _ in 0..=choice % 3 {
                    if candidates.is_empty() {
                        break;
                    }
                    let id = candidates.remove(choice % candidates.len());
                    opened[id] = true;
                    gates.open(id);
                }
            }
        }
    };
    assert_eq!(error, Failed(at));

    // Everything pulled is dropped, exactly once, when the error is yielded.
    let pulled = counts.pulled();
    for id in 0..pulled.min(case.items) {
        if !(from_source && id == at) {
            assert_eq!(gates.drops(id), 1, "item {id} of {pulled} pulled");
        }
    }
    let stats = stream.stats();
    assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));

    let tickets = tickets.lock().unwrap();
    if from_source {
        assert_eq!(pulled, at + 1, "nothing pulled after the source's error");
    } else {
        // No future was polled at all after the failing poll returned.
        let failed_at = tickets.failed_at.expect("the failing item completed");
        assert!(
            tickets.last_poll < failed_at,
            "a future was polled after the error"
        );
    }

    // Exactly the outputs the rule allows came before the error.
    if case.window.is_some() {
        // The complete prefix: every position up to the first that did not
        // complete with `Ok`.
        let prefix = tickets.ok.iter().take_while(|ok| **ok).count();
        assert_eq!(yielded, (0..prefix).collect::<Vec<_>>());
    } else {
        // Every `Ok` completion, each once.
        let mut yielded = yielded.clone();
        yielded.sort_unstable();
        let completed: Vec<usize> = (0..case.items).filter(|&id| tickets.ok[id]).collect();
        assert_eq!(yielded, completed);
    }

    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    assert!(stream.is_terminated());
    assert_eq!(poller.poll(&mut stream), Poll::Ready(None));
    assert_eq!(counts.pulled(), pulled);
}

proptest! {
    #[test]
    fn fail_fast_yields_what_the_rule_allows_then_the_error(case in case()) {
        run(&case);
    }
}
