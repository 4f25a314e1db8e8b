//! Spawned mode's tasks: spawned as items need them, never more than
//! `workers`; budgets as large as `usize::MAX` work; a pending source is pulled
//! again when it wakes, whether the task it woke is idle or busy; a batch of
//! outputs taken by the consumer wakes one task, and a batch of completions
//! wakes a parked consumer once.
//!
//! Deterministic: the tasks run on executors the test steps by hand.

mod spawn_support;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use bounded_buffered::{BoundedStreamExt, Spawner};
use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::stream::{self, StreamExt};
use futures_test::task::new_count_waker;
use spawn_support::{Gates, Probe, Stepper, poll_once, tokio_runtime};

fn get(counter: &std::sync::atomic::AtomicUsize) -> usize {
    Probe::get(counter)
}

/// A task with its waker.
type Task = (BoxFuture<'static, ()>, Waker, Arc<Listed>);

/// An executor that polls only when told to, and says which tasks are ready.
#[derive(Default)]
struct Manual {
    inbox: Arc<Mutex<Vec<BoxFuture<'static, ()>>>>,
    ready: Arc<Mutex<VecDeque<usize>>>,
    /// By id; `None` once complete.
    tasks: Vec<Option<Task>>,
}

struct Listed {
    id: usize,
    listed: AtomicBool,
    ready: Arc<Mutex<VecDeque<usize>>>,
}

impl Wake for Listed {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.listed.swap(true, SeqCst) {
            self.ready.lock().unwrap().push_back(self.id);
        }
    }
}

impl Manual {
    fn spawner(&self) -> impl Spawner + use<> {
        let inbox = Arc::clone(&self.inbox);
        move |task: BoxFuture<'static, ()>| inbox.lock().unwrap().push(task)
    }

    fn take_in(&mut self) {
        for task in self.inbox.lock().unwrap().drain(..) {
            let listed = Arc::new(Listed {
                id: self.tasks.len(),
                listed: AtomicBool::new(false),
                ready: Arc::clone(&self.ready),
            });
            listed.wake_by_ref();
            let waker = Waker::from(Arc::clone(&listed));
            self.tasks.push(Some((task, waker, listed)));
        }
    }

    /// Tasks spawned, and tasks woken and not polled since.
    fn counts(&mut self) -> (usize, usize) {
        self.take_in();
        (self.tasks.len(), self.ready.lock().unwrap().len())
    }

    fn run_until_stalled(&mut self) {
        loop {
            self.take_in();
            let Some(id) = self.ready.lock().unwrap().pop_front() else {
                return;
            };
            if let Some((task, waker, listed)) = &mut self.tasks[id] {
                listed.listed.store(false, SeqCst);
                if task
                    .as_mut()
                    .poll(&mut Context::from_waker(waker))
                    .is_ready()
                {
                    self.tasks[id] = None;
                }
            }
        }
    }
}

#[test]
fn tasks_are_spawned_as_items_need_them_and_never_beyond_workers() {
    for (workers, waiting) in [(1, 0), (3, 2), (8, 0)] {
        let probe = Probe::new();
        let mut executor = Manual::default();
        let mut stream = probe
            .source(100, Gates::All)
            .bounded(workers, waiting)
            .spawn_on(executor.spawner());
        assert_eq!(executor.counts(), (0, 0), "spawned before the first poll");
        assert!(poll_once(&mut stream).is_pending());
        // The first poll spawns one task; each spawns the next while starts
        // are free and items come, up to the worker budget.
        assert_eq!(executor.counts(), (1, 1));
        executor.run_until_stalled();
        assert_eq!(executor.counts(), (workers, 0), "W={workers} Q={waiting}");
        assert_eq!(get(&probe.started), workers);
        assert_eq!(get(&probe.pulled), workers + waiting);
        // Outputs handed out and items started again: no more tasks.
        for round in 0..3 {
            probe.open_all();
            executor.run_until_stalled();
            while let Poll::Ready(Some(_)) = poll_once(&mut stream) {}
            executor.run_until_stalled();
            assert_eq!(executor.counts().0, workers, "round {round}");
        }
    }
}

#[test]
fn a_huge_worker_budget_over_a_few_items_spawns_a_few_tasks() {
    let probe = Probe::new();
    let mut executor = Manual::default();
    let mut stream = probe
        .source(5, Gates::All)
        .bounded(100_000, 0)
        .spawn_on(executor.spawner());
    assert!(poll_once(&mut stream).is_pending());
    executor.run_until_stalled();
    // One task per item, and one more that found the source ended.
    assert_eq!(executor.counts(), (6, 0));
    probe.open_all();
    executor.run_until_stalled();
    let mut outputs = Vec::new();
    while let Poll::Ready(Some(output)) = poll_once(&mut stream) {
        outputs.push(output.index);
    }
    outputs.sort_unstable();
    assert_eq!(outputs, [0, 1, 2, 3, 4]);
    assert!(matches!(poll_once(&mut stream), Poll::Ready(None)));
    executor.run_until_stalled();
    assert!(
        executor.tasks.iter().all(Option::is_none),
        "tasks outlived the stream"
    );
}

