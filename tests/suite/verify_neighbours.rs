//! Contract point 12 (with 7, 8 and 9 at its edges), misbehaving neighbours:
//! futures that wake with stale wakers long after they finished, wake themselves
//! during their own poll, never wake, or wake from another thread after the
//! stream was dropped. None of them may make the stream lose an output, spin,
//! panic or keep memory alive.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;

use bounded_buffered::BoundedStreamExt;
use futures::stream::{self, Stream, StreamExt};
use futures_test::task::new_count_waker;

/// Wakes itself `yields` times, then completes with `id`; hands a clone of every
/// waker it is given to `keep`, to be woken again at will.
struct Yielding {
    id: usize,
    yields: usize,
    polls: Arc<AtomicUsize>,
    keep: Arc<Mutex<Vec<Waker>>>,
}

impl Future for Yielding {
    type Output = usize;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        self.polls.fetch_add(1, SeqCst);
        self.keep.lock().unwrap().push(cx.waker().clone());
        if self.yields == 0 {
            return Poll::Ready(self.id);
        }
        self.yields -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[test]
fn stale_wakes_long_after_finishing_change_no_output() {
    const ITEMS: usize = 300;
    let polls = Arc::new(AtomicUsize::new(0));
    let kept = Arc::new(Mutex::new(Vec::new()));
    let source = {
        let (polls, kept) = (Arc::clone(&polls), Arc::clone(&kept));
        stream::iter(0..ITEMS).map(move |id| Yielding {
            id,
            yields: id % 3,
            polls: Arc::clone(&polls),
            keep: Arc::clone(&kept),
        })
    };
    let mut stream = Box::pin(source.bounded(3, 2));
    let (waker, _) = new_count_waker();
    let mut cx = Context::from_waker(&waker);
    let mut out = Vec::new();
    let mut consumer_polls = 0;
    let mut stale_wakes = 0;
    loop {
        consumer_polls += 1;
        assert!(
            consumer_polls < 100 * ITEMS,
            "stale wakes keep the stream from finishing"
        );
        match stream.as_mut().poll_next(&mut cx) {
            Poll::Ready(Some(id)) => {
                out.push(id);
                // Every waker ever handed out fires again, from here and from
                // another thread: most belong to finished futures, whose slots
                // now run other items.
                let stale: Vec<Waker> = kept.lock().unwrap().clone();
                stale_wakes += 2 * stale.len();
                stale.iter().for_each(Waker::wake_by_ref);
                thread::spawn(move || stale.into_iter().for_each(Waker::wake))
                    .join()
                    .unwrap();
            }
            Poll::Ready(None) => break,
            Poll::Pending => {}
        }
    }
    out.sort_unstable();
    assert_eq!(out, (0..ITEMS).collect::<Vec<_>>());
    // A stale wake costs at most one spurious poll of whatever runs in its slot.
    let needed: usize = (0..ITEMS).map(|id| id % 3 + 1).sum();
    let polled = polls.load(SeqCst);
    assert!(
        polled <= needed + stale_wakes,
        "{polled} polls for {needed} needed and {stale_wakes} stale wakes"
    );
    drop(stream);
    // And once the stream is gone, they reach nothing.
    let stale: Vec<Waker> = std::mem::take(&mut *kept.lock().unwrap());
    thread::spawn(move || stale.into_iter().for_each(Waker::wake))
        .join()
        .unwrap();
    assert_eq!(
        polls.load(SeqCst),
        polled,
        "a wake after the drop polled something"
    );
}

#[test]
fn a_future_waking_itself_in_every_poll_finishes_and_the_stream_yields_between() {
    const YIELDS: usize = 1_000;
    let polls = Arc::new(AtomicUsize::new(0));
    let keep = Arc::new(Mutex::new(Vec::new()));
    let future = Yielding {
        id: 7,
        yields: YIELDS,
        polls: Arc::clone(&polls),
        keep,
    };
    let mut stream = Box::pin(stream::iter([future]).bounded(1, 0));
    let (waker, woken) = new_count_waker();
    let mut cx = Context::from_waker(&waker);
    let mut pendings = 0;
    let output = loop {
        let before = woken.get();
        match stream.as_mut().poll_next(&mut cx) {
            Poll::Ready(output) => break output,
            Poll::Pending => {
                pendings += 1;
                // The stream gave up after its poll budget, and asked to be
                // polled again: otherwise the output would never come.
                assert_eq!(
                    woken.get(),
                    before + 1,
                    "pending without a wake: a lost wakeup"
                );
            }
        }
    };
    assert_eq!(output, Some(7));
    assert_eq!(polls.load(SeqCst), YIELDS + 1);
    // The budget of 128 polls per `poll_next` holds: the consumer got control
    // back every 128 self-wakes, and not more often.
    assert_eq!(
        pendings,
        YIELDS / 128,
        "{pendings} pending returns for {YIELDS} self-wakes"
    );
}

/// Pending forever, without ever waking; counts its polls.
struct Never {
    polls: Arc<AtomicUsize>,
}

impl Future for Never {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        self.polls.fetch_add(1, SeqCst);
        Poll::Pending
    }
}

