//! A panic in a future's destructor in the spawned mode (issue 4's "panic
//! injected into a future's destructor"): wherever the destructor runs, the
//! panic must not leak anything, and must not unwind into the executor.
//!
//! These tests fail with the current src/spawn.rs; each says why. They live
//! apart from verify_spawned_drop.rs, which the valgrind leak check runs.

mod verify_spawned_support;

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::task::{Context, Poll};

use bounded_buffered::{BoundedStreamExt, Spawned};
use futures::StreamExt;
use verify_spawned_support::{
    Fault, INJECTED, Ledger, Output, RandomExecutor, Rng, panic_message, quiet_injected_panics,
};

/// A stream on a [`RandomExecutor`] whose gates `open` are open from the start,
/// polled once and run until its tasks are idle.
fn started(
    workers: usize,
    waiting: usize,
    items: usize,
    fault: Fault,
    open: &[usize],
) -> (Arc<Ledger>, RandomExecutor, Spawned<Output>, Rng) {
    quiet_injected_panics();
    let ledger = Ledger::new(items, fault);
    for &index in open {
        ledger.open(index);
    }
    let mut executor = RandomExecutor::new();
    let mut stream = ledger
        .source()
        .bounded(workers, waiting)
        .spawn_on(executor.spawner());
    let mut rng = Rng::new(0);
    assert!(poll(&mut stream).unwrap().is_pending());
    executor.run_until_idle(&mut rng);
    (ledger, executor, stream, rng)
}

fn poll(stream: &mut Spawned<Output>) -> Result<Poll<Option<Output>>, String> {
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    panic::catch_unwind(AssertUnwindSafe(|| stream.poll_next_unpin(&mut cx)))
        .map_err(|payload| panic_message(&*payload))
}

/// A future that completed in a worker and then panics in its destructor: the
/// panic reaches the consumer, and the output it produced is dropped once.
///
/// `let output = future.await;` in the worker leaks `output` when the
/// future's destructor panics, because the compiler skips dropping a value
/// already moved into its destination when a local's destructor unwinds
/// (rust-lang/rust#47949).
#[test]
fn the_output_of_a_future_whose_destructor_panics_is_dropped_once() {
    let (ledger, mut executor, mut stream, mut rng) = started(1, 0, 2, Fault::DropOf(0), &[0]);
    assert_eq!(
        poll(&mut stream).unwrap_err(),
        format!("{INJECTED} in the drop of item 0")
    );
    drop(stream);
    executor.run_until_idle(&mut rng);
    assert_eq!(executor.live_tasks(), 0);
    ledger.check_all_dropped_once();
}

/// A queued item whose destructor panics when the cancelled tasks drop the
/// queue: the items queued behind it are still dropped.
///
/// The queue is an `async-channel`, whose buffer (`concurrent-queue`) drops
/// its items in a loop that a panic ends early, leaking the rest.
#[test]
fn a_panicking_destructor_of_a_queued_item_does_not_leak_the_items_behind_it() {
    let (ledger, mut executor, stream, mut rng) = started(1, 3, 5, Fault::DropOf(1), &[]);
    // Item 0 runs, items 1, 2 and 3 wait in the queue.
    assert_eq!(ledger.pulled(), 4);
    drop(stream);
    executor.run_until_idle(&mut rng);
    assert_eq!(executor.live_tasks(), 0);
    ledger.check_all_dropped_once();
}

/// A running future whose destructor panics when the stream is dropped: the
/// cancelled task contains the panic (nobody is left to re-raise it to) rather
/// than unwinding into the executor, which tokio and smol swallow but a
/// hand-written executor or a thread pool may not.
#[test]
fn a_destructor_panic_in_a_cancelled_task_stays_in_the_task() {
    let (ledger, mut executor, stream, mut rng) = started(2, 0, 4, Fault::DropOf(0), &[]);
    assert_eq!(ledger.running(), 2);
    drop(stream);
    executor.run_until_idle(&mut rng);
    assert_eq!(executor.live_tasks(), 0);
    assert_eq!(executor.escaped, Vec::<String>::new());
    ledger.check_all_dropped_once();
}
