//! Contract points 14 and 15, 9's `into_inner` and 11's call site: the public
//! surface besides `poll_next` (auto traits, `Debug`, `size_hint`, the source
//! accessors, `stats`, and the bad-input panics' location). `stats` and
//! `size_hint` are checked in both modes; the rest is in place only (spawned
//! mode's traits and `Debug` are in `delivery`).

use std::future::{Ready, ready};
use std::panic::{self, AssertUnwindSafe, PanicHookInfo};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::thread;
use std::time::{Duration, Instant};

use bounded_buffered::{BoundedBuffered, BoundedStreamExt, Keyed, Weighted};
use futures::stream::{self, BoxStream, FusedStream, Stream};
use futures::{StreamExt, executor::block_on};
use support::{
    Driven, Gate, Gates, HandTimer, OrderedIf, StepExecutor, both_modes, counted, drain_ready,
    drive, fed_source, fresh_stats, poll_once,
};

fn assert_send<T: Send>() {}
fn assert_sync<T: Sync>() {}
fn assert_unpin<T: Unpin>() {}
fn assert_fused<T: FusedStream>() {}

/// A `Send` future that is neither `Sync`, `Unpin` nor `Debug`.
type SendOnlyFuture = Pin<Box<dyn Future<Output = NotDebug> + Send>>;

/// An output type with no `Debug`.
struct NotDebug;

#[test]
fn is_send_when_source_futures_and_outputs_are_send() {
    assert_send::<BoundedBuffered<stream::Iter<std::vec::IntoIter<Ready<u8>>>>>();
    assert_send::<BoundedBuffered<BoxStream<'static, SendOnlyFuture>>>();
    assert_send::<BoundedBuffered<stream::Iter<std::vec::IntoIter<Gate>>>>();
    // An `async` block that holds a `Send` value across an await.
    fn of_async_blocks() -> impl Stream<Item = impl Future<Output = String> + Send> + Send {
        stream::iter(0..3).map(|i| async move {
            let text = i.to_string();
            futures::future::ready(()).await;
            text
        })
    }
    fn assert_send_value<T: Send>(_: &T) {}
    assert_send_value(&of_async_blocks().bounded(2, 1).ordered(2));
}

#[test]
fn is_sync_when_its_parts_are_sync() {
    assert_sync::<BoundedBuffered<stream::Iter<std::vec::IntoIter<Ready<u8>>>>>();
}

#[test]
fn is_unpin_whatever_the_source_and_its_futures_are() {
    // The futures live in their own pinned storage and the source in a box of
    // its own, so neither a `!Unpin` future nor a `!Unpin` source (an
    // `unfold`, a paged query) makes the stream `!Unpin`: `.next()`, `close`,
    // `reopen` and a struct field all work without pinning it.
    fn of_async_blocks() -> impl Stream<Item = impl Future<Output = usize>> + Unpin {
        stream::iter(0..3).map(|i| async move { i })
    }
    fn not_unpin() -> impl Stream<Item = impl Future<Output = usize>> {
        stream::unfold(
            0,
            |n| async move { (n < 3).then(|| (async move { n }, n + 1)) },
        )
    }
    fn assert_unpin_value<T: Unpin>(_: &T) {}
    assert_unpin_value(&of_async_blocks().bounded(2, 0));
    assert_unpin_value(&not_unpin().bounded(2, 0));
    assert_unpin_value(&not_unpin().bounded(2, 0).max_wait(Duration::from_millis(1)));
    assert_unpin::<BoundedBuffered<BoxStream<'static, SendOnlyFuture>>>();
}

#[test]
fn is_a_fused_stream() {
    assert_fused::<BoundedBuffered<stream::Iter<std::vec::IntoIter<Ready<u8>>>>>();
}

