//! Two tenants on one stream, with and without `per_key`:
//! `cargo run --release -p admission --bin tenants`.
//!
//! Tenant A has 10,000 jobs queued in the source at the start; tenant B's 100
//! jobs arrive later, one every 5 ms from t = 1 s. Every job sleeps 2 to 5 ms
//! of virtual time (seeded). The stream is `bounded(8, 64)`, plain or with
//! `.per_key(6)` (each job is `Keyed::new(tenant, ..)`), in place and spawned.
//! Reported: B's latency, from its arrival in the source to its output, B's
//! wait (its arrival to its start), and when A's last job came out.
//!
//! Two sources, because `per_key` can only choose among the items it has
//! pulled (the waiting queue, 64 here):
//!
//! - **merged**: each tenant feeds its own queue and the stream's source
//!   merges them (`stream::select`, round robin). A B job that arrives is
//!   pulled at the next free waiting place, so it is within the look-ahead.
//! - **one queue**: both tenants send into one FIFO channel; B's jobs arrive
//!   behind A's backlog, beyond the look-ahead, and are not seen until A's
//!   jobs ahead of them are pulled. `per_key` cannot help there.

use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use admission::{Checks, Mode, Percentiles, Table, draw, generator, ms, now, paused_runtime};
use bounded_buffered::{BoundedStreamExt, Keyed, Stats};
use futures::{Stream, StreamExt, stream};

const WORKERS: usize = 8;
const WAITING: usize = 64;
const PER_KEY: usize = 6;
const A_JOBS: usize = 10_000;
const B_JOBS: usize = 100;
const B_FIRST: Duration = Duration::from_secs(1);
const B_EVERY: Duration = Duration::from_millis(5);
const WORK_MIN: Duration = Duration::from_millis(2);
const WORK_MAX: Duration = Duration::from_millis(5);

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
enum Tenant {
    A,
    B,
}

/// What a job returns: whose it was, when it arrived in the source, and when
/// it started (its first poll).
struct Done {
    tenant: Tenant,
    arrived: Instant,
    started: Instant,
}

fn job(
    tenant: Tenant,
    arrived: Instant,
    work: Duration,
) -> Keyed<Tenant, impl Future<Output = Done> + Send + 'static> {
    Keyed::new(tenant, async move {
        let started = now();
        let _running = (tenant == Tenant::A).then(RunningA::enter);
        tokio::time::sleep(work).await;
        Done {
            tenant,
            arrived,
            started,
        }
    })
}

/// A's jobs running now and the most at once, counted by the jobs themselves
/// (from their first poll to their end): what `per_key` caps.
static RUNNING_A: AtomicUsize = AtomicUsize::new(0);
static PEAK_RUNNING_A: AtomicUsize = AtomicUsize::new(0);

struct RunningA;

impl RunningA {
    fn enter() -> Self {
        let running = RUNNING_A.fetch_add(1, Relaxed) + 1;
        PEAK_RUNNING_A.fetch_max(running, Relaxed);
        Self
    }
}

impl Drop for RunningA {
    fn drop(&mut self) {
        RUNNING_A.fetch_sub(1, Relaxed);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Merged,
    OneQueue,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::Merged => "merged (within look-ahead)",
            Source::OneQueue => "one queue (beyond look-ahead)",
        }
    }
}

/// What one run showed.
struct Run {
    b_latency: Percentiles,
    /// B's wait: from its arrival to its start.
    b_wait: Percentiles,
    a_outputs: usize,
    b_outputs: usize,
    /// A's outputs before B's first.
    a_before_first_b: usize,
    /// When A's last job came out, from the start.
    a_finished: Duration,
    peak_running_a: usize,
    peak_blocked_by_key: usize,
    stats: Stats,
}

/// Takes every output, noting B's latencies and the key counts after each.
async fn drain<S: Stream<Item = Done> + Unpin>(
    stream: &mut S,
    started: Instant,
    stats: impl Fn(&S) -> Stats,
) -> Run {
    let (mut b_latencies, mut b_waits) = (Vec::with_capacity(B_JOBS), Vec::new());
    let (mut a_outputs, mut a_before_first_b) = (0, None);
    let mut a_finished = Duration::ZERO;
    let mut peak_blocked_by_key = 0;
    while let Some(done) = stream.next().await {
        let at = now();
        match done.tenant {
            Tenant::A => {
                a_outputs += 1;
                a_finished = at - started;
            }
            Tenant::B => {
                a_before_first_b.get_or_insert(a_outputs);
                b_latencies.push(at - done.arrived);
                b_waits.push(done.started - done.arrived);
            }
        }
        peak_blocked_by_key = peak_blocked_by_key.max(stats(stream).blocked_by_key);
    }
    Run {
        b_outputs: b_latencies.len(),
        b_latency: Percentiles::of(b_latencies),
        b_wait: Percentiles::of(b_waits),
        a_outputs,
        a_before_first_b: a_before_first_b.unwrap_or(a_outputs),
        a_finished,
        peak_running_a: PEAK_RUNNING_A.swap(0, Relaxed),
        peak_blocked_by_key,
        stats: stats(stream),
    }
}

