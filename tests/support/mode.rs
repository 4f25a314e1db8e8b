//! One test body, both modes: [`Mode`] says where a test runs its stream, and
//! [`Driven`] drives it the same way in each, so a behaviour the contract
//! promises in both modes is written once and checked in both.
//!
//! - **In place** the stream runs as built: its futures make progress only
//!   while the test polls it (contract point 14).
//! - **Spawned** it runs through `.spawn_on(..)` on a [`StepExecutor`], which
//!   polls the worker tasks on the test's thread only when [`Driven`] asks it
//!   to: between two steps of the test every task has run until it stalled,
//!   so the state the test checks is exact, as in place.
//!
//! Build with [`drive!`](crate::drive): `drive!(mode, gates.source(4).bounded(1,
//! 3))`. A macro, not a generic function: each arm type-checks the stream on
//! its own, so a test names no bound of `spawn_on`. Write a test for both
//! modes with [`both_modes!`](crate::both_modes); where the modes differ by
//! design, the test branches on [`Mode::is_spawned`] at that assertion and
//! cites the contract point.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll, Wake, Waker};

use bounded_buffered::{
    BoundedBuffered, Clocking, FutureStream, KeyRule, Limits, Spawned, Stats, Timings,
    TryBoundedBuffered, TryFutureStream, WeightRule,
};
use futures::Stream;
use futures::stream::FusedStream;

use super::executors::StepExecutor;
use super::panic::{POLLED_AFTER_ESCAPE, POLLED_AFTER_PANIC, caught};

/// Where a test runs its stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// As built: polled by the test, futures polled inside its `poll_next`.
    InPlace,
    /// Through `spawn_on`, the worker tasks on a [`StepExecutor`].
    Spawned,
}

impl Mode {
    pub fn is_spawned(self) -> bool {
        self == Mode::Spawned
    }
}

/// What a test needs of a stream in either mode: the stream, and what the two
/// modes' types both offer.
pub trait Observe<T>: FusedStream<Item = T> {
    fn stats(&self) -> Stats;
    fn timings(&self) -> Option<Timings>;
    fn limits(&self) -> Limits;
    fn close(&self);
}

/// `Observe` for the in-place stream types, whose methods of the same names
/// are inherent.
macro_rules! observe_in_place {
    ($Stream:ident, $Bound:ident, $F:ty) => {
        impl<St, K, N, Q, W, T> Observe<T> for $Stream<St, K, N, Q, W>
        where
            St: $Bound,
            K: Clocking,
            Q: KeyRule<$F>,
            W: WeightRule<$F>,
            Self: FusedStream<Item = T>,
        {
            fn stats(&self) -> Stats {
                $Stream::stats(self)
            }

            fn timings(&self) -> Option<Timings> {
                $Stream::timings(self)
            }

            fn limits(&self) -> Limits {
                $Stream::limits(self)
            }

            fn close(&self) {
                $Stream::close(self);
            }
        }
    };
}

observe_in_place!(BoundedBuffered, FutureStream, St::Item);
observe_in_place!(TryBoundedBuffered, TryFutureStream, St::Ok);

impl<T> Observe<T> for Spawned<T> {
    fn stats(&self) -> Stats {
        Spawned::stats(self)
    }

    fn timings(&self) -> Option<Timings> {
        Spawned::timings(self)
    }

    fn limits(&self) -> Limits {
        Spawned::limits(self)
    }

    fn close(&self) {
        Spawned::close(self);
    }
}

/// A stream in one mode, driven step by step by the test, its consumer's
/// wakes counted.
pub struct Driven<'a, T> {
    mode: Mode,
    /// `None` once [`Driven::drop_stream`] dropped it.
    stream: Option<Pin<Box<dyn Observe<T> + 'a>>>,
    /// The worker tasks' executor, when spawned.
    executor: Option<StepExecutor>,
    waker: Waker,
    wakes: Arc<WakeCount>,
}

/// A consumer's waker: counts each `wake` and `wake_by_ref` (its `Arc`'s
/// count tells whether anything still holds it).
#[derive(Default)]
pub struct WakeCount(AtomicUsize);

impl WakeCount {
    /// How often it was woken so far.
    pub fn get(&self) -> usize {
        self.0.load(SeqCst)
    }
}

impl Wake for WakeCount {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

impl<'a, T> Driven<'a, T> {
    /// A stream that runs in place.
    pub fn in_place(stream: impl Observe<T> + 'a) -> Self {
        Self::new(Mode::InPlace, Box::pin(stream), None)
    }

    /// A stream spawned on `executor` (see [`drive!`](crate::drive)).
    pub fn spawned(stream: Spawned<T>, executor: StepExecutor) -> Self
    where
        T: 'a,
    {
        Self::new(Mode::Spawned, Box::pin(stream), Some(executor))
    }

