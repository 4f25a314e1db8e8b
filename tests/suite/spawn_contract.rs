//! Where spawned mode used to break the contract (issue 19, point 4), each
//! case as it runs in both modes wherever it applies in place too:
//!
//! - contract point 15: `size_hint` adds what the source has left;
//! - point 10: a destructor that panics when the stream is dropped panics the
//!   drop, after everything the dropping thread drops was dropped once;
//! - point 21: an item taken before the error its own task's refill pull met
//!   is never polled;
//! - point 20: the same with a source that panics, and a future's destructor
//!   never unwinds into an executor that drops its task.
//!
//! Deterministic: spawned streams run on a [`StepExecutor`] the test steps,
//! and the futures are gates the test opens, or futures that never complete.

use std::future::ready;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread;

use bounded_buffered::BoundedStreamExt;
use futures::stream::{self, Stream};
use support::{
    Case, Failures, Fault, Gates, Got, INJECTED, Journal, POLLED_AFTER_ESCAPE, POLLED_AFTER_PANIC,
    StepExecutor, caught, poll_once, quiet_injected_panics,
};

/// One poll of a fail-fast stream, as the tests compare it.
fn poll_got<S: Stream<Item = support::TryOutput> + Unpin>(stream: &mut S) -> Got {
    Got::of(poll_once(stream))
}

