//! [`Shared`]: the state behind its lock, with what happens around a lock
//! section (wakes, spawns, destructors), cancellation and failure, and the
//! consumer's view of it all ([`Outlet`]).

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::task::{Context, Poll};

use std::pin::Pin;

use super::Outlet;
use super::alarm::AlarmTask;
use super::spawner::Spawner;
use super::state::{Deferred, Failure, Handout, Leftovers, State, Untaken};
use super::worker::Worker;
use crate::budget::Budgets;
use crate::clock::{Clocking, Flag};
use crate::engine::{Engine, SendSpec};
use crate::limits::{self, Limits, Retarget, Signal};
use crate::observe::Span;
use crate::stats::Stats;
use crate::sync::{self, Arc, AtomicBool, AtomicWaker, Mutex, MutexGuard, Ordering, Weak};
use crate::time::Alarm;
use crate::timings::Timings;

pub(super) struct Shared<R: SendSpec> {
    state: Mutex<State<R>>,
    /// Mirrors the state's `cancelled` for the tasks' check at the start of
    /// each poll, made without the lock. Set before the tasks are woken.
    cancelled: AtomicBool,
    /// Installed by the first poll. Spawning happens under this lock, never
    /// under the state's.
    spawner: Mutex<Option<Box<dyn Spawner>>>,
    /// The span current at `spawn_on`, entered by the tasks while they poll
    /// (feature `tracing`; nothing without it).
    span: Span,
    /// The stream's timer, until the first poll spawns the alarm task on it.
    alarm: Mutex<Option<Alarm>>,
    /// The alarm task's waker, registered at the start of its every poll,
    /// woken after a section that needs it sooner, and at the cancellation.
    pub(super) alarm_waker: AtomicWaker,
}

impl<R: SendSpec> Shared<R> {
    /// The shared state of a stream whose engine `spawn_on` moved here.
    pub(super) fn new(
        source: Pin<Box<R::Source>>,
        engine: Engine<R>,
        alarm: Option<Alarm>,
    ) -> Self {
        Self {
            state: Mutex::new(State::new(source, engine)),
            cancelled: AtomicBool::new(false),
            spawner: Mutex::new(None),
            span: Span::current(),
            alarm: Mutex::new(alarm),
            alarm_waker: AtomicWaker::new(),
        }
    }

