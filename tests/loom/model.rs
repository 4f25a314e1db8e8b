//! What the two loom crates share (`loom` has it as a module, `loom_spawned`
//! through `#[path]`; the support library is empty under `--cfg loom`): the
//! models' runner, and a consumer that polls by hand and, on `Pending`,
//! blocks until its waker fires, so a lost wake leaves every thread blocked,
//! which loom reports as a deadlock.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::task::{Context, Poll, Wake, Waker};

use futures::Stream;
use loom::sync::Notify;

/// Runs `f` under loom and prints how many interleavings it explored (run with
/// `--nocapture` to see them; `.ci/loom.sh` adds them up).
pub fn model(name: &str, f: impl Fn() + Sync + Send + 'static) {
    let explored = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&explored);
    loom::model(move || {
        counter.fetch_add(1, Relaxed);
        f();
    });
    println!("loom: {name}: {} interleavings", explored.load(Relaxed));
}

/// [`model`] with at most `preemptions` preemptions per run, whatever
/// `LOOM_MAX_PREEMPTIONS` says (never more): for a model whose search at
/// the usual bound runs for longer than CI allows.
#[allow(dead_code)]
pub fn model_at_most(name: &str, preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let explored = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&explored);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(
        builder
            .preemption_bound
            .map_or(preemptions, |bound| bound.min(preemptions)),
    );
    builder.check(move || {
        counter.fetch_add(1, Relaxed);
        f();
    });
    println!(
        "loom: {name} (at most {preemptions} preemptions): {} interleavings",
        explored.load(Relaxed)
    );
}

/// The consumer's waker: releases the consumer blocked in [`next`].
struct Signal(Arc<Notify>);

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.0.notify();
    }
}

/// Polls `stream` until it yields or ends, with a fresh waker each poll (so
/// re-registering the consumer's waker races the wakes too), blocking on
/// `Pending` until that waker fires.
pub fn next<S: Stream + Unpin>(stream: &mut S, notify: &Arc<Notify>) -> Option<S::Item> {
    loop {
        let waker = Waker::from(Arc::new(Signal(Arc::clone(notify))));
        match Pin::new(&mut *stream).poll_next(&mut Context::from_waker(&waker)) {
            Poll::Ready(item) => return item,
            Poll::Pending => notify.wait(),
        }
    }
}

/// Polls `stream` to the end like an executor would (see [`next`]), calling
/// `on_item` with each output as it comes.
pub fn drain<S: Stream + Unpin>(mut stream: S, mut on_item: impl FnMut(&S::Item)) -> Vec<S::Item> {
    let notify = Arc::new(Notify::new());
    let mut out = Vec::new();
    while let Some(item) = next(&mut stream, &notify) {
        on_item(&item);
        out.push(item);
    }
    out
}
