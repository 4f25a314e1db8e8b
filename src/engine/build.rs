//! The builder methods' part in the engine: each makes the same engine with
//! another clocking, other rules or other budgets, before the first poll.
//! The checks a caller's mistake can fail are made by the callers, at the
//! caller's line (`#[track_caller]` all the way, never inside a closure).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use futures_core::Stream;

use super::Engine;
use super::life::Life;
use super::spec::{Of, Types};
use crate::adaptive::{Adjust, Classify, Controller};
use crate::admission::{
    Admission, Admits, KeyRule, Unkeyed, Unweighted, WeightOf, WeightRule, Weights,
};
use crate::budget::Budgets;
use crate::clock::{Clocked, Clocking, Untimed};
use crate::failure::Policy;
use crate::held::Held;
use crate::observe::Metrics;
use crate::shed::Shed;
use crate::stats::Stats;
use crate::time::Now;

/// An engine with these key and weight rules.
type Admitted<S, P, K, N, Q, W> = Engine<Of<S, P, K, N, Admission<Q, W>>>;

/// The admission of a stream without keys or weights.
pub(crate) type Plain = Admission<Unkeyed, Unweighted>;

impl<S: Stream, P: Policy<S>> Engine<Of<S, P, Untimed, Infallible, Plain>> {
    /// The engine of a stream just made by `bounded` or `try_bounded`.
    ///
    /// # Panics
    ///
    /// If `workers` is 0 (contract point 11).
    #[track_caller]
    pub(crate) fn new(workers: usize, waiting: usize) -> Self {
        assert!(
            workers > 0,
            "`bounded` needs at least one worker: with `workers == 0` no future could ever run"
        );
        Engine::made(
            Budgets::new(workers, waiting),
            Life::new(),
            Untimed,
            Plain::default(),
            Shed::default(),
        )
    }
}

impl<R: Types> Engine<R> {
    /// See `BoundedBuffered::metrics`: registers the exporter, and publishes
    /// the stream as it is. The limits' series go to the handles' settings,
    /// made now if need be with the driver's `signal`: a limit changes there.
    #[cfg(feature = "metrics")]
    pub(crate) fn metrics(
        mut self,
        labels: Vec<metrics::Label>,
        signal: impl FnOnce() -> crate::limits::Signal,
    ) -> Self {
        self.metrics = Metrics::new(
            labels,
            &mut self.clock,
            <R::Admission as Admits<R::Job>>::RULES,
        );
        drop(self.limits(signal));
        if let (Some(settings), Some(series)) = (self.limits.get(), self.metrics.limit_series()) {
            settings.attach(series);
        }
        self.publish_now();
        self
    }

    /// Panics, at the caller's line, unless the stream was never polled, and
    /// (`metrics`) unless the recorder `.metrics` registered with is still
    /// the current one, for what `method` registers.
    #[track_caller]
    pub(crate) fn assert_new(&self, method: &str) {
        assert!(
            self.life.is_new(),
            "`{method}` must be called before the stream is first polled"
        );
        self.metrics.check_recorder(method);
    }

    /// See `BoundedBuffered::burst`; `false` if the stream has no rate.
    pub(crate) fn set_burst(&mut self, burst: u32) -> bool {
        self.clock
            .time_mut()
            .is_some_and(|time| time.set_burst(burst))
    }

    /// Whether the stream has a start rate.
    pub(crate) fn has_rate(&self) -> bool {
        self.clock.time().is_some_and(crate::time::Time::has_rate)
    }

    /// Whether the stream's clock is the caller's own (`clock`).
    pub(crate) fn has_own_clock(&self) -> bool {
        self.clock.has_own_clock()
    }

    /// See `BoundedBuffered::ordered`.
    ///
    /// # Panics
    ///
    /// If `window` is 0, or the stream was polled (contract point 11).
    #[track_caller]
    pub(crate) fn ordered(mut self, window: usize) -> Self {
        assert!(
            window > 0,
            "`ordered` needs a window of at least one item: with `window == 0` no item could ever start"
        );
        self.assert_new("ordered");
        self.budgets = self.budgets.ordered(window);
        self.held = Held::ordered();
        self
    }
}