    fn new(
        mode: Mode,
        stream: Pin<Box<dyn Observe<T> + 'a>>,
        executor: Option<StepExecutor>,
    ) -> Self {
        let wakes = Arc::new(WakeCount::default());
        let waker = Waker::from(Arc::clone(&wakes));
        Self {
            mode,
            stream: Some(stream),
            executor,
            waker,
            wakes,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    fn stream(&self) -> &Pin<Box<dyn Observe<T> + 'a>> {
        self.stream.as_ref().expect("the stream was dropped")
    }

    /// Spawned: runs the worker tasks until none is woken, failing if a panic
    /// escaped one. In place: nothing (futures run only inside a poll).
    pub fn settle(&mut self) {
        if let Some(executor) = &mut self.executor {
            executor.run_until_stalled();
        }
    }

    /// One poll of the consumer, with everything before and after it settled:
    /// spawned, the tasks run until they stall first (so the poll sees what
    /// they did) and again after (what the poll set off, as a refill in
    /// place is done before `poll_next` returns).
    pub fn poll(&mut self) -> Poll<Option<T>> {
        self.settle();
        let poll = self.poll_alone();
        self.settle();
        poll
    }

    /// Every output the stream has now: polls until it is pending or ends.
    pub fn take_ready(&mut self) -> Vec<T> {
        let mut taken = Vec::new();
        while let Poll::Ready(Some(output)) = self.poll() {
            taken.push(output);
        }
        taken
    }

    /// Polls to the end; fails if the stream is pending with nothing left to
    /// run (it would hang).
    pub fn take_to_end(&mut self) -> Vec<T> {
        let mut taken = Vec::new();
        loop {
            match self.poll() {
                Poll::Ready(Some(output)) => taken.push(output),
                Poll::Ready(None) => return taken,
                Poll::Pending => panic!("stalled before the end: nothing woken, nothing to take"),
            }
        }
    }

    /// Polls as an executor would: again after a `Pending` that woke the
    /// consumer; `Pending` only if the consumer parked with no wake.
    /// Spawned, the first poll spawns a task and returns `Pending`, and the
    /// task wakes the consumer once it has an output or found the end
    /// (contract point 17); in place, a poll that used up its budget wakes
    /// itself (point 8).
    pub fn poll_woken(&mut self) -> Poll<Option<T>> {
        loop {
            let wakes = self.wakes();
            let poll = self.poll();
            if poll.is_ready() || self.wakes() == wakes {
                return poll;
            }
        }
    }

    /// Every output until the consumer parks with no wake, or the end.
    pub fn take_woken(&mut self) -> Vec<T> {
        let mut taken = Vec::new();
        while let Poll::Ready(Some(output)) = self.poll_woken() {
            taken.push(output);
        }
        taken
    }

    /// One poll of the consumer and nothing else: spawned, no task runs
    /// before or after it (for tests that step the tasks themselves).
    pub fn poll_alone(&mut self) -> Poll<Option<T>> {
        let mut cx = Context::from_waker(&self.waker);
        let stream = self.stream.as_mut().expect("the stream was dropped");
        stream.as_mut().poll_next(&mut cx)
    }

    /// After a panic came out of a poll, the next poll refuses, saying why
    /// (point 10 in place, 20 spawned).
    pub fn check_refuses_polls(&mut self) {
        let Err(again) = caught(|| self.poll_alone().map(|_| ())) else {
            panic!("polled again after a panic, and it did not refuse");
        };
        let refusal = if self.mode.is_spawned() {
            POLLED_AFTER_PANIC
        } else {
            POLLED_AFTER_ESCAPE
        };
        assert!(again.contains(refusal), "unclear refusal: {again}");
    }

    /// How often the consumer's waker was woken so far.
    pub fn wakes(&self) -> usize {
        self.wakes.get()
    }

    pub fn stats(&self) -> Stats {
        self.stream().stats()
    }

    pub fn timings(&self) -> Option<Timings> {
        self.stream().timings()
    }

    pub fn limits(&self) -> Limits {
        self.stream().limits()
    }

    pub fn close(&self) {
        self.stream().close();
    }

    pub fn size_hint(&self) -> (usize, Option<usize>) {
        self.stream().size_hint()
    }

    pub fn is_terminated(&self) -> bool {
        self.stream().is_terminated()
    }

    /// Calls of the spawner so far (spawned only).
    pub fn spawns(&self) -> usize {
        self.executor
            .as_ref()
            .expect("an in-place stream spawns nothing")
            .spawns()
    }

    /// The worker tasks' executor (spawned only).
    pub fn executor(&mut self) -> &mut StepExecutor {
        self.executor
            .as_mut()
            .expect("an in-place stream has no executor")
    }

    /// Drops the stream and, spawned, runs the cancelled tasks until they
    /// stall: each drops its future. Fails if a task outlived the stream.
    pub fn drop_stream(&mut self) {
        drop(self.stream.take());
        if let Some(executor) = &mut self.executor {
            executor.run_until_stalled();
            assert_eq!(executor.live_tasks(), 0, "tasks outlived the stream");
        }
    }
}

/// Runs a stream in `mode`: `drive!(mode, stream)` is a [`Driven`], the stream
/// as built in place, or `stream.spawn_on(..)` on a new [`StepExecutor`].
#[macro_export]
macro_rules! drive {
    ($mode:expr, $stream:expr $(,)?) => {
        match $mode {
            $crate::Mode::InPlace => $crate::Driven::in_place($stream),
            $crate::Mode::Spawned => {
                let executor = $crate::StepExecutor::new();
                let spawner = executor.spawner();
                $crate::Driven::spawned($stream.spawn_on(spawner), executor)
            }
        }
    };
}

/// A test written once, run in both modes: `both_modes! { fn name(mode) { .. }
/// }` makes a module `name` with the tests `in_place` and `spawned`, each
/// running the body with `mode` set.
#[macro_export]
macro_rules! both_modes {
    ($($(#[$meta:meta])* fn $name:ident($mode:ident) $body:block)*) => {$(
        $crate::one_test_per_case! {
            $(#[$meta])* $name($mode) $body,
            in_place = $crate::Mode::InPlace,
            spawned = $crate::Mode::Spawned,
        }
    )*};
}

/// What `both_modes!` and `both_pools!` expand to: a module `name` with one
/// test per case, each running the body with `var` bound to the case's value.
#[doc(hidden)]
#[macro_export]
macro_rules! one_test_per_case {
    ($(#[$meta:meta])* $name:ident($var:ident) $body:block, $($case:ident = $value:expr,)*) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $case() {
                    let $var = $value;
                    $body
                }
            )*
        }
    };
}
