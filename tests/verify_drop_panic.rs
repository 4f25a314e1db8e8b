//! Drop and panic at every point: whatever the stream holds when it is dropped
//! (the source, running futures, waiting items, held outputs) is dropped exactly
//! once, also after a panic escaped from a future's poll, the source, or a
//! future's destructor; and a stream polled again after such a panic says so.
//!
//! 256 cases per property by default; set `PROPTEST_CASES` for more.

use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, Once};
use std::task::{Context, Poll, Waker};

use bounded_buffered::BoundedStreamExt;
use futures::stream::Stream;
use futures_test::task::noop_waker;
use proptest::prelude::*;

const INJECTED: &str = "injected panic";

/// Keeps the expected panics out of the test output; any other panic still
/// reports as usual.
fn quiet_injected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !panic_message(info.payload()).contains(INJECTED) {
                default(info);
            }
        }));
    });
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        message.to_string()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        String::new()
    }
}

/// Where the one injected panic goes, if anywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    None,
    /// Item `k` panics when polled after its gate opened.
    PollOf(usize),
    /// Item `k` panics in its first poll.
    FirstPollOf(usize),
    /// The source panics instead of yielding item `k`.
    SourceAt(usize),
    /// Item `k`'s destructor panics (on completion, or when the stream drops it).
    DropOf(usize),
}

/// Per-item drop and completion counters shared by the source, futures and outputs.
#[derive(Debug)]
struct Ledger {
    items: usize,
    source_drops: AtomicUsize,
    created: Vec<AtomicBool>,
    future_drops: Vec<AtomicUsize>,
    completed: Vec<AtomicBool>,
    output_drops: Vec<AtomicUsize>,
    open: Vec<AtomicBool>,
    wakers: Mutex<Vec<Option<Waker>>>,
}

impl Ledger {
    fn new(items: usize) -> Arc<Self> {
        let flags = || (0..items).map(|_| AtomicBool::new(false)).collect();
        let counts = || (0..items).map(|_| AtomicUsize::new(0)).collect();
        Arc::new(Self {
            items,
            source_drops: AtomicUsize::new(0),
            created: flags(),
            future_drops: counts(),
            completed: flags(),
            output_drops: counts(),
            open: flags(),
            wakers: Mutex::new(vec![None; items]),
        })
    }

    /// Everything created was dropped exactly once, nothing else was dropped.
    fn check_all_dropped_once(&self) {
        assert_eq!(self.source_drops.load(SeqCst), 1, "source drops");
        for id in 0..self.items {
            let created = self.created[id].load(SeqCst) as usize;
            assert_eq!(
                self.future_drops[id].load(SeqCst),
                created,
                "drops of future {id}"
            );
            let completed = self.completed[id].load(SeqCst) as usize;
            assert_eq!(
                self.output_drops[id].load(SeqCst),
                completed,
                "drops of output {id}"
            );
        }
    }

    /// Opens the gate of a started item picked by `choice`, if any is closed.
    fn open_one(&self, choice: usize) {
        let mut wakers = self.wakers.lock().unwrap();
        let closed: Vec<usize> = (0..self.items)
            .filter(|&id| wakers[id].is_some() && !self.open[id].load(SeqCst))
            .collect();
        if closed.is_empty() {
            return;
        }
        let id = closed[choice % closed.len()];
        self.open[id].store(true, SeqCst);
        let waker = wakers[id].take().unwrap();
        drop(wakers);
        waker.wake();
    }
}

#[derive(Debug)]
struct Output {
    id: usize,
    ledger: Arc<Ledger>,
}

impl Drop for Output {
    fn drop(&mut self) {
        self.ledger.output_drops[self.id].fetch_add(1, SeqCst);
    }
}

struct Item {
    id: usize,
    ledger: Arc<Ledger>,
    fault: Fault,
}

impl Future for Item {
    type Output = Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Output> {
        let id = self.id;
        if self.fault == Fault::FirstPollOf(id) {
            panic!("{INJECTED} in the first poll of item {id}");
        }
        if !self.ledger.open[id].load(SeqCst) {
            self.ledger.wakers.lock().unwrap()[id] = Some(cx.waker().clone());
            return Poll::Pending;
        }
        if self.fault == Fault::PollOf(id) {
            panic!("{INJECTED} in a poll of item {id}");
        }
        self.ledger.completed[id].store(true, SeqCst);
        Poll::Ready(Output {
            id,
            ledger: Arc::clone(&self.ledger),
        })
    }
}

impl Drop for Item {
    fn drop(&mut self) {
        self.ledger.future_drops[self.id].fetch_add(1, SeqCst);
        if self.fault == Fault::DropOf(self.id) && !std::thread::panicking() {
            panic!("{INJECTED} in the destructor of item {}", self.id);
        }
    }
}

struct Source {
    next: usize,
    ledger: Arc<Ledger>,
    fault: Fault,
}

