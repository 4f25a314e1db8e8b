//! Spawned mode's tasks: spawned as items need them, never more than
//! `workers`; budgets as large as `usize::MAX` work; a pending source is pulled
//! again when it wakes, whether the task it woke is idle or busy; a batch of
//! outputs taken by the consumer wakes one task, and a batch of completions
//! wakes a parked consumer once.
//!
//! Deterministic: the tasks run on executors the test steps by hand.

use std::task::{Context, Poll};

use bounded_buffered::BoundedStreamExt;
use futures::channel::mpsc;
use futures::stream::{self, StreamExt};
use futures_test::task::new_count_waker;
use support::{Gates, StepExecutor, poll_once, tokio_multi_thread};

#[test]
fn tasks_are_spawned_as_items_need_them_and_never_beyond_workers() {
    for (workers, waiting) in [(1, 0), (3, 2), (8, 0)] {
        let gates = Gates::new();
        let mut executor = StepExecutor::new();
        let mut stream = gates
            .source(100)
            .bounded(workers, waiting)
            .spawn_on(executor.spawner());
        assert_eq!(
            counts(&mut executor),
            (0, 0),
            "spawned before the first poll"
        );
        assert!(poll_once(&mut stream).is_pending());
        // The first poll spawns one task; each spawns the next while starts
        // are free and items come, up to the worker budget.
        assert_eq!(counts(&mut executor), (1, 1));
        executor.run_until_stalled();
        assert_eq!(
            counts(&mut executor),
            (workers, 0),
            "W={workers} Q={waiting}"
        );
        assert_eq!(gates.started(), workers);
        assert_eq!(gates.pulled(), workers + waiting);
        // Outputs handed out and items started again: no more tasks.
        for round in 0..3 {
            gates.open_all();
            executor.run_until_stalled();
            while let Poll::Ready(Some(_)) = poll_once(&mut stream) {}
            executor.run_until_stalled();
            assert_eq!(executor.spawns(), workers, "round {round}");
        }
    }
}

#[test]
fn a_huge_worker_budget_over_a_few_items_spawns_a_few_tasks() {
    let gates = Gates::new();
    let mut executor = StepExecutor::new();
    let mut stream = gates
        .source(5)
        .bounded(100_000, 0)
        .spawn_on(executor.spawner());
    assert!(poll_once(&mut stream).is_pending());
    executor.run_until_stalled();
    // One task per item, and one more that found the source ended.
    assert_eq!(counts(&mut executor), (6, 0));
    gates.open_all();
    executor.run_until_stalled();
    let mut outputs = Vec::new();
    while let Poll::Ready(Some(output)) = poll_once(&mut stream) {
        outputs.push(output);
    }
    outputs.sort_unstable();
    assert_eq!(outputs, [0, 1, 2, 3, 4]);
    assert!(matches!(poll_once(&mut stream), Poll::Ready(None)));
    executor.run_until_stalled();
    assert_eq!(executor.live_tasks(), 0, "tasks outlived the stream");
}

#[test]
fn budgets_of_usize_max_work_as_in_place() {
    let runtime = tokio_multi_thread();
    for ordered in [false, true] {
        let stream = stream::iter(0..1_000u64)
            .map(|n| async move {
                support::yield_now().await;
                n
            })
            .bounded(usize::MAX, usize::MAX);
        let stream = if ordered {
            stream.ordered(usize::MAX)
        } else {
            stream
        };
        let mut stream = stream.spawn_on(runtime.handle().clone());
        let mut outputs: Vec<u64> = runtime.block_on(stream.by_ref().collect());
        if !ordered {
            outputs.sort_unstable();
        }
        assert_eq!(
            outputs,
            (0..1_000).collect::<Vec<_>>(),
            "ordered: {ordered}"
        );
        assert_eq!(stream.stats().completed, 1_000);
    }
}

/// Gates `0, 1, ...`, one per message sent: the source is pending until the
/// test sends.
fn channel_source(
    gates: &Gates,
) -> (
    mpsc::UnboundedSender<()>,
    impl futures::Stream<Item = impl Future<Output = usize> + Send + use<>> + Send + use<>,
) {
    let (sender, receiver) = mpsc::unbounded::<()>();
    let mut items = gates.source(usize::MAX);
    let source = receiver.then(move |()| {
        let waker = futures::task::noop_waker();
        let Poll::Ready(Some(item)) = items.poll_next_unpin(&mut Context::from_waker(&waker))
        else {
            unreachable!("the gates' source is always ready");
        };
        std::future::ready(item)
    });
    (sender, source)
}