#[test]
fn debug_shows_source_budgets_and_counts_without_needing_debug_futures() {
    let source = stream::iter(vec![Box::pin(async { NotDebug }) as SendOnlyFuture]);
    // The source must be Debug; its futures and outputs need not be.
    struct DebugSource<S>(S);
    impl<S> std::fmt::Debug for DebugSource<S> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("DebugSource")
        }
    }
    impl<S: Stream + Unpin> Stream for DebugSource<S> {
        type Item = S::Item;
        fn poll_next(
            mut self: Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> Poll<Option<S::Item>> {
            self.0.poll_next_unpin(cx)
        }
    }
    let stream = DebugSource(source).bounded(3, 7);
    let text = format!("{stream:?}");
    assert!(text.starts_with("BoundedBuffered"), "{text}");
    assert!(text.contains("DebugSource"), "{text}");
    assert!(text.contains("workers: 3"), "{text}");
    assert!(text.contains("waiting: 7"), "{text}");
    assert!(text.contains("window: None"), "{text}");

    let ordered = format!("{:?}", stream.ordered(5));
    assert!(ordered.contains("window: Some(5)"), "{ordered}");

    // The counts are shown too, and the alternate form works.
    let gates = Gates::new();
    let mut running = gates.source(3).bounded(2, 3);
    assert_eq!(poll_once(&mut running), Poll::Pending);
    let text = format!("{running:#?}");
    assert!(text.contains("active: 2"), "{text}");
    assert!(text.contains("waiting: 1"), "{text}");
}

both_modes! {
    /// Point 15: before the first poll, `size_hint` is what the source has
    /// left (fail fast: at least one item, the error, if it is one); asking
    /// spawns nothing.
    fn size_hint_counts_what_the_source_has_left_before_the_first_poll(mode) {
        let items = || stream::iter([ready(1), ready(2), ready(3)]);
        let plain = drive!(mode, items().bounded(3, 0));
        assert_eq!(unpolled_hint(&plain), (3, Some(3)));
        let ordered = drive!(mode, items().bounded(3, 0).ordered(2));
        assert_eq!(unpolled_hint(&ordered), (3, Some(3)), "ordered");
        let endless = drive!(mode, stream::repeat_with(|| ready(1)).bounded(2, 1));
        assert_eq!(unpolled_hint(&endless), (usize::MAX, None), "endless");
        // Fail fast: any item may be the error that ends the run, so one
        // output is certain, and at most one per item.
        let items = [1, 2, 3].map(|n| Ok::<_, String>(ready(Ok::<u32, String>(n))));
        let fallible = drive!(mode, stream::iter(items).try_bounded(3, 0));
        assert_eq!(unpolled_hint(&fallible), (1, Some(3)), "try_bounded");
    }

    /// Point 15: `size_hint` counts what is in flight plus what the source
    /// has left.
    fn size_hint_counts_what_is_in_flight_plus_what_the_source_has_left(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(10).bounded(2, 3));
        assert_eq!(run.size_hint(), (10, Some(10)), "before the first poll");
        assert!(run.poll().is_pending());
        // Two running, three waiting, five in the source.
        assert_eq!(run.size_hint(), (10, Some(10)));
        gates.open(0);
        gates.open(1);
        assert!(matches!(run.poll(), Poll::Ready(Some(_))));
        // One output taken, one held.
        assert_eq!(run.size_hint(), (9, Some(9)));
        for id in 2..10 {
            gates.open(id);
        }
        assert_eq!(run.take_ready().len(), 9);
        assert_eq!(run.size_hint(), (0, Some(0)));
    }

    /// Point 15: ... and so it stays throughout a run, unordered and
    /// ordered, each output taken counting one less.
    fn size_hint_is_what_is_in_flight_plus_what_the_source_has_left_throughout_a_run(mode) {
        const ITEMS: usize = 6;
        for window in [None, Some(3)] {
            let gates = Gates::new();
            let mut run = drive!(mode, gates.source(ITEMS).bounded(2, 1).ordered_if(window));
            assert_eq!(run.size_hint(), (ITEMS, Some(ITEMS)), "{window:?}");
            assert!(run.poll().is_pending());
            // 2 running and 1 waiting, 3 left in the source: 6 to come.
            assert_eq!(gates.pulled(), 3, "{window:?}");
            assert_eq!(run.size_hint(), (ITEMS, Some(ITEMS)), "{window:?}");
            for id in 0..ITEMS {
                assert!(gates.open(id), "{window:?}: gate {id} pulled and closed");
                assert_eq!(run.poll(), Poll::Ready(Some(id)), "{window:?}");
                let left = ITEMS - 1 - id;
                assert_eq!(run.size_hint(), (left, Some(left)), "{window:?}");
            }
            assert_eq!(run.poll(), Poll::Ready(None), "{window:?}");
            assert_eq!(run.size_hint(), (0, Some(0)), "{window:?}");
        }
    }
}

