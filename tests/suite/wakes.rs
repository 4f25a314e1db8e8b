//! Contract point 12, in both modes (with 7, 8 and 9 at its edges; 18 and 19
//! spawned): wakes from other threads, repeated wakes, wakes during the
//! future's own poll, stale wakes from futures that already finished (their
//! worker now runs another), futures that never wake, and wakes after the
//! stream was dropped. None is lost or misdirected, none makes the stream
//! spin, panic, change an output or keep memory alive. Spawned, a future's
//! waker is its worker task's: the step-by-step executor polls a woken task
//! once however often it was woken, as tokio and smol do.
//!
//! Deterministic where it can be (gates, an executor the test steps); the
//! tests that open gates from many threads at once run in place on
//! `futures::executor`, with a watchdog.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;

use bounded_buffered::BoundedStreamExt;
use futures::executor::block_on;
use futures::stream::{self, Stream, StreamExt};
use support::{
    Driven, Gates, Rng, StepExecutor, WakeCount, Watchdog, both_modes, drive, fed_source,
    poll_once, yield_then,
};

/// Polls to the end with nothing but the stream's own wakes to go on: each
/// `Pending` must come with a wake of the consumer already sent (spawned: by
/// the time the tasks stalled), or an executor would hang. Returns the
/// outputs, sorted.
fn take_all_woken<T: Ord>(run: &mut Driven<'_, T>) -> Vec<T> {
    let mut outputs = Vec::new();
    loop {
        let wakes = run.wakes();
        match run.poll() {
            Poll::Ready(Some(output)) => outputs.push(output),
            Poll::Ready(None) => break,
            Poll::Pending => assert!(run.wakes() > wakes, "pending with no wake pending"),
        }
    }
    outputs.sort_unstable();
    outputs
}

/// Wakes itself `yields` times, then completes with `id`; hands a clone of
/// every waker it is given to `keep`, to be woken again at will.
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

/// In its first poll, has its waker woken from another thread and then wakes
/// it itself; afterwards it waits for nothing and counts its polls.
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

/// Two futures that never finish; every poll of future 0 after its first
/// wakes future 1 (as releasing a lock or sending on a channel would).
#[derive(Clone, Default)]
struct Pokes {
    polls: Arc<[AtomicUsize; 2]>,
    wakers: Arc<[Mutex<Option<Waker>>; 2]>,
}

impl Pokes {
    fn future(&self, id: usize) -> Poke {
        Poke {
            id,
            pokes: self.clone(),
        }
    }

    fn polls(&self) -> [usize; 2] {
        [0, 1].map(|id| self.polls[id].load(SeqCst))
    }

    fn wake(&self, id: usize) {
        let waker = self.wakers[id].lock().unwrap().clone();
        waker.expect("polled once").wake();
    }
}

struct Poke {
    id: usize,
    pokes: Pokes,
}

impl Future for Poke {
    type Output = usize;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        let Pokes { polls, wakers } = &self.pokes;
        let polled = polls[self.id].fetch_add(1, SeqCst) + 1;
        *wakers[self.id].lock().unwrap() = Some(cx.waker().clone());
        if self.id == 0 && polled > 1 {
            self.pokes.wake(1);
        }
        Poll::Pending
    }
}