/// The bounded stream over `source`, with or without `per_key`, in `mode`.
async fn run_stream<S, F>(source: S, started: Instant, per_key: bool, mode: Mode) -> Run
where
    S: Stream<Item = Keyed<Tenant, F>> + Send + 'static,
    F: Future<Output = Done> + Send + 'static,
{
    let jobs = source.bounded(WORKERS, WAITING);
    let executor = tokio::runtime::Handle::current;
    match (per_key, mode) {
        (false, Mode::InPlace) => {
            let mut jobs = pin!(jobs);
            drain(&mut jobs, started, |jobs| jobs.stats()).await
        }
        (false, Mode::Spawned) => {
            let mut jobs = jobs.spawn_on(executor());
            drain(&mut jobs, started, |jobs| jobs.stats()).await
        }
        (true, Mode::InPlace) => {
            let mut jobs = pin!(jobs.per_key(PER_KEY));
            drain(&mut jobs, started, |jobs| jobs.stats()).await
        }
        (true, Mode::Spawned) => {
            let mut jobs = jobs.per_key(PER_KEY).spawn_on(executor());
            drain(&mut jobs, started, |jobs| jobs.stats()).await
        }
    }
}

/// One run: A's jobs queued now, B's arriving from `B_FIRST` on.
async fn run(source: Source, per_key: bool, mode: Mode) -> Run {
    let started = now();
    let mut rng = generator(1);
    let a_work: Vec<Duration> = (0..A_JOBS)
        .map(|_| draw(&mut rng, WORK_MIN, WORK_MAX))
        .collect();
    let b_work: Vec<Duration> = (0..B_JOBS)
        .map(|_| draw(&mut rng, WORK_MIN, WORK_MAX))
        .collect();

    let (b_sender, b_arrivals) = async_channel::unbounded();
    let feed_b = |sender: async_channel::Sender<_>| async move {
        let first = tokio::time::Instant::now() + B_FIRST;
        for (n, work) in b_work.into_iter().enumerate() {
            tokio::time::sleep_until(first + B_EVERY * n as u32).await;
            sender
                .send(job(Tenant::B, now(), work))
                .await
                .expect("the stream takes every job");
        }
    };
    match source {
        Source::Merged => {
            tokio::spawn(feed_b(b_sender));
            let a_jobs = stream::iter(a_work).map(move |work| job(Tenant::A, started, work));
            run_stream(stream::select(a_jobs, b_arrivals), started, per_key, mode).await
        }
        Source::OneQueue => {
            for work in a_work {
                b_sender
                    .try_send(job(Tenant::A, started, work))
                    .expect("an unbounded channel");
            }
            tokio::spawn(feed_b(b_sender));
            run_stream(b_arrivals, started, per_key, mode).await
        }
    }
}

fn main() {
    let runtime = paused_runtime();
    let mut table = Table::new(&[
        "mode",
        "source",
        "policy",
        "B p50",
        "B p99",
        "B max",
        "B wait p99",
        "A done at",
        "A running (peak)",
        "blocked_by_key (peak)",
    ]);
    let mut checks = Checks::default();
    println!(
        "two tenants: A has {A_JOBS} jobs queued, B sends {B_JOBS} from t = {} on, one every {}; \
         jobs of {} to {}; bounded({WORKERS}, {WAITING}); latency = B's arrival to its output\n",
        ms(B_FIRST),
        ms(B_EVERY),
        ms(WORK_MIN),
        ms(WORK_MAX),
    );
    for mode in Mode::BOTH {
        for source in [Source::Merged, Source::OneQueue] {
            let [plain, keyed] =
                [false, true].map(|per_key| runtime.block_on(run(source, per_key, mode)));
            for (policy, run) in [("plain", &plain), ("per_key(6)", &keyed)] {
                table.row(vec![
                    mode.name().into(),
                    source.name().into(),
                    policy.into(),
                    ms(run.b_latency.p50),
                    ms(run.b_latency.p99),
                    ms(run.b_latency.max),
                    ms(run.b_wait.p99),
                    ms(run.a_finished),
                    run.peak_running_a.to_string(),
                    // Without keys the stream counts none blocked.
                    if policy == "plain" {
                        "-".into()
                    } else {
                        run.peak_blocked_by_key.to_string()
                    },
                ]);
                let case = format!("{}, {}, {policy}", mode.name(), source.name());
                checks.check(
                    run.a_outputs == A_JOBS && run.b_outputs == B_JOBS,
                    format!(
                        "{case}: every job came out once ({} of A, {} of B)",
                        run.a_outputs, run.b_outputs
                    ),
                );
                checks.check(
                    run.stats.peak_active <= WORKERS && run.stats.peak_waiting <= WAITING,
                    format!(
                        "{case}: peak running {} <= {WORKERS}, peak waiting {} <= {WAITING}",
                        run.stats.peak_active, run.stats.peak_waiting
                    ),
                );
                let cap = if policy == "plain" { WORKERS } else { PER_KEY };
                checks.check(
                    run.peak_running_a <= cap,
                    format!(
                        "{case}: at most {cap} of A's jobs ran at once ({})",
                        run.peak_running_a
                    ),
                );
            }
            match source {
                Source::Merged => checks.check(
                    keyed.b_latency.p99 < plain.b_latency.p99,
                    format!(
                        "{}, within the look-ahead: per_key lowers B's p99 ({} < {})",
                        mode.name(),
                        ms(keyed.b_latency.p99),
                        ms(plain.b_latency.p99)
                    ),
                ),
                Source::OneQueue => {
                    // B's jobs are behind all of A's in the channel: the stream
                    // pulls B's first only after A's last, and at most
                    // `WORKERS + WAITING` of A's are then in flight.
                    for (policy, run) in [("plain", &plain), ("per_key(6)", &keyed)] {
                        checks.check(
                            run.a_before_first_b >= A_JOBS - (WORKERS + WAITING),
                            format!(
                                "{}, beyond the look-ahead, {policy}: {} of A's jobs came out \
                                 before B's first (>= {})",
                                mode.name(),
                                run.a_before_first_b,
                                A_JOBS - (WORKERS + WAITING)
                            ),
                        );
                    }
                }
            }
        }
    }
    println!();
    table.print();
    println!();
    checks.finish();
}