/// The `size_hint` of a stream never polled; spawned, asking spawned nothing.
fn unpolled_hint<T>(run: &Driven<'_, T>) -> (usize, Option<usize>) {
    if run.mode().is_spawned() {
        assert_eq!(run.spawns(), 0, "asking spawns nothing");
    }
    run.size_hint()
}

/// Point 22: a stream closed and drained resumes with `reopen`, on a source
/// that is not `Unpin`, without being pinned or boxed by the caller; every item
/// comes once, in order, and the stats go on counting. In place only: spawned,
/// `close` drops the source (point 22).
#[test]
fn a_closed_stream_resumes_on_a_source_that_is_not_unpin() {
    let source = stream::unfold(0u32, |n| async move {
        (n < 20).then(|| (async move { n }, n + 1))
    });
    let mut stream = source.bounded(2, 3).ordered(4);
    let mut seen = Vec::new();
    assert!(matches!(poll_once(&mut stream), Poll::Ready(Some(0))));
    seen.push(0);
    stream.close();
    seen.extend(drain_ready(&mut stream));
    assert!(matches!(poll_once(&mut stream), Poll::Ready(None)));
    assert!(stream.is_terminated(), "ended after the drain");
    let drained = seen.len();
    assert_eq!(
        drained as u64,
        stream.stats().pulled,
        "every pulled item, nothing more"
    );

    stream.reopen();
    assert!(!stream.is_terminated(), "reopened: it may be polled again");
    seen.extend(drain_ready(&mut stream));
    assert!(stream.is_terminated(), "the source ended this time");
    assert_eq!(
        seen,
        (0..20).collect::<Vec<_>>(),
        "every item once, in order"
    );
    let stats = stream.stats();
    assert_eq!(
        (stats.pulled, stats.completed),
        (20, 20),
        "the stats go on counting"
    );

    // A source that ended is not polled again: a second reopen just ends again.
    stream.reopen();
    assert!(matches!(poll_once(&mut stream), Poll::Ready(None)));
}

/// Point 22: `reopen` during the drain carries on as if never closed; after a
/// failure it panics (what was pulled after the error is gone).
#[test]
fn reopen_during_the_drain_carries_on_and_after_a_failure_panics() {
    let mut stream = stream::iter(0..10u32)
        .map(|n| async move { n })
        .bounded(2, 1);
    assert!(poll_once(&mut stream).is_ready());
    stream.close();
    stream.reopen();
    assert_eq!(
        drain_ready(&mut stream).len(),
        9,
        "nothing was lost to the close"
    );

    let mut failing =
        stream::iter([Err::<std::future::Ready<Result<u32, &str>>, _>("bad")]).try_bounded(1, 0);
    assert!(matches!(
        poll_once(&mut failing),
        Poll::Ready(Some(Err("bad")))
    ));
    let reopened = panic::catch_unwind(AssertUnwindSafe(|| failing.reopen()));
    assert!(
        reopened.is_err(),
        "a stream that failed fast does not resume"
    );
}

