//! Contract points 6, 7 and 8: freed workers are refilled before an output is
//! handed out, a wake costs one poll of the woken future and nothing else, and
//! one `poll_next` does a bounded amount of work.

// Under `--cfg loom` the crate uses loom's primitives, which work only inside
// `loom::model`, and smol is not built: these tests are for the normal build.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll};

use bounded_buffered::BoundedStreamExt;
use futures::StreamExt;
use futures::stream;
use support::{Gates, Poller, Watchdog, counted, yield_then};

#[test]
fn a_freed_worker_is_refilled_and_polled_before_the_output_is_handed_out() {
    for ordered in [false, true] {
        let (workers, waiting) = (3, 2);
        let gates = Gates::new();
        let (source, counts) = counted(gates.source(100));
        let mut stream = source.bounded(workers, waiting);
        if ordered {
            stream = stream.ordered(workers);
        }
        let poller = Poller::new();
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        assert_eq!(gates.polls_of(6), [1, 1, 1, 0, 0, 0]);

        // Unordered any item frees a worker; ordered only the head does.
        let done = if ordered { 0 } else { 1 };
        gates.open(done);
        assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(done)));
        // Before the consumer polls again: the oldest waiting item (3) runs and
        // was polled once, and the waiting queue was topped up from the source.
        assert_eq!(gates.polls(3), 1, "ordered={ordered}");
        assert_eq!(gates.running(), workers, "ordered={ordered}");
        assert_eq!(counts.pulled(), workers + waiting + 1, "ordered={ordered}");
        assert_eq!(gates.polls(5), 0, "a waiting item is not polled");
        let stats = stream.stats();
        assert_eq!(
            (stats.active, stats.waiting, stats.held),
            (workers, waiting, 0)
        );
    }
}

#[test]
fn without_a_waiting_queue_a_freed_worker_is_refilled_straight_from_the_source() {
    let gates = Gates::new();
    let (source, counts) = counted(gates.source(10));
    let mut stream = source.bounded(2, 0);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    gates.open(0);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(0)));
    assert_eq!(counts.pulled(), 3);
    assert_eq!(gates.polls(2), 1);
    assert_eq!(stream.stats().active, 2);
}

#[test]
fn a_wake_polls_only_the_woken_future() {
    let workers = 64;
    let gates = Gates::new();
    let mut stream = gates.source(1_000).bounded(workers, 0);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    let mut expected = vec![1; workers];
    assert_eq!(gates.polls_of(workers), expected);

    // A poll that nothing woke polls no future at all.
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(gates.polls_of(workers), expected);

    // Spurious wakes: each costs exactly one poll of the woken future.
    for id in [17, 0, 63, 17] {
        gates.nudge(id);
        assert_eq!(poller.poll(&mut stream), Poll::Pending);
        expected[id] += 1;
        assert_eq!(gates.polls_of(workers), expected, "after waking {id}");
    }

    // A completion: the finished future is polled once more, its replacement
    // once, nothing else.
    gates.open(40);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(40)));
    expected[40] += 1;
    expected.push(1);
    assert_eq!(gates.polls_of(workers + 1), expected);
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(gates.polls_of(workers + 1), expected);
}

#[test]
fn several_wakes_before_one_poll_cost_one_poll_each() {
    let gates = Gates::new();
    let mut stream = gates.source(100).bounded(32, 4);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    let woken = [3, 9, 30, 31];
    for id in woken {
        gates.nudge(id);
    }
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    for id in 0..32 {
        let expected = if woken.contains(&id) { 2 } else { 1 };
        assert_eq!(gates.polls(id), expected, "gate {id}");
    }
}

/// A future that wakes itself and stays pending forever, counting its polls.
struct Spin {
    polls: Arc<AtomicUsize>,
}

impl Future for Spin {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.polls.fetch_add(1, SeqCst);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[test]
fn futures_that_always_wake_themselves_cannot_trap_the_caller() {
    // 3 does not divide the budget of 128 polls, and 200 is more than it.
    for workers in [1, 3, 4, 200] {
        let _watchdog =
            Watchdog::start("futures_that_always_wake_themselves_cannot_trap_the_caller");
        let polls = Arc::new(AtomicUsize::new(0));
        let spinning = Arc::clone(&polls);
        let mut stream = stream::repeat_with(move || Spin {
            polls: Arc::clone(&spinning),
        })
        .bounded(workers, 2);
        let poller = Poller::new();
        let mut previous = 0;
        for call in 0..5 {
            // If `poll_next` did not stop on its own, this would never return.
            assert_eq!(poller.poll(&mut stream), Poll::Pending);
            let this_call = polls.load(SeqCst) - previous;
            previous = polls.load(SeqCst);
            assert!(this_call > 0, "call {call}: the futures were not polled");
            // The documented budget of woken polls, plus the first polls of
            // newly started futures.
            assert!(
                this_call <= 128 + workers,
                "{workers} workers, call {call}: {this_call} polls"
            );
            assert_eq!(
                poller.wakes(),
                call + 1,
                "{workers} workers, call {call}: returned Pending without waking its task"
            );
        }
    }
}

#[test]
fn futures_that_need_many_polls_all_complete_across_bounded_calls() {
    let _watchdog =
        Watchdog::start("futures_that_need_many_polls_all_complete_across_bounded_calls");
    let count = 40;
    let mut stream = stream::iter(0..count)
        .map(|i| yield_then(300, i))
        .bounded(5, 3);
    // Nothing outside the stream will wake it: a `Pending` without a wake of
    // its own would hang a real executor.
    let outputs = Poller::new().drain_self_woken(&mut stream, |wakes| {
        assert_eq!(wakes, 1, "a lost self-wake");
    });
    assert_eq!(outputs, (0..count).collect::<Vec<_>>());
}

#[test]
fn an_always_ready_source_of_ready_futures_yields_one_output_per_call() {
    // Each call hands out an output; the source is asked only for what the
    // budgets admit, however many items it has ready.
    let (source, counts) = counted(stream::iter(0..1_000_000).map(std::future::ready));
    let mut stream = source.bounded(4, 4);
    let poller = Poller::new();
    for taken in 1..=10 {
        assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(taken - 1)));
        // Full workers (held outputs keep theirs), a full queue, and one more
        // pulled for each output taken.
        assert_eq!(counts.pulled(), 4 + 4 + taken);
    }
}
