//! Contract point 7, who is polled first: futures woken together are polled
//! oldest first in place, and a future that another's completion woke is
//! polled before anything new starts, in both modes. What these tests stand
//! for is a resource that, when it frees, wakes all its waiters and lets the
//! first poll take it (a `Notify::notify_waiters` with a retry, a pool's
//! condition variable): the stream's poll order decides who waits.
//!
//! Each item's future takes a permit from such a [`Pool`], which wakes its
//! waiters newest first, so an order that followed the wakes, or the slots
//! the futures happen to run in, would let the newest win.

use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

use bounded_buffered::BoundedStreamExt;
use futures::channel::oneshot;
use futures::future::{self, BoxFuture, FutureExt};
use futures::stream;
use support::{Driven, both_modes, drive};

/// Permits, the wakers of the futures waiting for one, and who took one, in
/// order.
#[derive(Default)]
struct Pool {
    free: usize,
    waiters: Vec<Waker>,
    taken_by: Vec<usize>,
}

type Shared = Arc<Mutex<Pool>>;

fn lock(pool: &Shared) -> std::sync::MutexGuard<'_, Pool> {
    pool.lock().expect("a test thread panicked")
}

/// Takes a permit, then completes with `id`.
fn acquire(pool: &Shared, id: usize) -> BoxFuture<'static, usize> {
    let pool = Arc::clone(pool);
    future::poll_fn(move |cx| {
        let mut pool = lock(&pool);
        if pool.free > 0 {
            pool.free -= 1;
            pool.taken_by.push(id);
            Poll::Ready(id)
        } else {
            pool.waiters.push(cx.waker().clone());
            Poll::Pending
        }
    })
    .boxed()
}

/// Returns `permits` and wakes every waiter, newest first.
fn release(pool: &Shared, permits: usize) {
    let waiters = {
        let mut pool = lock(pool);
        pool.free += permits;
        std::mem::take(&mut pool.waiters)
    };
    waiters.into_iter().rev().for_each(Waker::wake);
}

/// Completes with `id` once `done` fires, returning a permit to `pool` in
/// that same poll (and so waking its waiters) if `frees` is set.
fn finish_on(
    done: oneshot::Receiver<()>,
    pool: &Shared,
    id: usize,
    frees: bool,
) -> BoxFuture<'static, usize> {
    let pool = Arc::clone(pool);
    done.map(move |sent| {
        sent.expect("the sender is kept");
        if frees {
            release(&pool, 1);
        }
        id
    })
    .boxed()
}

/// The items of both tests: item 0 completes when `end_0` fires (and returns
/// a permit then if `frees`), the others take a permit each.
fn items(
    pool: &Shared,
    count: usize,
    frees: bool,
) -> (oneshot::Sender<()>, Vec<BoxFuture<'static, usize>>) {
    let (end_0, ended_0) = oneshot::channel();
    let mut items = vec![finish_on(ended_0, pool, 0, frees)];
    items.extend((1..count).map(|id| acquire(pool, id)));
    (end_0, items)
}

/// In place only: spawned, each item's future is its worker task's, and
/// which task runs first is the executor's choice (point 7).
///
/// Item 0 ends first and item 3 takes its worker's slot, which comes before
/// those of items 1 and 2: with the three waiting and woken at once, the
/// oldest takes each permit. Unordered and ordered.
#[test]
fn futures_woken_together_are_polled_oldest_first() {
    for ordered in [false, true] {
        let pool = Shared::default();
        let (end_0, items) = items(&pool, 4, false);
        let stream = stream::iter(items).bounded(3, 0);
        let mut run = if ordered {
            Driven::in_place(stream.ordered(4))
        } else {
            Driven::in_place(stream)
        };
        assert_eq!(run.poll(), Poll::Pending, "0 to 2 run, 1 and 2 wait");
        end_0.send(()).expect("item 0 runs");
        assert_eq!(
            run.poll(),
            Poll::Ready(Some(0)),
            "item 3 starts in 0's place"
        );
        assert_eq!(run.poll(), Poll::Pending, "1, 2 and 3 wait");
        for oldest in 1..=3 {
            release(&pool, 1);
            assert_eq!(run.poll(), Poll::Ready(Some(oldest)), "ordered: {ordered}");
        }
        assert_eq!(lock(&pool).taken_by, [1, 2, 3], "ordered: {ordered}");
        assert_eq!(run.poll(), Poll::Ready(None));
    }
}

both_modes! {
    /// Item 0 frees the permit item 1 waits for as it completes, and its
    /// completion starts item 2, which wants a permit too: item 1 gets it.
    /// Unordered and ordered.
    fn a_future_woken_by_a_completion_goes_before_a_new_start(mode) {
        for ordered in [false, true] {
            let pool = Shared::default();
            let (end_0, items) = items(&pool, 3, true);
            let stream = stream::iter(items).bounded(2, 0);
            let mut run = if ordered {
                drive!(mode, stream.ordered(2))
            } else {
                drive!(mode, stream)
            };
            assert_eq!(run.poll(), Poll::Pending, "0 runs, 1 waits");
            end_0.send(()).expect("item 0 runs");
            let mut outputs = run.take_ready();
            outputs.sort_unstable();
            assert_eq!(outputs, [0, 1], "ordered: {ordered}");
            assert_eq!(lock(&pool).taken_by, [1], "the new item 2 took the permit");
            release(&pool, 1);
            assert_eq!(run.take_ready(), [2]);
            assert_eq!(run.poll(), Poll::Ready(None));
        }
    }
}
