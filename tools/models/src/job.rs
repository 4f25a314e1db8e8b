//! The job each run does against a model, under the limiter it is run with:
//! the rule, or the oracle that every target is judged against.

use std::time::Duration;

use bounded_buffered::{Aimd, BoundedStreamExt, Decision, History, Limits};
use futures::{Stream, StreamExt, stream};
use tokio::time::Instant;

use crate::models::{CHANGE_AT, Change, Discipline, Model, Reply, Rng, SUCCESSES, Service, Source};
use crate::oracle::{Oracle, Shared};

/// How the job is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    InPlace,
    /// `.spawn_on(handle)`: the workers are tasks on the same paused-clock
    /// runtime.
    Spawned,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::InPlace => "in place",
            Mode::Spawned => "spawned",
        }
    }
}

/// What sets the `workers` limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limiter {
    /// `Aimd::new(1, 256)` with its defaults.
    Aimd,
    /// The oracle (`oracle.rs`): a controller told the capacity and the
    /// moment of a change, and nothing else.
    Oracle,
}

impl Limiter {
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Aimd => "Aimd::new(1, 256), defaults",
            Limiter::Oracle => {
                "the oracle: from 4, one more with each success up to the capacity (at most a slow \
                 source's bound); a change heard of when the first item started at or after it \
                 completes"
            }
        }
    }
}

/// What one job measured, in virtual time.
#[derive(Debug)]
pub struct Run {
    /// Calls sent (successes and refusals).
    pub calls: usize,
    pub overloaded: usize,
    /// Of those, refused whatever the load: when each was sent and the
    /// service time it held (zero at the door).
    pub base_refused: Vec<(Duration, Duration)>,
    /// Every success: when it started, its latency, its own service time.
    pub successes: Vec<(Duration, Duration, Duration)>,
    /// When the 2,500th success came (and the change, if any, happened).
    pub changed_at: Duration,
    /// When the 5,000th success came.
    pub elapsed: Duration,
    /// How long a slow source alone takes to produce 5,000 items: the job
    /// cannot end sooner.
    pub last_arrival: Option<Duration>,
    /// The limit over time: (when, limit), from the controller's decisions.
    pub limits: Vec<(Duration, usize)>,
    /// The controller's decisions (the oracle makes none but the limit).
    pub decisions: Vec<Decision>,
}

/// Runs one job: `model` with `discipline`, seeded with `seed`, under
/// `limiter`, in `mode`.
// The slow source's items are the requests: an async block that yields one,
// on purpose.
#[allow(clippy::async_yields_async)]
pub fn run(model: &Model, discipline: Discipline, seed: u64, mode: Mode, limiter: Limiter) -> Run {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        // Independent streams for the service times and the arrivals.
        let service = Service::new(
            model,
            discipline,
            Rng::new(seed.wrapping_mul(2) + 1),
            // Far from the others' seeds: refusals of their own.
            Rng::new(!seed),
            // And the speed's, where it drifts.
            Rng::new(seed.rotate_left(32) ^ 0x5EED),
        );
        let mut arrivals = Rng::new(seed.wrapping_mul(2) + 2);
        let epoch = Instant::now();
        let (source, last_arrival) = match model.source {
            Source::Endless => {
                let service = service.clone();
                let source = stream::repeat(()).map(move |()| service.clone().call(epoch));
                (source.boxed(), None)
            }
            Source::Poisson(rate) => {
                // Each item takes its gap to produce once the stream asks for
                // it: the source alone would yield 5,000 items in `last`. The
                // gaps are whole milliseconds (the resolution of tokio's
                // timer), geometrically distributed: the discrete memoryless
                // distribution.
                let mean_gap = 1e3 / rate;
                let gaps: Vec<Duration> = (0..SUCCESSES * 2)
                    .map(|_| Duration::from_millis(arrivals.geometric(mean_gap)))
                    .collect();
                let last = gaps[..SUCCESSES].iter().sum();
                let service = service.clone();
                let source = stream::iter(gaps).then(move |gap| {
                    let service = service.clone();
                    async move {
                        tokio::time::sleep(gap).await;
                        service.call(epoch)
                    }
                });
                (source.boxed(), Some(last))
            }
        };
        let classify = |reply: &Reply| matches!(reply, Reply::Overloaded { .. });
        let (replies, recorded) = match limiter {
            Limiter::Aimd => {
                let aimd = Aimd::new(1, 256).with_history(1 << 20);
                let history = aimd.history().expect("recorded");
                (
                    source.bounded(1, 0).adaptive(aimd, classify),
                    Recorded::Aimd(history),
                )
            }
            Limiter::Oracle => {
                let shared = Shared::default();
                let oracle = Oracle::new(model, shared.clone());
                (
                    source.bounded(1, 0).adaptive(oracle, classify),
                    Recorded::Oracle(shared),
                )
            }
        };
        let replies = replies.clock(|| tokio::time::Instant::now().into_std());
        let limits = replies.limits();
        let job = Job {
            service,
            change: model.change,
            epoch,
            last_arrival,
        };
        match mode {
            Mode::InPlace => job.drive(replies, limits, recorded).await,
            Mode::Spawned => {
                let replies = replies.spawn_on(tokio::runtime::Handle::current());
                job.drive(replies, limits, recorded).await
            }
        }
    })
}

struct Job {
    service: Service,
    change: Change,
    epoch: Instant,
    last_arrival: Option<Duration>,
}

/// Where the limit over time is recorded.
enum Recorded {
    Aimd(History),
    Oracle(Shared),
}

impl Job {
    async fn drive<St: Stream<Item = Reply> + Unpin>(
        self,
        mut replies: St,
        limits: Limits,
        recorded: Recorded,
    ) -> Run {
        let mut run = Run {
            calls: 0,
            overloaded: 0,
            base_refused: Vec::new(),
            successes: Vec::with_capacity(SUCCESSES),
            changed_at: Duration::ZERO,
            elapsed: Duration::ZERO,
            last_arrival: self.last_arrival,
            limits: vec![(Duration::ZERO, limits.workers())],
            decisions: Vec::new(),
        };
        while run.successes.len() < SUCCESSES {
            let reply = replies.next().await.expect("the source outlasts the job");
            run.calls += 1;
            match reply {
                Reply::Done {
                    started,
                    latency,
                    service,
                } => {
                    run.successes.push((started, latency, service));
                    if run.successes.len() == CHANGE_AT {
                        self.service.apply(self.change);
                        run.changed_at = self.epoch.elapsed();
                        if let Recorded::Oracle(shared) = &recorded {
                            shared.changed(run.changed_at);
                        }
                    }
                }
                Reply::Overloaded { base } => {
                    run.overloaded += 1;
                    run.base_refused.extend(base);
                }
            }
        }
        run.elapsed = self.epoch.elapsed();
        // The stream's clock starts at its first reading, when its first
        // item starts: the job's start with an endless source, the first gap
        // later with a slow one (whose decisions are that much early against
        // the job's times; no slow-source model has a change).
        match recorded {
            Recorded::Aimd(history) => {
                run.decisions = history.rounds();
                run.limits.extend(
                    run.decisions
                        .iter()
                        .map(|decision: &Decision| (decision.at, decision.limit)),
                );
            }
            Recorded::Oracle(shared) => run.limits = shared.limits(),
        }
        run
    }
}