both_modes! {
    /// Point 12: a future completed from another thread wakes the consumer,
    /// once (spawned: through its task, which hands the output over).
    fn a_wake_from_another_thread_reaches_the_consumer(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(4).bounded(4, 0));
        for id in [2, 0, 3, 1] {
            // Only a `Pending` obliges the stream to wake its consumer later.
            assert!(run.poll().is_pending());
            let wakes = run.wakes();
            let opener = gates.clone();
            thread::spawn(move || opener.open(id))
                .join()
                .expect("the opening thread panicked");
            run.settle();
            assert_eq!(run.wakes(), wakes + 1, "the wake of gate {id} was lost");
            assert_eq!(run.poll(), Poll::Ready(Some(id)));
        }
        assert_eq!(run.poll(), Poll::Ready(None));
    }

    /// Point 7: a burst of wakes of one future costs one poll of it.
    fn repeated_wakes_of_one_future_cost_one_poll(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(10).bounded(3, 1));
        assert!(run.poll().is_pending());
        let waker = gates.waker(1).expect("gate 1 runs");
        let wakes = run.wakes();
        for _ in 0..10 {
            waker.wake_by_ref();
        }
        // In place the burst wakes the stream's task once; spawned it wakes
        // item 1's worker task, and the consumer, with nothing to take, not at
        // all.
        let consumer_wakes = usize::from(!mode.is_spawned());
        assert_eq!(run.wakes(), wakes + consumer_wakes, "a burst costs one wake-up");
        assert!(run.poll().is_pending());
        assert_eq!(gates.polls_of(3), [1, 2, 1]);
    }

    /// Point 12: a stale wake after the worker took the next item polls only
    /// that item, at most once, and yields nothing wrong.
    fn a_stale_wake_after_slot_reuse_polls_only_the_new_future_and_yields_nothing_wrong(mode) {
        // One worker: item 1 runs in the slot (the task) item 0 ran in.
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(3).bounded(1, 0));
        assert!(run.poll().is_pending());
        let stale = gates.waker(0).expect("gate 0 runs");
        gates.open(0);
        assert_eq!(run.poll(), Poll::Ready(Some(0)));
        assert_eq!(gates.polls(1), 1);

        // Item 0's waker fires after item 0 finished.
        let wakes = run.wakes();
        stale.wake_by_ref();
        assert!(run.wakes() <= wakes + 1);
        assert!(run.poll().is_pending(), "no output for a stale wake");
        // At most a spurious poll of the future now in that slot, never of
        // item 0.
        assert_eq!(gates.polls(0), 2);
        assert!(gates.polls(1) <= 2);
        assert!(!gates.is_started(2));

        gates.open(1);
        assert_eq!(run.poll(), Poll::Ready(Some(1)));
        stale.wake();
        gates.open(2);
        assert_eq!(run.take_to_end(), [2]);
        assert!(run.is_terminated());
    }

    /// Point 12: a stale wake of a worker with no future polls nothing.
    fn a_stale_wake_of_an_empty_slot_is_harmless(mode) {
        let gates = Gates::new();
        let (source, feed) = fed_source();
        let mut run = drive!(mode, source.bounded(2, 0));
        feed.push(gates.gate(0));
        feed.push(gates.gate(1));
        assert!(run.poll().is_pending());
        let stale = gates.waker(0).expect("gate 0 runs");
        gates.open(0);
        assert_eq!(run.poll(), Poll::Ready(Some(0)));
        // The slot of item 0 is empty now: the source has nothing more yet.
        assert_eq!(run.stats().active, 1);
        stale.wake();
        assert!(run.poll().is_pending());
        assert_eq!(gates.polls(1), 1, "the other future is not polled");

        feed.push(gates.gate(2));
        feed.close();
        gates.open(1);
        gates.open(2);
        let mut rest = run.take_to_end();
        rest.sort_unstable();
        assert_eq!(rest, [1, 2]);
        assert!(run.is_terminated());
    }

    /// Point 12: a future's wake during its own poll is acted on.
    fn a_wake_during_the_futures_own_poll_is_not_lost(mode) {
        // Futures that wake themselves before completing: in place each such
        // wake lands while the consumer is inside `poll_next`.
        let count = 50;
        let mut run = drive!(
            mode,
            stream::iter(0..count).map(|i| yield_then(1 + i % 3, i)).bounded(4, 2)
        );
        assert_eq!(take_all_woken(&mut run), (0..count).collect::<Vec<_>>());
    }

    /// Point 12: a wake while the consumer is not parked (it has not returned
    /// `Pending` since its last output) is found on the next poll.
    fn a_wake_between_polls_while_not_parked_is_not_lost(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(3).bounded(3, 0));
        assert!(run.poll().is_pending());
        gates.open(0);
        gates.open(1);
        assert!(matches!(run.poll(), Poll::Ready(Some(_))));
        gates.open(2);
        assert_eq!(run.take_to_end().len(), 2);
        assert!(run.is_terminated());
    }

    /// Point 12: self-wakes of futures that poll a nested stream are not
    /// swallowed by its bookkeeping.
    fn self_wakes_around_a_nested_stream_are_not_lost(mode) {
        // Each outer future wakes itself, then takes one output of an inner
        // (in place) bounded stream of self-waking futures, and returns
        // `Pending` until the inner stream ends. Its own wake is all that
        // brings it back: the inner stream's bookkeeping of "the future being
        // polled woke itself" must not swallow it.
        let _watchdog = Watchdog::start("self_wakes_around_a_nested_stream_are_not_lost");
        let outer = stream::iter(0..20usize).map(|i| {
            let mut inner = stream::iter(0..5usize)
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
        });
        let mut run = drive!(mode, outer.bounded(3, 2));
        let expected: Vec<usize> = (0..20).map(|i| 50 * i + 10).collect();
        assert_eq!(take_all_woken(&mut run), expected);
    }

    /// Point 12 (and 9, 19): stale wakes, from this thread and another, change
    /// no output and cost at most one spurious poll each; after the drop they
    /// reach nothing.
    fn stale_wakes_long_after_finishing_change_no_output(mode) {
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
        let mut run = drive!(mode, source.bounded(3, 2));
        let mut out = Vec::new();
        let mut consumer_polls = 0;
        let mut stale_wakes = 0;
        loop {
            consumer_polls += 1;
            assert!(consumer_polls < 100 * ITEMS, "stale wakes keep the stream from finishing");
            match run.poll() {
                Poll::Ready(Some(id)) => {
                    out.push(id);
                    // Every waker ever handed out fires again, from here and
                    // from another thread: most belong to finished futures,
                    // whose slots now run other items.
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
        // A stale wake costs at most one spurious poll of whatever runs in its
        // slot.
        let needed: usize = (0..ITEMS).map(|id| id % 3 + 1).sum();
        let polled = polls.load(SeqCst);
        assert!(
            polled <= needed + stale_wakes,
            "{polled} polls for {needed} needed and {stale_wakes} stale wakes"
        );
        run.drop_stream();
        // And once the stream is gone, they reach nothing.
        let stale: Vec<Waker> = std::mem::take(&mut *kept.lock().unwrap());
        thread::spawn(move || stale.into_iter().for_each(Waker::wake))
            .join()
            .unwrap();
        run.settle();
        assert_eq!(polls.load(SeqCst), polled, "a wake after the drop polled something");
    }

    /// Points 7 and 12: futures that never wake leave the stream pending; it
    /// polls none of them again and never wakes its consumer.
    fn futures_that_never_wake_leave_the_stream_pending_without_spinning(mode) {
        // Gates nobody opens: they never wake.
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(10).bounded(3, 2));
        for _ in 0..100 {
            assert!(run.poll().is_pending());
        }
        // Each started future was polled once, when it started, and never
        // again.
        assert_eq!(gates.polls_of(10).iter().sum::<usize>(), 3);
        assert_eq!(gates.polls_of(3), [1, 1, 1]);
        assert_eq!(run.wakes(), 0, "the stream woke its consumer with nothing to do");
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting, stats.pulled), (3, 2, 5));
    }

    /// Points 9, 12 and 19: wakes from another thread after the stream was
    /// dropped are harmless, and the dropped stream lets go of the consumer's
    /// waker although the futures' wakers are still alive.
    fn wakes_from_another_thread_after_the_stream_was_dropped_are_harmless(mode) {
        let gates = Gates::new();
        // By hand rather than through `Driven`: the test owns the consumer's
        // waker, to see who holds it.
        let built = gates.source(6).bounded(4, 1).ordered(3);
        let mut executor = StepExecutor::new();
        let mut stream: Pin<Box<dyn Stream<Item = usize> + Send>> = if mode.is_spawned() {
            Box::pin(built.spawn_on(executor.spawner()))
        } else {
            Box::pin(built)
        };
        let consumer = Arc::new(WakeCount::default());
        let waker = Waker::from(Arc::clone(&consumer));
        let first = stream.as_mut().poll_next(&mut Context::from_waker(&waker));
        assert!(first.is_pending());
        executor.run_until_stalled();
        drop(waker);
        assert_eq!(gates.started(), 3, "the window lets three futures start");
        let wakers: Vec<Waker> = (0..3).map(|id| gates.waker(id).expect("it runs")).collect();

        // Another thread holds the futures' wakers while the stream is dropped.
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let late = thread::spawn(move || {
            wait.recv().unwrap();
            for waker in &wakers {
                waker.wake_by_ref();
            }
            wakers.into_iter().for_each(Waker::wake);
        });
        drop(stream);
        // In place the drop does it all at once (point 9); spawned, each task
        // drops its future when next polled, which the drop arranges (point 19).
        executor.run_until_stalled();
        assert_eq!(executor.live_tasks(), 0);
        let counts = gates.counts();
        assert_eq!(counts.futures_dropped, 4, "three started futures and one waiting item");
        assert!(counts.all_dropped(), "{counts:?}");
        assert_eq!(
            Arc::strong_count(&consumer),
            1,
            "the dropped stream keeps the consumer's waker"
        );
        // The drop wakes nobody: the consumer is the one dropping (spawned,
        // its cancellation lets the consumer's waker go without waking it).
        let at_drop = consumer.get();
        assert_eq!(at_drop, 0, "the drop woke the consumer");
        go.send(()).unwrap();
        late.join().expect("a late wake panicked");
        executor.run_until_stalled();
        assert_eq!(consumer.get(), at_drop, "a late wake reached the consumer");
    }

    /// Point 7: two wakes during one poll, one from another thread, cost one
    /// more poll.
    fn two_wakes_during_one_poll_cost_one_more_poll(mode) {
        let polls = Arc::new(AtomicUsize::new(0));
        let future = WokenTwiceInOnePoll {
            polls: Arc::clone(&polls),
        };
        let mut run = drive!(mode, stream::iter([future]).bounded(1, 0));
        for _ in 0..3 {
            assert!(run.poll().is_pending());
        }
        // The slot (spawned: the task) is queued once for both wakes: one poll
        // to start, one after.
        assert_eq!(polls.load(SeqCst), 2, "a slot was queued twice");
    }

    /// Points 8 and 12: a future that wakes itself in every poll finishes,
    /// and the consumer is woken each time it is handed `Pending`.
    fn a_future_waking_itself_in_every_poll_finishes_and_the_stream_yields_between(mode) {
        const YIELDS: usize = 1_000;
        let polls = Arc::new(AtomicUsize::new(0));
        let future = Yielding {
            id: 7,
            yields: YIELDS,
            polls: Arc::clone(&polls),
            keep: Arc::default(),
        };
        let mut run = drive!(mode, stream::iter([future]).bounded(1, 0));
        let mut pendings = 0;
        let output = loop {
            let before = run.wakes();
            match run.poll() {
                Poll::Ready(output) => break output,
                Poll::Pending => {
                    pendings += 1;
                    // The stream asked to be polled again: otherwise the
                    // output would never come.
                    assert_eq!(run.wakes(), before + 1, "pending without a wake: a lost wakeup");
                }
            }
        };
        assert_eq!(output, Some(7));
        assert_eq!(polls.load(SeqCst), YIELDS + 1);
        // In place, the budget of 128 polls per `poll_next` holds: the consumer
        // got control back every 128 self-wakes, and not more often (point 8).
        // Spawned, the future runs in its task while the consumer is away
        // (point 18): only the first poll, which spawns it, is `Pending`.
        let expected = if mode.is_spawned() { 1 } else { YIELDS / 128 };
        assert_eq!(pendings, expected, "{pendings} pending returns for {YIELDS} self-wakes");
    }
}

