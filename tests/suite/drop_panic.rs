//! Drop, cancellation and panics, in both modes (contract points 9 and 10; 19
//! and 20 spawned; 11): dropping the stream drops the source, every running
//! future, every waiting item and every held output exactly once (in place at
//! once; spawned the source, the queue and the held outputs at once, each
//! running future with its task, on its next turn) and lets go of the
//! consumer's waker; a panic in a future, the source or a destructor comes
//! out of the consumer's poll (spawned: caught in its task, which cancels the
//! others first), never as an end, and leaves a stream that still drops
//! cleanly and refuses to be polled again; bad budgets panic.
//!
//! Deterministic: the futures are gates the test opens; spawned streams run
//! their tasks on an executor the test steps (`support::drive!`). Some tests
//! run on tokio's multi-thread runtime or a smol pool.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;

use bounded_buffered::{BoundedStreamExt, Spawned};
use futures::future::BoxFuture;
use futures::stream::{self, Stream};
use futures::{FutureExt, StreamExt};
use support::{
    Driven, Fault, Gates, INJECTED, Mode, OrderedIf, Output, StepExecutor, Watchdog, both_modes,
    both_pools, caught, counted, drive, drop_before_tasks, poll_once, quiet_injected_panics,
    tokio_multi_thread,
};

/// A waker that only counts how many handles to it exist.
struct Idle;

impl Wake for Idle {
    fn wake(self: Arc<Self>) {}
}

/// Polls once (settled), expecting a panic; returns its message.
fn poll_expecting_panic<T>(run: &mut Driven<'_, T>) -> String {
    caught(|| run.poll().map(|_| ())).expect_err("expected a panic")
}

/// After the panic: polling again refuses, saying why (point 10 in place, 20
/// spawned); dropping the stream drops every pulled future and every output
/// exactly once.
fn check_after_panic(run: &mut Driven<'_, Output>, gates: &Gates, taken: Vec<Output>) {
    run.check_refuses_polls();
    assert!(!run.is_terminated(), "a panic is no end");
    let pulled = gates.pulled();
    run.drop_stream();
    assert_eq!(gates.counts().futures_dropped, pulled);
    for id in 0..pulled {
        assert_eq!(gates.drops(id), 1, "item {id}");
    }
    drop(taken);
    assert!(gates.counts().all_dropped(), "{gates:?}");
}

/// Which destructors ran, by id, in the order they ran.
#[derive(Clone, Default)]
struct Drops(Arc<Mutex<Vec<usize>>>);

impl Drops {
    /// How often `id`'s destructor ran.
    fn of(&self, id: usize) -> usize {
        let drops = self.0.lock().unwrap();
        drops.iter().filter(|&&dropped| dropped == id).count()
    }

    /// Each of `ids` was dropped exactly once, and nothing else was.
    fn check_each_once(&self, ids: std::ops::Range<usize>, context: &str) {
        for id in ids.clone() {
            assert_eq!(self.of(id), 1, "{context}: drops of {id}");
        }
        assert_eq!(self.0.lock().unwrap().len(), ids.len(), "{context}: drops");
    }
}

/// Records its drop, then panics in its destructor: unless the thread is
/// unwinding already, or even then with `always`.
struct Loud {
    id: usize,
    drops: Drops,
    always: bool,
}

impl Drop for Loud {
    fn drop(&mut self) {
        self.drops.0.lock().unwrap().push(self.id);
        if self.always || !thread::panicking() {
            panic!("{INJECTED} in the drop of {}", self.id);
        }
    }
}

/// A future whose destructor panics (the `Bad` of a fixed bug), pending forever; or,
/// made `ready`, one that completes at once with a [`Loud`] output and drops
/// quietly itself.
struct Bad {
    guard: Option<Loud>,
    output: Option<Loud>,
}

impl Bad {
    fn pending(id: usize, drops: &Drops) -> Self {
        let loud = Loud {
            id,
            drops: drops.clone(),
            always: false,
        };
        Self {
            guard: Some(loud),
            output: None,
        }
    }

    /// Panics in its destructor even while the thread unwinds.
    fn always(id: usize, drops: &Drops) -> Self {
        let mut bad = Self::pending(id, drops);
        bad.guard.as_mut().unwrap().always = true;
        bad
    }