#[test]
fn futures_that_never_wake_leave_the_stream_pending_without_spinning() {
    let polls = Arc::new(AtomicUsize::new(0));
    let source = {
        let polls = Arc::clone(&polls);
        stream::iter(0..10).map(move |_| Never {
            polls: Arc::clone(&polls),
        })
    };
    let mut stream = Box::pin(source.bounded(3, 2));
    let (waker, woken) = new_count_waker();
    let mut cx = Context::from_waker(&waker);
    for _ in 0..100 {
        assert!(stream.as_mut().poll_next(&mut cx).is_pending());
    }
    // Each started future was polled once, when it started, and never again.
    assert_eq!(polls.load(SeqCst), 3);
    assert_eq!(
        woken.get(),
        0,
        "the stream woke its consumer with nothing to do"
    );
    let stats = stream.stats();
    assert_eq!((stats.active, stats.waiting, stats.pulled), (3, 2, 5));
}

/// The consumer's waker: counts wakes; its `Arc` count tells whether anything
/// still holds it.
struct ConsumerWaker {
    wakes: AtomicUsize,
}

impl Wake for ConsumerWaker {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, SeqCst);
    }
}

/// Stores its waker where another thread can take it; counts its drops.
struct Handing {
    slot: Arc<Mutex<Vec<Waker>>>,
    drops: Arc<AtomicUsize>,
}

impl Future for Handing {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.slot.lock().unwrap().push(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Handing {
    fn drop(&mut self) {
        self.drops.fetch_add(1, SeqCst);
    }
}

#[test]
fn wakes_from_another_thread_after_the_stream_was_dropped_are_harmless() {
    let handed = Arc::new(Mutex::new(Vec::new()));
    let drops = Arc::new(AtomicUsize::new(0));
    let source = {
        let (handed, drops) = (Arc::clone(&handed), Arc::clone(&drops));
        stream::iter(0..6).map(move |_| Handing {
            slot: Arc::clone(&handed),
            drops: Arc::clone(&drops),
        })
    };
    let mut stream = Box::pin(source.bounded(4, 1).ordered(3));
    let consumer = Arc::new(ConsumerWaker {
        wakes: AtomicUsize::new(0),
    });
    let waker = Waker::from(Arc::clone(&consumer));
    assert!(
        stream
            .as_mut()
            .poll_next(&mut Context::from_waker(&waker))
            .is_pending()
    );
    drop(waker);
    let wakers: Vec<Waker> = std::mem::take(&mut *handed.lock().unwrap());
    assert_eq!(wakers.len(), 3, "the window lets three futures start");

    // Another thread holds the slot wakers while the stream is dropped.
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let late = thread::spawn(move || {
        wait.recv().unwrap();
        for waker in &wakers {
            waker.wake_by_ref();
        }
        wakers.into_iter().for_each(Waker::wake);
    });
    drop(stream);
    // Everything the stream held is gone, and it let go of the consumer's waker
    // although the slot wakers are still alive.
    assert_eq!(
        drops.load(SeqCst),
        4,
        "three started futures and one waiting item"
    );
    assert_eq!(
        Arc::strong_count(&consumer),
        1,
        "the dropped stream keeps the consumer's waker"
    );
    go.send(()).unwrap();
    late.join().expect("a late wake panicked");
    assert_eq!(
        consumer.wakes.load(SeqCst),
        0,
        "a late wake reached the consumer"
    );
}

/// In its first poll, has its waker woken from another thread and then wakes it
/// itself; afterwards it waits for nothing and counts its polls.
struct WokenTwiceInOnePoll {
    polls: Arc<AtomicUsize>,
}

impl Future for WokenTwiceInOnePoll {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.polls.fetch_add(1, SeqCst) == 0 {
            let waker = cx.waker().clone();
            thread::spawn(move || waker.wake()).join().unwrap();
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

#[test]
fn two_wakes_during_one_poll_cost_one_more_poll() {
    let polls = Arc::new(AtomicUsize::new(0));
    let future = WokenTwiceInOnePoll {
        polls: Arc::clone(&polls),
    };
    let mut stream = Box::pin(stream::iter([future]).bounded(1, 0));
    let (waker, _) = new_count_waker();
    let mut cx = Context::from_waker(&waker);
    for _ in 0..3 {
        assert!(stream.as_mut().poll_next(&mut cx).is_pending());
    }
    // The slot is queued once for both wakes: one poll to start, one after.
    assert_eq!(polls.load(SeqCst), 2, "a slot was queued twice");
}
