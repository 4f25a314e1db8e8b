//! A simulated service and the job the adaptive-limits example and benchmark
//! run against it, on tokio's paused clock, so every figure is exact and
//! repeatable.
//!
//! The service has a capacity C shared by every caller: a request takes 10 ms
//! while at most C are in service; beyond C, requests queue first come, first
//! served, inside the service; beyond 2C in flight, it answers "overloaded"
//! after 1 ms. The job sends requests from an endless source until 5,000
//! succeed; an "overloaded" answer is wasted work that a later request repeats.
//! C is 32 for the first 2,500 successes, then 16.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use bounded_buffered::{Aimd, BoundedStreamExt, Decision, Limits};
use futures::{Stream, StreamExt, stream};
use tokio::sync::Semaphore;
use tokio::time::Instant;

pub const SERVICE_TIME: Duration = Duration::from_millis(10);
pub const REFUSAL_TIME: Duration = Duration::from_millis(1);
pub const SUCCESSES: usize = 5_000;
pub const CAPACITY: usize = 32;
pub const LOWER_CAPACITY: usize = 16;
/// Latency targets leave out the first 200 ms: the initial ramp.
pub const RAMP: Duration = Duration::from_millis(200);

/// The shared service.
#[derive(Clone)]
pub struct Service(Arc<Inner>);

struct Inner {
    /// One permit per request in service; waiters are served in arrival order.
    in_service: Semaphore,
    /// Requests in service or queued.
    in_flight: AtomicUsize,
    capacity: AtomicUsize,
    /// Permits to take out of circulation as requests finish, after a drop of
    /// capacity found them in use.
    owed: AtomicUsize,
}

/// What a request got, and when: `started` from the job's start.
#[derive(Clone, Copy, Debug)]
pub enum Reply {
    Done {
        started: Duration,
        latency: Duration,
    },
    Overloaded,
}

impl Service {
    pub fn new(capacity: usize) -> Self {
        Self(Arc::new(Inner {
            in_service: Semaphore::new(capacity),
            in_flight: AtomicUsize::new(0),
            capacity: AtomicUsize::new(capacity),
            owed: AtomicUsize::new(0),
        }))
    }

    /// Lowers the capacity: requests in service finish, no new one starts
    /// until fewer than `capacity` are in service.
    pub fn lower_capacity(&self, capacity: usize) {
        let inner = &self.0;
        let cut = inner.capacity.swap(capacity, SeqCst) - capacity;
        let forgotten = inner.in_service.forget_permits(cut);
        inner.owed.fetch_add(cut - forgotten, SeqCst);
    }

    pub async fn call(self, epoch: Instant) -> Reply {
        let inner = &self.0;
        let started = Instant::now();
        let capacity = inner.capacity.load(SeqCst);
        if inner.in_flight.load(SeqCst) >= 2 * capacity {
            tokio::time::sleep(REFUSAL_TIME).await;
            return Reply::Overloaded;
        }
        inner.in_flight.fetch_add(1, SeqCst);
        let permit = inner.in_service.acquire().await.expect("never closed");
        tokio::time::sleep(SERVICE_TIME).await;
        let owed = inner.owed.load(SeqCst);
        if owed > 0
            && inner
                .owed
                .compare_exchange(owed, owed - 1, SeqCst, SeqCst)
                .is_ok()
        {
            permit.forget();
        } else {
            drop(permit);
        }
        inner.in_flight.fetch_sub(1, SeqCst);
        Reply::Done {
            started: started - epoch,
            latency: started.elapsed(),
        }
    }
}

/// How the job limits its requests in flight.
#[derive(Clone, Copy, Debug)]
pub enum Policy {
    Static(usize),
    /// `Aimd::new(1, 256)`: it starts from four workers.
    Adaptive,
    /// The same, with the workers as tasks (`spawn_on`).
    AdaptiveSpawned,
}

impl Policy {
    pub fn name(self) -> String {
        match self {
            Policy::Static(limit) => format!("static {limit}"),
            Policy::Adaptive => "adaptive (AIMD)".to_string(),
            Policy::AdaptiveSpawned => "adaptive, spawned".to_string(),
        }
    }
}

/// What one job measured, in virtual time.
#[derive(Debug)]
pub struct Report {
    pub policy: Policy,
    pub elapsed: Duration,
    pub overloaded: usize,
    /// Every success: when it started, how long it took.
    pub successes: Vec<(Duration, Duration)>,
    /// When the capacity dropped.
    pub dropped_at: Duration,
    /// The limit over time: (when, limit), one point per change.
    pub limits: Vec<(Duration, usize)>,
    /// The controller's rounds (adaptive only).
    pub rounds: Vec<Decision>,
}