/// Point 7, in place: a wake that one future's poll sends to another, still
/// waiting for its poll in the same pass, is answered by that poll: the next
/// `poll_next` does not poll it again for nothing. (Spawned, the executor
/// decides: a woken task may be polled before the one that wakes it again.)
#[test]
fn a_wake_for_a_future_about_to_be_polled_is_answered_by_that_poll() {
    let pokes = Pokes::default();
    let mut stream = stream::iter([pokes.future(0), pokes.future(1)]).bounded(2, 0);
    assert!(poll_once(&mut stream).is_pending());
    assert_eq!(pokes.polls(), [1, 1]);
    // Both woken before the next poll, which polls 0 first (it started
    // first); 0's poll then wakes 1 again, before 1 is polled: one poll
    // answers both of 1's wakes.
    pokes.wake(0);
    pokes.wake(1);
    assert!(poll_once(&mut stream).is_pending());
    assert!(poll_once(&mut stream).is_pending());
    assert_eq!(
        pokes.polls(),
        [2, 2],
        "a wake already answered polled future 1 again"
    );
}

/// Point 12 on a real executor, in place: four threads open every gate, in a
/// shuffled order, while the consumer sleeps in `block_on`.
#[test]
fn many_threads_opening_gates_lose_no_output() {
    let _watchdog = Watchdog::start("many_threads_opening_gates_lose_no_output");
    for seed in 0..5 {
        let count = 200;
        let gates = Gates::new();
        let mut order: Vec<usize> = (0..count).collect();
        Rng::new(seed).shuffle(&mut order);
        // Each gate is opened as soon as it was started.
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

/// Point 12 on a real executor, in place: threads waking running (and
/// finished) futures over and over change no output.
#[test]
fn threads_waking_running_futures_over_and_over_change_no_output() {
    // Each output is progress: a lost wake stops them, while the test as a
    // whole may take long where threads run one at a time (under valgrind
    // the spinning nudgers and opener took 11 to 25 s of it).
    let watchdog = Watchdog::start("threads_waking_running_futures_over_and_over_change_no_output");
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
                while !stop.load(SeqCst) {
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
    let outputs: Vec<usize> = block_on(
        gates
            .source(count)
            .bounded(8, 4)
            .ordered(16)
            .inspect(|_| watchdog.tick())
            .collect(),
    );
    stop.store(true, SeqCst);
    opener.join().expect("the opener panicked");
    for nudger in nudgers {
        nudger.join().expect("a nudging thread panicked");
    }
    assert_eq!(outputs, (0..count).collect::<Vec<_>>());
}