both_modes! {
    /// Points 15 and 25: a stream whose `workers` limit is 0 shows as paused,
    /// in `stats` and in `Debug`, and stops showing it once raised.
    fn a_paused_stream_says_so(mode) {
        let gates = Gates::new();
        let run = drive!(mode, gates.source(4).bounded(2, 1));
        assert!(!run.stats().paused);
        let limits = run.limits();
        limits.set_workers(0);
        assert!(run.stats().paused);
        assert!(format!("{:?}", run.stats()).contains("paused: true"));
        limits.set_workers(1);
        assert!(!run.stats().paused);
    }

    /// Points 15 and 17: a source of unknown length gives a lower bound,
    /// what is in flight, until it ends.
    fn size_hint_of_an_unknown_source_is_a_lower_bound(mode) {
        let (source, feed) = fed_source::<Gate>();
        let gates = Gates::new();
        let mut run = drive!(mode, source.bounded(2, 1));
        assert_eq!(run.size_hint(), (0, None));
        for id in 0..2 {
            feed.push(gates.gate(id));
        }
        assert!(run.poll().is_pending());
        assert_eq!(run.size_hint(), (2, None));
        feed.close();
        // Once the source said it ended, only what is in flight remains.
        assert!(run.poll().is_pending());
        assert_eq!(run.size_hint(), (2, Some(2)));
    }

    /// Point 15 (17 spawned): the current counts, their peaks and the totals.
    fn stats_track_current_counts_peaks_and_totals(mode) {
        let unpolled = drive!(mode, stream::iter([std::future::ready(1)]).bounded(4, 4));
        assert_eq!(
            unpolled.stats(),
            fresh_stats(4, 4),
            "a new stream reports its limits and all zeros"
        );
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(8).bounded(3, 2));
        assert!(run.poll().is_pending());
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting, stats.held), (3, 2, 0));
        assert_eq!((stats.peak_active, stats.peak_waiting, stats.peak_held), (3, 2, 0));
        assert_eq!((stats.pulled, stats.completed), (5, 0));

        gates.open(0);
        gates.open(1);
        assert!(matches!(run.poll(), Poll::Ready(Some(_))));
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting, stats.held), (2, 2, 1));
        assert_eq!(stats.peak_held, 2, "both outputs were held before one was taken");
        assert_eq!((stats.pulled, stats.completed), (6, 2));

        for id in 2..8 {
            gates.open(id);
        }
        assert_eq!(run.take_to_end().len(), 7);
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));
        assert_eq!((stats.peak_active, stats.peak_waiting), (3, 2));
        assert_eq!((stats.pulled, stats.completed), (8, 8));
        // A snapshot is a plain value.
        let copy = stats;
        assert_eq!(copy, run.stats());
    }
}

#[test]
fn accessors_reach_the_source() {
    let gates = Gates::new();
    let (source, counts) = counted(gates.source(20));
    let mut stream = source.bounded(2, 2);
    assert_eq!(stream.get_ref().inner().size_hint(), (20, Some(20)));
    assert_eq!(poll_once(&mut stream), Poll::Pending);
    assert_eq!(stream.get_ref().inner().size_hint(), (16, Some(16)));

    // Taking an item through `get_mut` takes it away from the adapter.
    let taken = block_on(stream.get_mut().next()).expect("the source has items");
    drop(taken);
    assert_eq!(counts.pulled(), 5);

    let mut pinned = Box::pin(stream);
    let taken = block_on(pinned.as_mut().get_pin_mut().next()).expect("the source has items");
    drop(taken);
    assert_eq!(pinned.get_ref().inner().size_hint(), (14, Some(14)));

    let stream = *Pin::into_inner(pinned);
    let source = stream.into_inner();
    assert_eq!(source.inner().size_hint(), (14, Some(14)));
    assert_eq!(counts.pulled(), 6);
}