impl Report {
    /// Successes per second.
    pub fn goodput(&self) -> f64 {
        self.successes.len() as f64 / self.elapsed.as_secs_f64()
    }

    /// The `q` quantile of the successes' latency, of those that started at or
    /// after `from`.
    pub fn latency(&self, q: f64, from: Duration) -> Duration {
        let mut latencies: Vec<Duration> = self
            .successes
            .iter()
            .filter(|(started, _)| *started >= from)
            .map(|&(_, latency)| latency)
            .collect();
        latencies.sort_unstable();
        let rank = ((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len());
        latencies[rank - 1]
    }

    /// How long after the capacity drop the limit entered `low..=high` for
    /// good (`None`: it was out of it at the end), and the lowest and highest
    /// limit from then on.
    pub fn settled(&self, low: usize, high: usize) -> Option<(Duration, usize, usize)> {
        let within = |limit: usize| (low..=high).contains(&limit);
        let at_drop = self
            .limits
            .iter()
            .take_while(|(at, _)| *at <= self.dropped_at)
            .last()
            .map(|&(_, limit)| limit)?;
        let after: Vec<_> = self
            .limits
            .iter()
            .filter(|(at, _)| *at > self.dropped_at)
            .collect();
        let settled_at = match after.iter().rposition(|&&(_, limit)| !within(limit)) {
            Some(last) => after.get(last + 1)?.0,
            None if within(at_drop) => self.dropped_at,
            None => after.first()?.0,
        };
        let from = self.limits.iter().filter(|(at, _)| *at >= settled_at);
        let (lowest, highest) = from.fold((usize::MAX, 0), |(lowest, highest), &(_, limit)| {
            (lowest.min(limit), highest.max(limit))
        });
        Some((settled_at - self.dropped_at, lowest, highest))
    }
}

/// Runs the job under `policy` on a fresh paused-clock runtime.
pub fn run(policy: Policy) -> Report {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let service = Service::new(CAPACITY);
        let epoch = Instant::now();
        let source = {
            let service = service.clone();
            stream::repeat(()).map(move |()| service.clone().call(epoch))
        };
        let clock = || tokio::time::Instant::now().into_std();
        match policy {
            Policy::Static(limit) => {
                let replies = source.bounded(limit, 0).clock(clock);
                let limits = replies.limits();
                drive(replies, limits, service, epoch, policy, Vec::new).await
            }
            Policy::Adaptive | Policy::AdaptiveSpawned => {
                let aimd = Aimd::new(1, 256).with_history(100_000);
                let history = aimd.history().expect("recorded");
                let replies = source
                    .bounded(1, 0)
                    .adaptive(aimd, |reply: &Reply| matches!(reply, Reply::Overloaded))
                    .clock(clock);
                let limits = replies.limits();
                let rounds = move || history.rounds();
                if matches!(policy, Policy::Adaptive) {
                    drive(replies, limits, service, epoch, policy, rounds).await
                } else {
                    // The worker tasks run on this same paused-clock runtime.
                    let replies = replies.spawn_on(tokio::runtime::Handle::current());
                    drive(replies, limits, service, epoch, policy, rounds).await
                }
            }
        }
    })
}

async fn drive<St: Stream<Item = Reply> + Unpin>(
    mut replies: St,
    limits: Limits,
    service: Service,
    epoch: Instant,
    policy: Policy,
    rounds: impl FnOnce() -> Vec<Decision>,
) -> Report {
    let mut report = Report {
        policy,
        elapsed: Duration::ZERO,
        overloaded: 0,
        successes: Vec::with_capacity(SUCCESSES),
        dropped_at: Duration::ZERO,
        limits: vec![(Duration::ZERO, limits.workers())],
        rounds: Vec::new(),
    };
    while report.successes.len() < SUCCESSES {
        match replies.next().await.expect("the source is endless") {
            Reply::Done { started, latency } => {
                report.successes.push((started, latency));
                if report.successes.len() == SUCCESSES / 2 {
                    service.lower_capacity(LOWER_CAPACITY);
                    report.dropped_at = epoch.elapsed();
                }
            }
            Reply::Overloaded => report.overloaded += 1,
        }
        let limit = limits.workers();
        if report.limits.last().is_some_and(|&(_, last)| last != limit) {
            report.limits.push((epoch.elapsed(), limit));
        }
    }
    report.elapsed = epoch.elapsed();
    report.rounds = rounds();
    report
}