    /// The span current at `spawn_on` (see [`crate::observe`]).
    pub(super) fn span(&self) -> &Span {
        &self.span
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State<R>> {
        self.state.lock()
    }

    pub(super) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Runs one lock section, then what it deferred.
    pub(super) fn section<T>(
        this: &Arc<Self>,
        section: impl FnOnce(&mut State<R>) -> (T, Deferred<R>),
    ) -> T {
        Self::section_handing_off(this, section).0
    }

    /// [`Shared::section`], also saying whether the section sent another task
    /// for work (woke an idle one or spawned one).
    pub(super) fn section_handing_off<T>(
        this: &Arc<Self>,
        section: impl FnOnce(&mut State<R>) -> (T, Deferred<R>),
    ) -> (T, bool) {
        // With `metrics`, the exporter gets what the section changed, under
        // the lock. Without it, the section exactly as it was: even an empty
        // hook here moved the code by 5 instructions per item.
        #[cfg(feature = "metrics")]
        let (result, deferred) = {
            let mut state = this.lock();
            state.begin_section();
            let mut done = section(&mut state);
            if <R::Clock as Clocking>::TIMED {
                state.check_alarm(&mut done.1);
            }
            state.publish(&done.1);
            done
        };
        #[cfg(not(feature = "metrics"))]
        let (result, deferred) = {
            let mut state = this.lock();
            state.begin_section();
            let mut done = section(&mut state);
            if <R::Clock as Clocking>::TIMED {
                state.check_alarm(&mut done.1);
            }
            done
        };
        let handed_off = deferred.searcher.is_some() || deferred.spawn;
        // A cancellation's leftovers dropped here have nobody to re-raise a
        // panic to: the run's outcome is what cancelled it (a failure, which
        // is reported, or `try_bounded`'s error), or nothing was left to drop
        // (the end). The consumer's drop goes through `Shared::cancel`.
        drop(Self::after(this, deferred));
        (result, handed_off)
    }

    /// What a lock section left for after it: wakes and spawns first, user
    /// destructors last, so a destructor that panics cannot strand a wake.
    /// Returns the destructors of a cancellation's leftovers, run, with the
    /// first panic among them.
    fn after(this: &Arc<Self>, deferred: Deferred<R>) -> Destructors {
        let Deferred {
            consumer,
            searcher,
            refill,
            spawn,
            ended,
            leftovers,
            unreported,
            unwoken,
            wake_alarm,
        } = deferred;
        if leftovers
            .as_ref()
            .is_some_and(|leftovers| leftovers.cancelled)
        {
            this.cancelled.store(true, Ordering::Release);
        }
        if let Some(searcher) = searcher {
            searcher.wake();
        }
        if let Some(refill) = refill {
            refill.wake();
        }
        if let Some(consumer) = consumer {
            consumer.wake();
        }
        // Only a stream that reads a clock has an alarm task: the flag is
        // nothing, and the check gone, for every other.
        if wake_alarm.is_raised() {
            this.alarm_waker.wake();
        }
        if spawn {
            Self::spawn_counted(this);
        }
        let mut destructors = Destructors::default();
        if let Some(leftovers) = leftovers {
            release(*leftovers, &this.alarm_waker, &mut destructors);
        }
        drop(unreported);
        drop(unwoken);
        // Uncaught: on a task's thread, a panic here fails the stream (the
        // task catches it); on the consumer's (`close`), it propagates.
        drop(ended);
        destructors
    }

    /// Hands every task counted under the lock to the spawner. Whoever finds
    /// the spawner busy leaves its spawns to the party holding it, which looks
    /// for more after releasing it: so no counted task is forgotten, the
    /// spawner is never called by two threads at once, and a spawner that
    /// polls the new task before returning cannot deadlock.
    fn spawn_counted(this: &Arc<Self>) {
        loop {
            let Some(spawner) = this.spawner.try_lock() else {
                return;
            };
            let Some(spawner_ref) = spawner.as_ref() else {
                return;
            };
            loop {
                // Its own statement: the state's lock is released before spawning.
                let next = this.lock().next_to_spawn();
                let Some((index, handle)) = next else {
                    break;
                };
                let task = Box::pin(Worker::new(Arc::clone(this), handle, index));
                if let Err(payload) =
                    panic::catch_unwind(AssertUnwindSafe(|| spawner_ref.spawn(task)))
                {
                    drop(spawner);
                    Self::fail(this, Failure::Panicked(payload));
                    return;
                }
            }
            drop(spawner);
            // A task counted after the last look found the spawner busy.
            if !this.lock().has_unspawned() {
                return;
            }
        }
    }

    /// Records the first failure and cancels every task; the consumer's next
    /// poll re-raises it.
    pub(super) fn fail(this: &Arc<Self>, failure: Failure) {
        Self::section(this, |state| ((), state.fail(failure)));
    }

    /// Where [`Limits`] handles send their changes.
    pub(super) fn limits_target(this: &Arc<Self>) -> std::sync::Arc<dyn Retarget> {
        std::sync::Arc::new(LimitsTarget(sync::downgrade(this)))
    }

    /// Cancels every task (the stream is dropped); returns the destructors of
    /// the source and the waiting items, run on this thread.
    fn cancel(this: &Arc<Self>) -> Destructors {
        let deferred = {
            let mut state = this.lock();
            state.begin_section();
            let deferred = state.stop();
            state.publish(&deferred);
            deferred
        };
        Self::after(this, deferred)
    }
}

/// User destructors run one at a time, each caught, so that one that panics
/// neither skips the others nor unwinds through the crate; the first panic is
/// kept for whoever can re-raise it.
#[derive(Default)]
struct Destructors {
    first_panic: Option<Box<dyn Any + Send>>,
}

impl Destructors {
    /// Drops `value`, catching a panic of its destructor.
    fn run<T>(&mut self, value: T) {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| drop(value))) {
            // A later panic adds nothing the caller needs: the first is kept.
            self.first_panic.get_or_insert(payload);
        }
    }

    /// Re-raises the first panic, once every destructor ran: the consumer's
    /// drop (contract point 10). Not while this thread is unwinding already
    /// (a second panic would abort): then it is dropped.
    fn resume(self) {
        if let Some(payload) = self.first_panic {
            if !std::thread::panicking() {
                panic::resume_unwind(payload);
            }
        }
    }
}

/// Drops what a cancellation took out of the state and wakes every task, so
/// each drops its own future on its next poll. Each destructor is caught, so
/// that the items after one that panics are still dropped; `destructors`
/// keeps the first panic, for the caller to re-raise or swallow.
fn release<R: SendSpec>(
    leftovers: Leftovers<R>,
    alarm: &AtomicWaker,
    destructors: &mut Destructors,
) {
    let Leftovers {
        cancelled,
        source,
        waiting,
        held,
        tasks,
        consumer,
    } = leftovers;
    for task in &tasks {
        task.waker.wake();
    }
    if cancelled {
        // The alarm task, if any, ends too.
        alarm.wake();
    }
    if let Some(consumer) = consumer {
        consumer.wake();
    }
    destructors.run(source);
    for item in waiting {
        destructors.run(item);
    }
    for output in held {
        destructors.run(output);
    }
}