impl<S, P, K, N, A> Engine<Of<S, P, K, N, A>>
where
    S: Stream,
    P: Policy<S>,
    K: Clocking,
    A: Admits<P::Job>,
{
    fn made(budgets: Budgets, life: Life, clock: K, admission: A, shed: Shed) -> Self {
        Self {
            budgets,
            life,
            waiting: VecDeque::new(),
            seats: VecDeque::new(),
            active: 0,
            held: if budgets.window.is_some() {
                Held::ordered()
            } else {
                Held::unordered()
            },
            held_expired: 0,
            held_rejected: 0,
            admission,
            shed,
            failure: None,
            clock,
            limits: OnceLock::new(),
            adaptive: Adjust::none(),
            stats: Stats::default(),
            metrics: Metrics::default(),
            ready: false,
            shedding: false,
            item_deadline: None,
        }
    }

    /// The same engine with another clocking, other rules of admission, or
    /// another shedding, and what comes back for an item not run: everything
    /// set so far carries over. The caller checked that it was never polled.
    pub(crate) fn rebuild<K2: Clocking, N2, A2: Admits<P::Job>>(
        self,
        clock: impl FnOnce(K) -> K2,
        admission: impl FnOnce(A) -> A2,
        shed: Shed,
    ) -> Engine<Of<S, P, K2, N2, A2>> {
        let mut rebuilt = Engine::made(
            self.budgets,
            self.life,
            clock(self.clock),
            admission(self.admission),
            shed,
        );
        rebuilt.limits = self.limits;
        rebuilt.adaptive = self.adaptive;
        rebuilt.shedding = self.shedding;
        rebuilt.item_deadline = self.item_deadline;
        rebuilt.metrics = self.metrics;
        rebuilt.metrics.adopt(&mut rebuilt.clock, A2::RULES);
        rebuilt
    }

    /// The same engine with another clocking.
    pub(crate) fn reclock<K2: Clocking, N2>(
        self,
        clock: impl FnOnce(K) -> K2,
    ) -> Engine<Of<S, P, K2, N2, A>> {
        let shed = self.shed;
        self.rebuild(clock, |admission| admission, shed)
    }

    /// See `BoundedBuffered::max_wait`.
    pub(crate) fn max_wait<N2>(self, limit: Duration) -> Engine<Of<S, P, Clocked, N2, A>> {
        self.reclock(|clock| clock.into_clocked().with_max_wait(limit))
    }

    /// See `BoundedBuffered::timed`.
    pub(crate) fn timed(self) -> Engine<Of<S, P, Clocked, N, A>> {
        self.reclock(|clock| clock.into_clocked().with_timings())
    }

    /// See `BoundedBuffered::clock`.
    pub(crate) fn clock(
        self,
        now: impl Fn() -> Instant + Send + Sync + 'static,
    ) -> Engine<Of<S, P, Clocked, N, A>> {
        self.reclock(|clock| clock.into_clocked().with_clock(now))
    }

    /// See `BoundedBuffered::timer`: the timer's clock is the stream's.
    pub(crate) fn timer(self, now: Now) -> Engine<Of<S, P, Clocked, N, A>> {
        self.reclock(|clock| clock.into_clocked().with_timer_clock(now))
    }

    /// See `BoundedBuffered::deadline`.
    pub(crate) fn deadline<N2>(self, at: Instant) -> Engine<Of<S, P, Clocked, N2, A>> {
        self.reclock(|clock| {
            let mut clock = clock.into_clocked();
            clock.time_budgets().set_deadline(at);
            clock
        })
    }

    /// See `BoundedBuffered::item_deadlines`: `deadline_of` reads an item's.
    pub(crate) fn item_deadlines<N2>(
        self,
        deadline_of: fn(&P::Job) -> Instant,
    ) -> Engine<Of<S, P, Clocked, N2, A>> {
        let mut engine = self.reclock(|clock| {
            let mut clock = clock.into_clocked();
            clock.time_budgets();
            clock
        });
        engine.item_deadline = Some(deadline_of);
        engine
    }

    /// See `BoundedBuffered::rate`: the handles taken already can change it.
    pub(crate) fn rate(self, n: u32, per: Duration) -> Engine<Of<S, P, Clocked, N, A>> {
        if let Some(settings) = self.limits.get() {
            settings.set_initial_rate((n, per));
        }
        self.reclock(|clock| {
            let mut clock = clock.into_clocked();
            clock.time_budgets().set_rate(n, per);
            clock
        })
    }

    /// See `BoundedBuffered::shed`.
    pub(crate) fn shed<N2>(self, shed: Shed) -> Engine<Of<S, P, K, N2, A>> {
        let mut engine = self.rebuild(|clock| clock, |admission| admission, shed);
        engine.shedding = true;
        engine
    }

    /// The same engine with other rules of admission (`per_key`, weights).
    pub(crate) fn readmit<A2: Admits<P::Job>>(
        self,
        admission: impl FnOnce(A) -> A2,
    ) -> Engine<Of<S, P, K, N, A2>> {
        let shed = self.shed;
        self.rebuild(|clock| clock, admission, shed)
    }

    /// See `BoundedBuffered::adaptive`: the controller's initial limit
    /// replaces `workers`.
    pub(crate) fn adaptive<C, F>(
        self,
        controller: C,
        classify: F,
    ) -> Engine<Of<S, P, Clocked, N, A>>
    where
        C: Controller,
        F: Classify<<P::Future as Future>::Output>,
    {
        let mut engine = self.reclock(|clock| clock.into_clocked().with_run_times());
        engine.adaptive = Adjust::new(controller, classify);
        if let Some(initial) = engine.adaptive.initial() {
            engine.budgets = engine.budgets.starting_with(initial);
            if let Some(settings) = engine.limits.get() {
                settings.set_initial_workers(initial);
            }
        }
        engine
    }
}

impl<S, P, K, N, Q, W> Engine<Of<S, P, K, N, Admission<Q, W>>>
where
    S: Stream,
    P: Policy<S>,
    K: Clocking,
    Q: KeyRule<P::Job>,
    W: WeightRule<P::Job>,
{
    /// See `per_key`: these keys' rule, the weights as they were.
    pub(crate) fn key<Q2: KeyRule<P::Job>>(self, keys: Q2) -> Admitted<S, P, K, N, Q2, W> {
        self.readmit(|admission| Admission {
            keys,
            weights: admission.weights,
        })
    }

    /// See the weight budgets: `budget` sets one, the keys as they were.
    pub(crate) fn weigh(
        self,
        budget: impl FnOnce(Weights) -> Weights,
    ) -> Admitted<S, P, K, N, Q, Weights>
    where
        P::Job: WeightOf,
    {
        self.readmit(|admission| Admission {
            keys: admission.keys,
            weights: budget(admission.weights.into_weights()),
        })
    }
}