#[test]
fn budgets_of_usize_max_work_as_in_place() {
    let runtime = tokio_runtime();
    for ordered in [false, true] {
        let stream = stream::iter(0..1_000u64)
            .map(|n| async move {
                spawn_support::yield_now().await;
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

/// Items sent through a channel: the source is pending until the test sends.
fn channel_source(
    probe: &Arc<Probe>,
) -> (
    mpsc::UnboundedSender<()>,
    impl futures::Stream<Item = impl Future<Output = spawn_support::Output> + Send + use<>>
    + Send
    + use<>,
) {
    let (sender, receiver) = mpsc::unbounded::<()>();
    // The probe's items, one per message.
    let mut items = Box::pin(probe.source(usize::MAX, Gates::All));
    let source = receiver.then(move |()| {
        let waker = futures::task::noop_waker();
        let Poll::Ready(Some(item)) = items.poll_next_unpin(&mut Context::from_waker(&waker))
        else {
            unreachable!("the probe's source is an endless iterator");
        };
        std::future::ready(item)
    });
    (sender, source)
}

#[test]
fn a_pending_source_wakes_its_idle_task_which_pulls_again() {
    let probe = Probe::new();
    let (sender, source) = channel_source(&probe);
    let (mut stepper, spawner) = Stepper::new();
    let mut stream = source.bounded(2, 1).spawn_on(spawner);
    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();
    assert_eq!(get(&probe.pulled), 0);
    // Each message wakes the task the source holds, which pulls again.
    for sent in 1..=4 {
        sender.unbounded_send(()).unwrap();
        stepper.run_until_stalled();
        assert_eq!(get(&probe.pulled), sent.min(3), "after {sent} sent");
    }
    let stats = stream.stats();
    assert_eq!((stats.active, stats.waiting), (2, 1));
    // The fourth item comes once a start is free.
    assert!(probe.open(0));
    stepper.run_until_stalled();
    assert!(matches!(poll_once(&mut stream), Poll::Ready(Some(out)) if out.index == 0));
    stepper.run_until_stalled();
    assert_eq!(get(&probe.pulled), 4);
    assert_eq!(get(&probe.started), 3);
}

#[test]
fn a_pending_source_wakes_its_busy_task_which_tops_up_the_queue() {
    let probe = Probe::new();
    let (sender, source) = channel_source(&probe);
    let (mut stepper, spawner) = Stepper::new();
    let mut stream = source.bounded(1, 1).spawn_on(spawner);
    sender.unbounded_send(()).unwrap();
    assert!(poll_once(&mut stream).is_pending());
    stepper.run_until_stalled();
    // The one task runs item 0 and, topping up, found the source pending.
    assert_eq!((get(&probe.pulled), get(&probe.started)), (1, 1));
    sender.unbounded_send(()).unwrap();
    stepper.run_until_stalled();
    // The source woke the busy task, which pulled item 1 into the queue.
    assert_eq!(get(&probe.pulled), 2);
    let stats = stream.stats();
    assert_eq!((stats.active, stats.waiting), (1, 1));
    drop(sender);
    probe.open_all();
    stepper.run_until_stalled();
    assert!(matches!(poll_once(&mut stream), Poll::Ready(Some(out)) if out.index == 0));
    stepper.run_until_stalled();
    probe.open_all();
    stepper.run_until_stalled();
    assert!(matches!(poll_once(&mut stream), Poll::Ready(Some(out)) if out.index == 1));
    stepper.run_until_stalled();
    assert!(matches!(poll_once(&mut stream), Poll::Ready(None)));
}

#[test]
fn outputs_taken_in_a_batch_wake_one_task() {
    let probe = Probe::new();
    let mut executor = Manual::default();
    let mut stream = probe
        .source(100, Gates::None)
        .bounded(4, 0)
        .spawn_on(executor.spawner());
    assert!(poll_once(&mut stream).is_pending());
    executor.run_until_stalled();
    assert_eq!(stream.stats().held, 4);
    assert_eq!(executor.counts().1, 0);
    // Four outputs taken, four starts freed: one task is sent for them.
    for _ in 0..4 {
        assert!(matches!(poll_once(&mut stream), Poll::Ready(Some(_))));
    }
    assert_eq!(executor.counts().1, 1);
    executor.run_until_stalled();
    // It (and those it sent on) took every start again.
    assert_eq!(stream.stats().held, 4);
    assert_eq!(get(&probe.pulled), 8);
}

#[test]
fn completions_in_a_batch_wake_the_parked_consumer_once() {
    let probe = Probe::new();
    let (mut stepper, spawner) = Stepper::new();
    let mut stream = probe.source(10, Gates::All).bounded(3, 0).spawn_on(spawner);
    let (waker, wakes) = new_count_waker();
    let mut cx = Context::from_waker(&waker);
    assert!(stream.poll_next_unpin(&mut cx).is_pending());
    stepper.run_until_stalled();
    assert!(stream.poll_next_unpin(&mut cx).is_pending());
    let before = wakes.get();
    probe.open_all();
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
