//! Contract point 12, model-checked: the wake protocol under loom, through the
//! public API. Its gate stays here, built on loom's types (no `mod support`).
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom`
//! (see `.ci/loom.sh`). Under `--cfg loom` the crate's wake state (ready words,
//! `parked` flag, consumer waker) uses loom's atomics, so loom explores every
//! interleaving of those operations with the gates below, up to the preemption
//! bound.
//!
//! Each model has one consumer (the model's main thread) that polls the stream by
//! hand and, on `Pending`, blocks on a `Notify` that only the consumer's waker
//! signals (`model::drain`). If a wake were lost, every thread would end up blocked and loom would
//! report a deadlock, so "the stream finishes" is the no-lost-wake assertion. The
//! consumer hands a fresh waker to every poll, so re-registering the consumer's
//! waker races the wakes too.
#![cfg(loom)]

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bounded_buffered::BoundedStreamExt;
use futures::stream::{self, StreamExt};
use loom::sync::Mutex;
use loom::thread;

mod model;

use model::{drain, model};

/// A future that completes with its id once it has been opened `needed` times,
/// counting its polls. Opening wakes the waker it stored, outside the lock, as a
/// timer or channel would.
struct Gate {
    id: usize,
    state: Mutex<GateState>,
}

struct GateState {
    remaining: usize,
    /// Polls that wake their own waker and return `Pending` before the gate is
    /// looked at: a yield, taken through the crate's thread-local path.
    yields: usize,
    waker: Option<Waker>,
    polls: usize,
    polls_while_closed: usize,
}

impl Gate {
    fn new(id: usize, needed: usize) -> Arc<Self> {
        Arc::new(Self {
            id,
            state: Mutex::new(GateState {
                remaining: needed,
                yields: 0,
                waker: None,
                polls: 0,
                polls_while_closed: 0,
            }),
        })
    }

    /// Counts one opening and wakes the stored waker, if any. Returns that waker,
    /// so a test can wake it again later (a stale, duplicated wake).
    fn open(&self) -> Option<Waker> {
        let waker = {
            let mut state = self.state.lock().unwrap();
            state.remaining -= 1;
            state.waker.clone()
        };
        if let Some(waker) = &waker {
            waker.wake_by_ref();
        }
        waker
    }

    fn yielding(self: Arc<Self>, yields: usize) -> Arc<Self> {
        self.state.lock().unwrap().yields = yields;
        self
    }

    fn polls(&self) -> (usize, usize) {
        let state = self.state.lock().unwrap();
        (state.polls, state.polls_while_closed)
    }

    fn future(self: &Arc<Self>) -> GateFuture {
        GateFuture(Arc::clone(self))
    }
}

struct GateFuture(Arc<Gate>);

impl Future for GateFuture {
    type Output = usize;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        let gate = &self.0;
        let mut state = gate.state.lock().unwrap();
        state.polls += 1;
        if state.yields > 0 {
            state.yields -= 1;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if state.remaining == 0 {
            return Poll::Ready(gate.id);
        }
        state.polls_while_closed += 1;
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Contract point 25: a raise of `workers` from another thread, racing the
/// consumer's park, is not lost. Item 1 can start only on the raise (one
/// worker, busy with item 0), and item 0 opens only once item 1 is out: if the
/// control signal were lost, the model would deadlock.
#[test]
fn a_raise_from_another_thread_racing_the_park_is_not_lost() {
    model("raise", || {
        let gates = [Gate::new(0, 1), Gate::new(1, 0)];
        let stream = stream::iter(gates.iter().map(Gate::future).collect::<Vec<_>>()).bounded(1, 0);
        let limits = stream.limits();
        let raiser = thread::spawn(move || limits.set_workers(2));
        let head = Arc::clone(&gates[0]);
        let out = drain(stream, |&id| {
            if id == 1 {
                head.open();
            }
        });
        raiser.join().unwrap();
        assert_eq!(out, [1, 0]);
    });
}

/// Two futures in two slots, opened from two threads while the consumer polls,
/// parks and re-registers: both outputs arrive, each future is polled once while
/// closed and at most once more (a slot is not queued twice for one wake).
#[test]
fn wakes_of_different_slots_from_two_threads_are_not_lost() {
    model("different slots", || {
        let gates = [Gate::new(0, 1), Gate::new(1, 1)];
        let stream = stream::iter(gates.iter().map(Gate::future).collect::<Vec<_>>()).bounded(2, 0);
        let openers: Vec<_> = gates
            .iter()
            .map(|gate| {
                let gate = Arc::clone(gate);
                thread::spawn(move || drop(gate.open()))
            })
            .collect();
        let mut out = drain(stream, |_| {});
        for opener in openers {
            opener.join().unwrap();
        }
        out.sort_unstable();
        assert_eq!(out, [0, 1]);
        for gate in &gates {
            let (polls, polls_while_closed) = gate.polls();
            assert!(
                polls <= 2,
                "gate {} polled {polls} times for one wake",
                gate.id
            );
            assert!(
                polls_while_closed <= 1,
                "gate {} polled again without a wake",
                gate.id
            );
        }
    });
}

/// One future woken from two threads at once (same slot, racing wakes), then a
/// second future reusing that slot and opened by the consumer after the first
/// output: both outputs arrive in order, and the repolls never exceed the wakes.
#[test]
fn concurrent_wakes_of_one_slot_and_its_reuse_are_not_lost() {
    model("same slot", || {
        let first = Gate::new(0, 2);
        let second = Gate::new(1, 1);
        let stream = stream::iter([first.future(), second.future()]).bounded(1, 1);
        let openers: Vec<_> = (0..2)
            .map(|_| {
                let first = Arc::clone(&first);
                thread::spawn(move || drop(first.open()))
            })
            .collect();
        let out = drain(stream, |&id| {
            if id == 0 {
                drop(second.open());
            }
        });
        for opener in openers {
            opener.join().unwrap();
        }
        assert_eq!(out, [0, 1]);
        let (first_polls, _) = first.polls();
        // One first poll, then at most one per wake (two openings).
        assert!(
            first_polls <= 3,
            "first future polled {first_polls} times for two wakes"
        );
        // The second future can be polled again by a late wake of the first one,
        // which used the same slot, and by its own wake: never more.
        let (second_polls, _) = second.polls();
        assert!(
            second_polls <= 3,
            "second future polled {second_polls} times"
        );
    });
}

/// A wake racing the slot's completion and reuse: the opener of the first future
/// wakes it once more after it may have completed, when its slot may already run
/// the second future. The stale wake may cost the second future a poll, but it
/// must neither lose the second future's own wake nor produce a wrong output.
#[test]
fn stale_wake_racing_slot_reuse_gives_right_outputs() {
    model("stale wake and reuse", || {
        let first = Gate::new(0, 1);
        let second = Gate::new(1, 1);
        let stream = stream::iter([first.future(), second.future()]).bounded(1, 0);
        let stale = {
            let first = Arc::clone(&first);
            thread::spawn(move || {
                if let Some(waker) = first.open() {
                    waker.wake();
                }
            })
        };
        let opener = {
            let second = Arc::clone(&second);
            thread::spawn(move || drop(second.open()))
        };
        let out = drain(stream, |_| {});
        stale.join().unwrap();
        opener.join().unwrap();
        assert_eq!(out, [0, 1]);
    });
}

/// Ordered mode with a window wider than one: the second future finishes first
/// and is held while the first is woken from another thread; the third reuses a
/// freed slot. Outputs come in input order and nothing is lost.
#[test]
fn ordered_wakes_out_of_order_are_not_lost() {
    model("ordered", || {
        let gates = [Gate::new(0, 1), Gate::new(1, 1), Gate::new(2, 1)];
        let stream = stream::iter(gates.iter().map(Gate::future).collect::<Vec<_>>())
            .bounded(2, 0)
            .ordered(2);
        let late = {
            let first = Arc::clone(&gates[0]);
            thread::spawn(move || drop(first.open()))
        };
        let early = {
            let (second, third) = (Arc::clone(&gates[1]), Arc::clone(&gates[2]));
            thread::spawn(move || {
                drop(second.open());
                drop(third.open());
            })
        };
        let out = drain(stream, |_| {});
        late.join().unwrap();
        early.join().unwrap();
        assert_eq!(out, [0, 1, 2]);
    });
}

/// The harness itself, without the adapter: the consumer's future is polled
/// directly, so a failure here is a fault of the harness, not of the crate.
#[test]
fn harness_finishes_without_the_adapter() {
    model("harness control", || {
        let gate = Gate::new(0, 1);
        let stream = stream::iter([gate.future()]).then(|future| future);
        let opener = {
            let gate = Arc::clone(&gate);
            thread::spawn(move || drop(gate.open()))
        };
        let out = drain(Box::pin(stream), |_| {});
        opener.join().unwrap();
        assert_eq!(out, [0]);
    });
}

/// A future that wakes itself during its poll (the crate's thread-local path,
/// which skips the ready words) while another thread wakes it through the ready
/// words: neither wake is lost, and the second future, in the same slot after
/// it, still gets its own wake.
#[test]
fn self_wake_racing_a_wake_from_another_thread_is_not_lost() {
    model("self wake", || {
        let first = Gate::new(0, 1).yielding(2);
        let second = Gate::new(1, 1);
        let stream = stream::iter([first.future(), second.future()]).bounded(1, 0);
        let openers: Vec<_> = [&first, &second]
            .into_iter()
            .map(|gate| {
                let gate = Arc::clone(gate);
                thread::spawn(move || drop(gate.open()))
            })
            .collect();
        let out = drain(stream, |_| {});
        for opener in openers {
            opener.join().unwrap();
        }
        assert_eq!(out, [0, 1]);
    });
}

/// Expiry at pickup while the consumer is parked, in place: item 0 runs,
/// item 1 waits; another thread moves the clock past `max_wait`, then opens
/// item 0's gate, which wakes the parked consumer. Its poll completes item 0
/// and picks item 1 up: if pulled before the clock moved, it comes back
/// expired (having waited exactly as long as the clock moved), never started.
#[test]
fn an_item_expiring_at_the_front_while_the_consumer_parks_comes_back() {
    model("in place: expiry at pickup, consumer parked", || {
        let start = std::time::Instant::now();
        let millis = Arc::new(loom::sync::atomic::AtomicU64::new(0));
        let gate = Gate::new(0, 1);
        let items = {
            let gate = Arc::clone(&gate);
            stream::iter(0..2usize).map(move |id| {
                let gate = (id == 0).then(|| Arc::clone(&gate));
                async move {
                    if let Some(gate) = gate {
                        GateFuture(gate).await;
                    }
                    id
                }
            })
        };
        let reading = Arc::clone(&millis);
        let stream = items
            .bounded(1, 1)
            .max_wait(std::time::Duration::from_millis(5))
            .clock(move || {
                let now = reading.load(std::sync::atomic::Ordering::SeqCst);
                start + std::time::Duration::from_millis(now)
            });
        let mover = {
            let (millis, gate) = (Arc::clone(&millis), Arc::clone(&gate));
            thread::spawn(move || {
                millis.fetch_add(10, std::sync::atomic::Ordering::SeqCst);
                gate.open();
            })
        };
        let out = drain(stream, |_| {});
        mover.join().unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].as_ref().ok(), Some(&0));
        // Pulled after the clock moved (the other thread ran first), item 1
        // waited no time and ran.
        match &out[1] {
            Ok(id) => assert_eq!(*id, 1),
            Err(expired) => assert_eq!(expired.waited(), std::time::Duration::from_millis(10)),
        }
    });
}