impl Stream for Source {
    type Item = Item;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Item>> {
        let id = self.next;
        if id == self.ledger.items {
            return Poll::Ready(None);
        }
        if self.fault == Fault::SourceAt(id) {
            panic!("{INJECTED} in the source at item {id}");
        }
        self.next += 1;
        self.ledger.created[id].store(true, SeqCst);
        Poll::Ready(Some(Item {
            id,
            ledger: Arc::clone(&self.ledger),
            fault: self.fault,
        }))
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        self.ledger.source_drops.fetch_add(1, SeqCst);
    }
}

#[derive(Debug, Clone)]
struct Case {
    items: usize,
    workers: usize,
    waiting: usize,
    window: Option<usize>,
    /// Polls before the stream is dropped (it may finish earlier).
    polls: usize,
    choices: Vec<usize>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        0..=24usize,
        1..=4usize,
        0..=3usize,
        prop::option::of(1..=6usize),
        0..=60usize,
        prop::collection::vec(any::<usize>(), 1..=60),
    )
        .prop_map(|(items, workers, waiting, window, polls, choices)| Case {
            items,
            workers,
            waiting,
            window,
            polls,
            choices,
        })
}

/// Polls up to `case.polls` times, opening one gate between polls, then drops
/// the stream. Returns the message of the panic that escaped a poll, if any.
fn run(case: &Case, fault: Fault) -> (Arc<Ledger>, Option<String>) {
    quiet_injected_panics();
    let ledger = Ledger::new(case.items);
    let source = Source {
        next: 0,
        ledger: Arc::clone(&ledger),
        fault,
    };
    let mut stream = source.bounded(case.workers, case.waiting);
    if let Some(window) = case.window {
        stream = stream.ordered(window);
    }
    let mut stream = Box::pin(stream);
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut yielded = Vec::new();
    let mut escaped = None;
    for poll in 0..case.polls {
        match panic::catch_unwind(AssertUnwindSafe(|| stream.as_mut().poll_next(&mut cx))) {
            Ok(Poll::Ready(Some(output))) => yielded.push(output),
            Ok(Poll::Ready(None)) => break,
            Ok(Poll::Pending) => ledger.open_one(case.choices[poll % case.choices.len()]),
            Err(payload) => {
                let message = panic_message(&*payload);
                assert!(message.contains(INJECTED), "unexpected panic: {message}");
                escaped = Some(message);
                // Polling again must refuse, loudly and clearly.
                let again =
                    panic::catch_unwind(AssertUnwindSafe(|| stream.as_mut().poll_next(&mut cx)));
                let again = panic_message(&*again.expect_err("polling after a panic must panic"));
                assert!(
                    again.contains("after a panic"),
                    "polling after a panic gave an unclear message: {again}"
                );
                break;
            }
        }
    }
    drop(yielded);
    // A future whose destructor panics may still be running: dropping the
    // stream then panics, once, and must still drop everything else.
    let dropped = panic::catch_unwind(AssertUnwindSafe(move || drop(stream)));
    if let Err(payload) = dropped {
        let message = panic_message(&*payload);
        assert!(
            message.contains(INJECTED),
            "unexpected panic on drop: {message}"
        );
        assert!(
            matches!(fault, Fault::DropOf(_)),
            "drop panicked without a faulty destructor"
        );
    }
    (ledger, escaped)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(256)
    ))]

    #[test]
    fn dropping_after_any_number_of_polls_drops_everything_once(case in case()) {
        let (ledger, escaped) = run(&case, Fault::None);
        prop_assert!(escaped.is_none());
        ledger.check_all_dropped_once();
    }

    #[test]
    fn panic_in_a_future_poll_drops_everything_once(case in case(), k in 0..24usize, first in any::<bool>()) {
        let fault = if first { Fault::FirstPollOf(k) } else { Fault::PollOf(k) };
        let (ledger, _) = run(&case, fault);
        ledger.check_all_dropped_once();
    }

    #[test]
    fn panic_in_the_source_drops_everything_once(case in case(), k in 0..24usize) {
        let (ledger, escaped) = run(&case, Fault::SourceAt(k));
        // The source panics exactly when the stream asks for item k.
        let asked = ledger.created.iter().filter(|created| created.load(SeqCst)).count();
        if escaped.is_some() {
            prop_assert_eq!(asked, k);
        }
        ledger.check_all_dropped_once();
    }

    #[test]
    fn panic_in_a_future_destructor_drops_everything_once(case in case(), k in 0..24usize) {
        let (ledger, _) = run(&case, Fault::DropOf(k));
        ledger.check_all_dropped_once();
    }
}

/// The deterministic core of the properties above, so a failure here names the
/// exact point: the first future panics on its first poll.
#[test]
fn polling_after_a_panic_in_the_first_poll_panics_with_a_clear_message() {
    let case = Case {
        items: 3,
        workers: 2,
        waiting: 1,
        window: None,
        polls: 3,
        choices: vec![0],
    };
    let (ledger, escaped) = run(&case, Fault::FirstPollOf(0));
    assert!(escaped.is_some_and(|message| message.contains("item 0")));
    ledger.check_all_dropped_once();
}
