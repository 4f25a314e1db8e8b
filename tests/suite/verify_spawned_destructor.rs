//! Contract point 20: a panic in a future's destructor in the spawned mode.
//! Wherever the destructor runs, the panic must not leak anything, and must not
//! unwind into the executor. Each test says what would leak or escape without
//! the care `src/spawn.rs` takes. They live apart from verify_spawned_drop.rs,
//! which the valgrind leak check runs.

use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, Spawned};
use support::{
    Fault, Gates, INJECTED, Output, Rng, StepExecutor, caught, poll_once, quiet_injected_panics,
};

/// A stream on a [`StepExecutor`] whose gates `open` are open from the start,
/// polled once and run until its tasks are idle.
fn started(
    workers: usize,
    waiting: usize,
    items: usize,
    fault: Fault,
    open: &[usize],
) -> (Gates, StepExecutor, Spawned<Output>, Rng) {
    quiet_injected_panics();
    let gates = Gates::with_fault(fault);
    for &id in open {
        gates.open(id);
    }
    let mut executor = StepExecutor::new();
    let mut stream = gates
        .tracked_source(items)
        .bounded(workers, waiting)
        .spawn_on(executor.spawner());
    let mut rng = Rng::new(0);
    assert!(poll(&mut stream).unwrap().is_pending());
    executor.run_until_idle(&mut rng);
    (gates, executor, stream, rng)
}

fn poll(stream: &mut Spawned<Output>) -> Result<Poll<Option<Output>>, String> {
    caught(|| poll_once(stream))
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
    let (gates, mut executor, mut stream, mut rng) = started(1, 0, 2, Fault::DropOf(0), &[0]);
    assert_eq!(
        poll(&mut stream).unwrap_err(),
        format!("{INJECTED} in the drop of item 0")
    );
    drop(stream);
    executor.run_until_idle(&mut rng);
    assert_eq!(executor.live_tasks(), 0);
    gates.check_all_dropped_once();
}

/// A queued item whose destructor panics when the stream's drop drops the
/// queue: the items queued behind it are still dropped, and then the drop
/// re-raises the panic (contract point 10).
///
/// The queue is an `async-channel`, whose buffer (`concurrent-queue`) drops
/// its items in a loop that a panic ends early, leaking the rest.
#[test]
fn a_panicking_destructor_of_a_queued_item_does_not_leak_the_items_behind_it() {
    let (gates, mut executor, stream, mut rng) = started(1, 3, 5, Fault::DropOf(1), &[]);
    // Item 0 runs, items 1, 2 and 3 wait in the queue.
    assert_eq!(gates.pulled(), 4);
    assert_eq!(
        caught(|| drop(stream)),
        Err(format!("{INJECTED} in the drop of item 1"))
    );
    executor.run_until_idle(&mut rng);
    assert_eq!(executor.live_tasks(), 0);
    gates.check_all_dropped_once();
}

/// A running future whose destructor panics when the stream is dropped: the
/// cancelled task contains the panic (nobody is left to re-raise it to) rather
/// than unwinding into the executor, which tokio and smol swallow but a
/// hand-written executor or a thread pool may not.
#[test]
fn a_destructor_panic_in_a_cancelled_task_stays_in_the_task() {
    let (gates, mut executor, stream, mut rng) = started(2, 0, 4, Fault::DropOf(0), &[]);
    assert_eq!(gates.running(), 2);
    drop(stream);
    executor.run_until_idle(&mut rng);
    assert_eq!(executor.live_tasks(), 0);
    assert_eq!(executor.escaped, Vec::<String>::new());
    gates.check_all_dropped_once();
}
