//! The worker task: runs one item at a time, and the next one in the same poll
//! when the budgets let it, until the stream is cancelled. It catches its own
//! panics, watches the cancellation flag, and reports being dropped unfinished.

use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::shared::Shared;
use super::state::{Failure, Next};
use super::tasks::TaskHandle;
use crate::engine::{SendSpec, Start, Started};
use crate::sync::Arc;

/// How many items one poll of a worker task may start before it yields to the
/// executor (waking itself first), so a stream of futures that are ready at
/// once cannot hold an executor thread for long.
const STARTS_PER_POLL: usize = 32;

pin_project! {
    /// One worker task, as handed to the [`Spawner`](super::Spawner).
    pub(super) struct Worker<R: SendSpec> {
        shared: Arc<Shared<R>>,
        handle: Arc<TaskHandle>,
        index: usize,
        // The input position of the item running here (the ordered store needs it).
        position: u64,
        // When it started, if the stream reads a clock.
        started: Started<R>,
        #[pin]
        running: Option<R::Future>,
        // Returned `Ready`: cancelled, or failed.
        finished: bool,
    }

    impl<R: SendSpec> PinnedDrop for Worker<R> {
        fn drop(this: Pin<&mut Self>) {
            let mut this = this.project();
            // Dropped unfinished and not cancelled: the executor gave up on it.
            if !*this.finished && !this.shared.is_cancelled() {
                Shared::fail(this.shared, Failure::Lost);
            }
            // The future's destructor is user code, run here inside the
            // executor's drop of the task: it must not unwind into the
            // executor (contract point 20). Its panic is not reported: the
            // task's loss was recorded first (or the stream was over already).
            drop(panic::catch_unwind(AssertUnwindSafe(|| this.running.set(None))));
        }
    }
}

impl<R: SendSpec> Worker<R> {
    pub(super) fn new(shared: Arc<Shared<R>>, handle: Arc<TaskHandle>, index: usize) -> Self {
        Self {
            shared,
            handle,
            index,
            position: 0,
            started: Started::<R>::default(),
            running: None,
            finished: false,
        }
    }
}

impl<R: SendSpec> Future for Worker<R> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut this = self.project();
        if *this.finished {
            return Poll::Ready(());
        }
        // Register before reading the flag: a cancellation after the read
        // wakes this waker (the protocol's rule 5).
        this.handle.waker.register(cx.waker());
        if !this.shared.is_cancelled() {
            // The caller's span where the stream was spawned: the futures and
            // the source log inside it, as they would in place.
            let _span = this.shared.span().enter();
            let run = panic::catch_unwind(AssertUnwindSafe(|| {
                work(
                    this.shared,
                    this.handle,
                    *this.index,
                    (this.position, this.started),
                    this.running.as_mut(),
                    cx,
                )
            }));
            match run {
                Ok(Poll::Pending) => return Poll::Pending,
                Ok(Poll::Ready(())) => {}
                Err(payload) => {
                    // Drop this task's work before the consumer hears of the
                    // panic. A second panic from a destructor on the way adds
                    // nothing the consumer needs: the first is reported.
                    drop(panic::catch_unwind(AssertUnwindSafe(|| {
                        this.running.set(None)
                    })));
                    Shared::fail(this.shared, Failure::Panicked(payload));
                }
            }
        }
        // Cancelled: drop the running future. Its destructor is user code and
        // must not unwind into the executor; it is reported if anyone still
        // listens (after a cancellation nobody does).
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| this.running.set(None))) {
            Shared::fail(this.shared, Failure::Panicked(payload));
        }
        *this.finished = true;
        // A finished task needs no waking: do not keep its waker, which could
        // keep the task, and through it this state, alive in a cycle.
        drop(this.handle.waker.take());
        Poll::Ready(())
    }
}

/// The item loop of one poll: polls the running future; when it completes,
/// hands its output over and takes the next item in the same lock section, and
/// polls that one at once. Returns `Pending` when the future is pending, the
/// task parks or yields, and `Ready` once the stream is cancelled.
fn work<R: SendSpec>(
    shared: &Arc<Shared<R>>,
    handle: &TaskHandle,
    index: usize,
    (position, started): (&mut u64, &mut Started<R>),
    mut running: Pin<&mut Option<R::Future>>,
    cx: &mut Context<'_>,
) -> Poll<()> {
    // The source holds this task's waker (whatever woke it, let the others
    // pull again), or the task was sent to pull ahead: look again before
    // polling the future (an idle task does both in `find_work`).
    let refill = handle.take_refill();
    if (refill || handle.is_source_waiter()) && running.is_some() {
        let (cancelled, handed_off) =
            Shared::section_handing_off(shared, |state| state.look_again(index, cx));
        if cancelled {
            // The pull met the source's error or panic, or the stream was
            // cancelled before this section: the future is not polled again
            // (it may never have been polled), and the caller drops it (rule 5).
            return Poll::Ready(());
        }
        if handed_off {
            return yield_now(cx);
        }
    }
    let mut starts = 0;
    loop {
        let (next, handed_off) = match running.as_mut().as_pin_mut() {
            Some(future) => {
                let Poll::Ready(output) = future.poll(cx) else {
                    return Poll::Pending;
                };
                // Drop the finished future before its output is handed on: if
                // its destructor panics, this task fails (the consumer sees the
                // panic, never a clean end), and `output`, a plain local here,
                // is dropped by the unwind.
                running.set(None);
                let (next, handed_off) = Shared::section_handing_off(shared, |state| {
                    state.complete(index, (*position, *started), output, cx)
                });
                match next {
                    Ok(next) => (next, handed_off),
                    Err(output) => {
                        // Cancelled: nobody will take it.
                        drop(output);
                        return Poll::Ready(());
                    }
                }
            }
            None => Shared::section_handing_off(shared, |state| state.find_work(index, cx)),
        };
        match next {
            Next::Start(Start {
                position: at,
                started: at_time,
                future,
            }) => {
                *position = at;
                *started = at_time;
                running.set(Some(future));
                starts += 1;
                // Having sent for another task, yield before running this
                // item: an executor may run the task just woken or spawned on
                // this thread next and only then (tokio's LIFO slot, which no
                // other thread can steal from), so running a long item first
                // would serialise the two. Yielding also caps a poll's work.
                if handed_off || starts == STARTS_PER_POLL {
                    return yield_now(cx);
                }
            }
            Next::Park => return Poll::Pending,
            Next::Stop => return Poll::Ready(()),
        }
    }
}

/// Returns `Pending` after waking the task: it goes to the back of the
/// executor's queue.
fn yield_now(cx: &mut Context<'_>) -> Poll<()> {
    cx.waker().wake_by_ref();
    Poll::Pending
}