/// Polls a spawned fail-fast stream to its end, running the tasks whenever it
/// is pending; fails on a hang (pending, and no task to run).
fn drain<S: Stream<Item = support::TryOutput> + Unpin>(
    stream: &mut S,
    executor: &mut StepExecutor,
) -> Vec<Got> {
    let mut got = Vec::new();
    loop {
        match poll_got(stream) {
            Got::Pending => {
                assert!(executor.has_ready(), "hang: pending and no task to run");
                executor.run_until_stalled();
            }
            end @ Got::End => {
                got.push(end);
                return got;
            }
            other => got.push(other),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    InPlace,
    Spawned,
}

const MODES: [Mode; 2] = [Mode::InPlace, Mode::Spawned];

/// `$stream` (a `BoundedBuffered`) as it runs in `$mode`: itself, or spawned
/// on `$executor`, boxed so that one test body drives both.
macro_rules! in_mode {
    ($mode:expr, $executor:expr, $stream:expr) => {{
        let stream = $stream;
        let boxed: Box<dyn Stream<Item = _> + Unpin> = match $mode {
            Mode::InPlace => Box::new(stream),
            Mode::Spawned => Box::new(stream.spawn_on($executor.spawner())),
        };
        boxed
    }};
}

/// The next thing the stream yields, running the spawned tasks whenever it
/// is pending (in place there are none: pending there is a hang).
fn next<S: Stream + Unpin + ?Sized>(
    stream: &mut S,
    executor: &mut StepExecutor,
) -> Option<S::Item> {
    loop {
        if let Poll::Ready(next) = poll_once(stream) {
            return next;
        }
        assert!(executor.has_ready(), "hang: pending, with no task to run");
        executor.run_until_stalled();
    }
}

// -- Contract point 15: `size_hint` ---------------------------------------

#[test]
fn size_hint_counts_what_the_source_has_left_before_the_first_poll() {
    for mode in MODES {
        let executor = StepExecutor::new();
        let plain = in_mode!(
            mode,
            executor,
            stream::iter([ready(1), ready(2), ready(3)]).bounded(3, 0)
        );
        assert_eq!(plain.size_hint(), (3, Some(3)), "{mode:?}");
        let ordered = in_mode!(
            mode,
            executor,
            stream::iter([ready(1), ready(2), ready(3)])
                .bounded(3, 0)
                .ordered(2)
        );
        assert_eq!(ordered.size_hint(), (3, Some(3)), "{mode:?} ordered");
        let endless = in_mode!(
            mode,
            executor,
            stream::repeat_with(|| ready(1)).bounded(2, 1)
        );
        assert_eq!(endless.size_hint(), (usize::MAX, None), "{mode:?} endless");
        // Fail fast: any item may be the error that ends the run, so one
        // output is certain, and at most one per item.
        let items = [1, 2, 3].map(|n| Ok::<_, String>(ready(Ok::<u32, String>(n))));
        let fallible = in_mode!(mode, executor, stream::iter(items).try_bounded(3, 0));
        assert_eq!(fallible.size_hint(), (1, Some(3)), "{mode:?} try_bounded");
        assert_eq!(executor.spawns(), 0, "asking spawns nothing");
    }
}

#[test]
fn size_hint_is_what_is_in_flight_plus_what_the_source_has_left_throughout_a_run() {
    const ITEMS: usize = 6;
    for mode in MODES {
        for window in [None, Some(3)] {
            let gates = Gates::new();
            let mut executor = StepExecutor::new();
            let stream = gates.source(ITEMS).bounded(2, 1);
            let stream = match window {
                Some(window) => stream.ordered(window),
                None => stream,
            };
            let mut stream = in_mode!(mode, executor, stream);
            let context = format!("{mode:?}, window {window:?}");
            assert_eq!(stream.size_hint(), (ITEMS, Some(ITEMS)), "{context}");
            assert!(poll_once(&mut stream).is_pending());
            executor.run_until_stalled();
            // 2 running and 1 waiting, 3 left in the source: 6 to come.
            assert_eq!(gates.pulled(), 3, "{context}");
            assert_eq!(stream.size_hint(), (ITEMS, Some(ITEMS)), "{context}");
            for id in 0..ITEMS {
                assert!(gates.open(id), "{context}: gate {id} pulled and closed");
                assert_eq!(next(&mut stream, &mut executor), Some(id), "{context}");
                let left = ITEMS - 1 - id;
                assert_eq!(stream.size_hint(), (left, Some(left)), "{context}");
            }
            assert_eq!(next(&mut stream, &mut executor), None, "{context}");
            assert_eq!(stream.size_hint(), (0, Some(0)), "{context}");
        }
    }
}

// -- Contract point 10: destructor panics on drop -------------------------

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

/// A future whose destructor panics (the issue's `Bad`), pending forever; or,
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

#[test]
fn dropping_a_stream_never_polled_re_raises_the_panic_of_a_destructor_in_its_source() {
    quiet_injected_panics();
    for mode in MODES {
        for window in [None, Some(1)] {
            let drops = Drops::default();
            let executor = StepExecutor::new();
            let stream = stream::iter(vec![Bad::pending(0, &drops)]).bounded(1, 0);
            let stream = match window {
                Some(window) => stream.ordered(window),
                None => stream,
            };
            let stream = in_mode!(mode, executor, stream);
            let context = format!("{mode:?}, window {window:?}");
            assert_eq!(
                caught(|| drop(stream)),
                Err(format!("{INJECTED} in the drop of 0")),
                "{context}"
            );
            drops.check_each_once(0..1, &context);
            assert_eq!(executor.spawns(), 0, "{context}: no task was ever spawned");
        }
    }
}

#[test]
fn dropping_the_stream_drops_everything_once_then_re_raises_the_first_destructor_panic() {
    quiet_injected_panics();
    const ITEMS: usize = 7;
    for mode in MODES {
        for window in [None, Some(3)] {
            let drops = Drops::default();
            let mut executor = StepExecutor::new();
            // Items 0 and 1 complete at once (their outputs panic when
            // dropped), the others never complete and panic when dropped.
            let items = (0..ITEMS).map(|id| match id {
                0 | 1 => Bad::ready(id, &drops),
                _ => Bad::pending(id, &drops),
            });
            let stream = stream::iter(items.collect::<Vec<_>>()).bounded(3, 2);
            let stream = match window {
                Some(window) => stream.ordered(window),
                None => stream,
            };
            let mut stream = in_mode!(mode, executor, stream);
            let context = format!("{mode:?}, window {window:?}");
            // In place the first poll hands output 0 out at once; spawned it
            // spawns a task, which runs below.
            match poll_once(&mut stream) {
                Poll::Ready(Some(taken)) => {
                    assert_eq!((mode, taken.id), (Mode::InPlace, 0), "{context}");
                    assert!(caught(|| drop(taken)).is_err(), "{context}");
                }
                Poll::Pending => assert_eq!(mode, Mode::Spawned, "{context}"),
                Poll::Ready(None) => panic!("{context}: ended early"),
            }
            executor.run_until_stalled();
            // Spawned: outputs 0 and 1 held, item 2 running, items 3 and 4
            // waiting, 5 and 6 left in the source. In place: output 1 held,
            // items 2 and 3 running, 4 and 5 waiting, 6 in the source.
            assert_eq!(drops.of(0), usize::from(mode == Mode::InPlace), "{context}");
            let message = caught(|| drop(stream)).expect_err(&context);
            if mode == Mode::Spawned {
                // The source goes first: item 5 is the first destructor that
                // panics (item 6's runs during that unwind, quietly).
                assert_eq!(message, format!("{INJECTED} in the drop of 5"), "{context}");
                // The running item is its task's to drop; that panic has
                // nobody to go to, and stays in the task.
                assert_eq!(drops.of(2), 0, "{context}");
                executor.run_until_stalled();
                assert_eq!(executor.live_tasks(), 0, "{context}");
            } else {
                assert!(message.starts_with(INJECTED), "{context}: {message}");
            }
            drops.check_each_once(0..ITEMS, &context);
        }
    }
}

#[test]
fn a_spawned_stream_dropped_while_its_thread_unwinds_lets_that_panic_go_on() {
    quiet_injected_panics();
    // A destructor that panics even during an unwind: the stream's drop must
    // not re-raise it then, which would abort the process.
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

// -- Contract points 21 and 20: nothing starts after the error or panic ----

/// Spawned, step by step, one thread: the stream's first poll spawns task 0;
/// task 0 takes item 0, spawns task 1 and yields before polling item 0; task
/// 1 takes item 1 and polls it. Then `waiting` is raised to 1: no task is
/// idle, so busy task 0 is sent to pull ahead (through `limits`, the
/// stream's handle), and is woken for it.
fn step_to_the_refill<S: Stream + Unpin>(
    stream: &mut S,
    executor: &mut StepExecutor,
    limits: &bounded_buffered::Limits,
    gates: &Gates,
) {
    assert!(poll_once(stream).is_pending());
    assert_eq!(executor.ready_tasks(), 1, "the first poll spawns task 0");
    assert!(executor.poll_one(0));
    assert_eq!(executor.spawns(), 2, "task 0 spawned task 1");
    assert_eq!(
        (gates.pulled(), gates.polls(0)),
        (1, 0),
        "item 0 taken, unpolled"
    );
    // Ready: task 0 (it yielded) and task 1 (new), in that order.
    assert_eq!(executor.ready_tasks(), 2);
    assert!(executor.poll_one(1));
    assert_eq!(
        gates.polls_of(2),
        [0, 1],
        "task 1 took item 1 and polled it"
    );
    limits.set_waiting(1);
    assert_eq!(executor.ready_tasks(), 1, "task 0 is sent to pull ahead");
    executor.assert_none_escaped("a task");
}

#[test]
fn an_error_that_a_refill_pulls_keeps_the_item_its_task_took_from_ever_starting() {
    for window in [None, Some(2)] {
        // `[Ok(0), Ok(1), Err]`, futures that never complete.
        let case = Case::new(2, 0, window, 3).failing(Failures::source_at(2));
        let mut executor = StepExecutor::new();
        let (gates, journal) = (Gates::new(), Journal::default());
        let mut stream = case.fallible(&gates, &journal).spawn_on(executor.spawner());
        let limits = stream.limits();
        step_to_the_refill(&mut stream, &mut executor, &limits, &gates);
        // Task 0 pulls the error: it cancels the stream, and task 0 does not
        // give item 0 its first poll after it.
        assert!(executor.poll_one(0));
        assert_eq!(journal.first_error(), Some(2), "window {window:?}");
        assert!(journal.source_failed_first());
        journal.check_no_start_after_error();
        assert_eq!(gates.polls(0), 0, "window {window:?}: item 0 never polled");
        assert_eq!(gates.drops(0), 1, "window {window:?}: item 0 dropped");
        assert_eq!(drain(&mut stream, &mut executor), [Got::Err(2), Got::End]);
        executor.run_until_stalled();
        assert_eq!(executor.live_tasks(), 0, "window {window:?}");
        assert_eq!(journal.pulls(), 3, "nothing pulled after the error");
        drop(stream);
        gates.check_all_dropped_once();
        let (made, dropped) = journal.errors();
        assert_eq!((made, dropped), (1, 1), "window {window:?}: the error");
    }
}

#[test]
fn in_place_an_error_pulled_ahead_starts_nothing_after_it() {
    for window in [None, Some(2)] {
        let case = Case::new(2, 0, window, 3).failing(Failures::source_at(2));
        let (gates, journal) = (Gates::new(), Journal::default());
        let mut stream = case.fallible(&gates, &journal);
        let limits = stream.limits();
        assert_eq!(poll_got(&mut stream), Got::Pending);
        assert_eq!(gates.polls_of(2), [1, 1], "items 0 and 1 started");
        limits.set_waiting(1);
        assert_eq!(poll_got(&mut stream), Got::Err(2), "window {window:?}");
        journal.check_no_start_after_error();
        assert_eq!(gates.polls_of(2), [1, 1], "window {window:?}");
        assert_eq!(poll_got(&mut stream), Got::End);
        drop(stream);
        gates.check_all_dropped_once();
        assert_eq!(journal.errors(), (1, 1), "window {window:?}: the error");
    }
}

#[test]
fn a_source_panic_that_a_refill_meets_keeps_the_item_its_task_took_from_ever_starting() {
    quiet_injected_panics();
    for window in [None, Some(2)] {
        let gates = Gates::with_fault(Fault::SourceAt(2));
        let mut executor = StepExecutor::new();
        let stream = gates.source(3).bounded(2, 0);
        let stream = match window {
            Some(window) => stream.ordered(window),
            None => stream,
        };
        let mut stream = stream.spawn_on(executor.spawner());
        let limits = stream.limits();
        step_to_the_refill(&mut stream, &mut executor, &limits, &gates);
        // Task 0's pull meets the panic: it cancels the stream, and task 0
        // does not give item 0 its first poll after it.
        assert!(executor.poll_one(0));
        executor.assert_none_escaped("task 0");
        assert!(gates.fault_fired(), "window {window:?}");
        assert_eq!(gates.polls(0), 0, "window {window:?}: item 0 never polled");
        assert_eq!(gates.drops(0), 1, "window {window:?}: item 0 dropped");
        let message = caught(|| poll_once(&mut stream)).unwrap_err();
        assert_eq!(message, format!("{INJECTED} in the source at item 2"));
        let again = caught(|| poll_once(&mut stream)).unwrap_err();
        assert!(again.contains(POLLED_AFTER_PANIC), "{again}");
        executor.run_until_stalled();
        assert_eq!(executor.live_tasks(), 0, "window {window:?}");
        assert_eq!(gates.polls_of(2), [0, 1], "window {window:?}");
        drop(stream);
        gates.check_all_dropped_once();
    }
}

#[test]
fn in_place_a_source_panic_met_pulling_ahead_starts_nothing_after_it() {
    quiet_injected_panics();
    for window in [None, Some(2)] {
        let gates = Gates::with_fault(Fault::SourceAt(2));
        let stream = gates.source(3).bounded(2, 0);
        let mut stream = match window {
            Some(window) => stream.ordered(window),
            None => stream,
        };
        let limits = stream.limits();
        assert!(poll_once(&mut stream).is_pending());
        assert_eq!(gates.polls_of(2), [1, 1], "items 0 and 1 started");
        limits.set_waiting(1);
        let message = caught(|| poll_once(&mut stream)).unwrap_err();
        assert_eq!(message, format!("{INJECTED} in the source at item 2"));
        assert_eq!(gates.polls_of(2), [1, 1], "window {window:?}");
        let again = caught(|| poll_once(&mut stream)).unwrap_err();
        assert!(again.contains(POLLED_AFTER_ESCAPE), "{again}");
        drop(stream);
        gates.check_all_dropped_once();
    }
}

// -- Contract point 20: an executor that drops an unfinished task ----------

#[test]
fn a_future_whose_destructor_panics_never_unwinds_into_an_executor_that_drops_its_task() {
    quiet_injected_panics();
    for window in [None, Some(1)] {
        let gates = Gates::with_fault(Fault::DropOf(0));
        let mut executor = StepExecutor::new();
        let stream = gates.source(3).bounded(1, 0);
        let stream = match window {
            Some(window) => stream.ordered(window),
            None => stream,
        };
        let mut stream = stream.spawn_on(executor.spawner());
        assert!(poll_once(&mut stream).is_pending());
        executor.run_until_stalled();
        assert_eq!(gates.running(), 1, "item 0 runs in task 0");
        // The executor drops the unfinished task, as a runtime does when it
        // shuts down.
        assert_eq!(caught(|| drop(executor)), Ok(()), "window {window:?}");
        assert!(gates.fault_fired(), "window {window:?}");
        assert_eq!(gates.drops(0), 1, "window {window:?}");
        // The stream says its task was lost, never a clean end.
        let message = caught(|| poll_once(&mut stream)).unwrap_err();
        assert!(message.contains("dropped by its executor"), "{message}");
        drop(stream);
        gates.check_all_dropped_once();
    }
}