    fn ready(id: usize, drops: &Drops) -> Self {
        let mut bad = Self::pending(id, drops);
        bad.output = bad.guard.take();
        bad
    }
}

impl Future for Bad {
    type Output = Loud;

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Loud> {
        match self.output.take() {
            Some(output) => Poll::Ready(output),
            None => Poll::Pending,
        }
    }
}

both_modes! {
    /// Points 9 and 19: everything the stream owns goes once, the held
    /// outputs, the source and the waiting items at once.
    fn dropping_drops_source_running_waiting_and_held_each_exactly_once(mode) {
        for window in [None, Some(4)] {
            let gates = Gates::new();
            let (source, counts) = counted(gates.tracked_source(usize::MAX));
            let mut run = drive!(mode, source.bounded(2, 3).ordered_if(window));
            assert!(run.poll().is_pending());

            // Unordered: both complete, one is taken, one held, item 2 starts.
            // Ordered: item 1 completes behind the running head and is held.
            let taken = if window.is_some() {
                gates.open(1);
                assert!(run.poll().is_pending());
                None
            } else {
                gates.open(0);
                gates.open(1);
                match run.poll() {
                    Poll::Ready(Some(output)) => Some(output),
                    other => panic!("expected an output, got pending: {}", other.is_pending()),
                }
            };
            let stats = run.stats();
            let active = if window.is_some() { 2 } else { 1 };
            assert_eq!((stats.active, stats.waiting, stats.held), (active, 3, 1), "{window:?}");
            // Either way one worker was freed and refilled from the waiting
            // queue, which pulled one more: workers + waiting + 1.
            let pulled = counts.pulled();
            assert_eq!(pulled, 2 + 3 + 1);
            if mode.is_spawned() {
                // One task per busy worker, spawned as items needed them.
                assert_eq!(run.executor().live_tasks(), 2);
            }
            let completed = 3 - active;
            let drops = gates.counts();
            assert_eq!(drops.futures_dropped, completed, "completed futures are dropped at once");
            assert_eq!((drops.outputs_dropped, drops.source_drops), (0, 0));

            let (tasks, dropped) = drop_before_tasks(&mut run);
            dropped.unwrap();
            // The untaken output, the source and the waiting items go with
            // the stream itself...
            let drops = gates.counts();
            assert_eq!((drops.outputs_dropped, drops.source_drops), (1, 1), "{window:?}");
            if let Some(mut tasks) = tasks {
                assert_eq!(drops.futures_dropped, completed + 3, "the queue goes at once");
                // ...and spawned, each running future on its task's next turn.
                tasks.run_until_stalled();
                assert_eq!(tasks.live_tasks(), 0);
            }
            let drops = gates.counts();
            assert_eq!(drops.futures_dropped, pulled, "{window:?}");
            for id in 0..pulled {
                assert_eq!(gates.drops(id), 1, "{window:?}: item {id}");
            }
            drop(taken);
            assert!(gates.counts().all_dropped(), "{gates:?}");

            // A waker kept by a future that was dropped may still fire: harmless.
            let running = (0..pulled).find(|&id| gates.waker(id).is_some());
            gates.nudge(running.expect("a future was running at drop time"));
        }
    }

    /// Point 9 (19 spawned): the stream lets go of the consumer's waker.
    fn dropping_lets_go_of_the_consumers_waker(mode) {
        let gates = Gates::new();
        let stream = gates.tracked_source(100).bounded(2, 3);
        let mut executor = StepExecutor::new();
        let mut stream: Pin<Box<dyn Stream<Item = Output>>> = match mode {
            Mode::InPlace => Box::pin(stream),
            Mode::Spawned => Box::pin(stream.spawn_on(executor.spawner())),
        };
        let idle = Arc::new(Idle);
        let waker = Waker::from(Arc::clone(&idle));
        let mut cx = Context::from_waker(&waker);
        assert!(stream.as_mut().poll_next(&mut cx).is_pending());
        executor.run_until_stalled();
        gates.open(0);
        executor.run_until_stalled();
        assert!(stream.as_mut().poll_next(&mut cx).is_ready());
        drop(stream);
        executor.run_until_stalled();
        assert_eq!(
            Arc::strong_count(&idle),
            2,
            "only the test's own waker may still refer to the task"
        );
        drop(waker);
        assert_eq!(Arc::strong_count(&idle), 1);
        assert!(gates.counts().all_dropped(), "{gates:?}");
    }

    /// Points 10 and 20: a panic in a running future comes out of the
    /// consumer's poll; spawned, its task cancelled the others first.
    fn a_panic_in_a_running_future_propagates_and_drops_cleanly(mode) {
        for window in [None, Some(5)] {
            let gates = Gates::with_fault(Fault::PollOf(2));
            let mut run = drive!(mode, gates.tracked_source(usize::MAX).bounded(3, 2).ordered_if(window));
            assert!(run.poll().is_pending());
            // Item 1 completes and is held (ordered) or taken (unordered) first.
            gates.open(1);
            let mut taken = Vec::new();
            if let Poll::Ready(Some(output)) = run.poll() {
                assert_eq!(output.id, 1);
                taken.push(output);
            }
            assert_eq!(taken.len(), usize::from(window.is_none()));
            gates.open(2);
            run.settle();
            if mode.is_spawned() {
                // The panic was caught in its task, which cancelled the rest:
                // every task ended and dropped its work before the consumer
                // polls again.
                assert_eq!(run.executor().live_tasks(), 0);
                let counts = gates.counts();
                assert_eq!((counts.source_drops, counts.futures_dropped), (1, counts.pulled));
            }
            let message = poll_expecting_panic(&mut run);
            assert_eq!(message, format!("{INJECTED} in the poll of item 2"));
            check_after_panic(&mut run, &gates, taken);
            if window.is_some() {
                assert_eq!(gates.counts().outputs_made, 1, "the held output of item 1");
            }
        }
    }

    /// Points 10 and 20: a panic in a future's first poll.
    fn a_panic_on_a_futures_first_poll_propagates_and_drops_cleanly(mode) {
        for window in [None, Some(2)] {
            let gates = Gates::with_fault(Fault::FirstPollOf(4));
            let mut run = drive!(mode, gates.tracked_source(usize::MAX).bounded(2, 3).ordered_if(window));
            assert!(run.poll().is_pending());
            let mut taken = Vec::new();
            for id in 0..2 {
                gates.open(id);
                match run.poll() {
                    Poll::Ready(Some(output)) => taken.push(output),
                    _ => panic!("item {id} should be yielded"),
                }
            }
            // Item 4 starts when item 2 completes; its first poll panics. In
            // place that start is the refill of the poll that takes item 2
            // off the stream (point 6): its output is lost with the poll.
            // Spawned the task hands item 2 over first (point 18).
            gates.open(2);
            if mode.is_spawned() {
                let Poll::Ready(Some(output)) = run.poll() else {
                    panic!("item 2 should be yielded");
                };
                assert_eq!(output.id, 2);
                taken.push(output);
            }
            let message = poll_expecting_panic(&mut run);
            assert_eq!(message, format!("{INJECTED} in the first poll of item 4"));
            check_after_panic(&mut run, &gates, taken);
        }
    }

    /// Points 10 and 20: a panic in the source.
    fn a_panic_in_the_source_propagates_and_drops_cleanly(mode) {
        for window in [None, Some(3)] {
            // The source panics on its seventh pull, instead of yielding item 6.
            let gates = Gates::with_fault(Fault::SourceAt(6));
            let mut run = drive!(mode, gates.tracked_source(usize::MAX).bounded(3, 3).ordered_if(window));
            assert!(run.poll().is_pending());
            assert_eq!(gates.pulled(), 6);
            // Taking item 0 frees a worker, and the refill pulls: in place
            // in the poll that takes it (and loses it with the panic),
            // spawned after the handout.
            gates.open(0);
            let mut taken = Vec::new();
            if mode.is_spawned() {
                let Poll::Ready(Some(output)) = run.poll() else {
                    panic!("item 0 should be yielded");
                };
                taken.push(output);
            }
            let message = poll_expecting_panic(&mut run);
            assert_eq!(message, format!("{INJECTED} in the source at item 6"));
            // In place the stream keeps the source until it is dropped;
            // spawned the failure cancelled the run, which dropped it.
            assert_eq!(gates.counts().source_drops, usize::from(mode.is_spawned()));
            check_after_panic(&mut run, &gates, taken);
            assert_eq!(gates.counts().source_drops, 1);
        }
    }

    /// Points 10 and 20: a future that completed, and then panics in its
    /// destructor: the panic reaches the consumer, and the output it made
    /// is dropped once.
    ///
    /// Spawned, `let output = future.await;` in the worker would leak
    /// `output` when the future's destructor panics: the compiler skips
    /// dropping a value already moved into its destination when a local's
    /// destructor unwinds (rust-lang/rust#47949).
    fn the_output_of_a_future_whose_destructor_panics_is_dropped_once(mode) {
        quiet_injected_panics();
        let gates = Gates::with_fault(Fault::DropOf(0));
        gates.open(0);
        let mut run = drive!(mode, gates.tracked_source(2).bounded(1, 0));
        // Spawned, the first poll spawns the task that runs item 0.
        let message = match caught(|| run.poll().map(|_| ())) {
            Ok(poll) if mode.is_spawned() => {
                assert!(poll.is_pending());
                poll_expecting_panic(&mut run)
            }
            poll => poll.expect_err("the destructor's panic"),
        };
        assert_eq!(message, format!("{INJECTED} in the drop of item 0"));
        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Points 9 and 10 (19 and 20 spawned): a destructor that panics when
    /// the stream is dropped. What the dropping thread drops itself (in
    /// place, everything; spawned, the source, the waiting items and the held
    /// outputs) is dropped, every one, and then the first panic comes out of
    /// the drop. Spawned, a running future is dropped by its task on the
    /// executor's next poll: its panic is contained there (nobody is left to
    /// re-raise it to), never unwinding into the executor, which tokio and
    /// smol swallow but a hand-written executor or a thread pool may not.
    /// Either way nothing else leaks: a queued item's panicking destructor
    /// must not end the loop that drops the items behind it.
    fn a_destructor_panicking_when_the_stream_is_dropped_leaks_nothing(mode) {
        quiet_injected_panics();
        // A queued item (1, behind 2 and 3); a running future (0).
        for (workers, waiting, items, bad, pulled, running, queued) in
            [(1, 3, 5, 1, 4, 1, true), (2, 0, 4, 0, 2, 2, false)]
        {
            let gates = Gates::with_fault(Fault::DropOf(bad));
            let mut run = drive!(mode, gates.tracked_source(items).bounded(workers, waiting));
            assert!(run.poll().is_pending());
            assert_eq!((gates.pulled(), gates.running()), (pulled, running));
            let (tasks, dropped) = drop_before_tasks(&mut run);
            if queued || !mode.is_spawned() {
                assert_eq!(dropped, Err(format!("{INJECTED} in the drop of item {bad}")));
            } else {
                dropped.expect("a running future is dropped by its task, not by the drop");
            }
            if let Some(mut tasks) = tasks {
                tasks.run_until_idle(&mut support::Rng::new(0));
                assert_eq!(tasks.live_tasks(), 0);
                assert_eq!(tasks.escaped, Vec::<String>::new());
            }
            gates.check_all_dropped_once();
        }
    }

    /// Point 10 (20 spawned): a stream dropped before its first poll drops
    /// its source, and re-raises the panic of a destructor in it; spawned,
    /// on the caller's thread, with no task ever spawned.
    fn dropping_a_stream_never_polled_re_raises_the_panic_of_a_destructor_in_its_source(mode) {
        quiet_injected_panics();
        for window in [None, Some(1)] {
            let drops = Drops::default();
            let source = stream::iter(vec![Bad::pending(0, &drops)]);
            let mut run = drive!(mode, source.bounded(1, 0).ordered_if(window));
            let context = format!("window {window:?}");
            assert_eq!(
                caught(|| run.drop_stream()),
                Err(format!("{INJECTED} in the drop of 0")),
                "{context}"
            );
            drops.check_each_once(0..1, &context);
            if mode.is_spawned() {
                assert_eq!(run.spawns(), 0, "{context}: no task was ever spawned");
            }
        }
    }

    /// Points 9 and 10 (19 and 20 spawned): the drop drops everything the
    /// dropping thread holds, once, then re-raises the first destructor
    /// panic; spawned, a running item's panic stays in its task.
    fn dropping_the_stream_drops_everything_once_then_re_raises_the_first_destructor_panic(
        mode
    ) {
        quiet_injected_panics();
        const ITEMS: usize = 7;
        for window in [None, Some(3)] {
            let drops = Drops::default();
            // Items 0 and 1 complete at once (their outputs panic when
            // dropped), the others never complete and panic when dropped.
            let items = (0..ITEMS).map(|id| match id {
                0 | 1 => Bad::ready(id, &drops),
                _ => Bad::pending(id, &drops),
            });
            let source = stream::iter(items.collect::<Vec<_>>());
            let mut run = drive!(mode, source.bounded(3, 2).ordered_if(window));
            let context = format!("window {window:?}");
            // In place the first poll hands output 0 out at once; spawned it
            // spawns a task, which runs below.
            match run.poll_alone() {
                Poll::Ready(Some(taken)) => {
                    assert!(!mode.is_spawned() && taken.id == 0, "{context}");
                    assert!(caught(|| drop(taken)).is_err(), "{context}");
                }
                Poll::Pending => assert!(mode.is_spawned(), "{context}"),
                Poll::Ready(None) => panic!("{context}: ended early"),
            }
            run.settle();
            // Spawned: outputs 0 and 1 held, item 2 running, items 3 and 4
            // waiting, 5 and 6 left in the source. In place: output 1 held,
            // items 2 and 3 running, 4 and 5 waiting, 6 in the source.
            assert_eq!(drops.of(0), usize::from(!mode.is_spawned()), "{context}");
            let (tasks, dropped) = drop_before_tasks(&mut run);
            let message = dropped.expect_err(&context);
            if let Some(mut tasks) = tasks {
                // The source goes first: item 5 is the first destructor that
                // panics (item 6's runs during that unwind, quietly).
                assert_eq!(message, format!("{INJECTED} in the drop of 5"), "{context}");
                // The running item is its task's to drop; that panic has
                // nobody to go to, and stays in the task.
                assert_eq!(drops.of(2), 0, "{context}");
                tasks.run_until_stalled();
                assert_eq!(tasks.live_tasks(), 0, "{context}");
            } else {
                assert!(message.starts_with(INJECTED), "{context}: {message}");
            }
            drops.check_each_once(0..ITEMS, &context);
        }
    }
}

/// Point 10, spawned: a stream dropped while its thread unwinds lets that
/// panic go on. Its source's item panics in its destructor even during an
/// unwind: the stream's drop must not re-raise it then, which would abort
/// the process. (In place the item's own destructor would abort it.)
#[test]
fn a_spawned_stream_dropped_while_its_thread_unwinds_lets_that_panic_go_on() {
    quiet_injected_panics();
    let drops = Drops::default();
    let executor = StepExecutor::new();
    let stream = stream::iter(vec![Bad::always(0, &drops)])
        .bounded(1, 0)
        .spawn_on(executor.spawner());
    let unwind = caught(move || {
        let _stream = stream;
        panic!("{INJECTED} in the consumer");
    });
    assert_eq!(unwind, Err(format!("{INJECTED} in the consumer")));
    drops.check_each_once(0..1, "the source's item");
}

/// Point 20, spawned: a future whose destructor panics never unwinds into
/// an executor that drops its unfinished task (as a runtime does when it
/// shuts down); the stream says its task was lost, never a clean end.
#[test]
fn spawned_a_future_whose_destructor_panics_never_unwinds_into_an_executor_that_drops_its_task() {
    quiet_injected_panics();
    for window in [None, Some(1)] {
        let gates = Gates::with_fault(Fault::DropOf(0));
        let stream = gates.source(3).bounded(1, 0).ordered_if(window);
        let mut run = drive!(Mode::Spawned, stream);
        assert!(run.poll().is_pending());
        assert_eq!(gates.running(), 1, "item 0 runs in task 0");
        let executor = std::mem::take(run.executor());
        assert_eq!(caught(|| drop(executor)), Ok(()), "window {window:?}");
        assert!(gates.fault_fired(), "window {window:?}");
        assert_eq!(gates.drops(0), 1, "window {window:?}");
        let message = caught(|| run.poll_alone()).unwrap_err();
        assert!(message.contains("dropped by its executor"), "{message}");
        run.drop_stream();
        gates.check_all_dropped_once();
    }
}

#[test]
fn in_place_into_inner_drops_everything_but_the_source() {
    let gates = Gates::new();
    let (source, counts) = counted(gates.tracked_source(usize::MAX));
    let mut stream = source.bounded(3, 2);
    assert!(poll_once(&mut stream).is_pending());
    let mut source = stream.into_inner();
    assert_eq!(gates.counts().futures_dropped, 5);
    assert_eq!(gates.counts().source_drops, 0);
    // The source resumes where the adapter left it.
    let next = futures::executor::block_on(source.next()).expect("an endless source");
    drop(next);
    assert_eq!(counts.pulled(), 6);
    assert_eq!(gates.drops(5), 1);
    drop(source);
    assert_eq!(gates.counts().source_drops, 1);
}

/// Runs the stream until `workers` futures run and `waiting` items wait, lets
/// item 0 complete and waits until the stream settled again (`refilled` is
/// whether the held output freed a worker, as in ordered mode with a window
/// wider than the workers), then drops it. Once everything was dropped, it
/// was dropped exactly once: `5 + refilled` futures.
fn drop_mid_flight(gates: &Gates, mut stream: Spawned<Output>, refilled: bool) {
    let (workers, waiting) = (3, 2);
    assert!(poll_once(&mut stream).is_pending());
    gates.wait_until("the budgets to fill", |c| {
        c.started == workers && c.pulled == workers + waiting
    });
    assert!(gates.open(0));
    let extra = usize::from(refilled);
    gates.wait_until("the stream to settle", |c| {
        c.outputs_made == 1 && c.started == workers + extra && c.pulled == workers + waiting + extra
    });
    drop(stream);
    gates.wait_until("everything to be dropped", |c| c.all_dropped());
    assert_eq!(gates.counts().futures_dropped, workers + waiting + extra);
}

both_pools! {
    fn spawned_dropping_the_stream_drops_everything_exactly_once(pool) {
        for window in [None, Some(4)] {
            let gates = Gates::new();
            let stream = gates.tracked_source(100).bounded(3, 2).ordered_if(window);
            drop_mid_flight(&gates, stream.spawn_on(pool.spawner()), window.is_some());
            pool.wait_for_no_tasks();
        }
    }

    fn spawned_a_panicking_future_is_re_raised(pool) {
        for window in [None, Some(3)] {
            let gates = Gates::open_except(&[]);
            let (yielded, message) = consume_until_panic(|yielded| {
                let stream = one_panics(&gates, 50, 7).bounded(3, 2).ordered_if(window);
                let mut stream = stream.spawn_on(pool.spawner());
                pool.block_on(take_ids(&mut stream, yielded));
            });
            assert_eq!(message, "item 7 failed");
            assert!(!yielded.contains(&7));
            if window.is_some() {
                // In order, and nothing from the failed item on.
                assert_eq!(yielded, (0..yielded.len()).collect::<Vec<_>>());
            }
            gates.wait_until("everything to be dropped", |c| c.all_dropped());
            pool.wait_for_no_tasks();
        }
    }
}

/// Takes outputs until the stream ends (or panics), recording their ids.
async fn take_ids(stream: &mut Spawned<Output>, yielded: &mut Vec<usize>) {
    let _watchdog = Watchdog::start("a stream with a panicking item");
    while let Some(out) = stream.next().await {
        yielded.push(out.id);
    }
}

/// Consumes the stream; returns what it yielded and the panic that ended it.
/// The test fails if the stream ends cleanly.
fn consume_until_panic(run: impl FnOnce(&mut Vec<usize>)) -> (Vec<usize>, String) {
    let mut yielded = Vec::new();
    let result = caught(|| run(&mut yielded));
    let message = result.expect_err("the stream ended cleanly although an item panicked");
    (yielded, message)
}

/// Items `0..count`, all open, where item `bad` panics once polled.
fn one_panics(
    gates: &Gates,
    count: usize,
    bad: usize,
) -> impl Stream<Item = BoxFuture<'static, Output>> + Send + 'static {
    let items = gates.tracked_source(count).enumerate();
    items.map(move |(index, item)| {
        if index == bad {
            async move {
                drop(item);
                panic!("item {bad} failed")
            }
            .boxed()
        } else {
            item.boxed()
        }
    })
}

#[test]
fn spawned_a_panicking_source_is_re_raised_after_the_items_before_it() {
    let runtime = tokio_multi_thread();
    let gates = Gates::open_except(&[]);
    let (yielded, message) = consume_until_panic(|yielded| {
        let source = gates.tracked_source(100).enumerate().map(|(index, item)| {
            assert!(index < 10, "the source failed at item {index}");
            item
        });
        let mut stream = source
            .bounded(2, 2)
            .ordered(3)
            .spawn_on(runtime.handle().clone());
        runtime.block_on(async {
            while let Some(out) = stream.next().await {
                yielded.push(out.id);
            }
        });
    });
    assert_eq!(message, "the source failed at item 10");
    assert!(yielded.len() <= 10);
    assert_eq!(yielded, (0..yielded.len()).collect::<Vec<_>>());
    gates.wait_until("everything to be dropped", |c| c.all_dropped());
}

#[test]
fn spawned_a_task_dropped_by_the_executor_is_a_panic_not_a_missing_item() {
    // An executor that drops what it is given, as a runtime shutting down does.
    let mut stream = stream::iter(0..5)
        .map(|n| async move { n })
        .bounded(2, 2)
        .spawn_on(|task: BoxFuture<'static, ()>| drop(task));
    let message = caught(|| poll_once(&mut stream)).unwrap_err();
    assert!(message.contains("dropped by its executor"));
}

#[test]
fn spawned_a_runtime_shut_down_mid_stream_is_a_panic_not_an_end() {
    let runtime = tokio_multi_thread();
    let gates = Gates::new();
    let mut stream = gates
        .tracked_source(100)
        .bounded(2, 2)
        .spawn_on(runtime.handle().clone());
    assert!(poll_once(&mut stream).is_pending());
    gates.wait_until("the workers to start", |c| c.started == 2);
    drop(runtime); // drops every task, unfinished
    assert!(gates.counts().all_dropped(), "{gates:?}");
    let message = caught(|| poll_once(&mut stream)).unwrap_err();
    assert!(message.contains("dropped by its executor"));
}

#[test]
#[should_panic(expected = "workers == 0")]
fn zero_workers_panics() {
    let _ = stream::iter([std::future::ready(())]).bounded(0, 4);
}

#[test]
#[should_panic(expected = "workers == 0")]
fn zero_workers_panics_even_with_no_waiting() {
    let _ = stream::empty::<std::future::Ready<()>>().bounded(0, 0);
}

#[test]
#[should_panic(expected = "window == 0")]
fn zero_window_panics() {
    let _ = stream::iter([std::future::ready(())])
        .bounded(2, 0)
        .ordered(0);
}

#[test]
#[should_panic(expected = "before the stream is first polled")]
fn ordered_after_the_first_poll_panics() {
    let gates = Gates::new();
    let mut stream = gates.source(3).bounded(2, 0);
    assert!(poll_once(&mut stream).is_pending());
    let _ = stream.ordered(2);
}

#[test]
#[should_panic(expected = "before the stream is first polled")]
fn ordered_after_the_stream_ended_panics() {
    let mut stream = stream::empty::<std::future::Ready<()>>().bounded(2, 0);
    assert_eq!(poll_once(&mut stream), Poll::Ready(None));
    let _ = stream.ordered(2);
}

#[test]
fn calling_ordered_twice_before_polling_uses_the_last_window() {
    let gates = Gates::new();
    let (source, counts) = counted(gates.source(10));
    let mut stream = source.bounded(8, 0).ordered(2).ordered(3);
    assert!(poll_once(&mut stream).is_pending());
    assert_eq!(counts.pulled(), 3);
}