/// Runs `call`, which must panic, and returns the file and line its panic
/// reported. The hook is process-wide: it records this thread's panic only and
/// passes the others on, so a test panicking on another thread meanwhile is
/// neither mistaken for it nor silenced.
pub(crate) fn panic_location(call: impl FnOnce()) -> (String, u32) {
    let seen: Arc<Mutex<Option<(String, u32)>>> = Arc::default();
    let record = Arc::clone(&seen);
    let this = thread::current().id();
    let previous: Arc<dyn Fn(&PanicHookInfo<'_>) + Send + Sync> = Arc::from(panic::take_hook());
    let others = Arc::clone(&previous);
    panic::set_hook(Box::new(move |info| {
        if thread::current().id() == this {
            let location = info.location().map(|at| (at.file().to_owned(), at.line()));
            *record.lock().expect("the hook runs once at a time") = location;
        } else {
            others(info);
        }
    }));
    let result = panic::catch_unwind(AssertUnwindSafe(call));
    panic::set_hook(Box::new(move |info| previous(info)));
    assert!(result.is_err(), "the call did not panic");
    let location = seen.lock().expect("the hook is done").take();
    location.expect("the panic had a location")
}

/// Point 11: the bad-input panics point at the caller's line
/// (`#[track_caller]`), spawned mode's `spawn_on` included.
#[test]
fn bad_input_panics_at_the_callers_line() {
    let here = |line: u32| (file!().to_owned(), line);
    let fresh = || stream::iter([std::future::ready(())]).bounded(1, 1);
    let polled = || {
        let mut polled = fresh();
        let _ = poll_once(&mut polled);
        polled
    };

    let line = line!() + 1;
    let at = panic_location(|| drop(stream::iter([std::future::ready(())]).bounded(0, 1)));
    assert_eq!(at, here(line), "workers == 0");

    let unpolled = fresh();
    let line = line!() + 1;
    let at = panic_location(|| drop(unpolled.ordered(0)));
    assert_eq!(at, here(line), "window == 0");

    let (late_ordered, late_max_wait, late_spawn_on) = (polled(), polled(), polled());
    let line = line!() + 1;
    let at = panic_location(|| drop(late_ordered.ordered(1)));
    assert_eq!(at, here(line), "ordered after the first poll");
    let line = line!() + 1;
    let at = panic_location(|| drop(late_max_wait.max_wait(Duration::from_millis(1))));
    assert_eq!(at, here(line), "max_wait after the first poll");
    let spawner = StepExecutor::new().spawner();
    let line = line!() + 1;
    let at = panic_location(|| drop(late_spawn_on.spawn_on(spawner)));
    assert_eq!(at, here(line), "spawn_on after the first poll");

    // The budgets of keys and weights: 0 could never start or pull anything.
    let keyed = || stream::iter([Keyed::new(0, std::future::ready(()))]).bounded(1, 1);
    let weighted = || stream::iter([Weighted::new(1, std::future::ready(()))]).bounded(1, 1);
    let line = line!() + 1;
    let at = panic_location(|| drop(keyed().per_key(0)));
    assert_eq!(at, here(line), "per_key(0)");
    let line = line!() + 1;
    let at = panic_location(|| drop(weighted().max_running_weight(0)));
    assert_eq!(at, here(line), "max_running_weight(0)");
    let line = line!() + 1;
    let at = panic_location(|| drop(weighted().max_waiting_weight(0)));
    assert_eq!(at, here(line), "max_waiting_weight(0)");

    // The time budgets (point 31 to 34): a deadline or a rate with no timer
    // to wake the stream, a rate or burst that could never start anything,
    // and two notions of now.
    let second = Duration::from_secs(1);
    let line = line!() + 1;
    let at = panic_location(|| drop(fresh().deadline(Instant::now())));
    assert_eq!(at, here(line), "deadline without a timer");
    let line = line!() + 1;
    let at = panic_location(|| drop(fresh().rate(1, second)));
    assert_eq!(at, here(line), "rate without a timer");
    let line = line!() + 1;
    let at = panic_location(|| drop(fresh().timer(HandTimer).rate(0, second)));
    assert_eq!(at, here(line), "rate(0, _)");
    let line = line!() + 1;
    let at = panic_location(|| drop(fresh().timer(HandTimer).rate(1, Duration::ZERO)));
    assert_eq!(at, here(line), "rate(_, 0)");
    let line = line!() + 1;
    let at = panic_location(|| drop(fresh().timer(HandTimer).rate(1, second).burst(0)));
    assert_eq!(at, here(line), "burst(0)");
    let line = line!() + 1;
    let at = panic_location(|| drop(fresh().timer(HandTimer).burst(2)));
    assert_eq!(at, here(line), "burst without a rate");
    let line = line!() + 1;
    let at = panic_location(|| drop(fresh().clock(Instant::now).timer(HandTimer)));
    assert_eq!(at, here(line), "timer after clock");
    let line = line!() + 1;
    let at = panic_location(|| drop(fresh().timer(HandTimer).clock(Instant::now)));
    assert_eq!(at, here(line), "clock after timer");
    let limits = fresh().limits();
    let line = line!() + 1;
    let at = panic_location(|| limits.set_rate(1, second));
    assert_eq!(at, here(line), "set_rate on a stream without a rate");
    let limits = fresh().timer(HandTimer).rate(1, second).limits();
    let line = line!() + 1;
    let at = panic_location(|| limits.set_rate(0, second));
    assert_eq!(at, here(line), "set_rate(0, _)");
}

/// Point 15: `Debug` names where the run is, the same in both modes:
/// running, closing once `close` was called, failed from the error on (also
/// once it was yielded), and ended once the stream returned `None`.
#[test]
fn debug_names_where_the_run_is_in_both_modes() {
    let failing = || {
        stream::iter(0..3u32)
            .map(|n| Ok::<_, u32>(async move { if n == 1 { Err(n) } else { Ok(n) } }))
    };
    let closing = || {
        stream::iter(0..3u32)
            .map(|n| async move { n })
            .bounded(1, 0)
    };
    let expected = ["Running", "Failed", "Ended"];

    // In place.
    assert_eq!(states(failing().try_bounded(1, 0), || {}), expected);
    let stream = closing();
    stream.close();
    assert_eq!(state_of(&stream), "Closing");

    // Spawned.
    let stepper = std::cell::RefCell::new(StepExecutor::new());
    let spawner = stepper.borrow().spawner();
    let run = failing().try_bounded(1, 0).spawn_on(spawner);
    assert_eq!(
        states(run, || stepper.borrow_mut().run_until_stalled()),
        expected
    );
    let stream = closing().spawn_on(stepper.borrow().spawner());
    stream.close();
    assert_eq!(state_of(&stream), "Closing");
}

/// The `state` a stream's `Debug` shows.
fn state_of(stream: &impl std::fmt::Debug) -> String {
    let debug = format!("{stream:?}");
    let at = debug.find("state: ").expect("a state") + "state: ".len();
    debug[at..]
        .split([',', ' '])
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The state before the first poll, after each outcome (`Ok` then `Err`),
/// and after the end; `settle` runs the stream's tasks, if any, before each
/// poll.
fn states<S>(mut stream: S, mut settle: impl FnMut()) -> Vec<String>
where
    S: Stream<Item = Result<u32, u32>> + Unpin + std::fmt::Debug,
{
    let mut seen = vec![state_of(&stream)];
    loop {
        settle();
        match poll_once(&mut stream) {
            Poll::Ready(Some(_)) => seen.push(state_of(&stream)),
            Poll::Ready(None) => break,
            Poll::Pending => {}
        }
    }
    seen.push(state_of(&stream));
    seen.remove(1); // after `Ok(0)`, the error may or may not be seen yet
    seen
}