/// Tasks spawned, and tasks woken and not polled since.
fn counts(executor: &mut StepExecutor) -> (usize, usize) {
    (executor.spawns(), executor.ready_tasks())
}

#[test]
fn a_pending_source_wakes_its_idle_task_which_pulls_again() {
    let gates = Gates::new();
    let (sender, source) = channel_source(&gates);
    let mut stepper = StepExecutor::new();
    let mut stream = source.bounded(2, 1).spawn_on(stepper.spawner());
    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();
    assert_eq!(gates.pulled(), 0);
    // Each message wakes the task the source holds, which pulls again.
    for sent in 1..=4 {
        sender.unbounded_send(()).unwrap();
        stepper.run_until_stalled();
        assert_eq!(gates.pulled(), sent.min(3), "after {sent} sent");
    }
    let stats = stream.stats();
    assert_eq!((stats.active, stats.waiting), (2, 1));
    // The fourth item comes once a start is free.
    assert!(gates.open(0));
    stepper.run_until_stalled();
    assert!(matches!(poll_once(&mut stream), Poll::Ready(Some(out)) if out == 0));
    stepper.run_until_stalled();
    assert_eq!(gates.pulled(), 4);
    assert_eq!(gates.started(), 3);
}

#[test]
fn a_pending_source_wakes_its_busy_task_which_tops_up_the_queue() {
    let gates = Gates::new();
    let (sender, source) = channel_source(&gates);
    let mut stepper = StepExecutor::new();
    let mut stream = source.bounded(1, 1).spawn_on(stepper.spawner());
    sender.unbounded_send(()).unwrap();
    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();
    // The one task runs item 0 and, topping up, found the source pending.
    assert_eq!((gates.pulled(), gates.started()), (1, 1));
    sender.unbounded_send(()).unwrap();
    stepper.run_until_stalled();
    // The source woke the busy task, which pulled item 1 into the queue.
    assert_eq!(gates.pulled(), 2);
    let stats = stream.stats();
    assert_eq!((stats.active, stats.waiting), (1, 1));
    drop(sender);
    gates.open_all();
    stepper.run_until_stalled();
    assert!(matches!(poll_once(&mut stream), Poll::Ready(Some(out)) if out == 0));
    stepper.run_until_stalled();
    gates.open_all();
    stepper.run_until_stalled();
    assert!(matches!(poll_once(&mut stream), Poll::Ready(Some(out)) if out == 1));
    stepper.run_until_stalled();
    assert!(matches!(poll_once(&mut stream), Poll::Ready(None)));
}

#[test]
fn outputs_taken_in_a_batch_wake_one_task() {
    let gates = Gates::open_except(&[]);
    let mut executor = StepExecutor::new();
    let mut stream = gates.source(100).bounded(4, 0).spawn_on(executor.spawner());
    assert!(poll_once(&mut stream).is_pending());
    executor.run_until_stalled();
    assert_eq!(stream.stats().held, 4);
    assert_eq!(executor.ready_tasks(), 0);
    // Four outputs taken, four starts freed: one task is sent for them.
    for _ in 0..4 {
        assert!(matches!(poll_once(&mut stream), Poll::Ready(Some(_))));
    }
    assert_eq!(executor.ready_tasks(), 1);
    executor.run_until_stalled();
    // It (and those it sent on) took every start again.
    assert_eq!(stream.stats().held, 4);
    assert_eq!(gates.pulled(), 8);
}

#[test]
fn completions_in_a_batch_wake_the_parked_consumer_once() {
    let gates = Gates::new();
    let mut stepper = StepExecutor::new();
    let mut stream = gates.source(10).bounded(3, 0).spawn_on(stepper.spawner());
    let (waker, wakes) = new_count_waker();
    let mut cx = Context::from_waker(&waker);
    assert!(stream.poll_next_unpin(&mut cx).is_pending());
    stepper.run_until_stalled();
    assert!(stream.poll_next_unpin(&mut cx).is_pending());
    let before = wakes.get();
    gates.open_all();
    stepper.run_until_stalled();
    assert_eq!(stream.stats().held, 3);
    assert_eq!(wakes.get(), before + 1, "one wake for the batch");
    for _ in 0..3 {
        assert!(matches!(
            stream.poll_next_unpin(&mut cx),
            Poll::Ready(Some(_))
        ));
    }
}