/// What a [`Limits`] handle holds: the state, weakly, so a
/// handle kept after the stream is gone keeps nothing of it alive.
struct LimitsTarget<R: SendSpec>(Weak<Shared<R>>);

impl<R: SendSpec> Retarget for LimitsTarget<R> {
    fn apply(&self, _: &limits::Settings) {
        if let Some(shared) = self.0.upgrade() {
            Shared::section(&shared, |state| ((), state.set_limits()));
        }
    }
}

impl<R: SendSpec> Outlet<R::Item> for Arc<Shared<R>> {
    fn limits(&self) -> Limits {
        self.lock()
            .limits(|| Signal::Spawned(Shared::limits_target(self)))
    }

    fn timings(&self) -> Option<Timings> {
        self.lock().timings()
    }

    fn start(&self, spawner: Box<dyn Spawner>) {
        // The alarm task first: the first section may need it armed.
        let alarm = self.alarm.lock().take();
        if let Some(alarm) = alarm {
            let task = Box::pin(AlarmTask::new(Arc::clone(self), alarm));
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| spawner.spawn(task))) {
                *self.spawner.lock() = Some(spawner);
                Shared::fail(self, Failure::Panicked(payload));
                return;
            }
        }
        *self.spawner.lock() = Some(spawner);
        Shared::section(self, |state| ((), state.begin()));
    }

    fn poll_output(&self, cx: &mut Context<'_>) -> Poll<Handout<R::Item>> {
        let handout = Shared::section(self, |state| state.hand_out(cx.waker()));
        match handout {
            Handout::Pending => Poll::Pending,
            handout => Poll::Ready(handout),
        }
    }

    fn stats(&self) -> Stats {
        self.lock().stats()
    }

    fn budgets(&self) -> Budgets {
        self.lock().engine().budgets()
    }

    fn state(&self) -> crate::engine::State {
        self.lock().engine().life().state()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // Its own statement: the lock is released before a panic is re-raised.
        let hint = self.lock().size_hint();
        hint.unwrap_or_else(|payload| panic::resume_unwind(payload))
    }

    fn close(&self) {
        Shared::section(self, |state| ((), state.close()));
    }

    fn stop(&self) {
        // The source and the waiting items, dropped on this thread.
        let mut destructors = Shared::cancel(self);
        // Outputs nobody will take go now, rather than whenever the last task
        // lets go of the state, and so do an error or a panic not yielded yet.
        // Outputs completed after this are dropped by their tasks.
        let mut held = Vec::new();
        let untaken = self.lock().take_untaken(&mut held);
        let Untaken {
            error,
            failure,
            settings,
        } = untaken;
        for output in held {
            destructors.run(output);
        }
        destructors.run(error);
        destructors.run(failure);
        // The handles' settings point back at this state (weakly; under
        // loom, whose `Arc` has no weak count, strongly): let go of them here
        // so that nothing of the stream outlives it in either build.
        drop(settings);
        // Everything this thread drops was dropped: now the first panic of
        // their destructors, as in place. A running future is dropped by its
        // task, later and maybe elsewhere; its panic cannot come here.
        destructors.resume();
    }
}

/// The consumer's view of the state, with what the tasks settle turned into
/// the stream's items (the public stream types differ in their items, not in
/// what runs).
///
/// `I` is the conversion's own type (a function item, of size zero), so the
/// conversion is inlined where outputs are handed out.
pub(super) struct Consumer<R: SendSpec, I> {
    shared: Arc<Shared<R>>,
    item: I,
}

impl<R: SendSpec, I> Consumer<R, I> {
    pub(super) fn new(shared: Arc<Shared<R>>, item: I) -> Self {
        Self { shared, item }
    }
}

impl<R: SendSpec, T, I> Outlet<T> for Consumer<R, I>
where
    I: Fn(R::Item) -> T + Send + Sync,
{
    fn start(&self, spawner: Box<dyn Spawner>) {
        self.shared.start(spawner);
    }

    fn poll_output(&self, cx: &mut Context<'_>) -> Poll<Handout<T>> {
        self.shared.poll_output(cx).map(|handout| match handout {
            Handout::Output(output) => Handout::Output((self.item)(output)),
            Handout::End => Handout::End,
            Handout::Failed(failure) => Handout::Failed(failure),
            Handout::Pending => Handout::Pending,
        })
    }

    fn stats(&self) -> Stats {
        self.shared.stats()
    }

    fn budgets(&self) -> Budgets {
        self.shared.budgets()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.shared.size_hint()
    }

    fn close(&self) {
        self.shared.close();
    }

    fn stop(&self) {
        self.shared.stop();
    }

    fn limits(&self) -> Limits {
        self.shared.limits()
    }

    fn state(&self) -> crate::engine::State {
        self.shared.state()
    }

    fn timings(&self) -> Option<Timings> {
        self.shared.timings()
    }
}
