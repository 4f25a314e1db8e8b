//! `.adaptive(controller, is_overload)` in place (contract point 26): the
//! controller hears of every completion with its exact run time (on tokio's
//! paused clock), the classifier's verdict and whether the limit was reached;
//! the limit it returns applies at once, and `limits()` and `stats()` show it.

use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use bounded_buffered::BoundedStreamExt;
use futures::{StreamExt, TryStreamExt, stream};
use support::{Gates, Poller, Scripted};

fn tokio_now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

#[test]
fn the_initial_limit_replaces_workers_and_each_answer_applies_at_once() {
    let gates = Gates::new();
    let controller = Scripted::new(2, &[5, 1]);
    let mut stream = gates
        .source(100)
        .bounded(9, 0)
        .adaptive(controller.clone(), |_: &usize| false);
    let limits = stream.limits();
    assert_eq!(limits.workers(), 2);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(gates.running(), 2);

    // The first completion answers 5: three more start in the same poll.
    gates.open(0);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(0)));
    assert_eq!(gates.running(), 5);
    assert_eq!((limits.workers(), stream.stats().workers_limit), (5, 5));
    // The next answers 1: running work goes on, nothing starts until below 1.
    gates.open(1);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(1)));
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(gates.running(), 4);
    assert_eq!(limits.workers(), 1);
    assert_eq!(
        gates.counts().futures_dropped,
        2,
        "only the two that finished"
    );
    let heard = controller.heard();
    assert_eq!(heard.iter().map(|s| s.limit).collect::<Vec<_>>(), [2, 5]);
}

#[test]
fn a_limit_of_zero_from_the_controller_is_taken_as_one() {
    let gates = Gates::new();
    let mut stream = gates
        .source(10)
        .bounded(3, 0)
        .adaptive(Scripted::new(0, &[0]), |_: &usize| false);
    assert_eq!(stream.limits().workers(), 1);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    gates.open(0);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(0)));
    assert_eq!(gates.running(), 1, "still one worker: the stream goes on");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn samples_carry_exact_run_times_verdicts_and_saturation() {
    // Item n sleeps 10 x (n + 1) ms and "overloads" when odd. Two workers,
    // six items, unordered.
    let controller = Scripted::new(2, &[]);
    let mut stream = stream::iter(0..6u64)
        .map(|n| async move {
            tokio::time::sleep(Duration::from_millis(10 * (n + 1))).await;
            n
        })
        .bounded(1, 0)
        .adaptive(controller.clone(), |n: &u64| n % 2 == 1)
        .clock(tokio_now);
    let mut outputs = Vec::new();
    while let Some(n) = stream.next().await {
        outputs.push(n);
    }
    assert_eq!(outputs, [0, 1, 2, 3, 4, 5]);
    let heard = controller.heard();
    let ms = |d: Duration| d.as_millis();
    // Item 0 runs 0-10, item 1 0-20, item 2 10-40, item 3 20-60, item 4
    // 40-90, item 5 60-120.
    let runs: Vec<_> = heard.iter().map(|s| (ms(s.started), ms(s.run))).collect();
    assert_eq!(
        runs,
        [(0, 10), (0, 20), (10, 30), (20, 40), (40, 50), (60, 60)]
    );
    let verdicts: Vec<_> = heard.iter().map(|s| s.overload).collect();
    assert_eq!(verdicts, [false, true, false, true, false, true]);
    // Both workers were busy at every completion but the last: the source
    // was empty by then, and only one ran.
    let saturated: Vec<_> = heard.iter().map(|s| s.saturated).collect();
    assert_eq!(saturated, [true, true, true, true, true, false]);
}

#[test]
fn a_source_that_cannot_keep_up_leaves_the_limit_unreached() {
    let (source, feed) = support::fed_source::<std::future::Ready<u8>>();
    let controller = Scripted::new(4, &[]);
    let mut stream = source
        .bounded(1, 0)
        .adaptive(controller.clone(), |_: &u8| false);
    let poller = Poller::new();
    for n in 0..5 {
        feed.push(std::future::ready(n));
        assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(n)));
    }
    assert!(controller.heard().iter().all(|sample| !sample.saturated));
}

#[test]
fn ordered_a_full_window_counts_as_reached() {
    let gates = Gates::new();
    let controller = Scripted::new(8, &[]);
    let mut stream = gates
        .source(100)
        .bounded(1, 0)
        .ordered(3)
        .adaptive(controller.clone(), |_: &usize| false);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(gates.running(), 3, "min(workers, window)");
    // Item 2 finishes behind the head: the window is full, so reached.
    gates.open(2);
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    let heard = controller.heard();
    assert_eq!(heard.len(), 1);
    assert!(heard[0].saturated);
}

#[test]
fn a_handle_taken_before_adaptive_and_ordered_still_reaches_the_stream() {
    let gates = Gates::new();
    let early = gates.source(100).bounded(1, 0);
    let limits = early.limits();
    let mut stream = early
        .ordered(8)
        .adaptive(Scripted::new(2, &[]), |_: &usize| false)
        .timed();
    assert_eq!(limits.workers(), 2);
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(gates.running(), 2);
    let wakes = poller.wakes();
    limits.set_waiting(3);
    assert_eq!(
        poller.wakes(),
        wakes + 1,
        "the early handle wakes the stream"
    );
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    assert_eq!(stream.stats().waiting, 3);
}

#[test]
fn try_bounded_streams_adapt_too() {
    let gates = Gates::new();
    let controller = Scripted::new(1, &[3]);
    let source = gates
        .source(100)
        .map(Ok::<_, ()>)
        .map_ok(|gate| async move { Ok::<_, ()>(gate.await) });
    let mut stream = source
        .try_bounded(1, 0)
        .adaptive(controller, |output: &Result<usize, ()>| output.is_err());
    let poller = Poller::new();
    assert_eq!(poller.poll(&mut stream), Poll::Pending);
    gates.open(0);
    assert_eq!(poller.poll(&mut stream), Poll::Ready(Some(Ok(0))));
    assert_eq!(gates.running(), 3);
}

#[test]
#[should_panic(expected = "`adaptive` must be called before the stream is first polled")]
fn adaptive_after_the_first_poll_panics() {
    let mut stream = stream::iter(0..3u8).map(std::future::ready).bounded(1, 0);
    let _ = Poller::new().poll_pinned(Pin::new(&mut stream));
    let _ = stream.adaptive(Scripted::new(1, &[]), |_: &u8| false);
}
